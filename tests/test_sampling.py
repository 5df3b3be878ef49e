"""Lazy samplers: exact setfit pair counts, no materialised pair lists, balanced sentence batches."""

from __future__ import annotations

import math

import numpy as np
import pytest

from setfit_lite.training.batch_samplers import (
    LazyPermutation,
    PairSampler,
    PairSpace,
    SentenceBatchSampler,
    pair_counts,
)


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


def pairs_of(batch: dict) -> list[tuple[int, int, float]]:
    """The (i, j, target) pairs of a pair batch, in sentence indices."""
    first, second = batch["indices"][batch["pair_index"][:, 0]], batch["indices"][batch["pair_index"][:, 1]]
    return list(zip(first.tolist(), second.tolist(), batch["pair_target"].tolist()))


def interleave(shards: list[list]) -> list:
    """The ranks' batches in step order: step s of rank r is the epoch's batch s * world_size + r."""
    return [batch for step in zip(*shards) for batch in step]


@pytest.mark.parametrize("world_size", [2, 3])
def test_pair_sampler_ranks_are_disjoint_and_cover_the_epoch(world_size):
    y = np.array([0] * 4 + [1] * 4)  # "unique": each of the 20 positive and 16 negative pairs once; 6 batches of 6
    space = PairSpace(y)
    every_pair = {(i, j, 1.0) for i, j in map(space.positive, range(space.num_positive))}
    every_pair |= {(i, j, 0.0) for i, j in map(space.negative, range(space.num_negative))}
    shards = [[pairs_of(b) for b in PairSampler(y, 6, 42, "unique", rank=r, world_size=world_size).epoch(0)]
              for r in range(world_size)]
    assert [len(shard) for shard in shards] == [6 // world_size] * world_size
    per_rank = [[pair for batch in shard for pair in batch] for shard in shards]
    assert sum(len(pairs) for pairs in per_rank) == len(every_pair) == 36  # no pair twice, on one rank or two
    assert set().union(*map(set, per_rank)) == every_pair
    single = [pairs_of(b) for b in PairSampler(y, 6, 42, "unique").epoch(0)]
    assert interleave(shards) == single  # the ranks split the one-process epoch by position


def test_pair_sampler_ranks_pad_the_epoch_to_equal_steps():
    y = np.array([0] * 8 + [1] * 8)  # 144 pairs: 9 batches of 16, so 2 ranks run 5 steps, the last one padding
    shards = [[pairs_of(b) for b in PairSampler(y, 16, 42, rank=r, world_size=2).epoch(0)] for r in range(2)]
    assert [len(shard) for shard in shards] == [5, 5]
    assert all(len(batch) == 16 for shard in shards for batch in shard)
    single = [pairs_of(b) for b in PairSampler(y, 16, 42).epoch(0)]
    assert interleave(shards)[:9] == single


@pytest.mark.parametrize("world_size", [2, 4])
def test_sentence_batch_ranks_are_disjoint_and_cover_the_epoch(world_size):
    y = np.repeat(np.arange(4), 8)  # 4 batches of 8 (2 per class): one epoch draws each sentence exactly once
    shards = [[b["indices"].tolist() for b in SentenceBatchSampler(y, 8, 0, rank=r, world_size=world_size).epoch(0)]
              for r in range(world_size)]
    assert [len(shard) for shard in shards] == [4 // world_size] * world_size
    per_rank = [[i for batch in shard for i in batch] for shard in shards]
    assert sorted(i for indices in per_rank for i in indices) == list(range(len(y)))
    single = [b["indices"].tolist() for b in SentenceBatchSampler(y, 8, 0).epoch(0)]
    assert interleave(shards) == single
    padded = [[b["indices"].tolist() for b in SentenceBatchSampler(y, 8, 0, rank=r, world_size=world_size,
                                                                      batches_per_epoch=5).epoch(0)]
              for r in range(world_size)]
    assert [len(shard) for shard in padded] == [math.ceil(5 / world_size)] * world_size
    single = [b["indices"].tolist() for b in SentenceBatchSampler(y, 8, 0, batches_per_epoch=5).epoch(0)]
    assert interleave(padded)[:5] == single


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
    single = [b["indices"].tolist() for b in SentenceBatchSampler(y, 8, 0, batches_per_epoch=4).epoch(0)]
    assert interleave([[b["indices"].tolist() for b in b0], [b["indices"].tolist() for b in b1]]) == single


def test_one_same_label_rule() -> None:
    """The pair targets come from ``losses.same_label`` alone (the sampler's numpy twin is gone)."""
    import torch

    import setfit_lite.training.batch_samplers as sampling
    from setfit_lite.losses import same_label

    assert not hasattr(sampling, "same_label_matrix")
    multi = torch.tensor([[1, 0, 1], [0, 1, 1], [1, 0, 0], [0, 1, 0]])
    assert same_label(multi).tolist() == [[True, True, True, False], [True, True, False, True],
                                          [True, False, True, False], [False, True, False, True]]
