"""The early warning replayed on the committed collapse runs fires as docs/collapse.md reports."""

import json

import collapse  # benchmarks/collapse.py (pytest's pythonpath has benchmarks/)
import collapse_settings
import pytest
from conftest import ROOT

from up_trl import UPGRPOConfig

# setting: (failing runs the rule misses, false alarms on healthy runs), as docs/collapse.md reports them; the
# fresh-seed runs (safe_*) and seed 4's counterfactuals too.
MEASURED = {"stress": (1, 2), "toy": (0, 10), "smollm2": (0, 0), "safe_stress": (0, 3), "safe_toy": (2, 4),
            "seed4": (0, 4)}  # fmt: skip
FIRST_STUDY = ("stress", "toy", "smollm2")
# The two largest replays (400 and 120 runs) run in the slow tier only.
SETTINGS = [pytest.param(s, marks=pytest.mark.slow) if s.startswith("safe_") else s for s in MEASURED]


def _results(setting):
    path = ROOT / "benchmarks" / "results" / f"collapse_{setting}" / "results.json"
    if not path.exists():
        pytest.skip(f"{path} not committed")
    return collapse.read_report(path.parent)  # the records, with their curves from curves.parquet


@pytest.mark.parametrize("setting", SETTINGS)
def test_committed_report_is_what_the_recorded_curves_give(setting):
    results = _results(setting)
    report = collapse.warning_report(results["runs"])
    assert report == results["warning_report"]
    for run in results["runs"]:  # the pre-registered rules, recomputed from the stored finals
        assert run["collapsed"] == collapse.is_collapsed(run["final_accuracy"], run["final_entropy"])
        assert run["runaway"] == collapse.is_runaway(run["initial_entropy"], run["final_entropy"])


@pytest.mark.parametrize("setting", SETTINGS)
def test_warning_fires_on_failing_runs_and_not_on_healthy_ones(setting):
    report = _results(setting)["warning_report"]
    misses, false_alarms = MEASURED[setting]
    assert report["failing_runs"] - report["warned"] == misses
    assert report["false_alarms"] == false_alarms
    for row in report["per_failing_run"] if setting in FIRST_STUDY else ():  # the fresh toy has 2 it misses
        if row["collapsed"] and row["accuracy_fell_at"] is not None:  # a task lost: warned, before the run ends
            assert row["warned_at"] is not None


@pytest.mark.parametrize("setting", SETTINGS)
def test_distinct_failures_and_forecasts_are_what_the_curves_give(setting):
    results = _results(setting)
    assert collapse.distinct_failures(results["runs"]) == results["distinct_failures"]
    assert collapse.forecast_report(results["runs"]) == results["forecast_report"]


def test_the_dead_state_is_caught_at_its_step_and_safe_removes_it():
    """Seed 4: plain UP dies at step 9 and the warning names the dead state; UP + safe ends healthy."""
    runs = {run["config"]: run for run in _results("seed4")["runs"]}
    for family in ("DAPO", "GRPO"):
        assert runs[f"UP-{family}"]["collapsed"] and runs[f"UP-{family}"]["warning"] == [9, "dead state"]
        safe = runs[f"UP-{family} + safe"]
        assert not (safe["collapsed"] or safe["runaway"])


@pytest.mark.parametrize("setting", list(collapse.SETTINGS))
def test_every_config_a_setting_lists_still_runs(setting, tmp_path):
    """Each config a setting lists builds the trainer's config as `collapse.toy_run` passes it."""
    for name in collapse.SETTINGS[setting]["configs"]:
        settings = {"beta": 0.0, **collapse.CONFIGS[name], **collapse.LEVELS[16]}
        UPGRPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none", **settings)


def test_the_records_hold_only_runnable_configs_and_the_removed_guards_they_name():
    """The records' configs that no longer run are the first study's removed guards, in its records only."""
    removed = {f"UP-{f} + {g}" for f in collapse_settings.FAMILIES for g in collapse_settings.RECORDED_ONLY_GUARDS}
    for setting in MEASURED:
        path = ROOT / "benchmarks" / "results" / f"collapse_{setting}" / "results.json"
        recorded = {run["config"] for run in json.loads(path.read_text())["runs"]}  # the records, without curves
        assert recorded - set(collapse.CONFIGS) == (removed if setting in ("toy", "stress") else set()), setting
        assert recorded <= set(collapse_settings.REPORT_ORDER)  # `collapse.py --report_only` orders them


def test_a_setting_with_kept_curves_writes_and_holds_only_those(tmp_path):
    """A setting's `kept_curves` are what its records hold and a rerun writes; others keep every curve."""
    run = {"config": "UP-DAPO", "seed": 0, "level": 4, "curves": {"entropy": [[1, 1.25]], "grad_norm": [[1, 0.5]]}}
    collapse.write_report(tmp_path, {"runs": [run]}, ("entropy",))
    assert collapse.read_report(tmp_path)["runs"][0]["curves"] == {"entropy": [[1, 1.25]]}
    for setting, settings in collapse.SETTINGS.items():
        path = ROOT / "benchmarks" / "results" / f"collapse_{setting}" / "results.json"
        if "kept_curves" in settings and path.exists():
            kept = sorted(f"{key}_curve" for key in settings["kept_curves"])
            assert json.loads(path.read_text())["curve_keys"] == kept, setting
