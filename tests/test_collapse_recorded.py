"""The early warning on recorded curves: the committed collapse runs (benchmarks/results/collapse_*/results.json),
replayed through the shipped rule (`collapse_warning.CollapseRule`), fire on the collapsed and runaway runs and stay
quiet on the healthy ones, as docs/collapse.md reports; and each committed report is what its curves give.

The rule was chosen on the stress runs; the toy and SmolLM2 runs are the held-out test."""

from pathlib import Path

import collapse  # benchmarks/collapse.py (pytest's pythonpath has benchmarks/)
import pytest

ROOT = Path(__file__).resolve().parents[1]

# setting: (failing runs the rule misses, false alarms on healthy runs), as docs/collapse.md reports them.
MEASURED = {"stress": (1, 2), "toy": (0, 10), "smollm2": (0, 0)}


def _results(setting):
    path = ROOT / "benchmarks" / "results" / f"collapse_{setting}" / "results.json"
    if not path.exists():
        pytest.skip(f"{path} not committed")
    return collapse.read_report(path.parent)  # the records, with their curves from curves.parquet


@pytest.mark.parametrize("setting", list(MEASURED))
def test_committed_report_is_what_the_recorded_curves_give(setting):
    results = _results(setting)
    report = collapse.warning_report(results["runs"])
    assert report == results["warning_report"]
    for run in results["runs"]:  # the pre-registered rules, recomputed from the stored finals
        assert run["collapsed"] == collapse.is_collapsed(run["final_accuracy"], run["final_entropy"])
        assert run["runaway"] == collapse.is_runaway(run["initial_entropy"], run["final_entropy"])


@pytest.mark.parametrize("setting", list(MEASURED))
def test_warning_fires_on_failing_runs_and_not_on_healthy_ones(setting):
    report = _results(setting)["warning_report"]
    misses, false_alarms = MEASURED[setting]
    assert report["failing_runs"] - report["warned"] == misses
    assert report["false_alarms"] == false_alarms
    for row in report["per_failing_run"]:
        if row["collapsed"] and row["accuracy_fell_at"] is not None:  # a task lost: warned, before the run ends
            assert row["warned_at"] is not None
