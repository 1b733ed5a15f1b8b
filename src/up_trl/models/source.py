"""A `--model` checked by transformers' own `AutoConfig.from_pretrained` (config.json only) before anything is
loaded or removed, its exception as one line naming the flag. Our own checks are kept only where transformers' answer
does not say what to change, each beside the test that shows it."""

from __future__ import annotations

import json
import os
from pathlib import Path

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".gguf")
NOT_WEIGHTS = frozenset({"training_args.bin", "optimizer.pt", "optimizer.bin", "scheduler.pt", "scaler.pt"})


class ModelNotFoundError(ValueError):
    """`check_model` found no model it can load: the one line says which flag, and why (transformers' words)."""


def checkpoints_in(folder: str | os.PathLike) -> list[Path]:
    """The `checkpoint-<step>` folders in `folder`, oldest first."""
    found = [p for p in Path(folder).glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()]
    return sorted(found, key=lambda p: int(p.name.split("-")[-1]))


def model_weights(path: Path) -> list[Path]:
    """The weight files (`WEIGHT_SUFFIXES` or a sharded `*.index.json`) in a model folder, not its training state."""
    kept = [p for p in path.iterdir() if p.name not in NOT_WEIGHTS and not p.name.startswith("rollout_buffer_rank")]
    return [p for p in kept if p.is_file() and (p.suffix in WEIGHT_SUFFIXES or p.name.endswith(".index.json"))]


def _latest(path: Path, flag: str) -> str:
    checkpoints = checkpoints_in(path)
    return f"pass {flag} {checkpoints[-1]} (its latest checkpoint)" if checkpoints else "save the model again"


def _is_json_object(file: Path) -> bool:
    """False only for a config.json that is valid JSON but not an object; invalid JSON is transformers' to say."""
    try:
        return isinstance(json.loads(file.read_bytes()), dict)
    except ValueError:  # not JSON, or not text: transformers names the file
        return True


def check_model(
    name_or_path: str,
    flag: str = "--model_name_or_path",
    *,
    revision: str | None = None,
    trust_remote_code: bool = False,
) -> str:
    """`name_or_path` as `from_pretrained` should get it, once AutoConfig read it, else a ModelNotFoundError."""
    from huggingface_hub import constants
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    path = Path(os.path.expanduser(name_or_path))
    if not path.exists():
        try:  # transformers: "Repo id must be in the form ..." [test_cli_checks missing_model_folder]
            validate_repo_id(name_or_path)
        except HFValidationError:
            raise ModelNotFoundError(f"{flag} {name_or_path}: no such folder.") from None
    elif path.is_dir() and not (path / "config.json").is_file():
        if (path / "adapter_config.json").is_file():
            return str(path)  # a PEFT adapter: from_pretrained loads its base first
        # transformers: "Unrecognized model in X. Should have a `model_type` key" [test_cli_checks crashed_run_folder]
        raise ModelNotFoundError(f"{flag} {path} holds no config.json (no model saved there): {_latest(path, flag)}.")
    elif path.is_dir() and not _is_json_object(path / "config.json"):
        # transformers 5.17: a TypeError that names no file [test_hostile.py config_not_object, oldest stack]
        raise ModelNotFoundError(
            f"{flag} {name_or_path}: its config.json is not a JSON object: {_latest(path, flag)}."
        )
    source = str(path) if path.exists() else name_or_path
    from transformers import AutoConfig

    from ..data.sources import hub_reachable

    # Without a network transformers retries for 23 s, printing each retry [test_cli_checks hub_id_offline]
    offline = not path.exists() and not constants.HF_HUB_OFFLINE and not hub_reachable()
    try:
        AutoConfig.from_pretrained(
            source, revision=revision, trust_remote_code=trust_remote_code, local_files_only=offline
        )
    except (OSError, ValueError) as error:
        where = "" if path.exists() else " no such local folder; as a Hub id:"
        raise ModelNotFoundError(f"{flag} {name_or_path}:{where} {' '.join(str(error).split())}") from None
    if path.is_dir() and not model_weights(path):
        # else after an overwrite [test_hostile a_model_folder_without_weights_is_refused_before_an_overwrite]
        raise ModelNotFoundError(
            f"{flag} {path} holds a config but no weights (no *.safetensors, *.bin, *.pt or *.gguf file, nor a "
            f"sharded index): the save did not finish; {_latest(path, flag)}."
        )
    return source
