r"""The scorer's remaining classes (issue 17): closed-form tables of reply, gold and expected reward.

Each table states its rule in its comment; a reader checks every row by hand. The sentences are new: none is copied
from a labelled set in `benchmarks/data/`.
"""

from __future__ import annotations

import time

import pytest
import torch

from up_trl.rewards import dapo_math_reward, extract_answer, make_math_accuracy_reward, math_accuracy_reward

torch.set_num_threads(1)


def score(reply: str, gold: str) -> float | None:
    return math_accuracy_reward([reply], solution=[gold])[0]


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
    start = time.perf_counter()
    assert reward([reply], solution=[gold]) == [0.0]
    assert dapo_math_reward([reply], solution=[gold]) == [-1.0]
    assert time.perf_counter() - start < 5.0
    assert reward.stats.no_answer == 1 and extract_answer(reply) is None


def test_thousands_of_open_boxes_cost_linear_time():
    """Extraction is one pass over the brace tokens: 20,000 open boxes then a number cost milliseconds."""
    start = time.perf_counter()
    assert extract_answer(r"\boxed{" * 20_000 + "42") is None
    assert time.perf_counter() - start < 0.5


def test_closed_boxes_and_escaped_braces_still_answer():
    assert score(r"\boxed{42}", "42") == 1.0
    assert score(r"\boxed{\{1, 2\}}", r"\{1,2\}") == 1.0  # `\{` is a literal brace, not an opening one
    assert score(r"\boxed{42} {", "42") == 1.0  # an open brace that is no box cuts nothing off
