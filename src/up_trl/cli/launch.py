"""`up-trl train` through `accelerate launch`, as `trl grpo` launches: what TRL's parser does not take, on the line or
in the recipe, is accelerate's (`--num_processes 8`, `--accelerate_config zero3`, ...), and accelerate's default
config (`accelerate config`) or several GPUs launch too. Only where accelerate would start one plain process does
the job run in this one, which is the same run. The job is checked first (`parse.check_train_args`), with the number
of processes accelerate starts: a usage error, or a flag neither takes, is one line and launches nothing."""

from __future__ import annotations

import os
from contextlib import contextmanager, suppress
from unittest import mock

from ..checks import UsageError
from ..checks.recipe_and_flags import check_flags, launcher_options
from ..extras import missing
from .catalog import CatalogError, accelerate_config_path

LAUNCHED = "UP_TRL_LAUNCHED"  # set for the processes `up-trl train` starts, so that none of them launches again


def already_launched() -> bool:
    """Whether a launcher started this process: ours, `accelerate launch` (a variable only it sets) or torchrun."""
    return any(os.environ.get(name) for name in (LAUNCHED, "ACCELERATE_DYNAMO_USE_FULLGRAPH", "LOCAL_RANK"))


def default_config() -> str | None:
    """accelerate's default config (`accelerate config` writes it), which `accelerate launch` reads when given none."""
    import accelerate.commands.launch as accelerate_launch

    return accelerate_launch.default_config_file if os.path.isfile(accelerate_launch.default_config_file) else None


def split(argv: list[str], parser, recipe: dict) -> tuple[list[str], list[str], list[str]]:
    """(accelerate's arguments, the job's, the flags neither takes) of a command line and its recipe, as `trl grpo`
    splits them: what TRL's parser does not take and the launcher does is the launcher's, a recipe's key first (so
    that the line's flag wins)."""
    options, known, launch_args = launcher_options(), {action.dest for action in parser._actions}, []
    for key, value in recipe.items():  # TRL's parser hands a recipe's keys it does not take on as `--key value`
        if key not in known and (takes_value := options.get(f"--{key}")) is not None and value not in (None, False):
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
        launch_args += group
        at = next((i for i in range(len(job)) if job[i : i + len(group)] == group), len(job))  # the group, first found
        job = job[:at] + job[at + len(group) :]
    return launch_args, job, unknown


def config_file(launch_args: list[str]) -> list[str]:
    """The launcher's arguments with `--accelerate_config NAME` (a packaged config, TRL's, or a file; the last one
    given) as `--config_file PATH`, after a check that DeepSpeed is installed where the config asks for it."""
    import yaml

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
    path = next((args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--config_file"), None) or default_config()
    deepspeed = "--use_deepspeed" in args  # for a file it cannot read, accelerate says what is wrong with it
    with suppress(OSError, yaml.YAMLError, AttributeError, TypeError), open(path) as f:
        deepspeed = deepspeed or str((yaml.safe_load(f) or {}).get("distributed_type", "")).upper() == "DEEPSPEED"
    if deepspeed and (message := missing("deepspeed")) is not None:  # else an ImportError in each process
        raise UsageError(f"{f'--accelerate_config {named}' if named else path}: {message}")
    return args


def processes(args) -> int:
    """How many processes `accelerate launch` starts for its parsed `args`: `--num_processes`, else its config's,
    else one per GPU (accelerate's rule without a config)."""
    import torch
    import yaml

    if args.num_processes:
        return int(args.num_processes)
    if (path := args.config_file or default_config()) is not None:
        with suppress(OSError, yaml.YAMLError, AttributeError, TypeError, ValueError), open(path) as f:
            return max(int((yaml.safe_load(f) or {}).get("num_processes") or 1), 1)
        return 1
    return max(torch.accelerator.device_count(), 1)


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
    if not (launch_args or default_config()):
        import torch

        if torch.accelerator.device_count() <= 1:
            return None
    check_flags(parser, unknown, trainer, parse.TRAINERS[trainer][1])
    args = launch_command_parser().parse_args([*config_file(launch_args), "-m", "up_trl", "train", *job])
    with world_size(processes(args)):
        parse.check_train_args(job)  # the job's usage errors here, before accelerate starts a process
    with mock.patch.dict(os.environ, {LAUNCHED: "1"}):  # for the processes it starts
        launch_command(args)
    return 0
