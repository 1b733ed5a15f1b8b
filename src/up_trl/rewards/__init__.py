r"""Reward functions for math RL with TRL's `GRPOTrainer`: strict answer extraction, math-verify in worker processes.

Every reward has TRL's signature `fn(completions, **kwargs) -> list[float | None]`; `completions` are strings or
conversational lists (`[{"role": "assistant", "content": "..."}]`), and dataset columns arrive as keyword arguments
(the gold answer in `solution`). `None` means "skip this sample" (TRL turns it into NaN and ignores it).

    >>> replies = [r"so \boxed{\frac{1}{2}}", "It is 3.", "The answer is 2x + 3."]
    >>> math_accuracy_reward(replies, solution=["0.5", "#### 4", "3"])
    [1.0, 0.0, 0.0]

One idea a module:
- `extraction`: the one answer a reply commits to (last \boxed{} or final-answer phrase, else the final sentence's
  answer, else the last number); `sentences`: the final sentence's answer (its last math or bold span, else the right
  side of "=") and the trailing asides that are no answer; `expressions`: unicode maths as LaTeX, a phrase read as one
  expression, and the anti-echo rules ("71 + 88" never scores as 159); `numerals`: numbers written in words, with a
  scale word, with thousands set apart by spaces, or repeating, as the digits math-verify reads;
- `verification`: that answer against the gold with math-verify, as an outcome (CORRECT, WRONG, GOLD_UNPARSEABLE,
  TIMEOUT); a match in which math-verify dropped a letter of one side only ("2t" read as 2) is WRONG, and a letter
  both sides write is a variable, never a unit ("9 - t" meets "9-t"); gold parses are cached only when they succeed;
- `pool`: pebble worker processes, each item bounded by `item_timeout_s` (never the call); `verify_many`;
- `functions`: `MathAccuracyReward` (`math_accuracy_reward`, `dapo_math_reward`), format and overlong rewards;
- `registry`: `get_reward_funcs(["math_accuracy", "soft_overlong"], max_completion_length=256)`, names of
  `REWARD_FUNCS` and `REWARD_FACTORIES`, or dotted import paths as in `trl grpo --reward_funcs`.

Metrics: inside `GRPOTrainer` the accuracy rewards log, through TRL's `log_metric`, the batch fractions
`rewards/<name>/skipped_gold_frac`, `rewards/<name>/no_answer_frac` and `rewards/<name>/timeout_frac`, and add
the columns `<name>/answer` and `<name>/gold` to the completions table (`log_extra`). Running totals live in
`reward.stats` (a `RewardStats`). Set `UP_TRL_REWARD_WORKERS=0` (or `num_workers=0`) to score in-process.
"""

from .extraction import (
    MAX_ANSWER_CHARS,
    MAX_CHARS,
    completion_text,
    extract_answer,
    extract_gold,
    last_boxed,
    phrase_expression,
    prediction,
)
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

__all__ = [
    "ITEM_TIMEOUT_S",
    "MATH_VERIFY_TIMEOUT",
    "MAX_ANSWER_CHARS",
    "MAX_CHARS",
    "default_num_workers",
    "CORRECT",
    "GOLD_UNPARSEABLE",
    "REWARD_FACTORIES",
    "REWARD_FUNCS",
    "TIMEOUT",
    "WRONG",
    "MathAccuracyReward",
    "RewardStats",
    "boxed_format_reward",
    "completion_text",
    "dapo_math_reward",
    "extract_answer",
    "extract_gold",
    "get_reward_funcs",
    "last_boxed",
    "make_math_accuracy_reward",
    "make_soft_overlong_punishment",
    "math_accuracy_reward",
    "phrase_expression",
    "prediction",
    "shutdown_workers",
    "think_format_reward",
    "verify_answer",
    "verify_many",
]
