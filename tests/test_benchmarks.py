"""The benchmark scripts run end to end at toy sizes (their published figures come from full runs)."""

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as an import would: worker processes find its functions by module name
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_overhead_prints_ratios():
    result = _load("overhead").main(["--hidden_size", "32", "--num_layers", "1", "--completion_length", "16",
                                     "--prompt_length", "8", "--steps", "2", "--threads", "1"])  # fmt: skip
    assert result["step_time_ratio"] > 0 and result["peak_memory_ratio"] > 0
    assert result["memory_measure"] == "bytes saved for backward"
    assert "CPU" in result["machine"] or "cpu" in result["machine"]


@pytest.mark.slow
def test_sample_efficiency_writes_json_plot_and_table(tmp_path):
    report = _load("sample_efficiency").main(["--seeds", "0", "--max_steps", "8", "--configs", "DAPO", "UP-DAPO",
                                              "--output_dir", str(tmp_path)])  # fmt: skip
    out = tmp_path / "none"
    assert json.loads((out / "results.json").read_text())["summary"] == json.loads(json.dumps(report["summary"]))
    assert [row["config"] for row in report["summary"]] == ["DAPO", "UP-DAPO"]
    assert (out / "curves.png").read_bytes()[:4] == b"\x89PNG"
    assert "| UP-DAPO |" in (out / "table.md").read_text()


@pytest.mark.slow
def test_learning_signal_on_a_tiny_model(tmp_path, capsys):
    from up_trl.models import save_tiny_model

    path = save_tiny_model(tmp_path / "tiny")
    _load("learning_signal").main(["--model_name_or_path", path, "--num_prompts", "2", "--num_generations", "2",
                                   "--max_completion_length", "4", "--threads", "1"])  # fmt: skip
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["num_prompts"] == 2 and 0 <= result["groups_with_reward_spread"] <= 1


@pytest.mark.slow
def test_staleness_sweep_pairs_coincide_on_policy_and_differ_off_policy(tmp_path, capsys):
    report = _load("staleness_sweep").main(["--quick", "--output_dir", str(tmp_path)])
    # 1 update per rollout: the ratio is exactly 1, so UP-DAPO's curves are DAPO's (loss up to float32 rounding).
    check = report["on_policy_check"]
    assert check["checked"] == 1 and check["coincide"] == 1
    assert check["per_seed"][0]["max_abs_difference"]["accuracy_curve"] == 0.0
    # 4 updates per rollout: from the 2nd mini-batch on the ratio is not 1, and UP's positive term has the value
    # -A (self-anchored ratio) where DAPO's has -min(r, clip(r)) A: the losses differ far beyond rounding.
    stale = {r["config"]: r["loss_curve"] for r in report["runs"] if r["level"] == 4}
    assert max(abs(a - b) for (_, a), (_, b) in zip(stale["DAPO"], stale["UP-DAPO"])) > 1e-4
    assert report["levels"]["4"] == {"per_device_train_batch_size": 32, "steps_per_generation": 4,
                                     "num_iterations": 1, "updates_per_rollout": 4}  # fmt: skip
    assert [(row["pair"], row["updates_per_rollout"]) for row in report["summary"]] == [("DAPO", 1), ("DAPO", 4)]
    assert json.loads((tmp_path / "results.json").read_text())["summary"] == json.loads(json.dumps(report["summary"]))
    assert (tmp_path / "staleness.png").read_bytes()[:4] == b"\x89PNG"
    assert "| DAPO vs UP-DAPO | 4 |" in (tmp_path / "table.md").read_text()
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert last["on_policy_coincide"] == "1/1" and last["runs"] == 4
