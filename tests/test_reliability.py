"""Non-finite guard, SIGTERM stop, resume, determinism: the opt-in parts, one line each or all."""

import json
import multiprocessing
import os
import signal
import socket
from types import SimpleNamespace

import torch
from conftest import make_trainer, param_snapshots, tiny_train_argv
from transformers import TrainerCallback

from up_trl.cli import train
from up_trl.file_modes import default_file_mode, usual_file_modes
from up_trl.models.offline import save_tiny_model, tiny_model_and_tokenizer
from up_trl.run.callbacks import GracefulStopCallback, JsonlMetricsCallback
from up_trl.run.ending import stop_reason
from up_trl.run.parts import nonfinite_guard


def _poison_loss_at(trainer, steps):
    """Make the loss NaN on the given optimizer steps (1-based), as a broken reward or overflow would."""
    real = trainer.compute_loss

    def compute_loss(model, inputs, *args, **kwargs):
        loss = real(model, inputs, *args, **kwargs)
        return loss * float("nan") if trainer.state.global_step + 1 in steps else loss

    trainer.compute_loss = compute_loss


def test_nonfinite_step_is_skipped_counted_and_training_goes_on(tmp_path, tiny, prompts_dataset):
    snaps = param_snapshots()
    trainer = make_trainer(tmp_path, tiny, prompts_dataset, callbacks=[snaps], max_steps=4, num_iterations=2)
    trainer.add_callback(nonfinite_guard(trainer))  # the part, in one line
    _poison_loss_at(trainer, {2})
    trainer.train()
    assert all(torch.equal(a, b) for a, b in zip(snaps.params[1], snaps.params[2]))  # step 2: untouched
    assert not all(torch.equal(a, b) for a, b in zip(snaps.params[2], snaps.params[3]))  # step 3: trains again
    assert all(torch.isfinite(p).all() for p in trainer.model.parameters())
    skipped = [h["up/nonfinite_skipped_steps"] for h in trainer.state.log_history if "up/nonfinite_skipped_steps" in h]
    assert skipped[0] == 0 and skipped[-1] == 1
    assert trainer.state.global_step == 4


def test_too_many_nonfinite_steps_save_a_checkpoint_and_stop(tmp_path, tiny, prompts_dataset):
    trainer = make_trainer(tmp_path, tiny, prompts_dataset, max_steps=6)
    trainer.add_callback(nonfinite_guard(trainer, max_consecutive=2))
    before = [p.detach().clone() for p in trainer.model.parameters()]
    _poison_loss_at(trainer, {1, 2, 3, 4, 5, 6})
    trainer.train()
    assert trainer.state.global_step == 2
    assert (tmp_path / "out" / "checkpoint-2").is_dir()
    assert all(torch.equal(a, b) for a, b in zip(before, trainer.model.parameters()))


def _fp16_scaler(trainer, init_scale):
    """The GradScaler accelerate gives an fp16 run on a GPU (on CPU it gives none), starting at `init_scale`."""
    trainer.accelerator.scaler = torch.amp.GradScaler("cpu", init_scale=init_scale)
    trainer.accelerator.native_amp = True  # so that accelerate unscales before the step, as on a GPU
    return trainer.accelerator.scaler


def test_fp16_loss_scale_overflows_are_the_scalers_and_training_goes_on(tmp_path, tiny, prompts_dataset):
    """A scale too large for the gradients overflows until the scaler has halved it enough, as under TRL alone."""
    trainer = make_trainer(tmp_path, tiny, prompts_dataset, max_steps=8, num_iterations=2, fp16=True, bf16=False)
    scaler = _fp16_scaler(trainer, 2.0**23)  # float16 overflows at the first scales
    guard = nonfinite_guard(trainer, max_consecutive=2)
    trainer.add_callback(guard)
    before = [p.detach().clone() for p in trainer.model.parameters()]
    trainer.train()
    assert trainer.state.global_step == 8 and guard.skipped == 0
    assert scaler.get_scale() <= 2.0**20  # at least 3 overflows in a row, past the guard's limit of 2
    assert not all(torch.equal(a, b) for a, b in zip(before, trainer.model.parameters()))
    assert all(torch.isfinite(p).all() for p in trainer.model.parameters())


def test_under_fp16_a_broken_loss_stops_once_the_scale_reaches_1(tmp_path, tiny, prompts_dataset):
    trainer = make_trainer(tmp_path, tiny, prompts_dataset, max_steps=8, fp16=True, bf16=False)
    scaler = _fp16_scaler(trainer, 4.0)
    guard = nonfinite_guard(trainer, max_consecutive=2)
    trainer.add_callback(guard)
    _poison_loss_at(trainer, set(range(1, 9)))
    trainer.train()
    assert trainer.state.global_step == 4 and guard.skipped == 2  # scales 4 and 2 are the scaler's; 1 and 0.5 count
    assert scaler.get_scale() == 0.25 and stop_reason([guard]) == "2 non-finite steps in a row"


class _SigtermAt(TrainerCallback):
    def __init__(self, step):
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            os.kill(os.getpid(), signal.SIGTERM)


def _per_step(trainer, key):
    return {h["step"]: h[key] for h in trainer.state.log_history if key in h}


def test_sigterm_saves_a_checkpoint_and_resume_continues_the_same_run(tmp_path, tiny, prompts_dataset):
    """SIGTERM at step 3: the checkpoint then written resumes into the uninterrupted run, bit for bit."""
    common = dict(max_steps=6, num_iterations=2, steps_per_generation=2, save_strategy="steps", save_steps=100)
    common["parts"] = True  # every opt-in part, as `up-trl train` builds it
    full = make_trainer(tmp_path / "full", tiny_model_and_tokenizer(seed=0), prompts_dataset, **common)
    full.train()

    stop = GracefulStopCallback()
    try:
        cut = make_trainer(
            tmp_path / "cut",
            tiny_model_and_tokenizer(seed=0),
            prompts_dataset,
            callbacks=[_SigtermAt(3), stop],
            **common,
        )
        cut.train()
    finally:
        stop.restore()
    assert stop.stop_requested == signal.SIGTERM
    assert cut.state.global_step == 3
    checkpoint = tmp_path / "cut" / "out" / "checkpoint-3"
    assert (checkpoint / "trainer_state.json").exists()

    resumed = make_trainer(tmp_path / "cut", tiny_model_and_tokenizer(seed=1), prompts_dataset, **common)
    resumed.train(resume_from_checkpoint=str(checkpoint))
    for key in ("loss", "reward"):
        want, got = _per_step(full, key), _per_step(resumed, key)
        after = [step for step in want if step > 3]  # reward is logged on generation steps only
        assert after and {step: got.get(step) for step in after} == {step: want[step] for step in after}, key
    assert all(torch.equal(a, b) for a, b in zip(full.model.parameters(), resumed.model.parameters()))


def test_same_seed_same_metrics(tmp_path, prompts_dataset):
    runs = []
    for name in ("a", "b"):
        tiny = tiny_model_and_tokenizer(seed=0)
        trainer = make_trainer(tmp_path / name, tiny, prompts_dataset, parts=True, max_steps=3, num_iterations=2)
        trainer.train()
        timings = ("step_time", "train_runtime", "train_samples_per_second", "train_steps_per_second")
        runs.append([{k: v for k, v in h.items() if k not in timings} for h in trainer.state.log_history])
    assert runs[0] == runs[1]


def test_metrics_file_starts_fresh_and_a_resume_drops_records_after_the_checkpoint(tmp_path):
    """A new run starts metrics.jsonl afresh; a resume keeps only what came before its checkpoint."""
    path = tmp_path / "metrics.jsonl"
    old = [{"step": s, "loss": 9.0} for s in (1, 2, 3, 4)]
    path.write_text("".join(json.dumps(r) + "\n" for r in old) + "not json\n")
    callback = JsonlMetricsCallback(path)
    callback.on_train_begin(None, SimpleNamespace(is_world_process_zero=True, global_step=2), None)
    assert [json.loads(line)["step"] for line in path.read_text().splitlines()] == [1, 2]  # resumed at step 2
    callback.on_train_begin(None, SimpleNamespace(is_world_process_zero=True, global_step=0), None)
    assert path.read_text() == ""  # a fresh run
    callback.on_log(None, SimpleNamespace(is_world_process_zero=True, global_step=1), None, logs={"loss": 1.0})
    assert [json.loads(line)["loss"] for line in path.read_text().splitlines()] == [1.0]


def mode(path) -> int:
    return os.stat(path).st_mode & 0o777


def test_a_saved_model_is_readable_as_its_neighbours(tmp_path):
    folder = save_tiny_model(tmp_path / "tiny")
    assert mode(os.path.join(folder, "model.safetensors")) == default_file_mode()
    assert mode(os.path.join(folder, "model.safetensors")) == mode(os.path.join(folder, "config.json"))


def test_only_private_weight_files_are_widened(tmp_path):
    for name, bits in (("model.safetensors", 0o600), ("shared.bin", 0o640), ("lock", 0o600)):
        (tmp_path / name).write_bytes(b"")
        (tmp_path / name).chmod(bits)
    usual_file_modes(tmp_path)
    assert mode(tmp_path / "model.safetensors") == default_file_mode()
    assert mode(tmp_path / "shared.bin") == 0o640 and mode(tmp_path / "lock") == 0o600  # set on purpose: kept


def test_a_trainers_checkpoints_and_up_trl_trains_weights_get_the_usual_mode(tmp_path, tiny, prompts_dataset):
    # Every checkpoint a trainer with the part writes (`UsualFileModesCallback`), and `up-trl train`'s final weights.
    umask = os.umask(0o022)
    try:
        trainer = make_trainer(
            tmp_path, tiny, prompts_dataset, parts=True, max_steps=1, save_strategy="steps", save_steps=1
        )
        trainer.train()
        model_dir = save_tiny_model(tmp_path / "tiny")
        train(tiny_train_argv(model_dir, tmp_path / "cli", max_steps=1))
    finally:
        os.umask(umask)
    weights = {str(path.relative_to(tmp_path)): mode(path) for path in tmp_path.rglob("model.safetensors")}
    assert weights == {
        "out/checkpoint-1/model.safetensors": 0o644,
        "cli/model.safetensors": 0o644,
        "tiny/model.safetensors": 0o644,  # `save_tiny_model` widens its own
    }


def test_with_since_only_what_a_save_just_wrote_is_widened(tmp_path):
    mine, saved = tmp_path / "private.safetensors", tmp_path / "model.safetensors"
    for path in (mine, saved):
        path.write_bytes(b"")
        path.chmod(0o600)
    os.utime(mine, (1_000_000, 1_000_000))  # written long before the save
    usual_file_modes(tmp_path, since=2_000_000)
    assert mode(mine) == 0o600 and mode(saved) == default_file_mode()


def _step_end_on_process(rank: int, port: int, stopped) -> None:
    """One of 2 gloo processes: only process 0 got the signal before its step end."""
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        stop = GracefulStopCallback(signals=())
        stop.stop_requested = signal.SIGTERM if rank == 0 else None
        control = SimpleNamespace(should_save=False, should_training_stop=False)
        stop.on_step_end(SimpleNamespace(world_size=2), None, control)
        stopped[rank] = control.should_save and control.should_training_stop and stop_reason([stop])
    finally:
        dist.destroy_process_group()


def test_a_signal_one_process_got_stops_every_process_at_the_same_step():
    """Each process decided alone: one saving and stopping while another trained on waited for ever (ZeRO-3's save,
    the next step's collectives). Each names the signal in its last line and card, whichever process got it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    context = multiprocessing.get_context("fork")
    stopped = context.Manager().dict()
    processes = [context.Process(target=_step_end_on_process, args=(rank, port, stopped)) for rank in (0, 1)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
        if process.is_alive():  # waiting for the other in a collective: the defect, reported below
            process.kill()
    assert [p.exitcode for p in processes] == [0, 0] and dict(stopped) == {0: "SIGTERM", 1: "SIGTERM"}
