"""The conversational prompt every math dataset becomes (a system turn unless `system_prompt=None`, then the
problem), and the error raised when data cannot become one. `up_trl.data` re-exports these names.

    >>> make_prompt("What is 7 x 8?", system_prompt=None)
    [{'role': 'user', 'content': 'What is 7 x 8?'}]
"""

from __future__ import annotations

DEFAULT_SYSTEM_PROMPT = "Please reason step by step, and put your final answer within \\boxed{}."


class DataError(ValueError):
    """Data that cannot be read as math prompts as asked: the message says what to change (one line, exit 2)."""


def make_prompt(problem: str, system_prompt: str | None = DEFAULT_SYSTEM_PROMPT, num_images: int = 0) -> list[dict]:
    """One conversational prompt; with images, content parts and an image placeholder each (TRL fills `images`)."""
    if num_images == 0:
        user = {"role": "user", "content": problem}
        system = {"role": "system", "content": system_prompt}
    else:
        user = {"role": "user", "content": [{"type": "image"}] * num_images + [{"type": "text", "text": problem}]}
        system = {"role": "system", "content": [{"type": "text", "text": system_prompt}]}
    return [system, user] if system_prompt is not None else [user]


def system_prompt_from_flag(value: str | None) -> str | None:
    """The system prompt a command-line flag asks for: unset means DEFAULT_SYSTEM_PROMPT, "none" no system turn.

    >>> system_prompt_from_flag(None) == DEFAULT_SYSTEM_PROMPT
    True
    >>> system_prompt_from_flag(" None "), system_prompt_from_flag("Be brief.")
    (None, 'Be brief.')
    """
    value = value or DEFAULT_SYSTEM_PROMPT
    return None if value.strip().lower() == "none" else value


def with_system(prompt: str | list[dict], system_prompt: str | None) -> str | list[dict]:
    """A `prompt` column's entry (text or messages) with a system turn first, when one is asked for and it has none."""
    if system_prompt is None or (not isinstance(prompt, str) and prompt and prompt[0]["role"] == "system"):
        return prompt
    if isinstance(prompt, str):
        return make_prompt(prompt, system_prompt)
    return [{"role": "system", "content": system_prompt}, *prompt]
