"""Saved weights get the usual file mode (0o666 & ~umask, 0644 under umask 022), not the 0600 of the temporary file
transformers writes them through (`up_trl.file_modes`)."""

from __future__ import annotations

import os
from types import SimpleNamespace

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


def test_a_checkpoint_is_widened_when_it_is_marked_complete(tmp_path):
    from up_trl.run.checkpoint_complete import MarkCompleteCallback

    checkpoint = tmp_path / "checkpoint-2"
    checkpoint.mkdir()
    (checkpoint / "model.safetensors").write_bytes(b"")
    (checkpoint / "model.safetensors").chmod(0o600)
    state = SimpleNamespace(is_world_process_zero=True, global_step=2)
    args = SimpleNamespace(output_dir=str(tmp_path), to_dict=lambda: {})
    MarkCompleteCallback().on_save(args, state, None)
    assert mode(checkpoint / "model.safetensors") == default_file_mode()
