"""Diversity in embedding space: k-means representatives, the best text of each cluster, and the texts nearest a
label name. Every function takes unit-length embeddings and a set of candidate rows, and returns distinct rows.

k-means is scikit-learn's ``KMeans``, seeded: the same seed gives the same picks. Beyond `FIT_SAMPLE` rows it is
fitted on a seeded sample of `FIT_SAMPLE` rows (`fit_sample`), and every row is then assigned to its nearest centre
(the centres of that many texts already place the clusters; fitting on all of a large pool costs far more).
Fewer distinct texts than clusters (duplicates) leave clusters empty; the picks are then topped up from the
candidates not yet taken, so a call always returns the number asked for (copies of a picked text among them:
`setfit_lite.active.strategies.select` drops those and chooses again among the texts not yet picked).
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["CHEAP_RESTARTS", "FIT_SAMPLE", "MAX_CLUSTERS", "MIN_CLUSTER_SIZE", "best_per_cluster", "cluster",
           "fit_sample", "nearest_to_names", "representatives", "shares", "uncovered_representatives"]

FIT_SAMPLE = 20_000  # rows beyond which k-means is fitted on a seeded sample of this many, then assigns every row
MIN_CLUSTER_SIZE = 10  # the coverage strategy makes at most one cluster per this many rows
MAX_CLUSTERS = 500  # ... and at most this many (TypiClust's own code caps its k-means at 500 clusters)
CHEAP_RESTARTS = 2_000_000  # rows x clusters up to which k-means restarts 10 times (else 3): fewer merged clusters


def fit_sample(n: int, seed: int) -> np.ndarray | None:
    """The sorted rows k-means is fitted on for ``n`` rows: None (all of them) up to `FIT_SAMPLE`, else a sample of
    `FIT_SAMPLE` rows drawn without replacement with ``seed`` (the same for a seed and ``n``)."""
    if n <= FIT_SAMPLE:
        return None
    return np.sort(np.random.default_rng(seed).choice(n, size=FIT_SAMPLE, replace=False))


def cluster(x: np.ndarray, n_clusters: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``(assignments, centres)`` of seeded k-means with ``n_clusters`` clusters on the rows of ``x``: fitted on
    the `fit_sample` rows (all of them up to `FIT_SAMPLE`), then every row assigned to its nearest centre."""
    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning

    rows = fit_sample(len(x), seed)
    fit = x if rows is None else x[rows]
    n_clusters = min(n_clusters, len(fit))
    n_init = 10 if len(fit) * n_clusters <= CHEAP_RESTARTS else 3
    km = KMeans(n_clusters=n_clusters, n_init=n_init, random_state=seed)
    from threadpoolctl import threadpool_limits

    # one OpenMP thread: on this 2-core shared machine, 5,000 x 256 rows into 16 clusters took 2.6 s on one thread
    # and 14.4 s on two (threads spinning against other processes), and the picks never depend on a thread count
    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore", ConvergenceWarning)  # duplicates: fewer distinct points than clusters
        km.fit(fit)
        assignments = km.labels_ if fit is x else km.predict(x)
    return assignments, km.cluster_centers_


def _top_up(picks: list[int], candidates: np.ndarray, n: int, order: np.ndarray | None = None) -> list[int]:
    """``picks`` completed to ``n`` rows with the candidates not yet taken, in ``order`` (default: as given)."""
    if len(picks) >= n:
        return picks[:n]
    taken = set(picks)
    rest = candidates if order is None else candidates[order]
    return picks + [int(i) for i in rest if int(i) not in taken][:n - len(picks)]


def _groups(assignments: np.ndarray, rows: np.ndarray, n_clusters: int) -> list[np.ndarray]:
    """The rows of ``rows`` in each of the ``n_clusters`` clusters (``assignments[rows]``), in the order given: one
    stable sort of all of them, not a pass over the rows per cluster."""
    labels = assignments[rows]
    bounds = np.cumsum(np.bincount(labels, minlength=n_clusters))[:-1]
    return np.split(rows[np.argsort(labels, kind="stable")], bounds)


def representatives(x: np.ndarray, candidates: np.ndarray, n: int, seed: int) -> list[int]:
    """``n`` rows of ``candidates``: k-means on their embeddings into ``n`` clusters, then the candidate nearest
    each centre (the largest cluster's first): diverse, and each one typical of many texts."""
    if n <= 0:
        return []
    sub = x[candidates]
    assignments, centres = cluster(sub, n, seed)
    sizes = np.bincount(assignments, minlength=len(centres))
    groups = _groups(assignments, np.arange(len(sub)), len(centres))
    picks: list[int] = []
    for c in np.argsort(-sizes, kind="stable"):
        members = groups[c]
        if len(members):
            distances = ((sub[members] - centres[c]) ** 2).sum(axis=1)
            picks.append(int(candidates[members[np.argmin(distances)]]))
    return _top_up(picks, candidates, n)


def best_per_cluster(x: np.ndarray, candidates: np.ndarray, scores: np.ndarray, n: int, seed: int) -> list[int]:
    """``n`` rows of ``candidates``: k-means on their embeddings into ``n`` clusters, then each cluster's
    candidate of highest ``scores`` (one score per candidate), clusters in the order of their best score."""
    if n <= 0:
        return []
    assignments, centres = cluster(x[candidates], n, seed)
    best = [members[np.argmax(scores[members])] for members in _groups(assignments, np.arange(len(candidates)),
                                                                        len(centres)) if len(members)]
    best.sort(key=lambda i: (-scores[i], i))
    return _top_up([int(candidates[i]) for i in best], candidates, n, np.argsort(-scores, kind="stable"))


def uncovered_representatives(x: np.ndarray, candidates: np.ndarray, covered: np.ndarray, n: int,
                              seed: int) -> list[int]:
    """``n`` rows of ``candidates`` where the labelled rows ``covered`` are not (TypiClust's coverage): k-means on
    all rows of ``x`` into ``len(covered) + n`` clusters (at most one per `MIN_CLUSTER_SIZE` rows and at most
    `MAX_CLUSTERS`, never fewer than ``n``), the clusters holding no covered row largest first, and the candidate
    nearest each one's centre; topped up with `representatives` of the candidates left (all of them, once the
    covered rows reach every cluster)."""
    if n <= 0:
        return []
    clusters = max(n, min(len(covered) + n, len(x) // MIN_CLUSTER_SIZE, MAX_CLUSTERS))
    assignments, centres = cluster(x, clusters, seed)
    is_candidate = np.zeros(len(x), dtype=bool)
    is_candidate[candidates] = True
    taken = np.bincount(assignments[np.asarray(covered, dtype=np.int64)], minlength=len(centres))
    sizes = np.bincount(assignments, minlength=len(centres))
    groups = _groups(assignments, np.flatnonzero(is_candidate), len(centres))
    picks: list[int] = []
    for c in np.lexsort((np.arange(len(centres)), -sizes)):
        members = groups[c]
        if taken[c] or not len(members):
            continue
        picks.append(int(members[np.argmin(((x[members] - centres[c]) ** 2).sum(axis=1))]))
        if len(picks) == n:
            return picks
    rest = candidates[~np.isin(candidates, picks)]
    return picks + representatives(x, rest, n - len(picks), seed)


def shares(groups: np.ndarray, n: int) -> list[tuple[int, int]]:
    """``n`` picks spread as evenly as the group sizes allow over the values of ``groups`` (the smallest groups
    filled first; a remainder goes to the largest groups): ``(group, count)`` pairs with a count above 0, by group."""
    values, sizes = np.unique(groups, return_counts=True)
    order = sorted(range(len(values)), key=lambda j: (sizes[j], values[j]))
    counts = [0] * len(values)
    left = n
    for rank, j in enumerate(order):
        counts[j] = min(int(sizes[j]), left // (len(values) - rank))
        left -= counts[j]
    for j in reversed(order):  # the largest groups take what the even split left over
        extra = min(left, int(sizes[j]) - counts[j])
        counts[j] += extra
        left -= extra
    return [(int(values[j]), counts[j]) for j in range(len(values)) if counts[j]]


def nearest_to_names(x: np.ndarray, names: np.ndarray, which: list[int], candidates: np.ndarray) -> list[int]:
    """For each label ``which[j]`` (a row of ``names``, the label texts' unit embeddings), the candidate the label
    names claim most surely for it: the highest cosine to its name less the highest cosine to another name (the
    zero-shot margin; the cosine alone with one name). Distinct rows, one per label while candidates last."""
    sims = x[candidates] @ names.T
    if names.shape[0] > 1:  # the highest cosine to another name: the second highest where name j's is the highest
        top = sims.argmax(axis=1)
        first, second = sims.max(axis=1), np.partition(sims, -2, axis=1)[:, -2]
    picks: list[int] = []
    free = np.ones(len(candidates), dtype=bool)
    for j in which:
        if not free.any():
            break
        score = sims[:, j] - (np.where(top == j, second, first) if names.shape[0] > 1 else 0.0)
        score = np.where(free, score, -np.inf)
        best = int(np.argmax(score))
        free[best] = False
        picks.append(int(candidates[best]))
    return picks
