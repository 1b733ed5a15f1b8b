"""`up-trl train --accelerate_config NAME ...`: launch the job through `accelerate launch`, as
`trl grpo --accelerate_config zero3` does.

    up-trl train --accelerate_config zero3 --num_processes 8 --config up_dapo

is `accelerate launch --config_file <up_trl/accelerate_configs/zero3.yaml> --num_processes 8 -m up_trl train
--config up_dapo`. NAME is a packaged accelerate config (`catalog.accelerate_config_names()`: single_gpu, multi_gpu,
zero2, zero3, multi_node_zero3, zero3_cpu) or a file. The rule for the other flags: a flag `up-trl train` knows is
the job's; a flag it does not know but `accelerate launch` does (`--num_processes`, `--num_machines`,
`--machine_rank`, `--main_process_ip`, `--main_process_port`, `--gpu_ids`, ...) is accelerate's, with its value; any
other flag is an error, as without `--accelerate_config`. The job's flags are checked as without it (TRL's parser,
the value rules, the files they name) before accelerate launches anything: a usage error is one line, exit 2, and
no process is launched.
"""

from __future__ import annotations

from .catalog import CatalogError, accelerate_config_path
from .checks import UsageError


def split_launch_args(
    argv: list[str], job_flags: set[str], launch_flags: dict[str, bool]
) -> tuple[str, list[str], list[str]]:
    """(the accelerate config file, accelerate's flags, the job's argv) from `up-trl train`'s argv; `launch_flags`:
    each option of `accelerate launch` and whether it takes a value (`accelerate_launch_flags`).

    >>> split_launch_args(["--accelerate_config", "zero3", "--num_processes", "8", "--multi_gpu", "--seed", "1"],
    ...                   {"--seed"}, {"--num_processes": True, "--multi_gpu": False})[1:]
    (['--num_processes', '8', '--multi_gpu'], ['--seed', '1'])
    """
    config, launch, job = None, [], []
    i = 0
    while i < len(argv):
        arg = argv[i]
        flag = arg.split("=", 1)[0]
        if flag == "--accelerate_config":
            value = arg.split("=", 1)[1] if "=" in arg else (argv[i + 1] if i + 1 < len(argv) else None)
            if value is None or value.startswith("--"):
                raise UsageError("--accelerate_config needs a name (e.g. zero3, multi_gpu) or a file.")
            try:
                config = accelerate_config_path(value)
            except CatalogError as error:
                raise UsageError(f"--accelerate_config {error}") from None
            i += 1 if "=" in arg else 2
            continue
        if flag.startswith("--") and flag not in job_flags and flag in launch_flags:
            takes_value = launch_flags[flag]
            launch.append(arg)
            if takes_value and "=" not in arg and i + 1 < len(argv):
                launch.append(argv[i + 1])
                i += 1
        else:
            job.append(arg)
        i += 1
    return config, launch, job


def launch(argv: list[str]) -> int:
    """Run `up-trl train <argv>` (which holds `--accelerate_config`) under `accelerate launch`."""
    check_launch_extras(argv)
    from .parse import check_train_args, check_trainer, recipe_argument, trainer_argument

    resolved, recipe = recipe_argument(list(argv))
    trainer = trainer_argument(resolved, recipe)
    check_trainer(trainer)
    from accelerate.commands.launch import launch_command, launch_command_parser

    from .parse import make_parser

    launcher = launch_command_parser()
    job_flags = {option for option in make_parser(trainer)._option_string_actions if option.startswith("--")}
    config, launch_args, job = split_launch_args(argv, job_flags | {"--config"}, accelerate_launch_flags(launcher))
    check_train_args(job)  # the job's usage errors here, before accelerate starts a process
    launch_command(launcher.parse_args(["--config_file", config, *launch_args, "-m", "up_trl", "train", *job]))
    return 0


def accelerate_launch_flags(launcher) -> dict[str, bool]:
    """{each option of `accelerate launch` (its parser, `launcher`): whether it takes a value}."""
    return {option: action.nargs != 0 for action in launcher._actions for option in action.option_strings}


def check_launch_extras(argv: list[str]) -> None:
    """An accelerate config that asks for DeepSpeed (`distributed_type: DEEPSPEED`) while it is not installed: the
    extra to install, in one line, before accelerate is imported."""
    import yaml

    from ..extras import missing

    names = [
        arg.split("=", 1)[1] if "=" in arg else (argv[i + 1] if i + 1 < len(argv) else "")
        for i, arg in enumerate(argv)
        if arg.split("=", 1)[0] == "--accelerate_config"
    ]
    for name in names:
        try:
            with open(accelerate_config_path(name)) as f:
                config = yaml.safe_load(f) or {}
        except (CatalogError, OSError, yaml.YAMLError):
            continue  # said by split_launch_args, or by accelerate itself
        message = missing("deepspeed") if str(config.get("distributed_type", "")).upper() == "DEEPSPEED" else None
        if message is not None:
            raise UsageError(f"--accelerate_config {name}: {message}")
