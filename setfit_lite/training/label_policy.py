"""What one ``train()`` makes of the label names: zero-shot prototypes, label anchors and the label prior.

Each decision is recorded in ``model.training_info`` with the reason when it is not taken:

- ``"zero_shot"``: one distinct text per class (``get_templated_dataset``'s zero-shot set) leaves the body as it
  is and makes the head the nearest class text by cosine (`zero_shot_prototypes`);
- ``"label_anchors"``: the label texts the embedding phase anchors its classes to (`label_anchor_texts`),
  and ``"prior"``, the temperature with which they were folded into the head (`fold_label_prior`).

``own_objective`` is why a trainer that trains its own objective (e.g. distillation) takes neither, or None.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..heads.linear import is_lr
from ..training_args import TrainingArguments
from .head_fit import add_label_prior, single_text_classes

__all__ = ["MAX_ANCHORS", "fold_label_prior", "label_anchor_texts", "label_texts", "zero_shot_prototypes"]

logger = logging.getLogger(__name__)
MAX_ANCHORS = 64  # label anchors ride in every batch: beyond this many classes they would crowd out the sentences


def label_texts(labels: Sequence[str], template: str = TrainingArguments.anchor_template) -> list[str]:
    """The texts that stand for the label names wherever they are encoded (label anchors, the label prior,
    ``setfit_lite.active``'s search for a class by its name): each name in ``template`` (``anchor_template``)."""
    return [template.format(label=label) for label in labels]


def zero_shot_prototypes(args: TrainingArguments, model: Any, texts: list[str], ids: np.ndarray,
                         multi_label: bool, own_objective: str | None = None) -> bool:
    """Whether training leaves the body of ``model`` as it is and makes the head the nearest class text by cosine
    (``zero_shot="prototypes"`` and every class has one distinct text); recorded in
    ``model.training_info["zero_shot"]``."""
    reason = None
    if args.zero_shot == "train":
        reason = "zero_shot='train'"
    elif multi_label:
        reason = "multi-label data (prototypes are single-label)"
    elif not single_text_classes(texts, ids):
        reason = "a class has several distinct texts (real examples)"
    elif not is_lr(getattr(model.new_head(int(ids.max()) + 1, False), "estimator", None)):
        reason = "the head is not a LogisticRegression"
    elif own_objective is not None:
        reason = own_objective
    model.training_info["zero_shot"] = {"prototypes": reason is None, "reason": reason}
    if reason is None:
        logger.info("zero-shot prototypes: one distinct text per class, the body is not trained and the head "
                    "is the nearest class text by cosine (zero_shot='train' trains it)")
    return reason is None


def label_anchor_texts(args: TrainingArguments, model: Any, ids: np.ndarray, prototypes: bool,
                       own_objective: str | None = None) -> list[str] | None:
    """The label texts the embedding phase anchors the classes of ``model`` to, or None; records which in
    ``model.training_info["label_anchors"]`` (and the reason when none are used).

    ``label_anchors="auto"`` uses them when the labels are names (str labels, or ``labels=`` names given to
    the model) of a single-label task with at most `MAX_ANCHORS` classes (any number with
    ``anchors_per_batch``), and the body is trained (not with zero-shot ``prototypes``).
    """
    labels = model.labels or []
    reason = None
    if args.label_anchors == "off":
        reason = "label_anchors='off'"
    elif prototypes:
        reason = "zero-shot prototypes: the body is not trained"
    elif ids.ndim > 1:
        reason = "multi-label data"
    elif not all(isinstance(label, str) for label in labels):
        reason = "the labels are not names (give str labels, or labels=[...] names to the model)"
    elif len(labels) > MAX_ANCHORS and args.anchors_per_batch is None:
        reason = f"more than {MAX_ANCHORS} classes"
    elif own_objective is not None:
        reason = own_objective
    texts = None if reason else label_texts(labels, args.anchor_template)
    model.training_info["label_anchors"] = {"used": texts is not None, "texts": texts, "reason": reason,
                                            "prior": None}  # set by fold_label_prior when folded
    logger.info("label anchors: %s", texts if texts else f"not used ({reason})")
    return texts


def fold_label_prior(args: TrainingArguments, model: Any, head: Any, embeddings: np.ndarray) -> None:
    """With label anchors and ``label_prior_temperature``, fold the label texts into the fitted ``head`` (fitted
    on ``embeddings``) as a prior (`add_label_prior`)."""
    info = model.training_info.get("label_anchors") or {}
    if not info.get("used") or args.label_prior_temperature is None:
        return
    anchors = model.embed_tokens(model.tokenize(info["texts"]))
    reason = add_label_prior(head, embeddings, anchors, args.label_prior_temperature)
    info["prior"] = None if reason else args.label_prior_temperature
    if reason:
        logger.info("label prior not applied: %s", reason)
