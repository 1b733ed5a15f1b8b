"""Where a model comes from: a local folder or a Hugging Face Hub id, decided before anything is loaded.

`up-trl train --model_name_or_path X` and `up-trl eval --model X` both call `locate_model(X)`, so a folder that
does not exist says "no such folder" at once instead of reaching the Hub (a 46-line traceback ending in a repo-id
error, or 28 s of retries and a connection error).
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Iterable
from pathlib import Path

MODEL_FILES = ("config.json", "adapter_config.json")  # a full model, or a PEFT adapter on top of its base
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".gguf")
NOT_WEIGHTS = frozenset({"training_args.bin", "optimizer.pt", "optimizer.bin", "scheduler.pt", "scaler.pt"})


class ModelNotFoundError(ValueError):
    """`locate_model` could not find the model: the message says what to pass instead."""


def can_be_hub_id(name: str) -> bool:
    """Whether `name` is a well-formed Hub repo id (`name` or `namespace/name`), by `huggingface_hub`'s own rule.

    >>> can_be_hub_id("Qwen/Qwen3-8B"), can_be_hub_id("gpt2"), can_be_hub_id("./no/such"), can_be_hub_id("a/b/c")
    (True, True, False, False)
    """
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(name)
    except HFValidationError:
        return False
    return True


def looks_like_path(name: str, near: Iterable[str | os.PathLike] = ()) -> bool:
    """Whether a string that names no existing file or folder is meant as a local path, not a Hub id.

    The rule: it is a path when it cannot be a Hub id (more than one `/`, a `\\`, characters a repo id cannot have),
    or starts with `.`, `/` or `~`, or its first part is an existing folder (`outputs/quickstrat` where `outputs/`
    exists: a Hub namespace is never a local folder name by accident here), or it is a close misspelling of a folder
    that exists in the working directory or in one of the `near` folders (e.g. the output folder's parent:
    `quickstrat` for `outputs/quickstart`). Anything else (`gpt2`, `Qwen/Qwen3-8B`) is a Hub id.

    >>> looks_like_path("./no/such"), looks_like_path("~/models/x"), looks_like_path("Qwen/Qwen3-8B")
    (True, True, False)
    """
    if name.startswith((".", "/", "~")) or "\\" in name or not can_be_hub_id(name):
        return True
    first = name.split("/", 1)[0]
    if "/" in name and Path(first).is_dir():
        return True
    return bool(close_local_folders(name, near))


def local_folders(near: Iterable[str | os.PathLike] = ()) -> list[str]:
    """The folders one and two levels under the working directory and under each of `near`, as relative paths."""
    found: list[str] = []
    for root in [Path("."), *map(Path, near)]:
        if not root.is_dir():
            continue
        try:
            children = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
        except OSError:
            continue
        for child in children[:200]:
            found += [_relative(child)] + [_relative(p) for p in sorted(child.glob("*/"))[:200] if p.name[0] != "."]
    return list(dict.fromkeys(found))


def _relative(path: Path) -> str:
    """`path` relative to the working directory when it lies under it (as a user would type it)."""
    absolute = path.resolve()
    try:
        return os.path.normpath(absolute.relative_to(Path.cwd().resolve()))
    except ValueError:
        return os.path.normpath(path)


def close_local_folders(name: str, near: Iterable[str | os.PathLike] = (), cutoff: float = 0.85) -> list[str]:
    """Existing folders `name` may be a misspelling of: the whole relative path, or its last part when `name` is one
    word (`quickstrat` -> `outputs/quickstart`). Empty when none is close."""
    folders = local_folders(near)
    close = difflib.get_close_matches(os.path.normpath(name), folders, n=3, cutoff=cutoff)
    if "/" not in name:
        by_name = {Path(f).name: f for f in folders}
        close += [by_name[n] for n in difflib.get_close_matches(name, list(by_name), n=3, cutoff=cutoff)]
    return [f for f in dict.fromkeys(close) if f != os.path.normpath(name)]


def _did_you_mean(name: str, near: Iterable[str | os.PathLike]) -> str:
    close = close_local_folders(name, near, cutoff=0.6)
    parent = Path(os.path.expanduser(name)).parent
    if not close and parent.is_dir():  # siblings in the deepest folder that exists
        siblings = [p.name for p in parent.iterdir() if p.is_dir()]
        close = [str(parent / n) for n in difflib.get_close_matches(Path(name).name, siblings, n=3, cutoff=0.6)]
    return f" (did you mean {', '.join(close)}?)" if close else ""


def checkpoints_in(folder: str | os.PathLike) -> list[Path]:
    """The `checkpoint-<step>` folders in `folder`, oldest first."""
    found = [p for p in Path(folder).glob("checkpoint-*") if p.is_dir() and p.name.split("-")[-1].isdigit()]
    return sorted(found, key=lambda p: int(p.name.split("-")[-1]))


def model_weights(path: Path) -> list[Path]:
    """The weight files in a model folder: `*.safetensors`, `*.bin`, `*.pt`, `*.gguf`, or a sharded index
    (`*.index.json`), other than the training state a checkpoint holds beside them (`NOT_WEIGHTS`)."""
    return [
        p
        for p in path.iterdir()
        if p.is_file()
        and (p.suffix in WEIGHT_SUFFIXES or p.name.endswith(".index.json"))
        and p.name not in NOT_WEIGHTS
        and not p.name.startswith("rollout_buffer_rank")
    ]


def read_model_config(path: Path, flag: str, name: str = "config.json") -> dict:
    """The folder's `config.json` as a dict, or a ModelNotFoundError saying it is not JSON (where) or not an object."""
    try:
        config = json.loads((path / name).read_bytes())
    except OSError as error:
        raise ModelNotFoundError(f"{flag} {path}: its {name} cannot be read ({error.strerror}).") from None
    except json.JSONDecodeError as error:
        raise ModelNotFoundError(
            _not_json(path, flag, name, f"{error.msg} at line {error.lineno}, column {error.colno}")
        ) from None
    except UnicodeDecodeError:
        raise ModelNotFoundError(_not_json(path, flag, name, "binary bytes, not UTF-8 text")) from None
    if not isinstance(config, dict):
        raise ModelNotFoundError(f"{flag} {path}: its {name} is not a JSON object of settings: save the model again.")
    return config


def _not_json(path: Path, flag: str, name: str, where: str) -> str:
    return (
        f"{flag} {path}: its {name} is not JSON ({where}): the save was cut short or the file was replaced; save "
        "the model again (save_pretrained), or pass another folder."
    )


def check_model_folder(path: Path, flag: str) -> None:
    """Raise a ModelNotFoundError when the existing `path` holds no model (naming its latest checkpoint if any), its
    `config.json` is not JSON, or it holds no weights. Reads files only: no transformers import (`check_model_type`
    asks transformers, later)."""
    if path.is_file():
        raise ModelNotFoundError(f"{flag} {path} is a file, not a model folder (one with a config.json).")
    checkpoints = checkpoints_in(path)
    if any((path / name).is_file() for name in MODEL_FILES):
        for name in MODEL_FILES:
            if (path / name).is_file():
                read_model_config(path, flag, name)
        if model_weights(path):
            return
        instead = (
            f"pass {flag} {checkpoints[-1]} (its latest checkpoint)"
            if checkpoints
            else "save the model again, or pass a folder that holds them"
        )
        raise ModelNotFoundError(
            f"{flag} {path} holds a config but no weights (no *.safetensors, *.bin, *.pt or *.gguf file, nor a "
            f"sharded index): the save did not finish; {instead}."
        )
    if checkpoints:
        raise ModelNotFoundError(
            f"{flag} {path} holds no final model (the run stopped before saving one), only checkpoints: pass "
            f"{flag} {checkpoints[-1]} (its latest), or finish the run with `up-trl train ... "
            "--resume_from_checkpoint true`."
        )
    raise ModelNotFoundError(f"{flag} {path} is a folder but holds no model (no config.json in it).")


def check_model_type(model: str, flag: str) -> None:
    """A local model folder whose `config.json` names a `model_type` the installed transformers does not know (a
    newer architecture, or a misspelling), as `AutoConfig` would refuse it after the imports. A config with
    `auto_map` (its own code, `trust_remote_code`) and a Hub id are left to transformers. Imports transformers."""
    path = Path(model)
    if not (path / "config.json").is_file():
        return  # a Hub id, or a PEFT adapter (its base is checked when it loads)
    config = read_model_config(path, flag)
    if "auto_map" in config:
        return
    import transformers
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    model_type = config.get("model_type")
    if model_type is None:
        if any(name in str(path) for name in CONFIG_MAPPING):  # AutoConfig's fallback: a known name in the path
            return
        raise ModelNotFoundError(
            f"{flag} {path}: its config.json names no model_type, so transformers cannot tell which model it is: "
            "save the model again (save_pretrained writes it), or add its model_type."
        )
    if model_type in CONFIG_MAPPING:
        return
    close = difflib.get_close_matches(str(model_type), list(CONFIG_MAPPING), n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise ModelNotFoundError(
        f"{flag} {path}: its config.json says model_type {model_type!r}, which transformers "
        f"{transformers.__version__} does not know{hint}: upgrade transformers if the model is newer, or fix the "
        "model_type."
    )


def hub_model_available(repo_id: str) -> bool:
    """Whether the Hub model `repo_id` can be loaded here: in the local Hub cache, or the Hub is reachable."""
    from huggingface_hub import constants, try_to_load_from_cache

    from . import hub_reachable

    if isinstance(try_to_load_from_cache(repo_id, "config.json"), str):
        return True
    return not constants.HF_HUB_OFFLINE and not _offline_env() and hub_reachable()


def _offline_env() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").upper() in {"1", "ON", "YES", "TRUE"}


def locate_model(name_or_path: str, flag: str = "--model_name_or_path", near: Iterable[str | os.PathLike] = ()) -> str:
    """`name_or_path` as `from_pretrained` should get it (a user's `~` expanded), or a ModelNotFoundError whose one
    line says what was wrong. An existing folder must hold a model; a string `looks_like_path` calls a path must
    exist ("no such folder", with the closest folders that do); a Hub id must be in the local Hub cache or the Hub
    reachable (checked in at most 3 s)."""
    path = Path(os.path.expanduser(name_or_path))
    if path.exists():
        check_model_folder(path, flag)
        return str(path)
    if looks_like_path(name_or_path, near):
        # A one-word Hub id close to a local folder's name is read as its misspelling: say how to mean the Hub.
        hub = (
            "; for the Hub id, write it with its owner (owner/name)"
            if "/" not in name_or_path and can_be_hub_id(name_or_path)
            else ""
        )
        raise ModelNotFoundError(f"{flag} {name_or_path}: no such folder{_did_you_mean(name_or_path, near)}{hub}.")
    if not hub_model_available(name_or_path):
        raise ModelNotFoundError(
            f"{flag} {name_or_path} is a Hub id, not in the local Hub cache, and the Hub cannot be reached (or "
            "HF_HUB_OFFLINE is set): pass a local model folder, or download it where the Hub is reachable."
        )
    return name_or_path
