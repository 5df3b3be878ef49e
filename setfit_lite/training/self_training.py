"""Self-training on unlabeled texts: the policy behind ``Trainer(..., unlabeled_dataset=...)``.

After the model is trained on the labelled texts, each round (``self_training_rounds``) labels the pool with the
current model's (calibrated, when ``calibration`` is on) head, keeps per class the ``k`` most confident texts
whose probability is at least ``pseudo_label_threshold`` (``k`` = ``pseudo_labels_per_class`` times the class's
labelled count, so the pseudo-labels keep the labelled set's class balance), and trains the head again on the
labelled texts plus those pseudo-labelled ones (and, with ``self_training_body``, the body first, for as many steps
as the labelled set alone gave it). Each round relabels the whole pool with the model of the round before.

The pool is validated like the other inputs (:func:`read_unlabeled`); texts equal to a labelled text (or to another
pool text) are dropped so that no text counts twice, and a pool that shares texts with the eval dataset is refused
(:func:`check_disjoint`): the pool must never be the data a model is scored on. "Equal" is one rule everywhere:
the same :func:`~setfit_lite.data.checks.text_key` (NFKC, case-folded, whitespace collapsed), so a text with an
added space or in other case is the same text. A pool left empty by that is refused before training starts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..data.checks import text_key, validate_texts
from ..data.readers import as_table
from ..runtime.predictor import temper
from .head_fit import gather_embeddings

__all__ = ["SelfTrainingRound", "check_disjoint", "pool_without", "read_unlabeled", "run_self_training",
           "select_pseudo_labels"]

logger = logging.getLogger(__name__)


def read_unlabeled(dataset: Any, column_mapping: Mapping[str, str] | None = None) -> list[str]:
    """The texts of an unlabeled pool: a list of str, or a table (``datasets.Dataset``, dict of lists, DataFrame,
    list of dicts) with a ``text`` column (or the column ``column_mapping`` maps to ``"text"``); other columns
    (a label column included) are ignored. TypeError/ValueError naming the problem otherwise."""
    table = as_table(dataset)
    if table is None:
        try:
            return validate_texts(dataset)
        except (TypeError, ValueError) as error:
            raise type(error)(f"unlabeled_dataset: {error}") from None
    mapping = dict(column_mapping or {})
    column = next((source for source, target in mapping.items() if target == "text"), "text")
    if column not in table:
        raise ValueError(f"unlabeled_dataset: expected a {column!r} column, found the columns {sorted(table)}; "
                         "pass the texts as a list of str, or name the text column with column_mapping")
    try:
        return validate_texts(table[column])
    except (TypeError, ValueError) as error:
        raise type(error)(f"unlabeled_dataset, column {column!r}: {error}") from None


def check_disjoint(pool: Sequence[str], texts: Sequence[str], what: str) -> None:
    """ValueError when the unlabeled pool shares texts with ``texts`` (``what``: the data they are, e.g. the eval
    dataset): a model scored on texts it was self-trained on is not scored on held-out data."""
    keys = {text_key(text) for text in texts}
    shared = [text for text in dict.fromkeys(pool) if text_key(text) in keys]
    if shared:
        example = shared[0]
        raise ValueError(f"unlabeled_dataset shares {len(shared)} text(s) with {what} (e.g. {example[:60]!r}): the "
                         "pool must never hold the texts a model is evaluated on; draw it from the training data")


def pool_without(pool: Sequence[str], labelled: Sequence[str]) -> list[str]:
    """The pool's distinct texts (first occurrence order) that are not labelled texts, compared by
    :func:`~setfit_lite.data.checks.text_key`: none is counted twice. ValueError when none is left (the trainer
    calls this before any training)."""
    seen = {text_key(text) for text in labelled}
    out = []
    for text in pool:
        key = text_key(text)
        if key not in seen:
            seen.add(key)
            out.append(text)
    if not out:
        raise ValueError(f"unlabeled_dataset has no text left for self-training: all its {len(pool)} text(s) are "
                         "labelled texts or repeats of them (compared ignoring case, Unicode form and spacing); "
                         "pass texts that are not in train_dataset, or set self_training_rounds=0")
    return out


def select_pseudo_labels(proba: np.ndarray, counts: np.ndarray, threshold: float,
                         per_class: float) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, class ids)`` of the pool rows to pseudo-label: each row's predicted class is its most probable one;
    per class ``c``, the rows predicted ``c`` with probability ``>= threshold``, the most confident first, at most
    ``floor(per_class * counts[c])`` of them (``counts``: the labelled rows per class). Rows in pool order."""
    proba = np.asarray(proba, dtype=np.float64)
    predicted, confidence = proba.argmax(axis=1), proba.max(axis=1)
    chosen = []
    for c, count in enumerate(counts):
        rows = np.flatnonzero((predicted == c) & (confidence >= threshold))
        rows = rows[np.argsort(-confidence[rows], kind="stable")][:int(per_class * count)]
        chosen.append(rows)
    rows = np.sort(np.concatenate(chosen)) if chosen else np.zeros(0, dtype=np.int64)
    return rows.astype(np.int64), predicted[rows]


@dataclass
class SelfTrainingRound:
    """What one round pseudo-labelled: the count per class (label: count) and whether the body was trained."""

    round: int
    counts: dict[str, int] = field(default_factory=dict)
    body: bool = False

    def logs(self) -> dict[str, float]:
        """The round's entry for ``on_log``: ``self_training_round``, ``pseudo_labels`` and one
        ``pseudo_labels/<label>`` per class."""
        return {"self_training_round": float(self.round), "pseudo_labels": float(sum(self.counts.values())),
                **{f"pseudo_labels/{label}": float(n) for label, n in self.counts.items()}}


def run_self_training(trainer: Any, args: Any, texts: list[str], ids: np.ndarray, pool: list[str],
                      train_body: bool, log: Callable[[dict[str, float]], None]) -> list[SelfTrainingRound]:
    """``args.self_training_rounds`` rounds of self-training on ``pool`` after ``trainer`` trained its model on
    ``texts``/``ids`` (single-label class ids); ``train_body``: whether the body may be trained (the trainer's
    rule), and ``args.self_training_body`` asks for it. Each round's counts go to ``log``; returns the rounds."""
    model, rounds = trainer.model, []
    labels = list(model.labels)
    counts = np.bincount(ids, minlength=len(labels))
    tokens, pool_tokens = model.tokenize(texts), model.tokenize(pool)
    body_steps = args.steps_per_epoch_floor(len(labels), len(ids), args.sentence_batch_size
                                            or args.embedding_batch_size)
    for number in range(1, args.self_training_rounds + 1):
        head = model.model_head
        embeddings = gather_embeddings(model, pool_tokens, trainer.backend)
        proba = temper(np.asarray(head.predict_proba(embeddings)), float(getattr(head, "calibration_temperature",
                                                                                   1.0)))
        rows, pseudo = select_pseudo_labels(proba, counts, args.pseudo_label_threshold, args.pseudo_labels_per_class)
        done = SelfTrainingRound(number, {str(label): int((pseudo == c).sum()) for c, label in enumerate(labels)},
                                 body=bool(train_body and args.self_training_body and len(rows)))
        rounds.append(done)
        log(done.logs())
        logger.info("self-training round %d: %d pseudo-labels %s", number, len(rows), done.counts)
        if not len(rows):
            break
        round_tokens = tokens + [pool_tokens[i] for i in rows]
        round_ids = np.concatenate([ids, pseudo.astype(ids.dtype)])
        if done.body:
            trainer.train_embeddings(args.update({"min_steps_per_epoch": args.min_steps_per_epoch or body_steps}),
                                     round_tokens, round_ids)
        trainer.train_classifier(args, round_tokens, round_ids, False)
    return rounds
