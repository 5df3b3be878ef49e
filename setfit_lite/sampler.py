"""setfit's ``ContrastiveDataset``: the same positive and negative sentence pairs in the same order.

setfit builds every pair of the data as a dict before training. Here the pairs are kept as two int32 index arrays
per kind (8 bytes a pair) and turned into ``{"sentence_1", "sentence_2", "label"}`` dicts as they are read. setfit's
order is a random permutation of all ``N(N+1)/2`` pairs, so building it still takes memory quadratic in the
sentences: the shuffled pair positions (4 bytes a pair), a positive flag (1 byte a pair) and the kept index arrays,
about 13 bytes a pair at the peak (measured: 5,000 sentences, 12.5 million pairs, 165 MB; 10,000 sentences,
50 million pairs, 630 MB, of which 400 MB stay). setfit_lite's own trainer does not use this class (it samples
pairs in memory linear in the sentences, see `setfit_lite.training.batch_samplers`); it is here for code written
against ``setfit.sampler``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from torch.utils.data import IterableDataset

from .config.sampling_policy import SAMPLING_STRATEGIES

__all__ = ["ContrastiveDataset", "shuffled_pair_indices", "triangle_pairs"]

_CHUNK = 1 << 16  # pairs decoded at once: bounds the temporary arrays of a build


def triangle_pairs(position: np.ndarray | int, m: int, diagonal: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The pairs at row-major ``position`` in the upper triangle of an ``m x m`` matrix, computed, not looked up.

    Args:
        position: Positions (an array or one integer), each in ``[0, m(m+1)/2)`` with the diagonal, else
            ``[0, m(m-1)/2)``.
        m: The matrix's size (the number of items paired).
        diagonal: Whether the triangle holds the diagonal: pairs ``i <= j`` (combinations with replacement), else
            ``i < j``.

    Returns:
        ``(i, j)``: int64 arrays (numpy integers for one position), ``i <= j`` (``i < j`` without the diagonal); the
        order of ``np.triu_indices(m, 0 if diagonal else 1)``.
    """
    position = np.asarray(position, dtype=np.int64)
    width = m if diagonal else m - 1  # row i holds width - i pairs; the rows before it hold i*width - i(i-1)/2

    def before(row: np.ndarray) -> np.ndarray:
        return row * width - row * (row - 1) // 2

    b = 2 * width + 1
    i = np.minimum((b - np.sqrt(np.maximum(b * b - 8.0 * position, 0.0))) // 2, max(width - 1, 0)).astype(np.int64)
    while (over := before(i) > position).any():  # float rounding: at most a step or two
        i -= over
    while (under := before(i + 1) <= position).any():
        i += under
    return i, i + position - before(i) + (0 if diagonal else 1)


def _shuffled_positions(n: int, seed: int, replacement: bool) -> np.ndarray:
    """The positions of every pair of ``range(n)`` in the row-major upper triangle, in setfit's shuffled order:
    ``np.random.RandomState(seed).permutation`` of them, made in place as int32 (int64 past 2**31 pairs)."""
    total = n * (n + 1) // 2 if replacement else n * (n - 1) // 2
    positions = np.arange(total, dtype=np.int32 if total < 2**31 else np.int64)
    np.random.RandomState(seed=seed).shuffle(positions)  # the draws of permutation(total), in 4 bytes a pair
    return positions


def _decoded(positions: np.ndarray, n: int, replacement: bool = True) -> Iterator[tuple[slice, np.ndarray, np.ndarray]]:
    """``(part, i, j)`` for consecutive parts of ``positions``: the pairs they hold, a bounded chunk at a time."""
    for start in range(0, len(positions), _CHUNK):
        part = slice(start, start + _CHUNK)
        yield (part, *triangle_pairs(positions[part], n, replacement))


def shuffled_pair_indices(n: int, seed: int = 42, replacement: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Every pair ``i <= j`` (``i < j`` without ``replacement``) of ``range(n)`` in setfit's shuffled order:
    the row-major upper triangle permuted by ``np.random.RandomState(seed)`` (setfit always uses 42), as two
    int32 arrays."""
    positions = _shuffled_positions(n, seed, replacement)
    rows, cols = np.empty(len(positions), dtype=np.int32), np.empty(len(positions), dtype=np.int32)
    for part, i, j in _decoded(positions, n, replacement):
        rows[part], cols[part] = i, j
    return rows, cols


class _Pairs(Sequence):
    """Pairs of sentences as dicts, made when read from two index arrays."""

    def __init__(self, sentences: Sequence[Any], first: np.ndarray, second: np.ndarray, label: float) -> None:
        self.sentences, self.first, self.second, self.label = sentences, first, second, label

    def __len__(self) -> int:
        return len(self.first)

    def __getitem__(self, index: int) -> dict[str, Any]:  # type: ignore[override]
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return {"sentence_1": self.sentences[int(self.first[index])],
                "sentence_2": self.sentences[int(self.second[index])], "label": self.label}


class ContrastiveDataset(IterableDataset):
    """Positive (label 1.0) and negative (label 0.0) sentence pairs for contrastive training, as setfit's.

    Same arguments, attributes (``pos_pairs``, ``neg_pairs``, ``len_pos_pairs``, ``len_neg_pairs``) and pairs as
    ``setfit.sampler.ContrastiveDataset``: every pair of sentences with replacement, shuffled with ``seed``
    (setfit's fixed 42), positive when the labels are equal (multi-label: share a label); then
    ``sampling_strategy`` ("oversampling", "undersampling" or "unique") or ``num_iterations`` (that many positive
    and negative pairs per sentence) sets how many of each an iteration yields, alternating positive and
    negative, cycling through each list. ``max_pairs`` (not -1) keeps at most ``max_pairs // 2`` of each.
    """

    def __init__(self, sentences: Sequence[str], labels: Sequence[Any], multilabel: bool,
                 num_iterations: int | None = None, sampling_strategy: str = "oversampling", max_pairs: int = -1,
                 seed: int = 42) -> None:
        super().__init__()
        if sampling_strategy not in SAMPLING_STRATEGIES:
            raise ValueError("Invalid sampling strategy. Must be one of 'unique', 'oversampling', or 'undersampling'.")
        if len(sentences) != len(labels):
            raise ValueError(f"got {len(sentences)} sentences but {len(labels)} labels")
        self.sentences, self.labels = sentences, labels
        self.sentence_labels = list(zip(sentences, labels))
        self.max_pos_or_neg = -1 if max_pairs == -1 else max_pairs // 2
        self.pos_index = self.neg_index = 0
        self.pos_pairs, self.neg_pairs = self._pairs(seed, multilabel)
        num_pos, num_neg = len(self.pos_pairs), len(self.neg_pairs)
        if num_iterations is not None and num_iterations > 0:
            self.len_pos_pairs = self.len_neg_pairs = num_iterations * len(sentences)
        elif sampling_strategy == "unique":
            self.len_pos_pairs, self.len_neg_pairs = num_pos, num_neg
        elif sampling_strategy == "undersampling":
            self.len_pos_pairs = self.len_neg_pairs = min(num_pos, num_neg)
        else:
            self.len_pos_pairs = self.len_neg_pairs = max(num_pos, num_neg)

    def _pairs(self, seed: int, multilabel: bool) -> tuple[_Pairs, _Pairs]:
        """The positive and the negative pairs in setfit's order, at most ``max_pos_or_neg`` of each: every pair's
        shuffled position, then (a chunk at a time) a flag per pair and each kind's two int32 index arrays."""
        n = len(self.sentences)
        labels = np.asarray(self.labels)
        labels = labels.astype(bool) if multilabel else labels
        positions = _shuffled_positions(n, seed, replacement=True)
        positive = np.empty(len(positions), dtype=bool)
        for part, i, j in _decoded(positions, n):
            positive[part] = self._positive(labels, i, j, multilabel)
        num_pos = int(np.count_nonzero(positive))
        keep = slice(None) if self.max_pos_or_neg == -1 else slice(self.max_pos_or_neg)  # the first ones
        kinds = {1.0: len(range(num_pos)[keep]), 0.0: len(range(len(positions) - num_pos)[keep])}
        arrays = {label: (np.empty(size, dtype=np.int32), np.empty(size, dtype=np.int32))
                  for label, size in kinds.items()}
        filled = dict.fromkeys(kinds, 0)
        for part, i, j in _decoded(positions, n):
            flags = positive[part]
            for label, take in ((1.0, flags), (0.0, ~flags)):
                first, second = arrays[label]
                count = min(int(np.count_nonzero(take)), len(first) - filled[label])
                first[filled[label]:filled[label] + count] = i[take][:count]
                second[filled[label]:filled[label] + count] = j[take][:count]
                filled[label] += count
            if filled == kinds:  # max_pairs: both kinds are full
                break
        return _Pairs(self.sentences, *arrays[1.0], 1.0), _Pairs(self.sentences, *arrays[0.0], 0.0)

    @staticmethod
    def _positive(labels: np.ndarray, first: np.ndarray, second: np.ndarray, multilabel: bool) -> np.ndarray:
        """Whether each pair is positive: equal labels, or (multi-hot bool ``labels``) a label in common."""
        if not multilabel:
            return labels[first] == labels[second]
        positive = np.empty(len(first), dtype=bool)
        step = max(1, 2**22 // max(1, labels.shape[1]))  # bounded temporary memory
        for start in range(0, len(first), step):
            end = start + step
            positive[start:end] = (labels[first[start:end]] & labels[second[start:end]]).any(axis=1)
        return positive

    def _take(self, pairs: _Pairs, count: int, start: int) -> Iterator[dict[str, Any]]:
        if count and not len(pairs):
            kind = "positive" if pairs.label else "negative"
            raise ValueError(f"ContrastiveDataset has no {kind} pairs to draw {count} from: the data needs at least "
                             "two labels (negatives) and a label shared by two sentences or repeated (positives)")
        return (pairs[(start + k) % len(pairs)] for k in range(count))

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Positive and negative pairs alternately; each iteration continues each list where the last one ended."""
        positives = self._take(self.pos_pairs, self.len_pos_pairs, self.pos_index)
        negatives = self._take(self.neg_pairs, self.len_neg_pairs, self.neg_index)
        if len(self.pos_pairs):
            self.pos_index = (self.pos_index + self.len_pos_pairs) % len(self.pos_pairs)
        if len(self.neg_pairs):
            self.neg_index = (self.neg_index + self.len_neg_pairs) % len(self.neg_pairs)
        for _ in range(max(self.len_pos_pairs, self.len_neg_pairs)):
            pair = next(positives, None)
            if pair is not None:
                yield pair
            pair = next(negatives, None)
            if pair is not None:
                yield pair

    def __len__(self) -> int:
        return self.len_pos_pairs + self.len_neg_pairs
