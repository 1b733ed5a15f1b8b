r"""Reward functions for math RL with TRL's `GRPOTrainer`: strict answer extraction, math-verify in worker processes.

Every reward has TRL's signature `fn(completions, **kwargs) -> list[float | None]`: `completions` are strings or
conversational lists, dataset columns arrive as keyword arguments (the gold answer in `solution`), and `None` skips a
sample (TRL turns it into NaN).

    >>> replies = [r"so \boxed{\frac{1}{2}}", "It is 3.", "The answer is 2x + 3."]
    >>> math_accuracy_reward(replies, solution=["0.5", "#### 4", "3"])
    [1.0, 0.0, 0.0]

The answer a reply commits to is read by `extraction`, `sentences`, `expressions` (the anti-echo rules: "71 + 88"
never scores as 159) and `numerals`; `verification` runs math-verify in `pool`'s bounded workers.

Inside `GRPOTrainer` the accuracy rewards log (TRL's `log_metric`) `rewards/<name>/skipped_gold_frac`,
`rewards/<name>/no_answer_frac` and `rewards/<name>/timeout_frac`, and add the columns `<name>/answer` and
`<name>/gold` to the completions table (`log_extra`); running totals are in `reward.stats`. `UP_TRL_REWARD_WORKERS=0`
(or `num_workers=0`) scores in-process.
"""

from .expressions import MAX_ANSWER_CHARS, phrase_expression, prediction
from .extraction import MAX_CHARS, completion_text, extract_answer, extract_gold, last_boxed
from .functions import (
    MathAccuracyReward,
    RewardStats,
    boxed_format_reward,
    dapo_math_reward,
    make_math_accuracy_reward,
    make_soft_overlong_punishment,
    math_accuracy_reward,
    think_format_reward,
)
from .pool import ITEM_TIMEOUT_S, default_num_workers, shutdown_workers, verify_many
from .registry import REWARD_FACTORIES, REWARD_FUNCS, get_reward_funcs
from .verification import CORRECT, GOLD_UNPARSEABLE, MATH_VERIFY_TIMEOUT, TIMEOUT, WRONG, verify_answer

__all__ = ["ITEM_TIMEOUT_S", "MATH_VERIFY_TIMEOUT", "MAX_ANSWER_CHARS", "MAX_CHARS", "default_num_workers", "CORRECT",
           "GOLD_UNPARSEABLE", "REWARD_FACTORIES", "REWARD_FUNCS", "TIMEOUT", "WRONG", "MathAccuracyReward",
           "RewardStats", "boxed_format_reward", "completion_text", "dapo_math_reward", "extract_answer",
           "extract_gold", "get_reward_funcs", "last_boxed", "make_math_accuracy_reward",
           "make_soft_overlong_punishment", "math_accuracy_reward", "phrase_expression", "prediction",
           "shutdown_workers", "think_format_reward", "verify_answer", "verify_many"]  # fmt: skip
