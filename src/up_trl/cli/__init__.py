"""`up-trl train` (and `python -m up_trl train`): the main job, parsed like `trl grpo`.

up-trl train                                            # offline default (the recipe quickstart): SmolLM2, CPU
up-trl train --config up_dapo                           # a packaged recipe by name (or a file); flags override it
up-trl train --accelerate_config zero3 --num_processes 8 --config up_dapo   # through accelerate launch
"""

from __future__ import annotations

import os
import sys
import traceback

from ..checks import UsageError
from ..quiet import silence_unactionable_warnings
from ..run.ending import TrainingCrashed, exit_launched_process, launched_with_others
from .catalog import describe_recipe, recipe_names
from .help_text import USAGE, train_help
from .launch import launch
from .parse import OFFLINE_DEFAULT, TRAINERS, check_train_args, make_parser, parse_train_args, trainer_argument

__all__ = ["OFFLINE_DEFAULT", "TRAINERS", "UsageError", "check_train_args", "main", "make_parser", "parse_train_args"]
__all__ += ["train", "train_help"]


def train(argv: list[str] | None = None):
    """Run the main job on a command line; returns the trainer (bad input: a UsageError before any model loads)."""
    from ..run.job import run_job

    return run_job(check_train_args(list(sys.argv[1:] if argv is None else argv)))


def print_recipes() -> None:
    """`up-trl recipes`: each packaged recipe, one line saying what it trains."""
    width = max(map(len, recipe_names()))
    for name in recipe_names():
        print(f"{name:<{width}}  {describe_recipe(name)}")
    print("\nup-trl train --config NAME runs one (flags on the line override it); a path to your own YAML works too.")


DEBUG_ENV = "UP_TRL_DEBUG"  # set to 1: an unexpected error is raised with its traceback, not summed up in one line


def unexpected_error(command: str, error: Exception) -> int:
    """An exception no check caught: one line naming it, exit status 1 (UP_TRL_DEBUG=1: raised, traceback and all)."""
    if os.environ.get(DEBUG_ENV, "").strip().lower() in ("1", "true", "yes"):
        raise error
    message = " ".join(str(error).split())
    message = message if len(message) <= 500 else message[:500] + " ..."
    message = type(error).__qualname__ + (f": {message}" if message else "")
    print(f"up-trl {command}: error: {message} (set {DEBUG_ENV}=1 to see the traceback)", file=sys.stderr, flush=True)
    return 1


def train_command(rest: list[str]) -> int:
    """`up-trl train ...` (the arguments after `train`): the exit code, with errors as one line."""
    try:
        if "--help-all" in rest:
            make_parser(trainer_argument(rest, {})).print_help()  # every option of TRL's parser
            return 0
        if any(arg.split("=", 1)[0] == "--accelerate_config" for arg in rest):
            return launch(rest)
        train(rest)  # every usage error before any model or data loads (`check_train_args`)
    except UsageError as error:  # one line, like argparse: the rest of a traceback would not help
        print(f"up-trl train: error: {error}", file=sys.stderr)
        return 2
    except TrainingCrashed as crash:  # the cause's traceback (a broken reward shows where), then what was saved
        if crash.show_cause:
            traceback.print_exception(crash.__cause__)
        print(f"up-trl train: error: {crash}", file=sys.stderr, flush=True)
        return 1
    except Exception as error:  # what still escapes a library: one line, the traceback on request
        return unexpected_error("train", error)
    return 0


def main(argv: list[str] | None = None) -> int:
    """`up-trl COMMAND ...`: its exit status (0 done, 1 a crash, 2 a usage error)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    command, rest = argv[0], argv[1:]
    if command == "train" and ("-h" in rest or "--help" in rest):  # before anything imports torch: at once
        print(train_help())
        return 0
    if command == "train":
        code = train_command(rest)
        if launched_with_others():  # one of the processes `accelerate launch` started: end cleanly, with its code
            exit_launched_process(code)
        return code
    if command == "eval":
        from .eval_command import main as eval_main

        silence_unactionable_warnings(deepspeed=False)  # before the offline model's first conversion, too
        try:
            return eval_main(rest)
        except Exception as error:
            return unexpected_error("eval", error)
    if command == "recipes":
        print_recipes()
        return 0
    print(f"up-trl: unknown command {command!r}.\n\n{USAGE}", file=sys.stderr)
    return 2
