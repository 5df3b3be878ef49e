"""``setfit-lite predict``: labels (and with ``--proba`` probabilities) for a file or stdin, one JSON line per
text, in input order, from a saved or exported model; texts are read and predicted in chunks, so the input may be
any size. Each line carries the input ``line`` its text starts on (a text file or stdin skips blank lines; a JSON
document or Parquet file, whose rows are not lines, gives none)."""

from __future__ import annotations

import argparse
import json
import re
from itertools import tee
from typing import Any

from ... import logging as sl_logging
from ...config.params import argument_type
from ..inputs import load_model, read_numbered_texts
from ..options import add_data_args, add_runtime_arg

#: `check_score_request`'s words for a column its input lacks
RAY_MISSING_COLUMN = re.compile(r"(?P<file>.+) has no column (?P<column>.+) \(columns: (?P<columns>.*)\); pass "
                                r"(?P<parameter>text_column|id_column)=", re.DOTALL)

HELP = "predict labels for a file or stdin, one JSON line per text, with the input line it is on"


def add_arguments(predict: argparse.ArgumentParser) -> None:
    predict.add_argument("model_dir", help="a saved model, or a folder written by `setfit-lite export`")
    predict.add_argument("data", nargs="?", default="-",
                         help="CSV/JSON/JSONL/Parquet file, a text file, or - for stdin")
    add_data_args(predict, labelled=False)
    predict.add_argument("--batch-size", type=argument_type("batch_size"), default=64,
                         help="texts per encoding batch (default: %(default)s)")
    predict.add_argument("--proba", action="store_true", help="also print class probabilities")
    add_runtime_arg(predict)
    predict.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                         help="score on a Ray cluster with Ray Data (ADDRESS: a running cluster's, e.g. "
                              "127.0.0.1:6379 or auto; none: RAY_ADDRESS, else the cluster last started on this "
                              "machine, else a local one); needs --output")
    predict.add_argument("--output", default=None, help="with --ray: a new folder of Parquet files, one row per text")
    predict.add_argument("--id-column", default=None,
                         help="with --ray: the input's id column, copied to the output (default: a row index)")
    predict.add_argument("--concurrency", type=argument_type("concurrency"), default=None,
                         help="with --ray: actors scoring at once")
    predict.add_argument("--num-cpus", type=argument_type("num_cpus"), default=1.0,
                         help="with --ray: CPUs per actor (default 1)")


def run_on_ray(ns: argparse.Namespace) -> dict[str, Any]:
    """``predict --ray``: the input scored by `setfit_lite.integrations.ray_data.score_dataset`; a summary
    on stdout."""
    from ...integrations.ray_data import check_score_request, connect_ray, score_dataset

    if not ns.output or ns.data == "-":
        raise ValueError("predict --ray needs an input file or folder and --output OUT.parquet")
    try:  # before Ray starts
        check_score_request(ns.model_dir, ns.data, ns.output, concurrency=ns.concurrency, num_cpus=ns.num_cpus,
                            model_batch_size=ns.batch_size, text_column=ns.text_column, id_column=ns.id_column)
    except ValueError as error:  # a missing column names the option, not score_dataset's parameter
        missing = RAY_MISSING_COLUMN.fullmatch(str(error))
        if missing is None:
            raise
        raise ValueError(f"--{missing['parameter'].replace('_', '-')} {missing['column']} is not a column of "
                         f"{missing['file']}; its columns: {missing['columns']}") from None
    ray = connect_ray(ns.ray or None, log_to_driver=sl_logging.is_verbose())
    ray.data.DataContext.get_current().enable_progress_bars = sl_logging.tqdm_disable(True) is None
    result = score_dataset(ns.model_dir, ns.data, ns.output, text_column=ns.text_column, id_column=ns.id_column,
                           proba=ns.proba, model_batch_size=ns.batch_size, concurrency=ns.concurrency,
                           num_cpus=ns.num_cpus, runtime=ns.runtime)
    print(json.dumps(result))
    return result


def run(ns: argparse.Namespace) -> None:
    if ns.ray is not None:
        run_on_ray(ns)
        return
    if ns.output:
        raise ValueError("--output applies with --ray (without it, predictions go to stdout)")
    model = load_model(ns.model_dir, ns.runtime)
    for_texts, for_lines = tee(read_numbered_texts(ns.data, ns.text_column))  # holds one chunk's line numbers
    lines = (number for number, _ in for_lines)
    for chunk, proba in model.iter_proba((text for _, text in for_texts), batch_size=ns.batch_size):
        labels = model.labels_from_proba(proba)
        for text, label, p in zip(chunk, labels, proba):
            line = next(lines)
            row: dict[str, Any] = {} if line is None else {"line": line}
            row |= {"text": text, "label": label.tolist() if hasattr(label, "tolist") else label}
            if ns.proba:
                row["proba"] = {str(k): round(float(v), 6) for k, v in zip(model.labels, p)}
            print(json.dumps(row, ensure_ascii=False, default=str))
