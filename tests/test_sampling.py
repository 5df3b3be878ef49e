"""Lazy samplers: exact setfit pair counts, no materialised pair lists, balanced sentence batches."""

from __future__ import annotations

import numpy as np
import pytest

from setfit_lite.sampling import LazyPermutation, PairSampler, PairSpace, SentenceBatchSampler, pair_counts


def test_pair_space_enumerates_setfit_pairs_exactly():
    y = np.array([0, 0, 0, 1, 1, 2, 2, 2, 2, 2])
    space = PairSpace(y)
    pos = [space.positive(k) for k in range(space.num_positive)]
    neg = [space.negative(k) for k in range(space.num_negative)]
    # combinations with replacement inside each class: 3*4/2 + 2*3/2 + 5*6/2
    assert space.num_positive == 6 + 3 + 15 == len(set(pos))
    assert space.num_negative == 3 * 2 + 3 * 5 + 2 * 5 == len({tuple(sorted(p)) for p in neg})
    assert all(y[a] == y[b] for a, b in pos)
    assert all(y[a] != y[b] for a, b in neg)


@pytest.mark.parametrize("n", [1, 2, 7, 100, 1000, 4097])
def test_lazy_permutation_is_a_permutation(n):
    perm = LazyPermutation(n, seed=3)
    assert sorted(perm[i] for i in range(n)) == list(range(n))


def test_lazy_permutation_depends_on_seed():
    assert [LazyPermutation(1000, 1)[i] for i in range(10)] != [LazyPermutation(1000, 2)[i] for i in range(10)]


def test_setfit_strategies_counts_match_setfit():
    y = np.array([0] * 8 + [1] * 8)
    space = PairSpace(y)
    assert pair_counts(space, "oversampling", None, 16) == (72, 72)  # setfit: 144 pairs per epoch
    assert pair_counts(space, "undersampling", None, 16) == (64, 64)
    assert pair_counts(space, "unique", None, 16) == (72, 64)
    assert pair_counts(space, "oversampling", 20, 16) == (320, 320)


def test_pair_sampler_batches_cover_an_epoch_and_dedupe_sentences():
    y = np.array([0] * 8 + [1] * 8)
    sampler = PairSampler(y, batch_size=16, seed=42)
    batches = list(sampler.epoch(0))
    assert len(batches) == len(sampler) == 9
    targets = np.concatenate([b["pair_target"] for b in batches])
    assert len(targets) == 144 and targets.sum() == 72
    for b in batches:
        i, j = b["indices"][b["pair_index"][:, 0]], b["indices"][b["pair_index"][:, 1]]
        assert np.array_equal(y[i] == y[j], b["pair_target"] == 1.0)
        assert len(np.unique(b["indices"])) == len(b["indices"]) <= 32
    again = list(PairSampler(y, batch_size=16, seed=42).epoch(0))
    assert all(np.array_equal(a["indices"], b["indices"]) for a, b in zip(batches, again))
    other = list(sampler.epoch(1))
    assert not all(np.array_equal(a["pair_index"], b["pair_index"]) for a, b in zip(batches, other))


def test_pair_sampler_memory_is_linear_for_large_data():
    y = np.arange(40_000) % 2
    sampler = PairSampler(y, batch_size=16, seed=0)
    assert sampler.num_pairs > 10**8  # setfit would build this list; we only index it
    first = next(iter(sampler.epoch(0)))
    assert len(first["pair_target"]) == 16


def test_pair_sampler_ranks_partition_batches():
    y = np.array([0] * 8 + [1] * 8)
    r0 = list(PairSampler(y, 16, 42, rank=0, world_size=2).epoch(0))
    r1 = list(PairSampler(y, 16, 42, rank=1, world_size=2).epoch(0))
    assert len(r0) == len(r1) == 5
    assert not np.array_equal(r0[0]["pair_index"], r1[0]["pair_index"])


def test_sentence_batches_are_label_balanced():
    y = np.repeat(np.arange(4), 20)
    sampler = SentenceBatchSampler(y, batch_size=16, seed=0)
    for batch in sampler.epoch(0):
        counts = np.bincount(y[batch["indices"]], minlength=4)
        assert counts.tolist() == [4, 4, 4, 4]


def test_sentence_batches_with_many_classes_rotate_through_all_classes():
    y = np.repeat(np.arange(77), 3)
    sampler = SentenceBatchSampler(y, batch_size=16, seed=0)
    seen = set()
    for batch in sampler.epoch(0):
        labels = y[batch["indices"]]
        assert len(labels) == 16
        _, counts = np.unique(labels, return_counts=True)
        assert counts.min() >= 2  # every class in a batch has a positive pair
        seen.update(labels.tolist())
    assert len(seen) == 77


def test_sentence_batches_multi_label_and_shards():
    y = np.array([[1, 0], [0, 1], [1, 1], [1, 0], [0, 1], [1, 1]] * 4)
    s0 = SentenceBatchSampler(y, 8, 0, rank=0, world_size=2, batches_per_epoch=4)
    s1 = SentenceBatchSampler(y, 8, 0, rank=1, world_size=2, batches_per_epoch=4)
    b0, b1 = list(s0.epoch(0)), list(s1.epoch(0))
    assert len(b0) == len(b1) == 2
    assert not np.array_equal(b0[0]["indices"], b1[0]["indices"])
