"""UP beside vLLM's CPU engine on batches vLLM generated (skipped without vLLM)."""

import os

import pytest
import torch
from conftest import TINY, gradients, one_line, param_snapshots
from datasets import Dataset
from transformers import TrainerCallback
from trl import GRPOConfig, GRPOTrainer

from up_trl import UPGRPOConfig, UPGRPOTrainer

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "2")  # GiB; unset, vLLM's CPU build reserves a share of the RAM

pytestmark = pytest.mark.vllm

# vLLM samples and scores in bfloat16, the trainer in float32: on the same weights their log-probs differ, measured
# here, by at most 4.4e-3 (the tokens of the batches below, 8 x 16 a batch; a fixed 25-token sequence after a sync).
# A sync that leaves any weight behind misses by far more (a stale tied LM head: 0.5).
SAME_WEIGHTS_TOL = 0.02
TIGHT = 0.002  # IS bounds [1 - TIGHT, 1 + TIGHT]: the bfloat16 mismatch alone puts some ratios outside them
RECIPES = {  # the packaged recipes' objectives (src/up_trl/recipes/up_dapo.yaml, up_gspo.yaml)
    "dapo": dict(loss_type="dapo", epsilon_high=0.28, delta=3.0),
    "gspo": dict(loss_type="grpo", importance_sampling_level="sequence", epsilon=3e-4, epsilon_high=4e-4, delta=3.0),
}


def char_sum_reward(completions, **kwargs):
    """A reward with spread inside almost every group, whatever the text."""
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    return [float(sum(map(ord, t)) % 13) for t in texts]


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    """(model folder, [the one shared LLM]): every trainer of this module generates with the same engine."""
    from vllm_sync import shared_engine

    from up_trl.models.offline import save_tiny_model

    path = save_tiny_model(tmp_path_factory.mktemp("tiny") / "model", hidden_size=128, seed=0)
    with shared_engine() as llms:
        yield path, llms


def make(trainer_class, config_class, model, folder, peft_config=None, **settings):
    """A trainer with vLLM colocate, 2 optimizer steps per vLLM batch (so the 2nd is off-policy), IS on."""
    kwargs = dict(
        output_dir=str(folder), use_cpu=True, bf16=False, report_to="none", save_strategy="no", seed=0,
        per_device_train_batch_size=8, num_generations=4, max_completion_length=8, max_steps=4,
        learning_rate=1e-2, logging_steps=1, gradient_accumulation_steps=1, steps_per_generation=2,
        use_vllm=True, vllm_mode="colocate", vllm_importance_sampling_correction=True, **RECIPES["dapo"],
    )  # fmt: skip
    args = config_class(**(kwargs | settings))
    dataset = Dataset.from_dict({"prompt": [[{"role": "user", "content": f"{i} + {i} = "}] for i in range(16)]})
    return trainer_class(
        model=model, reward_funcs=char_sum_reward, args=args, train_dataset=dataset, peft_config=peft_config
    )


def logged(trainer, key):
    return [h[key] for h in trainer.state.log_history if key in h]


def params(model):
    return [p.detach().clone() for p in model.parameters()]


# --- UP trains on vLLM's batches, under each IS mode TRL 1.16 offers, and with TRL's off-policy mask ------------
MODES = {
    "dapo-token_truncate": dict(vllm_importance_sampling_mode="token_truncate"),
    "dapo-token_mask": dict(vllm_importance_sampling_mode="token_mask"),
    "dapo-sequence_truncate": dict(vllm_importance_sampling_mode="sequence_truncate"),
    "dapo-sequence_mask": dict(vllm_importance_sampling_mode="sequence_mask"),
    "gspo-sequence_mask": dict(vllm_importance_sampling_mode="sequence_mask", **RECIPES["gspo"]),
    "gspo-token_truncate": dict(vllm_importance_sampling_mode="token_truncate", **RECIPES["gspo"]),
    "dapo-token_truncate-opsm": dict(vllm_importance_sampling_mode="token_truncate", off_policy_mask_threshold=0.05),
}


@pytest.mark.parametrize("name", MODES)
def test_up_trains_on_vllm_batches_with_each_is_mode(engine, tmp_path, name):
    path, _ = engine
    trainer = make(UPGRPOTrainer, UPGRPOConfig, path, tmp_path, vllm_importance_sampling_clip_min=1 - TIGHT,
                   vllm_importance_sampling_clip_max=1 + TIGHT, **MODES[name])  # fmt: skip
    before = params(trainer.model)
    trainer.train()
    assert trainer.state.global_step == 4 and trainer.up_is_off_policy
    assert any(not torch.equal(a, b) for a, b in zip(before, params(trainer.model)))  # it trained
    assert all(torch.isfinite(torch.tensor(logged(trainer, "loss"))))
    assert len(logged(trainer, "up/positive_token_frac")) == 4  # UP's metrics beside TRL's
    # Two vLLM batches with ratios not 1; truncation holds the weights inside the bounds, the mask sets some to 0.
    low, high = (logged(trainer, f"sampling/importance_sampling_ratio/{m}") for m in ("min", "max"))
    assert len(low) == len(high) == 2
    if name.split("-")[1].endswith("truncate"):
        assert all(1 - TIGHT - 1e-6 <= lo < 1 < hi <= 1 + TIGHT + 1e-6 for lo, hi in zip(low, high)), (low, high)
        assert any(lo == pytest.approx(1 - TIGHT) or hi == pytest.approx(1 + TIGHT) for lo, hi in zip(low, high))
    else:
        assert all(lo == 0 and 1 < hi <= 1 + TIGHT + 1e-6 for lo, hi in zip(low, high)), (low, high)


# --- On a batch vLLM generated, UP's loss and gradient are the closed form ------------------------------------
def _forward(trainer, batch):
    """TRL's own forward (not UP's hook): the completion tokens' log-probs under the current weights."""
    ids = torch.cat([batch["prompt_ids"], batch["completion_ids"]], 1)
    attn = torch.cat([batch["prompt_mask"], batch["completion_mask"]], 1)
    logps, _, _ = GRPOTrainer._get_per_token_logps_and_entropies(
        trainer, trainer.model, ids, attn, batch["completion_ids"].size(1)
    )
    return logps


def _is_weight(batch, mode):
    """TRL's IS weight from the batch's two log-probs: the trainer's at generation (pi_old), vLLM's (sampler)."""
    mask = batch["completion_mask"]
    diff = (batch["old_per_token_logps"] - batch["sampling_per_token_logps"]) * mask
    ratio = torch.exp(diff.sum(1, keepdim=True) if mode.startswith("sequence") else diff)
    if mode.endswith("truncate"):
        return ratio.clamp(max=3.0)
    return ratio.masked_fill(ratio > 3.0, 0.0)


def _closed_form(trainer, batch):
    """(loss, surrogate, r, A, mask) written out with TRL's multipliers; settings read from the trainer."""
    logps, mask = _forward(trainer, batch), batch["completion_mask"].float()
    old, adv = batch["old_per_token_logps"], batch["advantages"].unsqueeze(1)
    w = _is_weight(batch, trainer.vllm_importance_sampling_mode)
    eps_low, eps_high, delta = trainer.epsilon_low, trainer.epsilon_high, trainer.args.delta or float("inf")
    if trainer.importance_sampling_level == "sequence":  # GSPO: one ratio per sequence, the mean log-ratio
        seq = lambda x: (x * mask).sum(1, keepdim=True) / mask.sum(1, keepdim=True)  # noqa: E731
        log_r, log_pi = seq(logps - old), seq(logps)
    else:
        log_r, log_pi = logps - old, logps
    r = torch.exp(log_r)
    parent = -torch.min(r.clamp(max=delta) * adv, r.clamp(1 - eps_low, 1 + eps_high) * adv)  # A <= 0: clipped
    up_value = -adv * torch.exp(log_pi - log_pi.detach())  # A > 0: r~ = pi / sg(pi), value 1
    value = torch.where(adv > 0, up_value, parent) * w
    surrogate = torch.where(adv > 0, -adv * log_pi, parent) * w
    if trainer.off_policy_mask_threshold is not None:  # drop A < 0 sequences whose mean KL(sampler || pi) is high
        kl = ((batch["sampling_per_token_logps"] - logps.detach()) * mask).sum(1, keepdim=True) / mask.sum(1, True)
        keep = ((adv >= 0) | (kl <= trainer.off_policy_mask_threshold)).float()
        value, surrogate = value * keep, surrogate * keep
    ga, spg = trainer.current_gradient_accumulation_steps, trainer.args.steps_per_generation
    normalise = {  # TRL's normalisation of each loss type, written out
        "dapo": lambda x: (x * mask).sum() / (batch["num_items_in_batch"] * ga / spg),  # the generation batch's tokens
        "grpo": lambda x: ((x * mask).sum(1) / mask.sum(1)).mean() / ga,  # per-sequence mean, batch mean
        "bnpo": lambda x: (x * mask).sum() / mask.sum() / ga,  # this batch's tokens
        "dr_grpo": lambda x: (x * mask).sum() / (mask.size(0) * trainer.max_completion_length) / ga,  # B * max length
        "luspo": lambda x: (x * mask).sum(1).mean() / ga,  # per-sequence sum, batch mean
    }[trainer.loss_type]
    return normalise(value), normalise(surrogate), r, adv, mask


CLOSED = {
    "up_dapo-token_truncate": dict(RECIPES["dapo"], vllm_importance_sampling_mode="token_truncate"),
    "up_gspo-sequence_mask": dict(RECIPES["gspo"], vllm_importance_sampling_mode="sequence_mask"),
    "up_dapo-token_mask-opsm": dict(RECIPES["dapo"], vllm_importance_sampling_mode="token_mask",
                                    off_policy_mask_threshold=0.05),
    # Every clipped loss type, with TRL's defaults (epsilon 0.2, no delta, IS mode sequence_mask) at token level and
    # GSPO's band at sequence level (luspo is sequence level only).
    **{f"{loss}-token": dict(loss_type=loss, epsilon=0.2, epsilon_high=0.2, delta=None,
                             vllm_importance_sampling_mode="sequence_mask")
       for loss in ("grpo", "bnpo", "dr_grpo")},
    **{f"{loss}-sequence": dict(loss_type=loss, importance_sampling_level="sequence", epsilon=3e-4, epsilon_high=4e-4,
                                delta=None, vllm_importance_sampling_mode="sequence_mask")
       for loss in ("bnpo", "dr_grpo", "dapo", "luspo")},
}  # fmt: skip


@pytest.mark.parametrize("name", CLOSED)
def test_loss_and_gradient_on_a_vllm_batch_equal_the_closed_form(engine, tmp_path, name):
    path, _ = engine
    cfg = CLOSED[name]
    trainer = make(UPGRPOTrainer, UPGRPOConfig, path, tmp_path, **cfg)
    batches, compute = [], trainer._compute_loss

    def capture(model, inputs):  # every batch the loss reads, as TRL built it from vLLM's output
        batches.append(dict(inputs))
        return compute(model, inputs)

    trainer._compute_loss = capture
    trainer.train()
    # The last step's batch: vLLM sampled it with the weights of step 2, two optimizer steps ago (off-policy).
    batch = batches[-1]
    assert len(batches) == 4 and "sampling_per_token_logps" in batch
    mask = batch["completion_mask"].bool()
    # TRL's IS weight is the one written from vLLM's log-probs, and those are not the trainer's (bfloat16 sampler).
    torch.testing.assert_close(
        batch["importance_sampling_ratio"], _is_weight(batch, cfg["vllm_importance_sampling_mode"])
    )
    sampler_gap = (batch["sampling_per_token_logps"] - batch["old_per_token_logps"])[mask].abs()
    print(f"{name}: max |vLLM log-prob - trainer log-prob| on the same weights: {sampler_gap.max().item():.2e}")
    assert 0 < sampler_gap.max() < SAME_WEIGHTS_TOL
    trainer.model.train()
    if "opsm" in name:  # a threshold that splits this batch's A < 0 sequences: the mask keeps some, drops some
        logps = _forward(trainer, batch).detach()
        kl = ((batch["sampling_per_token_logps"] - logps) * mask).sum(1) / mask.sum(1)
        negative = kl[batch["advantages"] < 0].sort().values
        assert len(negative) >= 2 and negative[0] < negative[-1]
        trainer.off_policy_mask_threshold = ((negative[0] + negative[-1]) / 2).item()
    actual_loss = trainer.compute_loss(trainer.model, batch)
    actual = gradients(trainer.model, actual_loss)
    value, surrogate, r, adv, loss_mask = _closed_form(trainer, batch)
    expected = gradients(trainer.model, surrogate)
    # UP differs from its parent on this batch: A > 0 entries whose ratio is outside the clip band.
    band = (r < 1 - trainer.epsilon_low) | (r > 1 + trainer.epsilon_high)
    assert (band & (adv > 0) & (loss_mask.sum(1, keepdim=True) > 0)).any()
    torch.testing.assert_close(actual_loss.detach(), value.detach(), rtol=1e-5, atol=1e-7)
    for a, e in zip(actual, expected):
        torch.testing.assert_close(a, e, rtol=1e-4, atol=1e-7)


# --- up_mode="off" is GRPOTrainer bit for bit; UP adds no forward pass ----------------------------------------
def _counting(trainer):
    """Count the policy model's forward passes, per optimizer step."""
    calls, per_step = [0], []
    trainer.model.register_forward_hook(lambda *args: calls.__setitem__(0, calls[0] + 1))

    class PerStep(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            per_step.append(calls[0] - sum(per_step))

    trainer.add_callback(PerStep())
    return per_step


def test_off_is_grpo_trainer_bit_for_bit_and_up_makes_no_extra_forward(engine, tmp_path):
    path, _ = engine
    runs = {}
    for name, (trainer_class, config_class, extra) in {
        "parent": (GRPOTrainer, GRPOConfig, {}),
        "off": (UPGRPOTrainer, UPGRPOConfig, dict(up_mode="off")),
        "up": (UPGRPOTrainer, UPGRPOConfig, dict(up_mode="asymmetric")),
    }.items():
        extra |= dict(vllm_importance_sampling_mode="token_truncate")
        trainer = make(trainer_class, config_class, path, tmp_path / name, **extra)
        initial, forwards = params(trainer.model), _counting(trainer)
        trainer.train()
        runs[name] = (initial, params(trainer.model), forwards, trainer)
    initial, parent, parent_forwards, parent_trainer = runs["parent"]
    assert any(not torch.equal(a, b) for a, b in zip(initial, parent))  # it trained
    assert all(torch.equal(a, b) for a, b in zip(parent, runs["off"][1]))  # every tensor, bit for bit
    assert any(not torch.equal(a, b) for a, b in zip(parent, runs["up"][1]))  # UP is not the parent
    logs = parent_trainer.state.log_history
    theirs = [{k: v for k, v in h.items() if not k.startswith(("step_time", "train_"))} for h in logs]
    assert [{k: h[k] for k in t} for t, h in zip(theirs, runs["off"][3].state.log_history)] == theirs
    # The same forward passes per step: a generation step's 2 pi_old chunks and the loss's, then the loss's only.
    assert parent_forwards == runs["off"][2] == runs["up"][2] == [3, 1, 3, 1], (parent_forwards, runs["up"][2])


# --- The weight sync: vLLM then scores like the trainer ------------------------------------------------------
def vllm_logps(llm, ids: list[int]) -> torch.Tensor:
    """vLLM's log-prob of each token of `ids` after the first, given the ones before (its prompt log-probs)."""
    from vllm import SamplingParams

    (out,) = llm.generate([{"prompt_token_ids": ids}], SamplingParams(max_tokens=1, prompt_logprobs=0), use_tqdm=False)
    return torch.tensor([out.prompt_logprobs[i][ids[i]].logprob for i in range(1, len(ids))])


def trainer_logps(model, ids: list[int]) -> torch.Tensor:
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0, :-1].float()
    return torch.log_softmax(logits, -1).gather(1, torch.tensor(ids[1:]).unsqueeze(1)).squeeze(1)


def fixed_sequence(tokenizer) -> list[int]:
    """A prompt and a completion, fixed: ChatML user turn, then "2 + 2 = 4" as the reply."""
    text = tokenizer.apply_chat_template(
        [{"role": "user", "content": "2 + 2 = "}], tokenize=False, add_generation_prompt=True
    )
    return tokenizer(text + "2 + 2 = 4<|im_end|>", add_special_tokens=False)["input_ids"]


def check_sync(trainer, llm, snapshot_at_last_sync):
    """After `sync_weights` vLLM scores like the trainer, and no longer like before."""
    ids = fixed_sequence(trainer.processing_class)
    before = vllm_logps(llm, ids)
    now = trainer_logps(trainer.model, ids)
    with torch.no_grad():  # the trainer's model as it was at the last sync
        current = params(trainer.model)
        for p, old in zip(trainer.model.parameters(), snapshot_at_last_sync):
            p.copy_(old)
        at_sync = trainer_logps(trainer.model, ids)
        for p, new in zip(trainer.model.parameters(), current):
            p.copy_(new)
    trainer.vllm_generation.sync_weights()
    after = vllm_logps(llm, ids)
    gaps = {
        "synced in training": (before - at_sync).abs().max().item(),
        "synced now": (after - now).abs().max().item(),
        "moved since": (before - now).abs().max().item(),
    }
    print(f"max |log-prob difference|, {len(ids) - 1} tokens: {gaps}")
    assert gaps["synced in training"] <= SAME_WEIGHTS_TOL and gaps["synced now"] <= SAME_WEIGHTS_TOL, gaps
    assert gaps["moved since"] > 3 * SAME_WEIGHTS_TOL, gaps  # so a sync that moved nothing would fail
    return gaps


def _snapshots(trainer):
    """The parameters after each optimizer step, by step."""
    snapshots = param_snapshots()
    trainer.add_callback(snapshots)
    return snapshots.params


def test_after_a_weight_sync_vllm_scores_like_the_trainer(engine, tmp_path):
    path, llms = engine
    trainer = make(UPGRPOTrainer, UPGRPOConfig, path, tmp_path, vllm_importance_sampling_mode="token_truncate")
    kept = _snapshots(trainer)
    trainer.train()  # syncs before generating at step 0 and at step 2; steps 3 and 4 train on the step-2 batch
    check_sync(trainer, llms[0], kept[2])


def test_lora_adapter_trains_and_syncs_merged(engine, tmp_path):
    """PEFT: TRL merges the adapter into the base weights, streams them under vLLM's names, and unmerges."""
    from peft import LoraConfig

    path, llms = engine
    lora = LoraConfig(r=8, lora_alpha=16, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    trainer = make(UPGRPOTrainer, UPGRPOConfig, path, tmp_path, peft_config=lora, learning_rate=1e-1,
                   vllm_importance_sampling_mode="token_truncate")  # fmt: skip
    named = dict(trainer.model.named_parameters())
    lora_before = {n: p.detach().clone() for n, p in named.items() if "lora_" in n}
    base_before = {n: p.detach().clone() for n, p in named.items() if "lora_" not in n}
    kept = _snapshots(trainer)
    trainer.train()
    named = dict(trainer.model.named_parameters())
    assert lora_before and any(not torch.equal(named[n], p) for n, p in lora_before.items())  # the adapter trained
    # The base did not train. TRL merges the adapter into the base weights for each sync and subtracts it again: the
    # layers LoRA targets come back equal to float32 rounding only, every other weight bit for bit.
    drift = {n: (named[n] - p).abs().max().item() for n, p in base_before.items() if not torch.equal(named[n], p)}
    print(f"base weights changed by the syncs' merge/unmerge rounding: {drift}")
    assert all(".base_layer." in n and any(t in n for t in lora.target_modules) for n in drift), drift
    assert all(d <= 1e-6 for d in drift.values()), drift
    assert len(logged(trainer, "sampling/importance_sampling_ratio/min")) == 2
    check_sync(trainer, llms[0], kept[2])


# --- `up-trl train --use_vllm true` on the CPU build: one line, before the model loads ------------------------
def test_cli_refuses_colocate_on_the_installed_cpu_build(no_model_loads, capsys):
    line = one_line(capsys, ["--use_vllm", "true", "--output_dir", "out", *TINY])
    assert "CPU build" in line and "load_weights" in line, line
