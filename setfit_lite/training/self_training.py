"""Self-training on unlabeled texts: the policy behind ``Trainer(..., unlabeled_dataset=...)``.

After the model is trained on the labelled texts, each round (``self_training_rounds``) labels the pool with the
current model's (calibrated, when ``calibration`` is on) head, keeps per class the ``k`` most confident texts
whose probability is at least ``pseudo_label_threshold`` (``k`` = ``pseudo_labels_per_class`` times the class's
labelled count, so the pseudo-labels keep the labelled set's class balance), and trains the head again on the
labelled texts plus those pseudo-labelled ones (and, with ``self_training_body``, the body first, for as many steps
as the labelled set alone gave it). Each round relabels the whole pool with the model of the round before.

Whether the pool is used at all is decided per task when ``self_training="auto"`` (the default):
`decide_pool` cross-validates on the labelled texts only. Each of ``self_training_folds`` stratified folds
is held out in turn; a model is trained from the untrained body on the other folds, scored on the held-out texts,
self-trained on (a seeded subset of) the pool as the real run would be (but uncalibrated: the folds' models are
never calibrated, where the real round pseudo-labels with the calibrated head), and scored again. The pool is kept
when the folds' models pseudo-labelled some pool text and the held-out accuracy with it is at least the accuracy
without it plus ``self_training_margin`` (`keeps_pool`: a tie keeps a tested pool); otherwise the model trained on
the labelled texts alone is the result; when no fold's model pseudo-labelled any pool text, the pool was not tested
and the reason says so. ``self_training=True`` always self-trains, ``False``
ignores the pool.

Labels picked by informativeness (`suggest_labels`) are skewed: some class often has a single labelled text. Such
a text cannot be held out (its fold model would never have seen the class), so it is in every fold's training
and never scored (`cv_folds`); the folds split the classes with 2 or more texts, and only those are scored. A
wrong pseudo-label into a single-text class still costs held-out texts of the others, so the score still sees
it. When fewer than 2 classes have 2 or more texts, nothing sound can be scored: the pool is not used. Nor is it
with fewer than `MIN_PER_CLASS` labelled texts per class: the folds' models would see one or two texts of a class.

Pseudo-labels (``pseudo_label_method``): ``"knn"`` (default) keeps a pool text only when a strict majority of its
``pseudo_label_neighbors`` nearest labelled texts (cosine, in the trained body's embedding space) has the class the
(calibrated) head predicts, then applies the threshold and the per-class cap (HAST's agreement rule, Schroeder and
Heyer 2024); ``"spread"`` the same agreement with the class label spreading over the labelled and pool texts
gives (`spread_agreement`: over at most `SPREAD_POOL` pool texts, a subset drawn with the seed, the other pool
texts labelled by their nearest texts in its graph); ``"confidence"`` is the head's confidence alone.

The pool is validated like the other inputs (`read_unlabeled`); texts equal to a labelled text (or to another
pool text) are dropped so that no text counts twice, and a pool that shares texts with the eval dataset is refused
(`check_disjoint`): the pool must never be the data a model is scored on. "Equal" is one rule everywhere:
the same `text_key` (NFKC, case-folded, invisible characters dropped, whitespace
collapsed), so a text with an added space or in other case is the same text. A pool left empty by that is refused
before training starts.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..data.checks import text_key, validate_texts
from ..data.readers import as_table
from ..logging import tqdm_disable
from ..runtime.predictor import temper
from .head_fit import gather_embeddings

__all__ = ["CV_POOL", "MIN_PER_CLASS", "PoolDecision", "SelfTrainingRound", "check_disjoint", "cv_folds", "decide_pool",
           "keeps_pool", "knn_agreement", "pool_without", "read_unlabeled", "run_self_training", "select_pseudo_labels",
           "spread_agreement"]

# the pool texts each cross-validation fold pseudo-labels (a seeded subset: the pseudo-labels per class are capped at
# a few times the labelled count, so a fold needs candidates, not the whole pool)
CV_POOL = 1024
# the labelled texts per class (in all: texts / classes) below which `decide_pool` decides nothing and the pool is not
# used: with fewer, the folds' models train on one or two texts of a class and are scored on 4 to 12 held-out texts,
# and on validation the pools kept there cost (benchmarks/results/pool_decision_pc2/)
MIN_PER_CLASS = 3

logger = logging.getLogger(__name__)


def read_unlabeled(dataset: Any, column_mapping: Mapping[str, str] | None = None) -> list[str]:
    """The texts of an unlabeled pool: a list of str, or a table (``datasets.Dataset``, dict of lists, DataFrame,
    list of dicts) with a ``text`` column (or the column ``column_mapping`` maps to ``"text"``); other columns
    (a label column included) are ignored. TypeError/ValueError naming the problem otherwise (a set too: its order
    changes from one Python process to the next, and the round's batches follow the pool's order)."""
    if isinstance(dataset, (set, frozenset)):
        raise TypeError(f"unlabeled_dataset: got a {type(dataset).__name__}, whose order changes from one run to the "
                        "next (and so would the trained model); pass a list, e.g. sorted(pool)")
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
    `text_key`: none is counted twice. ValueError when none is left (the trainer
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


def knn_agreement(pool_embeddings: np.ndarray, labelled_embeddings: np.ndarray, labelled_ids: np.ndarray,
                  predicted: np.ndarray, neighbors: int) -> np.ndarray:
    """Whether each pool row's ``predicted`` class is the class of a strict majority of its ``neighbors`` nearest
    labelled rows (cosine distance; at most as many neighbours as labelled rows): the kNN vote agrees with the
    head. A boolean array, one entry per pool row."""
    from sklearn.neighbors import KNeighborsClassifier

    labelled_ids = np.asarray(labelled_ids)
    predicted = np.asarray(predicted)
    knn = KNeighborsClassifier(n_neighbors=min(neighbors, len(labelled_ids)), metric="cosine")
    knn.fit(np.asarray(labelled_embeddings), labelled_ids)
    share = knn.predict_proba(np.asarray(pool_embeddings))  # columns: knn.classes_
    votes = np.zeros((len(predicted), int(max(labelled_ids.max(), predicted.max(initial=0))) + 1))
    votes[:, knn.classes_] = share
    return votes[np.arange(len(predicted)), predicted] > 0.5


#: the neighbours of each text in the graph of ``pseudo_label_method="spread"`` (scikit-learn's default)
SPREAD_NEIGHBORS = 7
#: the pool texts, at most, in the graph of ``pseudo_label_method="spread"``: scikit-learn builds the kNN graph by
#: brute force, so one call costs the square of its rows (about 30 s single-threaded for this many of 384
#: dimensions); a larger pool spreads over a subset of this many drawn with the run's seed, and each other pool
#: text takes the label distribution of its nearest rows of that graph (`spread_agreement`)
SPREAD_POOL = 20_000


def _unit_rows(embeddings: np.ndarray) -> np.ndarray:
    """``embeddings`` as float64 rows of length 1 (a zero row stays zero): euclidean distance between them orders
    neighbours as cosine distance does."""
    rows = np.asarray(embeddings).astype(np.float64)
    rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
    return rows


def spread_agreement(pool_embeddings: np.ndarray, labelled_embeddings: np.ndarray, labelled_ids: np.ndarray,
                     predicted: np.ndarray, seed: int = 0) -> np.ndarray:
    """Whether each pool row's ``predicted`` class is the one label spreading gives it: scikit-learn's
    ``LabelSpreading`` over the graph of the labelled and pool rows (each row linked to its `SPREAD_NEIGHBORS`
    nearest, cosine), the labelled rows' classes spread through the pool's own clusters (Zhou et al. 2004). A row
    the labels do not reach agrees with nothing. A boolean array, one entry per pool row.

    The graph holds at most `SPREAD_POOL` pool rows, so the cost stays bounded and grows linearly past it: from a
    larger pool a subset of that many is drawn with ``seed`` (the same seed, the same subset), and each pool row
    outside it takes the label distribution of its `SPREAD_NEIGHBORS` nearest rows of the graph (scikit-learn's
    ``LabelSpreading.predict_proba``), `POOL_CHUNK` rows at a time. A pool of at most `SPREAD_POOL` rows spreads
    whole, and ``seed`` is not used."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.semi_supervised import LabelSpreading

    pool_embeddings = np.asarray(pool_embeddings)
    size = len(pool_embeddings)
    subset = None
    if size > SPREAD_POOL:
        subset = np.sort(np.random.default_rng(seed).choice(size, size=SPREAD_POOL, replace=False))
    graph_pool = pool_embeddings if subset is None else pool_embeddings[subset]
    rows = _unit_rows(np.vstack([np.asarray(labelled_embeddings), graph_pool]))  # euclidean on unit rows: cosine
    labelled_ids = np.asarray(labelled_ids)
    targets = np.concatenate([labelled_ids, np.full(len(graph_pool), -1)])
    # alpha 0.99 as Zhou et al. (scikit-learn's 0.2 keeps the labels within a few links of a labelled text)
    spread = LabelSpreading(kernel="knn", n_neighbors=min(SPREAD_NEIGHBORS, len(rows) - 1), alpha=0.99,
                            max_iter=1000)
    with warnings.catch_warnings():  # a graph that has not settled in 1,000 steps still ranks the classes
        warnings.simplefilter("ignore", category=ConvergenceWarning)
        spread.fit(rows, targets)
    share = spread.label_distributions_[len(labelled_ids):]  # columns: spread.classes_
    if subset is not None:  # the rows outside the graph: the distribution of their nearest rows in it
        rest = np.setdiff1d(np.arange(size), subset, assume_unique=True)
        full = np.empty((size, share.shape[1]))
        full[subset] = share
        with np.errstate(invalid="ignore", divide="ignore"):  # no reached neighbour: 0 / 0, not reached below
            for start in range(0, len(rest), POOL_CHUNK):
                chunk = rest[start:start + POOL_CHUNK]
                full[chunk] = spread.predict_proba(_unit_rows(pool_embeddings[chunk]))
        share = full
    reached = np.isfinite(share).all(axis=1) & (share.max(axis=1, initial=0.0) > 0)
    label = spread.classes_[np.nan_to_num(share).argmax(axis=1)]
    return reached & (label == np.asarray(predicted))


def select_pseudo_labels(proba: np.ndarray, counts: np.ndarray, threshold: float, per_class: float,
                         agree: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, class ids)`` of the pool rows to pseudo-label: each row's predicted class is its most probable one;
    per class ``c``, the rows predicted ``c`` with probability ``>= threshold`` (and, given ``agree``, a boolean
    per row, only the rows where it is True), the most confident first, at most ``floor(per_class * counts[c])``
    of them (``counts``: the labelled rows per class). Rows in pool order."""
    proba = np.asarray(proba, dtype=np.float64)
    predicted, confidence = proba.argmax(axis=1), proba.max(axis=1)
    allowed = np.ones(len(proba), dtype=bool) if agree is None else np.asarray(agree, dtype=bool)
    chosen = []
    for c, count in enumerate(counts):
        rows = np.flatnonzero((predicted == c) & (confidence >= threshold) & allowed)
        rows = rows[np.argsort(-confidence[rows], kind="stable")][:int(per_class * count)]
        chosen.append(rows)
    rows = np.sort(np.concatenate(chosen)) if chosen else np.zeros(0, dtype=np.int64)
    return rows.astype(np.int64), predicted[rows]


@dataclass
class SelfTrainingRound:
    """What one self-training round pseudo-labelled, as logged (`self_training_round`, `pseudo_labels/<label>`).

    Attributes:
        round: The round's number, from 1.
        counts: The pseudo-labels kept per class (label: count).
        body: Whether the round trained the body again.
    """

    round: int
    counts: dict[str, int] = field(default_factory=dict)
    body: bool = False

    def logs(self) -> dict[str, float]:
        """The round's entry for ``on_log``: ``self_training_round``, ``pseudo_labels`` and one
        ``pseudo_labels/<label>`` per class."""
        return {"self_training_round": float(self.round), "pseudo_labels": float(sum(self.counts.values())),
                **{f"pseudo_labels/{label}": float(n) for label, n in self.counts.items()}}


def pseudo_label(model: Any, args: Any, backend: Any, tokens: list[list[int]], ids: np.ndarray,
                 pool_tokens: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, class ids)`` of the pool to pseudo-label with ``model``'s current body and head, by
    ``args.pseudo_label_method`` (see the module's docstring); ``tokens``/``ids``: the labelled texts."""
    head = model.model_head
    embeddings = gather_embeddings(model, pool_tokens, backend)
    proba = temper(np.asarray(head.predict_proba(embeddings)), float(getattr(head, "calibration_temperature", 1.0)))
    agree = None
    if args.pseudo_label_method != "confidence":  # a second view must agree with the head
        labelled, predicted = gather_embeddings(model, tokens, backend), proba.argmax(axis=1)
        agree = (knn_agreement(embeddings, labelled, ids, predicted, args.pseudo_label_neighbors)
                 if args.pseudo_label_method == "knn"
                 else spread_agreement(embeddings, labelled, ids, predicted, args.seed))
    counts = np.bincount(ids, minlength=proba.shape[1])
    return select_pseudo_labels(proba, counts, args.pseudo_label_threshold, args.pseudo_labels_per_class, agree)


#: pool texts tokenised at a time; a pool of at least this many reports its progress (a bar and log lines)
POOL_CHUNK = 10_000


def tokenize_pool(model: Any, pool: Sequence[str]) -> list[list[int]]:
    """``model.tokenize`` of the unlabeled ``pool`` in chunks of `POOL_CHUNK` texts: a large pool shows a
    progress bar (where stderr is a terminal) and logs each chunk at INFO, so hours of silence never happen."""
    from tqdm.auto import tqdm

    large = len(pool) >= POOL_CHUNK
    out: list[list[int]] = []
    with tqdm(total=len(pool), desc="Tokenizing the unlabeled pool", unit="text", disable=tqdm_disable(large)) as bar:
        for start in range(0, len(pool), POOL_CHUNK):
            out.extend(model.tokenize(list(pool[start:start + POOL_CHUNK])))
            bar.update(len(out) - bar.n)
            if large:
                logger.info("unlabeled pool: %d of %d texts tokenised", len(out), len(pool))
    return out


def run_self_training(trainer: Any, args: Any, texts: list[str], ids: np.ndarray, pool: list[str],
                      train_body: bool, log: Callable[[dict[str, float]], None]) -> list[SelfTrainingRound]:
    """``args.self_training_rounds`` rounds of self-training on ``pool`` after ``trainer`` trained its model on
    ``texts``/``ids`` (single-label class ids); ``train_body``: whether the body may be trained (the trainer's
    rule), and ``args.self_training_body`` asks for it. Each round's counts go to ``log``; returns the rounds."""
    model, rounds = trainer.model, []
    labels = list(model.labels)
    tokens, pool_tokens = model.tokenize(texts), tokenize_pool(model, pool)
    body_steps = args.steps_per_epoch_floor(len(labels), len(ids), args.sentence_batch_size
                                            or args.embedding_batch_size)
    for number in range(1, args.self_training_rounds + 1):
        rows, pseudo = pseudo_label(model, args, trainer.backend, tokens, ids, pool_tokens)
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
                                     round_tokens, round_ids, checkpoints=False)
        trainer.train_classifier(args, round_tokens, round_ids, False)
    return rounds


@dataclass
class PoolDecision:
    """Whether the pool is used (`self_training="auto"`) and the cross-validated figures behind it, as
    `model.training_info["self_training"]` records them.

    Attributes:
        used: Whether the pool was used.
        reason: Why, in words.
        folds: The cross-validation folds (0 when not cross-validated).
        held_out: The labelled texts scored held out.
        without: The held-out accuracy over all labelled texts (each scored by the fold model that did not see
            it) without self-training.
        with_pool: The same with self-training on the pool.
        gain: `with_pool - without`; the pool is used when `gain >= margin` and some fold pseudo-labelled a
            pool text (`keeps_pool`).
        margin: `TrainingArguments.self_training_margin`.
        cv_pool: The pool texts each fold pseudo-labelled.
        train_only: The labelled texts of classes with a single text: in every fold's training, never scored.
        pseudo_labels: The pool texts each fold's model pseudo-labelled (over its rounds). All 0: no pool text
            passed the fold models' threshold and vote, so the pool was not tested at all (the reason says so).
        proba_without: The mean probability the fold models gave each held-out text's own class, without
            self-training (a continuous score beside the accuracy: on a few held-out texts accuracies tie often).
        proba_with: The same with self-training on the pool.
        fold_min_train: The fewest labelled texts of one scored class that a fold's model trained on (1 when a
            class has 2 labelled texts: each fold's model saw one of them).
    """

    used: bool
    reason: str
    folds: int = 0
    held_out: int = 0
    without: float | None = None
    with_pool: float | None = None
    gain: float | None = None
    margin: float = 0.0
    cv_pool: int = 0
    train_only: int = 0
    pseudo_labels: list[int] = field(default_factory=list)
    proba_without: float | None = None
    proba_with: float | None = None
    fold_min_train: int = 0

    def logs(self) -> dict[str, float]:
        """The decision's entry for ``on_log``: ``self_training_used`` (1/0) and, when cross-validated,
        ``self_training_cv_without``, ``self_training_cv_with`` and ``self_training_cv_gain``."""
        logs = {"self_training_used": float(self.used)}
        if self.gain is not None:
            logs |= {"self_training_cv_without": float(self.without), "self_training_cv_with": float(self.with_pool),
                     "self_training_cv_gain": float(self.gain)}
        return logs


def cv_folds(ids: np.ndarray, folds: int, seed: int) -> tuple[np.ndarray, int]:
    """``(fold per row, folds)`` of `decide_pool`'s cross-validation of the labelled class ids ``ids``: the rows
    of the classes with at least 2 labelled texts are split into ``min(folds, their smallest count)`` stratified
    folds (scikit-learn's ``StratifiedKFold``, shuffled with ``seed``), so every fold's training keeps every
    class; the rows of classes with a single text get fold -1: trained on in every fold, never held out. When
    fewer than 2 classes have 2 or more texts, every row is -1 and the folds are 0 (nothing to score)."""
    from sklearn.model_selection import StratifiedKFold

    ids = np.asarray(ids)
    counts = np.bincount(ids)
    scored = np.flatnonzero(counts[ids] >= 2)
    fold_of = np.full(len(ids), -1, dtype=np.int64)
    if len(np.unique(ids[scored])) < 2:
        return fold_of, 0
    folds = min(int(folds), int(counts[counts >= 2].min()))
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    for number, (_, held_out) in enumerate(splitter.split(np.zeros(len(scored)), ids[scored])):
        fold_of[scored[held_out]] = number
    return fold_of, folds


def fewest_trained(ids: np.ndarray, fold_of: np.ndarray, folds: int) -> int:
    """The fewest texts of one scored class (fold >= 0) that a fold's model of `cv_folds`'s split ``fold_of``
    trains on; 0 when there are no folds."""
    ids, fold_of = np.asarray(ids), np.asarray(fold_of)
    scored = np.unique(ids[fold_of >= 0])
    return min((int(((ids == c) & (fold_of != f)).sum()) for f in range(folds) for c in scored), default=0)


def keeps_pool(gain: float, margin: float, pseudo_labels: Sequence[int]) -> bool:
    """Whether `decide_pool` keeps the pool: its folds' models pseudo-labelled some pool text (``pseudo_labels``,
    one count per fold; all 0: the pool was not tested) and the held-out ``gain`` is at least ``margin``. A tie
    keeps a tested pool: on a few held-out texts a tie is the common outcome, and on validation data the pool
    helped in those ties on average (``benchmarks/pool_choice.py``, docs/unlabeled.md)."""
    return any(pseudo_labels) and gain >= margin - 1e-12


def decide_pool(trainer_class: type, model: Any, initial_body: Any, args: Any, texts: Sequence[str],
                labels: Sequence[Any], ids: np.ndarray, pool: Sequence[str]) -> PoolDecision:
    """Cross-validate self-training on the labelled texts only: for each fold of `cv_folds` (at most
    ``args.self_training_folds``; the texts of single-text classes are in every fold's training and never
    scored), a model with ``model``'s settings, its body a copy of ``initial_body`` (the body before training), is
    trained by ``trainer_class`` with ``args`` on the other folds (no evaluation, checkpoints or reporting), scored
    on the fold, self-trained on at most `CV_POOL` texts of ``pool`` (a subset drawn with ``args.seed``) as the
    real run is, and scored again. Nothing but ``texts``, ``labels`` and ``pool`` is read. Returns the decision
    (`keeps_pool`: use the pool); undecidable (fewer than `MIN_PER_CLASS` labelled texts per class the model
    knows, or fewer than 2 classes with 2 or more labelled texts): not used, no fold trained, and the reason says
    why."""
    import copy

    from .cross_fit import FOLD_ARGUMENTS, free_folds

    margin = float(args.self_training_margin)
    fold_of, folds = cv_folds(ids, args.self_training_folds, args.seed)
    train_only = int((fold_of < 0).sum())
    fold_min_train = fewest_trained(ids, fold_of, folds)
    classes = len(getattr(model, "labels", None) or ()) or int(np.max(ids, initial=-1)) + 1
    if len(ids) < MIN_PER_CLASS * classes:
        return PoolDecision(False, f"{len(ids)} labelled texts for {classes} classes, fewer than {MIN_PER_CLASS} per "
                                   "class: too few to tell whether the pool helps (the folds' models would see one or "
                                   "two texts of a class), so the pool is not used (self_training=True uses it "
                                   "anyway)", margin=margin, train_only=train_only, fold_min_train=fold_min_train)
    if folds < 2:
        return PoolDecision(False, "fewer than 2 classes have 2 or more labelled texts: nothing can be held out and "
                                   "scored, so self-training cannot be cross-validated; the pool is not used "
                                   "(self_training=True uses it anyway)", margin=margin, train_only=train_only)
    rng = np.random.default_rng(args.seed)
    subset = sorted(rng.choice(len(pool), size=min(CV_POOL, len(pool)), replace=False).tolist())
    fold_pool = [pool[i] for i in subset]
    fold_args = args.update(FOLD_ARGUMENTS | {"self_training": True,
                                              "self_training_rounds": args.self_training_rounds})

    class FoldTrainer(trainer_class):  # type: ignore[misc, valid-type]
        held_texts: list[str] = []
        before: np.ndarray | None = None

        def self_train(self, *a: Any, **k: Any) -> None:  # the fold model's predictions before the pool
            self.before = np.asarray(self.model.predict_proba(self.held_texts, as_numpy=True))
            super().self_train(*a, **k)

    right_without = right_with = 0
    proba_without = proba_with = 0.0
    pseudo_labels = []
    for number in range(folds):
        train, held_out = np.flatnonzero(fold_of != number), np.flatnonzero(fold_of == number)
        fold_model = model.with_body(copy.deepcopy(initial_body))
        fold = FoldTrainer(model=fold_model, args=fold_args, unlabeled_dataset=fold_pool, train_dataset={
            "text": [texts[i] for i in train], "label": [labels[i] for i in train]})
        fold.held_texts = [texts[i] for i in held_out]
        fold.train()
        if fold.before is None:  # the fold's trainer never reached self-training (nothing to compare)
            return PoolDecision(False, "the folds' models were not self-trained", folds=folds, margin=margin,
                                train_only=train_only)
        with_pool = np.asarray(fold_model.predict_proba(fold.held_texts, as_numpy=True))
        rounds = fold_model.training_info.get("self_training", {}).get("rounds", [])
        pseudo_labels.append(sum(sum(done["counts"].values()) for done in rounds))
        truth = ids[held_out]
        right_without += int((fold.before.argmax(axis=1) == truth).sum())
        right_with += int((with_pool.argmax(axis=1) == truth).sum())
        proba_without += float(fold.before[np.arange(len(truth)), truth].sum())
        proba_with += float(with_pool[np.arange(len(truth)), truth].sum())
        del fold, fold_model
        free_folds()
    n = int((fold_of >= 0).sum())
    without, with_pool_acc = right_without / n, right_with / n
    gain = with_pool_acc - without
    used = keeps_pool(gain, margin, pseudo_labels)
    kept = f"; {train_only} text(s) of single-text classes only trained on" if train_only else ""
    reason = (f"cross-validated on the labelled texts ({folds} folds, {n} held out{kept}): accuracy {without:.3f} "
              f"without the pool, {with_pool_acc:.3f} with it; {'used' if used else 'not used'} (gain {gain:+.3f}, "
              f"margin {margin:+.3f})")
    if not any(pseudo_labels):
        vote = {"knn": ", the kNN vote", "spread": ", label spreading's agreement"}.get(args.pseudo_label_method, "")
        reason += (f"; the folds' models pseudo-labelled no pool text (none passed pseudo_label_threshold="
                   f"{args.pseudo_label_threshold}{vote} and the per-class cap), so the pool was not tested (the "
                   "folds' models saw fewer labelled texts than the final one)")
    return PoolDecision(used, reason, folds=folds, held_out=n, without=without, with_pool=with_pool_acc, gain=gain,
                        margin=margin, cv_pool=len(fold_pool), train_only=train_only, pseudo_labels=pseudo_labels,
                        proba_without=proba_without / n, proba_with=proba_with / n, fold_min_train=fold_min_train)
