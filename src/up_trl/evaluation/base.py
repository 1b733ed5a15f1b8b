"""`up-trl eval`'s baseline: the model a run was trained from, scored beside it on the same problems and settings,
once (cached in `models.default_cache_dir()/eval-base/`). A run's own base that cannot load is left out with one line
saying why; one named that cannot load is an error (exit 2), like `--model`."""

from __future__ import annotations

import hashlib
import json
import os
from contextlib import suppress
from dataclasses import fields
from pathlib import Path

from .evaluate import evaluate

# The eval options no score depends on (where the report goes, whether samples are kept); every other one does.
NOT_SCORED = ("model", "output_dir", "save_samples", "base_model")


def recorded_base_model(model: str) -> str | None:
    """The `base_model` of the run (record, else card) in folder `model` or a checkpoint's; None for no run folder."""
    import yaml
    from huggingface_hub.repocard import metadata_load

    from ..run.checkpoints import read_json
    from ..run.folder import RUN_RECORD

    folders = [Path(model), Path(model).parent] if Path(model).name.startswith("checkpoint-") else [Path(model)]
    record = next(filter(None, (read_json(folder / RUN_RECORD) for folder in folders)), None)
    if record and record.get("base_model"):
        return str(record["base_model"])
    for folder in folders:
        with suppress(OSError, ValueError, yaml.YAMLError):  # a card missing, not text, or no YAML mapping: no base
            if (front := metadata_load(folder / "README.md") or {}).get("base_model"):
                return str(front["base_model"])
    return None


def loadable_base(base: str) -> tuple[str | None, str]:
    """(what `from_pretrained` should get for `base`, or None when it cannot load here; why not, in words)."""
    from ..models.source import ModelNotFoundError, check_model
    from ..run.card import SMOLLM2_HUB_ID

    path = Path(os.path.expanduser(base))
    if not path.exists() and (base == SMOLLM2_HUB_ID or path.name.startswith("SmolLM2-135M-Instruct-")):
        from ..models.offline import OfflineModelMissingError, smollm2_path  # the offline default's base

        with suppress(OfflineModelMissingError):
            return smollm2_path(), ""
    if not path.exists() and (path.is_absolute() or base.startswith((".", "~"))):
        return None, f"its folder {base} no longer exists"
    try:
        return check_model(base, "--base_model"), ""
    except ModelNotFoundError as error:
        return None, str(error)


def model_identity(model: str) -> dict:
    """A model in the cache key: a folder by its path and its files' sizes and times, a Hub id by itself."""
    path = Path(model)
    if not path.is_dir():
        return {"hub_id": model}
    files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in (".json", ".safetensors", ".bin"))
    return {"path": str(path.resolve()), "files": [[p.name, p.stat().st_size, p.stat().st_mtime_ns] for p in files]}


def score_base(base: str, args, sets: dict | None = None) -> tuple[dict, bool]:
    """(the base model's report, whether it came from the cache): `evaluate(base, args.benchmarks, args, sets)` once,
    cached under a key of the model and every setting of `args` (an `EvalArguments`) a score depends on."""
    from .._version import __version__
    from ..models.offline import default_cache_dir

    key = {"model": model_identity(base), "up-trl": __version__}
    key |= {f.name: getattr(args, f.name) for f in fields(args) if f.name not in NOT_SCORED}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:20]
    path = default_cache_dir() / "eval-base" / f"{digest}.json"
    with suppress(OSError, ValueError):
        cached = json.loads(path.read_text())
        if cached.get("key") == json.loads(json.dumps(key, default=str)):
            return cached["report"], True
    report = evaluate(base, args.benchmarks, args, sets)
    for row in report["benchmarks"].values():
        row.pop("samples", None)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps({"key": key, "report": report}, indent=2, default=str))
    os.replace(tmp, path)
    return report, False


def choose_base(args) -> tuple[str | None, str]:
    """(the base model to score beside `args.model`, or None; a note to print saying which, or why none)."""
    wanted = recorded_base_model(args.model) if args.base_model == "auto" else args.base_model
    if wanted is None or args.base_model == "none":
        return None, ""  # none asked for, or `auto` of no run folder: nothing to compare with
    base, why = loadable_base(wanted)
    if base is None and args.base_model != "auto":  # asked for by name: bad input, like a missing --model
        from ..models.source import check_model

        base = check_model(wanted, "--base_model")  # raises its one-line ModelNotFoundError
    if base is None:
        return None, f"base model: not scored ({why}); showing {args.model} only"
    same = Path(base).exists() and Path(args.model).exists() and Path(base).resolve() == Path(args.model).resolve()
    if same or base == args.model:
        return None, ""
    return base, f"base model: {base} (what {args.model} was trained from), scored beside it"
