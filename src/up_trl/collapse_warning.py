"""An early warning for an entropy runaway or a collapse, read from the metrics any TRL GRPO / RLOO trainer logs.

On by default in the UP trainers (`up_collapse_warning=True`), where it only logs; usable with a plain TRL trainer:

    from up_trl.collapse_warning import CollapseWarningCallback
    trainer = GRPOTrainer(..., callbacks=[CollapseWarningCallback()])        # or stop_on_collapse=True

The rule (measured on recorded runs in docs/collapse.md). Over the logged values of each metric (one per log call;
TRL logs `reward` and `frac_reward_zero_std` only on steps that generated a rollout batch, `entropy` every step):

    H0, R0   the means of the first `window` logged `entropy` and `reward` values (the baselines)
    H, R, Z  the means of the last `window` logged `entropy`, `reward`, `frac_reward_zero_std` values

    entropy runaway:   H > max(entropy_ratio * H0, H0 + entropy_margin)        (defaults 2 x and + 1 nat)
    reward collapse:   R <= R0 - reward_drop * max(|R0|, reward_scale)  and  Z >= no_signal_frac
                       (defaults: the reward fell by half of its starting level (scale at least 0.1), and at least
                       90% of the groups have no reward spread, so the advantages and the gradient are ~0: a run in
                       that state cannot recover by itself)

It fires once, at the first log where either holds (after 2 * `window` values of the metric, so that the baseline
and the current window do not overlap), logs one warning line that says what is happening and what to try, and,
with `stop_on_collapse=True`, asks the Trainer to save a checkpoint and stop. It changes nothing else. Eval logs
(`eval_*` keys) are ignored. The state is not saved with a checkpoint: after a resume the baselines restart.
"""

from __future__ import annotations

import statistics

from transformers import TrainerCallback
from transformers.utils import logging

logger = logging.get_logger(__name__)

ADVICE = (
    "Try: up_positive_capacity_share=0.1 (UP trainers; docs/collapse.md), a lower learning_rate, or fewer updates "
    "per rollout batch (num_iterations, steps_per_generation)."
)


class CollapseRule:
    """The detector itself, fed one log dict at a time (`update`); `fired` holds (step, kind, message) once it fires.
    Separate from the callback so that recorded curves can be replayed through it (tests, docs/collapse.md)."""

    def __init__(
        self,
        window: int = 5,
        entropy_ratio: float = 2.0,
        entropy_margin: float = 1.0,
        reward_drop: float = 0.5,
        reward_scale: float = 0.1,
        no_signal_frac: float = 0.9,
        patience: int = 1,
    ):
        if window < 1 or patience < 1:
            raise ValueError(f"window={window} and patience={patience} must be at least 1 (logged values).")
        self.patience, self._streak = patience, {"entropy": 0, "reward": 0}
        self.window, self.entropy_ratio, self.entropy_margin = window, entropy_ratio, entropy_margin
        self.reward_drop, self.reward_scale, self.no_signal_frac = reward_drop, reward_scale, no_signal_frac
        self.history: dict[str, list[float]] = {"entropy": [], "reward": [], "frac_reward_zero_std": []}
        self.fired: tuple[int, str, str] | None = None

    def _means(self, key: str) -> tuple[float, float] | None:
        """(baseline, recent) means of `key`, or None before 2 * window values."""
        values = self.history[key]
        if len(values) < 2 * self.window:
            return None
        return statistics.fmean(values[: self.window]), statistics.fmean(values[-self.window :])

    def update(self, step: int, logs: dict) -> tuple[int, str, str] | None:
        """Read one log; return (step, kind, message) the first time the rule holds, else None."""
        for key, values in self.history.items():
            value = logs.get(key)
            if isinstance(value, (int, float)) and value == value:  # not NaN
                values.append(float(value))
        if self.fired is not None:
            return None
        entropy = self._means("entropy")
        if entropy is not None:
            h0, h = entropy
            bound = max(self.entropy_ratio * h0, h0 + self.entropy_margin)
            self._streak["entropy"] = self._streak["entropy"] + 1 if h > bound else 0
            if self._streak["entropy"] >= self.patience:
                self.fired = (step, "entropy runaway", f"entropy {h:.2f} nats (mean of the last {self.window} logs), "
                              f"up from {h0:.2f} at the start, past the warning bound {bound:.2f}")  # fmt: skip
                return self.fired
        reward = self._means("reward")
        signal = self.history["frac_reward_zero_std"][-self.window :]
        if reward is not None and len(signal) >= self.window:
            r0, r = reward
            z = statistics.fmean(signal)
            lost = r <= r0 - self.reward_drop * max(abs(r0), self.reward_scale) and z >= self.no_signal_frac
            self._streak["reward"] = self._streak["reward"] + 1 if lost else 0
            if self._streak["reward"] >= self.patience:
                self.fired = (step, "reward collapse", f"reward {r:.3f} (mean of the last {self.window} logs), down "
                              f"from {r0:.3f} at the start, and {z:.0%} of the groups have no reward spread, so "
                              "there is almost no learning signal left")  # fmt: skip
                return self.fired
        return None


class CollapseWarningCallback(TrainerCallback):
    """Warns once, early, when the logged metrics show an entropy runaway or a reward collapse (rule: the module
    docstring, `CollapseRule`); with `stop_on_collapse=True` it then saves a checkpoint and stops training."""

    def __init__(self, stop_on_collapse: bool = False, **rule_settings):
        self.stop_on_collapse = stop_on_collapse
        self.rule = CollapseRule(**rule_settings)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or any(key.startswith("eval_") for key in logs):
            return control
        fired = self.rule.update(state.global_step, logs)
        if fired is None:
            return control
        step, kind, what = fired
        stopping = (
            " Saving a checkpoint and stopping (stop_on_collapse=True)."
            if self.stop_on_collapse
            else " (stop_on_collapse=True would save a checkpoint and stop.)"
        )
        if state.is_world_process_zero:
            logger.warning(f"up-trl: possible {kind} at step {step}: {what}. {ADVICE}{stopping}")
        if self.stop_on_collapse:
            control.should_save = True
            control.should_training_stop = True
        return control
