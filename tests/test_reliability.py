"""Non-finite guard, graceful stop on SIGTERM, resume on the same trajectory, determinism: the opt-in parts
(`up_trl.run.parts`) attached as a notebook would, one line each, or all of them as `up-trl train` does."""

import os
import signal

import torch
from conftest import make_trainer, param_snapshots
from transformers import TrainerCallback

from up_trl.run.callbacks import GracefulStopCallback
from up_trl.run.parts import nonfinite_guard


def _trainer(tmp_path, tiny, dataset, **kwargs):
    """A UP trainer with every opt-in part, as `up-trl train` builds it."""
    return make_trainer(tmp_path, tiny, dataset, parts=True, **kwargs)


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


class _SigtermAt(TrainerCallback):
    def __init__(self, step):
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            os.kill(os.getpid(), signal.SIGTERM)


def _per_step(trainer, key):
    return {h["step"]: h[key] for h in trainer.state.log_history if key in h}


def test_sigterm_saves_a_checkpoint_and_resume_continues_the_same_run(tmp_path, tiny, prompts_dataset):
    """SIGTERM at step 3, inside a rollout cycle (4 micro-steps a rollout batch): the checkpoint written at the end of
    that step resumes into the uninterrupted run, bit for bit (tests/test_resume.py covers GRPO and RLOO layouts)."""
    from up_trl.models.offline import tiny_model_and_tokenizer

    common = dict(max_steps=6, num_iterations=2, steps_per_generation=2, save_strategy="steps", save_steps=100)
    full = _trainer(tmp_path / "full", tiny_model_and_tokenizer(seed=0), prompts_dataset, **common)
    full.train()

    stop = GracefulStopCallback()
    try:
        cut = _trainer(
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

    resumed = _trainer(tmp_path / "cut", tiny_model_and_tokenizer(seed=1), prompts_dataset, **common)
    resumed.train(resume_from_checkpoint=str(checkpoint))
    for key in ("loss", "reward"):
        want, got = _per_step(full, key), _per_step(resumed, key)
        after = [step for step in want if step > 3]  # reward is logged on generation steps only
        assert after and {step: got.get(step) for step in after} == {step: want[step] for step in after}, key
    assert all(torch.equal(a, b) for a, b in zip(full.model.parameters(), resumed.model.parameters()))


def test_same_seed_same_metrics(tmp_path, prompts_dataset):
    from up_trl.models.offline import tiny_model_and_tokenizer

    runs = []
    for name in ("a", "b"):
        trainer = _trainer(
            tmp_path / name, tiny_model_and_tokenizer(seed=0), prompts_dataset, max_steps=3, num_iterations=2
        )
        trainer.train()
        runs.append(
            [
                {
                    k: v
                    for k, v in h.items()
                    if k not in ("step_time", "train_runtime", "train_samples_per_second", "train_steps_per_second")
                }
                for h in trainer.state.log_history
            ]
        )
    assert runs[0] == runs[1]


def test_metrics_file_starts_fresh_and_a_resume_drops_records_after_the_checkpoint(tmp_path):
    """A second run into the same folder used to append to the first run's metrics.jsonl (a benchmark's curve then
    mixed two runs); a resume keeps what came before its checkpoint and nothing after it."""
    import json
    from types import SimpleNamespace

    from up_trl.run.callbacks import JsonlMetricsCallback

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
