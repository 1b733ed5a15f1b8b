"""`up/unscorable_frac` from the rewards themselves; the wrapper changes nothing TRL sees."""

from __future__ import annotations

import asyncio
import functools
import inspect

import pytest
import torch
from async_rollout import async_grpo_on_cpu, in_process_rollout
from conftest import cpu_args, make_trainer
from datasets import Dataset
from transformers import AutoTokenizer
from trl.trainer.utils import get_callable_name, is_async_callable

from up_trl import UPAsyncGRPOConfig, UPAsyncGRPOTrainer
from up_trl.run.parts import METRIC, ScorableRecorder, record_scorable, record_unscorable

NAN, INF = float("nan"), float("inf")


def graded(completions, gold=None, **kwargs):
    """A plain reward: 1.0 for every completion."""
    return [1.0] * len(completions)


async def judged(completions, **kwargs):
    return [0.5] * len(completions)


class Scorer:
    def __call__(self, completions, **kwargs):
        return [0.0] * len(completions)


class AsyncScorer:
    async def __call__(self, completions, **kwargs):
        return [0.0] * len(completions)


FORMS = [
    pytest.param(graded, id="function"),
    pytest.param(judged, id="async_function"),
    pytest.param(functools.partial(graded, gold="2"), id="partial"),
    pytest.param(Scorer(), id="callable_instance"),
    pytest.param(AsyncScorer(), id="async_callable_instance"),
]


def _call(func, **kwargs):
    out = func(**kwargs)
    return asyncio.run(out) if inspect.iscoroutine(out) else out


@pytest.mark.parametrize("func", FORMS)
def test_the_wrapper_keeps_what_trl_reads(func):
    (wrapped,), _ = record_scorable([func])
    assert get_callable_name(wrapped) == get_callable_name(func)  # TRL's reward name: rewards/<name>/mean
    assert is_async_callable(wrapped) == is_async_callable(func)  # TRL awaits it, or calls it
    assert inspect.signature(wrapped) == inspect.signature(func)
    assert _call(wrapped, completions=["a", "b"]) == _call(func, completions=["a", "b"])


def test_the_wrapper_returns_the_rewards_object_itself():  # (a list; an iterator is read into one)
    rewards = [1.0, None, NAN]
    (wrapped,), _ = record_scorable([lambda completions, **kwargs: rewards])
    assert wrapped(completions=["a", "b", "c"]) is rewards


def test_a_reward_that_returns_an_iterator_gives_trl_its_values():
    """TRL takes any iterable of rewards; the wrapper reads a generator once, so it hands TRL a list of its values."""
    (wrapped,), recorder = record_scorable([lambda completions, **kwargs: (float(len(c)) for c in completions)])
    assert wrapped(completions=["a", "bb", "ccc"]) == [1.0, 2.0, 3.0]
    assert recorder.take() == (0, 3)


class Counting:
    """A reward object with state of its own, which a callback might change."""

    def __init__(self):
        self.calls = 0

    def __call__(self, completions, **kwargs):
        self.calls += 1
        return [float(self.calls)] * len(completions)


def test_a_reward_objects_state_stays_its_own_and_a_wrapper_is_not_wrapped_twice():
    scorer = Counting()
    (wrapped,), _ = record_scorable([scorer])
    assert wrapped(completions=["a"]) == [1.0] and scorer.calls == 1
    scorer.calls = 10  # a change to the object reaches the wrapped calls
    assert wrapped(completions=["a"]) == [11.0]
    (again,), recorder = record_scorable([wrapped])  # a previous UP trainer's reward_funcs given to a new one
    assert again(completions=["a", "b"]) == [12.0, 12.0] and recorder.take() == (0, 2)
    (inner,), first = record_scorable([scorer])
    (outer,), second = record_scorable([inner])
    outer(completions=["a"])
    assert first.take() is None and second.take() == (0, 1)  # one recorder counts, not two


def test_models_pass_through_unwrapped_and_the_form_is_kept():
    model = torch.nn.Linear(1, 1)
    funcs, recorder = record_scorable(["org/reward-model", model, graded])
    assert funcs[:2] == ["org/reward-model", model] and funcs[2] is not graded
    assert record_scorable(graded)[0].__wrapped__ is graded  # one reward stays one
    assert record_scorable(None)[0] is None and record_scorable(model)[0] is model


# (rewards of reward function 1, of reward function 2, any model reward) -> (unscorable, completions)
COUNTS = [
    pytest.param([1.0, None, NAN, INF], None, False, (3, 4), id="none_nan_inf"),
    pytest.param([-INF, 0.0, 1e39, 2], None, False, (2, 4), id="float32_overflow_is_inf"),
    pytest.param([None, None, 1.0, NAN], [2.0, None, None, NAN], False, (2, 4), id="either_function_scores"),
    pytest.param([None, None, None, None], None, True, (0, 4), id="a_model_scores_all"),
]


@pytest.mark.parametrize("first, second, model, expected", COUNTS)
def test_counts_and_one_value_a_batch(first, second, model, expected):
    logged = []
    returns = [r for r in (first, second) if r is not None]
    funcs = [lambda completions, _r=r, **kwargs: _r for r in returns] + ([torch.nn.Linear(1, 1)] if model else [])
    wrapped, recorder = record_scorable(funcs)
    for func in wrapped[: len(returns)]:
        assert logged == []  # logged once every function has scored the batch, not before
        func(completions=list("abcd"), log_metric=lambda name, value: logged.append((name, value)))
    assert logged == [(METRIC, expected[0] / expected[1])]
    assert recorder.take() == expected and recorder.take() is None


def test_a_wrong_count_is_left_to_trl_and_a_cut_batch_does_not_leak():
    recorder = ScorableRecorder(2)
    recorder.note(0, [1.0], 4, None)  # wrong count: TRL raises its own error after the call
    recorder.note(0, [object()] * 4, 4, None)  # not numbers: likewise
    assert recorder.take() is None
    recorder.note(0, [None] * 4, 4, None)  # a batch cut short (function 1 never scored it)...
    recorder.note(0, [1.0, 1.0, None, None], 4, None)  # ...is dropped when function 0 scores the next one
    recorder.note(1, [None] * 4, 4, None)
    assert recorder.take() == (2, 4)


def some_none(completions, **kwargs):
    """Scores all but completions 1 and 6 of 8: unscorable 2 / 8."""
    return [None if i in (1, 6) else float(i % 4) for i in range(len(completions))]


async def some_none_async(completions, **kwargs):
    return some_none(completions)


@pytest.mark.parametrize(
    "rloo, reward",
    [pytest.param(True, some_none, id="rloo"), pytest.param(False, some_none_async, id="grpo_async_reward")],
)
def test_trainers_log_it_once_per_scored_batch(tmp_path, tiny, prompts_dataset, rloo, reward):
    trainer = make_trainer(tmp_path, tiny, prompts_dataset, reward=reward, rloo=rloo, num_iterations=2)
    assert trainer.reward_funcs == [reward]  # the UP trainer alone passes the reward through as given
    record_unscorable(trainer)  # the part, in one line
    trainer.train()
    history = trainer.state.log_history
    assert [h[METRIC] for h in history if METRIC in h] == [0.25]  # one generation batch (2 steps reuse it)
    assert any(f"rewards/{reward.__name__}/mean" in h for h in history)  # TRL's name for the reward, unchanged


@pytest.mark.parametrize("reward_funcs, expected", [
    pytest.param([some_none], (1.0, 4.0), id="completion_1_unscored"),
    pytest.param([some_none, judged], (0.0, 4.0), id="another_reward_scores_it"),
])  # fmt: skip
def test_the_in_process_async_worker_puts_it_on_its_metrics_queue(tmp_path, tiny_model, reward_funcs, expected):
    """One group of 4 completions: `some_none` leaves completion 1 unscored."""
    prompts = Dataset.from_dict({"prompt": [[{"role": "user", "content": "1 + 1 = "}]]})
    args = cpu_args(tmp_path, UPAsyncGRPOConfig, per_device_train_batch_size=4, token_budget=0)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    kwargs = dict(train_dataset=prompts, reward_funcs=reward_funcs, processing_class=tokenizer, args=args)
    worker = in_process_rollout(tiny_model, **kwargs)["rollout_worker"]
    samples = worker.generate_group(0, prompts[0])
    assert worker.metrics_queue.get_nowait()[METRIC] == expected
    names = [name.removeprefix("rewards/") for name in samples[0].metrics if name.startswith("rewards/")]
    assert names == [f.__name__ for f in reward_funcs]


def test_the_async_trainer_logs_it_from_the_in_process_worker(tmp_path, tiny_model):
    """TRL's async trainer drains the worker's metrics_queue into its logs: (1 + 1) / (4 + 4) over two groups."""
    prompts = Dataset.from_dict({"prompt": [[{"role": "user", "content": f"{i} + {i} = "}] for i in range(2)]})
    args = cpu_args(tmp_path, UPAsyncGRPOConfig, per_device_train_batch_size=8, token_budget=0, max_steps=1)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    kwargs = dict(train_dataset=prompts, reward_funcs=some_none, processing_class=tokenizer, args=args)
    rollout = in_process_rollout(tiny_model, **kwargs)
    with async_grpo_on_cpu():
        trainer = UPAsyncGRPOTrainer(tiny_model, **kwargs, **rollout)
    trainer.train()
    assert [h[METRIC] for h in trainer.state.log_history if METRIC in h] == [0.25]
