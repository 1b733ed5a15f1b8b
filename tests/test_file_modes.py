"""The weights up-trl saves (checkpoints, `up-trl train`'s final model, the tiny and offline models it converts) get
the usual file mode (0o666 & ~umask, 0644 under umask 022), not the 0600 of the temporary file transformers writes
them through (`up_trl.file_modes`)."""

from __future__ import annotations

import os

from up_trl.file_modes import default_file_mode, usual_file_modes
from up_trl.models.offline import save_tiny_model


def mode(path) -> int:
    return os.stat(path).st_mode & 0o777


def test_a_saved_model_is_readable_as_its_neighbours(tmp_path):
    folder = save_tiny_model(tmp_path / "tiny")
    assert mode(os.path.join(folder, "model.safetensors")) == default_file_mode()
    assert mode(os.path.join(folder, "model.safetensors")) == mode(os.path.join(folder, "config.json"))


def test_only_private_weight_files_are_widened(tmp_path):
    for name, bits in (("model.safetensors", 0o600), ("shared.bin", 0o640), ("lock", 0o600)):
        (tmp_path / name).write_bytes(b"")
        (tmp_path / name).chmod(bits)
    usual_file_modes(tmp_path)
    assert mode(tmp_path / "model.safetensors") == default_file_mode()
    assert mode(tmp_path / "shared.bin") == 0o640 and mode(tmp_path / "lock") == 0o600  # set on purpose: kept


def test_a_trainers_checkpoints_and_up_trl_trains_weights_get_the_usual_mode(tmp_path, tiny, prompts_dataset):
    # Every checkpoint a trainer with the part writes (its on_save, `run.parts.UsualFileModesCallback`) and the
    # final weights `up-trl train` writes: 0644 under umask 022. `trainer.save_model` itself is transformers' own.
    from conftest import make_trainer, tiny_train_argv

    from up_trl.cli import train

    umask = os.umask(0o022)
    try:
        trainer = make_trainer(
            tmp_path, tiny, prompts_dataset, parts=True, max_steps=1, save_strategy="steps", save_steps=1
        )
        trainer.train()
        model_dir = save_tiny_model(tmp_path / "tiny")
        train(tiny_train_argv(model_dir, tmp_path / "cli", max_steps=1))
    finally:
        os.umask(umask)
    weights = {str(path.relative_to(tmp_path)): mode(path) for path in tmp_path.rglob("model.safetensors")}
    assert weights == {
        "out/checkpoint-1/model.safetensors": 0o644,
        "cli/model.safetensors": 0o644,
        "tiny/model.safetensors": 0o644,  # `save_tiny_model` widens its own
    }


def test_with_since_only_what_a_save_just_wrote_is_widened(tmp_path):
    mine, saved = tmp_path / "private.safetensors", tmp_path / "model.safetensors"
    for path in (mine, saved):
        path.write_bytes(b"")
        path.chmod(0o600)
    os.utime(mine, (1_000_000, 1_000_000))  # written long before the save
    usual_file_modes(tmp_path, since=2_000_000)
    assert mode(mine) == 0o600 and mode(saved) == default_file_mode()
