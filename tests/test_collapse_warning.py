"""The early warning: its rule on hand-made curves, the callback's line and stop, its registration."""

import logging

import pytest
import torch
from conftest import length_reward, make_trainer
from transformers import TrainerControl, TrainerState, TrainingArguments
from trl import GRPOConfig, GRPOTrainer

from up_trl import UPAsyncGRPOConfig, UPGRPOConfig, UPRLOOConfig
from up_trl.models.offline import tiny_model_and_tokenizer
from up_trl.trainers.collapse_warning import CollapseRule, CollapseWarningCallback


def feed(rule, entropy=None, reward=None, zero_std=None):
    """Feed curves (lists of equal length, or None) one log a step; return what fired."""
    n = len(next(c for c in (entropy, reward, zero_std) if c is not None))
    for step in range(n):
        logs = {}
        for key, curve in (("entropy", entropy), ("reward", reward), ("frac_reward_zero_std", zero_std)):
            if curve is not None:
                logs[key] = curve[step]
        rule.update(step + 1, logs)
    return rule.fired


FALL, RISE, LOST, KEPT = [0.3] * 10 + [0.0] * 40, [0.3] * 10 + [1.0] * 40, [0.2] * 10 + [1.0] * 40, [0.2] * 50
# (the rule's settings, the curves, what fires: (step or None for any step, rule) or None), each row checked by hand.
CURVES = [
    pytest.param({}, dict(entropy=[1.2] * 50), None, id="flat_entropy"),
    pytest.param({}, dict(entropy=[1.2 - 0.02 * i for i in range(50)]), None, id="falling_entropy_is_sharpening"),
    # Baseline H0 = 1.0 (first 5 logs), bound H0 + 1 = 2.0; 3.0 from log 11: the mean of the last 5 logs passes 2.0 at
    # log 13 ((1 + 1 + 3 + 3 + 3) / 5 = 2.2); with the default patience of 25 steps the rule fires at 38.
    pytest.param(dict(patience_steps=0), dict(entropy=[1.0] * 10 + [3.0] * 10), (13, "entropy runaway"), id="runaway"),
    pytest.param({}, dict(entropy=[1.0] * 10 + [3.0] * 40), (38, "entropy runaway"), id="runaway_after_patience"),
    pytest.param({}, dict(entropy=[1.0] * 10 + [3.0] * 20 + [1.0] * 40), None, id="swing_shorter_than_patience"),
    # H0 = 0.1: tripling to 0.3 is sharpening noise, not a runaway (bound 1.1).
    pytest.param({}, dict(entropy=[0.1] * 10 + [0.3] * 40), None, id="margin_protects_a_low_start"),
    pytest.param({}, dict(entropy=[0.1] * 10 + [1.5] * 40), (None, "entropy runaway"), id="low_start_runaway"),
    pytest.param({}, dict(reward=FALL, zero_std=LOST), (None, "reward collapse"), id="reward_drop_and_signal_lost"),
    pytest.param({}, dict(reward=FALL, zero_std=KEPT), None, id="reward_drop_with_groups_still_split"),
    pytest.param({}, dict(reward=RISE, zero_std=LOST), None, id="solved_task_no_spread_reward_rose"),
    # R0 = 0.02: 0.0 is above R0 - 0.5 * max(0.02, 0.1) = -0.03 (the scale floor): no warning.
    pytest.param({}, dict(reward=[0.02] * 10 + [0.0] * 40, zero_std=[1.0] * 50), None, id="small_rewards_scale_floor"),
    # +-1 rewards, 10% right: R0 = -0.8, and the floor measures the drop: -1.0 <= -0.8 - 0.05.
    pytest.param({}, dict(reward=[-0.8] * 10 + [-1.0] * 40, zero_std=[0.6] * 10 + [1.0] * 40),
                 (None, "reward collapse"), id="below_zero_start_collapses"),
    pytest.param({}, dict(reward=[-0.8] * 10 + [-0.78] * 40, zero_std=[0.6] * 10 + [1.0] * 40), None,
                 id="below_zero_start_holds"),
]  # fmt: skip


@pytest.mark.parametrize("settings, curves, fires", CURVES)
def test_the_rule_on_hand_made_curves(settings, curves, fires):
    fired = feed(CollapseRule(**settings), **curves)
    assert fired is None if fires is None else (fired[1] == fires[1] and fires[0] in (None, fired[0])), fired


def test_a_dead_state_below_zero():
    """The last batch has no spread and lost its reward while the entropy ran away, with rewards below zero."""
    rule = CollapseRule()
    for step in range(1, 12):
        rule.update(step, {"entropy": 1.0, "reward": -0.8, "frac_reward_zero_std": 0.6})
    assert rule.update(12, {"entropy": 4.0, "reward": -1.0, "frac_reward_zero_std": 1.0})[1] == "dead state"


def test_fires_once_and_ignores_nan_and_missing_keys():
    rule = CollapseRule(patience_steps=0)
    fired = feed(rule, entropy=[1.0] * 10 + [float("nan")] * 3 + [5.0] * 10)
    assert fired[0] == 15  # NaN logs are skipped: at log 15 the last 5 values are 1, 1, 1, 5, 5 (mean 2.6 > 2)
    assert rule.update(100, {"entropy": 9.0}) is None and rule.fired == fired
    assert feed(CollapseRule(), reward=[0.3] * 10 + [0.0] * 40) is None  # no frac_reward_zero_std logged


def test_window_must_be_positive():
    with pytest.raises(ValueError, match="window=0 and reward_window=3 must be at least 1"):
        CollapseRule(window=0)


def _replay(callback, logs_per_step, args=None):
    args, state = args or TrainingArguments(output_dir="unused", report_to="none"), TrainerState()
    controls = []
    for step, logs in enumerate(logs_per_step, start=1):
        state.global_step = step
        controls.append(callback.on_log(args, state, TrainerControl(), logs=logs))
    return controls


@pytest.mark.parametrize("stop", [False, True])
def test_callback_logs_one_line_and_stops_only_when_asked(stop, caplog):
    logs = [{"entropy": 1.0}] * 10 + [{"entropy": 4.0}] * 10 + [{"eval_entropy": 9.0}]
    with caplog.at_level(logging.WARNING, logger="up_trl.trainers.collapse_warning"):
        controls = _replay(CollapseWarningCallback(stop_on_collapse=stop, patience_steps=0), logs)
    lines = [r.getMessage() for r in caplog.records if "up-trl: possible" in r.getMessage()]
    # At log 12 the last 5 values are 1, 1, 1, 4, 4: mean 2.2 > 2.0.
    assert len(lines) == 1 and "entropy runaway at step 12" in lines[0] and "Try a lower learning_rate" in lines[0]
    assert ("stopping (stop_on_collapse=True)" if stop else "(stop_on_collapse=True would") in lines[0]
    stopped = [i + 1 for i, c in enumerate(controls) if c.should_training_stop]
    saved = [i + 1 for i, c in enumerate(controls) if c.should_save]
    assert (stopped, saved) == (([12], [12]) if stop else ([], []))


def test_up_trainers_register_it_by_default_and_off_removes_it(tmp_path, tiny, prompts_dataset):
    def registered(trainer):
        return [cb for cb in trainer.callback_handler.callbacks if isinstance(cb, CollapseWarningCallback)]

    on = registered(make_trainer(tmp_path / "on", tiny, prompts_dataset))
    assert len(on) == 1 and on[0].stop_on_collapse is False
    stop = registered(make_trainer(tmp_path / "stop", tiny, prompts_dataset, up_stop_on_collapse=True))
    assert stop[0].stop_on_collapse is True
    # A UP trainer's line names its own config field and its rare-token option.
    assert on[0].stop_flag == "up_stop_on_collapse" and "up_positive_min_prob=0.05" in on[0].advice
    assert registered(make_trainer(tmp_path / "off", tiny, prompts_dataset, up_collapse_warning=False)) == []


@pytest.mark.slow
def test_the_default_callback_changes_nothing_that_is_computed(tmp_path, prompts_dataset):
    stale = dict(steps_per_generation=2, num_iterations=2, max_steps=4)
    weights = {}
    for warn in (True, False):
        tiny = tiny_model_and_tokenizer(seed=0)
        trainer = make_trainer(tmp_path / str(warn), tiny, prompts_dataset, up_collapse_warning=warn, **stale)
        trainer.train()
        weights[warn] = [p.detach().clone() for p in trainer.model.parameters()]
    assert all(torch.equal(a, b) for a, b in zip(weights[True], weights[False]))


def test_plain_trl_trainer_accepts_it(tmp_path, tiny, prompts_dataset):
    model, tokenizer = tiny
    args = GRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none", max_steps=1,
                      per_device_train_batch_size=8, num_generations=4, max_completion_length=4,
                      logging_steps=1)  # fmt: skip
    callback = CollapseWarningCallback()
    kwargs = dict(train_dataset=prompts_dataset, processing_class=tokenizer, callbacks=[callback])
    GRPOTrainer(model, length_reward, args=args, **kwargs).train()
    assert callback.rule.history["entropy"] and callback.rule.history["reward"]


# The dead state (docs/collapse.md): one rollout batch every 4 steps, as at 4 updates per rollout batch.
def _batches(rewards, zero_stds, entropies):
    """Logs of a run with a rollout batch every 4 steps: reward and frac_reward_zero_std on its first step."""
    logs = []
    for i, entropy in enumerate(entropies):
        log = {"entropy": entropy}
        if i % 4 == 0:
            log |= {"reward": rewards[i // 4], "frac_reward_zero_std": zero_stds[i // 4]}
        logs.append(log)
    return logs


def _feed_logs(rule, logs):
    for step, log in enumerate(logs, start=1):
        rule.update(step, log)
    return rule.fired


@pytest.mark.parametrize("rewards, zero_stds, entropy_after, fires_at", [
    # Seed 4's trajectory: right answers ~10%, a shock at step 8 to 4 nats, the batch of step 9 all wrong.
    pytest.param([0.1, 0.12, 0.0, 0.0], [0.4, 0.4, 1.0, 1.0], 4.0, 9, id="dead_state_at_the_batch"),
    # The parents' trajectory: the same shock, but 5 right answers left (spread in some groups): no warning.
    pytest.param([0.1, 0.12, 0.04, 0.1], [0.4, 0.4, 0.7, 0.5], 4.0, None, id="shock_with_answers_left"),
    # No right answer, entropy at its start: a hard start, not a shock (the other rules watch it).
    pytest.param([0.1, 0.12, 0.0, 0.0], [0.4, 0.4, 1.0, 1.0], 1.3, None, id="no_shock"),
    # Every group solved (no spread, reward up): a finished task, not a dead state.
    pytest.param([0.1, 0.5, 1.0, 1.0], [0.4, 0.4, 1.0, 1.0], 4.0, None, id="solved"),
])  # fmt: skip
def test_dead_state_fires_at_the_rollout_batch_it_happens(rewards, zero_stds, entropy_after, fires_at):
    entropies = [1.4] * 7 + [entropy_after] * 9  # steps 1-7 at 1.4 nats, the shock from step 8
    fired = _feed_logs(CollapseRule(), _batches(rewards, zero_stds, entropies))
    assert (fired and fired[:2]) == ((fires_at, "dead state") if fires_at else None)


def test_dead_state_needs_a_baseline_before_the_batch():
    # The very first batch cannot be judged: nothing to compare its reward and entropy with.
    assert _feed_logs(CollapseRule(), _batches([0.0], [1.0], [4.0])) is None


@pytest.mark.parametrize("stop", [False, True])
def test_dead_state_line_names_its_own_advice_and_stops_when_asked(stop, caplog):
    logs = _batches([0.1, 0.12, 0.0], [0.4, 0.4, 1.0], [1.4] * 7 + [4.0] * 2)
    with caplog.at_level(logging.WARNING, logger="up_trl.trainers.collapse_warning"):
        controls = _replay(CollapseWarningCallback(stop_on_collapse=stop), logs)
    lines = [r.getMessage() for r in caplog.records if "up-trl: possible" in r.getMessage()]
    assert len(lines) == 1 and "dead state at step 9" in lines[0] and "every advantage is 0" in lines[0]
    assert "checkpoint saved before this step" in lines[0] and "lower learning_rate" in lines[0]
    assert "up_positive_min_prob" not in lines[0]  # the other failure's advice
    assert [i + 1 for i, c in enumerate(controls) if c.should_training_stop] == ([9] if stop else [])


def test_dead_state_is_watched_only_without_a_kl():
    """With beta > 0 the KL still has a gradient: no dead state is called, no stop."""
    logs = _batches([0.1, 0.12, 0.0], [0.4, 0.4, 1.0], [1.4] * 7 + [4.0] * 2)
    assert _feed_logs(CollapseRule(beta=0.05), logs) is None
    for beta, stops in ((0.0, [9]), (0.05, [])):
        callback = CollapseWarningCallback(stop_on_collapse=True)
        args = TrainingArguments(output_dir="unused", report_to="none")
        args.beta = beta  # a GRPOConfig's field
        callback.on_train_begin(args, TrainerState(), TrainerControl())
        controls = _replay(callback, logs, args)
        assert [i + 1 for i, c in enumerate(controls) if c.should_training_stop] == stops


REMOVED = (
    "up_positive_log_ratio_bound",
    "up_positive_capacity_share",
    "up_positive_kl_coef",
    "up_entropy_fallback_threshold",
)


@pytest.mark.parametrize(
    "value",
    [0.0, 1.0, 2.0, float("nan"), float("inf")],  # 1.0: every positive token rare, UP switched off unsaid
)
def test_out_of_range_values_say_what_to_set(tmp_path, value):
    with pytest.raises(ValueError, match=rf"up_positive_min_prob={value} must be in \(0, 1\) .*collapse.md.*or None"):
        UPGRPOConfig(output_dir=str(tmp_path), up_positive_min_prob=value)


@pytest.mark.parametrize("config", [UPGRPOConfig, UPRLOOConfig, UPAsyncGRPOConfig])
def test_off_by_default_and_the_removed_guards_are_gone(tmp_path, config):
    args = config(output_dir=str(tmp_path), use_cpu=True, bf16=False)
    assert args.up_positive_min_prob is None
    assert args.up_collapse_warning is True and args.up_stop_on_collapse is False
    for name in REMOVED:
        assert not hasattr(args, name), name
        with pytest.raises(TypeError, match=name):
            config(output_dir=str(tmp_path), **{name: 0.5})


def test_the_rare_clip_is_read_from_args(tmp_path, tiny, prompts_dataset):
    plain = make_trainer(tmp_path / "plain", tiny, prompts_dataset)
    assert plain.up_positive_min_prob is None
    guarded = make_trainer(tmp_path / "guarded", tiny, prompts_dataset, up_positive_min_prob=0.05)
    assert guarded.up_positive_min_prob == 0.05


def test_each_failure_takes_the_advice_it_is_given(caplog):
    """`advice` and `dead_state_advice` replace the packaged texts, each for its own failure only."""
    dead = _batches([0.1, 0.12, 0.0], [0.4, 0.4, 1.0], [1.4] * 7 + [4.0] * 2)
    runaway = [{"entropy": 1.0}] * 10 + [{"entropy": 4.0}] * 10
    settings = dict(advice="OTHER-ADVICE", dead_state_advice="DEAD-ADVICE", patience_steps=0)
    with caplog.at_level(logging.WARNING, logger="up_trl.trainers.collapse_warning"):
        _replay(CollapseWarningCallback(**settings), dead)
        _replay(CollapseWarningCallback(**settings), runaway)
    lines = [r.getMessage() for r in caplog.records if "up-trl: possible" in r.getMessage()]
    assert len(lines) == 2 and "dead state" in lines[0] and "entropy runaway" in lines[1]
    assert "DEAD-ADVICE" in lines[0] and "OTHER" not in lines[0]
    assert "OTHER-ADVICE" in lines[1] and "DEAD" not in lines[1]
