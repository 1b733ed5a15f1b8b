"""A failed save ends the run with one line and the resume command; resumed, the weights are reached."""

import errno
import os
import shutil
import subprocess

import pytest
import torch
from conftest import argv, tiny_train_argv
from safetensors.torch import load_file
from transformers import Trainer

from up_trl.cli import main
from up_trl.models.offline import save_tiny_model
from up_trl.run.ending import failed_save


def _train(capsys, words) -> tuple[int, list[str]]:
    """(exit code, the error lines `up-trl train` printed); a traceback fails the test: the line says it all."""
    code = main(["train", *words])
    err = capsys.readouterr().err
    assert "Traceback" not in err, err[-3000:]
    return code, [line for line in err.splitlines() if line.startswith("up-trl train: error: ")]


def _weights(out):
    return load_file(str(out / "model.safetensors"))


def _inject(monkeypatch, error_number: int, into: str = "checkpoint-2"):
    """torch.save raises `error_number` for any file under `into`, as a full or read-only disk would."""
    real = torch.save

    def save(obj, f, *args, **kwargs):
        if isinstance(f, (str, os.PathLike)) and into in str(f):
            raise OSError(error_number, os.strerror(error_number), str(f))
        return real(obj, f, *args, **kwargs)

    monkeypatch.setattr(torch, "save", save)


def _can_mount_tmpfs(folder) -> bool:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    folder.mkdir(parents=True, exist_ok=True)
    probe = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)], capture_output=True)
    if probe.returncode != 0:
        return False
    subprocess.run(["umount", str(folder)], check=True)
    return True


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory):
    """The run, uninterrupted, saving every step: its folder (the weights to reach, a checkpoint's size)."""
    tmp = tmp_path_factory.mktemp("uninterrupted")
    tiny = save_tiny_model(tmp / "tiny")
    out = tmp / "out"
    assert main(["train", *tiny_train_argv(tiny, out, save_steps=1, max_steps=3)]) == 0
    return tiny, out


@pytest.mark.slow
def test_a_full_disk_stops_the_run_in_one_line_and_the_resume_reaches_the_same_weights(
    tmp_path, capsys, monkeypatch, uninterrupted
):
    tiny, reference = uninterrupted
    disk = tmp_path / "disk"
    real_disk = _can_mount_tmpfs(disk)
    out = disk / "out"
    run = tiny_train_argv(tiny, out, save_steps=1, max_steps=3)
    if real_disk:  # room for the first checkpoint and what precedes it, not for the second
        checkpoint = sum(p.stat().st_size for p in (reference / "checkpoint-1").rglob("*") if p.is_file())
        size = int(1.5 * checkpoint) + 256 * 1024
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(disk)], check=True)
    else:
        disk.mkdir(parents=True, exist_ok=True)
        _inject(monkeypatch, errno.ENOSPC)
    try:
        code, err = _train(capsys, run)
        assert code == 1 and len(err) == 1, err  # one line, no traceback
        line = err[0]
        assert line.startswith(f"up-trl train: error: saving failed after step 2 (No space left on device) while "
                               f"writing {out / 'checkpoint-2'} (incomplete: a resume skips it)"), line  # fmt: skip
        assert f"; checkpoint-1 is the newest complete checkpoint in {out}; once space is freed, resume with: " in line
        assert line.endswith("--resume_from_checkpoint true"), line
        if real_disk:  # space freed
            subprocess.run(["mount", "-o", "remount,size=256m", str(disk)], check=True)
        else:
            monkeypatch.undo()
        code, err = _train(capsys, argv(*run, resume_from_checkpoint="true"))
        assert code == 0, err
        ours, theirs = _weights(out), _weights(reference)
        assert ours.keys() == theirs.keys() and all(torch.equal(ours[k], theirs[k]) for k in theirs)
    finally:
        if real_disk:
            subprocess.run(["umount", "-l", str(disk)], check=False)


@pytest.mark.slow
@pytest.mark.parametrize("error_number, fix", [
    (errno.EACCES, "the folder is writable"),
    (errno.ENOENT, "the folder is back"),
    (errno.EIO, "the cause is fixed"),
], ids=["permissions_changed", "folder_removed", "other"])  # fmt: skip
def test_other_save_failures_say_the_same(tmp_path, capsys, monkeypatch, uninterrupted, error_number, fix):
    tiny, _ = uninterrupted
    out = tmp_path / "out"
    _inject(monkeypatch, error_number)
    code, err = _train(capsys, tiny_train_argv(tiny, out, save_steps=1, max_steps=3))
    assert code == 1 and len(err) == 1, err
    assert f"({os.strerror(error_number)}) while writing {out / 'checkpoint-2'}" in err[0], err[0]
    assert f"checkpoint-1 is the newest complete checkpoint in {out}; once {fix}, resume with: " in err[0], err[0]


def test_a_failed_final_save_is_one_line_too(tmp_path, capsys, monkeypatch, uninterrupted):
    """The model written at the end (after training, outside any checkpoint) on a full disk: the same line."""
    tiny, _ = uninterrupted
    out = tmp_path / "out"
    real = Trainer.save_model

    def save_model(self, output_dir=None, _internal_call=False):
        if output_dir is not None and str(output_dir) == str(out):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(out / "model.safetensors"))
        return real(self, output_dir, _internal_call)

    monkeypatch.setattr(Trainer, "save_model", save_model)
    code, err = _train(capsys, tiny_train_argv(tiny, out, max_steps=1))
    assert code == 1 and len(err) == 1, err
    assert err[0].startswith(
        f"up-trl train: error: saving failed after step 1 (No space left on device) while writing the model in "
        f"{out}, at {out / 'model.safetensors'}; no checkpoint is complete in {out}; once space is freed, start again:"
    ), err[0]


def test_only_a_refused_save_counts_as_one_other_errors_keep_their_traceback(tmp_path):
    """An OSError under a save is a failed save; a bug raised while saving keeps its traceback."""

    def _save_checkpoint(error):  # a frame of the Trainer's saving code
        raise error

    def raised(error):
        try:
            _save_checkpoint(error)
        except Exception as caught:
            return caught

    assert failed_save(raised(OSError(errno.ENOSPC, "No space left on device")), tmp_path)
    assert not failed_save(raised(RuntimeError("tensors share memory")), tmp_path)  # the disk is fine
    assert failed_save(raised(RuntimeError("unexpected pos")), tmp_path / "removed")  # the folder is gone
    assert not failed_save(OSError(errno.ENOSPC, "not raised while saving"), tmp_path)
