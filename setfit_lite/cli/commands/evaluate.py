"""``setfit-lite evaluate``: a saved or exported model's metric on labelled data, optionally per group."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..inputs import load_model, read_labelled
from ..options import add_data_args, add_runtime_arg

HELP = "evaluate a saved model on labelled data"


def add_arguments(evaluate: argparse.ArgumentParser) -> None:
    evaluate.add_argument("model_dir", help="a saved model, or a folder written by `setfit-lite export`")
    evaluate.add_argument("data", help="labelled data to score: CSV, JSON or JSONL file")
    add_data_args(evaluate)
    evaluate.add_argument("--metric", default="accuracy", help="the metric to compute (default: %(default)s)")
    evaluate.add_argument("--group-by", default=None, help="also report the metric per value of this column")
    add_runtime_arg(evaluate)


def run(ns: argparse.Namespace) -> dict[str, Any]:
    from ...evaluation import evaluate_model
    from ...metrics import check_metric

    check_metric(ns.metric)
    # the data, its columns and the metric are checked before the model loads
    data = read_labelled(ns.data, "data", ns.text_column, ns.label_column)
    if ns.group_by is not None and ns.group_by not in data.columns:
        raise ValueError(f"--group-by {ns.group_by!r} is not a column of {ns.data}; its other columns: "
                         f"{sorted(data.columns)}")
    model = load_model(ns.model_dir, ns.runtime)
    result = evaluate_model(model, data, ns.metric, group_by=ns.group_by)
    if ns.group_by:  # the table is for a reader (stderr); stdout stays one JSON object a program can parse
        print(format_groups(result, ns.metric, ns.group_by), file=sys.stderr)
    print(json.dumps(result, default=str))
    return result


def format_groups(result: dict[str, Any], metric: str, column: str) -> str:
    """A plain-text table of a per-group evaluation."""
    lines = [f"{column:<12} {'n':>6} {metric:>10}"]
    for group, values in result.get("groups", {}).items():
        lines.append(f"{group:<12} {values['n']:>6} {values.get(metric, float('nan')):>10.4f}")
    lines.append(f"{'all':<12} {sum(v['n'] for v in result.get('groups', {}).values()):>6} "
                 f"{result.get(metric, float('nan')):>10.4f}")
    return "\n".join(lines)
