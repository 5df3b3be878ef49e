"""Label spreading (``pseudo_label_method="spread"``) on a large pool: the graph holds at most `SPREAD_POOL` pool
rows (a subset drawn with the run's seed), the other pool rows take the labels of their nearest graph rows, and a
pool at or under the bound spreads whole, as scikit-learn's ``LabelSpreading`` on all rows does."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sklearn.semi_supervised
from sklearn.exceptions import ConvergenceWarning
from sklearn.semi_supervised import LabelSpreading

from setfit_lite import TrainingArguments
from setfit_lite.training import self_training
from setfit_lite.training.self_training import SPREAD_NEIGHBORS, spread_agreement

CAP = 50


def _clusters(pool: int, labelled_per_class: int = 3, classes: int = 3, seed: int = 0, spread: float = 0.05
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(pool rows, labelled rows, labelled ids, pool truth)``: tight clusters around far-apart centres."""
    rng = np.random.default_rng(seed)
    centres = np.eye(classes, 16) * 10
    ids = np.repeat(np.arange(classes), labelled_per_class)
    truth = rng.integers(0, classes, pool)
    labelled = centres[ids] + spread * rng.standard_normal((len(ids), 16))
    rows = centres[truth] + spread * rng.standard_normal((pool, 16))
    return rows.astype(np.float32), labelled.astype(np.float32), ids, truth


@pytest.fixture
def fitted_rows(monkeypatch: pytest.MonkeyPatch) -> list[np.ndarray]:
    """The rows every ``LabelSpreading.fit`` in `spread_agreement` is given, in call order."""
    fitted: list[np.ndarray] = []

    class Recording(LabelSpreading):
        def fit(self, X, y):  # noqa: N803 (scikit-learn's name)
            fitted.append(np.array(X, copy=True))
            return super().fit(X, y)

    monkeypatch.setattr(sklearn.semi_supervised, "LabelSpreading", Recording)
    return fitted


def _reference(pool: np.ndarray, labelled: np.ndarray, ids: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """The agreement of label spreading over all labelled and pool rows, as before the bound."""
    rows = np.vstack([labelled, pool]).astype(np.float64)
    rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
    targets = np.concatenate([ids, np.full(len(pool), -1)])
    spread = LabelSpreading(kernel="knn", n_neighbors=min(SPREAD_NEIGHBORS, len(rows) - 1), alpha=0.99,
                            max_iter=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=ConvergenceWarning)
        spread.fit(rows, targets)
    share = spread.label_distributions_[len(ids):]
    reached = np.isfinite(share).all(axis=1) & (share.max(axis=1, initial=0.0) > 0)
    return reached & (spread.classes_[np.nan_to_num(share).argmax(axis=1)] == predicted)


def test_a_pool_over_the_bound_spreads_over_at_most_the_bound_plus_the_labelled_rows(
        monkeypatch: pytest.MonkeyPatch, fitted_rows: list[np.ndarray]) -> None:
    monkeypatch.setattr(self_training, "SPREAD_POOL", CAP, raising=False)
    pool, labelled, ids, truth = _clusters(400)
    agree = spread_agreement(pool, labelled, ids, truth)
    assert len(fitted_rows) == 1 and len(fitted_rows[0]) <= CAP + len(ids)
    # every pool row, in the graph or not, gets its cluster's class
    assert agree.shape == (len(pool),) and agree.dtype == bool and agree.all()
    assert not spread_agreement(pool, labelled, ids, (truth + 1) % 3).any()


@pytest.mark.parametrize("size, cap", [(40, CAP), (CAP, CAP), (120, None)])  # None: the module's bound
@pytest.mark.parametrize("seed", [0, 1])
def test_a_pool_at_or_under_the_bound_spreads_whole_as_before(
        monkeypatch: pytest.MonkeyPatch, fitted_rows: list[np.ndarray], size: int, cap: int | None, seed: int
) -> None:
    if cap is not None:
        monkeypatch.setattr(self_training, "SPREAD_POOL", cap, raising=False)
    # overlapping clusters, so that spreading decides rows the clusters alone do not
    pool, labelled, ids, _ = _clusters(size, seed=seed, spread=4.0)
    for c in range(3):
        predicted = np.full(size, c)
        expected = _reference(pool, labelled, ids, predicted)
        assert np.array_equal(spread_agreement(pool, labelled, ids, predicted), expected)
    assert all(len(rows) == size + len(ids) for rows in fitted_rows)


def test_the_subset_over_the_bound_follows_the_seed(monkeypatch: pytest.MonkeyPatch,
                                                    fitted_rows: list[np.ndarray]) -> None:
    monkeypatch.setattr(self_training, "SPREAD_POOL", CAP, raising=False)
    pool, labelled, ids, _ = _clusters(300, seed=2, spread=4.0)
    predicted = np.random.default_rng(0).integers(0, 3, len(pool))
    first, again, other = (spread_agreement(pool, labelled, ids, predicted, seed) for seed in (5, 5, 6))
    assert np.array_equal(first, again) and first.shape == other.shape == (len(pool),)
    assert np.array_equal(fitted_rows[0], fitted_rows[1]) and not np.array_equal(fitted_rows[0], fitted_rows[2])


def test_a_spread_round_draws_its_subset_with_the_run_s_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    seeds: list[int] = []
    pool, labelled, ids, truth = _clusters(30)

    def recording(*args):
        seeds.append(args[4])
        return np.ones(len(args[0]), dtype=bool)

    class Head:
        def predict_proba(self, rows):
            return np.eye(3)[truth]

    class Model:
        model_head = Head()

    monkeypatch.setattr(self_training, "spread_agreement", recording)
    monkeypatch.setattr(self_training, "gather_embeddings", lambda model, tokens, backend: (
        pool if len(tokens) == len(pool) else labelled))
    args = TrainingArguments(pseudo_label_method="spread", seed=11)
    self_training.pseudo_label(Model(), args, None, [[0]] * len(ids), ids, [[0]] * len(pool))
    assert seeds == [11]
