"""The strategies of `suggest_labels`: which ``k`` texts of the candidates to label next.

- ``"random"``: ``k`` candidates drawn uniformly (the baseline; needs neither embeddings nor a head);
- ``"cold_start_kmeans"``: for each label name, the text its name claims most surely (the zero-shot margin over
  the names' embeddings, encoded as training encodes them); then k-means on the embeddings of the others and the
  text nearest each centre (diverse and representative);
- ``"uncertainty"``: the ``k`` texts nearest the head's decision boundary (`uncertainty`);
- ``"margin_diverse"``: the `CANDIDATES_PER_PICK` x ``k`` most uncertain texts, clustered into ``k`` by
  their embeddings, and the most uncertain text of each cluster (informative and not all alike);
- ``"margin_typical"``: the `CANDIDATES_PER_PICK` x ``k`` most uncertain texts, clustered into ``k``, and the text
  nearest each cluster's centre (typical of the uncertain texts, not the oddest of them);
- ``"typical"``: coverage (TypiClust): k-means on the whole pool into labelled + ``k`` clusters, and the text
  nearest the centre of each cluster no labelled text is in, the largest first (`uncovered_representatives`);
- ``"class_typical"``: the ``k`` picks shared evenly over the head's predicted classes (`shares`; a multi-label
  head's text counts for its most probable label, so a text no label reaches 0.5 for still has a class), and within
  each class its k-means representatives;
- ``"mixed"``: half ``margin_diverse``, half ``class_typical``;
- ``"auto"``: ``cold_start_kmeans`` for a model without a fitted head, else `TRAINED_DEFAULT` (chosen on
  validation data by ``benchmarks/suggest_choice.py``, see docs/active_learning.md).

With a fitted head, the strategies that use the model (not ``"random"``) first search by name for the classes the
head has never seen labelled (a column of zeros over the whole pool), so that a class with no label yet is found.

A pool may hold the same text more than once ("the same text" as `text_key` says: ignoring case, Unicode form,
spacing and invisible characters, as the model reads it): `select` keeps the picks' texts distinct, and apart from
the texts of the rows not to pick (``exclude``: those already labelled), while the candidates hold enough such
texts (a candidate whose text is excluded is left out, a pick whose text was already picked is dropped, and the
strategy runs again on the candidates whose text is new for the picks still to make); only once every such text is
picked do copies make up the rest. A pool without duplicates gets the strategy's picks as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..data.checks import text_key
from .diversity import (
    best_per_cluster,
    nearest_to_names,
    representatives,
    shares,
    uncovered_representatives,
)
from .pool import PoolView
from .uncertainty import uncertainty

__all__ = ["CANDIDATES_PER_PICK", "NEEDS_HEAD", "SELECTORS", "TRAINED_DEFAULT", "Request", "resolve", "select"]

CANDIDATES_PER_PICK = 10  # margin_diverse clusters the 10 x k most uncertain texts into k
TRAINED_DEFAULT = "margin_typical"  # "auto" with a fitted head (benchmarks/suggest_choice.py)
NEEDS_HEAD = ("uncertainty", "margin_diverse", "margin_typical", "class_typical", "mixed")


@dataclass
class Request:
    """One call's inputs to a strategy: the pool's views, the rows it may pick, how many, the seed, and the label
    names' unit embeddings (None: no search by name) with the rows of the labels to search for."""

    view: PoolView
    candidates: np.ndarray
    k: int
    seed: int
    names: np.ndarray | None = None
    search: tuple[int, ...] = ()

    def by_name(self) -> list[int]:
        """The texts found for the labels of ``search`` by their names (at most ``k``)."""
        if self.names is None or not self.search:
            return []
        return nearest_to_names(self.view.embeddings(), self.names, list(self.search[:self.k]), self.candidates)

    def names_then(self) -> tuple[list[int], int, np.ndarray]:
        """The texts found by name (`by_name`), how many picks are left to make, and the candidates left."""
        picks = self.by_name()
        return picks, self.k - len(picks), self.rest(picks)

    def rest(self, picks: list[int]) -> np.ndarray:
        """The candidates not in ``picks``."""
        return self.candidates[~np.isin(self.candidates, picks)]


def _random(req: Request) -> list[int]:
    rng = np.random.default_rng(req.seed)
    return [int(i) for i in rng.choice(req.candidates, size=req.k, replace=False)]


def _cold_start_kmeans(req: Request) -> list[int]:
    picks = req.by_name()
    return picks + representatives(req.view.embeddings(), req.rest(picks), req.k - len(picks), req.seed)


def _uncertainty(req: Request) -> list[int]:
    picks = req.by_name()
    rest = req.rest(picks)
    scores = uncertainty(req.view.proba()[rest], req.view.multi_label)
    return picks + [int(i) for i in rest[np.argsort(-scores, kind="stable")[:req.k - len(picks)]]]


def _margin_diverse(req: Request) -> list[int]:
    picks, n, rest = req.names_then()
    if n <= 0:
        return picks
    top, scores = _uncertain_top(req, rest, n)
    return picks + best_per_cluster(req.view.embeddings(), top, scores, n, req.seed)


def _uncertain_top(req: Request, rest: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The `CANDIDATES_PER_PICK` x ``n`` most uncertain rows of ``rest`` and their uncertainty."""
    scores = uncertainty(req.view.proba()[rest], req.view.multi_label)
    top = np.argsort(-scores, kind="stable")[:min(len(rest), CANDIDATES_PER_PICK * n)]
    return rest[top], scores[top]


def _margin_typical(req: Request) -> list[int]:
    picks, n, rest = req.names_then()
    if n <= 0:
        return picks
    top, _ = _uncertain_top(req, rest, n)
    return picks + representatives(req.view.embeddings(), top, n, req.seed)


def _typical(req: Request) -> list[int]:
    picks, n, rest = req.names_then()
    labelled = np.setdiff1d(np.arange(len(req.view.texts)), rest)  # the excluded rows and the names' picks
    return picks + uncovered_representatives(req.view.embeddings(), rest, labelled, n, req.seed)


def _class_typical(req: Request) -> list[int]:
    picks, n, rest = req.names_then()
    if n <= 0:
        return picks
    predicted = req.view.proba()[rest].argmax(axis=1)
    x = req.view.embeddings()
    for c, share in shares(predicted, n):
        picks += representatives(x, rest[predicted == c], share, req.seed)
    return picks


def _mixed(req: Request) -> list[int]:
    half = req.k // 2
    picks = _margin_diverse(Request(req.view, req.candidates, req.k - half, req.seed, req.names, req.search))
    if half:
        picks += _class_typical(Request(req.view, req.rest(picks), half, req.seed))
    return picks


SELECTORS: dict[str, Callable[[Request], list[int]]] = {
    "random": _random,
    "cold_start_kmeans": _cold_start_kmeans,
    "uncertainty": _uncertainty,
    "margin_diverse": _margin_diverse,
    "typical": _typical,
    "margin_typical": _margin_typical,
    "class_typical": _class_typical,
    "mixed": _mixed,
}


def resolve(strategy: str, fitted: bool) -> str:
    """The strategy that runs for ``strategy`` ("auto": by whether the model has a fitted head)."""
    if strategy == "auto":
        return TRAINED_DEFAULT if fitted else "cold_start_kmeans"
    return strategy


def select(strategy: str, req: Request) -> list[int]:
    """``req.k`` distinct rows of ``req.candidates`` chosen by ``strategy`` (a name of `SELECTORS`), their texts
    distinct and none the text of a row outside the candidates while the candidates hold ``req.k`` such texts
    (the module's docstring)."""
    keys = [text_key(text) for text in req.view.texts]
    inside = np.zeros(len(keys), dtype=bool)
    inside[req.candidates] = True
    seen = {key for key, candidate in zip(keys, inside) if not candidate}  # the excluded rows' texts
    picks: list[int] = []
    first = True
    while True:
        fresh = np.array([i for i in req.candidates.tolist() if keys[i] not in seen], dtype=np.int64)
        n = req.k - len(picks)
        if not len(fresh):  # every text of the candidates is picked or excluded: copies make up the rest
            spare = req.candidates[~np.isin(req.candidates, picks)]
            return picks + [int(i) for i in spare[:n]]
        if first and len(fresh) == len(req.candidates) and n <= len(fresh):
            sub = req  # the strategy on the request as it is (always, in a pool without duplicates)
        else:  # the strategy on the candidates whose text is new (each round keeps at least one more text)
            sub = Request(req.view, fresh, min(n, len(fresh)), req.seed, *((req.names, req.search) if first else ()))
        first = False
        for i in SELECTORS[strategy](sub):
            if keys[i] not in seen:
                seen.add(keys[i])
                picks.append(i)
        if len(picks) == req.k:
            return picks
