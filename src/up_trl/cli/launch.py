"""`up-trl train --accelerate_config NAME ...` (a packaged accelerate config or a file) through `accelerate launch`,
split as `trl grpo` splits it: what TRL's parser does not take is accelerate's (`--num_processes 8`, ...). The job is
checked first (`parse.check_train_args`): a usage error, or a flag neither takes, is one line and launches nothing."""

from __future__ import annotations

from contextlib import suppress

from ..checks import UsageError
from ..checks.recipe_and_flags import check_flags
from ..extras import missing
from .catalog import CatalogError, accelerate_config_path


def launch(argv: list[str]) -> int:
    """Run `up-trl train <argv>` (which holds `--accelerate_config`) under `accelerate launch`."""
    import yaml
    from accelerate.commands.launch import launch_command, launch_command_parser

    from . import parse

    recipe_file = parse.recipe_argument(list(argv))[1]
    trainer = parse.trainer_argument(argv, parse.read_recipe(recipe_file) if recipe_file is not None else {})
    parser, launcher = parse.make_parser(trainer), launch_command_parser()
    launch_flags = {option for action in launcher._actions for option in action.option_strings}
    config, launch_args, unknown, job = None, [], [], list(argv)
    groups, rest = [], parser.parse_known_args(argv)[1]  # in order: argparse keeps what it does not take in place
    for arg in rest:
        if arg.startswith("--") or not groups or "=" in groups[-1][0] or len(groups[-1]) == 2:
            groups.append([arg])
        else:
            groups[-1].append(arg)
    for group in groups:
        if (flag := group[0].split("=", 1)[0]) == "--accelerate_config":
            value = group[0].split("=", 1)[1] if "=" in group[0] else (group[1] if len(group) == 2 else None)
            if value is None:
                raise UsageError("--accelerate_config needs a name (e.g. zero3, multi_gpu) or a file.")
            try:
                config = accelerate_config_path(value)
            except CatalogError as error:
                raise UsageError(f"--accelerate_config {error}") from None
            deepspeed = False  # for a file it cannot read, accelerate says what is wrong with it
            with suppress(OSError, yaml.YAMLError, AttributeError), open(config) as f:
                deepspeed = str((yaml.safe_load(f) or {}).get("distributed_type", "")).upper() == "DEEPSPEED"
            if deepspeed and (message := missing("deepspeed")) is not None:  # else an ImportError in each process
                raise UsageError(f"--accelerate_config {value}: {message}")
        elif flag in launch_flags:
            launch_args += group
        else:  # the recipe stays the job's; anything else is refused below, by name
            unknown += [] if flag == "--config" else group
            continue
        at = next((i for i in range(len(job)) if job[i : i + len(group)] == group), len(job))  # the group, first found
        job = job[:at] + job[at + len(group) :]
    check_flags(parser, unknown, trainer, parse.TRAINERS[trainer][1])
    parse.check_train_args(job)  # the job's usage errors here, before accelerate starts a process
    launch_command(launcher.parse_args(["--config_file", config, *launch_args, "-m", "up_trl", "train", *job]))
    return 0
