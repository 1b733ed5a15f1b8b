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


@pytest.mark.parametrize(("reply", "gold", "expected"), UNIT_LETTER_CASES)
def test_a_letter_math_verify_drops_is_no_unit(reply, gold, expected):
    assert score(reply, gold) == expected


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
