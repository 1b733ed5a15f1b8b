"""Checkpoints that survive a kill and resume as the run would have gone on (docs/reliability.md, "Checkpoints that
survive a kill" and "Resuming with other settings"):

- each checkpoint is marked complete last (the HF Trainer would resume a half-saved one: `mark_complete`, written by
  `callbacks.MarkCompleteCallback`), and a resume takes the newest complete one (`newest_complete`);
- `RolloutCheckpointMixin`: TRL's GRPOTrainer and RLOOTrainer do not save their buffered rollout batch
  (`_buffered_inputs`, `_step`), so a run resumed inside a rollout cycle generated a new one and ended elsewhere
  (resumed with another micro-batch or rollout layout, the saved batch does not fit and TRL's behaviour stays);
- `ResumeSettingsMixin`: transformers restores the checkpoint's learning rate, weight decay and Adam settings with the
  optimizer state, so a resume with a lower `--learning_rate` trained at the old one; this run's win.

The mixins rely on TRL's `_prepare_inputs` and `_load_optimizer_and_scheduler`, held by behavioural tests listed in
`tests/trl_pins.json` ('rollout checkpoint' behaviours: resumed inside a cycle, the same final weights; a changed
learning rate applied).
"""

from __future__ import annotations

import json
import os
import re
import zipfile
from pathlib import Path
from typing import Any

import torch
from accelerate.logging import get_logger
from safetensors import SafetensorError, safe_open
from transformers import TrainerCallback, TrainerState
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from ..models.source import checkpoints_in

COMPLETE_MARK = "up_trl_checkpoint.json"
# The files a process writes for itself, its number in the name (RNG state, rollout batch, ZeRO and FSDP shards).
RANK_FILE = re.compile(r"(?:^rng_state_|^rollout_buffer_rank|zero_pp_rank_|^__)(\d+)[._]")
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin", "adapter_model.safetensors")


def run_settings(args) -> dict[str, Any]:
    """The settings a checkpoint records: the config's fields (JSON-able) and the number of processes."""
    return json.loads(json.dumps(args.to_dict(), default=str)) | {"world_size": getattr(args, "world_size", 1)}


def file_rank(name: str, world_size: int = 1) -> int:
    """The process that writes the checkpoint file `name` (0 unless its name says another one).

    >>> file_rank("rng_state_3.pth", 4), file_rank("rollout_buffer_rank1.pt", 2), file_rank("optimizer.pt", 2)
    (3, 1, 0)
    """
    found = RANK_FILE.search(Path(name).name)
    rank = int(found.group(1)) if found else 0
    return rank if rank < world_size else 0


def mark_name(rank: int = 0) -> str:
    """The completion mark of process `rank`: `up_trl_checkpoint.json` for 0 (the only one with one process)."""
    return COMPLETE_MARK if rank == 0 else f"up_trl_checkpoint-rank{rank}.json"


def mark_complete(folder: str | os.PathLike, settings: dict | None = None, rank: int = 0, world_size: int = 1) -> Path:
    """Write process `rank`'s mark in `folder` (its files' sizes) renamed in: a kill leaves none or a whole one."""
    folder = Path(folder)
    files = {
        str(p.relative_to(folder)): p.stat().st_size
        for p in sorted(folder.rglob("*"))
        if p.is_file() and not p.name.startswith("up_trl_checkpoint") and file_rank(p.name, world_size) == rank
    }
    mark, temporary = folder / mark_name(rank), folder / f"{mark_name(rank)}.tmp"
    record = {"complete": True, "files": files}
    record |= {"world_size": world_size, "settings": settings or {}} if rank == 0 else {"rank": rank}
    with open(temporary, "w") as f:
        json.dump(record, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    return temporary.replace(mark)


def read_json(path: str | os.PathLike) -> dict | None:
    """The JSON object in the file `path`, or None (no such file, not readable, or not a JSON object)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_mark(folder: str | os.PathLike, rank: int = 0) -> dict | None:
    """Process `rank`'s completion mark in `folder`, or None (none, or not one a run wrote)."""
    mark = read_json(Path(folder) / mark_name(rank)) or {}
    return mark if mark.get("complete") is True else None


def _broken_piece(folder: Path) -> str | None:
    """What is missing or cut short in a checkpoint that carries no mark, judged by its pieces; None when whole."""
    if not (state := folder / "trainer_state.json").is_file():
        return "no trainer_state.json"
    try:
        TrainerState.load_from_json(str(state))
    except (OSError, ValueError, TypeError):
        return "trainer_state.json cut short"
    if not any((folder / name).is_file() for name in WEIGHT_FILES) and not any(folder.glob("global_step*")):
        return "no weights"
    for path in sorted(folder.iterdir()):
        if path.suffix == ".safetensors":
            try:  # safetensors' `safe_open` refuses a file cut short
                with safe_open(path, "numpy"):
                    pass
            except (OSError, SafetensorError):
                return f"{path.name} cut short"
        if path.suffix in (".pt", ".pth", ".bin") and not zipfile.is_zipfile(path):
            return f"{path.name} cut short"
    return None


def checkpoint_problem(folder: str | os.PathLike, marks_expected: bool = True) -> str | None:
    """Why `folder` is not a complete checkpoint, or None (`marks_expected`: a missing mark is an interrupted save)."""
    folder = Path(folder)
    if not folder.is_dir() or not any(folder.iterdir()):
        return "empty"
    if (mark := read_mark(folder)) is None:
        broken = _broken_piece(folder)
        return f"its save did not finish: {broken or 'no completion mark'}" if marks_expected else broken
    world_size = mark.get("world_size", 1)
    marks = [mark]
    for rank in range(1, world_size if isinstance(world_size, int) else 1):
        marks.append(read_mark(folder, rank))
        if marks[-1] is None:
            return f"the save of process {rank} of {world_size} did not finish: no {mark_name(rank)}"
    for name, size in (item for m in marks for item in m.get("files", {}).items()):
        if not (path := folder / name).is_file():
            return f"{name} is missing"
        if path.stat().st_size != size:
            return f"{name} has {path.stat().st_size} bytes, not the {size} it was saved with"
    return None


def newest_complete(output_dir: str | os.PathLike) -> tuple[Path | None, list[tuple[Path, str]]]:
    """(the newest complete `checkpoint-<step>` in `output_dir` or None, the newer incomplete ones with why)."""
    checkpoints = checkpoints_in(output_dir) if Path(output_dir).is_dir() else []
    marks_expected = any(read_mark(c) is not None for c in checkpoints)
    skipped = []
    for checkpoint in reversed(checkpoints):
        if (problem := checkpoint_problem(checkpoint, marks_expected)) is None:
            return checkpoint, skipped
        skipped.append((checkpoint, problem))
    return None, skipped


# Settings that shape a buffered rollout batch: changed on resume, the saved batch is not reused (TRL saves none).
ROLLOUT_SHAPE = ("per_device_train_batch_size", "num_generations", "steps_per_generation", "generation_batch_size",
                 "gradient_accumulation_steps", "num_iterations", "world_size")  # fmt: skip
# Settings that name where this run is, not how it trains.
NOT_COMPARED = ("output_dir", "logging_dir", "resume_from_checkpoint", "overwrite_output_dir", "run_name")
# Optimizer settings a resume applies (`ResumeSettingsMixin`), not under DeepSpeed, whose engine restores its own.
OPTIMIZER_SETTINGS = ("learning_rate", "weight_decay", "adam_beta1", "adam_beta2", "adam_epsilon")


def saved_settings(checkpoint: str | os.PathLike) -> dict[str, Any]:
    """The settings of the run that saved `checkpoint`, as its mark records them ({} without a mark)."""
    return (read_mark(checkpoint) or {}).get("settings") or {}


def rollout_shape(args) -> dict[str, Any]:
    """The run's settings that shape its buffered rollout batch (`ROLLOUT_SHAPE`), saved beside the batch: a resume
    reuses the batch only where they are equal."""
    return {key: value for key, value in run_settings(args).items() if key in ROLLOUT_SHAPE}


def resume_differences(
    checkpoint: str | os.PathLike, settings: dict[str, Any], deepspeed: bool = False
) -> tuple[list[str], str | None]:
    """(a line per setting changed since `checkpoint`, a refusal or None: an optimizer setting under DeepSpeed)."""
    saved, name = saved_settings(checkpoint), Path(checkpoint).name
    changed = {k: saved[k] for k in settings if k in saved and k not in NOT_COMPARED and saved[k] != settings[k]}
    if deepspeed and (key := next((k for k in changed if k in OPTIMIZER_SETTINGS), None)):
        return [], (
            f"--resume_from_checkpoint {checkpoint}: {key} is {settings[key]} here but {changed[key]} in the run "
            f"that saved {name}, and under DeepSpeed the engine restores the optimizer as saved, so {key} "
            f"{settings[key]} would not apply: set {key} back to {changed[key]}, or resume without DeepSpeed."
        )
    notes = [f"resuming {name} with {k} {settings[k]} (the run that saved it had {old})" for k, old in changed.items()]
    return notes, None


logger = get_logger(__name__)


def saved_checkpoint(args, state) -> Path | None:
    """The checkpoint an `on_save` follows, None where it saved none. With several processes every one has saved and
    writes its own files: the folder is made where process 0 has not made it yet (with `save_only_model` only process
    0 writes there, and another process may reach `on_save` first; each then writes its own files and mark)."""
    folder = Path(args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
    if getattr(args, "world_size", 1) > 1:
        folder.mkdir(parents=True, exist_ok=True)
    return folder if folder.is_dir() else None


def rollout_file(checkpoint: str | os.PathLike, rank: int) -> str:
    """The file in `checkpoint` that holds process `rank`'s buffered rollout batch.

    >>> rollout_file("out/checkpoint-3", 0)
    'out/checkpoint-3/rollout_buffer_rank0.pt'
    """
    return os.path.join(checkpoint, f"rollout_buffer_rank{rank}.pt")


def sampler_generator(dataloader) -> torch.Generator | None:
    """The random generator of the prompt sampler behind `dataloader`, through accelerate's wrappers, or None."""
    seen, todo = set(), [dataloader]
    while todo:
        if (obj := todo.pop()) is None or id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(generator := getattr(obj, "generator", None), torch.Generator):
            return generator
        todo += [getattr(obj, name, None) for name in ("sampler", "batch_sampler", "base_dataloader")]
    return None


class RolloutCheckpointCallback(TrainerCallback):
    """Saves this process's rollout batch, `_step` and the prompt sampler's random states (the Trainer restores only
    the global ones) in each checkpoint; first among the callbacks, so that the completeness mark lists the file."""

    def __init__(self, trainer):
        self.trainer = trainer
        self.window: tuple[int, int] = (-1, 0)  # (global_step, `_step` at the first micro-step of its window)
        self.generator: torch.Generator | None = None
        self.epoch: int = -1  # the epoch in progress, and the sampler's state before its order was drawn
        self.epoch_sampler_state: torch.Tensor | None = None

    def on_epoch_begin(self, args, state, control, train_dataloader=None, **kwargs):
        self.generator, self.epoch = sampler_generator(train_dataloader), int(state.epoch + 1e-6)
        saved = vars(self.trainer).pop("_up_sampler_state", None)  # a resume: the states the checkpoint holds
        if self.generator is not None and saved is not None:
            if saved["epoch"] == self.epoch:  # resumed inside the saved epoch: its order again
                self.generator.set_state(saved["epoch_start"])
            elif saved["epoch"] + 1 == self.epoch:  # saved at its last step: the next epoch's order
                self.generator.set_state(saved["after"])
        self.epoch_sampler_state = None if self.generator is None else self.generator.get_state()

    def on_step_begin(self, args, state, control, **kwargs):  # before the window's first micro-step
        self.window = (state.global_step, self.trainer._step)

    def rollout_step(self) -> int:
        """`_step` to resume from: inside an accumulation window (an emergency save), the window's first."""
        window_step, first_micro_step = self.window
        return first_micro_step if window_step == self.trainer.state.global_step else self.trainer._step

    def on_save(self, args, state, control, **kwargs):
        buffered = self.trainer._buffered_inputs
        if buffered is not None and (folder := saved_checkpoint(args, state)) is not None:
            state_dict = {"step": self.rollout_step(), "buffered_inputs": buffered, "shape": rollout_shape(args)}
            if self.epoch_sampler_state is not None:  # the sampler's states: before the epoch drew its order, and now
                states = {"epoch_start": self.epoch_sampler_state, "after": self.generator.get_state()}
                state_dict["sampler_state"] = {"epoch": self.epoch, **states}
            torch.save(state_dict, rollout_file(folder, self.trainer.accelerator.process_index))


def is_synchronous(trainer_cls: type) -> bool:
    """Whether `trainer_cls` is (a subclass of) TRL's GRPOTrainer or RLOOTrainer: a buffered rollout batch."""
    return any(c.__name__ in ("GRPOTrainer", "RLOOTrainer") for c in trainer_cls.__mro__)


class RolloutCheckpointMixin:
    """For `class X(RolloutCheckpointMixin, GRPOTrainer)` (or RLOO): the rollout batch saved, and loaded on resume."""

    def __init__(self, *args, **kwargs):
        """The trainer's own constructor through `super()`, then the callback that saves the batch, first."""
        if not is_synchronous(type(self)):
            raise TypeError(
                f"RolloutCheckpointMixin needs GRPOTrainer or RLOOTrainer (a buffered rollout batch); "
                f"{type(self).__name__} has none: leave the mixin out."
            )
        super().__init__(*args, **kwargs)
        self.callback_handler.callbacks.insert(0, RolloutCheckpointCallback(self))

    def _load_optimizer_and_scheduler(self, checkpoint):
        """The next class's load through `super()` (the optimizer and scheduler; `ResumeSettingsMixin`'s settings),
        then the rollout batch: the two touch different state, so either order works."""
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint is None:
            return
        if not os.path.exists(path := rollout_file(checkpoint, self.accelerator.process_index)):
            logger.warning(
                f"{checkpoint} holds no rollout batch for process {self.accelerator.process_index} (written by "
                "another trainer or with fewer processes): the resumed run generates a new one, so it can differ "
                "from the uninterrupted run.",
                main_process_only=False,
            )
            return
        state = torch.load(path, map_location=self.accelerator.device, weights_only=True)
        # the settings saved beside the batch, or in the mark (`up-trl train`'s checkpoints saved before they were)
        saved = state.get("shape") or saved_settings(checkpoint)
        if reshaped := [k for k, v in rollout_shape(self.args).items() if k in saved and saved[k] != v]:
            logger.warning(  # as TRL resumes: a new rollout batch at the next step (after an out-of-memory crash, say)
                f"{checkpoint}'s rollout batch was generated with another {', '.join(reshaped)}: the resumed run "
                "generates a new one at its next step, as TRL does, so it can differ from the uninterrupted run.",
                main_process_only=True,
            )
            return
        self._step, self._buffered_inputs = state["step"], state["buffered_inputs"]
        if isinstance(sampler := state.get("sampler_state"), dict):  # the callback puts it back as the epoch begins
            self.__dict__["_up_sampler_state"] = {k: v.cpu() if hasattr(v, "cpu") else v for k, v in sampler.items()}
        batches = self._buffered_inputs if isinstance(self._buffered_inputs, list) else [self._buffered_inputs]
        # GRPO's loss reads the reference's log-probs when beta > 0 (RLOO folds the KL into the rewards)
        is_grpo = any(c.__name__ == "GRPOTrainer" for c in type(self).__mro__)
        if is_grpo and getattr(self, "beta", 0.0) and "ref_per_token_logps" not in batches[0]:
            self._buffered_inputs = None
            logger.warning(
                f"{checkpoint}'s rollout batch was generated with beta=0 (no ref_per_token_logps): beta is "
                f"{self.beta} now, so the resumed run generates a new batch at its next step.",
                main_process_only=True,
            )


# The hyperparameters of a torch optimizer's parameter group that come from the run's arguments.
SETTINGS = ("initial_lr", "weight_decay", "betas", "eps")


def apply_settings(optimizer, scheduler, groups: list[dict], base_lrs: list[float] | None) -> None:
    """Give the loaded `optimizer` and `scheduler` the run's settings read before the load (each parameter group's
    `SETTINGS` and lr, the scheduler's base rates), the current rate scaled by new base / saved base.

    >>> import torch
    >>> p = torch.nn.Parameter(torch.zeros(1)); opt = torch.optim.AdamW([p], lr=0.01)
    >>> sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: 0.5)
    >>> groups, bases = [{"initial_lr": 0.001, "lr": 0.0005, "weight_decay": 0.1, "betas": (0.8, 0.9)}], [0.001]
    >>> apply_settings(opt, sched, groups, bases)
    >>> [round(opt.param_groups[0][k], 6) for k in ("lr", "initial_lr", "weight_decay")], sched.base_lrs
    ([0.0005, 0.001, 0.1], [0.001])
    """
    if len(groups) != len(optimizer.param_groups):  # another layout of parameters: nothing to match them by
        return
    saved_bases = list(getattr(scheduler, "base_lrs", None) or [])
    for k, (group, fresh) in enumerate(zip(optimizer.param_groups, groups)):
        saved = group.get("initial_lr") or (saved_bases[k] if k < len(saved_bases) else None)
        new = base_lrs[k] if base_lrs is not None and k < len(base_lrs) else fresh.get("initial_lr")
        if saved and new is not None and new != saved:  # unchanged: left as loaded, bit for bit
            group["lr"] = group["lr"] * new / saved
        group.update({key: fresh[key] for key in SETTINGS if key in fresh})
        if new is not None and "initial_lr" in group:
            group["initial_lr"] = new
    if base_lrs is not None and saved_bases and list(base_lrs) != saved_bases:
        scheduler.base_lrs = list(base_lrs)
        scheduler._last_lr = [group["lr"] for group in optimizer.param_groups]


class ResumeSettingsMixin:
    """For a Trainer subclass: on resume, this run's optimizer settings win over the checkpoint's."""

    def _load_optimizer_and_scheduler(self, checkpoint):
        """This run's settings read before the next class's load through `super()`, put back after it."""
        if checkpoint is not None:  # what this run built
            groups = [{k: g[k] for k in (*SETTINGS, "lr") if k in g} for g in self.optimizer.param_groups]
            base_lrs = list(getattr(self.lr_scheduler, "base_lrs", None) or []) or None
        super()._load_optimizer_and_scheduler(checkpoint)
        if checkpoint is not None and not getattr(self, "is_deepspeed_enabled", False):
            apply_settings(self.optimizer, self.lr_scheduler, groups, base_lrs)
