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
