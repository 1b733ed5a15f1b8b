"""Saved weights get the usual file mode (0o666 & ~umask, 0644 under umask 022), not the 0600 of the temporary file
transformers writes them through (`up_trl.file_modes`)."""

from __future__ import annotations

import os

from up_trl.data.models import save_tiny_model
from up_trl.file_modes import default_file_mode, usual_file_modes


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


def test_a_trainers_saved_model_and_checkpoints_get_the_usual_mode(tmp_path, tiny, prompts_dataset):
    # The Python API (trainer.save_model, as in the README) and every checkpoint: 0644 under umask 022, as
    # `up-trl train` gives them, by the one rule in UPTrainerMixin.save_model.
    from conftest import make_trainer

    umask = os.umask(0o022)
    try:
        trainer = make_trainer(tmp_path, tiny, prompts_dataset, max_steps=1, save_strategy="steps", save_steps=1)
        trainer.train()
        trainer.save_model(str(tmp_path / "final"))
        trainer.save_model()  # into args.output_dir
    finally:
        os.umask(umask)
    weights = {str(path.relative_to(tmp_path)): mode(path) for path in tmp_path.rglob("model.safetensors")}
    assert weights == {
        "final/model.safetensors": 0o644,
        "out/checkpoint-1/model.safetensors": 0o644,
        "out/model.safetensors": 0o644,
    }


def test_with_since_only_what_a_save_just_wrote_is_widened(tmp_path):
    mine, saved = tmp_path / "private.safetensors", tmp_path / "model.safetensors"
    for path in (mine, saved):
        path.write_bytes(b"")
        path.chmod(0o600)
    os.utime(mine, (1_000_000, 1_000_000))  # written long before the save
    usual_file_modes(tmp_path, since=2_000_000)
    assert mode(mine) == 0o600 and mode(saved) == default_file_mode()
