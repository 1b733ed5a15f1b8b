"""`up-trl eval`: the estimators by hand, and a tiny end-to-end run that writes JSON and markdown."""

import json
import re

import pytest
from conftest import argv, one_line, tiny_train_argv
from transformers import AutoModelForCausalLM, GenerationConfig

import up_trl.speedups.shared_prompt as shared_prompt
from up_trl.cli import train
from up_trl.cli.eval_command import main
from up_trl.data.arithmetic import arithmetic_problems
from up_trl.evaluation import pass_at_k as estimators
from up_trl.evaluation.base import loadable_base, recorded_base_model
from up_trl.evaluation.config import parse_eval_args
from up_trl.evaluation.evaluate import benchmark_sets, score_benchmark
from up_trl.evaluation.pass_at_k import default_ks, equivalence_tables, majority_cluster, majority_correct, pass_at_k
from up_trl.models.offline import save_tiny_model
from up_trl.rewards import CORRECT, GOLD_UNPARSEABLE, TIMEOUT, WRONG


@pytest.mark.parametrize("n, c, k, expected", [
    pytest.param(4, 0, 1, 0.0, id="none_correct"),
    pytest.param(4, 4, 1, 1.0, id="all_correct"),
    pytest.param(4, 1, 1, 0.25, id="pass1_is_mean"),
    pytest.param(4, 1, 2, 0.5, id="1_of_4_at_2: 1-C(3,2)/C(4,2)"),
    pytest.param(4, 2, 2, 5 / 6, id="2_of_4_at_2: 1-C(2,2)/C(4,2)"),
    pytest.param(4, 1, 4, 1.0, id="any_correct_at_n"),
])  # fmt: skip
def test_pass_at_k_unbiased_estimator(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_needs_enough_samples():
    with pytest.raises(ValueError, match="at least 8 samples"):
        pass_at_k(4, 1, 8)


HALF = {"\\frac{1}{2}", "0.5", "1/2"}


def half_equivalence(answers):
    """A hand-written equivalence for the tables below: the three spellings of one half are one answer."""
    return lambda i, j: {answers[i], answers[j]} <= HALF


@pytest.mark.parametrize("answers, correct, expected", [
    pytest.param(["7", "8", "7", None], [1, 0, 1, 0], 1.0, id="majority_right"),
    pytest.param(["8", "8", "7", "7"], [0, 0, 1, 1], 0.0, id="tie_goes_to_the_group_formed_first"),
    pytest.param(["7", "8", "8", "7"], [1, 0, 0, 1], 1.0, id="tie_first_group_right"),
    pytest.param([None, None, "3"], [0, 0, 1], 1.0, id="no_answer_never_wins"),
    pytest.param([None, None], [0, 0], 0.0, id="nothing_extracted"),
    pytest.param(["\\frac{1}{2}", "0.5", "1/2", "3", "3"], [1, 1, 1, 0, 0], 1.0, id="issue_example_3_equal_beat_2"),
    pytest.param(["3", "0.5", "3", "1/2", "\\frac{1}{2}"], [0, 1, 0, 1, 1], 1.0, id="equivalents_outvote_later"),
    pytest.param(["3", "1/2", "3", "0.5"], [0, 1, 0, 1], 0.0, id="equal_groups_tie_to_first"),
])  # fmt: skip
def test_majority_vote_groups_equivalent_answers(answers, correct, expected):
    assert majority_correct(answers, correct, half_equivalence(answers)) == expected


def test_majority_vote_by_spelling_alone_would_be_wrong():
    """The issue's case: voting on raw strings picks "3" (2 votes) over three spellings of 1/2."""
    answers, correct = ["\\frac{1}{2}", "0.5", "1/2", "3", "3"], [1, 1, 1, 0, 0]
    assert majority_correct(answers, correct, lambda i, j: False) == 0.0
    assert majority_cluster(answers, half_equivalence(answers)) == 0


def test_equivalence_tables_verify_only_against_representatives():
    """Round by round, each answer is compared with the groups formed before it; identical strings need none."""
    groups = [
        [("1/2", "number"), ("0.5", "number"), ("1/2", "number"), ("3", "number")],
        [None, ("y", "phrase"), ("x", "phrase")],
    ]
    calls = []

    def verify(tasks):
        calls.append(list(tasks))
        return [TIMEOUT if "x" in t[0] else CORRECT if {t[0], t[2]} <= HALF else WRONG for t in tasks]

    sames, timeouts = equivalence_tables(groups, verify)
    rounds = [("0.5", "number", "1/2", "number")], [("x", "phrase", "y", "phrase")], [("3", "number", "1/2", "number")]
    assert calls == list(rounds)
    assert sames[0](0, 1) and not sames[0](0, 3) and not sames[1](1, 2) and timeouts == 1


def test_score_problem_row_and_default_ks():
    assert default_ks(4) == [1, 2, 4] and default_ks(6) == [1, 2, 4, 6] and default_ks(1) == [1]
    row = estimators.score_problem(["1", "2", "1", "3"], [1.0, 0.0, 1.0, 0.0], [1, 2, 4])
    assert row == {"avg@4": 0.5, "maj@4": 1.0, "pass@1": 0.5, "pass@2": pytest.approx(5 / 6), "pass@4": 1.0}


# three spellings of 1/2 outvote two 3s; an unevaluated echo ("71 + 88" twice) is no answer, so no vote
@pytest.mark.parametrize("samples, gold, avg", [
    (["\\boxed{\\frac{1}{2}}", "The answer is 0.5", "so 1/2", "\\boxed{3}", "\\boxed{3}"], "\\frac{1}{2}", 0.6),
    (["The answer is 71 + 88.", "Answer: 71 + 88", r"\boxed{159}"], "159", 1 / 3),
], ids=["spellings_of_one_half", "echo"])  # fmt: skip
def test_maj_at_k_votes_on_the_answers_the_reward_judged(samples, gold, avg):
    """End to end through the reward's extraction and math-verify."""
    k = len(samples)
    summary, rows = score_benchmark([samples], [gold], k)
    assert rows[0][f"avg@{k}"] == pytest.approx(avg) and rows[0][f"maj@{k}"] == 1.0
    assert summary["problems"] == 1 and summary["excluded"] == {"gold_unparseable": 0, "timeout": 0}


class StubReward:
    """Outcomes chosen by the test: a stand-in for math-verify that can time out or fail on a gold."""

    def __init__(self, outcomes):
        self._outcomes = outcomes

    def judge(self, completions, solution):
        from up_trl.rewards import completion_text, extract_answer

        assert len(completions) == len(solution) == len(self._outcomes)
        return list(self._outcomes), [extract_answer(completion_text(c)) for c in completions]


def test_timeouts_and_unparseable_golds_are_left_out_and_counted():
    """Problem 1 has a timed-out sample, problem 2 an unparseable gold: neither counts as wrong."""
    samples = [["\\boxed{1}", "\\boxed{2}"], ["\\boxed{1}", "\\boxed{1}"], ["\\boxed{1}", "\\boxed{5}"]]
    reward = StubReward([CORRECT, WRONG, CORRECT, TIMEOUT, GOLD_UNPARSEABLE, GOLD_UNPARSEABLE])
    summary, rows = score_benchmark(samples, ["1", "1", "???"], 2, reward=reward)
    assert summary["problems"] == 1 and summary["avg@2"] == 0.5 and summary["pass@2"] == 1.0
    assert summary["excluded"] == {"gold_unparseable": 1, "timeout": 1} and summary["timeout_samples"] == 1
    assert [r.get("excluded") for r in rows] == [None, "timeout", "gold_unparseable"]


@pytest.mark.parametrize("flags, message", [
    ("--benchmarks aime2099", r"Unknown benchmark\(s\) \['aime2099'\].*offline: gsm8k, math500, minerva"),
    ("--arithmetic_ops add div", r"Unknown arithmetic op 'div' \(--arithmetic_ops\)"),
], ids=["unknown_benchmark", "unknown_arithmetic_op"])  # fmt: skip
def test_bad_input_is_refused_before_the_model_loads(no_model_loads, capsys, flags, message):
    assert re.search(message, one_line(capsys, argv(flags), command="eval"))


def test_arithmetic_split_dev_scores_the_dev_problems_only(capsys):
    """--arithmetic_split dev scores the dev problems only and is refused off arithmetic (its run: the next test)."""
    assert parse_eval_args([]).arithmetic_split == "test"
    args = parse_eval_args(argv("--arithmetic_ops mul --arithmetic_split dev"))
    data = benchmark_sets(["arithmetic"], args, system_prompt=None)["arithmetic"]
    dev = {f"What is {a} x {b}?" for a, b in arithmetic_problems("mul", "dev")}
    assert sorted(p[-1]["content"] for p in data["prompt"]) == sorted(dev) and len(dev) == 54
    test = benchmark_sets(["arithmetic"], parse_eval_args(argv("--arithmetic_ops mul")), None)["arithmetic"]
    assert dev.isdisjoint(p[-1]["content"] for p in test["prompt"])
    line = one_line(capsys, argv("--benchmarks gsm8k --arithmetic_split dev"), command="eval")
    assert "--arithmetic_split dev applies to the arithmetic benchmark only" in line
    with pytest.raises(SystemExit) as exit:  # train is never scored: argparse's choices say so
        main(argv("--arithmetic_split train"))
    assert exit.value.code == 2 and "invalid choice: 'train'" in capsys.readouterr().err


def test_arithmetic_ops_choose_the_held_out_problems(tmp_path, capsys, tiny_model):
    """--arithmetic_ops add: the held-out two-digit sums (none from the train split), recorded in eval.json."""
    args = parse_eval_args(argv("--arithmetic_ops add --limit 30"))
    assert parse_eval_args([]).arithmetic_ops == ["mul1"]
    data = benchmark_sets(["arithmetic"], args, system_prompt=None)["arithmetic"]
    test_pairs = {f"What is {a} + {b}?" for a, b in arithmetic_problems("add", "test")}
    problems = [p[-1]["content"] for p in data["prompt"]]
    assert len(problems) == 30 and set(problems) <= test_pairs
    assert all(int(sol) == sum(map(int, q[8:-1].split(" + "))) for q, sol in zip(problems, data["solution"]))
    out = tmp_path / "eval"
    flags = "--arithmetic_ops add --k 2 --limit 2 --max_new_tokens 4"
    assert main(argv(flags, model=tiny_model, output_dir=out)) == 0
    report = json.loads((out / "eval.json").read_text())
    assert report["arithmetic_ops"] == ["add"] and report["benchmarks"]["arithmetic"]["problems"] == 2
    assert report["arithmetic_few_shot"] == 0 and "arithmetic ops add." in (out / "eval.md").read_text()
    args = parse_eval_args(argv("--arithmetic_ops add --limit 30 --arithmetic_few_shot 2"))
    shown = benchmark_sets(["arithmetic"], args, system_prompt=None)["arithmetic"]
    assert [p[-1] for p in shown["prompt"]] == [p[-1] for p in data["prompt"]]  # the same held-out problems
    assert all(len(p) == 5 and p[0]["content"] == "What is 3 + 5?" for p in shown["prompt"])
    capsys.readouterr()
    assert "must number 0 to 3" in one_line(capsys, argv("--arithmetic_few_shot 9"), command="eval")
    line = one_line(capsys, argv("--benchmarks gsm8k --arithmetic_few_shot 1"), command="eval")
    assert "applies to the arithmetic benchmark only" in line
    shots_out = tmp_path / "eval-shots"
    flags = "--arithmetic_ops add --arithmetic_few_shot 2 --arithmetic_split dev --k 2 --limit 2 --max_new_tokens 4"
    assert main(argv(flags, model=tiny_model, output_dir=shots_out)) == 0
    report = json.loads((shots_out / "eval.json").read_text())
    assert report["arithmetic_few_shot"] == 2 and report["arithmetic_split"] == "dev"  # recorded
    assert "arithmetic ops add, worked examples: 2, split dev." in (shots_out / "eval.md").read_text()


def test_tiny_model_end_to_end(tmp_path, tiny_model):
    out = tmp_path / "eval"
    flags = "--benchmarks gsm8k math500 --k 2 --limit 2 --max_new_tokens 4 --save_samples"
    assert main(argv(flags, model=tiny_model, output_dir=out)) == 0
    report = json.loads((out / "eval.json").read_text())
    assert set(report["benchmarks"]) == {"gsm8k", "math500"}
    for row in report["benchmarks"].values():
        assert row["problems"] == 2
        assert {"avg@2", "maj@2", "pass@1", "pass@2"} <= row.keys()
        assert 0.0 <= row["pass@1"] <= row["pass@2"] <= 1.0
        assert len(row["samples"]) == 2 and all(len(s["completions"]) == 2 for s in row["samples"])
    table = (out / "eval.md").read_text()
    assert "| gsm8k | 2 |" in table and "pass@2" in table


def test_greedy_scores_one_sample_and_says_so(tmp_path, capsys, tiny_model):
    """--temperature 0 used to crash (greedy decoding with num_return_sequences > 1)."""
    out = tmp_path / "eval"
    flags = "--benchmarks gsm8k --k 4 --limit 2 --temperature 0 --max_new_tokens 4"
    assert main(argv(flags, model=tiny_model, output_dir=out)) == 0
    report = json.loads((out / "eval.json").read_text())
    assert report["k"] == 1 and report["greedy"] is True
    assert {"avg@1", "maj@1", "pass@1"} <= report["benchmarks"]["gsm8k"].keys()
    assert "k=1 (not 4)" in capsys.readouterr().out and "greedy" in (out / "eval.md").read_text()


def test_defaults_are_the_offline_job_held_out_task(tmp_path, monkeypatch):
    """No options: the quickstart run (else the base model) on the held-out arithmetic, as trained."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("up_trl.models.offline.smollm2_path", lambda: "/base/smollm2")
    args = parse_eval_args([])
    notes = args.resolve_defaults()
    assert args.benchmarks == ["arithmetic"] and args.model == "/base/smollm2" and "base" in notes[0]
    assert (args.system_prompt, args.max_new_tokens, args.temperature, args.top_p) == ("none", 64, 1.0, 1.0)
    assert args.output_dir == "outputs/eval"
    (tmp_path / "outputs" / "quickstart").mkdir(parents=True)
    (tmp_path / "outputs" / "quickstart" / "config.json").write_text("{}")
    args = parse_eval_args([])
    args.resolve_defaults()
    assert args.model == "outputs/quickstart" and args.output_dir == "outputs/quickstart/eval"
    args = parse_eval_args(argv("--benchmarks gsm8k --temperature 0.2"))
    args.resolve_defaults()
    assert (args.system_prompt, args.max_new_tokens, args.temperature) == (None, 512, 0.2)


def test_each_prompt_is_prefilled_once_for_its_k_samples_with_the_same_samples(tmp_path, monkeypatch, tiny_model):
    """Each prompt is prefilled once for its k samples, which equal those of k prefills."""
    seen = []
    real = shared_prompt.distinct_prompts
    monkeypatch.setattr(shared_prompt, "distinct_prompts", lambda *a: seen.append(real(*a)) or seen[-1])
    samples = {}
    for share in ("true", "false"):
        out = tmp_path / share
        flags = "--benchmarks gsm8k --k 3 --limit 3 --batch_size 2 --max_new_tokens 6 --save_samples"
        assert main(argv(flags, model=tiny_model, share_prompt_prefix=share, output_dir=out)) == 0
        rows = json.loads((out / "eval.json").read_text())["benchmarks"]["gsm8k"]["samples"]
        samples[share] = [row["completions"] for row in rows]
    assert samples["true"] == samples["false"] and len(samples["true"]) == 3
    assert [(len(first), len(inverse)) for first, inverse in seen] == [(2, 6), (1, 3)]  # batches of 2 and 1 prompts
    for _, inverse in seen:  # each prompt's k rows together, in prompt order, as num_return_sequences lays them out
        groups = inverse.view(-1, 3)
        assert (groups == groups[:, :1]).all() and len(set(groups[:, 0].tolist())) == len(groups)
    with pytest.raises(SystemExit):
        main(argv("--share_prompt_prefix sometimes", model=tiny_model))


def test_a_checkpoints_own_num_return_sequences_does_not_regroup_the_samples(tmp_path):
    """A saved num_return_sequences=2 leaves k samples per problem, shared or not."""
    model = save_tiny_model(tmp_path / "tiny")
    GenerationConfig(num_return_sequences=2, do_sample=True).save_pretrained(model)
    samples = {}
    for share in ("true", "false"):
        out = tmp_path / share
        flags = "--benchmarks gsm8k --k 3 --limit 2 --max_new_tokens 4 --save_samples"
        assert main(argv(flags, model=model, share_prompt_prefix=share, output_dir=out)) == 0
        report = json.loads((out / "eval.json").read_text())
        assert report["share_prompt_prefix"] is (share == "true") and report["batch_size"] == 8
        samples[share] = [row["completions"] for row in report["benchmarks"]["gsm8k"]["samples"]]
    assert [len(c) for c in samples["true"]] == [3, 3] and samples["true"] == samples["false"]


def test_a_dashed_option_is_refused_as_train_refuses_it(capsys):
    """`--top-p` (a dashed spelling) is refused, as `up-trl train` refuses it."""
    with pytest.raises(SystemExit) as exit:
        main(argv("--top-p 2"))
    assert exit.value.code == 2 and "unrecognized arguments: --top-p" in capsys.readouterr().err


EVAL = "--benchmarks gsm8k --k 2 --limit 2 --max_new_tokens 4"


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    """A 1-step `up-trl train` run of a tiny model: its run record names the base folder."""
    root = tmp_path_factory.mktemp("eval-base")
    base = save_tiny_model(root / "tiny-base")
    reward = "tests.conftest.length_reward"
    train(tiny_train_argv(base, root / "run", reward=reward, max_steps=1, learning_rate="1e-1"))
    return root / "run", base


@pytest.fixture
def model_loads(monkeypatch, tmp_path):
    """The models `up-trl eval` loads, in order; the cache in an empty folder of this test."""
    monkeypatch.setenv("UP_TRL_CACHE", str(tmp_path / "cache"))
    loads, real = [], AutoModelForCausalLM.from_pretrained

    def recording(path, *args, **kwargs):
        loads.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", recording)
    return loads


def test_a_run_is_scored_beside_its_base_which_is_scored_once(run_folder, model_loads, tmp_path, capsys):
    run, base = run_folder
    assert main(argv(EVAL, model=run, output_dir=tmp_path / "first")) == 0
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
    assert main(argv(EVAL, model=run, output_dir=tmp_path / "second")) == 0
    assert model_loads == [str(run), base, str(run)]
    again = json.loads((tmp_path / "second" / "eval.json").read_text())
    assert again["base"]["cached"] is True and again["base"]["benchmarks"] == report["base"]["benchmarks"]
    assert "read from the cache" in (tmp_path / "second" / "eval.md").read_text()

    # Other settings are another key: scored again.
    assert main(argv(EVAL, "--seed 1", model=run, output_dir=tmp_path / "third")) == 0
    assert model_loads[-2:] == [str(run), base]


def test_base_model_none_skips_it_and_a_gone_base_is_said_in_one_line(run_folder, model_loads, tmp_path, capsys):
    run, base = run_folder
    assert main(argv(EVAL, "--base_model none", model=run, output_dir=tmp_path / "a")) == 0
    assert model_loads == [str(run)] and "base" not in json.loads((tmp_path / "a" / "eval.json").read_text())

    moved = tmp_path / "moved-run"
    moved.mkdir()
    for path in run.iterdir():
        if path.is_file():
            (moved / path.name).write_bytes(path.read_bytes())
    record = json.loads((moved / "up_trl_run.json").read_text())
    (moved / "up_trl_run.json").write_text(json.dumps({**record, "base_model": str(tmp_path / "deleted-base")}))
    capsys.readouterr()
    assert main(argv(EVAL, model=moved, output_dir=tmp_path / "b")) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if "base model" in line]
    gone = f"its folder {tmp_path / 'deleted-base'} no longer exists"
    assert notes == [f"up-trl eval: base model: not scored ({gone}); showing {moved} only"]
    assert model_loads[-1] == str(moved) and "base" not in json.loads((tmp_path / "b" / "eval.json").read_text())


def test_a_card_that_names_the_offline_smollm2_scores_its_local_copy(tmp_path, monkeypatch):
    """A run made with the Python API has a card, no run record: its `base_model` Hub id is the offline SmolLM2."""
    (tmp_path / "README.md").write_text("---\nbase_model: HuggingFaceTB/SmolLM2-135M-Instruct\n---\n# card\n")
    (tmp_path / "checkpoint-2").mkdir()
    assert recorded_base_model(str(tmp_path)) == recorded_base_model(str(tmp_path / "checkpoint-2"))
    assert recorded_base_model(str(tmp_path)) == "HuggingFaceTB/SmolLM2-135M-Instruct"
    monkeypatch.setattr("up_trl.models.offline.smollm2_path", lambda: "/cache/SmolLM2-135M-Instruct-float32")
    assert loadable_base("HuggingFaceTB/SmolLM2-135M-Instruct") == ("/cache/SmolLM2-135M-Instruct-float32", "")
    assert recorded_base_model(str(tmp_path / "nothing-here")) is None
