"""The conversational prompt every math dataset becomes, and the error raised when data cannot become one.

`up_trl.data` (the loaders) and `up_trl.data.arithmetic` (the generated set) both build on it; `up_trl.data` re-exports
all three names. A prompt is TRL's conversational format, a system turn (unless `system_prompt=None`) and the problem:

    >>> make_prompt("What is 7 x 8?", system_prompt=None)
    [{'role': 'user', 'content': 'What is 7 x 8?'}]
"""

from __future__ import annotations

DEFAULT_SYSTEM_PROMPT = "Please reason step by step, and put your final answer within \\boxed{}."


class DataError(ValueError):
    """Data that cannot be read as math prompts as asked (an unknown name, split, column or option): the message
    says what to change. `up-trl train` prints it as one line (exit 2)."""


def make_prompt(problem: str, system_prompt: str | None = DEFAULT_SYSTEM_PROMPT, num_images: int = 0) -> list[dict]:
    """One conversational prompt. With images, every content is a list of parts and the user message starts with one
    `{"type": "image"}` placeholder per image, which TRL fills from the `images` column."""
    if num_images == 0:
        user = {"role": "user", "content": problem}
        system = {"role": "system", "content": system_prompt}
    else:
        user = {"role": "user", "content": [{"type": "image"}] * num_images + [{"type": "text", "text": problem}]}
        system = {"role": "system", "content": [{"type": "text", "text": system_prompt}]}
    return [system, user] if system_prompt is not None else [user]
