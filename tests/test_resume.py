"""A run interrupted at any step and resumed ends with the uninterrupted run's weights, bit for bit."""

import os

import pytest
import torch
from conftest import make_rloo_trainer, make_trainer
from datasets import Dataset
from transformers import TrainerCallback

from up_trl.models.offline import tiny_model_and_tokenizer
from up_trl.run.checkpoints import RolloutCheckpointCallback, mark_complete, resume_differences, rollout_file

MAKERS = {"grpo": make_trainer, "rloo": make_rloo_trainer}
# steps_per_generation=2: a rollout batch feeds 2 optimizer steps (the offline default's layout); with
# num_iterations=2 it feeds 4. Step 3 lies inside a cycle in both: the uninterrupted run reuses a buffered batch there.
LAYOUTS = {"spg2": dict(steps_per_generation=2), "spg2_iter2": dict(steps_per_generation=2, num_iterations=2)}


class StopAt(TrainerCallback):
    """Save a checkpoint at the end of `step` and stop there, as the graceful stop does on SIGTERM."""

    def __init__(self, step):
        self.step = step

    def on_step_end(self, args, state, control, **kwargs):
        if state.global_step == self.step:
            control.should_save = control.should_training_stop = True


def train(kind, folder, callbacks=(), resume=None, prompts=16, **settings):
    settings = {"max_steps": 6, **settings}
    tiny = tiny_model_and_tokenizer(seed=0)
    trainer = MAKERS[kind](folder, tiny, dataset(prompts), callbacks=list(callbacks), parts=True, **settings)
    trainer.train(resume_from_checkpoint=resume)
    return trainer


def dataset(prompts=16):
    return Dataset.from_dict({"prompt": [[{"role": "user", "content": f"{i} + {i} = "}] for i in range(prompts)]})


def losses(trainer):
    return {h["step"]: h["loss"] for h in trainer.state.log_history if "loss" in h}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("kind", list(MAKERS))
def test_resume_inside_a_rollout_cycle_continues_the_same_run(tmp_path, kind, layout):
    settings = LAYOUTS[layout]
    full = train(kind, tmp_path / "full", **settings)
    cut = train(kind, tmp_path / "cut", callbacks=[StopAt(3)], **settings)
    assert cut.state.global_step == 3
    checkpoint = tmp_path / "cut" / "out" / "checkpoint-3"
    assert os.path.exists(rollout_file(checkpoint, 0))
    resumed = train(kind, tmp_path / "cut", resume=str(checkpoint), **settings)
    assert resumed.state.global_step == 6
    assert {s: v for s, v in losses(resumed).items() if s > 3} == {s: v for s, v in losses(full).items() if s > 3}
    assert all(torch.equal(a, b) for a, b in zip(full.model.parameters(), resumed.model.parameters()))


@pytest.mark.parametrize("stop", [5, 4], ids=["inside_epoch_1", "at_epoch_0s_last_step"])
@pytest.mark.parametrize("kind", list(MAKERS))
def test_resume_in_a_later_epoch_draws_the_prompts_of_the_uninterrupted_run(tmp_path, kind, stop):
    """Resumed in or at the end of an epoch, the run draws the uninterrupted run's prompts."""
    settings = dict(steps_per_generation=2, prompts=8, max_steps=10)
    full = train(kind, tmp_path / "full", **settings)
    train(kind, tmp_path / "cut", callbacks=[StopAt(stop)], **settings)
    resumed = train(kind, tmp_path / "cut", resume=str(tmp_path / "cut" / "out" / f"checkpoint-{stop}"), **settings)
    assert resumed.state.global_step == 10 and resumed.state.epoch > 2
    after = {s: v for s, v in losses(resumed).items() if s > stop}
    assert after == {s: v for s, v in losses(full).items() if s > stop}
    assert all(torch.equal(a, b) for a, b in zip(full.model.parameters(), resumed.model.parameters()))


def test_without_the_rollout_batch_a_resume_regenerates_and_says_so(tmp_path, caplog):
    """What TRL alone does: the buffer is gone, so step 4 trains on a new rollout batch (other weights at the end)."""
    full = train("grpo", tmp_path / "full", steps_per_generation=2)
    train("grpo", tmp_path / "cut", callbacks=[StopAt(3)], steps_per_generation=2)
    checkpoint = tmp_path / "cut" / "out" / "checkpoint-3"
    os.remove(rollout_file(checkpoint, 0))
    with caplog.at_level("WARNING"):
        resumed = train("grpo", tmp_path / "cut", resume=str(checkpoint), steps_per_generation=2)
    assert "holds no rollout batch" in caplog.text
    assert not all(torch.equal(a, b) for a, b in zip(full.model.parameters(), resumed.model.parameters()))


@pytest.mark.parametrize("kind", list(MAKERS))
def test_resumed_with_smaller_micro_batches_the_run_goes_on_as_the_parents_does(tmp_path, kind, caplog):
    """Cut at step 3, resumed with micro-batches of 4 and twice the accumulation (after an out-of-memory crash, say):
    the saved rollout batch, of 8, is left unread, and the run ends where the parent trainer's (which saves none)
    ends; `tests/test_same_as_trl_grpo.py` holds the same against `trl grpo`."""
    settings = dict(steps_per_generation=2, lr_scheduler_type="constant")
    smaller = settings | dict(per_device_train_batch_size=4, gradient_accumulation_steps=2)
    runs = {}
    for parts in (True, False):  # with the rollout checkpoint (and every opt-in part), and the parent's resume
        folder, tiny = tmp_path / str(parts), tiny_model_and_tokenizer(seed=0)
        cut = MAKERS[kind](folder, tiny, dataset(), callbacks=[StopAt(3)], parts=parts, max_steps=6, **settings)
        cut.train()
        at_cut = [p.detach().clone() for p in cut.model.parameters()]
        checkpoint = folder / "out" / "checkpoint-3"
        assert os.path.exists(rollout_file(checkpoint, 0)) == parts
        resumed = MAKERS[kind](folder, tiny, dataset(), parts=parts, max_steps=6, **smaller)
        with caplog.at_level("WARNING"):
            resumed.train(resume_from_checkpoint=str(checkpoint))
        runs[parts] = resumed
        assert not all(torch.equal(a, b) for a, b in zip(at_cut, resumed.model.parameters()))  # steps 4-6 trained
    assert "rollout batch was generated with another per_device_train_batch_size" in caplog.text
    assert losses(runs[True]) == losses(runs[False]) and max(losses(runs[True])) == 6
    assert all(torch.equal(a, b) for a, b in zip(runs[True].model.parameters(), runs[False].model.parameters()))


def test_a_checkpoint_inside_an_accumulation_window_resumes_at_the_windows_start(tmp_path):
    """A checkpoint written mid-window stores the window's first micro-step: the resume redoes it."""
    window = dict(gradient_accumulation_steps=2, steps_per_generation=4, max_steps=1)
    trainer = make_trainer(tmp_path, tiny_model_and_tokenizer(seed=0), dataset(), parts=True, **window)
    (callback,) = [c for c in trainer.callback_handler.callbacks if isinstance(c, RolloutCheckpointCallback)]
    assert trainer.callback_handler.callbacks[0] is callback  # before the completeness mark on the same save
    trainer.state.global_step, trainer._step = 5, 10  # micro-steps 10 and 11 make the window of optimizer step 6
    callback.on_step_begin(trainer.args, trainer.state, trainer.control)
    trainer._step = 11
    assert callback.rollout_step() == 10
    trainer.state.global_step = 6  # after that step: the next window starts at the current micro-step
    assert callback.rollout_step() == 11


class OptimizerAt(TrainerCallback):
    """Records, at each step's end, the first parameter group's settings and the scheduler's base rates."""

    def __init__(self):
        self.seen = {}

    def on_step_end(self, args, state, control, optimizer=None, lr_scheduler=None, **kwargs):
        group = optimizer.param_groups[0]
        settings = {k: group[k] for k in ("lr", "initial_lr", "weight_decay", "betas", "eps")}
        self.seen[state.global_step] = {**settings, "base_lrs": list(lr_scheduler.base_lrs)}


@pytest.mark.parametrize("kind", list(MAKERS))
def test_resume_trains_with_the_settings_it_was_given(tmp_path, kind):
    """A resume restores the optimizer state but trains with this run's settings, and says so."""
    old = dict(learning_rate=1e-2, weight_decay=0.0, adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8)
    new = dict(learning_rate=1e-3, weight_decay=0.1, adam_beta1=0.8, adam_beta2=0.95, adam_epsilon=1e-6)
    full = train(kind, tmp_path / "full", **old)
    train(kind, tmp_path / "cut", callbacks=[StopAt(3)], **old)
    seen = OptimizerAt()
    resumed = train(kind, tmp_path / "cut", callbacks=[seen], resume=str(tmp_path / "cut" / "out" / "checkpoint-3"),
                    **new)  # fmt: skip
    assert sorted(seen.seen) == [4, 5, 6]
    for step, settings in seen.seen.items():
        assert settings["initial_lr"] == settings["base_lrs"][0] == 1e-3, step
        assert (settings["weight_decay"], settings["betas"], settings["eps"]) == (0.1, (0.8, 0.95), 1e-6), step
    logged = {h["step"]: h["learning_rate"] for h in resumed.state.log_history if "learning_rate" in h}
    expected = {h["step"]: h["learning_rate"] / 10 for h in full.state.log_history if "learning_rate" in h}
    after = {s: v for s, v in logged.items() if s > 3}
    assert {s: pytest.approx(v, rel=1e-6) for s, v in expected.items() if s > 3} == after
    assert all(v > 0 for v in expected.values())
    assert resumed.args.learning_rate == 1e-3  # what the model card reports (`run.card`)


def test_under_deepspeed_a_changed_optimizer_setting_is_refused_in_one_line(tmp_path):
    """Under DeepSpeed a changed optimizer setting would not apply: refused in one line."""
    checkpoint = tmp_path / "checkpoint-4"
    checkpoint.mkdir()
    mark_complete(checkpoint, {"learning_rate": 0.01, "max_steps": 4})
    notes, refusal = resume_differences(checkpoint, {"learning_rate": 0.001, "max_steps": 8})
    assert refusal is None and len(notes) == 2
    _, refusal = resume_differences(checkpoint, {"learning_rate": 0.001, "max_steps": 8}, deepspeed=True)
    assert refusal == (
        f"--resume_from_checkpoint {checkpoint}: learning_rate is 0.001 here but 0.01 in the run that saved "
        "checkpoint-4, and under DeepSpeed the engine restores the optimizer as saved, so learning_rate 0.001 would "
        "not apply: set learning_rate back to 0.01, or resume without DeepSpeed."
    )
