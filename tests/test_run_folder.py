"""A run's output folder: previous runs, resume, interrupts and crashes, each said in its last line."""

import json
import re
import shlex

import cli_rewards
import huggingface_hub
import pytest
import torch
import transformers
from conftest import tiny_train_argv
from safetensors.torch import load_file

from up_trl.cli import main
from up_trl.run.folder import check_output_dir, describe_run_files, remove_run_files, write_run_record


def loss_steps(out) -> list[int]:
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return [r["step"] for r in records if "loss" in r]


def last_line(text: str) -> str:
    return text.strip().splitlines()[-1]


def test_a_previous_run_is_refused_then_overwritten_without_mixing(tiny_model, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["train", *tiny_train_argv(tiny_model, out, max_steps=3)]) == 0
    assert loss_steps(out) == [1, 2, 3]
    record = json.loads((out / "up_trl_run.json").read_text())
    assert record["files"] == sorted(p.name for p in out.iterdir()) and "writing" not in record  # all it wrote
    assert {"README.md", "config.json", "model.safetensors", "metrics.jsonl", "tokenizer.json"} <= {*record["files"]}
    (out / "checkpoint-9").mkdir()  # an older run's checkpoint
    (out / "notes.txt").write_text("mine")  # not a run's file: kept
    capsys.readouterr()

    assert main(["train", *tiny_train_argv(tiny_model, out, max_steps=1)]) == 2
    assert last_line(capsys.readouterr().err) == (
        f"up-trl train: error: --output_dir {out} holds a previous run (model, metrics.jsonl, model card, 1 "
        "checkpoint): pass --overwrite_output_dir to replace it, --resume_from_checkpoint true to continue it, or "
        "another --output_dir."
    )
    assert loss_steps(out) == [1, 2, 3]  # nothing overwritten

    assert main(["train", *tiny_train_argv(tiny_model, out, "--overwrite_output_dir", max_steps=1)]) == 0
    assert f"up-trl: --overwrite_output_dir: removed the previous run in {out}" in capsys.readouterr().out
    assert loss_steps(out) == [1] and not (out / "checkpoint-9").exists() and (out / "notes.txt").read_text() == "mine"
    assert json.loads((out / "up_trl_run.json").read_text())["global_step"] == 1


RECORD = {
    "status": "finished",
    "patterns": ["checkpoint-[0-9]+", "model-[0-9]+-of-[0-9]+\\.safetensors", "pytorch_model-[0-9]+-of-[0-9]+\\.bin"],
    "files": ["README.md", "config.json", "metrics.jsonl", "model.safetensors", "up_trl_run.json"],
}
# A record left by a run killed before it ended: only the record written, the names it may write claimed.
RUNNING = {
    "status": "running",
    "files": ["up_trl_run.json"],
    "patterns": RECORD["patterns"],
    "writing": ["README.md", "metrics.jsonl", "trainer_state.json", "up_trl_run.json"],
}
CARD = "---\nlibrary_name: transformers\ntags:\n- generated_from_trainer\n---\nTrained with up-trl.\n"


# (the run record, the folder's files: see `_make_folder`, the names removed), space-separated.
OVERWRITES = [
    pytest.param(RECORD, "README.md config.json metrics.jsonl model.safetensors checkpoint-2/ eval/eval.json "
                 "notes.txt data/train.jsonl", "README.md checkpoint-2 config.json eval metrics.jsonl "
                 "model.safetensors up_trl_run.json", id="what_the_record_lists"),
    pytest.param(RUNNING, "metrics.jsonl checkpoint-1/ checkpoint-2/ notes.txt",
                 "checkpoint-1 checkpoint-2 metrics.jsonl up_trl_run.json", id="a_killed_run"),
    pytest.param({"status": "finished"}, "README.md=card config.json model.safetensors metrics.jsonl checkpoint-4/ "
                 "notes.txt", "README.md checkpoint-4 config.json metrics.jsonl model.safetensors up_trl_run.json",
                 id="an_earlier_up_trl_record_without_files"),
    pytest.param(None, "metrics.jsonl config.json tokenizer.json notes.txt",
                 "config.json metrics.jsonl tokenizer.json", id="an_earlier_up_trl_without_a_record"),
    pytest.param(None, "notes.txt data.jsonl", "", id="no_run"),
]  # fmt: skip


@pytest.mark.parametrize("record, files, removed", OVERWRITES)
def test_overwrite_removes_only_what_a_run_wrote(tmp_path, record, files, removed):
    """--overwrite_output_dir removes what the previous run's record lists, nothing else."""
    _make_folder(tmp_path, record, files.split())
    remove = check_output_dir(str(tmp_path), overwrite=True, resume=None, model=None)
    assert sorted(p.name for p in remove) == removed.split()
    before = {p.name for p in tmp_path.iterdir()}
    remove_run_files(remove)
    assert {p.name for p in tmp_path.iterdir()} == before - set(removed.split())  # notes.txt, data/ stay


def test_overwrite_removes_trls_completion_tables(tmp_path):
    """--log_completions's completions/ is the run's: listed, removed whole, named (it was left to mix)."""
    _make_folder(tmp_path, None, "metrics.jsonl completions/completions_00001.parquet notes.txt".split())
    write_run_record(tmp_path, status="finished")
    assert "completions" in json.loads((tmp_path / "up_trl_run.json").read_text())["files"]
    remove = check_output_dir(str(tmp_path), overwrite=True, resume=None, model=None)
    assert describe_run_files(remove) == "metrics.jsonl, completions/"
    remove_run_files(remove)
    assert {p.name for p in tmp_path.iterdir()} == {"notes.txt"}


REFUSALS = [
    pytest.param(RECORD, "README.md config.json tokenizer.json", "tokenizer.json", id="not_in_the_record"),
    pytest.param({"status": "finished"}, "README.md=mine config.json metrics.jsonl", "README.md",
                 id="earlier_up_trl_with_your_readme"),
    pytest.param(None, "README.md=mine config.json tokenizer.json notes.txt", "README.md, config.json, tokenizer.json",
                 id="your_files_and_no_run"),
    pytest.param(None, "checkpoint-5/ model.safetensors", "checkpoint-5/, model.safetensors",
                 id="a_plain_trainer_folder"),
]  # fmt: skip


@pytest.mark.parametrize("record, files, named", REFUSALS)
@pytest.mark.parametrize("overwrite", [False, True])
def test_files_no_run_record_lists_are_refused(tmp_path, record, files, named, overwrite):
    _make_folder(tmp_path, record, files.split())
    message = f"holds {named}, which this run would write over and no up-trl run wrote (no run record lists them)"
    with pytest.raises(ValueError, match=re.escape(message + ": move them")):
        check_output_dir(str(tmp_path), overwrite=overwrite, resume=None, model=None)


def _make_folder(folder, record, files) -> None:
    """`name/` a folder, `a/b` a file in one, `README.md=card` an up-trl model card, `=mine` another README."""
    if record is not None:
        (folder / "up_trl_run.json").write_text(json.dumps(record))
    for name in files:
        name, _, kind = name.partition("=")
        path = folder / name
        if name.endswith("/"):
            path.mkdir(parents=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(CARD if kind == "card" else "# my notes\n" if kind == "mine" else "{}")


def test_push_to_hub_uploads_the_run_and_not_its_lock(tiny_model, tmp_path, monkeypatch):
    """`--push_to_hub` through the Hub client's own `upload_folder` (its file choice), with the calls that need the
    network replaced: the lock file, held while the run pushes, stays out ('_*', as transformers ignores it)."""
    commits = []

    class OfflineHub(huggingface_hub.HfApi):
        def create_repo(self, repo_id, **kwargs):
            return huggingface_hub.RepoUrl(f"https://huggingface.co/{repo_id}")

        def _validate_yaml(self, content, **kwargs):  # the card's metadata, checked by the Hub
            assert content.startswith("---\n")

        def create_commit(self, repo_id, operations, **kwargs):
            commits.append(sorted(operation.path_in_repo for operation in operations))

    monkeypatch.setattr(huggingface_hub.hf_api, "is_xet_available", lambda: False)  # the one-commit upload
    monkeypatch.setattr(transformers.trainer, "hf_api", lambda: OfflineHub(token="hf_offline"))
    out = tmp_path / "out"
    flags = tiny_train_argv(tiny_model, out, push_to_hub="true", hub_model_id="you/tiny-up", save_steps=1, max_steps=1)
    assert main(["train", *flags]) == 0
    assert len(commits) == 3  # at the save of checkpoint-1, by `save_model` and by `push_to_hub`, as in `trl grpo`
    assert {"README.md", "model.safetensors", "metrics.jsonl", "up_trl_run.json"} <= set(commits[-1])
    assert not [name for files in commits for name in files if "lock" in name or "checkpoint-" in name], commits
    assert not list(out.glob("*lock"))  # released at the end


def test_save_steps_alone_saves_and_resume_true_continues_from_the_latest_checkpoint(tiny_model, tmp_path, capsys):
    """The offline default says save_strategy "no"; `--save_steps` on the command line used to save nothing."""
    out = tmp_path / "out"
    assert main(["train", *tiny_train_argv(tiny_model, out, save_steps=1, max_steps=2)]) == 0
    assert (out / "checkpoint-1" / "trainer_state.json").exists() and (out / "checkpoint-2").is_dir()
    assert "up-trl: a checkpoint every 1 steps (--save_steps sets save_strategy steps)" in capsys.readouterr().out
    assert main(["train", *tiny_train_argv(tiny_model, out, resume_from_checkpoint="true", max_steps=3)]) == 0
    assert re.search(r"up-trl: done in [\d.]+ min, 3 steps", capsys.readouterr().out)
    assert loss_steps(out) == [1, 2, 3]  # the records up to checkpoint-2 kept, step 3 added
    assert json.loads((out / "up_trl_run.json").read_text())["global_step"] == 3


def test_a_crash_with_save_total_limit_keeps_the_emergency_checkpoint_with_the_limit(tiny_model, tmp_path, capsys):
    """The emergency save is marked, rotated as any save, and holds the run's save_total_limit."""
    out = tmp_path / "out"
    flags = dict(save_steps=3, save_total_limit=1, reward="cli_rewards.third_call_raises", max_steps=6)
    assert main(["train", *tiny_train_argv(tiny_model, out, **flags)]) == 1
    assert "emergency checkpoint of the weights after step 4" in last_line(capsys.readouterr().err)
    assert sorted(p.name for p in out.glob("checkpoint-*")) == ["checkpoint-4"]
    assert torch.load(out / "checkpoint-4" / "training_args.bin", weights_only=False).save_total_limit == 1


@pytest.mark.parametrize("guard, expected", [
    # lr 1e30: step 2's gradients are not finite (skipped), then generation samples from inf/nan probabilities.
    pytest.param({}, r"emergency checkpoint of the weights after step 2 in .*checkpoint-2; metrics in .*; 1 step\(s\) "
                 r"were skipped as non-finite before it: lower --learning_rate\. Resume with: ", id="guard_on"),
    pytest.param(dict(skip_nonfinite_steps=False), r"no emergency checkpoint: the weights after step 2 are not "
                 r"finite \(NaN or inf: lower --learning_rate\); metrics in [^ ]*metrics.jsonl$", id="guard_off"),
])  # fmt: skip
def test_diverging_weights_end_in_one_line_saying_what_was_saved(tiny_model, tmp_path, capsys, guard, expected):
    out = tmp_path / "out"
    assert main(["train", *tiny_train_argv(tiny_model, out, learning_rate="1e30", max_steps=6, **guard)]) == 1
    line = last_line(capsys.readouterr().err)
    assert line.startswith("up-trl train: error: crashed at step 3 of 6 (RuntimeError: probability tensor"), line
    assert re.search(expected, line), line
    assert (out / "checkpoint-2").is_dir() == (not guard) and loss_steps(out)[:2] == [1, 2]


def test_an_interrupted_run_says_so_and_how_to_resume(tiny_model, tmp_path, capsys):
    """Ctrl-C during step 1: a checkpoint at the end of step 1, then the last line and the card say so."""
    out = tmp_path / "out"
    argv = tiny_train_argv(tiny_model, out, reward="cli_rewards.first_call_sends_sigint", max_steps=4)
    assert main(["train", *argv]) == 0
    resume = shlex.join(["up-trl", "train", *argv, "--resume_from_checkpoint", "true"])
    line = last_line(capsys.readouterr().out)
    expected = (
        r"up-trl: interrupted \(SIGINT\) at step 1 of 4 after [\d.]+ min: reward [\d.]+ -> [\d.]+ \(first -> last "
        rf"step\); checkpoint-1, model, metrics.jsonl, model card \(README.md\) in {re.escape(str(out))}\. Resume "
        rf"with: {re.escape(resume)}"
    )
    assert re.fullmatch(expected, line), line
    card = (out / "README.md").read_text()
    assert "**This run was interrupted (SIGINT) at step 1 of 4**" in card and f"Resume it with `{resume}`." in card
    assert (out / "checkpoint-1" / "trainer_state.json").exists()
    assert json.loads((out / "up_trl_run.json").read_text())["status"] == "interrupted"


def test_a_crash_before_the_first_step_leaves_nothing_to_refuse_a_rerun(tiny_model, tmp_path, capsys):
    out = tmp_path / "out"
    argv = tiny_train_argv(tiny_model, out, reward="cli_rewards.third_call_raises")
    cli_rewards.CALLS["count"] = 2  # its very first call raises, the next ones score
    assert main(["train", *argv]) == 1
    assert last_line(capsys.readouterr().err).endswith("nothing to save: no optimizer step had finished")
    assert main(["train", *argv]) == 0  # the same command again: not refused as "a previous run"


def test_a_crash_saves_an_emergency_checkpoint_and_its_resume_command_continues_the_same_run(
    tiny_model, tmp_path, capsys
):
    """A reward raising on its 3rd call (step 5): the printed resume gives the uninterrupted run's trajectory."""

    def per_step(out, key):
        records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
        return {r["step"]: r[key] for r in records if r.get(key) is not None and "train_runtime" not in r}

    full, out = tmp_path / "full", tmp_path / "out"
    assert main(["train", *tiny_train_argv(tiny_model, full, max_steps=6)]) == 0
    capsys.readouterr()
    argv = tiny_train_argv(tiny_model, out, reward="cli_rewards.third_call_raises", max_steps=6)
    assert main(["train", *argv]) == 1  # steps 1, 3, 5 generate: 4 steps trained
    err = capsys.readouterr().err
    assert "Traceback" in err and "RuntimeError: verifier unreachable" in err  # where the reward broke
    line = last_line(err)
    resume = shlex.join(["up-trl", "train", *argv, "--resume_from_checkpoint", "true"])
    assert line == (
        "up-trl train: error: crashed at step 5 of 6 (RuntimeError: verifier unreachable); emergency checkpoint of "
        f"the weights after step 4 in {out}/checkpoint-4; metrics in {out}/metrics.jsonl. Resume with: {resume}"
    )
    assert (out / "checkpoint-4" / "trainer_state.json").exists() and (out / "checkpoint-4" / "optimizer.pt").exists()
    assert loss_steps(out) == [1, 2, 3, 4]
    assert json.loads((out / "up_trl_run.json").read_text())["status"] == "crashed"
    assert "**This run crashed (RuntimeError) in step 5 of 6**" in (out / "README.md").read_text()

    # The printed command resumes it (the reward's 3rd call has passed: it scores again).
    assert main(shlex.split(line.split("Resume with: ", 1)[1])[1:]) == 0
    assert loss_steps(out) == [1, 2, 3, 4, 5, 6] and (out / "model.safetensors").exists()
    for key in ("loss", "reward", "completions/mean_length"):
        want, got = per_step(full, key), per_step(out, key)
        assert want.keys() == got.keys() and max(want) >= 5, key  # steps 5 and 6 come after the crash
        for step in want:
            assert got[step] == pytest.approx(want[step], rel=1e-4, abs=1e-6), (key, step)
    weights_full, weights_cut = load_file(full / "model.safetensors"), load_file(out / "model.safetensors")
    for name, tensor in weights_full.items():
        assert torch.allclose(tensor, weights_cut[name], rtol=1e-4, atol=1e-6), name


def test_overwrite_leaves_names_that_only_look_like_a_runs(tmp_path):
    """checkpoint-6.keep/ or model-final.safetensors are a user's: neither removed nor refused."""
    out = tmp_path / "run"
    for name in ("checkpoint-6", "checkpoint-6.keep", "checkpoint-6-backup"):
        (out / name).mkdir(parents=True)
    for name in ("model-final.safetensors", "model-00001-of-00002.safetensors", "metrics.jsonl"):
        (out / name).write_text("x")
    (out / "up_trl_run.json").write_text(json.dumps({**RECORD, "files": ["metrics.jsonl", "up_trl_run.json"]}))
    removed = {p.name for p in check_output_dir(str(out), overwrite=True, resume=None, model=None)}
    assert removed == {"checkpoint-6", "model-00001-of-00002.safetensors", "metrics.jsonl", "up_trl_run.json"}
