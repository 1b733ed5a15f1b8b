"""`up-trl train` (and `python -m up_trl train`): the main job, parsed like `trl grpo`.

up-trl train                                            # offline default (the recipe quickstart): SmolLM2, CPU
up-trl train --config up_dapo                           # a packaged recipe by name (or a file); flags override it
up-trl train --trainer rloo                             # UPRLOOTrainer (also: async_grpo); a recipe can say `trainer:`
up-trl train --accelerate_config zero3 --num_processes 8 --config up_dapo   # through accelerate launch
up-trl recipes                                          # the packaged recipes, one line each

The package: this module (the commands), `help_text` (what `--help` prints, at once), `parse` (flags and recipes,
TRL's parser), `rules` (the value ranges TRL's config does not check), `checks` (every input checked before any
model loads), `launch` (through `accelerate launch`), `catalog` (recipes and accelerate configs found by name) and
`eval_command` (`up-trl eval`'s options, defaults and checks).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from .checks import RecipeNotFoundError, UsageError, closest_names, flags_given  # noqa: F401 (this module's API)
from .help_text import MAIN_OPTIONS, USAGE, train_help  # noqa: F401 (importable from here as before)
from .parse import (  # noqa: F401 (the parsing API, importable from here as before)
    OFFLINE_DEFAULT,
    TRAINERS,
    USAGE_TRAIN,
    check_trainer,
    make_parser,
    model_config_class,
    parse_train_args,
    precheck_train_args,
    recipe_argument,
    trainer_argument,
    trainer_classes,
)


def print_help_all(trainer: str = "grpo") -> None:
    """`up-trl train --help-all`: every option of TRL's parser over the trainer's config."""
    make_parser(trainer).print_help()


class TrainingCrashed(RuntimeError):
    """`trainer.train()` raised. The message is the one line saying what was saved where and how to resume; the
    original exception is its `__cause__`. `main` prints both and exits 1; a failed save (`run.ending.failed_save`:
    a full disk, a folder made read-only or removed) only the line, which says all there is."""

    def __init__(self, message: str, output_dir: str | None = None):
        super().__init__(message)
        self.output_dir = output_dir  # where a failed save would have written (`run.ending.failed_save`)

    @property
    def show_cause(self) -> bool:
        from ..run.ending import failed_save

        return self.__cause__ is not None and not failed_save(self.__cause__, self.output_dir)


def silence_unactionable_warnings(deepspeed: bool) -> None:
    """Hide, by their exact text, two messages every CPU run printed that a user cannot act on:

    - DeepSpeed's `Setting accelerator to CPU ...`, logged when accelerate imports deepspeed only to probe for its
      engine class (`accelerate.utils.other.extract_model_from_parallel`); kept when DeepSpeed was asked for;
    - transformers' FutureWarnings for the `gradient_checkpointing` names that TRL 1.16 itself reads in
      `trl/models/utils.py` (`unwrap_model_for_generation`), printed into the progress bar at every generation
      (`up_trl.quiet`; the UP trainers themselves filter nothing).
    """
    import logging

    from ..quiet import ignore_trl_deprecated_calls

    ignore_trl_deprecated_calls()
    logger = logging.getLogger("DeepSpeed")
    if not deepspeed and not any(isinstance(f, _DropMessage) for f in logger.filters):  # once per process
        logger.addFilter(_DropMessage("Setting accelerator to CPU."))


class _DropMessage:
    """A logging filter that drops the records whose message starts with `text` (and only those)."""

    def __init__(self, text: str):
        self.text = text

    def filter(self, record) -> bool:
        return not str(record.msg).startswith(self.text)


def train(argv: list[str] | None = None):
    """Run the main job; returns the trainer.

    Bad input is a UsageError before any model loads (`cli.checks`). An exception in `trainer.train()` saves an
    emergency checkpoint when it can (`run.ending.save_after_crash`) and is raised again as a TrainingCrashed.
    """
    from accelerate import PartialState
    from transformers.trainer_callback import ProgressCallback
    from trl import get_peft_config

    from ..data import DataError, HubUnavailableError, load_math_dataset, system_prompt_from_flag
    from ..data.models import OfflineModelMissingError, smollm2_path
    from ..file_modes import usual_file_modes
    from ..rewards import get_reward_funcs
    from ..run.callbacks import (
        FirstRolloutProgressCallback,
        GracefulStopCallback,
        JsonlMetricsCallback,
        RunRecordCallback,
        SteadyEtaProgressCallback,
        StepEndRngCallback,
    )
    from ..run.checkpoint_complete import MarkCompleteCallback, resume_differences, run_settings
    from ..run.ending import after_crash, leave_process_group, stop_reason
    from ..run.folder import (
        describe_run_files,
        refresh_run_record,
        remove_run_files,
        resume_command,
        write_run_record,
    )
    from ..run.parts import attach_parts, with_parts
    from ..run.plots import plot_metrics
    from .checks import check_dataset_size, check_inputs

    given = list(sys.argv[1:] if argv is None else argv)  # as typed: the resume command repeats it
    argv, recipe_file = recipe_argument(given)
    recipe = recipe_label(given, recipe_file)
    script_args, training_args, model_args = parse_train_args(argv)
    _, trainer_cls = trainer_classes(script_args.trainer)
    is_async = script_args.trainer == "async_grpo"
    checked = check_inputs(script_args, training_args, model_args, recipe=recipe_file)
    from ..versions import warn_if_untested_versions

    warn_if_untested_versions(main_process=int(os.environ.get("RANK", "0")) == 0)  # a trl past the pin, ...
    # Before any model work, the first run's conversion of the offline model included (it imports deepspeed too).
    silence_unactionable_warnings(bool(training_args.deepspeed) or _env_true("ACCELERATE_USE_DEEPSPEED"))
    try:  # the output folder is this run's until it ends (`run_lock`)
        # Cheap checks and loads first: a wrong reward or dataset name fails before any model is touched.
        reward_options = {"max_completion_length": training_args.max_completion_length}  # DAPO's soft overlong
        try:
            reward_funcs = get_reward_funcs(
                script_args.reward_funcs, **(reward_options if "soft_overlong" in script_args.reward_funcs else {})
            )
            if script_args.reward_model_name_or_path:  # first, as `trl grpo` puts it: TRL loads it as a scorer
                reward_funcs.insert(0, script_args.reward_model_name_or_path)
        except ValueError as error:  # a dotted path that does not import, a factory without its options
            raise UsageError(f"--reward_funcs: {error}") from None
        system_prompt = system_prompt_from_flag(script_args.system_prompt)
        state = PartialState()
        for note in checked["notes"]:  # a stale lock taken over, incomplete checkpoints a resume skipped
            state.print(f"up-trl: {note}", flush=True)
        out = training_args.output_dir
        with state.main_process_first():
            options = dict(
                config=script_args.dataset_config,
                seed=training_args.seed,
                system_prompt=system_prompt,
                prompt_system_prompt=system_prompt if script_args.system_prompt is not None else None,
                column_mapping=checked["column_mapping"],
                ops=script_args.arithmetic_ops,
                few_shot=script_args.arithmetic_few_shot,
            )
            try:
                dataset = load_math_dataset(
                    script_args.dataset_name,
                    script_args.dataset_train_split,
                    limit=script_args.dataset_limit,
                    shuffle=script_args.dataset_limit is not None,  # a limit takes a seeded sample, not the first rows
                    **options,
                )
                eval_dataset = None  # as `trl grpo`: the test split, evaluated when eval_strategy is not "no"
                if training_args.eval_strategy != "no":
                    if is_async:  # TRL's AsyncGRPOTrainer takes no eval_dataset
                        raise UsageError("--eval_strategy: --trainer async_grpo does not evaluate; set it to no.")
                    test_split = script_args.dataset_test_split
                    eval_dataset = load_math_dataset(script_args.dataset_name, test_split, **options)
            except (DataError, HubUnavailableError) as error:
                raise UsageError(f"--dataset_name {script_args.dataset_name}: {error}") from None
            check_dataset_size(len(dataset), training_args)
            try:
                model = checked["model"] or smollm2_path()
            except OfflineModelMissingError as error:
                raise UsageError(str(error)) from None
        if is_async:  # its GPU and vLLM server, before the previous run is removed or the model loads
            check_async_grpo(training_args, model)
        if "save_steps" in flags_given(argv) and "save_strategy" not in flags_given(argv):
            every = f"a checkpoint every {training_args.save_steps:g} steps"
            state.print(f"up-trl: {every} (--save_steps sets save_strategy steps)")
        if checked["remove"]:
            if state.is_main_process:
                remove_run_files(checked["remove"])
            state.print(
                f"up-trl: --overwrite_output_dir: removed the previous run in {out} "
                f"({describe_run_files(checked['remove'])})"
            )
            state.wait_for_everyone()

        model_init_kwargs = {"revision": model_args.model_revision}
        if not is_async:  # the async trainer loads with its own tree attention and AsyncGRPOConfig.dtype
            model_init_kwargs |= {"attn_implementation": model_args.attn_implementation, "dtype": model_args.dtype}
        training_args.model_init_kwargs = {**model_init_kwargs, **(training_args.model_init_kwargs or {})}
        if checked["resume"] is not None:  # settings changed since the checkpoint: said, or refused (its batch shape)
            deepspeed = bool(training_args.deepspeed) or _env_true("ACCELERATE_USE_DEEPSPEED")
            changes, refusal = resume_differences(checked["resume"], run_settings(training_args), deepspeed)
            if refusal is not None:
                raise UsageError(refusal)
            for line in changes:
                state.print(f"up-trl: {line}")
        metrics_path = Path(out) / "metrics.jsonl"
        state.print(f"up-trl: loading {model} ...", flush=True)
        graceful = GracefulStopCallback()
        record = {"base_model": model, "dataset_name": script_args.dataset_name, "trainer": trainer_cls.__name__}
        callbacks = [
            RunRecordCallback(record),  # what the run writes in `out`, claimed before it writes (`run.folder`)
            JsonlMetricsCallback(metrics_path),
            graceful,
            FirstRolloutProgressCallback(),
            StepEndRngCallback(),
        ]
        callbacks.append(MarkCompleteCallback())  # each checkpoint marked complete last (`checkpoint_complete`)
        build = trainer_cls
        if script_args.share_prompt_prefix:  # the opt-in CPU saving: the same trainer, each prompt computed once
            from ..speedups.trainers import SHARED_PROMPT_TRAINERS

            build = SHARED_PROMPT_TRAINERS[trainer_cls]
        trainer = with_parts(build)(  # every opt-in part (`run.parts`): the run's card, the rollout batch, resume
            model=model,
            reward_funcs=reward_funcs,
            args=training_args,
            train_dataset=dataset,
            **({} if eval_dataset is None else {"eval_dataset": eval_dataset}),  # async_grpo takes none
            peft_config=get_peft_config(model_args),
            callbacks=callbacks,
        )
        attach_parts(trainer, script_args.skip_nonfinite_steps, script_args.max_consecutive_nonfinite_steps)
        if trainer.pop_callback(ProgressCallback) is not None:  # the same bar, with an ETA from whole rollout cycles
            trainer.add_callback(SteadyEtaProgressCallback())
        trainer.up_recipe, trainer.up_dataset_name = recipe, script_args.dataset_name  # both named in the model card
        trainer.up_arithmetic_ops = (
            script_args.arithmetic_ops
        )  # the card names the problems when they are `arithmetic`
        trainer.up_arithmetic_few_shot = script_args.arithmetic_few_shot
        state.print(
            f"up-trl: {trainer_cls.__name__} up_mode={trainer.up_mode} "
            + (f"loss_type={training_args.loss_type} " if hasattr(training_args, "loss_type") else "")
            + f"model={model} "
            f"dataset={script_args.dataset_name} ({len(dataset)} problems) -> {out}"
        )

        start = time.perf_counter()
        try:
            trainer.train(resume_from_checkpoint=checked["resume"])
        except Exception as error:
            raise TrainingCrashed(after_crash(trainer, error, given, record), out) from error
        finally:
            graceful.restore()
        seconds = time.perf_counter() - start
        try:
            saved_since = time.time() - 1.0  # file systems keep mtimes coarser than time.time()
            trainer.save_model(out)
            if trainer.args.should_save:  # the weights the usual file mode (transformers writes them 0600)
                usual_file_modes(out, since=saved_since)
        except Exception as error:  # a full disk, a folder made read-only or removed: one line (`run.ending`)
            raise TrainingCrashed(after_crash(trainer, error, given, record, final=True), out) from error

        step, max_steps = trainer.state.global_step, trainer.state.max_steps
        reason = stop_reason(trainer.callback_handler.callbacks) if step < max_steps else None
        if reason is not None:  # the model card says so too
            trainer.up_stop = {"step": step, "max_steps": max_steps, "reason": reason, "resume": resume_command(given)}
        if trainer.is_world_process_zero():
            rewards = [h["reward"] for h in trainer.state.log_history if h.get("reward") is not None]
            summary = (
                f"reward {rewards[0]:.3f} -> {rewards[-1]:.3f} (first -> last step)" if rewards else "no reward logged"
            )
            if script_args.plot and metrics_path.exists():  # before the card, which shows the plot when it exists
                png = plot_metrics(
                    metrics_path,
                    Path(out) / "metrics.png",
                    title=f"up_mode={trainer.up_mode}, {script_args.dataset_name}",
                )
                summary += f"; plot {png}"
        trainer.create_model_card(dataset_name=script_args.dataset_name)
        if trainer.is_world_process_zero():  # last: it lists every file the run wrote, the card included
            status = "finished" if reason is None else "interrupted"
            write_run_record(out, **record, status=status, global_step=step, max_steps=max_steps)
            files = f"model, metrics.jsonl, model card (README.md) in {out}"
            if reason is None:
                print(f"up-trl: done in {seconds / 60:.1f} min, {step} steps: {summary}; {files}", flush=True)
            else:
                resume = trainer.up_stop["resume"]
                print(
                    f"up-trl: interrupted ({reason}) at step {step} of {max_steps} after {seconds / 60:.1f} min: "
                    f"{summary}; checkpoint-{step}, {files}. Resume with: {resume}",
                    flush=True,
                )
        if training_args.push_to_hub:
            trainer.push_to_hub(dataset_name=script_args.dataset_name)
            if trainer.is_world_process_zero():  # the push rewrote the card: the record's content hashes follow it
                refresh_run_record(out)
        leave_process_group(state)  # last, on every process: none exits while another is mid-collective
        return trainer
    finally:
        checked["lock"].release()


def recipe_label(argv: list[str], recipe_file: str | None) -> str:
    """How the model card names the recipe: a packaged one by its name, a file by its path, none as the default.

    >>> recipe_label(["--config", "up_dapo"], "/site-packages/up_trl/recipes/up_dapo.yaml")
    'up_dapo (packaged recipe)'
    >>> recipe_label([], None)
    'quickstart (packaged recipe, the offline default)'
    >>> recipe_label(["--model_name_or_path", "Qwen/Qwen3-0.6B"], None)
    "none (TRL's defaults)"
    """
    from .catalog import OFFLINE_DEFAULT_RECIPE, recipe_names

    if recipe_file is None and "model_name_or_path" in flags_given(argv):
        return "none (TRL's defaults)"
    if recipe_file is None:
        return f"{OFFLINE_DEFAULT_RECIPE} (packaged recipe, the offline default)"
    typed = [
        arg.split("=", 1)[1] if arg.startswith("--config=") else argv[i + 1]
        for i, arg in enumerate(argv)
        if arg.startswith("--config=") or arg == "--config"
    ][0]
    name = typed.removesuffix(".yaml")
    return f"{name} (packaged recipe)" if not os.path.exists(typed) and name in recipe_names() else typed


def print_recipes() -> None:
    """`up-trl recipes`: each packaged recipe, one line saying what it trains."""
    from .catalog import describe_recipe, recipe_names

    names = recipe_names()
    width = max(map(len, names))
    for name in names:
        print(f"{name:<{width}}  {describe_recipe(name)}")
    print("\nup-trl train --config NAME runs one (flags on the line override it); a path to your own YAML works too.")


def _env_true(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes")


def check_async_grpo(args, model: str) -> None:
    """`--trainer async_grpo` needs what TRL's asynchronous GRPO needs: a CUDA GPU (its packed forward runs a
    flash-attention-3 kernel) and a vLLM server (`trl vllm-serve`) at `vllm_server_base_url`, waited for as TRL waits
    (`vllm_server_timeout`). Either missing is a UsageError, one line, before the model loads."""
    import torch

    if args.use_cpu or not torch.cuda.is_available():
        raise UsageError(
            "--trainer async_grpo needs a CUDA GPU and a vLLM server (`trl vllm-serve --model MODEL`): TRL's "
            "asynchronous GRPO samples only through vLLM and packs rows with a flash-attention-3 kernel. On a CPU, "
            "train with --trainer grpo or rloo."
        )
    import urllib.request

    url, deadline = args.vllm_server_base_url.rstrip("/") + "/health", time.monotonic() + args.vllm_server_timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                if answer.status == 200:
                    return
        except (OSError, ValueError):
            pass
        if time.monotonic() >= deadline:
            raise UsageError(
                f"--trainer async_grpo: no vLLM server answered at {url} within vllm_server_timeout "
                f"{args.vllm_server_timeout:g} s: start one with `trl vllm-serve --model {model}`, or point "
                "--vllm_server_base_url at it."
            )
        time.sleep(1)


DEBUG_ENV = "UP_TRL_DEBUG"  # set to 1: an unexpected error is raised with its traceback, not summed up in one line


def unexpected_error(command: str, error: Exception) -> int:
    """An exception no check caught (a library's own, mid-run): one line naming its type and message and how to see
    the traceback; exit status 1. With UP_TRL_DEBUG=1 it is raised again, traceback and all."""
    if _env_true(DEBUG_ENV):
        raise error
    message = " ".join(str(error).split())
    message = message if len(message) <= 500 else message[:500] + " ..."
    kind = type(error).__qualname__
    print(
        f"up-trl {command}: error: {kind}{': ' + message if message else ''} (set {DEBUG_ENV}=1 to see the traceback)",
        file=sys.stderr,
        flush=True,
    )
    return 1


def train_command(rest: list[str]) -> int:
    """`up-trl train ...` (the arguments after `train`): the exit code, with errors as one line."""
    if "-h" in rest or "--help" in rest:
        print(train_help())
        return 0
    try:
        if "--help-all" in rest:
            print_help_all(trainer_argument(rest, None))
            return 0
        if any(arg.split("=", 1)[0] == "--accelerate_config" for arg in rest):
            from .launch import launch

            return launch(rest)
        precheck_train_args(rest)  # every usage error before any model or data loads
        train(rest)
    except UsageError as error:  # one line, like argparse: the rest of a traceback would not help
        print(f"up-trl train: error: {error}", file=sys.stderr)
        return 2
    except TrainingCrashed as crash:  # the cause's traceback (a broken reward shows where), then what was saved
        import traceback

        if crash.show_cause:
            traceback.print_exception(crash.__cause__)
        print(f"up-trl train: error: {crash}", file=sys.stderr, flush=True)
        return 1
    except Exception as error:  # what still escapes a library: one line, the traceback on request
        return unexpected_error("train", error)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    command, rest = argv[0], argv[1:]
    if command == "train":
        from ..run.ending import exit_launched_process, launched_with_others

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


if __name__ == "__main__":
    sys.exit(main())
