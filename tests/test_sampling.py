"""Lazy samplers: exact setfit pair counts, no materialised pair lists, balanced sentence batches."""

from __future__ import annotations

import math
import tracemalloc
from itertools import islice

import numpy as np
import pytest
import torch
from conftest import make_sentences

from setfit_lite.losses import same_label
from setfit_lite.sampler import ContrastiveDataset, shuffled_pair_indices
from setfit_lite.training.batch_samplers import (
    LazyPermutation,
    PairSampler,
    PairSpace,
    SentenceBatchSampler,
    WithAnchors,
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


# ------------------------------------------------------------------------------------------------ multi-label pairs


def test_pair_space_multi_hot_pairs_sharing_a_label_are_positive() -> None:
    """setfit's rule (and `same_label`'s): a shared label makes a positive pair, not only an equal label set."""
    rng = np.random.default_rng(5)
    hot = rng.integers(0, 2, size=(23, 4))
    hot[3] = 0  # a row without a label: negative even with itself
    hot[7] = hot[2]
    space = PairSpace(hot)
    pos = [tuple(sorted(space.positive(k))) for k in range(space.num_positive)]
    neg = [tuple(sorted(space.negative(k))) for k in range(space.num_negative)]
    every = {(i, j) for i in range(len(hot)) for j in range(i, len(hot))}
    shared = {(i, j) for i, j in every if (hot[i] & hot[j]).any()}
    assert sorted(pos) == sorted(shared)  # each pair once
    assert sorted(neg) == sorted(every - shared)
    setfit = ContrastiveDataset([f"s{i}" for i in range(len(hot))], hot.tolist(), multilabel=True)
    assert (space.num_positive, space.num_negative) == (len(setfit.pos_pairs), len(setfit.neg_pairs))


def test_pair_sampler_multi_hot_targets_are_same_label() -> None:
    hot = np.array([[1, 1, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]] * 3)
    batches = list(PairSampler(hot, 8, 0, "unique").epoch(0))
    for batch in batches:
        shared = same_label(torch.as_tensor(hot[batch["indices"]]))
        assert np.array_equal(shared[batch["pair_index"][:, 0], batch["pair_index"][:, 1]].numpy(),
                              batch["pair_target"] == 1.0)
    assert sum(len(b["pair_target"]) for b in batches) == 12 * 13 // 2


def test_pair_sampler_single_label_batches_are_unchanged() -> None:
    """The multi-hot rule leaves class-id sampling as it was: the same pairs for the same seed."""
    y = np.array([2, 0, 1, 0, 2, 2, 1, 0, 2])
    stream = PairSampler(y, 4, 42).epoch(1)
    assert [pairs_of(next(stream)) for _ in range(3)] == [
        [(1, 1, 1.0), (1, 5, 0.0), (4, 8, 1.0), (3, 4, 0.0)], [(2, 2, 1.0), (3, 2, 0.0), (7, 7, 1.0), (6, 8, 0.0)],
        [(3, 7, 1.0), (3, 6, 0.0), (3, 3, 1.0), (6, 0, 0.0)]]


# ------------------------------------------------------------------------------------------------ anchors per batch


def test_anchors_per_batch_cover_the_classes_of_a_pairs_batch() -> None:
    """A batch of 16 pairs holds up to 32 sentences (and classes): the anchors per batch are at least that many."""
    y = np.arange(200) % 40
    sampler = WithAnchors(PairSampler(y, 16, 0), first=200, count=40, per_batch=8, labels=y, seed=0)
    assert sampler.per_batch == 32
    for batch in islice(sampler.epoch(0), 30):
        rows, anchors = batch["indices"][:-32], batch["indices"][-32:] - 200
        assert len(np.unique(anchors)) == 32 and set(y[rows].tolist()) <= set(anchors.tolist())
    sentences = WithAnchors(SentenceBatchSampler(y, 16, 0), first=200, count=40, per_batch=8, labels=y)
    assert sentences.per_batch == 16  # a sentence batch holds its batch size


def test_pairs_objective_trains_with_anchors_per_batch_and_many_classes(tiny_body_path: str) -> None:
    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    base, _ = make_sentences(50, seed=0)
    data = {"text": [f"{base[i % 50]} {i}" for i in range(160)], "label": [f"class{i % 40}" for i in range(160)]}
    model = SetFitModel.from_pretrained(tiny_body_path)
    args = TrainingArguments(objective="pairs", max_steps=2, batch_size=16, anchors_per_batch=8, seed=0,
                             show_progress_bar=False)
    trainer = Trainer(model=model, args=args, train_dataset=data)
    trainer.train()
    assert trainer.state.global_step == 2 and model.training_info["label_anchors"]["used"]


# ------------------------------------------------------------------------------------------------ ContrastiveDataset


@pytest.mark.parametrize("n", [1, 2, 9, 40])
def test_contrastive_dataset_is_setfits_shuffled_triangle(n: int) -> None:
    """The pairs and their order are the upper triangle permuted by ``RandomState(42)``, as setfit makes them."""
    rng = np.random.default_rng(n)
    for labels, multilabel in ((rng.integers(0, 3, n), False), (rng.integers(0, 2, (n, 3)), True)):
        rows, cols = np.triu_indices(n)
        order = np.random.RandomState(seed=42).permutation(len(rows))
        first, second = rows[order], cols[order]
        positive = ((labels[first] & labels[second]).any(axis=1) if multilabel
                    else labels[first] == labels[second])
        for max_pairs in (-1, 6):
            data = ContrastiveDataset([f"s{i}" for i in range(n)], labels.tolist(), multilabel, max_pairs=max_pairs)
            keep = slice(None) if max_pairs == -1 else slice(max_pairs // 2)
            assert np.array_equal(data.pos_pairs.first, first[positive][keep])
            assert np.array_equal(data.pos_pairs.second, second[positive][keep])
            assert np.array_equal(data.neg_pairs.first, first[~positive][keep])
            assert np.array_equal(data.neg_pairs.second, second[~positive][keep])
        for replacement in (True, False):
            rows, cols = np.triu_indices(n, 0 if replacement else 1)
            order = np.random.RandomState(seed=42).permutation(len(rows))
            got = shuffled_pair_indices(n, 42, replacement)
            assert np.array_equal(got[0], rows[order]) and np.array_equal(got[1], cols[order])


def test_contrastive_dataset_build_takes_about_13_bytes_a_pair() -> None:
    n = 3000  # 4.5 million pairs
    sentences, labels = [f"s{i}" for i in range(n)], [i % 3 for i in range(n)]
    tracemalloc.start()
    try:
        data = ContrastiveDataset(sentences, labels, False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    pairs = n * (n + 1) // 2
    assert len(data.pos_pairs) + len(data.neg_pairs) == pairs
    assert peak / pairs < 16  # the int32 positions, a flag and the kept int32 index arrays (was ~40)
