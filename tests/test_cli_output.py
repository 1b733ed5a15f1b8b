"""What `up-trl train` prints: none of the warnings a user cannot act on (DeepSpeed's `Setting accelerator to CPU`
where DeepSpeed is not used, transformers' `gradient_checkpointing` FutureWarnings from TRL's own calls, printed into
the progress bar), and the same messages where they do say something."""

import logging
import subprocess
import sys
import warnings

import pytest
from conftest import same_code_env, tiny_train_argv

UNACTIONABLE = ("Setting accelerator to CPU", "is_gradient_checkpointing", "gradient_checkpointing_disable",
                "gradient_checkpointing_enable", "FutureWarning")  # fmt: skip


@pytest.mark.slow
def test_a_cpu_run_prints_none_of_the_unactionable_warnings(tmp_path):
    from up_trl.models.offline import save_tiny_model

    model = save_tiny_model(tmp_path / "tiny")
    flags = ["--activation_checkpointing", "true"]  # on: TRL toggles it around generation
    argv = tiny_train_argv(
        model, tmp_path / "out", *flags, reward="tests.conftest.length_reward", max_steps=2, learning_rate=None
    )
    out = subprocess.run(
        [sys.executable, "-m", "up_trl", "train", *argv],
        capture_output=True,
        text=True,
        timeout=300,
        env=same_code_env(),
    )
    assert out.returncode == 0, out.stderr[-3000:]
    printed = out.stdout + out.stderr
    assert [w for w in UNACTIONABLE if w in printed] == [], printed[-3000:]
    assert "up-trl: done in" in out.stdout


def test_the_deepspeed_message_is_dropped_only_where_deepspeed_was_not_asked_for():
    from up_trl.quiet import silence_unactionable_warnings

    logger = logging.getLogger("DeepSpeed")
    before = list(logger.filters)  # earlier in-process runs may have added ours
    logger.filters[:] = []
    try:
        message = "Setting accelerator to CPU. If you have GPU or other accelerator, we were unable to detect it."
        record = logging.LogRecord("DeepSpeed", logging.WARNING, __file__, 1, message, None, None)
        other = logging.LogRecord("DeepSpeed", logging.ERROR, __file__, 1, "ZeRO failed", None, None)
        with warnings.catch_warnings():
            silence_unactionable_warnings(deepspeed=True)
        assert logger.filter(record) and logger.filter(other)  # asked for: kept
        with warnings.catch_warnings():
            silence_unactionable_warnings(deepspeed=False)
            assert not logger.filter(record) and logger.filter(other)  # only that message goes, errors stay
            with pytest.warns(FutureWarning, match="something else"):  # other FutureWarnings still show
                warnings.warn("something else is deprecated", FutureWarning, stacklevel=1)
    finally:
        logger.filters[:] = before
