"""What the commands read: texts from a file or stdin, saved or exported model folders; and the guard that no
command writes over what it reads."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["check_inputs_exist", "check_new_file", "check_output", "load_model", "read_texts"]

TABLE_SUFFIXES = (".csv", ".json", ".jsonl", ".parquet")  # read as columns; any other file: one text per line


def check_output(output: str, *inputs: str | None, suffix: str) -> None:
    """The output-path guard (`check_output_path`), before anything is read: no
    command writes into, over or around a folder or file it reads (inputs that do not exist, hub names, are
    skipped)."""
    from ..serialization import check_output_path

    check_output_path(output, *inputs, suffix=suffix)


def check_new_file(output: str, command: str) -> None:
    """FileExistsError when ``output`` exists (a file, folder or link): the command writes only new files."""
    if Path(output).exists() or Path(output).is_symlink():
        raise FileExistsError(f"{output} exists: {command} never writes over a file; pass a new --output")


def check_inputs_exist(paths: dict[str, str | None]) -> None:
    """FileNotFoundError naming the argument (``{"--eval-data": path}``) of a given input file that does not exist
    (``-``, stdin, is skipped), before any model loads or anything is written."""
    for argument, path in paths.items():
        if path and path != "-" and not Path(path).is_file():
            raise FileNotFoundError(f"{argument} {path}: no such file")


def load_model(model_dir: str, runtime: str = "auto") -> Any:
    """The model in ``model_dir``, of any tier (`setfit_lite.modeling.load_model_folder`)."""
    from ..modeling import load_model_folder

    return load_model_folder(model_dir, runtime)


def is_table(source: str) -> bool:
    """Whether ``source`` is read as columns (CSV, JSON, JSONL) rather than one text per line."""
    return Path(source).suffix.lower() in TABLE_SUFFIXES


def read_texts(source: str, text_column: str) -> Iterator[str]:
    """The texts of ``source``: ``-`` (stdin: a text or a JSON object per line), a CSV/JSON/JSONL/Parquet file (its
    ``text_column``) or a text file (one text per line)."""
    if source == "-":
        from ..runtime.predictor import decoded_lines

        buffer = getattr(sys.stdin, "buffer", None)  # bytes, decoded line by line: an error names the line
        lines = decoded_lines(buffer, "<stdin>") if buffer is not None else (t.rstrip("\n") for t in sys.stdin)
        for number, line in enumerate(lines, start=1):
            if line.strip():
                yield _maybe_json_text(line, text_column, number)
        return
    if is_table(source):
        from ..data import to_labeled_data

        # a label column (a partly labelled file) is not read: these texts are predicted
        yield from to_labeled_data(Path(source), text_column=text_column, require_labels=False,
                                   read_labels=False).texts
        return
    from ..runtime.predictor import iter_text_file

    yield from iter_text_file(Path(source))


def _maybe_json_text(line: str, text_column: str, number: int) -> str:
    """A stdin line's text: a JSON object's ``text_column`` (ValueError naming the line when it has none, or a
    value that is not a text), any other line as it is."""
    if line.startswith("{"):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            return line
        if isinstance(obj, dict):
            if text_column not in obj:
                raise ValueError(f"<stdin> line {number} is a JSON object without the text column {text_column!r} "
                                 f"(its keys: {sorted(obj)[:10]}); set --text-column")
            if not isinstance(obj[text_column], str):
                raise ValueError(f"<stdin> line {number}: {text_column!r} is a {type(obj[text_column]).__name__}, "
                                 "not a text")
            return obj[text_column]
    return line
