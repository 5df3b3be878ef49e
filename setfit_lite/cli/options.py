"""Options and defaults that several commands share."""

from __future__ import annotations

import argparse

__all__ = ["CHECKPOINTS", "DEFAULT_BODY", "LABEL_COLUMN", "add_data_args", "add_runtime_arg"]

DEFAULT_BODY = "sentence-transformers/all-MiniLM-L6-v2"
CHECKPOINTS = "checkpoints"  # sub-folder of --output-dir that --save-steps writes and --resume reads
LABEL_COLUMN = "label"  # --label-column's default


def add_data_args(p: argparse.ArgumentParser, labelled: bool = True, labels_optional: bool = False) -> None:
    """``--text-column`` and, for labelled data, ``--label-column``; where labels are optional
    (``labels_optional``), ``--label-column`` is None unless given, so that a column named on the command line is
    required and the default one read only where the data has it."""
    p.add_argument("--text-column", default="text", help="the column holding the texts (default: %(default)s)")
    if labelled and labels_optional:
        p.add_argument("--label-column", default=None,
                       help=f"the column holding the labels (default: {LABEL_COLUMN}, where the data has one)")
    elif labelled:
        p.add_argument("--label-column", default=LABEL_COLUMN,
                       help="the column holding the labels (default: %(default)s)")


def add_runtime_arg(p: argparse.ArgumentParser) -> None:
    """``--runtime``: what runs a folder exported to ONNX."""
    p.add_argument("--runtime", choices=["auto", "onnxruntime", "openvino"], default="auto",
                   help="runtime for an exported (ONNX) model; auto: OpenVINO for an fp32 graph on a CPU with AMX "
                        "when it is installed, else onnxruntime (default: %(default)s)")
