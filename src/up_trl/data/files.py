"""Local data files (`--dataset_name x.jsonl|.json|.csv|.parquet`) opened and checked before anything is loaded:
empty, unreadable, not the format their extension says, or without a row the loader can use. Each failure is a
`DataFileError` whose one line says what is wrong with the file and what to do.

The checks read the file itself (the first `SAMPLE_BYTES` of a large one) with the standard library, and only the
footer of a Parquet file (pyarrow), so `up-trl train` runs them before torch or transformers is imported. The columns
are the loader's (`load_math_dataset`): after `--column_mapping` renames them, a problem column (`PROBLEM_COLUMNS`)
and an answer column (`ANSWER_COLUMNS`); a row is usable when both hold a value.
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Mapping
from pathlib import Path

from . import ANSWER_COLUMNS, PROBLEM_COLUMNS, columns_message, gold_answer
from .prompts import DataError

SAMPLE_BYTES = 64 << 20  # the rows of a larger file are checked in its first 64 MiB
_PASSED: set[tuple] = set()  # files that passed, by (path, size, mtime, mapping): checked once per process


class DataFileError(DataError):
    """A data file that cannot be loaded as it is: the message says what is wrong and what to do."""


def check_data_file(path: str | os.PathLike, column_mapping: Mapping[str, str] | None = None) -> None:
    """Raise a DataFileError when the existing file `path` is empty, unreadable, not the format of its extension, or
    holds no row with a problem and an answer (after `column_mapping`).

    >>> import tempfile; folder = tempfile.TemporaryDirectory()
    >>> _ = Path(folder.name, "one.jsonl").write_text('{"problem": "1 + 1?", "answer": "2"}\\n{"problem": ')
    >>> check_data_file(Path(folder.name, "one.jsonl"))
    Traceback (most recent call last):
    ...
    up_trl.data.files.DataFileError: line 2 is not JSON (Expecting value: column 13): fix or remove that line.
    >>> folder.cleanup()
    """
    path = Path(path)
    info = path.stat()
    key = (str(path.resolve()), info.st_size, info.st_mtime_ns, json.dumps(dict(column_mapping or {})))
    if key in _PASSED:
        return
    if info.st_size == 0:
        raise DataFileError("the file is empty (0 bytes): write one problem per row, with its answer.")
    try:
        with open(path, "rb") as f:
            head = f.read(SAMPLE_BYTES)
            truncated = bool(f.read(1))
    except OSError as error:
        raise DataFileError(
            f"the file cannot be read ({error.strerror}): check its permissions (chmod u+r) or pass another file."
        ) from None
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        columns, rows = _parquet_columns(path, head)
    else:
        columns, rows = _text_rows(head, truncated, suffix)
    _check_columns(columns, rows, column_mapping or {})
    _PASSED.add(key)


def _parquet_columns(path: Path, head: bytes) -> tuple[list[str], None]:
    """The columns of a Parquet file, read from its footer (the rows are not read: None)."""
    with open(path, "rb") as f:
        f.seek(-min(4, len(head)), os.SEEK_END)
        tail = f.read(4)
    if head[:4] != b"PAR1" or tail != b"PAR1":
        raise DataFileError(
            "the file is not Parquet (it does not begin and end with Parquet's PAR1 marker): write it with "
            "pandas' to_parquet or pyarrow, or give it the extension of its format (.jsonl, .json, .csv)."
        )
    import pyarrow.parquet as pq

    try:
        metadata = pq.read_metadata(path)
    except Exception as error:  # pyarrow's ArrowInvalid, OSError: a footer that does not parse
        raise DataFileError(f"the file is not readable Parquet ({' '.join(str(error).split())}).") from None
    if metadata.num_rows == 0:
        raise DataFileError("the Parquet file holds no rows: write one problem per row, with its answer.")
    return list(metadata.schema.to_arrow_schema().names), None


def _text(head: bytes, truncated: bool, kind: str) -> str:
    if truncated:  # the sample ends inside a line: check whole lines only
        head = head[: head.rfind(b"\n") + 1] or head
    if b"\x00" in head:
        offset = head.index(b"\x00")
        raise DataFileError(
            f"the file holds binary bytes (byte 0x00 at offset {offset}), not {kind} text: is it "
            "another format under this extension? Pass a .parquet file with that extension, or export it as text."
        )
    try:
        return head.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise DataFileError(
            f"the file is not UTF-8 text (byte 0x{head[error.start]:02x} at offset {error.start}), as {kind} must "
            "be: save it as UTF-8, or check that it is the format its extension says."
        ) from None


def _text_rows(head: bytes, truncated: bool, suffix: str) -> tuple[list[str], list[dict]]:
    """(the columns, the rows) of a JSON Lines, JSON or CSV sample."""
    if suffix == ".csv":
        text = _text(head, truncated, "CSV")
        lines = [line for line in csv.reader(io.StringIO(text, newline="")) if any(part.strip() for part in line)]
        if not lines:
            raise DataFileError(
                "the file holds no CSV rows, only blank lines: write a header line, then one problem per line."
            )
        header, body = lines[0], lines[1:]
        if not body:
            raise DataFileError(
                f"the CSV file holds only a header line ({', '.join(header)}): write one problem per line under it."
            )
        return header, [dict(zip(header, values)) for values in body]
    text = _text(head, truncated, "JSON Lines" if suffix == ".jsonl" else "JSON")
    if not text.strip():
        raise DataFileError("the file holds only white space: write one JSON object per row, with its answer.")
    if suffix == ".json" and text.lstrip().startswith("["):  # a JSON array of rows (datasets reads either)
        if truncated:
            return [], None  # too large to parse here; datasets reads it
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as error:
            raise DataFileError(
                f"the file is not JSON ({error.msg}: line {error.lineno}, column {error.colno}): fix it there."
            ) from None
        if not all(isinstance(row, dict) for row in rows):
            raise DataFileError('the JSON array must hold one object per row, like {"problem": ..., "answer": ...}.')
    else:
        rows = []
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as error:
                whole = suffix == ".json" and number == 1 and _one_object(text)
                if whole:
                    raise DataFileError(
                        "the file is one JSON object, not rows: write a JSON array of objects, or one object per "
                        "line (.jsonl)."
                    ) from None
                raise DataFileError(
                    f"line {number} is not JSON ({error.msg}: column {error.colno}): fix or remove that line."
                ) from None
            if not isinstance(row, dict):
                raise DataFileError(
                    f"line {number} is a JSON {type(row).__name__}, not an object: write each row as "
                    '{"problem": ..., "answer": ...}.'
                )
            rows.append(row)
    if not rows:
        raise DataFileError("the file holds no rows: write one problem per row, with its answer.")
    return list(dict.fromkeys(key for row in rows for key in row)), rows


def _one_object(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except json.JSONDecodeError:
        return False


def _check_columns(columns: list[str], rows: list[dict] | None, mapping: Mapping[str, str]) -> None:
    """The loader's columns after `mapping` renames them (as `_rename` does), and at least one usable row."""
    if not columns:
        return
    missing = [source for source in mapping if source not in columns]
    if missing:
        raise DataFileError(
            f"--column_mapping names {missing}, which are not columns of the file; its columns are {columns}."
        )
    mapping = {source: target for source, target in mapping.items() if source != target}
    clashes = {target for target in mapping.values() if target in columns and target not in mapping}
    renamed = [mapping.get(c, c) for c in columns if c not in clashes]
    problem = next((c for c in PROBLEM_COLUMNS if c in renamed), None)
    answer = next((c for c in ANSWER_COLUMNS if c in renamed), None)
    if problem is None or answer is None:
        raise DataFileError(columns_message(renamed, problem, answer))
    if rows is None:
        return
    source = {mapping.get(c, c): c for c in columns if c not in clashes}
    usable = sum(
        1 for row in rows if row.get(source[problem]) not in (None, "") and gold_answer(row.get(source[answer])) != ""
    )
    if usable == 0:
        named = f"'{source[problem]}'" + (f" (read as {problem})" if source[problem] != problem else "")
        named += f" and '{source[answer]}'" + (f" (read as {answer})" if source[answer] != answer else "")
        raise DataFileError(
            f"none of its {len(rows)} rows holds both a problem and an answer (columns {named}): fill them in, or "
            "map other columns with --column_mapping."
        )
