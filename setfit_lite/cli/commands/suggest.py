"""``setfit-lite suggest``: which texts of a pool to label next (`setfit_lite.active.suggest_labels`), written
as a JSONL file for a person to fill in: one ``{"index": i, "text": ..., "label": null}`` row per text (the text
under the ``--text-column`` name, ``text`` by default, so that ``train`` finds it under the same option).

``index`` is the text's position in the pool as read (a text file: its non-blank lines; CSV/JSON/JSONL: its rows).
The filled file is training data as it is (``setfit-lite train to_label.jsonl``), and excludes its texts from the
next round (``--exclude to_label.jsonl``). The output is a new ``.jsonl`` file (the format written; ``train``
reads a file by its suffix), written whole or not at all, and never over a file. The pool, the excluded indices
(each file's against the pool, and the text recorded beside an index against the pool's text there), ``--k`` and
``--label-names`` are checked before the model loads.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, NamedTuple

from ...active.params import RULES, STRATEGIES
from ...config.params import argument_type
from ..inputs import check_new_file, check_output, load_model, read_texts
from ..options import add_data_args, add_runtime_arg

HELP = "suggest which texts of a pool to label next (a JSONL file to fill in)"
ROW_KEYS = ("index", "label")  # the keys written beside the text


def add_arguments(suggest: argparse.ArgumentParser) -> None:
    suggest.add_argument("model", help="a saved or exported model, or a body (hub name or folder) for a cold start")
    suggest.add_argument("pool", help="the unlabelled texts: a text file (one per line), CSV, JSON or JSONL")
    suggest.add_argument("--k", type=argument_type("k", RULES), required=True, help="how many texts to suggest")
    suggest.add_argument("--output", required=True,
                         help="the .jsonl file to write (a new file: an existing one is never written over)")
    suggest.add_argument("--exclude", action="append", default=[], metavar="FILE",
                         help="texts not to suggest: a JSONL/JSON file of rows with an 'index' (an earlier round's "
                              "file: the text beside each index must still be the pool's text there) or a text "
                              "file of indices, one per line; may be repeated")
    suggest.add_argument("--strategy", choices=STRATEGIES, default="auto",
                         help="how to choose the texts; auto: cold_start_kmeans for a body, else margin_typical")
    suggest.add_argument("--seed", type=argument_type("seed", RULES), default=0,
                         help="random seed of the strategy (default: %(default)s)")
    suggest.add_argument("--label-names", nargs="+", default=None, metavar="NAME",
                         help="the classes' names to search the pool for (default: the model's labels)")
    add_data_args(suggest, labelled=False)
    suggest.add_argument("--batch-size", type=argument_type("batch_size"), default=64,
                         help="texts per encoding batch (default: %(default)s)")
    add_runtime_arg(suggest)


class Excluded(NamedTuple):
    """One row of an ``--exclude`` file: the index, the text recorded beside it (None: none), and where the row
    is in its file (``line 3``; ``row 3`` of a JSON array)."""

    index: int
    text: str | None
    where: str


def read_excluded(path: str, text_column: str = "text") -> list[Excluded]:
    """The rows of ``path``: the ``index`` (and ``text_column``, the text, if any) of each row of a JSONL/JSON
    file, or one integer (or JSON row) per non-blank line of any other file; ValueError naming the line otherwise.
    Lines are split as the readers split them: a JSONL file at ``\\n`` only (its strings may hold U+2028 or U+0085
    unescaped, as this command writes them), any other file at ``\\n``, ``\\r\\n`` and ``\\r``."""
    from ...data.readers import json_lines, numbered_lines, read_utf8

    suffix = Path(path).suffix.lower()
    if suffix == ".json":
        rows = _json(read_utf8(Path(path)), f"{path}: not valid JSON")
        return [_row(row, path, f"row {i + 1}", text_column)
                for i, row in enumerate(rows if isinstance(rows, list) else [rows])]
    if suffix == ".jsonl":
        lines = list(enumerate(json_lines(read_utf8(Path(path))), start=1))
    else:
        with open(path, "rb") as handle:
            lines = list(numbered_lines(handle, path))
    out = []
    for number, line in lines:
        if not line.strip():
            continue
        if line.lstrip().startswith("{"):
            out.append(_row(_json(line, f"{path}: line {number} is not valid JSON"), path, f"line {number}",
                            text_column))
            continue
        try:
            out.append(Excluded(int(line), None, f"line {number}"))
        except ValueError:
            raise ValueError(f"{path}: line {number} is neither an index nor a JSON row with one: {line[:80]!r}"
                             ) from None
    return out


def check_excluded_texts(path: str, rows: list[Excluded], texts: list[str], pool: str) -> None:
    """ValueError naming ``path`` and the line of the first row whose recorded text is not the pool's text at its
    index (the pool changed since that round: its indices point at other texts). Indices are in range."""
    for row in rows:
        if row.text is not None and texts[row.index] != row.text:
            raise ValueError(f"{path}: {row.where} has index {row.index} for the text {row.text!r:.80}, but text "
                             f"{row.index} of {pool} is {texts[row.index]!r:.80}: the pool changed since that "
                             "round; suggest from the pool that round read, or give indices into this one")


def _json(text: str, where: str) -> Any:
    """``text`` parsed as JSON; ValueError starting with ``where`` (the file and line) otherwise."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{where}: {error}") from None


def _row(row: Any, path: str, where: str, text_column: str) -> Excluded:
    if not isinstance(row, dict) or not isinstance(row.get("index"), int) or isinstance(row.get("index"), bool):
        raise ValueError(f"{path}: {where} has no integer 'index' (the position of its text in the pool)")
    if text_column in row and not isinstance(row[text_column], str):
        raise ValueError(f"{path}: {where}: {text_column!r} is a {type(row[text_column]).__name__}, not a text")
    return Excluded(row["index"], row.get(text_column), where)


def run(ns: argparse.Namespace) -> dict[str, Any]:
    from ...active import suggest_labels
    from ...active.params import check_exclude, check_k_left, check_label_names_arg, check_pool
    from ...active.pool import has_fitted_head
    from ...active.strategies import resolve
    from ...serialization import atomic_write_text

    if Path(ns.output).suffix.lower() != ".jsonl":  # train reads a file by its suffix: JSONL only as .jsonl
        raise ValueError(f"--output {ns.output}: suggest writes JSON lines, so the file must end in .jsonl "
                         f"(e.g. {Path(ns.output).stem or 'to_label'}.jsonl); train reads a file by its suffix")
    check_new_file(ns.output, "suggest")
    check_output(ns.output, ns.model, ns.pool, *ns.exclude, suffix="to_label")
    if ns.text_column in ROW_KEYS:
        raise ValueError(f"--text-column {ns.text_column!r}: suggest writes the text under that name beside the keys "
                         f"{' and '.join(map(repr, ROW_KEYS))}; rename the pool's column")
    rounds = [(path, read_excluded(path, ns.text_column)) for path in ns.exclude]
    texts = check_pool(list(read_texts(ns.pool, ns.text_column)))
    exclude: list[int] = []
    for path, rows in rounds:  # checked against the pool, the file named, before the model loads
        indices = [row.index for row in rows]
        try:
            check_exclude(indices, len(texts))
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from None
        check_excluded_texts(path, rows, texts, "<stdin>" if ns.pool == "-" else ns.pool)
        exclude += indices
    check_k_left(ns.k, len(texts), check_exclude(exclude, len(texts)))
    check_label_names_arg(ns.label_names)
    model = load_model(ns.model, ns.runtime)
    picks = suggest_labels(model, texts, ns.k, exclude, strategy=ns.strategy, label_names=ns.label_names,
                           seed=ns.seed, batch_size=ns.batch_size)
    lines = "".join(json.dumps({"index": i, ns.text_column: texts[i], "label": None}, ensure_ascii=False) + "\n"
                    for i in picks)
    atomic_write_text(ns.output, lines, overwrite=False)
    result = {"output": ns.output, "suggested": len(picks), "pool": len(texts), "excluded": len(set(exclude)),
              "strategy": resolve(ns.strategy, has_fitted_head(model))}
    print(json.dumps(result))
    return result
