"""``setfit-lite convert``: a model saved by setfit (a pickled head), trusted, saved in the pickle-free format."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import Any

from ..inputs import check_output

HELP = "convert a model saved by setfit (model_head.pkl) to the pickle-free format; its pickle is trusted"


def add_arguments(convert: argparse.ArgumentParser) -> None:
    convert.add_argument("setfit_dir", help="a folder written by setfit's save_pretrained, from a source you trust")
    convert.add_argument("output_dir", help="the folder to write the pickle-free setfit_lite model to")


def run(ns: argparse.Namespace) -> dict[str, Any]:
    """Load a setfit folder trusting its pickles, save it in setfit_lite's pickle-free format."""
    from ...modeling import SetFitModel
    from ...serialization import check_can_update, find_pickle_files

    source, out = Path(ns.setfit_dir), Path(ns.output_dir)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} exists and is not a folder; give a folder for the converted model")
    check_output(ns.output_dir, ns.setfit_dir, suffix="setfit-lite")  # not beside the pickles it replaces
    check_can_update(out)  # nor over a file of the user's (before any pickle is loaded)
    if not source.is_dir():
        raise FileNotFoundError(f"{source} is not a folder")
    pickles = find_pickle_files(source)
    if pickles:
        print(f"setfit-lite convert: warning: trusting the pickle file(s) {', '.join(p.name for p in pickles)} "
              f"in {source}: loading a pickle can run any code it holds, convert only models from a source you "
              "trust", file=sys.stderr)
    with warnings.catch_warnings():  # the line above said it: not the library's warning a second time
        warnings.filterwarnings("ignore", message="unpickling ", category=UserWarning)
        model = SetFitModel.from_pretrained(source, allow_pickle=True)
    if model.model_head is None or model.labels is None:
        raise ValueError(f"{source} has no trained head and labels to convert (setfit saves them as "
                         "model_head.pkl and config_setfit.json)")
    model.save_pretrained(out)
    result = {"converted_to": str(out), "labels": model.labels}
    print(json.dumps(result, default=str))
    return result
