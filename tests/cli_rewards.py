"""Reward functions that `up-trl train --reward_funcs cli_rewards.<name>` loads in tests/test_run_folder.py."""

import os
import signal

CALLS = {"count": 0}


def reset() -> None:
    CALLS["count"] = 0


def spread(completions, **kwargs):
    """A reward with spread inside every group of 4, whatever the text."""
    CALLS["count"] += 1
    return [float(i % 4) for i in range(len(completions))]


def third_call_raises(completions, **kwargs):
    """`spread`, except that its 3rd call in this process raises, as a verifier that goes away would."""
    if CALLS["count"] == 2:
        CALLS["count"] += 1
        raise RuntimeError("verifier unreachable")
    return spread(completions)


def first_call_sends_sigint(completions, **kwargs):
    """`spread`, and Ctrl-C on its first call (the run then stops after step 1, saving a checkpoint)."""
    if CALLS["count"] == 0:
        os.kill(os.getpid(), signal.SIGINT)
    return spread(completions)


def says_target(completions, target, **kwargs):
    """How often the reply holds each character of the row's `target`, plus a spread in every group of 4."""
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    pairs = enumerate(zip(texts, target, strict=True))
    return [sum(text.count(ch) for ch in str(t)) + 0.1 * (i % 4) for i, (text, t) in pairs]


def reads_prompt(completions, prompt, **kwargs):
    """A reward that reads `prompt`, which TRL never passes to rewards (it passes `prompts`)."""
    return [0.0 for _ in completions]


def length(completions, **kwargs):
    """Shorter replies score higher (TRL's quickstart rewards length on a prompt-only set)."""
    return [-float(len(c[0]["content"] if isinstance(c, list) else c)) for c in completions]
