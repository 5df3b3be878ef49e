"""Lazy samplers: label-balanced sentence batches and setfit-style pairs, memory linear in the data.

Neither sampler ever builds the list of all pairs. Pairs are addressed by an integer index that is
decoded arithmetically into two sentence indices, and shuffled with a keyed Feistel permutation,
so a pair stream of any length costs O(number of sentences) memory.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from itertools import islice, zip_longest
from typing import Any

import numpy as np

from ..sampler import triangle_pairs

# Finding the groups that share a label through the posting lists costs about this many times more per candidate
# (a later group holding one of the labels) than comparing label sets does per unit of its work: per label and
# group pair for the matrix product that counts every group's shared rows, per 64-label word and group for the
# bitwise intersection that looks up one group's (measured on one CPU core: some thousands, and some tens).
_COUNT_COST = 4096
_LOOKUP_COST = 32
_CHUNK = 2**21  # candidates handled at once when counting the shared rows from the posting lists


def label_groups(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """``(keys, sets)``: one grouping key per example (its class id, or for multi-hot rows the id of its label set)
    and, for multi-hot rows, each group's label set as a bool row (groups in key order; None for class ids)."""
    labels = np.asarray(labels)
    if labels.ndim == 1:
        return labels.astype(np.int64), None
    if labels.ndim != 2 or not labels.size or not ((labels == 0) | (labels == 1)).all():
        sets, keys = np.unique(labels, axis=0, return_inverse=True)
        return keys.reshape(-1).astype(np.int64), sets != 0
    # 0/1 rows as bit strings, 64 labels a word, first label highest: sorted by their words they come in the order
    # np.unique(axis=0) gives them, which compares the rows label by label (seconds on thousands of labels)
    packed = np.packbits(labels != 0, axis=1)
    packed = np.pad(packed, ((0, 0), (0, -packed.shape[1] % 8)))
    words = np.ascontiguousarray(packed).view(">u8").astype(np.uint64)
    order = np.lexsort(words.T[::-1])
    ordered = words[order]
    first = np.concatenate([[True], (ordered[1:] != ordered[:-1]).any(axis=1)])
    keys = np.empty(len(labels), dtype=np.int64)
    keys[order] = np.cumsum(first) - 1
    return keys, labels[order[first]] != 0


def group_keys(labels: np.ndarray) -> np.ndarray:
    """One grouping key per example: the class id, or for multi-hot rows the id of the label set."""
    return label_groups(labels)[0]


class LazyPermutation:
    """A pseudo-random permutation of ``range(n)`` in O(1) memory (4-round Feistel + cycle walking)."""

    def __init__(self, n: int, seed: int) -> None:
        if n < 1:
            raise ValueError("cannot permute an empty range")
        self.n = n
        bits = max(2, (n - 1).bit_length())
        bits += bits % 2
        self.half = bits // 2
        self.mask = (1 << self.half) - 1
        rng = np.random.default_rng(seed)
        self.keys = [int(k) for k in rng.integers(0, 2**31 - 1, size=4)]

    def _round(self, value: int, key: int) -> int:
        return ((value * 0x9E3779B1 + key) ^ (value >> 3)) * 0x85EBCA6B & self.mask

    def _encrypt(self, x: int) -> int:
        left, right = x >> self.half, x & self.mask
        for key in self.keys:
            left, right = right, left ^ self._round(right, key)
        return (left << self.half) | right

    def __getitem__(self, index: int) -> int:
        if not 0 <= index < self.n:
            raise IndexError(index)
        x = self._encrypt(index)
        while x >= self.n:
            x = self._encrypt(x)
        return x

    def __len__(self) -> int:
        return self.n


class PairSpace:
    """Positive and negative pairs of a labelled set, addressed by index, never materialised.

    The pairs are setfit's: every pair of sentences with replacement (a sentence with itself included), positive
    when the labels are equal or, for multi-hot rows, share at least one label (the rule of
    `setfit_lite.losses.same_label` and `setfit_lite.sampler.ContrastiveDataset`), else negative. Rows are grouped
    by label (multi-hot: by label set); the pairs inside a group (combinations with replacement) are all positive
    (all negative for rows without any label), and a pair across two groups is positive when their label sets
    intersect (never, for class ids). Pair ``k`` of each kind is found from a few numbers per group: memory is
    linear in the rows (the groups' label sets for multi-hot rows).
    """

    def __init__(self, labels: np.ndarray) -> None:
        keys, self.sets = label_groups(labels)
        self.order = np.argsort(keys, kind="stable")
        _, counts = np.unique(keys, return_counts=True)
        self.counts = counts.astype(np.int64)
        self.starts = np.concatenate([[0], np.cumsum(self.counts)[:-1]])
        self.after = self.counts.sum() - np.cumsum(self.counts)
        inside = self.counts * (self.counts + 1) // 2
        # per group: whether its own pairs are positive, and the rows of later groups sharing a label / not
        self.inside_positive = np.ones(len(counts), dtype=bool) if self.sets is None else self.sets.any(axis=1)
        if self.sets is not None:
            self._index_labels()
        self.shared_after = np.zeros_like(self.after) if self.sets is None else self._shared_after()
        self.unshared_after = self.after - self.shared_after
        pos = np.where(self.inside_positive, inside, 0) + self.counts * self.shared_after
        neg = np.where(self.inside_positive, 0, inside) + self.counts * self.unshared_after
        self.pos_cum = np.cumsum(pos)
        self.neg_cum = np.cumsum(neg)
        self.num_positive = int(self.pos_cum[-1])
        self.num_negative = int(self.neg_cum[-1])

    def _index_labels(self) -> None:
        """Posting lists of the label sets, so that the groups sharing a label with one group are found from its
        few labels, not by comparing its set with every other group's (groups times labels per lookup).

        ``_post_groups`` holds, label by label, the groups with that label in ascending order; ``_post_keys`` is
        ``label * groups + group`` for each of them (ascending: a binary search finds a label's groups after a
        given group) and ``_post_ends`` where each label's run ends. ``_labels_of`` holds each group's labels,
        group by group, from ``_labels_ptr[g]`` to ``_labels_ptr[g + 1]``; ``_bits[:, g]`` group g's set as bits.
        """
        assert self.sets is not None
        total, width = self.sets.shape
        label_of, self._post_groups = np.nonzero(self.sets.T)
        self._post_keys = label_of * total + self._post_groups
        self._post_ends = np.cumsum(np.bincount(label_of, minlength=width))
        owner, self._labels_of = np.nonzero(self.sets)
        self._labels_ptr = np.concatenate([[0], np.cumsum(np.bincount(owner, minlength=total))])
        # the label sets as bits, 64 labels a word, word by word (one group against all later ones is then
        # a few contiguous runs of words)
        packed = np.packbits(self.sets, axis=1)
        packed = np.pad(packed, ((0, 0), (0, -packed.shape[1] % 8)))
        self._bits = np.ascontiguousarray(np.ascontiguousarray(packed).view(np.uint64).T)

    def _later_spans(self, groups: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For each ``(group, label)``: the span ``lo:hi`` of ``_post_groups`` holding the groups after ``group``
        that have ``label``."""
        lo = np.searchsorted(self._post_keys, labels * len(self.counts) + groups, side="right")
        return lo, self._post_ends[labels]

    def _shared_after(self) -> np.ndarray:
        """Per group, the rows of the later groups whose label set shares a label with the group's.

        From the posting lists when the pairs of groups sharing a label are few next to groups squared times
        labels (many distinct, small label sets), else by matrix products over blocks of groups (few groups or
        dense label sets, where the products are cheaper). Both are exact; temporary memory stays bounded.
        """
        assert self.sets is not None
        total, width = self.sets.shape
        owner = np.repeat(np.arange(total), np.diff(self._labels_ptr))
        lo, hi = self._later_spans(owner, self._labels_of)
        # work before each group's entries: the (group, later group) candidates the posting lists give
        before = np.concatenate([[0], np.cumsum(hi - lo)])[self._labels_ptr]
        if int(before[-1]) * _COUNT_COST >= total * total * width:
            return self._shared_after_dense()
        shared = np.zeros(total, dtype=np.int64)
        first = 0
        while first < total:
            last = max(first + 1, int(np.searchsorted(before, before[first] + _CHUNK, side="right")) - 1)
            a, b = self._labels_ptr[first], self._labels_ptr[last]
            positions = _spans(lo[a:b], hi[a:b])
            # a later group sharing several labels comes once per label: count it once
            codes = _distinct(np.repeat(owner[a:b], hi[a:b] - lo[a:b]) * total + self._post_groups[positions])
            if len(codes):
                group, later = np.divmod(codes, total)
                heads = np.flatnonzero(np.concatenate([[True], group[1:] != group[:-1]]))
                shared[group[heads]] = np.add.reduceat(self.counts[later], heads)
            first = last
        return shared

    def _shared_after_dense(self) -> np.ndarray:
        """`_shared_after` by matrix products of blocks of groups with the groups from the block on (temporary
        memory bounded, never groups squared)."""
        assert self.sets is not None
        sets = self.sets.astype(np.float32)
        total = len(sets)
        shared = np.zeros(total, dtype=np.int64)
        step = max(1, 2**22 // total)
        for start in range(0, total, step):
            stop = min(start + step, total)
            later = np.arange(total - start)[None, :] > np.arange(stop - start)[:, None]
            shared[start:stop] = ((sets[start:stop] @ sets[start:].T > 0) & later) @ self.counts[start:]
        return shared

    def _later_sharing(self, g: int) -> np.ndarray:
        """The groups after ``g`` whose label set shares a label with g's, ascending: from the posting lists of
        g's labels, or by intersecting the bit sets where those lists are long next to the later groups' bits."""
        words, total = self._bits.shape
        labels = self._labels_of[self._labels_ptr[g]:self._labels_ptr[g + 1]]
        lo, hi = self._later_spans(np.full(len(labels), g), labels)
        if int((hi - lo).sum()) * _LOOKUP_COST <= (total - g - 1) * words:
            return _distinct(self._post_groups[_spans(lo, hi)])
        return g + 1 + np.flatnonzero((self._bits[:, g + 1:] & self._bits[:, g:g + 1]).any(axis=0))

    def positive(self, k: int) -> tuple[int, int]:
        """The ``k``-th positive pair: two sentence indices."""
        g = int(np.searchsorted(self.pos_cum, k, side="right"))
        t = k - (int(self.pos_cum[g - 1]) if g else 0)
        return self._pair(g, t, bool(self.inside_positive[g]), shared=True)

    def negative(self, k: int) -> tuple[int, int]:
        """The ``k``-th negative pair: two sentence indices."""
        g = int(np.searchsorted(self.neg_cum, k, side="right"))
        t = k - (int(self.neg_cum[g - 1]) if g else 0)
        return self._pair(g, t, not self.inside_positive[g], shared=False)

    def _pair(self, g: int, t: int, inside: bool, shared: bool) -> tuple[int, int]:
        """Pair ``t`` of group ``g``'s pairs of one kind: those inside the group first (when ``inside``: every
        ``i <= j``, row-major), then each of its rows with each row of the later groups that share a label with
        it (``shared``) or do not."""
        start, m = int(self.starts[g]), int(self.counts[g])
        if inside:
            if t < m * (m + 1) // 2:
                i, j = triangle_pairs(t, m)
                return int(self.order[start + i]), int(self.order[start + j])
            t -= m * (m + 1) // 2
        a, b = divmod(t, int((self.shared_after if shared else self.unshared_after)[g]))
        return int(self.order[start + a]), self._later_row(g, b, shared)

    def _later_row(self, g: int, index: int, shared: bool) -> int:
        """Row ``index`` of the rows of the groups after ``g`` whose label set shares a label with g's
        (``shared``) or does not (for class ids: every later row)."""
        end = int(self.starts[g] + self.counts[g])
        if self.sets is None:
            return int(self.order[end + index])
        groups = self._later_sharing(g)
        ends = np.cumsum(self.counts[groups])
        if shared:
            h = int(np.searchsorted(ends, index, side="right"))
            return int(self.order[int(self.starts[groups[h]]) + index - (int(ends[h - 1]) if h else 0)])
        # the other later rows are those after g's less the sharing groups' runs; before sharing group j lie
        # gaps[j] of them, so row ``index`` is past every sharing group with gaps[j] <= index
        gaps = self.starts[groups] - end - (ends - self.counts[groups])
        j = int(np.searchsorted(gaps, index, side="right"))
        return int(self.order[end + index + (int(ends[j - 1]) if j else 0)])


def _distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values, ascending, by a sort (``np.unique``'s hashing is several times slower on these)."""
    values = np.sort(values)
    return values[np.concatenate([[True], values[1:] != values[:-1]])] if len(values) else values


def _spans(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """The indices of the spans ``lo[i]:hi[i]``, one after the other."""
    lengths = hi - lo
    return np.repeat(lo - (np.cumsum(lengths) - lengths), lengths) + np.arange(int(lengths.sum()))


def pair_counts(space: PairSpace, strategy: str, num_iterations: int | None, num_sentences: int) -> tuple[int, int]:
    """Positive and negative pairs per epoch for setfit's sampling strategies."""
    if num_iterations is not None:
        return num_iterations * num_sentences, num_iterations * num_sentences
    p, n = space.num_positive, space.num_negative
    if strategy == "oversampling":
        return max(p, n), max(p, n) if n else 0
    if strategy == "undersampling":
        return min(p, n), min(p, n)
    return p, n


class PairSampler:
    """setfit's contrastive pairs (`PairSpace`), generated lazily: yields batches of ``(i, j, target)`` arrays.

    ``max_rows`` is the most sentences a batch holds: two per pair (``2 * batch_size``), at most the data's.
    """

    def __init__(self, labels: np.ndarray, batch_size: int, seed: int, sampling_strategy: str = "oversampling",
                 num_iterations: int | None = None, rank: int = 0, world_size: int = 1) -> None:
        self.labels = np.asarray(labels)
        self.space = PairSpace(self.labels)
        self.batch_size = batch_size
        self.max_rows = min(2 * batch_size, len(self.labels))
        self.seed = seed
        self.rank, self.world_size = rank, world_size
        self.num_pos, self.num_neg = pair_counts(self.space, sampling_strategy, num_iterations, len(self.labels))
        self.num_pairs = self.num_pos + self.num_neg

    def __len__(self) -> int:
        """Batches per epoch on this rank."""
        return math.ceil(math.ceil(self.num_pairs / self.batch_size) / self.world_size)

    def _stream(self, total: int, available: int, decode, seed: int) -> Iterator[tuple[int, int]]:
        cycle = 0
        while total > 0:
            perm = LazyPermutation(available, seed * 1_000_003 + cycle)
            for index in range(min(total, available)):
                yield decode(perm[index])
            total -= available
            cycle += 1

    def _interleaved(self, seed: int) -> Iterator[tuple[int, int, float]]:
        """Positives and negatives alternately, one epoch's worth per cycle, forever."""
        cycle = 0
        while True:
            pos = self._stream(self.num_pos, self.space.num_positive, self.space.positive, seed + 2 * cycle)
            neg = self._stream(self.num_neg, self.space.num_negative, self.space.negative, seed + 2 * cycle + 1)
            for p, n in zip_longest(pos, neg):
                if p is not None:
                    yield p[0], p[1], 1.0
                if n is not None:
                    yield n[0], n[1], 0.0
            cycle += 1

    def epoch(self, epoch: int) -> Iterator[dict[str, np.ndarray]]:
        """This rank's batches of one epoch, deterministic in seed and epoch.

        With several ranks the epoch is padded with the next cycle's pairs so every rank runs the same steps.
        """
        stream = self._interleaved(self.seed * 7919 + epoch * 104729)
        total = self.num_pairs if self.world_size == 1 else len(self) * self.world_size * self.batch_size
        for position in range(len(self) * self.world_size):
            batch = list(islice(stream, min(self.batch_size, total - position * self.batch_size)))
            if position % self.world_size == self.rank:
                yield _pairs_to_batch(batch)


def _pairs_to_batch(batch: list[tuple[int, int, float]]) -> dict[str, np.ndarray]:
    """Unique sentences of a pair batch and the pairs as indices into them."""
    first = np.array([p[0] for p in batch], dtype=np.int64)
    second = np.array([p[1] for p in batch], dtype=np.int64)
    sentences, inverse = np.unique(np.concatenate([first, second]), return_inverse=True)
    inverse = inverse.reshape(-1)
    return {
        "indices": sentences,
        "pair_index": np.stack([inverse[: len(batch)], inverse[len(batch):]], axis=1),
        "pair_target": np.array([p[2] for p in batch], dtype=np.float32),
    }


class SentenceBatchSampler:
    """Class-balanced batches of sentence indices, each class present in a batch where it fits.

    Each class keeps a shuffled queue of its examples (refilled, reshuffled, when empty): memory is linear in
    the data. With ``K`` groups and batch size ``B``: when ``2K <= B`` every batch holds every group, ``B // K``
    rows each (the remainder to groups drawn at random), otherwise each batch holds ``B // 2`` groups (two
    rows each), rotating through all groups. Every batch is full and holds its groups equally however skewed
    the data: a group smaller than its share (2 examples for a share of 5) is drawn with replacement, its
    examples repeated in the batch (each about ``share / size`` times), so a 32 / 8 / 2 set trains
    on as many same-class pairs of its 2-example class as of its 32-example class. An epoch is
    ``batches_per_epoch`` batches (default: one pass's worth, ``ceil(N / B)``); a small group is thus seen
    many times an epoch, a large one once at most. Deterministic in ``seed`` and the epoch.
    ``replacement=False`` caps a group at its size in each batch (batches are then short of small groups).
    ``max_rows`` is the most sentences a batch holds: the batch size.
    """

    def __init__(self, labels: np.ndarray, batch_size: int, seed: int, rank: int = 0, world_size: int = 1,
                 batches_per_epoch: int | None = None, replacement: bool = True) -> None:
        if batch_size < 2:
            raise ValueError("the sentence-batch objective needs batch_size >= 2")
        self.keys = group_keys(np.asarray(labels))
        # each group's rows ascending, as np.flatnonzero(keys == k) gives them, in one sort
        _, counts = np.unique(self.keys, return_counts=True)
        order = np.argsort(self.keys, kind="stable")
        self.groups = np.split(order, np.cumsum(counts)[:-1]) if len(order) else []
        self.batch_size = self.max_rows = min(batch_size, len(self.keys))
        self.seed, self.replacement = seed, replacement
        self.rank, self.world_size = rank, world_size
        total = batches_per_epoch or math.ceil(len(self.keys) / self.batch_size)
        self.batches_per_rank = math.ceil(total / world_size)

    def __len__(self) -> int:
        return self.batches_per_rank

    def epoch(self, epoch: int) -> Iterator[dict[str, np.ndarray]]:
        rng = np.random.default_rng([self.seed, epoch])
        queues = [list(rng.permutation(g)) for g in self.groups]
        k = len(self.groups)
        group_order = list(rng.permutation(k))
        cursor = 0
        for position in range(self.batches_per_rank * self.world_size):
            if 2 * k <= self.batch_size:
                chosen = list(rng.permutation(k))
                per_group = [self.batch_size // k + (1 if i < self.batch_size % k else 0) for i in range(k)]
            else:
                n_groups = max(1, self.batch_size // 2)
                chosen = []
                while len(chosen) < n_groups:
                    if cursor == len(group_order):
                        group_order, cursor = list(rng.permutation(k)), 0
                    if group_order[cursor] not in chosen:
                        chosen.append(group_order[cursor])
                    cursor += 1
                per_group = [2] * n_groups
                per_group[0] += self.batch_size - 2 * n_groups
            indices: list[int] = []
            for group, count in zip(chosen, per_group):
                for _ in range(count if self.replacement else min(count, len(self.groups[group]))):
                    if not queues[group]:
                        queues[group] = list(rng.permutation(self.groups[group]))
                    indices.append(int(queues[group].pop()))
            if position % self.world_size == self.rank:
                yield {"indices": np.array(indices, dtype=np.int64)}


class WithAnchors:
    """Wraps a batch sampler: every batch also holds label-anchor rows (``first .. first + count - 1``, the anchor of
    class ``k`` at ``first + k``) at its end, so a loss can find them as its last ``per_batch`` rows.

    By default (``per_batch`` None) every anchor rides in every batch. With ``per_batch`` (and the batch rows'
    ``labels``), each batch holds ``per_batch`` anchors (at least the most sentences a batch of ``sampler`` holds,
    its ``max_rows``: the batch size for sentence batches, twice it for pairs; at most ``count``): those of the
    classes in the batch, then others drawn at random (deterministic in ``seed`` and the epoch), so the rows a
    step encodes do not grow with the number of classes. A sampler without ``max_rows`` gets every anchor."""

    def __init__(self, sampler: Any, first: int, count: int, per_batch: int | None = None,
                 labels: np.ndarray | None = None, seed: int = 0) -> None:
        self.sampler, self.first, self.count, self.seed = sampler, first, count, seed
        self.anchors = np.arange(first, first + count, dtype=np.int64)
        rows = getattr(sampler, "max_rows", count)  # a batch's classes: at most one per row
        self.per_batch = count if per_batch is None else min(count, max(per_batch, rows))
        self.labels = None if labels is None else np.asarray(labels)
        if self.per_batch < count and (self.labels is None or self.labels.ndim != 1):
            raise ValueError("anchors per batch need the single-label class ids of the rows")

    def __len__(self) -> int:
        return len(self.sampler)

    def epoch(self, epoch: int) -> Iterator[dict[str, np.ndarray]]:
        rng = np.random.default_rng([self.seed, epoch, 7])
        for batch in self.sampler.epoch(epoch):
            anchors = self.anchors
            if self.per_batch < self.count:
                present = np.unique(self.labels[batch["indices"]])
                others = np.setdiff1d(np.arange(self.count), present)
                extra = rng.choice(others, self.per_batch - len(present), replace=False)
                anchors = self.first + np.concatenate([present, extra]).astype(np.int64)
            yield batch | {"indices": np.concatenate([batch["indices"], anchors])}
