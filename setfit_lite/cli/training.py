"""What ``train`` and ``search`` share: their training options, and the ``TrainingArguments`` and rows those
options become."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from trainers.names import NAMES as BACKEND_NAMES
from trainers.names import PRECISION_NAMES

from ..config.params import TRAINING_RULES, argument_type
from .inputs import read_labelled
from .options import CHECKPOINTS, DEFAULT_BODY, add_data_args

__all__ = ["add_train_args", "train_args", "train_eval_rows"]


def add_train_args(p: argparse.ArgumentParser) -> None:
    """The data, body and training options of ``train`` and ``search``."""
    p.add_argument("data", help="training data: CSV, JSON or JSONL file")
    add_data_args(p)
    p.add_argument("--model", default=DEFAULT_BODY, help="body: hub name or local folder")
    p.add_argument("--shots", type=argument_type("num_samples"), default=None,
                   help="examples per class to sample (default: all)")
    p.add_argument("--eval-data", default=None,
                   help="evaluation data (CSV, JSON or JSONL), scored after training")
    p.add_argument("--output-dir", default="setfit-lite-model",
                   help="the folder the model is saved to (default: %(default)s)")
    p.add_argument("--seed", type=argument_type("seed", TRAINING_RULES), default=42,
                   help="random seed of sampling and training (default: %(default)s)")
    p.add_argument("--num-epochs", type=argument_type("num_epochs", TRAINING_RULES), default=None,
                   help="epochs of body training (default: TrainingArguments' default)")
    p.add_argument("--batch-size", type=argument_type("batch_size", TRAINING_RULES), default=None,
                   help="sentences per training batch (default: TrainingArguments' default)")
    p.add_argument("--objective", choices=["sentence_batch", "pairs"], default=None,
                   help="sentence_batch (default): label-balanced batches; pairs: setfit's pair sampling")
    p.add_argument("--backend", default="auto", type=str.lower, choices=BACKEND_NAMES,
                   help="the device to train on; auto picks a Gaudi card, else a CUDA GPU, else the CPU")
    p.add_argument("--precision", default="auto", choices=PRECISION_NAMES,
                   help="training precision; auto: a mixed precision the device runs natively, else fp32")
    p.add_argument("--max-length", type=argument_type("max_length", TRAINING_RULES), default=None,
                   help="tokens per text the body reads (default: the body's own limit)")
    p.add_argument("--max-steps", type=argument_type("max_steps", TRAINING_RULES), default=None,
                   help="stop body training after this many steps")
    p.add_argument("--calibration", choices=["temperature", "none"], default=None,
                   help="temperature: calibrated predict_proba (cross-fitted; 2.5-3x the training time)")


def train_args(ns: argparse.Namespace) -> Any:
    """The ``TrainingArguments`` the options ask for; checkpoints go to ``OUTPUT_DIR/checkpoints``."""
    from ..training_args import TrainingArguments

    kwargs: dict[str, Any] = {"seed": ns.seed, "backend": ns.backend, "precision": ns.precision,
                              "output_dir": str(Path(ns.output_dir) / CHECKPOINTS)}
    for name in ("num_epochs", "batch_size", "objective", "max_length", "max_steps", "calibration"):
        if getattr(ns, name) is not None:
            kwargs[name] = getattr(ns, name)
    if getattr(ns, "save_steps", None) is not None:
        kwargs.update(save_strategy="steps", save_steps=ns.save_steps)
    return TrainingArguments(**kwargs)


def train_eval_rows(ns: argparse.Namespace) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Training rows (sampled with ``--shots``) and the ``--eval-data`` columns, if given."""
    from ..data import sample_dataset

    train = read_labelled(ns.data, "data", ns.text_column, ns.label_column)
    rows = [{"text": t, "label": y} for t, y in zip(train.texts, train.labels)]
    if ns.shots:
        rows = sample_dataset(rows, label_column="label", num_samples=ns.shots, seed=ns.seed)
    eval_rows = None
    if ns.eval_data:
        ev = read_labelled(ns.eval_data, "--eval-data", ns.text_column, ns.label_column)
        eval_rows = {**ev.columns, "text": ev.texts, "label": ev.labels}  # a leftover "text"/"label" column loses
    return rows, eval_rows
