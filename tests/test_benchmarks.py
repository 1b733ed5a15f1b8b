"""The benchmark scripts run end to end at toy sizes (their published figures come from full runs)."""

import ast
import json
import os
import statistics
import subprocess
import sys
from importlib import import_module as _load  # benchmarks/<name>.py (pytest's pythonpath has benchmarks/)
from types import SimpleNamespace

import pytest
import torch
from conftest import ROOT, argv

import up_trl.models.offline
from up_trl.cli import parse_train_args
from up_trl.models.offline import tiny_tokenizer
from up_trl.trainers.collapse_warning import UP_ADVICE
from up_trl.trainers.grpo_trainer import UPGRPOTrainer


@pytest.mark.slow
def test_overhead_prints_ratios():
    flags = "--hidden_size 32 --num_layers 1 --completion_length 16 --prompt_length 8 --steps 2 --threads 1"
    result = _load("overhead").main(flags.split())
    assert result["step_time_ratio"] > 0 and result["peak_memory_ratio"] > 0
    assert result["memory_measure"] == "bytes saved for backward"
    assert "CPU" in result["machine"] or "cpu" in result["machine"]


@pytest.mark.slow
def test_sample_efficiency_writes_json_plot_and_table(tmp_path):
    """The DAPO and RLOO pairs on the same task; off-policy, UP-RLOO's loss leaves its parent's."""
    names = ["DAPO", "UP-DAPO", "RLOO", "UP-RLOO"]
    report = _load("sample_efficiency").main(argv("--seeds 0 --max_steps 8", configs=names, output_dir=tmp_path))
    out = tmp_path / "none"
    assert json.loads((out / "results.json").read_text())["summary"] == json.loads(json.dumps(report["summary"]))
    assert [row["config"] for row in report["summary"]] == names
    assert (out / "curves.png").read_bytes()[:4] == b"\x89PNG"
    assert "| UP-DAPO |" in (out / "table.md").read_text() and "| UP-RLOO |" in (out / "table.md").read_text()
    runs = {r["config"]: r for r in report["runs"]}
    # Same warm start, same seed: the first rollout batch (sampled before any update) is the same one.
    assert runs["RLOO"]["accuracy_curve"][0] == runs["UP-RLOO"]["accuracy_curve"][0]
    losses = zip(runs["RLOO"]["loss_curve"], runs["UP-RLOO"]["loss_curve"], strict=True)
    assert max(abs(a - b) for (_, a), (_, b) in losses) > 1e-4
    assert runs["RLOO"]["staleness_mean"] is None


@pytest.mark.parametrize(
    "gpu, flags, message",
    [(False, [], "need a CUDA GPU and a vLLM server"), (True, ["--corruption", "flip20"], "--corruption none and")],
)
def test_sample_efficiency_async_pair_refuses_before_building_a_model(capsys, monkeypatch, gpu, flags, message):
    """Without a GPU and a vLLM server, or with corrupted rewards (past the GPU check): refused, no model built."""
    if gpu:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    with pytest.raises(SystemExit):
        _load("sample_efficiency").main(argv("--configs AsyncGRPO", *flags))
    assert message in capsys.readouterr().err


@pytest.mark.slow
def test_learning_signal_on_a_tiny_model(tiny_model, capsys):
    flags = "--num_prompts 2 --num_generations 2 --max_completion_length 4 --threads 1"
    _load("learning_signal").main(argv(flags, model_name_or_path=tiny_model))
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["num_prompts"] == 2 and 0 <= result["groups_with_reward_spread"] <= 1
    assert result["unscored"] == 0 and 0 <= result["accuracy"] <= 1  # every gold parses: all 4 replies scored


# The categories the issue asks the scorer benchmark to cover (right forms, answer shapes, wrong perturbations).
SCORER_CATEGORIES = set(
    "boxed phrase_latex phrase_plain answer_colon hash fraction_decimal assignment units thousands_separator "
    "polynomial_constant polynomial_coefficient opposite_sign echoed_question hedged retraction partial".split()
)
SCORER_GOLD_TYPES = {"integer", "fraction", "decimal", "interval", "tuple", "matrix", "text", "units", "thousands"}


def test_scorer_cases_cover_the_issue():
    lines = (ROOT / "benchmarks" / "data" / "scorer_cases.jsonl").read_text().splitlines()
    cases = [json.loads(line) for line in lines]
    assert len(cases) >= 300
    assert {c["label"] for c in cases} == {0, 1}
    assert 0.35 < sum(c["label"] for c in cases) / len(cases) < 0.65  # roughly balanced
    assert SCORER_CATEGORIES <= {c["category"] for c in cases}
    assert SCORER_GOLD_TYPES <= {c["gold_type"] for c in cases}
    pairs = [(c["completion"], c["gold"]) for c in cases]
    assert len(set(pairs)) == len(pairs), "duplicate (completion, gold) pairs"
    assert {c["source"].split(":")[0] for c in cases} == {"math500", "gsm8k", "issue8"}
    issue = {(c["completion"], c["gold"]): c["label"] for c in cases if c["source"] == "issue8"}
    assert issue[("The answer is 2x + 3.", "3")] == 0 and issue[("The answer is 2x + 3.", "$2x+3$")] == 1
    assert issue[("Answer: 3n + 12", "12")] == 0 and issue[("The answer is 5 - 2i.", "2")] == 0


@pytest.mark.parametrize("name, least, blind2", [("heldout", 200, False), ("blind2", 250, True)])
def test_scorer_heldout_and_blind2_cases_format(name, least, blind2):
    """The held-out and second blind sets (provenance on docs/benchmarks/scorer.md): a format check, not a score."""
    lines = (ROOT / f"benchmarks/data/scorer_cases_{name}.jsonl").read_text().splitlines()
    cases = [json.loads(line) for line in lines]
    assert len(cases) >= least and {c["label"] for c in cases} == {0, 1}
    assert all({"completion", "gold", "label", "category", "source"} <= c.keys() for c in cases)
    pairs = [(c["completion"], c["gold"]) for c in cases]
    assert len(set(pairs)) == len(pairs), "duplicate (completion, gold) pairs"
    if blind2:  # about half right, half wrong
        assert 0.4 < sum(c["label"] for c in cases) / len(cases) < 0.6
        assert {c["source"].split(":")[0] for c in cases} == {"math500", "gsm8k"}


def test_scorer_cases_generator_is_deterministic(tmp_path):
    _load("make_scorer_cases").main(argv(output=tmp_path / "cases.jsonl"))
    assert (tmp_path / "cases.jsonl").read_text() == (ROOT / "benchmarks" / "data" / "scorer_cases.jsonl").read_text()


@pytest.mark.slow
def test_scorer_smoke_run(capsys):
    _load("scorer").main(argv("--limit 20 --scorers up-trl trl math-verify"))
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["cases"] == 20 and result["right"] + result["wrong"] == 20
    for name in ("up-trl", "trl", "math-verify"):
        m = result[name]
        counts = ("true_positives", "false_positives", "false_negatives", "true_negatives", "skipped")
        assert sum(m[k] for k in counts) == 20
        assert m["items_per_s"] > 0
    assert "CPU" in result["machine"]


@pytest.mark.slow
def test_reward_throughput_quick(capsys):
    result = _load("reward_throughput").main(["--quick"])
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == result
    assert result["completions"] == 160 and result["right"] == 120 and result["wrong"] == 40
    assert result["timeouts"] == 0 and result["wrong_scored_correct"] == 0
    assert result["right_scored_correct"] >= 100 and result["items_per_s"] > 0


@pytest.mark.slow
def test_gpu_suite_dry_run_writes_json_and_png(tmp_path):
    """The dry run's A/B pairs, the "+ safe" one giving the rare clip to UP only, overhead and KL cost."""
    report = _load("gpu_suite").main(argv("--dry_run", pairs=["DAPO", "DAPO + safe"], output_dir=tmp_path))
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["dry_run"] is True and set(saved["overhead"]) == {"token", "sequence"}
    for level in ("token", "sequence"):
        assert saved["overhead"][level]["step_time_ratio"] > 0 and saved["overhead"][level]["peak_memory_ratio"] > 0
    assert [(row["pair"], row["seeds"]) for row in report["ab"]["summary"]] == [("DAPO", [0]), ("DAPO + safe", [0])]
    # Paired: one parent run and one UP run per seed, on the same seed.
    runs = [r for r in report["ab"]["runs"] if r["config"] in ("DAPO", "UP-DAPO")]
    assert sorted((r["up_mode"], r["seed"]) for r in runs) == [("asymmetric", 0), ("off", 0)]
    assert len(report["ab"]["runs"]) == 4  # those two and the "+ safe" pair's
    arms = {r["config"]: (r["beta"], r["up_positive_min_prob"]) for r in report["ab"]["runs"] if "safe" in r["config"]}
    assert arms == {"DAPO + safe": (0.0, None), "UP-DAPO + safe": (0.0, 0.05)}
    assert report["kl_cost"]["step_time_ratio"] > 0 and len(report["kl_cost"]["runs"]) == 2  # beta 0.05 and 0
    assert (tmp_path / "suite.png").read_bytes()[:4] == b"\x89PNG"


def test_step_profile_splits_a_step_into_phases():
    module = _load("step_profile")
    steps = [{**dict.fromkeys(module.PHASES, 1.0), "total": 7.0}, {**dict.fromkeys(module.PHASES, 3.0), "total": 21.0}]
    assert module.mean_per_step(steps) == {**dict.fromkeys(module.PHASES, 2.0), "total": 14.0}
    assert module.split_flags("--threads 1 --bf16 true") == (["--bf16", "true"], {"threads": 1})


@pytest.mark.slow
def test_step_profile_compare_interleaves_two_trainings(tmp_path, tiny_model):
    flags = (
        f"--model_name_or_path {tiny_model} --num_generations 2 --per_device_train_batch_size 4 "
        "--max_completion_length 4 --dataset_limit 16 --threads 1"
    )
    pair = dict(a_flags=f"{flags} --bf16 false", b_flags=f"{flags} --bf16 false", output=tmp_path / "r.json")
    report = _load("step_profile").main(argv("--compare --cycles 2", **pair))
    for name in ("A", "B"):
        assert len(report[name]["step_s_per_cycle"]) == 1  # 2 cycles, the first one a warm-up
        breakdown = report[name]["breakdown_s_per_step"]
        assert breakdown["generation"] > 0 and breakdown["backward"] > 0 and breakdown["old_logps"] > 0
        assert report[name]["dtype"] == "float32" and report[name]["torch_threads"] == 1
    # The same flags and seed: the same sampled completions, so the same rewards (logged once per generation).
    assert report["same_rewards"] and len(report["A"]["rewards"]) == 2  # one per generation
    assert json.loads((tmp_path / "r.json").read_text())["speedup"] == report["speedup"]
    # Where it ran: the machine in bench's words (no worker pool here) and the commit, as every benchmark records.
    assert "cores" in report["machine"] and "worker" not in report["machine"] and "commit" in report


@pytest.mark.slow
def test_staleness_sweep_pairs_coincide_on_policy_and_differ_off_policy(tmp_path, capsys):
    report = _load("staleness_sweep").main(argv("--quick", output_dir=tmp_path))
    # 1 update per rollout: the ratio is exactly 1, so UP-DAPO's curves are DAPO's (loss up to float32 rounding).
    check = report["on_policy_check"]
    assert check["checked"] == 1 and check["coincide"] == 1
    assert check["per_seed"][0]["max_abs_difference"]["accuracy_curve"] == 0.0
    # 4 updates per rollout: from the 2nd mini-batch on the ratio is not 1, and UP's positive term has the value
    # -A (self-anchored ratio) where DAPO's has -min(r, clip(r)) A: the losses differ far beyond rounding.
    stale = {r["config"]: r["loss_curve"] for r in report["runs"] if r["level"] == 4}
    assert max(abs(a - b) for (_, a), (_, b) in zip(stale["DAPO"], stale["UP-DAPO"])) > 1e-4
    level = dict(per_device_train_batch_size=32, steps_per_generation=4, num_iterations=1, updates_per_rollout=4)
    assert report["levels"]["4"] == level
    assert [(row["pair"], row["updates_per_rollout"]) for row in report["summary"]] == [("DAPO", 1), ("DAPO", 4)]
    assert json.loads((tmp_path / "results.json").read_text())["summary"] == json.loads(json.dumps(report["summary"]))
    assert (tmp_path / "staleness.png").read_bytes()[:4] == b"\x89PNG"
    assert "| DAPO vs UP-DAPO | 4 |" in (tmp_path / "table.md").read_text()
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert last["on_policy_coincide"] == "1/1" and last["runs"] == 4


def _real_run(pair, up, seed, avg, pass_):
    return dict(pair=pair, config=("UP-" if up else "") + pair, seed=seed, after={"avg@4": avg, "pass@4": pass_})


def test_real_model_summary_pairs_seeds_counts_wins_and_states_mean_std():
    """Fake runs: UP-DAPO - DAPO on avg@4 is +0.1, -0.1, +0.2 on seeds 0-2 (seed 3 has no UP run: left out)."""
    module = _load("real_model")
    rows = [  # (pair, UP?, seed, avg@4, pass@4): a seed's parent run, then its UP run
        ("DAPO", False, 0, 0.2, 0.5), ("DAPO", True, 0, 0.3, 0.5),
        ("DAPO", False, 1, 0.4, 0.75), ("DAPO", True, 1, 0.3, 0.5),
        ("DAPO", False, 2, 0.25, 0.5), ("DAPO", True, 2, 0.45, 1.0),
        ("DAPO", False, 3, 0.9, 1.0),
        ("GSPO", False, 0, 0.1, 0.25), ("GSPO", True, 0, 0.1, 0.5),
    ]  # fmt: skip
    runs = [_real_run(*r) for r in rows]
    dapo, gspo = module.summarise(runs, ["DAPO", "GSPO"], 4)
    assert dapo["paired_seeds"] == 3 and [r["seed"] for r in dapo["per_seed"]] == [0, 1, 2]
    assert (dapo["up_won"], dapo["ties"], dapo["up_lost"]) == (2, 0, 1)
    mean, std = dapo["mean_std"]["avg@4"]["difference"]
    # mean (0.1 - 0.1 + 0.2) / 3; sample std sqrt(((1/30)^2 + (1/6)^2 + (2/15)^2) / 2) = sqrt(0.07 / 3)
    assert mean == pytest.approx(0.2 / 3) and std == pytest.approx((0.07 / 3) ** 0.5)
    assert dapo["mean_std"]["pass@4"]["up"][0] == pytest.approx(2.0 / 3)  # (0.5 + 0.5 + 1.0) / 3, seed 3 left out
    assert (gspo["paired_seeds"], gspo["up_won"], gspo["ties"]) == (1, 0, 1)  # avg@4 tied, pass@4 higher: a tie
    table = module.markdown([dapo, gspo], 4, {"avg@4": 0.15, "pass@4": 0.4}, "header")
    assert "| 1 | 0.400 | 0.300 | -0.100 | 0.750 | 0.500 | -0.250 |" in table
    assert "UP won 2 of 3 seeds on avg@4 (tied 0, lost 1)." in table and "avg@4 0.150" in table
    assert module.short_summary([dapo], None, 4)["DAPO"]["UP won"] == "2 of 3 seeds"


# The settings of one real-model run that the pair tests build `up-trl train` flags from.
PAIR_SETTINGS = dict(model="m", dataset="arithmetic", arithmetic_ops=["add"], delta=3.0, max_steps=16,
                     steps_per_generation=4, num_iterations=2, max_completion_length=64,
                     per_device_train_batch_size=8)  # fmt: skip


def test_real_model_pair_differs_only_in_up_mode():
    module = _load("real_model")
    settings = PAIR_SETTINGS
    for pair in module.PAIRS:
        parent, up = (module.train_argv(settings, pair, mode, 1, "out") for mode in ("off", "asymmetric"))
        assert [i for i, (a, b) in enumerate(zip(parent, up)) if a != b] == [parent.index("--up_mode") + 1]
        assert len(parent) == len(up) and parent[parent.index("--delta") + 1] == "3.0"
    _, args, _ = parse_train_args(module.train_argv(settings, "GSPO", "asymmetric", 1, "out"))
    got = (args.importance_sampling_level, args.loss_type, args.epsilon, args.epsilon_high)
    assert got == ("sequence", "grpo", 3e-4, 4e-4)
    got = (args.delta, args.num_iterations, args.seed, args.up_mode, args.per_device_train_batch_size)
    assert got == (3.0, 2, 1, "asymmetric", 8)


def test_real_model_refuses_runs_of_other_settings_and_a_pass_k_eval_does_not_report(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(up_trl.models.offline, "smollm2_path", lambda: "m")
    module = _load("real_model")
    flags = argv("--dataset arithmetic --benchmark arithmetic --report_only", output_dir=tmp_path)
    stored = {"config": "DAPO", "pair": "DAPO", "seed": 0, "settings": {"max_steps": 99}}
    (tmp_path / "runs.partial.jsonl").write_text(json.dumps(stored) + "\n")
    with pytest.raises(SystemExit, match="'max_steps': 99"):
        module.main(flags)
    stored["settings"] = {}  # a run stored before --arithmetic_few_shot existed ran without worked examples
    (tmp_path / "runs.partial.jsonl").write_text(json.dumps(stored) + "\n")
    with pytest.raises(SystemExit, match="'arithmetic_few_shot': 0"):
        module.main(argv(*flags, arithmetic_few_shot=2))
    with pytest.raises(SystemExit):
        module.main(argv("--dataset gsm8k --arithmetic_few_shot 2", output_dir=tmp_path))
    assert "--arithmetic_few_shot 2 needs --dataset arithmetic" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # eval reports pass@1, 2, 4, 8, 16 for k=16: no pass@3 to put in the table
        module.main(argv(*flags, "--k 16 --pass_k 3"))


def _git_status() -> list[str] | None:
    """Untracked files and changed files under benchmarks/, or None outside a git checkout."""
    try:
        cmd = ["git", "status", "--porcelain", "--untracked-files=all"]
        out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return [line for line in out.stdout.splitlines() if line.startswith("??") or line[3:].startswith("benchmarks/")]


@pytest.mark.slow
def test_dry_runs_leave_the_source_tree_as_it_was(tmp_path):
    """Without --output_dir, outputs go under outputs/benchmarks/ and `git status` is unchanged."""
    before = _git_status()
    if before is None:
        pytest.skip("not a git checkout")
    env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))
    for script, flags in (("gpu_suite.py", "--dry_run --pairs DAPO"), ("staleness_sweep.py", "--quick")):
        cmd = [sys.executable, str(ROOT / "benchmarks" / script), *argv(flags)]
        out = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
        assert out.returncode == 0, f"{script} {flags}: {out.stderr[-3000:]}"
    assert (tmp_path / "outputs" / "benchmarks" / "gpu_suite" / "results.json").exists()
    assert _git_status() == before


def test_no_benchmark_writes_into_its_results_folder_by_default():
    """No script's code names benchmarks/results/ as a default output folder."""
    for script in sorted((ROOT / "benchmarks").glob("*.py")):
        tree = ast.parse(script.read_text())
        documented = [n for n in ast.walk(tree) if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef))]
        docstrings = {id(n.body[0].value) for n in documented if n.body and isinstance(n.body[0], ast.Expr)}
        constants = [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and id(n) not in docstrings]
        strings = [n.value for n in constants if isinstance(n.value, str)]
        assert not [v for v in strings if v.startswith("benchmarks/results") or v == "results"], script.name


def test_results_stay_compact():
    """The committed results: under 6 MB in all, curves in Parquet (no JSON over 400 kB), no partial file."""
    files = [p for p in (ROOT / "benchmarks" / "results").rglob("*") if p.is_file()]
    total = sum(p.stat().st_size for p in files)
    assert total < 6_000_000, f"benchmarks/results holds {total / 1e6:.1f} MB: keep curves in curves.parquet"
    assert not [p for p in files if p.name == "runs.partial.jsonl"]
    big = [str(p.relative_to(ROOT)) for p in files if p.suffix == ".json" and p.stat().st_size > 400_000]
    assert not big, f"JSON results over 400 kB (move their curves to Parquet): {big}"


def test_results_round_trip_and_one_record_per_line(tmp_path):
    bench = _load("bench")
    runs = [
        {"config": "UP-DAPO", "seed": s, "final": 0.5 + s, "reward_curve": [[1, 0.25], [3, 0.5]], "kl_curve": []}
        for s in (0, 1)
    ]
    runs.append({"config": "DAPO", "seed": 0, "final": None, "reward_curve": [], "kl_curve": [[2, 1.5]]})
    report = {"command": "x", "summary": {"a": [1, 2]}, "runs": runs}
    bench.write_results(tmp_path, report)
    assert bench.read_results(tmp_path) == report
    lines = (tmp_path / "results.json").read_text().splitlines()
    assert sum('"config"' in line for line in lines) == 3  # one line per run record


def test_collapse_cause_results_read_back(tmp_path):
    cause = _load("collapse_cause")
    committed = cause.read_cause(ROOT / "benchmarks" / "results" / "collapse_cause")
    token_runs = [run for run in committed["runs"] if run.get("token_stats")]
    assert {run["kind"] for run in token_runs} == {"tokens"} and len(token_runs) == 2
    cause.write_cause(tmp_path, committed)
    assert cause.read_cause(tmp_path) == committed


@pytest.fixture
def cause(monkeypatch):
    """benchmarks/collapse_cause.py, with the trainer methods its `install` patches restored after the test."""
    monkeypatch.setattr(UPGRPOTrainer, "_routes", UPGRPOTrainer._routes)
    monkeypatch.setattr(UPGRPOTrainer, "_compute_loss", UPGRPOTrainer._compute_loss)
    return _load("collapse_cause")


def test_collapse_cause_routing_anchors_only_the_routed_class(cause):
    """A routing ANDs UP's routes (where pi_old is anchored) with its class of positive tokens, off-policy only."""
    eos = tiny_tokenizer().eos_token_id
    trainer = SimpleNamespace(up_mode="asymmetric", up_positive_min_prob=None, importance_sampling_level="token")
    probs = torch.tensor([[0.5, 0.9, 0.01, 0.9], [0.5, 0.01, 0.9, 0.9]])  # answer, tail likely / rare, EOS
    inputs = {
        "advantages": torch.tensor([1.0, -1.0]),
        "completion_ids": torch.tensor([[3, 4, 5, eos], [3, 5, 4, eos]]),
        "old_per_token_logps": probs.log(),
    }
    expected = {
        "UP (all positive tokens)": [[True] * 4, [False] * 4],
        "answer only": [[True, False, False, False], [False] * 4],
        "tail only": [[False, True, True, False], [False] * 4],
        "all but rare": [[True, True, False, True], [False] * 4],
        "rare only": [[False, False, True, False], [False] * 4],
    }
    for routing, routes in expected.items():
        cause.install(routing, None)
        assert UPGRPOTrainer._routes(trainer, inputs).tolist() == routes, routing
        on_policy = {k: v for k, v in inputs.items() if k != "old_per_token_logps"}
        assert UPGRPOTrainer._routes(trainer, on_policy).tolist() == [[True], [False]]  # the trainer's own
        assert UPGRPOTrainer._routes(SimpleNamespace(up_mode="off"), inputs) is None
    cause.install(None, None)  # installing again replaces the earlier install: the paper's routes
    assert UPGRPOTrainer._routes(trainer, inputs).tolist() == [[True], [False]]


@pytest.mark.slow
def test_collapse_cause_records_token_statistics_as_committed_and_routes_change_the_run(cause, tmp_path):
    """A part-1 run records the committed token columns and changes nothing; routing only rare tokens does."""
    import pyarrow.parquet as pq

    settings = dict(task="tail", level=4, max_steps=4, learning_rate=1e-3, final_window=50)
    tokens = cause._job(("tokens", "UP-DAPO", None, 0, settings))
    stats = tokens["token_stats"]
    assert [row["step"] for row in stats] == [0, 1, 2, 3] and tokens["routing"] == "UP (all positive tokens)"
    columns = set(pq.read_schema(ROOT / "benchmarks" / "results" / "collapse_cause" / cause.TOKENS_FILE).names)
    assert {key for row in stats for key in row} <= columns
    assert {"tail rare/positive/n", "tail rare/positive/log_r", "tail likely/entropy"} <= stats[-1].keys()
    assert all(isinstance(row[k], int) for row in stats for k in row if k.endswith("/n") or k == "step")
    every = cause._job(("routing", "UP-DAPO", "UP (all positive tokens)", 0, settings))
    assert "token_stats" not in every and every["curves"] == tokens["curves"]
    rare = cause._job(("routing", "UP-DAPO", "rare only", 0, settings))
    assert rare["curves"]["entropy"] != every["curves"]["entropy"]
    report = {"command": "x", "settings": settings, "runs": [tokens, every, rare]}
    cause.write_cause(tmp_path, report)
    assert cause.read_cause(tmp_path)["runs"][0]["token_stats"] == stats


def test_real_model_report_measures_a_study_as_pre_registered(tmp_path):
    """real_model_report.py on hand-made runs: paired difference, steps ratio, failures, the README sentence."""
    bench = _load("bench")
    report_module = _load("real_model_report")

    def run(config, seed, avg, rewards, collapsed=False):
        curve = [[s + 1, r] for s, r in enumerate(rewards)]
        return dict(config=config, seed=seed, commit="abc", final_reward=sum(rewards[-8:]) / 8, final_entropy=0.5,
                    initial_entropy=0.6, collapsed=collapsed, runaway=False, reward_curve=curve,
                    after={"avg@8": avg, "pass@4": min(1.0, 2 * avg)})  # fmt: skip

    rising, flat, fast = [0.1 * s for s in range(10)] + [0.9] * 22, [0.05] * 32, [0.9] * 32
    runs = [  # each seed's parent run, then its UP run
        run("GSPO", 100, 0.30, rising), run("UP-GSPO", 100, 0.40, fast),
        run("GSPO", 101, 0.20, rising), run("UP-GSPO", 101, 0.25, flat, collapsed=True),
        run("GSPO", 102, 0.10, rising), run("UP-GSPO", 102, 0.05, rising),
    ]  # fmt: skip
    settings = {"benchmark_limit": 96, "k": 8, "pass_k": 4, "max_steps": 32, "seeds": [100, 101, 102]}
    bench.write_results(
        tmp_path, {"machine": "test", "wall_minutes": 1, "settings": settings, "pairs": {"GSPO": {}}, "runs": runs}
    )
    report = report_module.main([str(tmp_path)])
    row = report["pairs"]["GSPO"]
    assert row["primary"]["mean"] == pytest.approx((0.10 + 0.05 - 0.05) / 3)
    assert (row["primary"]["won"], row["primary"]["lost"]) == (2, 1)
    assert row["primary"]["two_se"] == pytest.approx(2 * statistics.stdev([0.10, 0.05, -0.05]) / 3**0.5)
    steps = [r["steps_to_parent_final_reward"] for r in row["per_seed"]]
    assert steps[0] == {"parent": 13, "up": 1} and steps[1]["up"] is None  # seed 101: never reached, censored
    assert row["secondary"]["steps_ratio"]["censored"] == 1
    assert row["secondary"]["failures"]["up"] == {"collapsed": 1, "runaway": 0}
    assert "no difference between UP-GSPO and GSPO was detected" in row["readme"]
    assert (tmp_path / "paired.png").exists() and "Primary, avg@8" in (tmp_path / "report.md").read_text()
    higher = report_module.sentence("GSPO", {"mean": 0.1, "two_se": 0.02, "won": 9, "lost": 1}, 8, 96, 10)
    lower = report_module.sentence("GSPO", {"mean": -0.1, "two_se": 0.02, "won": 1, "lost": 9}, 8, 96, 10)
    assert "scored higher than GSPO" in higher and "higher on 9 of 10" in higher
    assert "scored lower than GSPO" in lower and "lower on 9 of 10" in lower
    assert "(sums, 10 paired seeds, 8 updates per rollout batch)" in higher  # the powered study's words, unchanged
    assert row["secondary"]["vs_base"] == {"base": None, "parent": None, "up": None}  # no base model scored here
    # Issue 48's study: the times table, UP with the rare clip, each arm against the base model.
    study = {**settings, "arithmetic_ops": ["mul1"], "steps_per_generation": 4, "num_iterations": 1}
    study["up_positive_min_prob"] = 0.05
    renamed = [{**r, "config": r["config"].replace("UP-GSPO", "UP-GSPO + rare clip")} for r in runs]
    before = {"avg@8": 0.15, "pass@4": 0.3, "problems": 16}
    results = {"machine": "t", "wall_minutes": 1, "settings": study, "pairs": {"GSPO": {}}, "runs": renamed}
    bench.write_results(tmp_path, {**results, "before": before})
    row = report_module.main([str(tmp_path)])["pairs"]["GSPO"]
    assert row["up_config"] == "UP-GSPO + rare clip" and row["primary"]["n"] == 3
    gains = row["secondary"]["vs_base"]
    assert gains["parent"]["mean"] == pytest.approx(0.2 - 0.15) and gains["up"]["mean"] == pytest.approx(
        0.2333 - 0.15, abs=1e-4
    )
    assert "(the times table, 3 paired seeds, 4 updates per rollout batch)" in row["readme"]
    assert "between UP-GSPO + rare clip and GSPO" in row["readme"] and "16 held-out problems" in row["readme"]
    assert "Against the base model (avg@8 0.150)" in (tmp_path / "report.md").read_text()


def test_collapse_rescue_counts_recovery_from_the_resume_on():
    """Recovered at the first step after the resume from which accuracy stays above 0.05; else never."""
    rescue = _load("collapse_rescue")
    curve = [[1, 0.3], [5, 0.0], [9, 0.0], [13, 0.06], [17, 0.02], [21, 0.1], [25, 0.2]]
    assert rescue.recovered_at(curve, after=5) == 21
    assert rescue.recovered_at(curve[:5], after=5) is None
    assert rescue.recovered_at([[1, 0.3], [5, 0.2]], after=1) == 5


def test_the_wrong_verifier_is_wrong_on_the_same_pairs_every_time():
    from noisy_verifier import ConsistentlyWrongVerifier, is_flipped

    def truth(prompts, completions, solution, **kwargs):
        return [float(c[:1] == s) for c, s in zip(completions, solution)]

    prompts = [f"{a}+{b}=" for a in range(10) for b in range(10)]
    for p in (0.1, 0.3):
        flipped = [is_flipped(7, q, str(d), p) for q in prompts for d in range(10)]
        assert abs(sum(flipped) / len(flipped) - p) < 0.05  # about p of the 1,000 pairs
        verifier = ConsistentlyWrongVerifier(truth, p, key=7, answer=lambda c: c[:1])
        completions, golds = [str(d) for q in prompts for d in range(10)], [q[0] for q in prompts for _ in range(10)]
        qs = [q for q in prompts for _ in range(10)]
        given = verifier(qs, completions, solution=golds)
        assert given == verifier(qs, completions, solution=golds)  # the same mistakes on every call
        true = truth(qs, completions, golds)
        assert [g != t for g, t in zip(given, true)] == flipped  # exactly the hashed pairs are wrong
        wrong = verifier.wrongly_rewarded(qs, completions, solution=golds)
        assert wrong == [float(f and t == 0) for f, t in zip(flipped, true)] and sum(wrong) > 0
        other_key = ConsistentlyWrongVerifier(truth, p, key=8, answer=lambda c: c[:1])
        assert other_key(qs, completions, solution=golds) != given  # another seed, other mistakes
    exact = ConsistentlyWrongVerifier(truth, 0.0, key=7, answer=lambda c: c[:1])
    assert exact(["1+2=", "1+2="], ["1", "2"], solution=["1", "1"]) == [1.0, 0.0]


@pytest.mark.slow
def test_verifier_study_runs_pairs_and_goes_on_where_it_stopped(tmp_path):
    study = _load("verifier_study")
    line = "--seeds 300 --noise 0.3 --max_steps 4 --workers 1 --allow_dirty --configs DAPO UP-DAPO"
    flags = argv(line, output_dir=tmp_path)
    records = study.main(flags)
    assert [(r["config"], r["seed"], r["noise"]) for r in records] == [("DAPO", 300, 0.3), ("UP-DAPO", 300, 0.3)]
    for r in records:
        assert all(0 <= r[key] <= 1 for key in ("true_accuracy", "wrongly_rewarded_share", "wrongly_rewarded_auc"))
        curve = r["wrongly_rewarded_curve"]  # one point per rollout batch (16 updates each: step 1 only here)
        assert [step for step, _ in curve] == [1] and r["wrongly_rewarded_auc"] == curve[0][1]
        assert len(r["entropy_curve"]) == 4 and r["true_accuracy_curve"]
    assert (
        records[0]["commit"] and (tmp_path / "pip_freeze.txt").exists() and (tmp_path / "verifier_study.png").exists()
    )
    again = study.main(flags)  # nothing left to run: the records come back as they were kept
    assert again == study.read_results(tmp_path)["runs"] == records
    on_disk = json.loads((tmp_path / "results.json").read_text())["runs"]
    assert [sorted(r) for r in on_disk] == [sorted(k for k in r if not k.endswith("_curve")) for r in records]
    assert "| 0.3 | UP-DAPO | 1 |" in (tmp_path / "table.md").read_text()


def test_the_speed_measure_is_the_mean_per_rollout_batch():
    study = _load("verifier_study")
    assert study.area([[1, 0.0], [17, 0.5], [33, 1.0]]) == 0.5
    assert study.area([[1, 0.2]]) == 0.2


def test_verifier_study_refuses_a_dirty_tree(monkeypatch, capsys):
    study = _load("verifier_study")
    monkeypatch.setattr(study, "git_commit", lambda: "abc123+dirty")
    with pytest.raises(SystemExit):
        study.main(argv(output_dir="unused"))
    assert "clean commit" in capsys.readouterr().err


def test_rare_clip_runaways_count_a_run_recorded_twice_once():
    count = _load("rare_clip_runaways").count
    run = {"config": "UP-DAPO + rare clip", "seed": 4, "runaway": True, "entropy_curve": [[1, 1.3]]}
    other = {**run, "seed": 5, "entropy_curve": [[1, 1.2]]}
    healthy = {**run, "seed": 6, "runaway": False, "entropy_curve": [[1, 1.1]]}
    result = count([run, {**run, "folder": "rerun"}, other, healthy])
    assert (result["runs"], result["trajectories"], result["runaways"]) == (4, 3, 2)


def test_the_rare_clips_runaway_count_the_docs_quote_is_the_committed_records():
    module = _load("rare_clip_runaways")
    runs = module.rare_clip_runs(ROOT / "benchmarks" / "results")
    result = module.count(runs)
    assert (result["trajectories"], result["runaways"]) == (345, 3)  # docs/collapse.md
    seeds = sorted((group[0]["config"], group[0]["seed"]) for group in result["events"])
    assert seeds == [("UP-DAPO + rare clip", 4), ("UP-DAPO + rare clip", 15), ("UP-GRPO + rare clip", 4)]
    alone = module.count([run for run in runs if module.setting(run)[0] == "rare clip alone"])
    assert (alone["trajectories"], alone["runaways"]) == (193, 3)  # README, docs/collapse.md, UP_ADVICE
    assert "3 of 193" in UP_ADVICE


def test_testbed_pilot_condition_is_a_mean_gain_over_two_se_with_no_collapse():
    """The pilot condition: mean gain over the base above 2 SE, every seed finished, no collapse."""
    module = _load("testbed_pilot")

    def runs(values, collapsed=()):
        return [{"after": {"avg@4": v}, "collapsed": i in collapsed} for i, v in enumerate(values)]

    met = module.verdict(0.2, runs([0.5, 0.6, 0.7]), 4)
    assert met["meets"] and met["mean_gain"] == pytest.approx(0.4) and met["two_se"] == pytest.approx(2 * 0.1 / 3**0.5)
    spread = module.verdict(0.2, runs([0.1, 0.6, 0.9]), 4)  # gain 0.333, 2 SE 0.467
    assert not spread["meets"] and spread["mean_gain"] - spread["two_se"] < 0
    assert not module.verdict(0.2, runs([0.5, 0.6, 0.7], collapsed={1}), 4)["meets"]
    assert module.verdict(0.2, runs([0.5, 0.6, 0.7], collapsed={1}), 4)["collapsed"] == 1
    short = module.verdict(0.2, runs([0.5, 0.6]), 4)
    assert not short["meets"] and not short["complete"]  # a pilot seed missing: not decided
    assert module.verdict(0.2, runs([0.5, 0.6]), 4, seeds=2)["meets"]
    assert not module.verdict(None, runs([0.5, 0.6, 0.7]), 4)["meets"]  # no base model score


def test_testbed_search_rules_choose_and_judge_as_its_plan_says():
    """Stage 2: the best two by mean gain / max(SD, 0.02) with a positive mean and no collapse; the condition."""
    search = _load("testbed_search")
    rows = [("a", .1, .3), ("b", .05, .06), ("c", -.1, .4), ("d", .5, .5), ("e", .4, .4)]  # fmt: skip
    runs = [
        {"candidate": c, "seed": s, "gain": g, "collapsed": c == "d"}
        for c, *g2 in rows
        for s, g in zip((910, 911), g2)
    ]
    assert search.stage2_choice(runs, [r[0] for r in rows]) == ["e", "b"]  # e: 0.4 / 0.02; d collapsed; c: 0.15 / 0.35

    def verdict(gains, collapsed=False):
        return search.verdict(
            [{"candidate": "a", "seed": 910 + i, "gain": g, "collapsed": collapsed} for i, g in enumerate(gains)], "a"
        )

    assert verdict([0.1, 0.12, 0.08, 0.11, -0.01])["meets"]  # 4 of 5 gain, mean 0.08 > 2 SE 0.046
    assert not verdict([0.1, 0.12, 0.08, -0.01, -0.01])["meets"]  # 3 of 5 gain
    assert not verdict([0.1, 0.12, 0.08, 0.11, 0.1], collapsed=True)["meets"]
    assert not verdict([0.1, 0.12, 0.08, 0.11])["meets"]  # stage 2 not finished


def test_testbed_study_pairs_seeds_and_tests_by_exact_sign_flips():
    """The study's primary: paired differences by seed, the exact sign-flip p, detected only with every pair."""
    study = _load("testbed_study")
    assert study.sign_flip_p([0.1, 0.2, 0.3]) == 0.25 and study.sign_flip_p([0.1, -0.1]) == 1.0
    assert study.sign_flip_p([0.05] * 10) == 2 / 1024 and study.sign_flip_p([0.1]) is None
    seeds = study.SEEDS
    runs = [
        {"arm": a, "seed": s, "test_avg": 0.5 + (a != "DAPO") * (0.02 + 0.01 * (s % 2))}
        for s in seeds
        for a in study.PRIMARY
    ]
    primary = study.paired(runs, study.PRIMARY[1], study.PRIMARY[0], "test_avg")
    assert primary["detected"] and primary["treatment_better"] == 10 and primary["mean"] == pytest.approx(0.025)
    assert not study.paired(runs[:-1], study.PRIMARY[1], study.PRIMARY[0], "test_avg")["detected"]  # a pair short
    assert study.next_jobs([], seeds[:2], third=True)[:3] == [
        ("base", None),
        ("DAPO", 500),
        ("UP-DAPO + rare clip", 500),
    ]
    done = [{"arm": a, "seed": s} for a, s in study.next_jobs([], seeds[:2], third=True)]
    assert study.next_jobs(done, seeds[:2], third=True) == [("UP-DAPO", 500), ("UP-DAPO", 501)]  # third arm last
    assert study.next_jobs(done, seeds[:2], third=False) == []


def test_testbed_pilot_table_says_not_decided_when_a_candidate_did_not_finish():
    """A candidate cut short by the time limit is not measured: the table must not read "no testbed found"."""
    module = _load("testbed_pilot")

    def report(complete: bool) -> dict:
        run = {"candidate": "c", "config": "DAPO", "seed": 900, "after": {"avg@4": 0.5, "problems": 9}}
        candidate = {"settings": {"k": 4}, "base_avg": 0.2, **module.verdict(0.2, [{**run, "collapsed": False}], 4, 1)}
        candidate["complete"] = complete
        return {"seeds": [900], "commit": "x", "machine": "m", "wall_minutes": 1, "chosen": None, "runs": [run],
                "candidates": {"c": {**candidate, "meets": False}}}  # fmt: skip

    assert "no testbed found" in module.table(report(True))
    cut_short = module.table(report(False))
    assert "not run in full: c. Not decided." in cut_short and "no testbed found" not in cut_short


def test_real_model_rare_clip_goes_to_ups_runs_only_and_names_them():
    """--up_positive_min_prob 0.05 goes to UP's runs only, and the config names say so."""
    module = _load("real_model")
    settings = {**PAIR_SETTINGS, "arithmetic_ops": ["mul1"], "up_positive_min_prob": 0.05}
    parent, up = (module.train_argv(settings, "DAPO", mode, 1, "out") for mode in ("off", "asymmetric"))
    assert "--up_positive_min_prob" not in parent
    assert up[up.index("--up_positive_min_prob") + 1] == "0.05"
    _, parent_args, _ = parse_train_args(parent)
    _, up_args, _ = parse_train_args(up)
    assert parent_args.up_positive_min_prob is None and up_args.up_positive_min_prob == 0.05
    got = (up_args.loss_type, up_args.epsilon, up_args.epsilon_high, up_args.delta, up_args.beta)
    assert got == ("dapo", 0.2, 0.28, 3.0, 0.0)
    names = [module.config_name("DAPO", mode, settings) for mode in ("off", "asymmetric")]
    assert names == ["DAPO", "UP-DAPO + rare clip"]
    assert module.config_name("DAPO", "asymmetric", {**settings, "up_positive_min_prob": None}) == "UP-DAPO"
    runs = [
        {"pair": "DAPO", "config": name, "seed": 7, "after": {"avg@4": value, "pass@4": value}}
        for name, value in zip(names, (0.5, 0.75))
    ]
    (row,) = module.summarise(runs, ["DAPO"], 4, settings=settings)
    assert row["up_config"] == "UP-DAPO + rare clip" and row["up_won"] == 1
    assert row["per_seed"][0]["avg@4"]["difference"] == 0.25


def test_the_tracking_page_shows_what_run_health_prints(capsys):
    """docs/tracking.md's tables are `benchmarks/run_health.py`'s output on the committed results, verbatim."""
    import run_health

    run_health.main([str(ROOT / "benchmarks" / "results")])
    printed = capsys.readouterr().out.strip()
    page = (ROOT / "docs" / "tracking.md").read_text()
    for table in printed.split("\n\n"):
        assert table in page
    assert "| UP-DAPO | `entropy` | 1.18 | 1.94 | 2.49 | 2.87 | 2.96 |" in printed  # the runaway, as the page reads it
