"""A consistently wrong verifier, for the studies (a helper module, no `__main__`; not part of the package).

`ConsistentlyWrongVerifier(reward, p, key)` wraps a reward function and flips its reward (r -> 1 - r) on a fraction
`p` of (prompt, answer) pairs, chosen by a hash of (key, prompt, answer): the same pairs are wrong in every call, in
every arm that shares `key` (paired seeds), and whatever the policy samples. A real verifier is wrong this way:
on the same answers every time, not at random. `wrongly_rewarded` marks the samples the wrapped verifier rewards
and the true reward does not (the verifier's mistakes the policy collects).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable


def is_flipped(key: int | str, prompt: str, answer: str, p: float) -> bool:
    """Whether the verifier is wrong on (prompt, answer): a uniform number in [0, 1) from SHA-256, below `p`."""
    digest = hashlib.sha256(f"{key}\x00{prompt}\x00{answer}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < p


def prompt_text(prompt) -> str:
    """A chat prompt's last message, or a plain prompt as it is."""
    return prompt[-1]["content"] if isinstance(prompt, list) else str(prompt)


class ConsistentlyWrongVerifier:
    """`reward` (1/0 per completion, TRL's reward-function signature) with its value flipped on the pairs
    `is_flipped` picks; `answer(completion)` is what the verifier reads from a reply (the pair's second half)."""

    def __init__(self, reward: Callable, p: float, key: int | str, answer: Callable[[object], str]):
        if not 0 <= p <= 1:
            raise ValueError(f"p={p} must be in [0, 1]")
        self.reward, self.p, self.key, self.answer = reward, p, key, answer
        self.__name__ = f"verifier_p{p:g}"

    def flipped(self, prompts, completions) -> list[bool]:
        return [is_flipped(self.key, prompt_text(q), self.answer(c), self.p) for q, c in zip(prompts, completions)]

    def _scored(self, prompts, completions, **kwargs) -> tuple[list[float], list[float]]:
        """(the true rewards, this verifier's), the true reward computed once."""
        true = self.reward(prompts=prompts, completions=completions, **kwargs)
        flips = self.flipped(prompts, completions)
        return true, [1.0 - r if f else r for r, f in zip(true, flips, strict=True)]

    def __call__(self, prompts, completions, **kwargs) -> list[float]:
        return self._scored(prompts, completions, **kwargs)[1]

    def wrongly_rewarded(self, prompts, completions, **kwargs) -> list[float]:
        """1 where this verifier pays and the true reward does not (logged at weight 0)."""
        true, given = self._scored(prompts, completions, **kwargs)
        return [float(g > 0.5 and t < 0.5) for g, t in zip(given, true, strict=True)]
