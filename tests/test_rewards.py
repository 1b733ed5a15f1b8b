r"""Rewards: closed-form tables (extraction, the echo exploit, issue 17 classes), hostile inputs, threads, registry."""

from __future__ import annotations

import json
import logging
import multiprocessing
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import math_verify
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from math_verify import parse, verify
from trl.rewards import accuracy_reward
from trl.trainer.utils import get_callable_name
from work_count import work

from up_trl import rewards
from up_trl.rewards import dapo_math_reward, extract_answer, make_math_accuracy_reward, math_accuracy_reward
from up_trl.rewards import pool as reward_pool
from up_trl.rewards.extraction import prediction
from up_trl.rewards.verification import dropped_letters

# A hang guard for the threads' `join` and `result`, never an assertion on speed (a hostile item costs at most ~10 s).
CALL_BOUND_S = 25.0


def chat(text):
    return [{"role": "assistant", "content": text}]


# --- Closed-form tables ----------------------------------------------------------------------------------------------
ACCURACY_CASES = [
    pytest.param(r"So the total is \boxed{42}.", "42", 1.0, id="correct_boxed"),
    pytest.param(r"So the total is \boxed{41}.", "42", 0.0, id="wrong_boxed"),
    pytest.param(r"Half: \boxed{\frac{1}{2}}", "0.5", 1.0, id="nested_boxed_frac"),
    pytest.param(r"\boxed{\frac{\sqrt{4}}{4}}", "1/2", 1.0, id="nested_braces_two_levels"),
    pytest.param(r"\boxed{5} no wait, \boxed{6}", "6", 1.0, id="last_boxed_wins"),
    pytest.param(r"\boxed{6} and then \boxed{5", "6", 0.0, id="unclosed_last_box_voids_the_reply"),
    pytest.param(r"\boxed{5}. The final answer is 6.", "6", 1.0, id="later_phrase_beats_earlier_boxed"),
    pytest.param(r"\boxed{5}. The final answer is 6.", "5", 0.0, id="earlier_boxed_is_not_the_answer"),
    pytest.param(r"The final answer is 6. So \boxed{5}", "5", 1.0, id="later_boxed_beats_earlier_phrase"),
    pytest.param("She has 42 apples.", "40 + 2 = <<40+2=42>>42 apples.\n#### 42", 1.0, id="gsm8k_gold"),
    pytest.param(r"\boxed{1000}", "#### 1,000", 1.0, id="gsm8k_gold_thousands"),
    pytest.param(r"\boxed{9/7}", r"So the ratio is $\boxed{\frac{9}{7}}$.", 1.0, id="math_solution_gold"),
    pytest.param(r"\boxed{\frac{9}{7}}", r"$\frac{9}{7}$", 1.0, id="dollar_gold"),
    pytest.param("First 3, then 5. The final answer is 7. Done in 2 steps.", "7", 1.0, id="final_answer_phrase"),
    pytest.param("**Final Answer:** 12", "12", 1.0, id="markdown_final_answer"),
    pytest.param("Answer: 12 apples", "12", 1.0, id="answer_colon"),
    pytest.param("The answer is $\\frac{1}{2}$.", "0.5", 1.0, id="phrase_latex"),
    pytest.param("The answer is 7. Check: 3 + 4 = 7, plus 10 more.", "7", 1.0, id="phrase_beats_last_number"),
    pytest.param("#### 12", "12", 1.0, id="hash_phrase_in_reply"),
    pytest.param("3 plus 4 gives 7", "7", 1.0, id="last_number_fallback"),
    pytest.param("7 is close, but I get 8", "7", 0.0, id="last_number_is_strict"),
    pytest.param("Total: 1,234,567 items", "1234567", 1.0, id="last_number_thousands"),
    pytest.param("The result is -3", "-3", 1.0, id="last_number_negative"),
    pytest.param("it is 10-3", "7", 0.0, id="hyphen_is_not_a_sign"),
    pytest.param("It is 3 + 4 = 7", "7", 1.0, id="trailing_equals_via_last_number"),
    # The echo exploit (NOTES "How the offline model does"): the question's own expression must never score.
    pytest.param("The sum is 150, which is 71 + 88", "159", 0.0, id="echo_then_operand"),
    pytest.param("To find 71 + 88 we add the tens and get 150", "159", 0.0, id="echo_then_wrong_number"),
    pytest.param("The answer is 71 + 88.", "159", 0.0, id="echo_in_phrase"),
    pytest.param(r"\boxed{71 + 88}", "159", 0.0, id="echo_in_boxed"),
    pytest.param(r"\boxed{12 \times 3}", "36", 0.0, id="echo_times_in_boxed"),
    pytest.param(r"\boxed{71 + 88 = 159}", "159", 1.0, id="equation_rhs_in_boxed"),
    pytest.param(r"\boxed{2+3}", "2 + 3", 1.0, id="expression_gold_allows_expression"),
    pytest.param(r"\boxed{5 - 2\sqrt{3}}", r"5-2\sqrt{3}", 1.0, id="surd_is_not_arithmetic"),
    pytest.param(r"\boxed{(1,2)}", "(1, 2)", 1.0, id="tuple_gold"),
    pytest.param(r"\boxed{\text{(B)}}", "B", 1.0, id="choice_gold"),
    pytest.param("", "42", 0.0, id="empty_reply"),
    pytest.param("no digits at all", "42", 0.0, id="no_answer"),
]


def test_whole_reply_math_verify_is_fooled_by_the_echo():
    """Why the extraction is strict: math-verify on the whole reply scores the echoed question as 159."""
    reply = "The sum is 150, which is 71 + 88"
    assert verify(parse("159"), parse(reply)) is True
    assert math_accuracy_reward([reply], solution=["159"]) == [0.0]


@pytest.mark.parametrize(("reply", "gold", "expected"), [
    pytest.param(r"\boxed{42}", "42", 1.0, id="correct_plus_one"),
    pytest.param(r"\boxed{41}", "42", -1.0, id="wrong_minus_one"),
    pytest.param("no answer", "42", -1.0, id="no_answer_minus_one"),
    pytest.param(r"\boxed{42}", "", None, id="unparseable_gold_none"),
])  # fmt: skip
def test_dapo_plus_minus_one(reply, gold, expected):
    assert dapo_math_reward([chat(reply)], solution=[gold]) == [expected]
    assert make_math_accuracy_reward(correct=1.0, incorrect=-1.0)([reply], solution=[gold]) == [expected]


@pytest.mark.parametrize("gold", ["", "   ", "$$", "???", None, r"\boxed{}"], ids=repr)
def test_unparseable_gold_is_none_and_counted(gold):
    reward = make_math_accuracy_reward()
    assert reward([r"\boxed{42}", "no answer", "42"], solution=[gold, gold, "42"]) == [None, None, 1.0]
    assert (reward.stats.skipped_gold, reward.stats.no_answer, reward.stats.correct) == (2, 0, 1)
    assert reward([r"\boxed{1}"], solution=[gold]) == [None]
    assert reward.stats.skipped_gold == 3 and reward.stats.calls == 2 and reward.stats.completions == 4


def test_stats_and_trl_logging_hooks():
    """Inside GRPOTrainer the reward receives log_metric / log_extra (and prompts, completion_ids, trainer_state)."""
    reward = make_math_accuracy_reward(name="acc")
    metrics, extra = {}, {}
    hooks = dict(prompts=["p"] * 4, completion_ids=[[1]] * 4, trainer_state=None, log_metric=metrics.__setitem__)
    replies = [r"\boxed{3}", "nothing", r"\boxed{2}", r"\boxed{3}"]
    out = reward(replies, solution=["3", "3", "???", "4"], log_extra=extra.__setitem__, **hooks)
    assert out == [1.0, 0.0, None, 0.0]
    fracs = dict(skipped_gold_frac=0.25, no_answer_frac=0.25, timeout_frac=0.0)
    assert metrics == {f"rewards/acc/{name}": value for name, value in fracs.items()}
    assert extra == {"acc/answer": ["3", "", "2", "3"], "acc/gold": ["3", "3", "???", "4"]}
    stats = dict(calls=1, completions=4, correct=1, skipped_gold=1, no_answer=1, timeouts=0, worker_restarts=0)
    assert reward.stats.as_dict() == stats
    reward.stats.reset()
    assert reward.stats == rewards.RewardStats()


def test_solution_column_option_and_missing_column_error():
    reward = make_math_accuracy_reward(solution_column="answer")
    assert reward([r"\boxed{5}"], answer=["5"]) == [1.0]
    with pytest.raises(ValueError, match="column named 'answer'"):
        reward([r"\boxed{5}"], solution=["5"])
    with pytest.raises(ValueError, match="2 completions but 1 gold"):
        math_accuracy_reward(["1", "2"], solution=["1"])


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param(r"a \boxed{1} b \boxed{\frac{1}{2}}", r"\frac{1}{2}", id="last"),
    pytest.param(r"\boxed{\boxed{7}}", r"\boxed{7}", id="outermost_of_nested"),
    pytest.param(r"\boxed{\{1, 2\}}", r"\{1, 2\}", id="escaped_braces"),
    pytest.param(r"\fbox{3}", "3", id="fbox"),
    pytest.param(r"\boxed {4}", "4", id="space_before_brace"),
    pytest.param(r"\boxed{}", None, id="empty"),
    pytest.param(r"\boxed{8", None, id="unclosed"),
    pytest.param("{" * 5000, None, id="open_braces"),
    pytest.param(r"so $\boxed{\frac{1}{2}}$.", r"\frac{1}{2}", id="nested"),
    pytest.param(r"\boxed{\sqrt{\frac{a^{2}}{b_{1}}}}", r"\sqrt{\frac{a^{2}}{b_{1}}}", id="deeply_nested"),
    pytest.param(r"answer $\boxed 2$.", None, id="no_braces_is_no_box"),
    pytest.param(r"\boxed{ \text{(C)} }", r"\text{(C)}", id="text_stripped"),
    pytest.param("no box here", None, id="none"),
])  # fmt: skip
def test_last_boxed(text, expected):
    """`last_boxed`, which is also the data loader's `extract_boxed` (test_data.py)."""
    assert rewards.last_boxed(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param(r"x \boxed{2} The answer is 3", ("3", "phrase"), id="last_statement_by_position"),
    pytest.param(r"The answer is $\boxed{2}$.", ("2", "boxed"), id="box_inside_a_phrase"),
    pytest.param("The answer is 3. Then 4", ("3", "phrase"), id="phrase_second"),
    pytest.param("answer: 1\nfinal answer: 2\n9", ("2", "phrase"), id="last_phrase"),
    pytest.param("3.5 then 2.25.", ("2.25", "number"), id="number_last"),
    pytest.param("x = 5", ("5", "phrase"), id="equals_right_side_is_the_final_statement"),
    pytest.param("abc", None, id="none"),
])  # fmt: skip
def test_extract_answer(text, expected):
    assert extract_answer(text) == expected


def test_extract_gold_and_completion_text():
    assert rewards.extract_gold("Add: 40 + 2 = 42.\n#### 42") == ("42", "phrase")
    assert rewards.extract_gold(r"so $\boxed{7}$") == ("7", "boxed")
    assert rewards.extract_gold(7) == ("7", "phrase")
    assert rewards.extract_gold(None) is None and rewards.extract_gold("  ") is None
    assert rewards.completion_text([*chat("a"), *chat("b")]) == "b"
    assert rewards.completion_text(chat([{"type": "text", "text": "c"}])) == "c"
    assert rewards.completion_text(chat(None)) == ""
    assert rewards.completion_text(42) == "" and rewards.completion_text([]) == ""


@pytest.mark.parametrize(("reply", "expected"), [
    pytest.param(r"so \boxed{3}", 1.0, id="boxed"),
    pytest.param(r"\boxed{\frac{1}{2}}", 1.0, id="nested"),
    pytest.param(r"\boxed{ }", 0.0, id="blank"),
    pytest.param(r"\boxed{3", 0.0, id="unclosed"),
    pytest.param("3", 0.0, id="plain"),
])  # fmt: skip
def test_boxed_format_reward(reply, expected):
    assert rewards.boxed_format_reward([reply, chat(reply)]) == [expected, expected]


def test_think_format_reward_reuses_trl_and_accepts_strings():
    replies = ["<think>a</think>b", chat("<think>a</think>b"), "b", chat(None)]
    assert rewards.think_format_reward(replies) == [1.0, 1.0, 0.0, 0.0]


def test_rewards_pickle_and_keep_their_names():
    clone = pickle.loads(pickle.dumps(dapo_math_reward))
    assert get_callable_name(clone) == "dapo_math_reward"
    assert clone([r"\boxed{1}"], solution=["2"]) == [-1.0]


# ---------------------------------------------------------------------------------------------------------------------
# Hostile inputs: never raise, bounded work (counted by `work_count.work`, never timed), a value from the allowed set.
HOSTILE = {
    "huge_100kb": "a" * 100_000,
    "huge_then_answer": "x " * 50_000 + r"\boxed{42}",
    "unclosed_boxed": r"\boxed{" + "4" * 1000,
    "open_braces_5000": "{" * 5000,
    "boxed_deep_braces_5000": r"\boxed{" + "{" * 5000 + "42" + "}" * 5000 + "}",
    "boxed_deep_braces_200": r"\boxed{" + "{" * 200 + "42" + "}" * 200 + "}",
    "frac_tower": r"\boxed{" + r"\frac{1}{" * 80 + "2" + "}" * 80 + "}",
    "sqrt_tower": r"\boxed{" + r"\sqrt{" * 150 + "2" + "}" * 150 + "}",
    "power_tower": r"\boxed{9^{9^{9^{9^{9}}}}}",
    "factorial_bomb": r"\boxed{(10^{100})!}",
    "left_right": r"\boxed{" + r"\left(" * 100 + "1" + r"\right)" * 100 + "}",
    "latex_garbage": r"\frac\frac\sqrt^^__{}{}\left\right" * 100,
    "binary": bytes(range(256)).decode("latin-1") * 40,
    "nul_ff": "\x00\xff" * 1000,
    "emoji": "\U0001f916" * 3000 + " answer: \U0001f600",
    "lone_surrogate": "\ud800 " + r"\boxed{42}",
    "many_boxed": r"\boxed{" * 20000,
    "many_numbers": "1 " * 50000,
    "many_phrases": "answer: " * 10000,
    "long_answer": "The answer is " + "9" * 3000,
    "empty": "",
}
HOSTILE_EXPECTED = {"huge_then_answer": 1.0, "lone_surrogate": 1.0}  # the rest: 0.0


def _hostile_completions():
    return [
        *(pytest.param(v, HOSTILE_EXPECTED.get(k, 0.0), id=k) for k, v in HOSTILE.items()),
        pytest.param(None, 0.0, id="none_completion"),
        pytest.param([{"role": "assistant", "content": None}], 0.0, id="none_content"),
        pytest.param([{"role": "assistant"}], 0.0, id="no_content_key"),
        pytest.param([], 0.0, id="empty_message_list"),
        pytest.param({"content": r"\boxed{42}"}, 1.0, id="bare_message_dict"),
        pytest.param([{"content": [{"type": "text", "text": r"\boxed{42}"}]}], 1.0, id="content_blocks"),
        pytest.param(b"\\boxed{42}", 1.0, id="bytes"),
        pytest.param(42, 0.0, id="int_completion"),
    ]


@pytest.mark.parametrize(("completion", "expected"), _hostile_completions())
def test_hostile_completion(completion, expected):
    assert math_accuracy_reward([completion], solution=["42"]) == [expected]
    assert dapo_math_reward([completion], solution=["42"]) == [2 * expected - 1]
    assert rewards.boxed_format_reward([completion])[0] in (0.0, 1.0)
    assert rewards.think_format_reward([completion]) == [0.0]
    # Bounded work: the reply is cut to its last MAX_CHARS characters before any (linear) pattern sees it.
    text = rewards.completion_text(completion)
    assert work(extract_answer, text) == work(extract_answer, text[-rewards.MAX_CHARS :])


@pytest.mark.skipif(os.name != "posix", reason="fork: the workers inherit the monkeypatched verify_answer")
def test_hostile_batch_is_bounded_per_item(monkeypatch, fresh_pools):
    """Each item has its own bound: only the item that never returns times out (`boxed_deep_braces_200` may)."""
    monkeypatch.setattr(reward_pool, "verify_answer", _hang_on("777"))
    reward = make_math_accuracy_reward(num_workers=2, item_timeout_s=3.0)
    out = reward.outcomes([*HOSTILE.values(), r"\boxed{777}"], solution=["42"] * len(HOSTILE) + ["777"])
    expected = [rewards.CORRECT if k in HOSTILE_EXPECTED else rewards.WRONG for k in HOSTILE] + [rewards.TIMEOUT]
    deep = list(HOSTILE).index("boxed_deep_braces_200")
    assert out[deep] in (rewards.WRONG, rewards.TIMEOUT)
    assert out[:deep] + out[deep + 1 :] == expected[:deep] + expected[deep + 1 :]


def test_hostile_gold_never_raises():
    golds = [HOSTILE["power_tower"], "{" * 5000, HOSTILE["binary"], "\x00", None, 3.5, ["x"]]
    out = math_accuracy_reward([r"\boxed{42}"] * len(golds), solution=golds)
    assert all(v in (0.0, 1.0, None) for v in out)
    assert out[4] is None and out[6] is None


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reply=st.text(), gold=st.text(max_size=40))
def test_property_text_never_raises(reply, gold):
    assert math_accuracy_reward([reply], solution=["42"])[0] in (0.0, 1.0)
    assert math_accuracy_reward([r"\boxed{42}"], solution=[gold])[0] in (0.0, 1.0, None)
    assert rewards.boxed_format_reward([reply])[0] in (0.0, 1.0)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=st.binary(max_size=2000), suffix=st.sampled_from(["", r"\boxed{", r"\boxed{42}", "{" * 50, "= 42"]))
def test_property_binary_never_raises(raw, suffix):
    reply = raw.decode("latin-1") + suffix
    out = dapo_math_reward([reply, chat(reply)], solution=["42", "42"])
    assert out[0] == out[1] and out[0] in (1.0, -1.0)
    assert rewards.think_format_reward([reply]) == [0.0] or reply.startswith("<think>")


# --- Threads, worker failures, in-process mode -----------------------------------------------------------------------
def test_reward_from_a_thread():
    results = {}

    def target():
        replies = [r"\boxed{42}", r"\boxed{41}", HOSTILE["power_tower"]]
        results["out"] = math_accuracy_reward(replies, solution=["42"] * 3)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(timeout=CALL_BOUND_S)
    assert not thread.is_alive() and results["out"] == [1.0, 0.0, 0.0]


def test_reward_from_a_thread_pool_concurrently():
    def score(i):
        return math_accuracy_reward([rf"\boxed{{{i}}}", f"The answer is {i + 1}."], solution=[str(i)] * 2)

    with ThreadPoolExecutor(max_workers=4) as pool:
        assert list(pool.map(score, range(8))) == [[1.0, 0.0]] * 8


@pytest.mark.skipif(os.name != "posix", reason="SIGKILL")
def test_dead_worker_between_calls_is_replaced():
    reward = make_math_accuracy_reward(num_workers=1)
    assert reward([r"\boxed{1}"], solution=["1"]) == [1.0]  # starts the one-worker pool
    workers = [p for p in multiprocessing.active_children() if p.is_alive()]
    assert workers
    for worker in workers:  # pebble's workers (and any other child): a worker that died between calls
        os.kill(worker.pid, signal.SIGKILL)
        worker.join(timeout=5)
    assert reward([r"\boxed{4}", r"\boxed{5}"], solution=["4", "4"]) == [1.0, 0.0]
    assert reward.stats.timeouts == 0


# In-process, math-verify's SIGALRM can fire inside hypothesis' gc callback, which swallows it (a warning).
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_in_process_mode_main_thread_and_thread(monkeypatch):
    monkeypatch.setenv("UP_TRL_REWARD_WORKERS", "0")
    reward = make_math_accuracy_reward()
    replies = [r"\boxed{42}", "The answer is 71 + 88.", HOSTILE["boxed_deep_braces_200"]]
    assert reward(replies, solution=["42", "159", "42"]) == [1.0, 0.0, 0.0]
    with ThreadPoolExecutor(max_workers=1) as pool:  # no SIGALRM here: math-verify runs without its timeouts
        assert pool.submit(reward, replies[:2], solution=["42", "159"]).result(timeout=CALL_BOUND_S) == [1.0, 0.0]
    with pytest.raises(ValueError, match="UP_TRL_REWARD_WORKERS"):
        monkeypatch.setenv("UP_TRL_REWARD_WORKERS", "many")
        reward(["1"], solution=["1"])


def test_falls_back_in_process_when_workers_cannot_start(monkeypatch):
    def no_fork(num_workers):
        raise OSError("fork refused")

    monkeypatch.setattr(reward_pool, "_POOLS", {})
    monkeypatch.setattr(reward_pool, "_Pool", no_fork)
    monkeypatch.setattr(reward_pool, "_UNAVAILABLE_IN", set())
    reward = make_math_accuracy_reward(num_workers=3)
    assert reward([r"\boxed{42}"], solution=["42"]) == [1.0]
    assert reward_pool._UNAVAILABLE_IN == {os.getpid()}  # in-process from now on, not one failed start per call
    assert reward([r"\boxed{41}"], solution=["42"]) == [0.0]


def test_batch_of_64_is_fast_on_a_warm_pool(monkeypatch):
    """A warm pool takes a batch as it is: no new pool, one round (speed: benchmarks/reward_throughput.py)."""
    math_accuracy_reward([r"\boxed{1}"], solution=["1"])  # warm
    replies = [rf"Step {i}: {i} + 12 = \boxed{{{i + 12 if i % 4 else i}}}" for i in range(64)]
    golds = [f"#### {i + 12}" for i in range(64)]
    warm, started, rounds = reward_pool._pool(reward_pool.default_num_workers()), [], []
    real_run = reward_pool._run
    monkeypatch.setattr(reward_pool, "_Pool", lambda *args: started.append(args))
    monkeypatch.setattr(
        reward_pool, "_run", lambda pool, tasks, *a: rounds.append((pool, len(tasks))) or real_run(pool, tasks, *a)
    )
    out = math_accuracy_reward(replies, solution=golds)
    assert out == [0.0 if i % 4 == 0 else 1.0 for i in range(64)]
    assert started == [] and rounds == [(warm, 64)]


# --- Registry --------------------------------------------------------------------------------------------------------
def test_registry_names():
    assert sorted(rewards.REWARD_FUNCS) == ["boxed_format", "dapo_math", "math_accuracy", "think_format"]
    assert sorted(rewards.REWARD_FACTORIES) == ["dapo_math", "math_accuracy", "soft_overlong"]
    funcs = rewards.get_reward_funcs(["math_accuracy", "dapo_math", "boxed_format", "think_format"])
    assert funcs == [math_accuracy_reward, dapo_math_reward, rewards.boxed_format_reward, rewards.think_format_reward]
    names = [f.__name__ for f in funcs]
    assert names == "math_accuracy_reward dapo_math_reward boxed_format_reward think_format_reward".split()


def test_registry_dotted_path(monkeypatch):
    monkeypatch.setattr(sys, "path", list(sys.path))  # a failed import adds the cwd, as `trl grpo` does
    assert rewards.get_reward_funcs(["up_trl.rewards.boxed_format_reward"]) == [rewards.boxed_format_reward]
    (accuracy,) = rewards.get_reward_funcs(["trl.rewards.accuracy_reward"])
    assert accuracy.__name__ == "accuracy_reward"
    with pytest.raises(ValueError, match="Could not load reward function 'up_trl.rewards.nope'"):
        rewards.get_reward_funcs(["up_trl.rewards.nope"])
    with pytest.raises(ValueError, match="Could not load reward function 'no_such_pkg.reward'"):
        rewards.get_reward_funcs(["no_such_pkg.reward"])
    with pytest.raises(ValueError, match="not a reward function"):
        rewards.get_reward_funcs(["up_trl.rewards.MAX_CHARS"])


def test_registry_unknown_name_lists_known_names():
    with pytest.raises(ValueError, match="Unknown reward function 'accuracy'") as info:
        rewards.get_reward_funcs(["accuracy"])
    for name in ("boxed_format", "dapo_math", "math_accuracy", "soft_overlong", "think_format", "accuracy_reward"):
        assert name in str(info.value)


def test_registry_options_build_new_rewards():
    names = ["math_accuracy", "dapo_math", "soft_overlong"]
    options = dict(max_completion_length=100, soft_punish_cache=20, item_timeout_s=5.0)
    acc, dapo, overlong = rewards.get_reward_funcs(names, **options)
    assert acc is not math_accuracy_reward and acc.item_timeout_s == 5.0 and acc.__name__ == "math_accuracy_reward"
    assert (dapo.correct, dapo.incorrect, dapo.__name__) == (1.0, -1.0, "dapo_math_reward")
    assert overlong.__name__ == "soft_overlong_punishment_reward"  # TRL's own function, registered
    assert type(overlong).__module__ == "trl.rewards.other_rewards"
    assert overlong(completion_ids=[[1] * 80, [1] * 90, [1] * 101]) == [0.0, -0.5, -1.0]
    (default_cache,) = rewards.get_reward_funcs(["soft_overlong"], max_completion_length=100)  # cache: 100 // 5 [DAPO]
    assert default_cache(completion_ids=[[1] * 80, [1] * 90]) == [0.0, -0.5]
    with pytest.raises(ValueError, match=r"'soft_overlong' needs options: .*max_completion_length=\.\.\."):
        rewards.get_reward_funcs(["soft_overlong"])
    with pytest.raises(ValueError, match="soft_punish_cache=200"):
        rewards.get_reward_funcs(["soft_overlong"], max_completion_length=100, soft_punish_cache=200)


# --- A final-answer phrase is one expression, never one number of it (issue 8, item 1) -------------------------------
PHRASE_CASES = [
    pytest.param("The answer is 2x + 3.", "$2x+3$", 1.0, id="polynomial_right"),
    pytest.param("The answer is 2x + 3.", "3", 0.0, id="polynomial_vs_its_constant"),
    pytest.param("The answer is 2x + 3.", "2", 0.0, id="polynomial_vs_its_coefficient"),
    pytest.param("Answer: 3n + 12", "12", 0.0, id="answer_colon_polynomial_vs_constant"),
    pytest.param("Answer: 3n + 12", "3n+12", 1.0, id="answer_colon_polynomial_right"),
    pytest.param("The answer is 5 - 2i.", "2", 0.0, id="complex_vs_a_part"),
    pytest.param("The answer is 5 - 2i.", "5-2i", 1.0, id="complex_right"),
    pytest.param("The answer is 12 apples.", "12", 1.0, id="unit_prose_after"),
    pytest.param("The answer is 12 apples and 3 oranges.", "12", 0.0, id="second_value_after"),
    pytest.param("The answer is 5 or 6.", "5", 0.0, id="hedge_or"),
    pytest.param("The answer is $2$ or $3$.", "2", 0.0, id="hedge_two_latex_segments"),
    pytest.param("The answer is 12 because 3 x 4 = 13.", "13", 0.0, id="justification_with_an_equation"),
    pytest.param("The answer is not 12.", "12", 0.0, id="negation_first"),
    pytest.param("The answer is 12, not 13.", "13", 0.0, id="negation_after"),
    pytest.param("The answer is 1,000.", "1000", 1.0, id="thousands_separator"),
    pytest.param("#### 1,000,000", "1000000", 1.0, id="hash_thousands"),
    pytest.param("The answer is x = 4.", "4", 1.0, id="x_equals"),
    pytest.param("The answer is x = 4 or x = 5.", "5", 0.0, id="x_equals_hedge"),
    pytest.param("The answer is 50%.", "50", 1.0, id="percent"),
    pytest.param("The answer is $12.", "12", 1.0, id="currency_sign"),
    pytest.param("The answer is 2pi.", r"2\pi", 1.0, id="bare_pi"),
    pytest.param("The answer is sqrt(2)/2.", r"\frac{\sqrt{2}}{2}", 1.0, id="bare_sqrt"),
    pytest.param("The answer is Evelyn.", r"\text{Evelyn}", 1.0, id="text_answer"),
    pytest.param("The answer is $2x+3$ for every x.", "3", 0.0, id="latex_polynomial_vs_constant"),
    pytest.param("The answer is 71 + 88.", "159", 0.0, id="echo_still_refused"),
    pytest.param("The answer is 71 + 88.", "71 + 88", 1.0, id="echo_shape_gold"),
]


def test_boxed_and_phrase_agree_on_expressions():
    """The same answer, boxed or in a phrase, gets the same score (today's boxed path was already right)."""
    answers, golds = ["2x + 3", "3n + 12", "5 - 2i"], ["3", "12", "2"]
    boxed = [rf"\boxed{{{a}}}" for a in answers]
    phrases = [f"The answer is {a}." for a in answers]
    assert math_accuracy_reward(boxed, solution=golds) == math_accuracy_reward(phrases, solution=golds) == [0.0] * 3


# --- Each item bounded, never the call; the pool's process rules (issue 8, item 2) -----------------------------------
def _hang_on(marker):
    """verify_answer that never returns for the prediction `marker` (a stand-in for a C-level hang)."""
    real = reward_pool.verify_answer

    def verify(pred, *args):
        if pred == marker:
            time.sleep(3600)
        return real(pred, *args)

    return verify


@pytest.mark.skipif(os.name != "posix", reason="fork: the workers inherit the monkeypatched verify_answer")
def test_hung_item_costs_its_own_bound_and_is_counted(monkeypatch, fresh_pools):
    monkeypatch.setattr(reward_pool, "verify_answer", _hang_on("777"))
    reward = make_math_accuracy_reward(num_workers=1, item_timeout_s=1.0, timeout_reward=-0.5, name="acc")
    metrics = {}
    replies = [r"\boxed{777}", r"\boxed{2}", r"\boxed{5}", r"\boxed{3}"]
    # The call returns: the hung item's bound fired, its worker was replaced, and the items queued behind it scored.
    out = reward(replies, solution=["777", "2", "2", "3"], log_metric=metrics.__setitem__)
    assert out == [-0.5, 1.0, 0.0, 1.0]  # the hung item gets timeout_reward, never a silent "wrong"
    assert metrics["rewards/acc/timeout_frac"] == 0.25
    assert (reward.stats.timeouts, reward.stats.worker_restarts) == (1, 1)
    assert reward.outcomes([r"\boxed{777}", r"\boxed{9}"], ["777", "9"]) == [rewards.TIMEOUT, rewards.CORRECT]
    assert reward([r"\boxed{4}"], solution=["4"]) == [1.0]  # the pool keeps working
    assert reward.stats.timeouts == 1  # outcomes() does not touch the stats


def test_a_large_call_has_no_call_budget(monkeypatch):
    """Old code: 10 s for the whole call. Now 400 distinct items scored in one call all come back scored."""
    replies = [rf"\boxed{{\frac{{{i}}}{{{i + 1}}}}}" for i in range(400)]
    golds = [f"{i}/{i + 1}" if i % 2 else f"{i + 1}/{i + 2}" for i in range(400)]
    reward = make_math_accuracy_reward(num_workers=2)
    out = reward(replies, solution=golds)
    assert out == [1.0 if i % 2 else 0.0 for i in range(400)] and reward.stats.timeouts == 0


@pytest.mark.skipif(os.name != "posix", reason="os.fork")
def test_forked_child_gets_its_own_pool(fresh_pools):
    assert math_accuracy_reward([r"\boxed{1}"], solution=["1"]) == [1.0]  # the parent's pool exists
    parent_pool = reward_pool._POOLS[reward_pool.default_num_workers()]
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # a DataLoader worker, say
        try:
            ok = not reward_pool._POOLS and math_accuracy_reward([r"\boxed{2}"], solution=["2"]) == [1.0]
            ok = ok and all(p.pid == os.getpid() for p in reward_pool._POOLS.values())
            os.write(write, b"ok" if ok else b"no")
        finally:
            os._exit(0)
    os.close(write)
    assert os.read(read, 2) == b"ok"
    os.waitpid(pid, 0)
    assert reward_pool._POOLS[reward_pool.default_num_workers()] is parent_pool
    assert math_accuracy_reward([r"\boxed{3}"], solution=["3"]) == [1.0]


def _score_one_and_return() -> None:
    assert math_accuracy_reward([r"\boxed{2}"], solution=["2"]) == [1.0]  # starts this process's own pool
    assert reward_pool._POOLS, "scored in-process: the test would not exercise the pool"


@pytest.mark.skipif(os.name != "posix", reason="fork")
def test_multiprocessing_child_with_a_pool_exits(fresh_pools):
    """A multiprocessing child that scored with the pool exits when its work is done."""
    child = multiprocessing.get_context("fork").Process(target=_score_one_and_return)
    child.start()
    child.join(timeout=60)
    try:
        assert child.exitcode == 0, "the child hung at exit (or failed)"
    finally:
        if child.is_alive():
            for pid in _descendants(child.pid):
                os.kill(pid, signal.SIGKILL)
            child.kill()


def _descendants(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children")
    kids = [int(k) for k in children.read_text().split()] if children.exists() else []
    return [d for k in kids for d in _descendants(k)] + kids


def test_unguarded_main_script_runs_once(tmp_path):
    """A script without `if __name__ == "__main__"` that calls the reward is not re-run by the workers."""
    log = tmp_path / "runs.txt"
    script = tmp_path / "train.py"
    script.write_text(
        "from up_trl.rewards import make_math_accuracy_reward\n"
        f"open({str(log)!r}, 'a').write('run\\n')\n"
        "reward = make_math_accuracy_reward(num_workers=2)\n"
        "print(reward([r'\\boxed{1}', r'\\boxed{2}', r'\\boxed{3}'], solution=['1', '2', '4']))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[1.0, 1.0, 0.0]"
    assert log.read_text() == "run\n"


def test_verify_many_and_outcome_constants():
    assert (rewards.CORRECT, rewards.WRONG, rewards.GOLD_UNPARSEABLE, rewards.TIMEOUT) == (1, 0, 2, 3)
    tasks = [
        (r"\frac{1}{2}", "boxed", "0.5", "number"),
        ("1/2", "number", r"\frac{1}{2}", "phrase"),
        ("2x + 3", "phrase", "3", "number"),
        (None, "", "3", "number"),
        ("3", "number", "", "phrase"),
    ]
    expected = [rewards.CORRECT, rewards.CORRECT, rewards.WRONG, rewards.WRONG, rewards.GOLD_UNPARSEABLE]
    assert rewards.verify_many(tasks) == expected
    assert rewards.verify_many(tasks, num_workers=0) == expected
    assert rewards.verify_many([]) == []


# --- A failed gold parse is not cached (issue 8, item 3) -------------------------------------------------------------
def _parse_timing_out(when):
    """math_verify.parse, but where `when(text)`, what math-verify does when its SIGALRM fires: a warning and []."""
    real = math_verify.parse

    def parse(text, *args, **kwargs):
        if when(text):
            logging.getLogger("math_verify.parser").warning(f"Timeout during parsing: {text}")
            return []
        return real(text, *args, **kwargs)

    return parse


def test_failed_gold_parse_is_not_cached(monkeypatch):
    calls = []
    monkeypatch.setattr(math_verify, "parse", _parse_timing_out(lambda text: calls.append(text) or len(calls) == 1))
    gold = r"\frac{123}{457}"  # a gold no other test parses in this process
    assert rewards.verification.verify_answer("123/457", "number", gold, "boxed", None) == rewards.TIMEOUT
    assert rewards.verification.verify_answer("123/457", "number", gold, "boxed", None) == rewards.CORRECT
    parses = len(calls)
    assert rewards.verification.verify_answer("123/457", "number", gold, "boxed", None) == rewards.CORRECT
    assert len(calls) == parses + 1  # the successful gold parse is cached: only the prediction is parsed again


@pytest.mark.parametrize("where", ["gold", "answer", "comparison"])
def test_math_verify_own_timeout_is_a_timeout_not_wrong(monkeypatch, where):
    """math-verify turns its SIGALRM timeout into [] / False and a warning; the reward must count it as TIMEOUT."""
    real_verify = math_verify.verify
    marker = {"gold": "31/57", "answer": "62/114", "comparison": None}[where]  # what parses into a timeout

    def verify(*args, **kwargs):
        if where == "comparison":
            logging.getLogger("math_verify.grader").warning("Timeout during comparison")
            return False
        return real_verify(*args, **kwargs)

    monkeypatch.setattr(math_verify, "parse", _parse_timing_out(lambda text: marker and marker in text))
    monkeypatch.setattr(math_verify, "verify", verify)
    rewards.verification._parse_gold.cache_clear()
    assert rewards.verification.verify_answer("62/114", "number", "31/57", "number", None) == rewards.TIMEOUT
    assert rewards.verification.verify_answer("1", "number", "2", "number", None) == (
        rewards.TIMEOUT if where == "comparison" else rewards.WRONG
    )


@pytest.mark.skipif(os.name != "posix", reason="fork: the workers inherit the monkeypatched parse")
def test_math_verify_own_timeout_in_a_worker_is_counted(monkeypatch, fresh_pools):
    monkeypatch.setattr(math_verify, "parse", _parse_timing_out(lambda text: "62/114" in text))
    reward = make_math_accuracy_reward(num_workers=1, timeout_reward=-0.5)
    assert reward([r"\boxed{62/114}", r"\boxed{1}"], solution=["31/57", "2"]) == [-0.5, 0.0]
    assert (reward.stats.timeouts, reward.stats.worker_restarts) == (1, 0)


# ---------------------------------------------------------------------------------------------------------------------
# What a reply answers (issue 8's scorer benchmark rules): the last answer statement by position, voided by a later
# retraction unless restated; a phrase answer ends at a clause giving reasons; hedges and unevaluated operations answer
# nothing. Each rule has phrasings that `benchmarks/make_scorer_cases.py` never writes.
STATEMENT_CASES = [
    # The last statement by position: a box or a final-answer phrase, whichever comes later.
    pytest.param(r"\boxed{5} was my first guess; the final answer is 6.", "6", 1.0, id="phrase_after_box"),
    pytest.param(r"\boxed{5} was my first guess; the final answer is 6.", "5", 0.0, id="box_before_phrase"),
    pytest.param("Answer: 12\n\nOn reflection I box it: \\boxed{13}", "13", 1.0, id="box_after_phrase"),
    pytest.param("The answer is 12. Then the final answer is 14.", "12", 0.0, id="two_phrases_last_wins"),
    # A retraction after the statement voids it; a restatement after the last retraction answers anew.
    pytest.param("The answer is 42. Hmm, hold on, I dropped a term.", "42", 0.0, id="hold_on"),
    pytest.param(r"\boxed{17} Oops, that was a mistake.", "17", 0.0, id="oops_mistake_after_box"),
    pytest.param("So the final answer is 8.\nActually, I misread the question.", "8", 0.0, id="actually"),
    pytest.param("7 x 8 = 56. Scratch that.", "56", 0.0, id="retraction_after_last_number"),
    pytest.param("The answer is 3. Correction: it should be 4.", "4", 1.0, id="correction_restated"),
    pytest.param("The answer is 3. Correction: it should be 4.", "3", 0.0, id="correction_voids_first"),
    pytest.param("The answer is 10. Oops, it's 12.", "12", 1.0, id="oops_its"),
    pytest.param(r"\boxed{9} No, that is incorrect. The answer is 11.", "11", 1.0, id="new_phrase_after_retraction"),
    pytest.param("\\boxed{42}\n\nHmm, let me reconsider. I think it's 43.", "42", 0.0, id="reconsider_restated"),
    pytest.param("The answer is 42. But 6 x 7 is 43, so the answer must be 43.", "42", 0.0, id="answer_must_be"),
    pytest.param("The answer is 42. But 6 x 7 is 43, so the answer must be 43.", "43", 1.0, id="answer_must_be_right"),
    pytest.param("The answer isn't 42.", "42", 0.0, id="answer_isnt"),
    pytest.param("The answer is 7. I hope it is correct.", "7", 1.0, id="correct_is_not_incorrect"),
    pytest.param("The answer is 7. No other value works.", "7", 1.0, id="no_without_punctuation"),
    # A phrase answer ends at a clause that gives reasons.
    pytest.param("The answer is 15 because 3 x 5 = 15.", "15", 1.0, id="because"),
    pytest.param("Answer: 24 (since 4! = 24)", "24", 1.0, id="parenthesised_since"),
    pytest.param(r"The final answer is $\frac{3}{4}$, which is 6 divided by 8.", "0.75", 1.0, id="which"),
    pytest.param("The answer is 8, so 2^3 = 8 checks out.", "3", 0.0, id="so_clause_is_no_answer"),
    pytest.param("The answer is 9 as 3 squared is 9.", "9", 1.0, id="as_clause"),
    # Hedges give no answer.
    pytest.param("It might be 12 or 13.", "12", 0.0, id="might_or_last_number"),
    pytest.param("Maybe 42.", "42", 0.0, id="maybe_last_number"),
    pytest.param("The answer is possibly 9.", "9", 0.0, id="possibly_phrase"),
    pytest.param("The answer is $7$, probably.", "7", 0.0, id="probably_after_latex"),
    pytest.param(r"\boxed{3 \text{ or } 4}", "3", 0.0, id="or_in_box"),
    pytest.param("So x could be 5, or x could be 6.", "6", 0.0, id="could_or_sentence"),
    # Against a numeric gold, an operation the gold lacks is an unevaluated answer.
    pytest.param(r"The answer is $\binom{6}{2}$.", "15", 0.0, id="binomial"),
    pytest.param(r"\boxed{2^{10}}", "1024", 0.0, id="power"),
    pytest.param(r"The answer is $\ln e^3$.", "3", 0.0, id="logarithm"),
    pytest.param(r"\boxed{\lfloor 7.5 \rfloor}", "7", 0.0, id="floor"),
    pytest.param(r"\boxed{5!}", "120", 0.0, id="factorial"),
    pytest.param(r"\boxed{(2+i)(2-i)}", "5", 0.0, id="product_of_parentheses"),
    pytest.param(r"\boxed{3(4)}", "12", 0.0, id="implicit_product"),
    pytest.param(r"\boxed{2^{10}}", "$2^{10}$", 1.0, id="operation_in_gold_too"),
    pytest.param(r"\boxed{90^\circ}", "90", 1.0, id="degrees_are_no_power"),
    pytest.param(r"\boxed{\frac{\sqrt{9}}{2}}", "1.5", 1.0, id="surd_is_a_final_form"),
    pytest.param(r"\boxed{10,\!080}", "10080", 1.0, id="thin_space_is_no_factorial"),
    # Plain-text mathematics.
    pytest.param("The answer is (1, ∞).", r"$(1,\infty)$", 1.0, id="unicode_infinity"),
    pytest.param("The answer is 3 ± sqrt(2).", r"$3 \pm \sqrt{2}$", 1.0, id="plus_minus_sqrt"),
    pytest.param("Answer: tan x", r"$\tan x$", 1.0, id="bare_function"),
    pytest.param(r"\boxed{2 + 5 i}", "$2+5i$", 1.0, id="spaced_imaginary_unit"),
    pytest.param("The answer is y ≥ 3.", r"$[3,\infty)$", 1.0, id="inequality_as_interval"),
    pytest.param("The answer is $-1 < x < 4$.", "$(-1,4)$", 1.0, id="double_inequality"),
    pytest.param("The answer is $-1 < x < 4$.", "$[-1,4]$", 0.0, id="open_is_not_closed"),
    pytest.param(r"The answer is $0 \le t \le 5$.", r"$t \in [0,5]$", 1.0, id="inequality_vs_membership_gold"),
    pytest.param("The answer is 2, -7.", "$-7, 2$", 1.0, id="list_is_no_subtraction"),
]


# Issue 8's held-out error classes (found on `benchmarks/data/scorer_cases_heldout.jsonl`; these sentences are new).
FINAL_SENTENCE_CASES = [
    # Unicode mathematics is read as LaTeX before anything else: "−" (U+2212) is a minus sign.
    pytest.param("Subtracting, the slope is −7/3.", "-7/3", 1.0, id="unicode_minus_right"),
    pytest.param("Subtracting, the slope is −7/3.", "7/3", 0.0, id="unicode_minus_is_negative"),
    pytest.param("The answer is −12.", "12", 0.0, id="unicode_minus_in_phrase"),
    pytest.param("So the side is 5√2 cm.", r"$5\sqrt{2}$", 1.0, id="unicode_root"),
    pytest.param("The shaded area comes to 9π.", r"$9\pi$", 1.0, id="unicode_pi_in_fallback"),
    pytest.param("The shaded area comes to 9π.", "9", 0.0, id="unicode_pi_is_not_the_number"),
    pytest.param("Overnight it fell to −4 °C.", "-4", 1.0, id="temperature_unit"),
    # Several boxes joined by a hedge commit to none of them.
    pytest.param(r"Either $\boxed{3}$ or $\boxed{-3}$, I cannot tell which.", "3", 0.0, id="boxes_or_first"),
    pytest.param(r"It is \boxed{4} or maybe \boxed{5}.", "5", 0.0, id="boxes_or_last"),
    pytest.param(r"First part: \boxed{4}. Second part: \boxed{5}.", "5", 1.0, id="boxes_in_two_sentences"),
    # A trailing aside (note, check, status line, sign-off, parenthesised remark) is no answer.
    pytest.param("He bakes 9 trays of pies. Note: 3 of the pies are small.", "3", 0.0, id="note_aside"),
    pytest.param("He bakes 9 trays of pies. Note: 3 of the pies are small.", "9", 1.0, id="note_aside_right"),
    pytest.param("So the tank holds 48 liters. Step 3 of 3 complete.", "48", 1.0, id="status_line"),
    pytest.param("So the tank holds 48 liters. Step 3 of 3 complete.", "3", 0.0, id="status_line_is_no_answer"),
    pytest.param("The trip takes 150 minutes (2 hours 30 minutes).", "150", 1.0, id="parenthesised_conversion"),
    pytest.param("The trip takes 150 minutes (2 hours 30 minutes).", "30", 0.0, id="conversion_is_no_answer"),
    pytest.param("The chance is 7/20 (about 35%).", "7/20", 1.0, id="about_percent"),
    pytest.param("The chance is 7/19 \u2248 0.37", "7/19", 1.0, id="approx_keeps_exact"),
    pytest.param("The chance is 7/19 \u2248 0.37", "0.37", 0.0, id="approx_is_no_answer"),
    pytest.param("The answer is 18 days (roughly 2.5 weeks).", "18", 1.0, id="phrase_with_aside"),
    pytest.param("In total **64** tiles. Let me know if you need the layout!", "64", 1.0, id="sign_off"),
    pytest.param("**27**\n\nExplanation: 3 boxes of 9, minus 0 broken.", "27", 1.0, id="bold_then_explanation"),
    # No box and no phrase: the final sentence's last math span; the last right side of an equation chain.
    pytest.param(r"Dividing, the ratio becomes $\frac{5}{8}$.", r"$\frac58$", 1.0, id="final_span_fraction"),
    pytest.param(r"Dividing, the ratio becomes $\frac{5}{8}$.", "8", 0.0, id="final_span_not_denominator"),
    pytest.param(r"$\frac{3}{6} + \frac{1}{6} = \frac{4}{6} = \frac{2}{3}$", r"$\frac23$", 1.0, id="chain_last_side"),
    pytest.param(r"$2^5 - 1 = 32 - 1 = 31$", "31", 1.0, id="chain_of_numbers"),
    pytest.param(r"Then \(y = -\tfrac{9}{2}\).", "-4.5", 1.0, id="paren_delimiters"),
    pytest.param(r"The vertex lands at $(3, -5)$.", "$(3,-5)$", 1.0, id="final_span_tuple"),
    pytest.param(r"So $t = 6$ is not allowed.", "6", 0.0, id="span_then_negation"),
    pytest.param(r"So $t = 6$ or $t = 7$.", "7", 0.0, id="spans_with_hedge"),
    pytest.param(r"So $t = 6$ and then 4 more.", "6", 0.0, id="span_then_another_value"),
    pytest.param("Mia pays $12 and Leo pays $30.", "12", 0.0, id="currency_signs_are_no_span"),
    pytest.param(r"The answer is $3^4$.", "81", 0.0, id="operation_still_refused"),
    pytest.param("Net change = −15", "-15", 1.0, id="equals_right_side"),
    pytest.param("(p, q) = (4, −1)", "$(4,-1)$", 1.0, id="equals_tuple"),
    pytest.param("So they share **35** stamps.", "35", 1.0, id="bold_value"),
    pytest.param("**Total: 35 stamps**", "35", 1.0, id="bold_label_falls_back_to_number"),
    # Values written as values: scientific notation with a decimal mantissa, thin-space thousands, percentages.
    pytest.param(r"The mass is $3.5 \times 10^{4}$ kg.", "35000", 1.0, id="scientific"),
    pytest.param(r"The mass is $35 \times 10^{3}$ kg.", "35000", 0.0, id="integer_mantissa_is_a_product"),
    pytest.param(r"\boxed{2\,048}", "2048", 1.0, id="thin_space_thousands"),
    pytest.param("The probability is 45%.", r"$\frac{9}{20}$", 1.0, id="percent_is_a_fraction"),
    pytest.param(r"It holds for $-\sqrt{5} < x < \sqrt{5}$.", r"$(-\sqrt{5}, \sqrt{5})$", 1.0, id="surd_bounds"),
    # A retraction followed by a new sentence that ends with a math answer: the new answer.
    pytest.param(r"So $k = 12$. Wait, I dropped a sign: $2k = -24$ gives $k = -12$.", "-12", 1.0,
                 id="retraction_new_span"),
    pytest.param(r"So $k = 12$. Wait, I dropped a sign: $2k = -24$ gives $k = -12$.", "12", 0.0,
                 id="retraction_voids_old"),
    pytest.param(r"The answer is $12$. Wait, I am not sure about $k$ here.", "12", 0.0,
                 id="retraction_span_mid_sentence"),
    pytest.param(r"The sum is $\frac{7}{3}$. Hmm, that is wrong.", r"$\frac73$", 0.0,
                 id="retraction_without_new_span"),
    pytest.param(r"The answer is $5$. Wait, that is wrong, since $x = 5$.", "5", 0.0, id="retraction_reason_span"),
    pytest.param(r"The answer is $5$. Hmm, let me check with $y = 5$.", "5", 0.0, id="retraction_check_span"),
    pytest.param(r"因此 $x = \frac{2}{7}$。", r"$\frac27$", 1.0, id="cjk_full_stop_ends_a_sentence"),
    pytest.param(r"因此 $x = \frac{2}{7}$。", "7", 0.0, id="cjk_full_stop_not_denominator"),
]  # fmt: skip


# Each pattern's worst case as (head, repeated unit, tail), repeated LINEAR_N and 2 * LINEAR_N times.
LINEAR_N = 2_000
ADVERSARIAL = {
    "spaces_before_reason": ("The answer is 42", " ", " because"),
    "many_commas": ("The answer is 4", ", ", "x"),
    "many_retractions": ("The answer is 42. ", "Wait, no, ", ""),
    "many_restatements": ("", "wait, it is ", "42"),
    "many_hedges": ("", "either ", "42"),
    "many_sentences": ("", "1. ", ""),
    "inequality_chain": ("The answer is ", "1 < ", "x"),
    "many_dollars": ("The answer is ", "$", ""),
    "many_asides": ("It is 4", " (about", ""),
    "many_bold_marks": ("So ", "**4", ""),
    "many_approx": ("4", " \\approx 5", ""),
    "many_notes": ("It is 4. ", "Note: 5. ", ""),
    "many_surds": ("", "\u221a", "4"),
    "many_boxes_or": ("", "\\boxed{4} or ", ""),
    # The issue 17 classes' patterns (numerals, solution sets, names, letters).
    "many_number_words": ("", "twenty ", "goats"),
    "many_spaced_groups": ("1", " 000", "0"),
    "many_broken_groups": ("", "1 0000 ", ""),
    "many_scales": ("", "1 million ", ""),
    "many_equations": ("", "x = 1 and ", "x"),
    "spaces_in_a_list": ("x = 1", " ", "and x = 2"),
    "many_names": ("", "Aa ", ""),
    "many_repeating": ("", r"0.\overline{", ""),
    "long_decimal": (".", "1", ""),
    "many_letters": (r"\boxed{", "2t", "}"),
}
READERS = {  # each reading of a reply, its work counted alone
    "answer": lambda text: prediction(extract_answer(text, max_chars=len(text)), "42"),
    "name": lambda text: prediction(extract_answer(text, max_chars=len(text), names=True), "42"),
    "solution_set": lambda text: prediction(extract_answer(text, max_chars=len(text)), "-1, 2"),
    "dropped_letters": lambda text: dropped_letters(text, [text]),
}


@pytest.mark.parametrize(("head", "unit", "tail"), ADVERSARIAL.values(), ids=ADVERSARIAL.keys())
def test_extraction_is_linear_on_adversarial_text(head, unit, tail):
    """Twice the copies of each pattern's worst case cost each reading at most twice the work (`work_count.work`)."""
    for name, run in READERS.items():
        once, twice = (work(run, head + unit * n + tail) for n in (LINEAR_N, 2 * LINEAR_N))
        assert twice <= 2 * once, (name, once, twice)


def test_smollm2_real_replies_match_their_hand_labels():
    """48 hand-labelled SmolLM2 replies: no wrong one scored, every right one but three known false negatives."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "smollm2_arithmetic_replies.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert len(rows) == 48
    out = math_accuracy_reward([r["completion"] for r in rows], solution=[r["gold"] for r in rows])
    expected = [0.0 if r.get("known_false_negative") else float(r["label"]) for r in rows]
    assert out == expected
    assert sum(r["label"] for r in rows) == 5 and sum(bool(r.get("known_false_negative")) for r in rows) == 3


def test_the_readme_plain_answer_scores_0_with_trls_accuracy_reward_and_1_with_ours():
    # README, "A `trl grpo` command runs unchanged": TRL's reads only LaTeX, so a plain final answer scores 0.
    plain = [[{"role": "assistant", "content": "The answer is 12."}]]
    assert accuracy_reward(plain, solution=["12"]) == [0.0]
    assert math_accuracy_reward(plain, solution=["12"]) == [1.0]


# --- The scorer's remaining classes (issue 17): each table's rule in its comment; the sentences are new -----------
# math-verify strips a letter it takes for a unit even inside an expression (`$2t$` parses as 2). The rule: a match in
# which math-verify dropped a letter of one side that it did not drop of the other is wrong. A letter is a variable
# when it stands alone ("5 s", "12 m": 5s and 12m, as in LaTeX) or is glued to a number or a letter ("2t", "12cm",
# "5ab"); a unit is written as text (`5\text{ s}`, `12\,\mathrm{m}`) or as a word set apart by a space ("3 cm",
# "7 hours"), as phrase answers already read "12 apples".
UNIT_LETTER_CASES = [
    pytest.param(r"\boxed{3 - s}", "3", 0.0, id="minus_s_boxed"),
    pytest.param(r"The answer is $3 - s$.", "3", 0.0, id="minus_s_latex_phrase"),
    pytest.param("The answer is 3 - s.", "3", 0.0, id="minus_s_plain_phrase"),
    pytest.param(r"\boxed{2t}", "2", 0.0, id="coefficient_t"),
    pytest.param(r"\boxed{5s}", "5", 0.0, id="coefficient_s"),
    pytest.param("The answer is 2t.", "2", 0.0, id="coefficient_t_phrase"),
    pytest.param(r"So the speed is $v = 4t$.", "4", 0.0, id="coefficient_t_final_span"),
    pytest.param(r"\boxed{6h}", "6", 0.0, id="coefficient_h"),
    pytest.param(r"\boxed{5ab}", "5", 0.0, id="glued_letters_are_a_product"),
    pytest.param(r"\boxed{4}", "4t", 0.0, id="gold_lost_its_letter"),
    pytest.param(r"\boxed{4s}", "4t", 0.0, id="each_side_lost_another_letter"),
    pytest.param(r"\boxed{4t}", "4t", 1.0, id="both_sides_lost_the_same_letter"),
    pytest.param(r"\boxed{9 - x}", "9", 0.0, id="kept_variable_control"),
    pytest.param(r"\boxed{9 - x}", "$9 - x$", 1.0, id="kept_variable_right"),
    # The unit decisions, one rule: a lone or glued letter is a variable, text or a spaced word is a unit.
    pytest.param("The answer is 5 s.", "5", 0.0, id="lone_letter_s_is_a_variable"),
    pytest.param(r"\boxed{12 m}", "12", 0.0, id="lone_letter_m_is_a_variable"),
    pytest.param("The answer is 12cm.", "12", 0.0, id="glued_word_is_a_variable"),
    pytest.param("The answer is 3 cm.", "3", 1.0, id="spaced_word_is_a_unit"),
    pytest.param(r"\boxed{7 hours}", "7", 1.0, id="spaced_word_in_a_box_is_a_unit"),
    pytest.param(r"\boxed{5\text{ s}}", "5", 1.0, id="text_unit_s"),
    pytest.param(r"\boxed{12\,\mathrm{m}}", "12", 1.0, id="mathrm_unit_m"),
    pytest.param(r"\boxed{90^\circ}", "90", 1.0, id="degrees_control"),
]


# A letter that the gold also writes is a variable, never a unit: when math-verify dropped it on either side, both
# sides are read again without its unit removal ("9 - t" is 9 - t, not 9). A letter only one side writes keeps the
# rule above: "9 - t" is refused against the bare 9, and "3 - s", "2t", "5s" against 3, 2, 5.
SHARED_LETTER_CASES = [
    pytest.param("The answer is 9 - t", "9-t", 1.0, id="spaced_pred_unspaced_gold"),
    pytest.param("The answer is 9-t", "9 - t", 1.0, id="unspaced_pred_spaced_gold"),
    pytest.param(r"\boxed{9 - t}", "9-t", 1.0, id="boxed_pred"),
    pytest.param("The answer is t - 9", "-(9 - t)", 1.0, id="equivalent_form"),
    pytest.param("The answer is 9 - t", "9", 0.0, id="gold_without_the_letter"),
    pytest.param("The answer is 9 - t", "9 + t", 0.0, id="same_letter_other_sign"),
    pytest.param("The answer is 2 - s", "2 + s", 0.0, id="same_letter_s_other_sign"),
    pytest.param("The answer is 9 - t", "9 - 2t", 0.0, id="same_letter_other_coefficient"),
    pytest.param("The answer is 3 - s", "3", 0.0, id="minus_s_against_a_number"),
    pytest.param("The answer is 2t", "2", 0.0, id="coefficient_t_against_a_number"),
    pytest.param("The answer is 5s", "5", 0.0, id="coefficient_s_against_a_number"),
    pytest.param(r"\boxed{4t}", "4t", 1.0, id="both_sides_glued"),
]


# Numbers written another way than math-verify reads them (`numerals`): money and spacing in LaTeX golds, thousands set
# apart by spaces, numbers in words, scale words, repeating decimals.
NUMERAL_CASES = [
    # A gold in LaTeX money or spacing: `\$` is a currency sign, not a math delimiter.
    pytest.param("She paid $18.90 in total.", r"\$18.90", 1.0, id="money_gold_plain_reply"),
    pytest.param("The bill comes to 18.9 dollars.", r"\$18.90", 1.0, id="money_gold_trailing_zero"),
    pytest.param("The bill comes to 18.80 dollars.", r"\$18.90", 0.0, id="money_gold_wrong"),
    pytest.param("Each ticket costs 36 dollars.", r"\$36", 1.0, id="money_gold_dollars_reply"),
    pytest.param(r"\boxed{32348}", r"\$32,\!348", 1.0, id="money_thin_space_gold"),
    pytest.param("The answer is 32 348.", r"32,\!348", 1.0, id="thin_space_gold_spaced_reply"),
    # Thousands set apart by spaces (or a no-break space): one number, its first group of one to three digits.
    pytest.param("The town has 1 250 000 residents.", "1250000", 1.0, id="spaced_millions_last_number"),
    pytest.param("The town has 1 250 000 residents.", "250000", 0.0, id="spaced_millions_not_a_tail"),
    pytest.param(r"\boxed{12 500}", "12500", 1.0, id="spaced_thousands_boxed"),
    pytest.param(r"\boxed{12 500}", "500", 0.0, id="spaced_thousands_boxed_not_a_tail"),
    pytest.param("The answer is 4\u00a0096.", "4096", 1.0, id="no_break_space_phrase"),
    pytest.param("The two piles hold 12 and 500.", "12500", 0.0, id="two_numbers_stay_two"),
    # A number in words: the whole answer of a box or a phrase, or the one number of a final sentence without a digit.
    pytest.param("So the farmer keeps seven goats.", "7", 1.0, id="word_in_final_sentence"),
    pytest.param("He had 12 goats.\nSo the farmer keeps seven goats.", "12", 0.0, id="word_beats_earlier_digits"),
    pytest.param("The answer is twenty-four.", "24", 1.0, id="hyphenated_word_phrase"),
    pytest.param("The answer is thirty-six dollars.", "36", 1.0, id="word_then_unit"),
    pytest.param("The answer is three hundred and five.", "305", 1.0, id="hundreds_in_words"),
    pytest.param(r"\boxed{nine}", "9", 1.0, id="word_in_a_box"),
    pytest.param("So two thirds of the cake is left.", "2", 0.0, id="fraction_word_is_no_count"),
    pytest.param("She packs 24 eggs.\nThat makes two dozen.", "24", 1.0, id="dozen_is_no_count"),
    pytest.param("She packs 8 boxes.\nEach one is sealed.", "8", 1.0, id="one_is_a_pronoun"),
    pytest.param("She packs 8 boxes.\nTwo are red and three are blue.", "2", 0.0, id="two_words_fall_back"),
    pytest.param("Maybe five goats are left.", "5", 0.0, id="hedged_word"),
    pytest.param("So five goats are not left.", "5", 0.0, id="negated_word"),
    # A scale word multiplies, unless the gold is the number itself (a question that counts in millions).
    pytest.param("The city has 1.45 million people.", "1450000", 1.0, id="million_last_number"),
    pytest.param("The answer is 2.5 billion.", "2500000000", 1.0, id="billion_phrase"),
    pytest.param(r"\boxed{3\text{ thousand}}", "3000", 1.0, id="thousand_in_text_boxed"),
    pytest.param("The answer is 1.45 million.", "1.45", 1.0, id="gold_counts_in_millions"),
    pytest.param("The city has 1.45 million people.", "145", 0.0, id="million_wrong"),
    # A repeating decimal is its fraction (math-verify reads `0.\overline{6}` as 0), in a reply or in a gold.
    pytest.param(r"The decimal is $0.\overline{6}$.", r"\frac{2}{3}", 1.0, id="repeating_phrase"),
    pytest.param(r"The decimal is $0.\overline{6}$.", "0", 0.0, id="repeating_is_not_zero"),
    pytest.param(r"\boxed{0.1\overline{6}}", r"\frac16", 1.0, id="repeating_after_a_fixed_digit"),
    pytest.param(r"\boxed{1.\overline{27}}", r"\frac{14}{11}", 1.0, id="repeating_pair_of_digits"),
    pytest.param(r"\boxed{\frac{2}{3}}", r"$0.\overline{6}$", 1.0, id="repeating_gold"),
    pytest.param(r"\boxed{0}", r"$0.\overline{6}$", 0.0, id="repeating_gold_is_not_zero"),
]


# A solution set stated as equations of one variable ("x = a and x = b", "x = a, x = b", in spans or not, boxed or
# not) is the set {a, b}, in any order; never its last value; and never an ordered pair (math-verify takes a set
# for a tuple).
SOLUTION_SET_CASES = [
    pytest.param("The solutions are x = 4 and x = -1.", "-1, 4", 1.0, id="and_final_sentence"),
    pytest.param("The solutions are x = -1 and x = 4.", "-1, 4", 1.0, id="and_other_order"),
    pytest.param(r"The roots are $x = -1$ and $x = 4$.", r"\{4, -1\}", 1.0, id="spans_set_gold"),
    pytest.param("The answer is x = 4 and x = -1.", "4,-1", 1.0, id="and_phrase"),
    pytest.param(r"The answer is $x = 4$ and $x = -1$.", "4,-1", 1.0, id="spans_phrase"),
    pytest.param(r"\boxed{x = 4, x = -1}", "-1, 4", 1.0, id="comma_boxed"),
    pytest.param(r"\boxed{x = 4 \text{ and } x = -1}", "-1, 4", 1.0, id="text_and_boxed"),
    pytest.param(r"So $x = 3$, $x = 5$, and $x = -2$.", "-2, 3, 5", 1.0, id="three_values"),
    pytest.param("The solutions are x = 4 and x = -1.", "-1", 0.0, id="a_set_is_not_its_last_value"),
    pytest.param("The solutions are x = 4 and x = -1.", "-1, 4, 6", 0.0, id="a_missing_value"),
    pytest.param("The solutions are x = 4 and x = -1.", "(4, -1)", 0.0, id="a_set_is_no_ordered_pair"),
    pytest.param(r"So $x = 4$ and $y = -1$.", "4, -1", 0.0, id="two_variables_are_no_set"),
    pytest.param("So x = 4 and x = -1, not 6.", "-1, 4", 0.0, id="negated_after_the_set"),
]


# A gold that is a name (`\text{Devon}`, one capitalised word): the final sentence's one name answers, also with other
# capitals in it (an acronym, a sentence-opening word such as "So" or "In"); two names, a hedge or a negation answer
# nothing. A phrase answer that is a name and prose about it is the name. For a numeric gold nothing changes.
NAME_CASES = [
    pytest.param("So Devon wins the race.", r"$\text{Devon}$", 1.0, id="name_after_so"),
    pytest.param("Devon wins the race.", r"\text{Devon}", 1.0, id="name_first"),
    pytest.param("In USD, Devon earns the most.", r"\text{Devon}", 1.0, id="acronym_is_no_name"),
    pytest.param("Devon runs 12 laps, so Devon wins.", r"\text{Devon}", 1.0, id="name_with_a_number"),
    pytest.param("So Devon (from Leeds) wins the race.", r"\text{Devon}", 1.0, id="aside_names_no_one"),
    pytest.param("Thus Friday is the first such day.", r"\text{Friday}", 1.0, id="day_name"),
    pytest.param("So Kim wins the race.", r"\text{Devon}", 0.0, id="another_name"),
    pytest.param("In the end, Devon has more marbles than Kim.", r"\text{Devon}", 0.0, id="two_names"),
    pytest.param("Kim or Devon wins the race.", r"\text{Devon}", 0.0, id="hedged_names"),
    pytest.param("So Devon does not win.", r"\text{Devon}", 0.0, id="negated_name"),
    pytest.param("The answer is Devon, who has the most marbles.", r"\text{Devon}", 1.0, id="phrase_name_and_prose"),
    pytest.param("Final answer: Devon wins the race.", r"\text{Devon}", 1.0, id="phrase_name_sentence"),
    pytest.param("The answer is Devon from Leeds.", r"\text{Devon}", 0.0, id="phrase_two_names"),
    pytest.param("Devon has 12 marbles.\nSo Devon wins.", "12", 1.0, id="numeric_gold_control"),
]


# A closed box, an escaped brace (`\{` is a literal brace, not an opening one) and an open brace that is no box: they
# cut nothing off (the cut-off replies below).
CLOSED_BOX_CASES = [
    pytest.param(r"\boxed{42}", "42", 1.0, id="closed_box"),
    pytest.param(r"\boxed{\{1, 2\}}", r"\{1,2\}", 1.0, id="escaped_braces"),
    pytest.param(r"\boxed{42} {", "42", 1.0, id="open_brace_no_box"),
]
CLASSES = UNIT_LETTER_CASES + SHARED_LETTER_CASES + NUMERAL_CASES + SOLUTION_SET_CASES + NAME_CASES + CLOSED_BOX_CASES


SCORED = ACCURACY_CASES + PHRASE_CASES + STATEMENT_CASES + FINAL_SENTENCE_CASES + CLASSES


@pytest.mark.parametrize(("reply", "gold", "expected"), SCORED)
def test_math_accuracy_table_as_string_and_conversation(reply, gold, expected):
    completions = [reply, chat(reply), [{"role": "user", "content": "q"}, *chat(reply)]]
    assert math_accuracy_reward(completions, solution=[gold] * 3) == [expected] * 3


# A reply that ends inside a `\boxed{` that never closes was cut off: no final answer (the module's no-answer rule:
# `incorrect`, 0.0 or DAPO's -1.0, counted in `stats.no_answer`), never the last number inside the open box.
CUT_OFF_CASES = [
    pytest.param(r"\boxed{" * 5000 + "42", "42", id="thousands_of_open_boxes_then_the_number"),
    pytest.param(r"\boxed{" + "42", "42", id="one_open_box"),
    pytest.param(r"The answer is 42. \boxed{42", "42", id="phrase_then_open_box"),
    pytest.param(r"\boxed{42} and then \boxed{4", "42", id="closed_box_then_open_box"),
    pytest.param(r"\boxed{\frac{1}{2}", "1/2", id="open_box_with_closed_braces_inside"),
    pytest.param(r"\boxed{x \boxed{42}", "42", id="closed_box_inside_an_open_one"),
]


@pytest.mark.parametrize(("reply", "gold"), CUT_OFF_CASES)
def test_a_box_that_never_closes_has_no_answer(reply, gold):
    reward = make_math_accuracy_reward()
    assert reward([reply], solution=[gold]) == [0.0]
    assert dapo_math_reward([reply], solution=[gold]) == [-1.0]
    assert reward.stats.no_answer == 1 and extract_answer(reply) is None  # the reply never reaches math-verify


def test_thousands_of_open_boxes_cost_linear_time():
    """20,000 open boxes cost at most twice the work of 10,000 (`work_count.work`)."""
    assert extract_answer(r"\boxed{" * 20_000 + "42") is None
    once, twice = (work(extract_answer, r"\boxed{" * n + "42", max_chars=10 * n) for n in (10_000, 20_000))
    assert twice <= 2 * once, (once, twice)


def test_issue17_cases_match_their_labels():
    """The reward agrees with every label of `scorer_cases_issue17.jsonl`."""
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "scorer_cases_issue17.jsonl"
    cases = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert len(cases) >= 60 and {c["label"] for c in cases} == {0, 1}
    assert all({"completion", "gold", "label", "category", "source"} <= c.keys() for c in cases)
    assert len({(c["completion"], c["gold"]) for c in cases}) == len(cases), "duplicate (completion, gold) pairs"
    out = math_accuracy_reward([c["completion"] for c in cases], solution=[c["gold"] for c in cases])
    assert [(c["category"], c["gold"], reward) for c, reward in zip(cases, out)] == [
        (c["category"], c["gold"], float(c["label"])) for c in cases
    ]
