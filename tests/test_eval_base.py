"""`up-trl eval` on a run folder scores the base model it was trained from beside it (same problems, samples and
seed), once: the base's scores are cached, keyed by the model and the settings (`up_trl.evaluation.base`)."""

import json

import pytest
from conftest import tiny_train_argv

from up_trl.cli.eval_command import main

EVAL = "--benchmarks gsm8k --k 2 --limit 2 --max_new_tokens 4".split()


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    """A 1-step `up-trl train` run of a tiny model: its run record names the base folder."""
    from up_trl.cli import train
    from up_trl.models.offline import save_tiny_model

    root = tmp_path_factory.mktemp("eval-base")
    base = save_tiny_model(root / "tiny-base")
    train(
        tiny_train_argv(base, root / "run", reward="tests.conftest.length_reward", max_steps=1, learning_rate="1e-1")
    )
    return root / "run", base


@pytest.fixture
def model_loads(monkeypatch, tmp_path):
    """The models `up-trl eval` loads, in order; the cache in an empty folder of this test."""
    from transformers import AutoModelForCausalLM

    monkeypatch.setenv("UP_TRL_CACHE", str(tmp_path / "cache"))
    loads, real = [], AutoModelForCausalLM.from_pretrained

    def recording(path, *args, **kwargs):
        loads.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", recording)
    return loads


def test_a_run_is_scored_beside_its_base_which_is_scored_once(run_folder, model_loads, tmp_path, capsys):
    run, base = run_folder
    assert main(["--model", str(run), *EVAL, "--output_dir", str(tmp_path / "first")]) == 0
    assert model_loads == [str(run), base]
    out = capsys.readouterr().out
    assert f"up-trl eval: base model: {base} (what {run} was trained from), scored beside it" in out
    report = json.loads((tmp_path / "first" / "eval.json").read_text())
    assert report["base"]["model"] == base and report["base"]["cached"] is False
    trained, before = report["benchmarks"]["gsm8k"], report["base"]["benchmarks"]["gsm8k"]
    assert before["problems"] == trained["problems"] == 2 and {"avg@2", "pass@2"} <= before.keys()
    table = (tmp_path / "first" / "eval.md").read_text()
    assert "| benchmark | model | problems |" in table and f"base model `{base}` beside it" in table
    rows = [line for line in table.splitlines() if line.startswith("| gsm8k |")]
    assert [row.split(" | ")[1] for row in rows] == ["evaluated", "base", "change"]
    change = float(rows[2].split(" | ")[3])  # avg@2, evaluated - base, as printed
    assert change == pytest.approx(float(rows[0].split(" | ")[3]) - float(rows[1].split(" | ")[3]), abs=1e-3)

    # Again, into another folder: the base's scores come from the cache; only the run is generated.
    assert main(["--model", str(run), *EVAL, "--output_dir", str(tmp_path / "second")]) == 0
    assert model_loads == [str(run), base, str(run)]
    again = json.loads((tmp_path / "second" / "eval.json").read_text())
    assert again["base"]["cached"] is True and again["base"]["benchmarks"] == report["base"]["benchmarks"]
    assert "read from the cache" in (tmp_path / "second" / "eval.md").read_text()

    # Other settings are another key: scored again.
    assert main(["--model", str(run), *EVAL, "--seed", "1", "--output_dir", str(tmp_path / "third")]) == 0
    assert model_loads[-2:] == [str(run), base]


def test_base_model_none_skips_it_and_a_base_that_is_gone_is_said_in_one_line(
    run_folder, model_loads, tmp_path, capsys
):
    run, base = run_folder
    assert main(["--model", str(run), *EVAL, "--base_model", "none", "--output_dir", str(tmp_path / "a")]) == 0
    assert model_loads == [str(run)] and "base" not in json.loads((tmp_path / "a" / "eval.json").read_text())

    moved = tmp_path / "moved-run"
    moved.mkdir()
    for path in run.iterdir():
        if path.is_file():
            (moved / path.name).write_bytes(path.read_bytes())
    record = json.loads((moved / "up_trl_run.json").read_text())
    (moved / "up_trl_run.json").write_text(json.dumps({**record, "base_model": str(tmp_path / "deleted-base")}))
    capsys.readouterr()
    assert main(["--model", str(moved), *EVAL, "--output_dir", str(tmp_path / "b")]) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if "base model" in line]
    assert notes == [
        f"up-trl eval: base model: not scored (its folder {tmp_path / 'deleted-base'} no longer exists); "
        f"showing {moved} only"
    ]
    assert model_loads[-1] == str(moved) and "base" not in json.loads((tmp_path / "b" / "eval.json").read_text())


def test_a_card_that_names_the_offline_smollm2_scores_its_local_copy(tmp_path, monkeypatch):
    """A run made with the Python API has a card, no run record: its `base_model` Hub id is the offline SmolLM2."""
    from up_trl.evaluation.base import loadable_base, recorded_base_model

    (tmp_path / "README.md").write_text("---\nbase_model: HuggingFaceTB/SmolLM2-135M-Instruct\n---\n# card\n")
    (tmp_path / "checkpoint-2").mkdir()
    assert recorded_base_model(str(tmp_path)) == recorded_base_model(str(tmp_path / "checkpoint-2"))
    assert recorded_base_model(str(tmp_path)) == "HuggingFaceTB/SmolLM2-135M-Instruct"
    monkeypatch.setattr("up_trl.models.offline.smollm2_path", lambda: "/cache/SmolLM2-135M-Instruct-float32")
    assert loadable_base("HuggingFaceTB/SmolLM2-135M-Instruct") == ("/cache/SmolLM2-135M-Instruct-float32", "")
    assert recorded_base_model(str(tmp_path / "nothing-here")) is None
