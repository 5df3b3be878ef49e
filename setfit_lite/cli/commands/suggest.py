"""``setfit-lite suggest``: which texts of a pool to label next (`setfit_lite.active.suggest_labels`), written
as a JSONL file for a person to fill in: one ``{"index": i, "text": ..., "label": null}`` row per text.

``index`` is the text's position in the pool as read (a text file: its non-blank lines; CSV/JSON/JSONL: its rows).
The filled file is training data as it is (``setfit-lite train to_label.jsonl``), and excludes its texts from the
next round (``--exclude to_label.jsonl``). The output is written whole or not at all, and never over a file.
The pool, the excluded indices (each file's against the pool), ``--k`` and ``--label-names`` are checked before
the model loads.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ...active.params import RULES, STRATEGIES
from ...config.params import argument_type
from ..inputs import check_new_file, check_output, load_model, read_texts
from ..options import add_data_args, add_runtime_arg

HELP = "suggest which texts of a pool to label next (a JSONL file to fill in)"


def add_arguments(suggest: argparse.ArgumentParser) -> None:
    suggest.add_argument("model", help="a saved or exported model, or a body (hub name or folder) for a cold start")
    suggest.add_argument("pool", help="the unlabelled texts: a text file (one per line), CSV, JSON or JSONL")
    suggest.add_argument("--k", type=argument_type("k", RULES), required=True, help="how many texts to suggest")
    suggest.add_argument("--output", required=True,
                         help="the JSONL file to write (a new file: an existing one is never written over)")
    suggest.add_argument("--exclude", action="append", default=[], metavar="FILE",
                         help="texts not to suggest: a JSONL/JSON file of rows with an 'index' (an earlier round's "
                              "file) or a text file of indices, one per line; may be repeated")
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


def read_indices(path: str) -> list[int]:
    """The indices in ``path``: the ``index`` of each row of a JSONL/JSON file, or one integer per non-blank line
    of any other file; ValueError naming the line otherwise."""
    text = Path(path).read_text(encoding="utf-8")
    if Path(path).suffix.lower() == ".json":
        rows = _json(text, f"{path}: not valid JSON")
        return [_row_index(row, path, i + 1) for i, row in enumerate(rows if isinstance(rows, list) else [rows])]
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if line.lstrip().startswith("{"):
            out.append(_row_index(_json(line, f"{path}: line {number} is not valid JSON"), path, number))
            continue
        try:
            out.append(int(line))
        except ValueError:
            raise ValueError(f"{path}: line {number} is neither an index nor a JSON row with one: {line[:80]!r}"
                             ) from None
    return out


def _json(text: str, where: str) -> Any:
    """``text`` parsed as JSON; ValueError starting with ``where`` (the file and line) otherwise."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{where}: {error}") from None


def _row_index(row: Any, path: str, number: int) -> int:
    if not isinstance(row, dict) or not isinstance(row.get("index"), int) or isinstance(row.get("index"), bool):
        raise ValueError(f"{path}: row {number} has no integer 'index' (the position of its text in the pool)")
    return row["index"]


def run(ns: argparse.Namespace) -> dict[str, Any]:
    from ...active import suggest_labels
    from ...active.params import check_exclude, check_k_left, check_label_names_arg, check_pool
    from ...active.pool import has_fitted_head
    from ...active.strategies import resolve
    from ...serialization import atomic_write_text

    check_new_file(ns.output, "suggest")
    check_output(ns.output, ns.model, ns.pool, *ns.exclude, suffix="to_label")
    rounds = [(path, read_indices(path)) for path in ns.exclude]
    texts = check_pool(list(read_texts(ns.pool, ns.text_column)))
    exclude: list[int] = []
    for path, indices in rounds:  # checked against the pool, the file named, before the model loads
        try:
            check_exclude(indices, len(texts))
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from None
        exclude += indices
    check_k_left(ns.k, len(texts), check_exclude(exclude, len(texts)))
    check_label_names_arg(ns.label_names)
    model = load_model(ns.model, ns.runtime)
    picks = suggest_labels(model, texts, ns.k, exclude, strategy=ns.strategy, label_names=ns.label_names,
                           seed=ns.seed, batch_size=ns.batch_size)
    lines = "".join(json.dumps({"index": i, "text": texts[i], "label": None}, ensure_ascii=False) + "\n"
                    for i in picks)
    atomic_write_text(ns.output, lines, overwrite=False)
    result = {"output": ns.output, "suggested": len(picks), "pool": len(texts), "excluded": len(set(exclude)),
              "strategy": resolve(ns.strategy, has_fitted_head(model))}
    print(json.dumps(result))
    return result
