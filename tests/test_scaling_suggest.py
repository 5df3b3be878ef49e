"""The work of ``suggest_labels`` stays bounded as the labels grow: ``typical`` (TypiClust's coverage) asks k-means
for at most `MAX_CLUSTERS` clusters whatever the number excluded, as TypiClust's own code does, and groups the pool
by cluster in one pass; the cold start's search by label name copies the similarities once, not once per name. The
picks are those of the straightforward code below the cap (references of it here)."""

from __future__ import annotations

import numpy as np
import pytest
import sklearn.cluster

from setfit_lite import suggest_labels
from setfit_lite.active import diversity

CAP = 500  # TypiClust's MAX_NUM_CLUSTERS


class FakeEncoder:
    """A model without a head whose embeddings are rows of an array, looked up by the number in the text."""

    labels = None

    def __init__(self, x: np.ndarray) -> None:
        self.x = x

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        return self.x[[int(t.split()[1]) for t in texts]]


class CheapKMeans:
    """A stand-in for scikit-learn's ``KMeans`` that records the clusters asked for and assigns row ``i`` to
    cluster ``i % n_clusters`` (centres: the means), so that a large pool costs next to nothing."""

    asked: list[int] = []

    def __init__(self, n_clusters: int, n_init: int = 10, random_state: int | None = None) -> None:
        self.n_clusters = n_clusters
        CheapKMeans.asked.append(n_clusters)

    def fit(self, x: np.ndarray) -> CheapKMeans:
        self.labels_ = np.arange(len(x)) % self.n_clusters
        self.cluster_centers_ = np.stack([x[self.labels_ == c].mean(axis=0) for c in range(self.n_clusters)])
        return self

    def predict(self, x: np.ndarray) -> np.ndarray:
        return np.arange(len(x)) % self.n_clusters


def _pool(n: int, dim: int = 8, centres: int = 12, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((centres, dim))[rng.integers(centres, size=n)] + 0.5 * rng.standard_normal((n, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _texts(n: int) -> list[str]:
    return [f"text {i}" for i in range(n)]


def _old_uncovered(x: np.ndarray, candidates: np.ndarray, covered: np.ndarray, n: int, seed: int) -> list[int]:
    """The coverage picks as first written: no cap, one pass over the pool per cluster."""
    clusters = max(n, min(len(covered) + n, len(x) // diversity.MIN_CLUSTER_SIZE))
    assignments, centres = diversity.cluster(x, clusters, seed)
    is_candidate = np.zeros(len(x), dtype=bool)
    is_candidate[candidates] = True
    taken = np.bincount(assignments[np.asarray(covered, dtype=np.int64)], minlength=len(centres))
    sizes = np.bincount(assignments, minlength=len(centres))
    picks: list[int] = []
    for c in np.lexsort((np.arange(len(centres)), -sizes)):
        members = np.flatnonzero((assignments == c) & is_candidate)
        if taken[c] or not len(members):
            continue
        picks.append(int(members[np.argmin(((x[members] - centres[c]) ** 2).sum(axis=1))]))
        if len(picks) == n:
            return picks
    rest = candidates[~np.isin(candidates, picks)]
    return picks + diversity.representatives(x, rest, n - len(picks), seed)


def _old_nearest_to_names(x: np.ndarray, names: np.ndarray, which: list[int], candidates: np.ndarray) -> list[int]:
    """The label-name picks as first written: the similarities copied without column ``j`` for each name."""
    sims = x[candidates] @ names.T
    picks: list[int] = []
    free = np.ones(len(candidates), dtype=bool)
    for j in which:
        if not free.any():
            break
        score = sims[:, j] - (np.delete(sims, j, axis=1).max(axis=1) if names.shape[0] > 1 else 0.0)
        best = int(np.argmax(np.where(free, score, -np.inf)))
        free[best] = False
        picks.append(int(candidates[best]))
    return picks


def test_typical_asks_kmeans_for_at_most_the_cap_however_many_are_excluded(monkeypatch: pytest.MonkeyPatch) -> None:
    n, excluded, k = 6_000, 1_000, 10  # uncapped: 1,010 clusters, 600 at one per 10 texts
    monkeypatch.setattr(sklearn.cluster, "KMeans", CheapKMeans)
    monkeypatch.setattr(CheapKMeans, "asked", [])
    model, texts = FakeEncoder(_pool(n)), _texts(n)
    exclude = np.random.default_rng(1).choice(n, size=excluded, replace=False).tolist()
    picks = suggest_labels(model, texts, k, exclude, strategy="typical", label_names=[], seed=3)
    assert CheapKMeans.asked and max(CheapKMeans.asked) <= CAP, CheapKMeans.asked
    assert CheapKMeans.asked[0] == CAP  # the coverage k-means itself: capped, not shrunk further
    assert len(set(picks)) == k and not set(picks) & set(exclude)
    assert suggest_labels(model, texts, k, exclude, strategy="typical", label_names=[], seed=3) == picks


def test_capped_picks_are_distinct_new_and_the_same_for_a_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    # a cap of 20 on 1,200 texts with 150 excluded: the cap is reached, with real k-means
    monkeypatch.setattr(diversity, "MAX_CLUSTERS", 20)
    asked: list[int] = []
    real = sklearn.cluster.KMeans

    def recording(**kwargs: object) -> object:
        asked.append(int(kwargs["n_clusters"]))
        return real(**kwargs)

    monkeypatch.setattr(sklearn.cluster, "KMeans", recording)
    model, texts = FakeEncoder(_pool(1_200, seed=2)), _texts(1_200)
    exclude = np.random.default_rng(2).choice(1_200, size=150, replace=False).tolist()
    for k in (5, 30):  # 30 > the cap: never fewer clusters than picks
        for seed in (0, 1):
            asked.clear()
            picks = suggest_labels(model, texts, k, exclude, strategy="typical", label_names=[], seed=seed)
            assert asked[0] == max(20, k), asked
            assert len(set(picks)) == k and not set(picks) & set(exclude)
            assert suggest_labels(model, texts, k, exclude, strategy="typical", label_names=[], seed=seed) == picks


@pytest.mark.parametrize("seed", [0, 1, 5])
def test_below_the_cap_the_coverage_picks_are_those_of_the_first_code(seed: int) -> None:
    rng = np.random.default_rng(10 + seed)
    for n, covered_count, k in ((400, 0, 6), (400, 30, 6), (800, 200, 4), (300, 120, 10), (200, 5, 12)):
        x = _pool(n, seed=seed)
        covered = np.sort(rng.choice(n, size=covered_count, replace=False))
        candidates = np.setdiff1d(np.arange(n), covered)
        assert len(covered) + k < CAP
        expected = _old_uncovered(x, candidates, covered, k, seed)
        assert diversity.uncovered_representatives(x, candidates, covered, k, seed) == expected, (n, covered_count)


def test_the_pool_is_grouped_by_cluster_in_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    x = _pool(3_000)
    covered = np.arange(0, 3_000, 15)  # 200 covered rows: 210 clusters, most of them covered
    candidates = np.setdiff1d(np.arange(3_000), covered)
    monkeypatch.setattr(sklearn.cluster, "KMeans", CheapKMeans)
    expected = _old_uncovered(x, candidates, covered, 10, 0)
    calls = [0]
    flatnonzero = np.flatnonzero

    def counting(a: np.ndarray) -> np.ndarray:
        calls[0] += 1
        return flatnonzero(a)

    monkeypatch.setattr(np, "flatnonzero", counting)
    assert diversity.uncovered_representatives(x, candidates, covered, 10, 0) == expected
    assert calls[0] <= 2, calls  # not one per cluster


@pytest.mark.parametrize("n_names", [1, 2, 3, 40])
def test_the_label_names_search_copies_the_similarities_once(monkeypatch: pytest.MonkeyPatch, n_names: int) -> None:
    rng = np.random.default_rng(n_names)
    x = _pool(2_000, seed=n_names)
    names = rng.standard_normal((n_names, x.shape[1]))
    names = (names / np.linalg.norm(names, axis=1, keepdims=True)).astype(np.float32)
    candidates = np.sort(rng.choice(2_000, size=1_500, replace=False))
    which = rng.permutation(n_names).tolist()
    expected = _old_nearest_to_names(x, names, which, candidates)
    tied = np.concatenate([x[:3], x[:3]])  # equal names: ties in the highest cosine
    expected_tied = _old_nearest_to_names(x, tied, [4, 0, 5, 1], candidates)
    expected_few = _old_nearest_to_names(x, names, which, candidates[:2])  # fewer texts than names
    calls = [0]
    delete = np.delete

    def counting(*args: object, **kwargs: object) -> np.ndarray:
        calls[0] += 1
        return delete(*args, **kwargs)

    monkeypatch.setattr(np, "delete", counting)
    assert diversity.nearest_to_names(x, names, which, candidates) == expected
    assert diversity.nearest_to_names(x, tied, [4, 0, 5, 1], candidates) == expected_tied
    assert diversity.nearest_to_names(x, names, which, candidates[:2]) == expected_few
    assert calls[0] <= 1, calls  # not one copy per name
