"""`--overwrite_output_dir` never removes what the run reads, nor a run file a user changed since."""

import json

import pytest
from conftest import TINY, argv, one_line

from up_trl.run.folder import RUN_RECORD, check_output_dir, edited_since_written, write_run_record

QA = '{"problem": "What is 2 + 2?", "answer": "4"}\n'


def _previous_run(out, *, hashes=True):
    """A finished run in `out`: model files, a model card, metrics, checkpoint-2 (a model folder) and eval/."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text('{"model_type": "qwen2"}')
    (out / "model.safetensors").write_bytes(b"\0" * 64)
    (out / "README.md").write_text("---\nlibrary_name: transformers\n---\nthe card the run wrote\n")
    (out / "metrics.jsonl").write_text('{"step": 1, "loss": 0.5}\n')
    checkpoint = out / "checkpoint-2"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text('{"model_type": "qwen2"}')
    (checkpoint / "model.safetensors").write_bytes(b"\0" * 64)
    (checkpoint / "trainer_state.json").write_text('{"global_step": 2, "log_history": []}')
    (out / "eval").mkdir()
    (out / "eval" / "eval.json").write_text("{}")
    write_run_record(out, status="finished")
    if not hashes:  # a record written before hashes were kept
        record = json.loads((out / RUN_RECORD).read_text())
        record.pop("hashes")
        (out / RUN_RECORD).write_text(json.dumps(record))
    return out


def _before(out):
    return sorted(str(p.relative_to(out)) for p in out.rglob("*"))


@pytest.mark.parametrize("flag, make", [
    ("--model_name_or_path", lambda out: out / "checkpoint-2"),
    ("--dataset_name", lambda out: _write(out / "checkpoint-2" / "problems.jsonl", QA * 16)),
    ("--config", lambda out: _write(out / "eval" / "my_recipe.yaml", "use_cpu: true\nbf16: false\n")),
], ids=["model_is_a_checkpoint", "data_inside_a_checkpoint", "recipe_inside_eval"])  # fmt: skip
def test_overwrite_refuses_to_remove_what_the_run_reads(no_model_loads, capsys, flag, make):
    out = _previous_run(no_model_loads / "out")
    path = make(out)
    before = _before(out)
    line = one_line(capsys, argv(*TINY, "--overwrite_output_dir", f"{flag} {path}", output_dir=out))
    removed = "checkpoint-2" if "checkpoint-2" in str(path) else "eval"
    assert line == (
        f"--overwrite_output_dir would remove {out / removed}, which this run reads ({flag} {path}): move it out of "
        f"{out} first, or choose another --output_dir."
    ), line
    assert _before(out) == before  # nothing removed


def test_overwrite_refuses_to_remove_a_reward_module_it_imports(no_model_loads, capsys, monkeypatch):
    out = _previous_run(no_model_loads / "out")
    _write(out / "eval" / "my_reward.py", "def score(completions, **kwargs):\n    return [0.0] * len(completions)\n")
    monkeypatch.syspath_prepend(str(out / "eval"))
    before = _before(out)
    line = one_line(capsys, argv(*TINY, "--overwrite_output_dir", output_dir=out, reward_funcs="my_reward.score"))
    assert line.startswith(f"--overwrite_output_dir would remove {out / 'eval'}, which this run reads (--reward_funcs")
    assert _before(out) == before


def test_a_file_edited_since_the_run_wrote_it_is_the_users(tmp_path):
    out = _previous_run(tmp_path / "out")
    assert edited_since_written(out) == []
    assert "README.md" in json.loads((out / RUN_RECORD).read_text())["hashes"]
    assert "model.safetensors" not in json.loads((out / RUN_RECORD).read_text())["hashes"]  # weights go by name
    (out / "README.md").write_text("my own notes on this model\n")
    assert edited_since_written(out) == [out / "README.md"]
    with pytest.raises(ValueError) as refused:
        check_output_dir(str(out), overwrite=True, resume=None, model=None)
    assert str(refused.value) == (
        f"--output_dir {out}: README.md changed since the run wrote it, so it is yours now: move it out of the folder "
        "(--overwrite_output_dir would remove it), or choose another --output_dir."
    )
    assert (out / "README.md").read_text() == "my own notes on this model\n"


def test_records_without_hashes_and_unfinished_runs_are_read_as_before(tmp_path):
    out = _previous_run(tmp_path / "old", hashes=False)
    (out / "README.md").write_text("edited, but the record predates hashes\n")
    assert edited_since_written(out) == []
    assert out / "README.md" in check_output_dir(str(out), overwrite=True, resume=None, model=None)
    running = _previous_run(tmp_path / "killed")
    write_run_record(running, running=True, status="running")  # killed while it ran: its files moved on since
    (running / "metrics.jsonl").write_text('{"step": 1}\n{"step": 2}\n')
    assert edited_since_written(running) == []


def test_overwrite_through_the_cli_keeps_an_edited_model_card(no_model_loads, capsys):
    out = _previous_run(no_model_loads / "out")
    (out / "README.md").write_text("my edits\n")
    line = one_line(capsys, argv(*TINY, "--overwrite_output_dir", output_dir=out))
    assert line.startswith(f"--output_dir {out}: README.md changed since the run wrote it")
    assert (out / "README.md").read_text() == "my edits\n" and (out / "checkpoint-2").is_dir()


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
