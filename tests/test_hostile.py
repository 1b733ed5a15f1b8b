"""Hostile input: a clear error before any step, or a finite run with every skipped sample or step counted."""

import copy
import errno
import json
import math
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import torch
from conftest import (
    TINY,
    ModelLoaded,
    argv,
    cpu_args,
    logged,
    make_trainer,
    one_line,
    param_snapshots,
    same_code_env,
    tiny_train_argv,
)
from datasets import Dataset
from safetensors.torch import load_file, save_file
from trl import GRPOConfig, GRPOTrainer

import up_trl.cli.eval_command
import up_trl.run.job
from up_trl import UPGRPOConfig, UPGRPOTrainer
from up_trl.checks import Settings, UsageError
from up_trl.checks.ranges import check_ranges, parse_range, rules_for
from up_trl.cli import main, parse_train_args, train, train_help
from up_trl.data import load_math_dataset
from up_trl.models.offline import tiny_model_and_tokenizer
from up_trl.models.source import check_model
from up_trl.run.card import read_metrics
from up_trl.run.checkpoints import checkpoint_problem, mark_complete
from up_trl.run.folder import LOCK_FILE, lock_output_dir, resolve_resume


def index_reward(completions, **kwargs):
    """A reward with spread inside every group, whatever the text (groups of num_generations are contiguous)."""
    return [float(i % 4) for i in range(len(completions))]


def _trainer(tmp_path, tiny, dataset, reward=index_reward, callbacks=None, **overrides):
    """A UP trainer with every opt-in part (the non-finite step guard, the unscorable count), as `up-trl train`."""
    return make_trainer(tmp_path, tiny, dataset, reward=reward, callbacks=callbacks, parts=True, **overrides)


def _params(trainer):
    return [p.detach().clone() for p in trainer.model.parameters()]


def _unchanged(trainer, before):
    return all(torch.equal(a, b) for a, b in zip(before, trainer.model.parameters()))


def _assert_completed_finite(trainer, max_steps):
    assert trainer.state.global_step == max_steps
    assert all(torch.isfinite(p).all() for p in trainer.model.parameters())
    losses = logged(trainer, "loss")
    assert len(losses) == max_steps and all(math.isfinite(v) for v in losses), losses


# --- Degenerate completions ------------------------------------------------------------------------------------
def _suppress(tokenizer, keep=None, drop=()):
    """generation_kwargs that forbid tokens: all but `keep`, or those in `drop`."""
    ids = [i for i in range(len(tokenizer)) if i != keep] if keep is not None else list(drop)
    return {"suppress_tokens": ids}


@pytest.mark.parametrize("case", ["only_eos", "one_token", "cut_at_max_length", "cut_and_masked"])
def test_degenerate_completions(tmp_path, tiny, prompts_dataset, case):
    _, tokenizer = tiny
    eos, pad = tokenizer.eos_token_id, tokenizer.pad_token_id
    overrides = {
        "only_eos": dict(generation_kwargs=_suppress(tokenizer, keep=eos)),
        "one_token": dict(max_completion_length=1),
        "cut_at_max_length": dict(generation_kwargs=_suppress(tokenizer, drop=(eos, pad))),
        "cut_and_masked": dict(
            generation_kwargs=_suppress(tokenizer, drop=(eos, pad)), mask_truncated_completions=True
        ),
    }[case]
    texts = []

    def recording_reward(completions, **kwargs):
        texts.extend(c[0]["content"] for c in completions)
        return index_reward(completions)

    trainer = _trainer(tmp_path, tiny, prompts_dataset, reward=recording_reward, num_iterations=2, **overrides)
    before = _params(trainer)
    trainer.train()
    _assert_completed_finite(trainer, 2)
    if case == "only_eos":
        assert set(texts) == {""} and logged(trainer, "completions/mean_length") == [1.0]
    if case.startswith("cut"):
        assert logged(trainer, "completions/clipped_ratio") == [1.0]
    if case == "cut_and_masked":  # every token masked: no signal, nothing moves
        assert logged(trainer, "loss") == [0.0, 0.0] and _unchanged(trainer, before)
    else:
        assert not _unchanged(trainer, before)


# --- Broken rewards and settings that fail at the first generation --------------------------------------------------
def _raising_reward(completions, **kwargs):
    raise RuntimeError("verifier unreachable")


def _one_value_reward(completions, **kwargs):
    return [1.0]


@pytest.mark.parametrize("reward, overrides, error, match", [
    # A broken verifier stops the run loudly (TRL calls rewards unguarded, UP too), not on zero advantages.
    pytest.param(_raising_reward, {}, RuntimeError, "verifier unreachable", id="reward_raises"),
    pytest.param(_one_value_reward, {}, ValueError, "returned 1 rewards, but 8 were expected", id="wrong_count"),
    pytest.param(index_reward, dict(temperature=0.0), ValueError, "temperature.*strictly positive",
                 id="temperature_0"),
])  # fmt: skip
def test_fails_at_the_first_generation(tmp_path, tiny, prompts_dataset, reward, overrides, error, match):
    trainer = _trainer(tmp_path, tiny, prompts_dataset, reward=reward, **overrides)
    before = _params(trainer)
    with pytest.raises(error, match=match):
        trainer.train()
    assert trainer.state.global_step == 0 and _unchanged(trainer, before)


# --- Rewards that score nothing -------------------------------------------------------------------------------------
NAN, INF = float("nan"), float("inf")


def _spoil(values):
    """A reward equal to index_reward except at the given positions."""

    def reward(completions, **kwargs):
        out = index_reward(completions)
        for i, v in values.items():
            out[i] = v
        return out

    return reward


@pytest.mark.parametrize("spoiled, unscorable", [
    pytest.param({i: NAN for i in range(4)}, 0.5, id="nan_whole_group"),
    pytest.param({i: None for i in range(8)}, 1.0, id="none_for_all"),
    pytest.param({1: None, 6: None}, 0.25, id="none_for_some"),
    pytest.param({0: INF}, 0.125, id="inf_one_sample"),
    pytest.param({5: -INF}, 0.125, id="minus_inf_one_sample"),
])  # fmt: skip
def test_unscorable_rewards_are_counted_not_learned(tmp_path, tiny, prompts_dataset, spoiled, unscorable):
    trainer = _trainer(tmp_path, tiny, prompts_dataset, reward=_spoil(spoiled), num_iterations=2)
    real, seen = trainer._generate_and_score_completions, []

    def recording(inputs):
        seen.append(real(inputs))
        return seen[-1]

    trainer._generate_and_score_completions = recording
    before = _params(trainer)
    trainer.train()
    _assert_completed_finite(trainer, 2)
    assert logged(trainer, "up/unscorable_frac") == [unscorable]
    assert logged(trainer, "up/nonfinite_skipped_steps")[-1] == 0  # TRL zeroed them: nothing reached the loss
    advantages = seen[0]["advantages"]
    assert torch.isfinite(advantages).all()
    assert (advantages[list(spoiled)] == 0).all()
    if any(v is not None and math.isinf(v) for v in spoiled.values()):  # TRL: the inf poisons its group's baseline
        group = 4 * (next(iter(spoiled)) // 4)
        assert (advantages[group : group + 4] == 0).all()
        assert all(math.isinf(r) for r in logged(trainer, "reward"))  # visible in the logs, not hidden
    if unscorable == 1.0:
        assert logged(trainer, "loss") == [0.0, 0.0] and _unchanged(trainer, before)
    else:
        assert not _unchanged(trainer, before)


@pytest.mark.parametrize("overrides", [
    pytest.param({}, id="asymmetric"),
    pytest.param(dict(up_mode="both"), id="both"),
    pytest.param(dict(up_mode="off"), id="off"),
    pytest.param(dict(loss_type="dapo", importance_sampling_level="sequence"), id="dapo_sequence"),
])  # fmt: skip
def test_equal_rewards_give_exactly_zero_loss(tmp_path, tiny, prompts_dataset, overrides):
    def constant_reward(completions, **kwargs):
        return [1.0] * len(completions)

    trainer = _trainer(tmp_path, tiny, prompts_dataset, reward=constant_reward, num_iterations=2, **overrides)
    before = _params(trainer)
    trainer.train()
    _assert_completed_finite(trainer, 2)
    assert logged(trainer, "frac_reward_zero_std") == [1.0]
    assert logged(trainer, "loss") == [0.0, 0.0]
    assert _unchanged(trainer, before)  # zero gradient; AdamW without weight decay leaves the weights as they were


# --- Hand-made batches: every token masked, NaN advantages ----------------------------------------------------------
@pytest.fixture(scope="module")
def loss_trainer(tmp_path_factory):
    tmp, dataset = tmp_path_factory.mktemp("hostile"), Dataset.from_dict({"prompt": ["1 + 1 = "] * 8})
    trainer = _trainer(tmp, tiny_model_and_tokenizer(seed=0), dataset, max_completion_length=5)
    trainer.model.train()
    trainer.current_gradient_accumulation_steps = 2
    trainer.args.steps_per_generation = 2
    return trainer


def _batch(tokenizer, completion_mask, advantages):
    g = torch.Generator().manual_seed(0)
    B, P, T = completion_mask.shape[0], 3, completion_mask.shape[1]
    logps = -1.0 - torch.rand(B, T, generator=g)
    prompt_ids, completion_ids = (torch.randint(4, len(tokenizer), (B, n), generator=g) for n in (P, T))
    batch = dict(prompt_ids=prompt_ids, prompt_mask=torch.ones(B, P).long(), completion_ids=completion_ids)
    batch |= dict(completion_mask=completion_mask, num_items_in_batch=completion_mask.sum().float())
    # old_per_token_logps stale (off-policy): UP and its parent really differ here
    return batch | dict(advantages=advantages, old_per_token_logps=logps, ref_per_token_logps=logps - 0.3)


def _configure(trainer, loss_type, up_mode, level="token", beta=0.0):
    trainer.loss_type = trainer.args.loss_type = loss_type
    trainer.up_mode = up_mode
    trainer.importance_sampling_level = level
    trainer.beta = beta


LOSS_CASES = [
    pytest.param(loss_type, up_mode, "token", 0.0, id=f"{loss_type}-{up_mode}")
    for loss_type in ("grpo", "bnpo", "dr_grpo", "dapo", "luspo")
    for up_mode in ("asymmetric", "both", "off")
] + [
    pytest.param("grpo", "asymmetric", "sequence", 0.0, id="gspo_sequence"),
    pytest.param("dapo", "asymmetric", "token", 0.04, id="dapo_kl"),
]


@pytest.mark.parametrize("loss_type, up_mode, level, beta", LOSS_CASES)
def test_every_token_masked_gives_zero_loss_and_gradient(loss_trainer, loss_type, up_mode, level, beta):
    trainer = loss_trainer
    _configure(trainer, loss_type, up_mode, level, beta)
    batch = _batch(trainer.processing_class, torch.zeros(4, 5, dtype=torch.long), torch.tensor([1.2, -0.7, 0.5, -1.5]))
    trainer.model.zero_grad(set_to_none=True)
    loss = trainer.compute_loss(trainer.model, batch)
    assert loss.item() == 0.0
    loss.backward()
    grads = [p.grad for p in trainer.model.parameters() if p.grad is not None]
    assert grads and all(torch.equal(g, torch.zeros_like(g)) for g in grads)


@pytest.mark.parametrize("up_mode", ["asymmetric", "both", "off"])
def test_nan_advantage_makes_the_loss_nan(loss_trainer, up_mode):
    """A NaN advantage goes to the parent's branch: the loss is NaN, for the non-finite step guard to see."""
    trainer = loss_trainer
    _configure(trainer, "dapo", up_mode)
    batch = _batch(trainer.processing_class, torch.ones(4, 5, dtype=torch.long), torch.tensor([NAN, -0.7, 0.5, -1.5]))
    assert torch.isnan(trainer.compute_loss(trainer.model, batch))


def test_nan_advantages_are_skipped_and_counted(tmp_path, tiny, prompts_dataset):
    snaps = param_snapshots()
    trainer = _trainer(tmp_path, tiny, prompts_dataset, callbacks=[snaps], num_iterations=2, max_steps=4)
    real, generations = trainer._generate_and_score_completions, []

    def nan_in_first_generation(inputs):
        out = real(inputs)
        generations.append(out)
        if len(generations) == 1:
            out["advantages"][:4] = NAN  # one whole group, as a custom advantage estimator might produce
        return out

    trainer._generate_and_score_completions = nan_in_first_generation
    before = _params(trainer)
    trainer.train()
    _assert_completed_finite(trainer, 4)
    # Steps 1 and 2 train on the poisoned generation (num_iterations=2): both skipped, the weights untouched.
    assert all(torch.equal(a, b) for a, b in zip(before, snaps.params[2]))
    assert logged(trainer, "up/nonfinite_skipped_steps")[-1] == 2
    assert not all(torch.equal(a, b) for a, b in zip(snaps.params[2], snaps.params[4]))  # then training goes on


# --- Settings refused before training -------------------------------------------------------------------------------
CONFIG_REFUSALS = [
    pytest.param(dict(per_device_train_batch_size=6),
                 r"generation_batch_size \(6\) must be divisible by num_generations \(4\)", id="batch_not_divisible"),
    pytest.param(dict(per_device_train_batch_size=6, steps_per_generation=3),
                 r"generation_batch_size \(18\) must be divisible by num_generations \(4\)",
                 id="generation_batch_not_divisible"),
    pytest.param(dict(generation_batch_size=12),
                 r"generation_batch_size \(12\) must be divisible by the global batch size \(8\)",
                 id="generation_batch_not_whole_steps"),
    pytest.param(dict(generation_batch_size=16, steps_per_generation=2), "can not be both configured", id="both_set"),
    pytest.param(dict(num_generations=1), "at least 2 generations", id="one_generation"),
    pytest.param(dict(loss_type="ppo"), r"Unknown loss_type='ppo': use one of \(", id="unknown_loss_type"),
    pytest.param(dict(up_mode=True), r"up_mode=True is not one of \('asymmetric'", id="up_mode_true"),
    pytest.param(dict(up_mode="sideways"), "up_mode='sideways' is not one of", id="up_mode_unknown"),
]  # fmt: skip


@pytest.mark.parametrize("overrides, match", CONFIG_REFUSALS)
def test_batch_and_up_settings_fail_at_config_time(tmp_path, overrides, match):
    with pytest.raises(ValueError, match=match):
        cpu_args(tmp_path, **overrides)


@pytest.mark.parametrize("overrides, prompts", [
    pytest.param(dict(num_iterations=0), 16, id="num_iterations_0"),
    pytest.param(dict(steps_per_generation=0), 16, id="steps_per_generation_0"),
    pytest.param({}, 1, id="dataset_too_small"),
    pytest.param(dict(per_device_train_batch_size=16, steps_per_generation=2), 7, id="dataset_below_a_batch"),
    pytest.param(dict(max_completion_length=0), 16, id="max_completion_length_0"),
])  # fmt: skip
def test_zero_step_setups_end_as_in_the_parent(tmp_path, tiny, overrides, prompts):
    """Each zero-step setup builds, or fails with the same error, as in GRPOTrainer."""
    dataset = Dataset.from_dict({"prompt": [f"{i} * 2 =" for i in range(prompts)]})
    outcomes = []
    for trainer_class, config_class in ((GRPOTrainer, GRPOConfig), (UPGRPOTrainer, UPGRPOConfig)):
        model, tokenizer = copy.deepcopy(tiny)
        try:
            args = cpu_args(tmp_path / trainer_class.__name__, config_class=config_class, **overrides)
            trainer_class(model=model, reward_funcs=index_reward, args=args, train_dataset=dataset,
                          processing_class=tokenizer).train()  # fmt: skip
            outcomes.append("trained")
        except Exception as error:  # noqa: BLE001 (whatever the parent raises, UP raises it)
            outcomes.append(f"{type(error).__name__}: {error}")
    assert outcomes[1] == outcomes[0]


# --- The main job ---------------------------------------------------------------------------------------------------
BAD_INPUT = {  # the main job's bad input: flags ({tmp}: a folder holding empty.yaml and list.yaml), error, match
    "config_no_path": ("--config", ValueError, "--config needs a recipe"),
    "config_then_flag": ("--config --max_steps 2", ValueError, "--config needs a recipe"),
    "empty_recipe": ("--config {tmp}/empty.yaml", ValueError, "must be a YAML mapping"),
    "list_recipe": ("--config {tmp}/list.yaml", ValueError, "must be a YAML mapping"),
    "missing_recipe": ("--config {tmp}/nope.yaml", FileNotFoundError, "nope.yaml"),
    "column_mapping_not_json": ("--column_mapping question:problem", ValueError,
                                r"--column_mapping .* is not JSON .*write it like"),
    "batch_not_divisible": ("--per_device_train_batch_size 5", ValueError,  # the default: spg 2, 8 generations
                            r"generation_batch_size \(10\) must be divisible by num_generations \(8\)"),
    "unknown_dataset": ("--dataset_name no-such-set", ValueError, "no-such-set"),
    "unknown_reward": ("--reward_funcs no_such_reward", ValueError, "no_such_reward"),
    "hub_dataset_offline": ("--dataset_name aime24", (ValueError, ConnectionError), "Offline alternatives"),
    "unknown_loss_type": ("--up_mode off --loss_type nope", ValueError, "nope"),
    "unknown_arithmetic_op": ("--arithmetic_ops add div", ValueError, "Unknown arithmetic op 'div'"),
    "too_many_worked_examples": ("--arithmetic_few_shot 7", ValueError, "must number 0 to 3"),
}  # fmt: skip


@pytest.mark.parametrize("flags, error, match", list(BAD_INPUT.values()), ids=list(BAD_INPUT))
def test_main_job_bad_input_fails_before_the_model_is_loaded(no_model_loads, flags, error, match):
    (no_model_loads / "empty.yaml").write_text("")
    (no_model_loads / "list.yaml").write_text("- up_mode\n")
    with pytest.raises(error, match=match):
        train(argv(flags.format(tmp=no_model_loads), output_dir=no_model_loads / "out"))


def test_main_job_refuses_an_unknown_up_mode_choice(no_model_loads, capsys):
    with pytest.raises(SystemExit) as exit_info:
        train(argv(output_dir=no_model_loads, up_mode="sideways"))
    assert exit_info.value.code == 2
    assert "invalid choice: 'sideways' (choose from 'asymmetric', 'both', 'off')" in capsys.readouterr().err


def test_main_job_with_a_reward_that_scores_nothing(tmp_path, monkeypatch, tiny_model):
    """A reward of None for all: the job completes with finite weights, null rewards and the unscorable count."""
    (tmp_path / "hostile_rewards.py").write_text(
        "def nothing(completions, **kw):\n    return [None] * len(completions)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    out = tmp_path / "out"
    flags = dict(dataset_name="arithmetic", max_completion_length=8, steps_per_generation=2, plot=None)
    train(tiny_train_argv(tiny_model, out, reward="hostile_rewards.nothing", max_steps=2, **flags))
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in records if "loss" in r]
    assert [r["step"] for r in steps] == [1, 2] and all(r["loss"] == 0.0 for r in steps)
    assert [r["up/unscorable_frac"] for r in records if "up/unscorable_frac" in r] == [1.0]
    assert [r["reward"] for r in records if "reward" in r] == [None]
    assert all(torch.isfinite(t).all() for t in load_file(out / "model.safetensors").values())
    assert (out / "metrics.png").exists()


# --- Ranges: the ones TRL's config does not check (`checks.ranges`) --------------------------------------------------
# Each refused in one line, exit 2, before any model loads, with the rule's range and why.
TRAIN_RANGE_CASES = [
    ("learning_rate", "inf", "--learning_rate inf is not a finite number: learning_rate must be > 0"),
    ("learning_rate", "nan", "--learning_rate nan is not a finite number"),
    ("learning_rate", "-0.001", "--learning_rate -0.001 is out of range: learning_rate must be > 0"),
    ("top_p", "1.5", "--top_p 1.5 is out of range: top_p must be in (0, 1]"),
    ("epsilon", "-0.2", "--epsilon -0.2 is out of range: epsilon must be in [0, 1]"),
    ("epsilon_high", "-0.2", "--epsilon_high -0.2 is out of range: epsilon_high must be >= 0"),
    ("beta", "-0.1", "--beta -0.1 is out of range: beta must be >= 0"),
    ("save_steps", "0", "--save_steps 0 is out of range: save_steps must be > 0"),
    ("save_steps", "-5", "--save_steps -5 is out of range"),
    ("max_steps", "0", "--max_steps 0 is out of range: max_steps must be >= 1 (optimizer steps to train; 0 would "
     "still run one); or -1: TRL's default, train --num_train_epochs epochs instead."),
    ("max_steps", "-3", "--max_steps -3 is out of range: max_steps must be >= 1"),
    ("temperature", "0", "--temperature 0 is out of range: temperature must be > 0"),
    ("temperature", "-1", "--temperature -1 is out of range"),
    ("seed", "-1", "--seed -1 is out of range: seed must be in [0, 4294967295]"),
    ("delta", "inf", "--delta inf is not a finite number: delta must be a finite number"),
    ("reward_weights", "nan", "--reward_weights [nan] is not a finite number"),
    ("adam_beta2", "1", "--adam_beta2 1 is out of range: adam_beta2 must be in [0, 1)"),
]  # fmt: skip


def _ids(cases):
    return [f"{name}={value}" for name, value, _ in cases]


@pytest.mark.parametrize("name, value, message", TRAIN_RANGE_CASES, ids=_ids(TRAIN_RANGE_CASES))
def test_train_setting_out_of_range_is_one_line(no_model_loads, capsys, name, value, message):
    # `--name=value`: argparse would read a value such as `-0.001` alone as an option
    args = argv(*TINY, f"--{name}={value}", output_dir=no_model_loads / "out")
    assert message in one_line(capsys, args)


@pytest.mark.parametrize("text, start", [
    ("top_p: 1.5\nlearning_rate: 1e-5\n", "top_p 1.5 (from the recipe {}) is out of range: top_p must be in (0, 1]"),
    ("log_level: loud\n", "log_level loud (from the recipe {}) is not one of detail, debug, info"),
])  # fmt: skip
def test_a_recipe_value_out_of_range_or_choices_is_refused_naming_the_recipe(no_model_loads, capsys, text, start):
    recipe = no_model_loads / "recipe.yaml"
    recipe.write_text(text)
    message = one_line(capsys, argv(*TINY, config=recipe, output_dir=no_model_loads / "out"))
    assert message.startswith(start.format(recipe))


EVAL_RANGE_CASES = [
    ("limit", "-1", "--limit -1 is out of range: limit must be >= 1"),
    ("limit", "0", "--limit 0 is out of range"),
    ("temperature", "-1", "--temperature -1 is out of range: temperature must be >= 0 (0 decodes greedily"),
    ("max_new_tokens", "0", "--max_new_tokens 0 is out of range"),
    ("batch_size", "0", "--batch_size 0 is out of range"),
    ("top_p", "0", "--top_p 0 is out of range: top_p must be in (0, 1]"),
    ("seed", "-2", "--seed -2 is out of range"),
    ("temperature", "inf", "--temperature inf is not a finite number"),
    ("k", "0", "--k must be at least 1, got 0."),  # evaluation.check_benchmarks's, no rule
]


@pytest.mark.parametrize("name, value, message", EVAL_RANGE_CASES, ids=_ids(EVAL_RANGE_CASES))
def test_eval_setting_out_of_range_is_one_line(no_model_loads, capsys, name, value, message):
    assert message in one_line(capsys, argv(f"--model outputs/quickstart --{name}={value}"), command="eval")


def _outside_and_inside(rule):
    """(a value just outside the rule's range, values inside it: each bound it includes, and one between)."""
    low, high, low_closed, high_closed = parse_range(rule.allowed)
    outside = low - 1 if low_closed else low
    inside = [low] if low_closed else []
    inside += [high] if high_closed else []
    inside += [(low + high) / 2 if math.isfinite(high) else low + 1]
    return outside, inside


@pytest.mark.parametrize("command", ["train", "eval"])
def test_every_rule_refuses_just_outside_its_range_and_admits_its_bounds(command):
    """Each range rule refuses the value just past its lower bound and admits its bounds and sentinels."""
    for name, rule in rules_for(command).items():
        outside, inside = _outside_and_inside(rule)
        with pytest.raises(UsageError, match=re.escape(f"{name} must be")):
            check_ranges(Settings({name: outside}, {name}, {}, "command line"), command)
        for value in [*inside, *rule.sentinels]:
            check_ranges(Settings({name: value}, {name}, {}, "command line"), command)


def test_the_max_steps_sentinel_is_allowed_and_said_in_the_help():
    _, args, _ = parse_train_args(argv("--max_steps -1 --output_dir unused"))
    assert args.max_steps == -1
    assert "-1, TRL's default: train --num_train_epochs epochs instead" in " ".join(train_help().split())


# --- Checkpoints that survive a kill (`run.checkpoints`) --------------------------------------------------------
# A checkpoint's pieces in the order the Trainer writes them, then UP's rollout batch and the completion mark.
PIECES = (
    "model.safetensors optimizer.pt scheduler.pt rng_state.pth trainer_state.json rollout_buffer_rank0.pt mark".split()
)


def _save_pieces(folder, upto: str | None = None, cut: bool = False) -> None:
    """A checkpoint saved piece by piece and stopped before `upto` (or, with `cut`, halfway through writing it)."""
    folder.mkdir(parents=True)
    for piece in PIECES:
        if piece == upto and not cut:
            return
        path = folder / piece
        if piece == "model.safetensors":
            save_file({"w": torch.arange(64.0)}, path)
        elif piece == "trainer_state.json":
            path.write_text(json.dumps({"global_step": int(folder.name.split("-")[1]), "log_history": []}))
        elif piece == "mark":
            mark_complete(folder, {"learning_rate": 0.01})
        else:
            torch.save({"state": torch.arange(64.0)}, path)
        if piece == upto:  # cut: the file half written
            path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
            return


KILLED_AT = [
    pytest.param("model.safetensors", False, "empty", id="before_the_weights"),
    pytest.param("model.safetensors", True, "no trainer_state.json", id="inside_the_weights"),
    pytest.param("optimizer.pt", False, "no trainer_state.json", id="before_the_optimizer"),
    pytest.param("optimizer.pt", True, "no trainer_state.json", id="inside_the_optimizer"),
    pytest.param("trainer_state.json", False, "no trainer_state.json", id="before_trainer_state"),
    pytest.param("trainer_state.json", True, "trainer_state.json cut short", id="inside_trainer_state"),
    pytest.param("rollout_buffer_rank0.pt", False, "no completion mark", id="before_the_rollout_batch"),
    pytest.param("rollout_buffer_rank0.pt", True, "rollout_buffer_rank0.pt cut short", id="inside_the_rollout_batch"),
    pytest.param("mark", False, "no completion mark", id="before_the_mark"),
    pytest.param(None, False, "empty", id="empty_folder"),
]


@pytest.mark.parametrize("piece, cut, why", KILLED_AT)
def test_resume_takes_the_newest_complete_checkpoint_and_names_the_skipped(tmp_path, piece, cut, why):
    out = tmp_path / "out"
    _save_pieces(out / "checkpoint-1")
    if piece is None:
        (out / "checkpoint-2").mkdir()
    else:
        _save_pieces(out / "checkpoint-2", piece, cut)
    notes = []
    assert resolve_resume("true", out, notes) == str(out / "checkpoint-1")
    assert len(notes) == 1 and notes[0].startswith(f"resuming from {out / 'checkpoint-1'}, the newest complete"), notes
    assert "skipped the incomplete checkpoint-2 (" in notes[0] and why in notes[0], notes
    with pytest.raises(ValueError, match=r"checkpoint-2 is not a complete checkpoint \(.*\): pass .*checkpoint-1"):
        resolve_resume(str(out / "checkpoint-2"), out)


@pytest.mark.parametrize("spoil, why", [
    pytest.param(lambda c: (c / "optimizer.pt").unlink(), "optimizer.pt is missing", id="file_missing"),
    pytest.param(lambda c: (c / "optimizer.pt").write_bytes(b"PK"), "optimizer.pt has 2 bytes, not the",
                 id="file_cut_after_the_mark"),
])  # fmt: skip
def test_a_marked_checkpoint_changed_since_is_incomplete(tmp_path, spoil, why):
    _save_pieces(tmp_path / "checkpoint-1")
    assert checkpoint_problem(tmp_path / "checkpoint-1") is None
    spoil(tmp_path / "checkpoint-1")
    assert why in checkpoint_problem(tmp_path / "checkpoint-1")


@pytest.mark.parametrize("piece, cut, complete", [
    pytest.param("mark", False, True, id="whole_without_a_mark"),
    pytest.param("optimizer.pt", True, False, id="optimizer_cut"),
    pytest.param("trainer_state.json", False, False, id="no_trainer_state"),
    pytest.param("model.safetensors", True, False, id="weights_cut"),
])  # fmt: skip
def test_checkpoints_of_a_run_that_marks_none_are_judged_by_their_pieces(tmp_path, piece, cut, complete):
    """A plain Trainer's or an older up-trl's checkpoints carry no mark: each piece is checked instead."""
    _save_pieces(tmp_path / "checkpoint-1", "mark")
    _save_pieces(tmp_path / "checkpoint-2", piece, cut)
    expected = tmp_path / ("checkpoint-2" if complete else "checkpoint-1")
    assert resolve_resume("true", tmp_path) == str(expected)


def test_only_incomplete_checkpoints_is_one_line(no_model_loads, capsys):
    out = no_model_loads / "out"
    _save_pieces(out / "checkpoint-3", "optimizer.pt", cut=True)
    message = one_line(capsys, argv(*TINY, output_dir=out, resume_from_checkpoint="true"))
    assert message.startswith(
        f"--resume_from_checkpoint true: no complete checkpoint in {out}, only incomplete "
        "ones (a save that was interrupted): checkpoint-3 ("
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "piece", ["model.safetensors", "optimizer.pt", "trainer_state.json", "rollout_buffer_rank0.pt", "mark"]
)
def test_a_run_killed_mid_save_resumes_from_the_last_complete_checkpoint(tmp_path, capsys, tiny_model, piece):
    """SIGKILL while checkpoint-2 is written: the resume skips it, says so and finishes from checkpoint-1."""
    here = Path(__file__).parent
    out = tmp_path / "out"
    run = tiny_train_argv(tiny_model, out, max_steps=3, learning_rate=None, save_steps=1)
    env = same_code_env()
    env["PYTHONPATH"] = f"{here}{os.pathsep}{env['PYTHONPATH']}"
    cmd = [sys.executable, str(here / "kill_mid_save.py"), piece, "2", *run]
    killed = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert killed.returncode == -9, killed.stderr[-3000:]
    assert (out / "checkpoint-2").is_dir() and not (out / "checkpoint-2" / "up_trl_checkpoint.json").exists()
    capsys.readouterr()
    assert main(argv("train", *run, resume_from_checkpoint="true")) == 0
    printed = capsys.readouterr().out
    assert (
        f"up-trl: resuming from {out / 'checkpoint-1'}, the newest complete checkpoint; skipped the incomplete "
        "checkpoint-2 (its save did not finish" in printed
    ), printed[-3000:]
    assert (out / "model.safetensors").exists() and (out / "checkpoint-3" / "up_trl_checkpoint.json").exists()


# --- One run per output folder (`run_lock`) -------------------------------------------------------------------------
def _hold_lock(folder, ready, results, go):
    """In a child process: wait for `go`, try to take the lock, report, hold it until the parent is done."""
    go.wait()
    try:
        lock = lock_output_dir(folder)
        results.put(("locked", os.getpid()))
    except ValueError as error:
        results.put(("refused", str(error)))
        return
    ready.wait()
    lock.release()


def test_runs_started_at_the_same_instant_into_one_folder_only_one_runs(tmp_path):
    context = multiprocessing.get_context("fork")
    go, ready, results = context.Event(), context.Event(), context.Queue()
    children = [context.Process(target=_hold_lock, args=(tmp_path / "out", ready, results, go)) for _ in range(4)]
    for child in children:
        child.start()
    go.set()
    outcomes = [results.get(timeout=60) for _ in children]
    ready.set()
    for child in children:
        child.join(timeout=60)
    locked = [pid for kind, pid in outcomes if kind == "locked"]
    assert len(locked) == 1, outcomes
    refused = [text for kind, text in outcomes if kind == "refused"]
    assert all(f"is in use by another run (pid {locked[0]})" in text for text in refused), refused
    assert not (tmp_path / "out" / LOCK_FILE).exists()  # released


@pytest.mark.parametrize("holder, outcome", [
    pytest.param("alive", "refused", id="held_by_a_running_process"),
    pytest.param("dead", "stale", id="left_by_a_dead_process"),
    pytest.param("none", "free", id="no_lock"),
])  # fmt: skip
def test_a_locked_folder_is_refused_naming_the_pid_and_a_stale_lock_is_taken_over(
    no_model_loads, capsys, holder, outcome
):
    out = no_model_loads / "out"
    hold = (
        "import sys, time; from up_trl.run.folder import lock_output_dir; lock = lock_output_dir(sys.argv[1]); "
        "print('locked', flush=True); time.sleep(120 if sys.argv[2] == 'alive' else 0)"
    )
    child = None
    if holder != "none":
        child = subprocess.Popen(
            [sys.executable, "-c", hold, str(out), holder], stdout=subprocess.PIPE, text=True, env=same_code_env()
        )
        assert child.stdout.readline().strip() == "locked"
        if holder == "dead":  # gone without releasing: its pid stays in the lock file
            child.wait(timeout=60)
            (out / LOCK_FILE).write_text(f"{child.pid}\n")
    try:
        if outcome == "refused":
            message = one_line(capsys, argv(*TINY, output_dir=out))
            assert message == (
                f"--output_dir {out} is in use by another run (pid {child.pid}): wait for it to end, "
                "stop it, or pass another --output_dir."
            )
        else:  # the checks pass the lock and stop at the (refused) model load
            with pytest.raises(ModelLoaded, match="a model was loaded"):
                main(argv("train", *TINY, output_dir=out))
            printed = capsys.readouterr().out
            stale = f"up-trl: took over the lock of {out}: the run that held it (pid {child.pid if child else 0})"
            assert (stale in printed) == (outcome == "stale"), printed
            assert not (out / LOCK_FILE).exists()  # released when the run ended
    finally:
        if child is not None and child.poll() is None:
            child.kill()
            child.wait()


def test_a_file_system_without_file_locks_is_refused_in_one_line(no_model_loads, capsys, monkeypatch):
    """`flock` failing with ENOSYS (some FUSE mounts): one line, and the folders the run created are removed."""
    fcntl = pytest.importorskip("fcntl")
    flock = fcntl.flock

    def no_flock(fd, operation):
        if operation & fcntl.LOCK_EX:
            raise OSError(errno.ENOSYS, os.strerror(errno.ENOSYS))
        return flock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", no_flock)
    out = no_model_loads / "new" / "out"
    assert one_line(capsys, argv(*TINY, output_dir=out)) == (
        f"--output_dir {out} cannot be locked ({os.strerror(errno.ENOSYS)}): name a folder you can write to, on a "
        "file system with file locks."
    )
    assert not (no_model_loads / "new").exists()


# --- Resume with other settings (`run_checkpoints.resume_differences`) ------------------------------------------
@pytest.mark.slow
def test_resume_lists_changed_settings(tmp_path, capsys, tiny_model):
    """A resume names each changed setting (`--beta 0.05`, the dead state's advice: trained with TRL's KL); another
    rollout shape: tests/test_same_as_trl_grpo.py."""
    out = tmp_path / "out"
    flags = "--save_steps 1 --steps_per_generation 2 --beta 0".split()
    unset = dict(max_steps=None, per_device_train_batch_size=None, learning_rate=None)
    run = tiny_train_argv(tiny_model, out, *flags, **unset)
    assert main(argv("train", *run, max_steps=1, per_device_train_batch_size=8)) == 0
    assert (out / "checkpoint-1" / "rollout_buffer_rank0.pt").exists()
    capsys.readouterr()

    resume = dict(resume_from_checkpoint="true", max_steps=2)
    changed = dict(per_device_train_batch_size=8, learning_rate=0.002, beta=0.05)
    assert main(argv("train", *run, **resume, **changed)) == 0
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("up-trl: resuming ")]
    assert sorted(printed) == [  # the offline default's learning rate, then this one's
        "up-trl: resuming checkpoint-1 with beta 0.05 (the run that saved it had 0.0)",
        "up-trl: resuming checkpoint-1 with learning_rate 0.002 (the run that saved it had 3e-05)",
        "up-trl: resuming checkpoint-1 with max_steps 2 (the run that saved it had 1)",
    ], printed
    assert [m["kl"] for m in read_metrics(out / "metrics.jsonl") if m.get("step") == 2 and "kl" in m]


def test_overwrite_with_resume_is_refused_and_removes_nothing(no_model_loads, capsys):
    out = no_model_loads / "out"
    _save_pieces(out / "checkpoint-1")
    (out / "notes.txt").write_text("mine")
    flags = argv(*TINY, "--overwrite_output_dir", output_dir=out, resume_from_checkpoint="true")
    assert one_line(capsys, flags) == (
        "--overwrite_output_dir removes the checkpoints --resume_from_checkpoint would continue from: pass one."
    )
    assert (out / "checkpoint-1" / "up_trl_checkpoint.json").exists() and (out / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("overwrite", [[], ["--overwrite_output_dir"]], ids=["plain", "overwrite"])
@pytest.mark.parametrize("files, named", [
    pytest.param({"README.md": "# my notes\n", "config.json": "{}", "tokenizer.json": "{}"},
                 "README.md, config.json, tokenizer.json", id="your_own_files"),
    pytest.param({"config.json": '{"model_type": "qwen2"}', "model.safetensors": "w", "tokenizer.json": "{}"},
                 "config.json, model.safetensors, tokenizer.json", id="a_model_folder"),
])  # fmt: skip
def test_files_no_run_wrote_are_refused_before_any_model_loads(no_model_loads, capsys, files, named, overwrite):
    """Files no run record lists are refused, with or without --overwrite_output_dir, and left alone."""
    out = no_model_loads / "out"
    out.mkdir()
    for name, text in files.items():
        (out / name).write_text(text)
    assert one_line(capsys, argv(*TINY, *overwrite, output_dir=out)) == (
        f"--output_dir {out} holds {named}, which this run would write over and no up-trl run wrote (no run record "
        "lists them): move them out of it, or choose another --output_dir (--overwrite_output_dir removes only what "
        "a run wrote)."
    )
    assert {p.name: p.read_text() for p in out.iterdir()} == files


# --- Files the user names: opened and checked before any model loads ---------------------------------------------
def _permissions_enforced() -> bool:
    """Whether a file without read permission cannot be read here (root, with its capabilities, reads it)."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "probe")
        open(path, "w").close()
        os.chmod(path, 0)
        try:
            open(path).close()
        except PermissionError:
            return True
        return False


def one_line_as_a_user(capsys, words, folder, command="train") -> str:
    """`one_line` where file modes bind: as root, in a child process without root's capabilities."""
    if _permissions_enforced():
        return one_line(capsys, words, command=command)
    setpriv = shutil.which("setpriv")
    assert setpriv, "running as root: these tests need util-linux's setpriv to drop root's file-permission override"
    drop = "-dac_override,-dac_read_search"
    cmd = [setpriv, "--bounding-set", drop, "--inh-caps", drop, "--", sys.executable, "-m", "up_trl", command, *words]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    err = [line for line in proc.stderr.strip().splitlines() if "examples/s]" not in line and "Warning" not in line]
    assert proc.returncode == 2 and err and err[-1].startswith(f"up-trl {command}: error: "), (proc.returncode, err)
    return err[-1].split(": error: ", 1)[1]


QA = b'{"problem": "What is 2 + 2?", "answer": "4"}\n'


def _parquet(columns: dict) -> bytes:
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(pa.table(columns), buffer)
    return buffer.getvalue()


# (file name, its bytes, flags beside --dataset_name, the line after "--dataset_name PATH: "). The file is loaded by
# datasets' load_dataset before the model loads; its error, one line with its causes, is the check. Our own words
# only where datasets' are none (an empty file: a bare StopIteration), unreadable (an empty Parquet file: "BatchSize
# must be greater than 0"), or come late (Latin-1 text loads, then fails inside the prompts' map).
NO_DATA = 'ValueError: Instruction "train" corresponds to no data!)'
GENERATION = "(DatasetGenerationError: An error occurred while generating the dataset; "
DATA_FILE_CASES = [
    pytest.param("empty.jsonl", b"", {}, "the file is empty (0 bytes)", id="jsonl_empty"),
    pytest.param("blank.jsonl", b"\n  \n", {}, f"cannot read it as json ({NO_DATA}", id="jsonl_blank"),
    pytest.param("cut.jsonl", QA * 2 + b'{"problem": "1 + 1?", "ans\n' + QA, {},
                 f"cannot read it as json {GENERATION}ArrowInvalid: JSON parse error: Invalid encoding in string. in "
                 "row 2;", id="jsonl_malformed_line_3"),
    pytest.param("list.jsonl", b"[1, 2]\n", {}, "found ['text']. Map yours with --column_mapping",
                 id="jsonl_line_not_object"),
    pytest.param("binary.jsonl", b"\x1f\x8b\x08\x00" + bytes(range(256)), {},
                 "cannot read it as json (error: Error -3 while decompressing data: invalid block type)",
                 id="jsonl_binary"),
    pytest.param("latin1.jsonl", '{"problem": "caf\xe9?", "answer": "1"}\n'.encode("latin-1"), {},
                 "the text is not UTF-8 (byte 0xe9: invalid continuation byte): save it as UTF-8.",
                 id="jsonl_not_utf8"),
    pytest.param("numbers.json", b"[1, 2, 3]", {}, "found ['text']. Map yours with", id="json_array"),
    pytest.param("cut.json", b'[{"problem": "1 + 1?", "answer": "2"},', {},
                 f"cannot read it as json {GENERATION}ValueError: Expected object or value at position 37)",
                 id="json_malformed"),
    pytest.param("header.csv", b"problem,answer\n", {}, f"cannot read it as csv ({NO_DATA}", id="csv_only_header"),
    pytest.param("empty.csv", b"", {}, "the file is empty (0 bytes)", id="csv_empty"),
    pytest.param("text.parquet", b"problem,answer\n1 + 1?,2\n", {},
                 "cannot read it as parquet (ArrowInvalid: Parquet magic bytes not found in footer. Either the file "
                 "is corrupted or this is not a parquet file.)", id="parquet_not_parquet"),
    pytest.param("cut.parquet", _parquet({"problem": ["1 + 1?"], "answer": ["2"]})[:-20] + b"PAR1", {},
                 "cannot read it as parquet (ArrowInvalid: Parquet file size is", id="parquet_cut"),
    pytest.param("columns.parquet", _parquet({"q": ["1 + 1?"], "sol": ["2"]}), {},
                 """found ['q', 'sol']. Map yours with --column_mapping '{"q": "prompt", "sol": "answer"}'""",
                 id="parquet_without_the_columns"),
    pytest.param("none.parquet", _parquet({"problem": [], "answer": []}), {}, "the Parquet file holds no rows",
                 id="parquet_no_rows"),
    pytest.param("unanswered.jsonl", b'{"problem": "1 + 1?", "answer": null}\n{"problem": "2 + 2?", "answer": ""}\n',
                 {}, "none of its 2 rows holds an answer (column 'answer'): fill them in, or map another column",
                 id="jsonl_no_usable_row"),
    pytest.param("qa.csv", b"q,sol\n1 + 1?,\n", dict(column_mapping='{"q": "problem", "sol": "answer"}'),
                 "none of its 1 rows holds an answer (column 'answer')", id="csv_mapped_columns_empty"),
    pytest.param("qa.jsonl", QA, dict(column_mapping='{"question": "problem"}'),
                 "Original column names {'question'} not in the dataset. Current columns in the dataset: "
                 "['problem', 'answer']", id="column_mapping_names_a_missing_column"),
    pytest.param("folder.jsonl/", None, {}, "No data file at '{path}' (it is a folder).", id="a_folder"),
]  # fmt: skip


@pytest.mark.parametrize("name, content, flags, message", DATA_FILE_CASES)
def test_a_data_file_that_cannot_be_loaded_is_one_line(no_model_loads, capsys, name, content, flags, message):
    path = no_model_loads / name
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    line = one_line(capsys, argv(*TINY, output_dir=no_model_loads / "out", dataset_name=path, **flags))
    assert line.startswith(f"--dataset_name {path}") and message.replace("{path}", str(path)) in line, line


def test_an_unreadable_data_file_is_one_line(no_model_loads, capsys):
    path = no_model_loads / "secret.jsonl"
    path.write_bytes(QA * 16)
    path.chmod(0)
    words = argv(*TINY, output_dir=no_model_loads / "out", dataset_name=path)
    line = one_line_as_a_user(capsys, words, no_model_loads)
    assert line.startswith(f"--dataset_name {path}: datasets cannot read it as json (") and "Permission denied" in line


def test_usable_data_files_load(tmp_path):
    """JSON Lines, JSON arrays and objects, CSV, Parquet and mapped columns load."""
    files = {
        "a.jsonl": QA * 3 + b"\n",
        "a.json": b'[{"problem": "1 + 1?", "answer": "2"}]',
        "lines.json": QA * 2,
        "object.json": b'{\n  "problem": "1 + 1?",\n  "answer": "2"\n}\n',
        "a.csv": b'problem,answer\n"1 +\n1?",2\n',
        "a.parquet": _parquet({"problem": ["1 + 1?"], "answer": ["2"]}),
    }
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
        assert len(load_math_dataset(str(tmp_path / name))) >= 1, name
    (tmp_path / "qa.csv").write_bytes(b"q,sol\n1 + 1?,2\n")
    assert len(load_math_dataset(str(tmp_path / "qa.csv"), column_mapping={"q": "problem", "sol": "answer"})) == 1


RECIPE_FILE_CASES = [
    pytest.param(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
                 "is not a YAML text file (byte 0x89 at offset 0 is binary, or not UTF-8)", id="binary"),
    pytest.param("learning_rate: 1e-5  # caf\xe9\n".encode("latin-1"),
                 "is not a YAML text file (byte 0xe9 at offset 26 is binary, or not UTF-8)", id="latin1"),
    pytest.param(b"learning_rate: 1e-5\x00\n", "is not a YAML text file (byte 0x00 at offset 19", id="nul_byte"),
    pytest.param(b"learning_rate: \x07\n", "is not valid YAML: unacceptable character #x0007", id="control_char"),
]  # fmt: skip


@pytest.mark.parametrize("content, message", RECIPE_FILE_CASES)
def test_a_recipe_that_is_not_yaml_text_is_one_line(no_model_loads, capsys, content, message):
    recipe = no_model_loads / "recipe.yaml"
    recipe.write_bytes(content)
    line = one_line(capsys, argv(*TINY, config=recipe, output_dir=no_model_loads / "out"))
    assert line.startswith(f"recipe {recipe} ") and message in line, line


# (what the folder holds: file name -> bytes; the line's end after "FLAG bad"), for train and for eval. Transformers'
# AutoConfig reads the config (its words after the flag); our own line only for a folder without weights, which
# from_pretrained refuses inside the trainer, after --overwrite_output_dir removed the previous run
# [test_a_model_folder_without_weights_is_refused_before_an_overwrite], and for a config.json that is JSON but not
# an object, a TypeError naming no file in transformers 5.17 (the oldest stack).
QWEN2, WEIGHTS = b'{"model_type": "qwen2"}', b"\x00" * 8
NOT_JSON = ": It looks like the config file at 'bad/config.json' is not a valid JSON file."
NO_TYPE = ": Unrecognized model in bad. Should have a `model_type` key in its config.json."
NO_WEIGHTS = " holds a config but no weights (no *.safetensors, *.bin, *.pt or *.gguf file, nor a sharded index): "
MODEL_FOLDER_CASES = [
    pytest.param({"config.json": b'{"model_type": "qwen2",', "model.safetensors": WEIGHTS}, NOT_JSON, id="config_cut"),
    pytest.param({"config.json": b"\x89PNG\x00\xff", "model.safetensors": WEIGHTS}, NOT_JSON, id="config_binary"),
    pytest.param({"config.json": b"[1]", "model.safetensors": WEIGHTS},
                 ": its config.json is not a JSON object: save the model again.", id="config_not_object"),
    pytest.param({"config.json": b'{"model_type": "qwen9"}', "model.safetensors": WEIGHTS},
                 ": The checkpoint you are trying to load has model type `qwen9` but Transformers does not recognize "
                 "this architecture.", id="unknown_model_type"),
    pytest.param({"config.json": b'{"hidden_size": 8}', "model.safetensors": WEIGHTS}, NO_TYPE, id="no_model_type"),
    pytest.param({"config.json": QWEN2}, NO_WEIGHTS + "the save did not finish; save the model again",
                 id="no_weights"),
    pytest.param({"config.json": QWEN2, "training_args.bin": WEIGHTS, "checkpoint-3/config.json": QWEN2},
                 NO_WEIGHTS + "the save did not finish; pass {flag} bad/checkpoint-3 (its latest checkpoint).",
                 id="no_weights_a_checkpoint"),
]  # fmt: skip


@pytest.mark.parametrize("command", ["train", "eval"])
@pytest.mark.parametrize("files, message", MODEL_FOLDER_CASES)
def test_a_model_folder_that_cannot_load_is_one_line(no_model_loads, capsys, files, message, command):
    for name, content in files.items():
        (no_model_loads / "bad" / name).parent.mkdir(parents=True, exist_ok=True)
        (no_model_loads / "bad" / name).write_bytes(content)
    flag = "--model_name_or_path" if command == "train" else "--model"
    words = argv(*TINY, output_dir=no_model_loads / "out") if command == "train" else []
    line = one_line(capsys, [*words, flag, "bad"], command=command)  # relative: no model name in the path
    assert line.startswith(f"{flag} bad{message.format(flag=flag)}"), line


def test_a_model_folder_without_weights_is_refused_before_an_overwrite(no_model_loads, capsys):
    """A config without weights is refused before --overwrite_output_dir removes the previous run."""
    (no_model_loads / "bad").mkdir()
    (no_model_loads / "bad" / "config.json").write_bytes(QWEN2)
    out = no_model_loads / "outputs" / "quickstart"
    (out / "metrics.jsonl").write_text('{"step": 1}\n')
    words = argv(*TINY, "--overwrite_output_dir", output_dir=out, model_name_or_path="bad")
    assert one_line(capsys, words).startswith("--model_name_or_path bad holds a config but no weights")
    assert (out / "metrics.jsonl").read_text() == '{"step": 1}\n' and (out / "config.json").is_file()


def test_model_folders_that_load_pass_the_check(tmp_path):
    for name, files in {
        "sharded": {"config.json": QWEN2, "model.safetensors.index.json": b"{}"},
        "gguf": {"config.json": QWEN2, "model.gguf": WEIGHTS},
        "adapter": {"adapter_config.json": b"{}", "adapter_model.safetensors": WEIGHTS},
        "checkpoint": {"config.json": QWEN2, "model.safetensors": WEIGHTS, "optimizer.pt": WEIGHTS},
    }.items():
        for file, content in files.items():
            (tmp_path / name).mkdir(exist_ok=True)
            (tmp_path / name / file).write_bytes(content)
        assert check_model(str(tmp_path / name), "--model") == str(tmp_path / name)


OUTPUT_FOLDER_CASES = [
    pytest.param("afile/out", "cannot be created: {tmp}/afile is a file, not a folder; name a folder elsewhere.",
                 id="under_a_file"),
    pytest.param("afile", "is a file: name a folder (it is created if missing).", id="a_file"),
    pytest.param("x" * 300 + "/out", "cannot be created: the name xxxxxxxxxxxxxxxxxxxxxxxx... is 300 bytes long, and "
                 "this file system allows 255; choose a shorter name.", id="name_too_long"),
]  # fmt: skip


@pytest.mark.parametrize("command", ["train", "eval"])
@pytest.mark.parametrize("out, message", OUTPUT_FOLDER_CASES)
def test_an_output_folder_that_cannot_be_made_is_one_line(no_model_loads, capsys, out, message, command):
    tmp = no_model_loads
    (tmp / "afile").write_text("")
    words = TINY if command == "train" else argv("--model outputs/quickstart")
    line = one_line(capsys, argv(*words, output_dir=out), command=command)
    assert line == f"--output_dir {out} {message.format(tmp=tmp)}", line
    assert sorted(p.name for p in tmp.iterdir()) == ["afile", "outputs"]  # nothing created


@pytest.mark.parametrize("command", ["train", "eval"])
def test_an_output_folder_in_a_read_only_place_is_one_line(no_model_loads, capsys, command):
    (no_model_loads / "locked").mkdir(mode=0o555)
    words = TINY if command == "train" else argv("--model outputs/quickstart")
    line = one_line_as_a_user(capsys, argv(*words, output_dir="locked/out"), no_model_loads, command=command)
    assert line == (
        f"--output_dir locked/out cannot be created: {no_model_loads}/locked is not writable (a read-only "
        "place, or another user's); name a folder you can write to."
    )


def test_folders_a_refused_run_created_are_removed(no_model_loads, capsys):
    """The lock creates --output_dir (parents too); a usage error after it removes what it created, when empty."""
    out = no_model_loads / "new" / "deeper" / "out"
    line = one_line(capsys, argv(*TINY, output_dir=out, resume_from_checkpoint="true"))
    assert line.startswith(f"--resume_from_checkpoint true: no checkpoint-<step> folder in {out}"), line
    assert not (no_model_loads / "new").exists()


# --- What still escapes a library: one line at the CLI's edge, the traceback with UP_TRL_DEBUG=1 ------------------
def _boom(*args, **kwargs):
    raise RuntimeError("boom:\n  in the library")


@pytest.mark.parametrize("command", ["train", "eval"])
def test_an_unexpected_error_is_one_line_naming_its_type_and_the_debug_variable(
    no_model_loads, capsys, monkeypatch, command
):
    monkeypatch.delenv("UP_TRL_DEBUG", raising=False)
    if command == "train":
        monkeypatch.setattr(up_trl.run.job, "prepare_run", _boom)
        words = argv(*TINY, output_dir=no_model_loads / "out")
    else:
        monkeypatch.setattr(up_trl.cli.eval_command, "benchmark_sets", _boom)
        words = argv("--model outputs/quickstart")
    line = one_line(capsys, words, command=command, code=1)
    assert line == "RuntimeError: boom: in the library (set UP_TRL_DEBUG=1 to see the traceback)"

    monkeypatch.setenv("UP_TRL_DEBUG", "1")
    with pytest.raises(RuntimeError, match="boom"):
        main([command, *words])


def test_a_model_load_in_a_test_is_not_swallowed_by_the_catch_all(no_model_loads, monkeypatch):
    """`no_model_loads` raises a BaseException: the CLI's catch-all of Exception lets it through."""
    import up_trl.models.offline
    from up_trl.cli import main

    monkeypatch.setattr("up_trl.run.job.prepare_run", lambda *a, **k: up_trl.models.offline.smollm2_path())
    with pytest.raises(ModelLoaded):
        main(argv("train", *TINY, output_dir=no_model_loads / "out"))


def test_a_wrong_lora_setting_is_refused_before_an_overwrite(no_model_loads, capsys):
    """peft's refusal comes before --overwrite_output_dir removes the previous run (it came after)."""
    (no_model_loads / "m").mkdir()
    (no_model_loads / "m" / "config.json").write_bytes(QWEN2)
    (no_model_loads / "m" / "model.safetensors").write_bytes(WEIGHTS)
    out = no_model_loads / "outputs" / "quickstart"
    (out / "metrics.jsonl").write_text('{"step": 1}\n')
    words = argv(*TINY, "--overwrite_output_dir", "--use_peft", output_dir=out, model_name_or_path="m")
    words += ["--lora_task_type", "CAUSAL"]
    assert one_line(capsys, words).startswith("--use_peft: Invalid task type: 'CAUSAL'. Must be one of")
    assert (out / "metrics.jsonl").read_text() == '{"step": 1}\n' and (out / "config.json").is_file()


@pytest.mark.parametrize(
    "tracker, says",
    [
        ("wandbb", "--report_to: wandbb is not supported, only "),
        ("wandb", "--report_to: WandbCallback requires wandb"),
    ],
)
def test_a_tracker_transformers_would_refuse_is_refused_before_an_overwrite(
    no_model_loads, capsys, monkeypatch, tracker, says
):
    """Unknown, or not installed: transformers refused it after the model had loaded, and after
    --overwrite_output_dir had removed the previous run."""
    monkeypatch.setattr("transformers.integrations.integration_utils.is_wandb_available", lambda: False)
    (no_model_loads / "m").mkdir()
    (no_model_loads / "m" / "config.json").write_bytes(QWEN2)
    (no_model_loads / "m" / "model.safetensors").write_bytes(WEIGHTS)
    out = no_model_loads / "outputs" / "quickstart"  # the fixture's previous run
    (out / "metrics.jsonl").write_text('{"step": 1}\n')
    words = argv(*TINY, "--overwrite_output_dir", "--report_to", tracker, output_dir=out, model_name_or_path="m")
    assert one_line(capsys, words).startswith(says)
    assert (out / "metrics.jsonl").read_text() == '{"step": 1}\n'
