"""`up-trl eval`: the estimators by hand, and a tiny end-to-end run that writes JSON and markdown."""

import json

import pytest

from up_trl.evaluate import default_ks, main, majority_correct, pass_at_k, score_problem


@pytest.mark.parametrize(
    "n, c, k, expected",
    [
        pytest.param(4, 0, 1, 0.0, id="none_correct"),
        pytest.param(4, 4, 1, 1.0, id="all_correct"),
        pytest.param(4, 1, 1, 0.25, id="pass1_is_mean"),
        pytest.param(4, 1, 2, 0.5, id="1_of_4_at_2: 1-C(3,2)/C(4,2)"),
        pytest.param(4, 2, 2, 5 / 6, id="2_of_4_at_2: 1-C(2,2)/C(4,2)"),
        pytest.param(4, 1, 4, 1.0, id="any_correct_at_n"),
    ],
)
def test_pass_at_k_unbiased_estimator(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_needs_enough_samples():
    with pytest.raises(ValueError, match="at least 8 samples"):
        pass_at_k(4, 1, 8)


@pytest.mark.parametrize(
    "answers, correct, expected",
    [
        pytest.param(["7", "8", "7", None], [1, 0, 1, 0], 1.0, id="majority_right"),
        pytest.param(["8", "8", "7", "7"], [0, 0, 1, 1], 0.0, id="tie_goes_to_first"),
        pytest.param([None, None, "3"], [0, 0, 1], 1.0, id="no_answer_never_wins"),
        pytest.param([None, None], [0, 0], 0.0, id="nothing_extracted"),
    ],
)
def test_majority_vote(answers, correct, expected):
    assert majority_correct(answers, correct) == expected


def test_score_problem_row_and_default_ks():
    assert default_ks(4) == [1, 2, 4] and default_ks(6) == [1, 2, 4, 6] and default_ks(1) == [1]
    row = score_problem(["1", "2", "1", "3"], [1.0, 0.0, 1.0, 0.0], [1, 2, 4])
    assert row == {"avg@4": 0.5, "maj@4": 1.0, "pass@1": 0.5, "pass@2": pytest.approx(5 / 6), "pass@4": 1.0}


def test_unknown_benchmark_is_refused_before_the_model_loads(monkeypatch):
    import up_trl.models

    monkeypatch.setattr(up_trl.models, "smollm2_path", lambda: pytest.fail("model loaded before the check"))
    with pytest.raises(ValueError, match="Unknown benchmark.*aime2099.*offline: gsm8k, math500, minerva"):
        main(["--benchmarks", "aime2099"])


def test_tiny_model_end_to_end(tmp_path):
    from up_trl.models import save_tiny_model

    model = save_tiny_model(tmp_path / "tiny")
    out = tmp_path / "eval"
    assert main(["--model", model, "--benchmarks", "gsm8k", "math500", "--k", "2", "--limit", "2",
                 "--max_new_tokens", "4", "--output_dir", str(out), "--save_samples"]) == 0  # fmt: skip
    report = json.loads((out / "eval.json").read_text())
    assert set(report["benchmarks"]) == {"gsm8k", "math500"}
    for row in report["benchmarks"].values():
        assert row["problems"] == 2
        assert {"avg@2", "maj@2", "pass@1", "pass@2"} <= row.keys()
        assert 0.0 <= row["pass@1"] <= row["pass@2"] <= 1.0
        assert len(row["samples"]) == 2 and all(len(s["completions"]) == 2 for s in row["samples"])
    table = (out / "eval.md").read_text()
    assert "| gsm8k | 2 |" in table and "pass@2" in table
