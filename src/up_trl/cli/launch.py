"""`up-trl train` through `accelerate launch`, as `trl grpo` launches: what TRL's parser does not take, on the line or
in the recipe, is accelerate's (`--num_processes 8`, `--accelerate_config zero3`, ...), and accelerate's default
config (`accelerate config`) or several GPUs launch too. Only where accelerate would start one plain process does
the job run in this one: the same training, but for the threads (accelerate's process gets `OMP_NUM_THREADS=1` where
it is unset; this one keeps torch's default). The job is checked first (`parse.check_train_args`), with the number of
processes accelerate starts: a usage error, or a flag neither takes, is one line and launches nothing."""

from __future__ import annotations

import json
import os
import subprocess
from contextlib import contextmanager, suppress
from unittest import mock

from ..checks import UsageError
from ..checks.recipe_and_flags import check_flags, launcher_options
from ..extras import missing
from ..run.ending import LAUNCHED, already_launched
from .catalog import CatalogError, accelerate_config_path


def default_config() -> str | None:
    """accelerate's default config (`accelerate config` writes it), which `accelerate launch` reads when given none."""
    import accelerate.commands.launch as accelerate_launch

    return accelerate_launch.default_config_file if os.path.isfile(accelerate_launch.default_config_file) else None


def split(argv: list[str], parser, recipe: dict) -> tuple[list[str], list[str], list[str]]:
    """(accelerate's arguments, the job's, the flags neither takes) of a command line and its recipe, as `trl grpo`
    splits them: what TRL's parser does not take and the launcher does is the launcher's, a recipe's key first (so
    that the line's flag wins). A value after a launcher flag that takes none is refused (accelerate would run it)."""
    options, known, launch_args = launcher_options(), {action.dest for action in parser._actions}, []
    for key, value in recipe.items():  # TRL's parser hands a recipe's keys it does not take on as `--key value`
        if key in known or (takes_value := options.get(f"--{key}")) is None or value is None or value is False:
            continue
        launch_args += [f"--{key}", str(value)] if takes_value else [f"--{key}"]
    groups, rest = [], parser.parse_known_args(argv)[1]  # in order: argparse keeps what it does not take in place
    for arg in rest:
        if arg.startswith("--") or not groups or "=" in groups[-1][0] or len(groups[-1]) == 2:
            groups.append([arg])
        else:
            groups[-1].append(arg)
    unknown, job = [], list(argv)
    for group in groups:
        if (flag := group[0].split("=", 1)[0]) not in options:  # the recipe stays the job's; the rest is refused
            unknown += [] if flag == "--config" else group
            continue
        if not options[flag] and (len(group) == 2 or "=" in group[0]):
            value = group[1] if len(group) == 2 else group[0].split("=", 1)[1]
            raise UsageError(f"{flag} is a flag of `accelerate launch` that takes no value: drop {value!r}.")
        launch_args += group
        at = next((i for i in range(len(job)) if job[i : i + len(group)] == group), len(job))  # the group, first found
        job = job[:at] + job[at + len(group) :]
    return launch_args, job, unknown


def config_file(launch_args: list[str]) -> list[str]:
    """The launcher's arguments with `--accelerate_config NAME` (a packaged config, TRL's, or a file; the last one
    given) as `--config_file PATH`, after a check that DeepSpeed is installed where the config asks for it."""
    args, named = [], None
    for i, arg in enumerate(launch_args):
        if arg.split("=", 1)[0] == "--accelerate_config":
            value = arg.split("=", 1)[1] if "=" in arg else next(iter(launch_args[i + 1 : i + 2]), "--")
            named = None if value.startswith("--") else value
            if named is None:
                raise UsageError("--accelerate_config needs a name (e.g. zero3, multi_gpu) or a file.")
        elif not (i and launch_args[i - 1] == "--accelerate_config"):
            args.append(arg)
    try:
        args = ["--config_file", accelerate_config_path(named), *args] if named else args
    except CatalogError as error:
        raise UsageError(f"--accelerate_config {error}") from None
    path = launcher_config(args)
    deepspeed = "--use_deepspeed" in args  # for a file it cannot read, accelerate says what is wrong with it
    if deepspeed or read_config(path).get("distributed_type", "").upper() == "DEEPSPEED":
        if (message := missing("deepspeed")) is not None:  # else an ImportError in each process
            raise UsageError(f"{f'--accelerate_config {named}' if named else path}: {message}")
    return args


def launcher_config(args: list[str]) -> str | None:
    """The config file accelerate reads: the last `--config_file`, else its default one (not with `--cpu`)."""
    given = [args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--config_file"]
    given += [arg.split("=", 1)[1] for arg in args if arg.startswith("--config_file=")]
    return given[-1] if given else None if "--cpu" in args else default_config()


def read_config(path: str | None) -> dict:
    """An accelerate config's mapping, values as text ({} where it cannot be read: accelerate then says why)."""
    import yaml

    with suppress(OSError, yaml.YAMLError, TypeError), open(path) as f:
        config = yaml.safe_load(f)
        return {str(key): str(value) for key, value in config.items()} if isinstance(config, dict) else {}
    return {}


def visible_gpus() -> int:
    """The accelerators torch sees (accelerate starts one process on each when it has no config)."""
    import torch

    return torch.accelerator.device_count()


def processes(args) -> int:
    """How many processes `accelerate launch` starts for its parsed `args`, by its rules: one plain process unless the
    launch is distributed (a flag's or the config's multi-GPU, DeepSpeed, FSDP, ...; no config and several GPUs);
    then `--num_processes`, else the config's, else one per GPU."""
    path = args.config_file or (None if args.cpu else default_config())
    config, gpus = read_config(path), 0 if args.cpu else visible_gpus()
    n = int(args.num_processes or config.get("num_processes") or (1 if path else max(gpus, 1)))
    flags = ("multi_gpu", "use_deepspeed", "use_fsdp", "use_megatron_lm", "tpu", "mpirun_hostfile")
    distributed = any(getattr(args, name, None) for name in flags) or (path is None and n > 1 and gpus > 1)
    distributed = distributed or config.get("distributed_type", "NO").upper() not in ("NO", "MULTI_CPU")
    return n if distributed else 1


@contextmanager
def world_size(n: int):
    """TRL's config as each of `n` launched processes builds it: it sizes the generation batch by `world_size`, which
    is 1 in the launcher (a shape that divides only over `n` processes would be refused here)."""
    from transformers import TrainingArguments

    with mock.patch.object(TrainingArguments, "world_size", property(lambda self: n)):
        yield


def launch(argv: list[str]) -> int | None:
    """Run `up-trl train <argv>` under `accelerate launch` and return its exit status; None where accelerate would
    start one plain process (no launch flag or key, no default config, one GPU at most): the job runs in this one."""
    from accelerate.commands.launch import launch_command, launch_command_parser

    from . import parse

    if already_launched():
        return None
    recipe_file = parse.recipe_argument(list(argv))[1]
    recipe = parse.read_recipe(recipe_file) if recipe_file is not None else {}
    trainer = parse.trainer_argument(argv, recipe)
    parser = parse.make_parser(trainer)
    launch_args, job, unknown = split(argv, parser, recipe)
    if not launch_args and default_config() is None and visible_gpus() <= 1:
        return None
    check_flags(parser, unknown, trainer, parse.TRAINERS[trainer][1])
    args = launch_command_parser().parse_args([*config_file(launch_args), "-m", "up_trl", "train", *job])
    with world_size(processes(args)):
        parse.check_train_args(job)  # the job's usage errors here, before accelerate starts a process
    with mock.patch.dict(os.environ, {LAUNCHED: json.dumps(argv)}):  # for the processes it starts: the whole line
        try:
            launch_command(args)
        except subprocess.CalledProcessError as error:  # the process said why, in its own line: its exit status
            return error.returncode
    return 0
