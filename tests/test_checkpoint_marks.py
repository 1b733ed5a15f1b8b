"""Completion marks with several processes; `save_total_limit` rotates only after the new mark."""

import json
from types import SimpleNamespace

import pytest
import torch
from accelerate import PartialState
from conftest import tiny_train_argv

from up_trl.cli import main
from up_trl.run import callbacks as run_callbacks
from up_trl.run.callbacks import MarkCompleteCallback, rotate_complete
from up_trl.run.checkpoints import RolloutCheckpointCallback, checkpoint_problem, mark_complete, newest_complete
from up_trl.run.folder import check_output_dir, resolve_resume


def _rank_files(folder, rank: int, world_size: int) -> None:
    """What process `rank` writes itself: its RNG state and its share of the rollout batch."""
    rng = f"rng_state_{rank}.pth" if world_size > 1 else "rng_state.pth"
    for name in (rng, f"rollout_buffer_rank{rank}.pt"):
        torch.save({"state": torch.arange(8.0 + rank)}, folder / name)


def _main_files(folder) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": int(folder.name.split("-")[1])}))
    torch.save({"w": torch.arange(64.0)}, folder / "optimizer.pt")


def _checkpoint(folder, world_size: int = 1, marked=None) -> None:
    """A checkpoint saved by `world_size` processes; the ranks in `marked` (default: all) marked their files."""
    _main_files(folder)
    for rank in range(world_size):
        _rank_files(folder, rank, world_size)
    for rank in range(world_size) if marked is None else marked:
        mark_complete(folder, {"learning_rate": 0.01} if rank == 0 else None, rank=rank, world_size=world_size)


# --- Several processes: a checkpoint is complete when every process recorded in it has marked its files --------
def test_one_process_marks_every_file_as_before(tmp_path):
    _checkpoint(tmp_path / "checkpoint-1")
    mark = json.loads((tmp_path / "checkpoint-1" / "up_trl_checkpoint.json").read_text())
    assert sorted(mark["files"]) == ["optimizer.pt", "rng_state.pth", "rollout_buffer_rank0.pt", "trainer_state.json"]
    assert mark["world_size"] == 1 and checkpoint_problem(tmp_path / "checkpoint-1") is None


def test_each_process_marks_its_own_files(tmp_path):
    folder = tmp_path / "checkpoint-1"
    _checkpoint(folder, world_size=3)
    main = json.loads((folder / "up_trl_checkpoint.json").read_text())
    rank2 = json.loads((folder / "up_trl_checkpoint-rank2.json").read_text())
    files = ["optimizer.pt", "rng_state_0.pth", "rollout_buffer_rank0.pt", "trainer_state.json"]
    assert main["world_size"] == 3 and sorted(main["files"]) == files
    assert rank2["rank"] == 2 and sorted(rank2["files"]) == ["rng_state_2.pth", "rollout_buffer_rank2.pt"]
    assert checkpoint_problem(folder) is None


SPOILED = [
    pytest.param(lambda c: (c / "up_trl_checkpoint-rank1.json").unlink(),
                 "the save of process 1 of 2 did not finish: no up_trl_checkpoint-rank1.json",
                 id="process_1_not_marked"),
    pytest.param(lambda c: (c / "rollout_buffer_rank1.pt").unlink(), "rollout_buffer_rank1.pt is missing",
                 id="process_1_file_missing"),
    pytest.param(lambda c: (c / "rng_state_1.pth").write_bytes(b"PK"), "rng_state_1.pth has 2 bytes, not the",
                 id="process_1_file_cut"),
    pytest.param(lambda c: (c / "up_trl_checkpoint.json").unlink(), "its save did not finish",
                 id="main_process_not_marked"),
]  # fmt: skip


@pytest.mark.parametrize("spoil, why", SPOILED)
def test_a_checkpoint_misses_one_process_is_incomplete(tmp_path, spoil, why):
    _checkpoint(tmp_path / "checkpoint-1", world_size=2)
    _checkpoint(tmp_path / "checkpoint-2", world_size=2)
    spoil(tmp_path / "checkpoint-2")
    newest, skipped = newest_complete(tmp_path)
    assert newest == tmp_path / "checkpoint-1" and len(skipped) == 1 and why in skipped[0][1], skipped


def test_the_main_process_marking_first_is_not_complete_until_the_others_do(tmp_path):
    """Process 0's mark does not claim process 1's files: incomplete until process 1 marks its own."""
    folder = tmp_path / "checkpoint-1"
    _main_files(folder)
    _rank_files(folder, 0, 2)
    callback, state = MarkCompleteCallback(), SimpleNamespace(global_step=1, is_world_process_zero=True)
    args = SimpleNamespace(output_dir=str(tmp_path), to_dict=lambda: {}, process_index=0, world_size=2)
    callback.on_save(args, state, None)
    assert "rollout_buffer_rank1.pt" not in json.loads((folder / "up_trl_checkpoint.json").read_text())["files"]
    assert "process 1 of 2 did not finish" in checkpoint_problem(folder)
    _rank_files(folder, 1, 2)
    rank1 = SimpleNamespace(**(vars(args) | {"process_index": 1}))
    callback.on_save(rank1, SimpleNamespace(global_step=1, is_world_process_zero=False), None)
    assert checkpoint_problem(folder) is None
    rank1_files = json.loads((folder / "up_trl_checkpoint-rank1.json").read_text())["files"]
    assert rank1_files.keys() == {"rng_state_1.pth", "rollout_buffer_rank1.pt"}


def test_a_process_ahead_of_the_main_ones_save_still_marks_and_waits(tmp_path, monkeypatch):
    """`save_only_model` under DDP: process 1 writes no model file in the checkpoint and may reach `on_save` before
    process 0 has made the folder. It skipped its rollout batch, its mark (the checkpoint never complete: no rotation,
    no resume) and its barrier (process 0 waiting there for ever with `save_total_limit`)."""
    waits = []
    monkeypatch.setattr(PartialState, "wait_for_everyone", lambda self: waits.append(1))
    callback = MarkCompleteCallback()
    args = SimpleNamespace(output_dir=str(tmp_path), to_dict=lambda: {}, process_index=1, world_size=2)
    callback.on_train_begin(SimpleNamespace(save_total_limit=2), None, None)
    trainer = SimpleNamespace(_buffered_inputs=[{"x": torch.ones(1)}], _step=1, accelerator=SimpleNamespace(
        process_index=1), state=SimpleNamespace(global_step=1))  # fmt: skip
    process_1 = SimpleNamespace(global_step=1, is_world_process_zero=False)
    RolloutCheckpointCallback(trainer).on_save(args, process_1, None)  # first, as the mixin orders them
    callback.on_save(args, process_1, None)
    assert waits == [1]
    folder = tmp_path / "checkpoint-1"
    assert "rollout_buffer_rank1.pt" in json.loads((folder / "up_trl_checkpoint-rank1.json").read_text())["files"]
    _main_files(folder)  # process 0's save, then its mark
    main_process = SimpleNamespace(global_step=1, is_world_process_zero=True)
    MarkCompleteCallback().on_save(SimpleNamespace(**(vars(args) | {"process_index": 0})), main_process, None)
    assert checkpoint_problem(folder) is None


# --- save_total_limit: old checkpoints go after the new one is complete -------------------------------------------
@pytest.mark.parametrize("checkpoints, limit, best, kept", [
    pytest.param("cccc", 2, None, [3, 4], id="keeps_the_limit"),
    pytest.param("cccc", None, None, [1, 2, 3, 4], id="no_limit"),
    pytest.param("ccci", 2, None, [2, 3, 4], id="newest_unmarked_is_untouched_and_not_counted"),
    pytest.param("cicc", 2, None, [3, 4], id="older_incomplete_goes_first"),
    pytest.param("ccic", 3, None, [1, 2, 4], id="incomplete_before_complete"),
    pytest.param("cccc", 2, 1, [1, 4], id="best_kept"),
    pytest.param("cccc", 1, 2, [2, 4], id="best_and_newest_kept_past_a_limit_of_1"),
    pytest.param("iiii", 1, None, [1, 2, 3, 4], id="none_complete_nothing_deleted"),
])  # fmt: skip
def test_rotation_counts_from_the_newest_complete_checkpoint(tmp_path, checkpoints, limit, best, kept):
    """c: complete, i: incomplete (its mark not written yet), checkpoint-1 first."""
    for step, kind in enumerate(checkpoints, start=1):
        _checkpoint(tmp_path / f"checkpoint-{step}", marked=None if kind == "c" else [])
    rotate_complete(tmp_path, limit, None if best is None else str(tmp_path / f"checkpoint-{best}"))
    assert sorted(int(p.name.split("-")[1]) for p in tmp_path.glob("checkpoint-*")) == kept


def test_rotation_never_deletes_the_checkpoint_just_saved(tmp_path):
    """Resumed from an older checkpoint with limit 1, the save just written is kept and the older one goes."""
    for step in (20, 30, 25):
        _checkpoint(tmp_path / f"checkpoint-{step}", marked=None)
    rotate_complete(tmp_path, 1, None, saved=tmp_path / "checkpoint-25")
    assert sorted(p.name for p in tmp_path.glob("checkpoint-*")) == ["checkpoint-25", "checkpoint-30"]


def test_rotation_keeps_save_total_limit_complete_checkpoints(tiny_model, tmp_path):
    out = tmp_path / "out"
    assert main(["train", *tiny_train_argv(tiny_model, out, save_steps=1, max_steps=4, save_total_limit=2)]) == 0
    assert [p.name for p in sorted(out.glob("checkpoint-*"))] == ["checkpoint-3", "checkpoint-4"]
    for checkpoint in out.glob("checkpoint-*"):
        assert checkpoint_problem(checkpoint) is None
        assert json.loads((checkpoint / "up_trl_checkpoint.json").read_text())["settings"]["save_total_limit"] == 2
        saved_args = torch.load(checkpoint / "training_args.bin", weights_only=False)
        assert saved_args.save_total_limit == 2  # the run's limit, not the None lent to the Trainer
    assert torch.load(out / "training_args.bin", weights_only=False).save_total_limit == 2


class Killed(BaseException):
    """Stands for SIGKILL: nothing after it runs, no emergency checkpoint."""


def test_a_kill_before_the_mark_leaves_the_previous_checkpoint(tiny_model, tmp_path, monkeypatch):
    """Limit 1, killed before checkpoint-3's mark: checkpoint-2 survives and resume takes it."""
    real_mark = run_callbacks.mark_complete

    def mark_complete(folder, *args, **kwargs):
        if folder.name == "checkpoint-3":
            raise Killed
        return real_mark(folder, *args, **kwargs)

    monkeypatch.setattr(run_callbacks, "mark_complete", mark_complete)
    out = tmp_path / "out"
    with pytest.raises(Killed):
        main(["train", *tiny_train_argv(tiny_model, out, save_steps=1, max_steps=4, save_total_limit=1)])
    assert [p.name for p in sorted(out.glob("checkpoint-*"))] == ["checkpoint-2", "checkpoint-3"]
    assert (out / "checkpoint-3" / "trainer_state.json").exists()  # saved whole, but not marked
    assert resolve_resume("true", out) == str(out / "checkpoint-2")
    # The run record claimed what the run writes before it wrote it: all of the killed run is its, to overwrite.
    assert json.loads((out / "up_trl_run.json").read_text())["status"] == "running"
    remove = check_output_dir(str(out), overwrite=True, resume=None, model=None)
    assert sorted(p.name for p in remove) == sorted(p.name for p in out.iterdir())


def test_a_save_into_a_marked_folder_drops_its_old_mark_first(tmp_path):
    """Saving again into a marked folder first removes this process's old mark."""
    folder = tmp_path / "checkpoint-3"
    _checkpoint(folder, marked=None)
    assert checkpoint_problem(folder) is None
    args = SimpleNamespace(output_dir=str(tmp_path), process_index=0)
    MarkCompleteCallback().on_step_end(args, SimpleNamespace(global_step=3), SimpleNamespace(should_save=True))
    assert checkpoint_problem(folder) is not None
    _checkpoint(tmp_path / "checkpoint-4", marked=None)  # no save at this step: its mark stays
    MarkCompleteCallback().on_step_end(args, SimpleNamespace(global_step=4), SimpleNamespace(should_save=False))
    assert checkpoint_problem(tmp_path / "checkpoint-4") is None
