r"""Math prompts: offline sets, answer extraction, generated arithmetic, local files and the user's errors."""

import re

import datasets
import pytest
from datasets import Dataset
from math_verify import parse, verify

from up_trl import data
from up_trl.data import DATASETS, OFFLINE_DATASETS, arithmetic, extract_boxed, gold_answer, load_math_dataset, sources
from up_trl.rewards import extraction

HUB_NAMES = [name for name, spec in DATASETS.items() if not spec.offline]


def user_text(row):
    return row["prompt"][-1]["content"]


# ---- offline named sets ------------------------------------------------------------------------------------------
# First rows of each file, read by hand: (name, split, first problem starts with, first solutions, other columns).
FIRST_ROWS = [
    ("gsm8k", "train", "Natalia sold clips", ["72", "10", "5"], ["answer", "idx"]),
    ("gsm8k", "test", "Janet\u2019s ducks", ["18", "3", "70000"], ["answer", "idx"]),  # thousands commas
    ("math", "train", r"Let \[f(x)", ["0", "98", "4"], ["level", "type"]),
    ("math", "test", "How many vertical", ["2", "10", r"$\dfrac{9}{7}$"], ["level", "type", "idx"]),
    ("math500", None, "Convert the point", [r"$\left( 3, \frac{\pi}{2} \right)$", "$p - q$", r"$\frac{14}{3}$"],
     ["answer", "subject", "level", "unique_id"]),
    ("minerva", None, "Each of the two Magellan", ["1.6", r"$4.5 \times 10^{33}$", "41.8"], ["type", "idx"]),
]  # fmt: skip


@pytest.mark.parametrize("name, split, problem_start, solutions, metadata", FIRST_ROWS, ids=lambda v: str(v))
def test_offline_sets_first_rows(name, split, problem_start, solutions, metadata):
    ds = load_math_dataset(name, split, limit=3)
    assert ds.column_names == ["prompt", "solution", *metadata]
    assert ds["solution"] == solutions
    assert user_text(ds[0]).startswith(problem_start)
    assert [m["role"] for m in ds[0]["prompt"]] == ["system", "user"]
    assert all(parse(s) for s in ds["solution"])


def test_offline_sets_default_split_and_sizes():
    assert len(load_math_dataset("math500")) == 500
    assert len(load_math_dataset("minerva")) == 272
    with pytest.raises(ValueError, match=r"'math500' has splits \('test',\), not 'train'"):
        load_math_dataset("math500", "train")


def test_math_levels_become_ints_and_filter():
    ds = load_math_dataset("math", "test", levels=(3, 4, 5))
    assert set(ds["level"]) == {3, 4, 5}
    assert len(ds) == 1131 + 1214 + 1324  # Level 3, 4, 5 rows of MATH test
    with pytest.raises(ValueError, match=r"Input column \['level'\] not in the dataset"):  # datasets' words
        load_math_dataset("gsm8k", levels=(3,), limit=5)


def test_shuffle_is_seeded():
    first = load_math_dataset("math", "test", limit=5, shuffle=True, seed=1)["solution"]
    assert first == load_math_dataset("math", "test", limit=5, shuffle=True, seed=1)["solution"]
    assert first != load_math_dataset("math", "test", limit=5)["solution"]


def test_system_prompt_on_off():
    default = load_math_dataset("gsm8k", limit=1)[0]["prompt"]
    assert default[0] == {"role": "system", "content": data.DEFAULT_SYSTEM_PROMPT}
    assert r"\boxed{}" in data.DEFAULT_SYSTEM_PROMPT
    assert load_math_dataset("gsm8k", limit=1, system_prompt=None)[0]["prompt"][0]["role"] == "user"
    custom = load_math_dataset("arithmetic", limit=1, system_prompt="Answer with a number.")[0]["prompt"]
    assert custom[0]["content"] == "Answer with a number."


# ---- answers -----------------------------------------------------------------------------------------------------
def test_extract_boxed_is_the_scorers_parser():
    # One \boxed parser: the data loader's gold answers and the scorer's boxes follow the same rules.
    assert extract_boxed is extraction.last_boxed
    assert {value for name, value in vars(data).items() if "boxed" in name} == {extraction.last_boxed}


# Two golds of MATH's train split box without braces ("our answer is $\boxed 2$."): the loader reads them (bare=True);
# a reply's bare box is no box to the scorer, which reads its last number instead.
@pytest.mark.parametrize("text", [r"is $\boxed 2$.", r"$x^2 + y^2 = \boxed 9$.", r"\boxed{1} then \boxed 2"])
def test_gold_answer_reads_a_box_without_braces(text):
    assert gold_answer(text) == extract_boxed(text, bare=True) == text.rstrip(".$")[-1]


def test_the_later_box_wins_with_or_without_braces():
    assert extract_boxed(r"\boxed 2 then \boxed{1}", bare=True) == "1"


@pytest.mark.parametrize("raw, expected", [
    pytest.param("He makes 9 * 2 = $18.\n#### 1,018", "1018", id="gsm8k_commas"),
    pytest.param(r"Thus $x = \boxed{\dfrac{9}{7}}$.", r"$\dfrac{9}{7}$", id="worked_solution"),
    pytest.param("42", "42", id="integer_bare"),
    pytest.param("-0.5", "-0.5", id="decimal_bare"),
    pytest.param(27.0, "27", id="float_integer"),
    pytest.param(["$\\frac{1}{2}$"], r"$\frac{1}{2}$", id="olympiad_list"),
    pytest.param(["1", "2"], "$1, 2$", id="several_answers"),
    pytest.param("4.5e33", r"$4.5 \times 10^{33}$", id="minerva_e_notation"),
    pytest.param(r"\$18.90", r"$\$18.90$", id="dollar_sign_kept"),
    pytest.param(r"x_{0} \cos t+$ $\dot{x}_{0}", r"$x_{0} \cos t+ \dot{x}_{0}$", id="stray_delimiters"),
    pytest.param(r"\boxed{}", "", id="empty_box"),
    pytest.param(None, "", id="missing"),
])  # fmt: skip
def test_gold_answer(raw, expected):
    assert gold_answer(raw) == expected


# Bare, math-verify reads "3\sqrt{13}" as 3 and "6 - 5i" as 5 (109 of MATH-500's 500 answers go wrong); in $...$ they
# parse as the boxed answer does.
@pytest.mark.parametrize("answer", [r"3\sqrt{13}", "6 - 5i", r"\left( 3, \frac{\pi}{2} \right)", "p - q", r"\pi"])
def test_gold_answer_parses_like_the_boxed_answer(answer):
    boxed = parse(f"\\boxed{{{answer}}}")
    assert not verify(boxed, parse(answer)) or not parse(answer)  # why we wrap
    assert verify(boxed, parse(gold_answer(answer)))


def test_every_offline_gold_answer_parses():
    for name, split in [("math", "test"), ("math500", None), ("minerva", None), ("gsm8k", "test")]:
        solutions = load_math_dataset(name, split, limit=300, shuffle=True)["solution"]
        assert all(parse(s) for s in solutions), name


# ---- arithmetic --------------------------------------------------------------------------------------------------
def test_arithmetic_deterministic_and_correct():
    def load(split="train", seed=3):
        return load_math_dataset("arithmetic", split, limit=200, seed=seed, ops=("mul", "add", "sub"))

    ds = load()
    assert ds.column_names == ["prompt", "solution", "op"] and ds.to_list() == load().to_list()
    assert ds["prompt"] != load(seed=4)["prompt"] and ds["prompt"] != load("test")["prompt"]
    assert set(ds["op"]) == {"mul", "add", "sub"}
    for row in ds:
        a, symbol, b = re.fullmatch(r"What is (\d+) ([x+-]) (\d+)\?", user_text(row)).groups()
        a, b = int(a), int(b)
        assert int(row["solution"]) == {"x": a * b, "+": a + b, "-": a - b}[symbol]
        assert {"x": 2 <= a <= 9 and 10 <= b <= 99, "+": a >= 10 and b >= 10, "-": a >= b}[symbol]


def _problem_key(row):
    a, symbol, b = re.fullmatch(r"What is (\d+) ([x+-]) (\d+)\?", user_text(row)).groups()
    return symbol, frozenset((int(a), int(b)))  # unordered: "7 x 8" and "8 x 7" are one fact


@pytest.mark.parametrize("ops", [("mul1",), ("mul",), ("add", "sub"), ("mul1", "mul", "add", "sub")])
def test_arithmetic_train_dev_and_test_never_share_a_problem(ops):
    """No dev or test problem, in either operand order, is generated for training; dev and test share none."""
    train = set()
    for seed in range(3):
        train |= {_problem_key(r) for r in load_math_dataset("arithmetic", limit=3000, seed=seed, ops=ops)}
    held_out = {}
    fractions = {"test": arithmetic.ARITHMETIC_TEST_FRACTION, "dev": arithmetic.ARITHMETIC_DEV_FRACTION}
    for split, fraction in fractions.items():
        rows = load_math_dataset("arithmetic", split, limit=10**6, ops=ops)
        assert len(set(map(user_text, rows))) == len(rows) > 0  # distinct problems
        held_out[split] = {_problem_key(r) for r in rows}
        assert train.isdisjoint(held_out[split])
        expected = sum(len(arithmetic.arithmetic_problems(op, split)) for op in ops)
        assert len(rows) == expected  # every held-out problem, each once
        total = sum(len(arithmetic.arithmetic_problems(op, s)) for op in ops for s in arithmetic.ARITHMETIC_SPLITS)
        assert fraction * 0.5 < expected / total < fraction * 1.6  # about its share (mul1 is small)
    assert held_out["dev"].isdisjoint(held_out["test"])


def test_arithmetic_times_table_split_sizes():
    """The times table: 64 problems, 16 of them (facts and their mirrors, or squares) held out for test, 9 for dev."""
    train, dev, test = (arithmetic.arithmetic_problems("mul1", s) for s in ("train", "dev", "test"))
    assert len(train) + len(dev) + len(test) == 64 and len(test) == 16 and len(dev) == 9
    assert {(b, a) for a, b in test} == set(test) and {(b, a) for a, b in dev} == set(dev)  # mirrors stay together
    with pytest.raises(ValueError, match=r"arithmetic has splits \('train', 'dev', 'test'\), not 'validation'"):
        arithmetic.arithmetic_dataset(4, split="validation")
    limited = load_math_dataset("arithmetic", "test", limit=5, seed=1)
    assert len(limited) == 5
    assert limited.to_list() == load_math_dataset("arithmetic", "test", limit=5, seed=1).to_list()


def test_arithmetic_defaults_and_errors():
    ds = load_math_dataset("arithmetic")
    assert len(ds) == arithmetic.ARITHMETIC_DEFAULT_SIZE and set(ds["op"]) == {"mul1"}
    with pytest.raises(ValueError, match="Unknown arithmetic op 'div'"):
        load_math_dataset("arithmetic", ops=("div",))


def test_arithmetic_worked_examples_come_before_each_problem_and_are_no_problem_themselves():
    pairs = [
        (op, a, b)
        for op in arithmetic.ARITHMETIC_OPS
        for split in arithmetic.ARITHMETIC_SPLITS
        for a, b in arithmetic.arithmetic_problems(op, split)
    ]
    every_problem = {arithmetic.arithmetic_problem(op, a, b)[0] for op, a, b in pairs}
    for question, reply in arithmetic.ARITHMETIC_WORKED_EXAMPLES:
        a, symbol, b = re.fullmatch(r"What is (\d+) ([x+-]) (\d+)\?", question).groups()
        assert question not in every_problem and f"What is {b} {symbol} {a}?" not in every_problem  # either order
        answer = {"x": int(a) * int(b), "+": int(a) + int(b), "-": int(a) - int(b)}[symbol]
        assert reply.endswith(f"The answer is {answer}.")  # the format the reward reads
    plain = load_math_dataset("arithmetic", "test", limit=3, ops=("add",))
    shown = load_math_dataset("arithmetic", "test", limit=3, ops=("add",), few_shot=2)
    assert shown["solution"] == plain["solution"]
    for before, after in zip(plain["prompt"], shown["prompt"]):
        assert after[0] == before[0] and after[0]["role"] == "system"  # the system turn stays first
        assert after[-1] == before[-1]  # the problem stays last
        assert [t["role"] for t in after[1:-1]] == ["user", "assistant"] * 2
        assert after[1]["content"] == arithmetic.ARITHMETIC_WORKED_EXAMPLES[0][0]
    no_system = load_math_dataset("arithmetic", limit=1, few_shot=1, system_prompt=None)[0]["prompt"]
    assert [t["role"] for t in no_system] == ["user", "assistant", "user"]
    with pytest.raises(ValueError, match="must number 0 to 3, got 4"):
        load_math_dataset("arithmetic", few_shot=4)
    with pytest.raises(ValueError, match="for `arithmetic` only, not 'gsm8k'"):
        load_math_dataset("gsm8k", few_shot=1)


# ---- local files -------------------------------------------------------------------------------------------------
ROWS = [{"question": "What is 2 + 2?", "final": "4"}, {"question": "Half of one?", "final": r"\frac{1}{2}"}]


@pytest.mark.parametrize("suffix", ["jsonl", "json", "csv", "parquet"])
def test_local_file_with_column_mapping(tmp_path, suffix):
    path = tmp_path / f"mine.{suffix}"
    table = Dataset.from_list(ROWS)
    {"jsonl": table.to_json, "json": table.to_json, "csv": table.to_csv, "parquet": table.to_parquet}[suffix](path)
    ds = load_math_dataset(str(path), column_mapping={"question": "problem", "final": "answer"}, system_prompt=None)
    assert ds.to_list() == [  # the answer column stays as written, beside the gold read into `solution`
        dict(prompt=[{"role": "user", "content": "What is 2 + 2?"}], solution="4", answer="4"),
        dict(prompt=[{"role": "user", "content": "Half of one?"}], solution=r"$\frac{1}{2}$", answer=r"\frac{1}{2}"),
    ]


def test_local_file_standard_columns_and_worked_solutions(tmp_path):
    path = tmp_path / "worked.jsonl"
    Dataset.from_list([{"problem": "1+1?", "solution": r"So \boxed{2}.", "level": "Level 2"}]).to_json(path)
    row = load_math_dataset(str(path))[0]
    assert (user_text(row), row["solution"], row["level"]) == ("1+1?", "2", 2)


def test_local_file_missing_columns(tmp_path):
    path = tmp_path / "bad.jsonl"
    Dataset.from_list([{"text": "What is 1 + 1?", "target": "2"}]).to_json(path)
    # The flag to set, with this file's own columns filled in (the Python spelling too).
    mapping = r"""\{"text": "prompt", "target": "answer"\}"""
    found = rf"found \['text', 'target'\]\. Map yours with --column_mapping '{mapping}' "
    with pytest.raises(ValueError, match=found + rf"\(in Python: column_mapping={mapping}\)"):
        load_math_dataset(str(path))
    with pytest.raises(ValueError, match=r"Original column names \{'question'\} not in the dataset"):
        load_math_dataset(str(path), column_mapping={"question": "problem"})
    with pytest.raises(FileNotFoundError, match="No data file"):
        load_math_dataset(str(tmp_path / "absent.jsonl"))


def test_unknown_name_is_a_hub_id(monkeypatch):
    """An unknown name is a Hub id; offline it fails naming the closest short name and the offline sets."""
    monkeypatch.setattr(sources, "hub_reachable", never_called)
    assert datasets.config.HF_HUB_OFFLINE
    with pytest.raises(data.HubUnavailableError, match=r"'gsm9k' \(did you mean gsm8k\?\)") as error:
        load_math_dataset("gsm9k")
    assert all(name in str(error.value) for name in OFFLINE_DATASETS) and "HF_HUB_OFFLINE is set" in str(error.value)


# ---- Hub sets ----------------------------------------------------------------------------------------------------
def never_called(*args, **kwargs):
    raise AssertionError("must not run: datasets' offline mode reads the cache or fails at once")


@pytest.mark.parametrize("name", HUB_NAMES)
def test_hub_set_offline_not_cached_names_it_and_the_offline_sets(monkeypatch, name):
    def offline_load(source, *args, **kwargs):  # datasets' offline mode, the set not in its cache
        raise ConnectionError(f"Couldn't reach {source!r} on the Hub (OfflineModeIsEnabled)")

    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)  # datasets reads its cache only: we let it try
    monkeypatch.setattr(sources, "hub_reachable", never_called)
    monkeypatch.setattr(sources, "load_dataset", offline_load)
    with pytest.raises(data.HubUnavailableError) as error:
        load_math_dataset(name)
    message = str(error.value)
    assert f"{name!r}" in message and "needs the Hugging Face Hub, and HF_HUB_OFFLINE is set" in message
    assert "Offline alternatives: gsm8k, math, math500, minerva, arithmetic" in message
    assert tuple(OFFLINE_DATASETS) == ("gsm8k", "math", "math500", "minerva", "arithmetic")
    assert isinstance(error.value.__cause__, ConnectionError)


def online(monkeypatch):
    """As if the Hub were on: neither variable set (conftest sets both), and datasets read them so."""
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)


@pytest.mark.parametrize("variable", [None, "HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"])
def test_a_hub_set_out_of_reach_or_kept_off_by_a_recipe_env_block_is_refused(monkeypatch, variable):
    """The Hub unreachable, or an offline variable set after datasets was imported: the line says which."""
    online(monkeypatch)
    monkeypatch.setattr(sources, "hub_reachable", (lambda: False) if variable is None else never_called)
    monkeypatch.setattr(sources, "load_dataset", never_called)
    if variable is not None:
        monkeypatch.setenv(variable, "1")  # what `env: {VARIABLE: 1}` does
    why = "which cannot be reached here" if variable is None else f"needs the Hugging Face Hub, and {variable} is set"
    with pytest.raises(data.HubUnavailableError, match=f"'aime24'.*{why}"):
        load_math_dataset("aime24")


@pytest.fixture
def fake_hub(monkeypatch):
    """Serve in-memory tables as Hub datasets; records what was asked for."""
    tables, calls = {}, []

    def fake_load(source, config=None, split=None, streaming=False):
        calls.append((source, config, split))
        return Dataset.from_list(tables[source])

    online(monkeypatch)
    monkeypatch.setattr(sources, "hub_reachable", lambda: True)
    monkeypatch.setattr(sources, "load_dataset", fake_load)
    return tables, calls


DAPO_PROMPT = (
    "Solve the following math problem step by step. The last line of your response should be of the form "
    "Answer: $Answer (without quotes) where $Answer is the answer to the problem.\n\nFind $k$ if $k^2 = 9$, $k>0$."
    '\n\nRemember to put your answer on its own line after "Answer:".'
)


@pytest.mark.parametrize("name, rows, expected_problem, expected_solution, extra", [
    pytest.param("dapo-math-17k", [{"prompt": DAPO_PROMPT, "solution": "3", "data_source": "math_dapo",
                 "ability": "MATH"}], "Find $k$ if $k^2 = 9$, $k>0$.", "3",
                 {"data_source": "math_dapo", "ability": "MATH"}, id="dapo"),
    pytest.param("aime24", [dict(id=60, problem="Find the number.", solution="long", answer="204", url="u",
                 year="2024")], "Find the number.", "204", {"id": 60, "answer": "204", "url": "u", "year": "2024"},
                 id="aime24"),
    pytest.param("aime25", [{"problem": "P?", "answer": "70"}], "P?", "70", {"answer": "70"}, id="aime25"),
    pytest.param("amc23", [{"id": 0, "question": "Q?", "answer": 27.0}], "Q?", "27", {"id": 0, "answer": 27.0},
                 id="amc23"),
    pytest.param("olympiadbench", [{"id": 1, "question": "Q?", "final_answer": ["$\\frac{1}{2}$"],
                 "solution": ["long"]}], "Q?", r"$\frac{1}{2}$", {"id": 1, "final_answer": ["$\\frac{1}{2}$"]},
                 id="olympiadbench"),
])  # fmt: skip
def test_hub_sets_read_their_columns(fake_hub, name, rows, expected_problem, expected_solution, extra):
    tables, calls = fake_hub
    spec = DATASETS[name]
    tables[spec.source] = rows
    row = load_math_dataset(name)[0]
    assert calls == [(spec.source, spec.config, spec.splits[0])]
    assert user_text(row) == expected_problem and row["solution"] == expected_solution
    assert {k: v for k, v in row.items() if k not in ("prompt", "solution")} == extra


def test_math_lvl3to5_keeps_levels_3_to_5(fake_hub):
    tables, _ = fake_hub
    rows = [dict(problem=f"p{i}", level=f"Level {i}", type="Algebra", solution=rf"\boxed{{{i}}}") for i in range(1, 6)]
    tables[DATASETS["math-lvl3to5"].source] = rows
    ds = load_math_dataset("math-lvl3to5")
    assert ds["level"] == [3, 4, 5] and ds["solution"] == ["3", "4", "5"]
    assert load_math_dataset("math-lvl3to5", levels=(1,))["level"] == [1]


def test_strip_dapo_instruction_leaves_other_text():
    assert data.strip_dapo_instruction(DAPO_PROMPT) == "Find $k$ if $k^2 = 9$, $k>0$."
    assert data.strip_dapo_instruction("Just a problem.") == "Just a problem."


def test_geometry3k_is_a_trl_multimodal_prompt(fake_hub):
    from PIL import Image
    from trl.data_utils import prepare_multimodal_messages

    tables, _ = fake_hub
    image = Image.new("RGB", (8, 8), "white")
    tables["hiyouga/geometry3k"] = [{"images": [image], "problem": "<image>Find x.", "answer": "3", "id": 0}]
    row = load_math_dataset("geometry3k")[0]
    assert row["prompt"][1]["content"][0]["type"] == "image"
    assert row["prompt"][1]["content"][1] == {"type": "text", "text": "Find x."}
    assert row["solution"] == "3" and len(row["images"]) == 1
    filled = prepare_multimodal_messages(row["prompt"], images=row["images"])  # what GRPOTrainer does per prompt
    assert filled[1]["content"][0]["image"].size == (8, 8)
