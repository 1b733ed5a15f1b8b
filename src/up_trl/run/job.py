"""The main job `up-trl train` runs: its checks before any model loads (each a one-line `UsageError`: the output
folder, and under its lock what a previous run left there; the data size; an async GRPO run's GPU and vLLM server),
then the data and rewards loaded before the model, every opt-in part attached, training, the final save, record,
plot and card. How it ends (early, crashed, a launched process's exit): `run.ending`. Rules and tests:
docs/reliability.md."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import UsageError, is_a_file
from .ending import TrainingCrashed, after_crash, stop_reason


@dataclass
class TrainJob:
    """What `up-trl train` was asked: TRL's configs, the model (None: the offline default), trainer, recipe, argv."""

    script_args: object
    training_args: object
    model_args: object
    model: str | None
    trainer_cls: type
    recipe_file: str | None
    recipe: str
    given: list[str]
    flags: set[str]
    column_mapping: dict[str, str] | None = None
    mixture: object = None  # TRL's DatasetMixtureConfig (a recipe's `datasets:`), loaded by TRL's `get_dataset`


def check_output_folder(output_dir: str | os.PathLike, flag: str = "--output_dir") -> None:
    """Refuse, creating nothing, an output folder that cannot be made or written (a file, a long name, read-only)."""
    folder = Path(os.path.expanduser(str(output_dir)))
    if os.path.isfile(folder):  # os.path's checks take any OSError (a name too long, say) as nothing there
        raise UsageError(is_a_file(output_dir, flag))
    existing = folder.absolute()
    while not os.path.exists(existing) and existing != existing.parent:
        existing = existing.parent
    if not os.path.isdir(existing):
        raise UsageError(
            f"{flag} {output_dir} cannot be created: {existing} is a file, not a folder; name a folder elsewhere."
        )
    name_max = None
    with contextlib.suppress(OSError, ValueError, AttributeError):  # not POSIX, or not said
        name_max = os.pathconf(existing, "PC_NAME_MAX")
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


def prepare_run(script_args, training_args, model: str | None, recipe: str | None = None):
    """Lock the output folder, then look at what is in it (`run.folder`), or a UsageError: (its lock, the checkpoint to
    resume or None, the previous run's files to remove first, notes to print)."""
    from .folder import RunLock, check_output_dir, files_the_run_reads, lock_output_dir, resolve_resume

    out = training_args.output_dir
    lock = RunLock(Path(out))
    try:
        if os.environ.get("RANK", "0") == "0":  # one process takes it (every process of a launch shares the folder)
            lock = lock_output_dir(out)
        notes: list[str] = []
        if lock.stale_pid is not None:
            notes.append(f"took over the lock of {out}: the run that held it (pid {lock.stale_pid}) is gone")
        resume = resolve_resume(training_args.resume_from_checkpoint, out, notes)
        overwrite, reads = script_args.overwrite_output_dir, files_the_run_reads(script_args, recipe)
        remove = check_output_dir(out, overwrite=overwrite, resume=resume, model=model, reads=reads)
    except ValueError as error:
        lock.release()
        raise UsageError(str(error)) from None
    return lock, resume, remove, notes


def check_dataset_size(dataset, training_args) -> None:
    """Refuse fewer problems than one rollout batch takes: TRL's sampler would run zero steps (a stream: unchecked)."""
    generation_batch, group = getattr(training_args, "generation_batch_size", None), training_args.num_generations
    problems = getattr(dataset, "num_rows", None)  # None for a stream (an IterableDataset)
    if generation_batch is None or problems is None or problems >= generation_batch // group:
        return
    raise UsageError(
        f"the training set has {problems} problem(s), but one rollout batch takes {generation_batch // group} "
        f"(generation_batch_size {generation_batch} / num_generations {group}), so training would run zero steps: "
        "raise --dataset_limit, or lower --per_device_train_batch_size or --steps_per_generation."
    )


def check_async_grpo(args, model: str) -> None:
    """Refuse `--trainer async_grpo` without a CUDA GPU or a vLLM server (waited for as TRL waits)."""
    import urllib.request

    import torch

    if args.use_cpu or not torch.cuda.is_available():
        raise UsageError(
            "--trainer async_grpo needs a CUDA GPU and a vLLM server (`trl vllm-serve --model MODEL`): TRL's "
            "asynchronous GRPO samples only through vLLM and packs rows with a flash-attention-3 kernel. On a CPU, "
            "train with --trainer grpo or rloo."
        )
    url, deadline = args.vllm_server_base_url.rstrip("/") + "/health", time.monotonic() + args.vllm_server_timeout
    while True:
        with contextlib.suppress(OSError, ValueError), urllib.request.urlopen(url, timeout=5) as answer:
            if answer.status == 200:
                return
        if time.monotonic() >= deadline:
            raise UsageError(
                f"--trainer async_grpo: no vLLM server answered at {url} within vllm_server_timeout "
                f"{args.vllm_server_timeout:g} s: start one with `trl vllm-serve --model {model}`, or point "
                "--vllm_server_base_url at it."
            )
        time.sleep(1)


def load_data(job: TrainJob, is_async: bool):
    """(train set, eval set or None: the test split, unless `eval_strategy` is "no"), or a UsageError: from
    `--dataset_name` (streamed with `--dataset_streaming`), or from a recipe's `datasets:` mixture through TRL's
    `get_dataset`, which wins over it as in `trl grpo`."""
    from ..data import DataError, HubUnavailableError, load_math_dataset, system_prompt_from_flag

    s, args = job.script_args, job.training_args
    prompt = system_prompt_from_flag(s.system_prompt)  # a `prompt` column's own system turn: only when set
    options = dict(config=s.dataset_config, seed=args.seed, system_prompt=prompt, column_mapping=job.column_mapping)
    options |= dict(prompt_system_prompt=None if s.system_prompt is None else prompt)
    options |= dict(ops=s.arithmetic_ops, few_shot=s.arithmetic_few_shot)
    source, where = s.dataset_name, f"--dataset_name {s.dataset_name}"
    if job.mixture is not None and job.mixture.datasets:
        from trl import get_dataset

        where = f"datasets ({', '.join(config.path for config in job.mixture.datasets)})"
        try:
            source = get_dataset(job.mixture)
        except (FileNotFoundError, ValueError, ConnectionError) as error:
            raise UsageError(f"{where}: {' '.join(str(error).split())}") from None

    def load(split, **extra):
        if isinstance(source, str):
            return load_math_dataset(source, split, streaming=s.dataset_streaming, **options, **extra)
        if (split or "train") not in source:
            raise DataError(f"the mixture has splits {tuple(source)}, not {split!r} (test_split_size adds test).")
        return load_math_dataset(source[split or "train"], **options, **extra)

    try:
        # a limit takes a seeded sample, not the first rows
        dataset = load(s.dataset_train_split, limit=s.dataset_limit, shuffle=s.dataset_limit is not None)
        eval_dataset = None
        if args.eval_strategy != "no":
            if is_async:  # TRL's AsyncGRPOTrainer takes no eval_dataset
                raise UsageError("--eval_strategy: --trainer async_grpo does not evaluate; set it to no.")
            eval_dataset = load(s.dataset_test_split)
    except (DataError, HubUnavailableError) as error:
        raise UsageError(f"{where}: {error}") from None
    return dataset, eval_dataset


def run_job(job: TrainJob):
    """Train; returns the trainer. The output folder is this run's until it ends (its lock)."""
    from accelerate import PartialState
    from transformers.trainer_callback import ProgressCallback
    from trl import get_peft_config, get_quantization_config

    from ..data import columns_of
    from ..file_modes import usual_file_modes
    from ..models.offline import OfflineModelMissingError, smollm2_path
    from ..quiet import silence_unactionable_warnings
    from ..rewards import get_reward_funcs
    from ..rewards.registry import check_reward_columns
    from ..versions import warn_if_untested_versions
    from . import callbacks
    from .card import plot_metrics
    from .checkpoints import resume_differences, run_settings
    from .folder import describe_run_files, refresh_run_record, remove_run_files, resume_command, write_run_record
    from .parts import attach_parts, with_parts

    script_args, training_args, model_args = job.script_args, job.training_args, job.model_args
    trainer_cls, given, out = job.trainer_cls, job.given, training_args.output_dir
    is_async = script_args.trainer == "async_grpo"
    mixture = job.mixture.datasets if job.mixture is not None else None  # a recipe's `datasets:` names the data
    dataset_name = ", ".join(config.path for config in mixture) if mixture else script_args.dataset_name
    deepspeed = training_args.deepspeed_plugin is not None  # transformers': --deepspeed or ACCELERATE_USE_DEEPSPEED
    warn_if_untested_versions(main_process=int(os.environ.get("RANK", "0")) == 0)  # a trl past the pin, ...
    # Before any model work, the first run's conversion of the offline model included (it imports deepspeed too).
    silence_unactionable_warnings(deepspeed)
    lock, resume, previous, notes = prepare_run(script_args, training_args, job.model, recipe=job.recipe_file)
    try:
        # Cheap checks and loads first: a wrong reward or dataset name fails before any model is touched.
        names, options = script_args.reward_funcs, {"max_completion_length": training_args.max_completion_length}
        try:  # DAPO's soft overlong takes options; a dotted path that does not import, a factory without them: refused
            named = get_reward_funcs(names, **(options if "soft_overlong" in names else {}))
        except ValueError as error:
            raise UsageError(f"--reward_funcs: {error}") from None
        scorer = script_args.reward_model_name_or_path  # first, as `trl grpo` puts it: TRL loads it
        reward_funcs = [scorer, *named] if scorer else named
        state = PartialState()
        for note in notes:  # a stale lock taken over, incomplete checkpoints a resume skipped
            state.print(f"up-trl: {note}", flush=True)
        with state.main_process_first():
            dataset, eval_dataset = load_data(job, is_async)
            check_dataset_size(dataset, training_args)
            try:  # a reward reading a column a set lacks: TRL's TypeError comes at the first scoring
                check_reward_columns(names, named, columns_of(dataset))
                if eval_dataset is not None:
                    check_reward_columns(names, named, columns_of(eval_dataset), "eval")
            except ValueError as error:
                raise UsageError(str(error)) from None
            try:
                model = job.model or smollm2_path()
            except OfflineModelMissingError as error:
                raise UsageError(str(error)) from None
        if is_async:  # its GPU and vLLM server, before the previous run is removed or the model loads
            check_async_grpo(training_args, model)
        if "save_steps" in job.flags and "save_strategy" not in job.flags:
            every = f"{training_args.save_steps:g} steps"
            state.print(f"up-trl: a checkpoint every {every} (--save_steps sets save_strategy steps)")
        # Built before the previous run is removed: a wrong LoRA, quantization or tracker setting fails with that run
        # intact (transformers checks trackers only as it builds the trainer, after the model has loaded).
        check_trackers(training_args.report_to)
        try:
            peft_config = get_peft_config(model_args)
        except ValueError as error:  # peft's: an unknown --lora_task_type, say
            raise UsageError(f"--use_peft: {error}") from None
        quantized = get_quantization_config(model_args)
        if previous:
            if state.is_main_process:
                remove_run_files(previous)
            removed = describe_run_files(previous)
            state.print(f"up-trl: --overwrite_output_dir: removed the previous run in {out} ({removed})")
            state.wait_for_everyone()

        remote = training_args.trust_remote_code  # GRPOConfig's, as `trl grpo` reads it
        model_init_kwargs = {"revision": model_args.model_revision, "trust_remote_code": remote}
        if not is_async:  # the async trainer loads with its own tree attention and AsyncGRPOConfig.dtype
            model_init_kwargs |= {"attn_implementation": model_args.attn_implementation, "dtype": model_args.dtype}
        training_args.model_init_kwargs = {**model_init_kwargs, **(training_args.model_init_kwargs or {})}
        if resume is not None:  # settings changed since the checkpoint: said, or refused (DeepSpeed's optimizer)
            changes, refusal = resume_differences(resume, run_settings(training_args), deepspeed)
            if refusal is not None:
                raise UsageError(refusal)
            for line in changes:
                state.print(f"up-trl: {line}")
        metrics_path = Path(out) / "metrics.jsonl"
        state.print(f"up-trl: loading {model} ...", flush=True)
        graceful = callbacks.GracefulStopCallback()
        record = {"base_model": model, "dataset_name": dataset_name, "trainer": trainer_cls.__name__}
        parts = with_parts(trainer_cls, script_args.share_prompt_prefix)  # every opt-in part (`run.parts`)
        trainer = parts(
            model=model,
            reward_funcs=reward_funcs,
            args=training_args,
            train_dataset=dataset,
            **({} if eval_dataset is None else {"eval_dataset": eval_dataset}),  # async_grpo takes none
            peft_config=peft_config,
            **({"quantization_config": quantized} if quantized else {}),
            callbacks=[
                callbacks.RunRecordCallback(record),  # what the run writes in `out`, claimed before it writes
                callbacks.JsonlMetricsCallback(metrics_path),
                graceful,
                callbacks.FirstRolloutProgressCallback(),
                callbacks.StepEndRngCallback(),
                callbacks.MarkCompleteCallback(),  # each checkpoint marked complete last
            ],
        )
        attach_parts(trainer, script_args.skip_nonfinite_steps, script_args.max_consecutive_nonfinite_steps)
        if trainer.pop_callback(ProgressCallback) is not None:  # the same bar, with an ETA from whole rollout cycles
            trainer.add_callback(callbacks.SteadyEtaProgressCallback())
        # named in the model card: the recipe, the data, and the problems when they are `arithmetic`
        trainer.up_recipe, trainer.up_dataset_name = job.recipe, dataset_name
        trainer.up_arithmetic_ops = script_args.arithmetic_ops
        trainer.up_arithmetic_few_shot = script_args.arithmetic_few_shot
        loss = f"loss_type={training_args.loss_type} " if hasattr(training_args, "loss_type") else ""
        problems = getattr(dataset, "num_rows", None) or "streamed"  # a stream has no length
        state.print(
            f"up-trl: {trainer_cls.__name__} up_mode={trainer.up_mode} {loss}model={model} "
            f"dataset={dataset_name} ({problems} problems) -> {out}"
        )

        start = time.perf_counter()
        try:
            trainer.train(resume_from_checkpoint=resume)
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
                title = f"up_mode={trainer.up_mode}, {dataset_name}"
                summary += f"; plot {plot_metrics(metrics_path, Path(out) / 'metrics.png', title=title)}"
        trainer.create_model_card(dataset_name=dataset_name)
        if trainer.is_world_process_zero():  # last: it lists every file the run wrote, the card included
            status = "finished" if reason is None else "interrupted"
            write_run_record(out, **record, status=status, global_step=step, max_steps=max_steps)
            files = f"model, metrics.jsonl, model card (README.md) in {out}"
            if reason is None:
                print(f"up-trl: done in {seconds / 60:.1f} min, {step} steps: {summary}; {files}", flush=True)
            else:
                print(
                    f"up-trl: interrupted ({reason}) at step {step} of {max_steps} after {seconds / 60:.1f} min: "
                    f"{summary}; checkpoint-{step}, {files}. Resume with: {trainer.up_stop['resume']}",
                    flush=True,
                )
        if training_args.push_to_hub:
            trainer.push_to_hub(dataset_name=dataset_name)
            if trainer.is_world_process_zero():  # the push rewrote the card: the record's content hashes follow it
                refresh_run_record(out)
        state.wait_for_everyone()  # none ends while another is mid-collective
        if hasattr(trainer, "end"):  # transformers >= 5.18, as `trl grpo` ends: trackers finished, group destroyed
            trainer.end()
        elif state.num_processes > 1:
            state.destroy_process_group()
        return trainer
    finally:
        lock.release()


def check_trackers(report_to) -> None:
    """transformers' own check of `--report_to` (a name it knows, its package installed), made now: transformers makes
    it while building the trainer, and each callback's __init__ is where it looks (the Trainer builds them just so)."""
    from transformers.integrations import get_reporting_integration_callbacks

    try:
        for callback in get_reporting_integration_callbacks(report_to):
            callback()
    except (ValueError, RuntimeError, ImportError) as error:
        raise UsageError(f"--report_to: {' '.join(str(error).split())}") from None
