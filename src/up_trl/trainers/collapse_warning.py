"""An early warning for an entropy runaway or a collapse, read from the metrics any TRL GRPO / RLOO trainer logs.

On by default in the UP trainers (`up_collapse_warning=True`), where it only logs; usable with a plain TRL trainer:

    from up_trl.trainers.collapse_warning import CollapseWarningCallback
    trainer = GRPOTrainer(..., callbacks=[CollapseWarningCallback()])        # or stop_on_collapse=True

The rule (chosen on recorded runs and tested on others: docs/collapse.md), over the values of each metric logged:

    H0, R0   the means of the first `window` (5) `entropy` and `reward_window` (3) `reward` values logged
    H, R, Z  the means of the last `window` `entropy` and `reward_window` `reward`, `frac_reward_zero_std` values

    entropy runaway:   H > H0 + entropy_margin                                   (default: 1 nat above the start)
    reward collapse:   R <= R0 - reward_drop * max(R0, reward_scale)  and  Z >= no_signal_frac
                       (defaults: half of its level lost, and 90% of the groups without spread: no gradient)
    dead state:        on the latest rollout batch Z = 1 and its reward lost as above, while the latest entropy is
                       above H0 + entropy_margin (every advantage is 0: with beta = 0 no update can leave it)

The dead state fires at once, only with `beta = 0` (a KL keeps a gradient); the other two once they held for
`patience_steps` (25) optimizer steps, with 2 * `window` values in. It fires once, with a warning line saying what to
try (and with `stop_on_collapse=True` saves and stops). A resume restarts the baselines.

>>> rule = CollapseRule(patience_steps=2)
>>> for step in range(1, 16):
...     _ = rule.update(step, {"entropy": 1.0 if step <= 10 else 4.0})
>>> rule.fired[:2]  # mean of the last 5 logs past 1 + 1 nat from step 12 (2.2), for 2 steps at step 14
(14, 'entropy runaway')
"""

from __future__ import annotations

import statistics

from transformers import TrainerCallback
from transformers.utils import logging

logger = logging.get_logger(__name__)

# A dead state has no gradient: the collapse study's rescue (docs/collapse.md, "The rescue") is what helps.
DEAD_STATE_ADVICE = (
    "Resume from a checkpoint saved before this step (not one saved at or after it) with a lower learning_rate: "
    "an unchanged resume replays the same updates into the same state; in the up-trl collapse study's rescue, half "
    "the learning rate recovered it."
)
ADVICE = "Try a lower learning_rate, or fewer updates per rollout batch (num_iterations, steps_per_generation)."
# What the UP trainers add: the option the collapse study recommends (docs/collapse.md, rare_clip_runaways.py).
UP_ADVICE = (
    "Try up_positive_min_prob=0.05 (rare positive tokens keep the clip; in the up-trl collapse studies 3 of 193 "
    "runs with it alone ran away, plain UP 18 of 60 on the seeds that chose it), a lower learning_rate, or fewer "
    "updates per rollout batch (num_iterations, steps_per_generation)."
)


class CollapseRule:
    """The detector, fed one log at a time (`update`; recorded curves replay through it); `fired` once it fires."""

    def __init__(
        self,
        window: int = 5,
        entropy_margin: float = 1.0,
        reward_drop: float = 0.5,
        reward_scale: float = 0.1,
        no_signal_frac: float = 0.9,
        patience_steps: int = 25,
        reward_window: int = 3,
        beta: float = 0.0,
    ):
        if min(window, reward_window) < 1 or patience_steps < 0:
            raise ValueError(
                f"window={window} and reward_window={reward_window} must be at least 1, "
                f"patience_steps={patience_steps} at least 0."
            )
        self.window, self.entropy_margin, self.patience_steps = window, entropy_margin, patience_steps
        self.reward_window, self.beta = reward_window, beta  # beta: TRL's KL coefficient (the dead state: at 0 only)
        self.reward_drop, self.reward_scale, self.no_signal_frac = reward_drop, reward_scale, no_signal_frac
        self.history: dict[str, list[float]] = {"entropy": [], "reward": [], "frac_reward_zero_std": []}
        self._since: dict[str, int] = {}  # the step from which each of the two confirmed rules has held
        self._rewards_seen = 0  # reward values read so far: a dead state is judged once per new rollout batch
        self.fired: tuple[int, str, str] | None = None

    def _means(self, key: str, window: int) -> tuple[float, float] | None:
        """(baseline, recent) means of `key` over `window` values, or None before 2 * window values."""
        values = self.history[key]
        if len(values) < 2 * window:
            return None
        return statistics.fmean(values[:window]), statistics.fmean(values[-window:])

    def _held(self, kind: str, holds: bool, step: int) -> bool:
        """Whether `kind` has held at every log for `patience_steps` steps, up to and including this one."""
        if not holds:
            self._since.pop(kind, None)
            return False
        return step - self._since.setdefault(kind, step) >= self.patience_steps

    def _lost(self, r: float, r0: float) -> bool:
        """Whether `r` lost half of its starting level `r0`, at least `reward_scale` (a level <= 0 has no half)."""
        return r <= r0 - self.reward_drop * max(r0, self.reward_scale)

    def _dead_state(self) -> str | None:
        """What the latest rollout batch shows if it is a dead state (module docstring), else None."""
        entropy, reward, zero_std = (self.history[k] for k in ("entropy", "reward", "frac_reward_zero_std"))
        if len(entropy) <= self.window or len(reward) < 2 or not zero_std or zero_std[-1] < 1.0:
            return None
        h0, h = statistics.fmean(entropy[: self.window]), entropy[-1]
        r0, r = statistics.fmean(reward[:-1][: self.reward_window]), reward[-1]
        if h > h0 + self.entropy_margin and self._lost(r, r0):
            return (
                f"no group of the last rollout batch has any reward spread (reward {r:.3f}, from {r0:.3f} at the "
                f"start) and the entropy is {h:.2f} nats, up from {h0:.2f}: every advantage is 0"
            )
        return None

    def update(self, step: int, logs: dict) -> tuple[int, str, str] | None:
        """Read one log; return (step, kind, message) the first time the rule fires, else None."""
        for key, values in self.history.items():
            if isinstance(value := logs.get(key), (int, float)) and value == value:  # not NaN
                values.append(float(value))
        if self.fired is not None:
            return None
        if not self.beta and len(self.history["reward"]) > self._rewards_seen:  # a new rollout batch
            self._rewards_seen = len(self.history["reward"])
            if (dead := self._dead_state()) is not None:
                self.fired = (step, "dead state", dead)
                return self.fired
        if (entropy := self._means("entropy", self.window)) is not None:
            h0, h = entropy
            if self._held("entropy runaway", h > h0 + self.entropy_margin, step):
                what = f"entropy {h:.2f} nats (mean of the last {self.window} logs), up from {h0:.2f} at the start"
                what += f", more than {self.entropy_margin} nat above it for {self.patience_steps} steps"
                self.fired = (step, "entropy runaway", what)
                return self.fired
        reward = self._means("reward", self.reward_window)
        signal = self.history["frac_reward_zero_std"][-self.reward_window :]
        if reward is not None and len(signal) >= self.reward_window:
            r0, r = reward
            z = statistics.fmean(signal)
            if self._held("reward collapse", self._lost(r, r0) and z >= self.no_signal_frac, step):
                what = f"reward {r:.3f} (mean of the last {self.reward_window} logs), down from {r0:.3f} at the start"
                spread = f"{z:.0%} of the groups have no reward spread, so there is almost no learning signal left"
                self.fired = (step, "reward collapse", f"{what}, and {spread}")
                return self.fired
        return None


class CollapseWarningCallback(TrainerCallback):
    """Warns once when `CollapseRule` fires (with `stop_on_collapse`, saves and stops); other keywords: the rule's."""

    def __init__(
        self,
        stop_on_collapse: bool = False,
        advice: str = ADVICE,
        stop_flag: str = "stop_on_collapse",
        dead_state_advice: str = DEAD_STATE_ADVICE,
        **rule_settings,
    ):
        self.stop_on_collapse, self.advice, self.stop_flag = stop_on_collapse, advice, stop_flag
        self.dead_state_advice = dead_state_advice
        self.rule = CollapseRule(**rule_settings)

    def on_train_begin(self, args, state, control, **kwargs):
        self.rule.beta = getattr(args, "beta", 0.0)  # a GRPO / RLOO config's KL coefficient (none: 0)

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or any(key.startswith("eval_") for key in logs):
            return control
        if (fired := self.rule.update(state.global_step, logs)) is None:
            return control
        step, kind, what = fired
        stopping = f" ({self.stop_flag}=True would save a checkpoint and stop.)"
        if self.stop_on_collapse:
            stopping = f" Saving a checkpoint and stopping ({self.stop_flag}=True)."
            control.should_save = control.should_training_stop = True
        if state.is_world_process_zero:
            advice = self.dead_state_advice if kind == "dead state" else self.advice
            logger.warning(f"up-trl: possible {kind} at step {step}: {what}. {advice}{stopping}")
        return control
