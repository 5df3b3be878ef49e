"""What the commands read: texts from a file or stdin, saved or exported model folders; and the guard that no
command writes over what it reads."""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["check_inputs_exist", "check_new_file", "check_output", "load_model", "read_labelled", "read_numbered_texts",
           "read_texts"]

TABLE_SUFFIXES = (".csv", ".json", ".jsonl", ".parquet")  # read as columns; any other file: one text per line


def check_output(output: str, *inputs: str | None, suffix: str) -> None:
    """The output-path guard (`check_output_path`), before anything is read: no
    command writes into, over or around a folder or file it reads (inputs that do not exist, hub names, are
    skipped)."""
    from ..serialization import check_output_path

    check_output_path(output, *inputs, suffix=suffix)


def check_new_file(output: str, command: str) -> None:
    """Before any work, what writing the new file ``output`` would meet: FileExistsError when it exists (a file,
    folder or link: the command writes only new files) or when the nearest existing path above it is not a
    folder; PermissionError when that folder cannot be written in (tried with a temporary file, which also
    catches read-only file systems and root's writes that the kernel refuses)."""
    path = Path(output)
    if path.exists() or path.is_symlink():
        raise FileExistsError(f"{output} exists: {command} never writes over a file; pass a new --output")
    folder = next((p for p in path.parents if p.exists() or p.is_symlink()), None)  # "." or "/" at the latest
    if folder is None:  # the working folder was removed
        return
    if not folder.is_dir():  # a dangling link is not a folder either
        raise FileExistsError(f"cannot write {output}: {folder} above it exists and is not a folder (nothing was "
                              "written); pass another --output")
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".setfit_lite-probe-"):
            pass
    except OSError as error:
        raise PermissionError(f"cannot write {output}: the folder {folder} cannot be written in "
                              f"({error.strerror or error}; nothing was written); pass another --output") from None


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


def read_labelled(source: str, argument: str, text_column: str, label_column: str, *,
                  require_labels: bool = True) -> Any:
    """The table ``source``, given as ``argument`` (``data``, ``--eval-data``), read by
    `setfit_lite.data.to_labeled_data`, its problems in the command line's words.

    Args:
        source: The path the command line gave.
        argument: The argument or option that gave it, as the messages name it.
        text_column: ``--text-column``.
        label_column: ``--label-column``.
        require_labels: Whether a file without ``label_column`` is refused (else its labels are None).

    Raises:
        ValueError: ``-`` (stdin gives texts, not labelled data); a label column that is the text column; a column
            the file does not have, naming the option that asked for it and the file's columns; a table that is not
            valid (`to_labeled_data`).
        FileNotFoundError: A file that does not exist, naming ``argument``.
    """
    from ..data import to_labeled_data

    if require_labels and label_column == text_column:
        raise ValueError(f"--label-column {label_column!r} is the --text-column too: the labels need a column of "
                         "their own")
    if source == "-":
        raise ValueError(f"{argument} -: labelled data is read from a .csv, .json, .jsonl or .parquet file, not from "
                         "stdin (stdin gives texts, one per line); save it to a file and pass its path")
    check_inputs_exist({argument: source})
    try:
        return to_labeled_data(source, text_column=text_column, label_column=label_column,
                               require_labels=require_labels)
    except ValueError as error:
        raise _column_error(error, source, text_column, label_column if require_labels else None) from None


def _column_error(error: ValueError, source: str, text_column: str, label_column: str | None) -> ValueError:
    """``error`` of reading the table ``source``, or where it is about a column ``source`` lacks
    (`MissingColumnError`), the CLI's own: the option (``--text-column``, ``--label-column``), the column and every
    column of the file (the reader's words name the Python parameters)."""
    from ..data.readers import MissingColumnError

    if not isinstance(error, MissingColumnError):
        return error
    if error.columns is None:  # a JSON array of texts
        if label_column is None:
            return error
        return ValueError(f"--label-column {label_column!r}: {source} holds texts without labels, not rows with "
                          "columns")
    option = {"text_column": "--text-column", "label_column": "--label-column"}[error.parameter]
    return ValueError(f"{option} {error.column!r} is not a column of {source}; its columns: {error.columns}")


def read_texts(source: str, text_column: str) -> Iterator[str]:
    """The texts of ``source``, as `read_numbered_texts` reads them."""
    return (text for _, text in read_numbered_texts(source, text_column))


def read_numbered_texts(source: str, text_column: str) -> Iterator[tuple[int | None, str]]:
    """Each text of ``source`` with the input line it starts on (None for a JSON document or a Parquet file, whose
    rows are not lines), in order, read lazily from a text file or stdin.

    ``source`` is ``-`` (stdin: a text per line, or a JSON object whose ``text_column`` is the text), a
    CSV/JSON/JSONL/Parquet file (its ``text_column``; every row, `setfit_lite.data.to_labeled_data`) or a text file
    (a text per line). Stdin and text files are split at ``\\n``, ``\\r\\n`` and ``\\r`` only; a blank line there
    holds no text and is skipped (the line numbers say which lines the texts are).

    Raises:
        ValueError: A line that is not UTF-8, or a stdin JSON object without a text, naming the input and the
            line; a table without ``text_column`` (naming ``--text-column`` and the table's columns) or not valid
            (`to_labeled_data`).
    """
    from ..data.readers import numbered_lines

    if source == "-":
        buffer = getattr(sys.stdin, "buffer", None)  # bytes, decoded line by line: an error names the line
        stream = buffer if buffer is not None else (line.encode("utf-8", "surrogatepass") for line in sys.stdin)
        for number, line in numbered_lines(stream, "<stdin>"):
            if line.strip():
                yield number, _maybe_json_text(line, text_column, number)
        return
    if is_table(source):
        from ..data import to_labeled_data

        try:  # a label column (a partly labelled file) is not read: these texts are predicted
            data = to_labeled_data(Path(source), text_column=text_column, require_labels=False, read_labels=False)
        except ValueError as error:
            raise _column_error(error, source, text_column, None) from None
        yield from zip(data.lines or [None] * len(data.texts), data.texts)
        return
    with open(source, "rb") as handle:
        yield from ((number, line) for number, line in numbered_lines(handle, str(Path(source))) if line.strip())


def _maybe_json_text(line: str, text_column: str, number: int) -> str:
    """A stdin line's text: a JSON object's ``text_column`` (ValueError naming the line when it has none, or a
    value that is not a text or is blank), any other line as it is."""
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
            from ..data import validate_texts

            try:
                return validate_texts([obj[text_column]])[0]
            except ValueError as err:  # "row 0: text is empty ...": the row is this line
                raise ValueError(f"<stdin> line {number}: {text_column!r}{str(err).removeprefix('row 0: text')}"
                                 ) from None
    return line
