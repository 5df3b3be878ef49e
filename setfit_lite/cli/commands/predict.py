"""``setfit-lite predict``: labels (and with ``--proba`` probabilities) for a file or stdin, one JSON line per
text, from a saved or exported model; texts are read and predicted in chunks, so the input may be any size."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ...params import argument_type
from ..inputs import load_model, read_texts
from ..options import add_data_args, add_runtime_arg

HELP = "predict labels for a file or stdin, one JSON line per text"


def add_arguments(predict: argparse.ArgumentParser) -> None:
    predict.add_argument("model_dir", help="a saved model, or a folder written by `setfit-lite export`")
    predict.add_argument("data", nargs="?", default="-", help="CSV/JSON/JSONL file, a text file, or - for stdin")
    add_data_args(predict, labelled=False)
    predict.add_argument("--batch-size", type=argument_type("batch_size"), default=64)
    predict.add_argument("--proba", action="store_true", help="also print class probabilities")
    add_runtime_arg(predict)


def run(ns: argparse.Namespace) -> None:
    model = load_model(ns.model_dir, ns.runtime)
    for chunk, proba in model.iter_proba(read_texts(ns.data, ns.text_column), batch_size=ns.batch_size):
        labels = model.labels_from_proba(proba)
        for text, label, p in zip(chunk, labels, proba):
            row: dict[str, Any] = {"text": text, "label": label.tolist() if hasattr(label, "tolist") else label}
            if ns.proba:
                row["proba"] = {str(k): round(float(v), 6) for k, v in zip(model.labels, p)}
            print(json.dumps(row, ensure_ascii=False, default=str))
