"""setfit's ``ContrastiveDataset``: the same positive and negative sentence pairs in the same order, made lazily.

setfit builds every pair of the data as a dict before training; here the pairs are kept as two int32 index
arrays (8 bytes a pair) and turned into ``{"sentence_1", "sentence_2", "label"}`` dicts as they are read.
setfit_lite's own trainer does not use this class (it samples pairs in O(n) memory, see
`setfit_lite.training.batch_samplers`); it is here for code written against ``setfit.sampler``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from torch.utils.data import IterableDataset

from .config.sampling_policy import SAMPLING_STRATEGIES

__all__ = ["ContrastiveDataset", "shuffled_pair_indices"]


def shuffled_pair_indices(n: int, seed: int = 42, replacement: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Every pair ``i <= j`` (``i < j`` without ``replacement``) of ``range(n)`` in setfit's shuffled order:
    the row-major upper triangle permuted by ``np.random.RandomState(seed)`` (setfit always uses 42)."""
    rows, cols = np.triu_indices(n, 0 if replacement else 1)
    order = np.random.RandomState(seed=seed).permutation(len(rows))
    return rows[order].astype(np.int32), cols[order].astype(np.int32)


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
        first, second = shuffled_pair_indices(len(sentences), seed)
        positive = self._positive(first, second, multilabel)
        keep = slice(None) if self.max_pos_or_neg == -1 else slice(self.max_pos_or_neg)
        self.pos_pairs = _Pairs(sentences, first[positive][keep], second[positive][keep], 1.0)
        self.neg_pairs = _Pairs(sentences, first[~positive][keep], second[~positive][keep], 0.0)
        num_pos, num_neg = len(self.pos_pairs), len(self.neg_pairs)
        if num_iterations is not None and num_iterations > 0:
            self.len_pos_pairs = self.len_neg_pairs = num_iterations * len(sentences)
        elif sampling_strategy == "unique":
            self.len_pos_pairs, self.len_neg_pairs = num_pos, num_neg
        elif sampling_strategy == "undersampling":
            self.len_pos_pairs = self.len_neg_pairs = min(num_pos, num_neg)
        else:
            self.len_pos_pairs = self.len_neg_pairs = max(num_pos, num_neg)

    def _positive(self, first: np.ndarray, second: np.ndarray, multilabel: bool) -> np.ndarray:
        """Whether each pair is positive: equal labels, or (multi-label) at least one label in common."""
        if not multilabel:
            labels = np.asarray(self.labels)
            return labels[first] == labels[second]
        hot = np.asarray(self.labels).astype(bool)
        positive = np.empty(len(first), dtype=bool)
        step = max(1, 2**22 // max(1, hot.shape[1]))  # bounded temporary memory
        for start in range(0, len(first), step):
            end = start + step
            positive[start:end] = (hot[first[start:end]] & hot[second[start:end]]).any(axis=1)
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
