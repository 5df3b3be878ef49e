"""The in-batch pair-matrix losses: exact values on every pair of a batch, and their ordering."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from sentence_transformers.sentence_transformer import losses as st_losses

from setfit_lite.losses import PAIR_LOSSES, all_pairs, build_loss


def batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(8, 5, generator=gen), torch.tensor([0, 0, 1, 1, 2, 2, 0, 1])


def test_cosine_loss_is_the_balanced_mean_over_every_pair():
    emb, labels = batch()
    pairs, target = all_pairs(labels)
    assert len(pairs) == 8 * 7 // 2
    cos = F.cosine_similarity(emb[pairs[:, 0]], emb[pairs[:, 1]])
    sq = (cos - target) ** 2
    expected = 0.5 * sq[target == 1].mean() + 0.5 * sq[target == 0].mean()
    assert torch.allclose(build_loss("CosineSimilarityLoss")(emb, labels), expected, atol=1e-6)
    assert torch.allclose(build_loss("CosineSimilarityLoss", balance=False)(emb, labels), sq.mean(), atol=1e-6)


@pytest.mark.parametrize("name", ["CoSENTLoss", "AnglELoss"])
def test_ranking_losses_match_sentence_transformers_on_the_batch_pairs(name):
    emb, labels = batch(1)
    pairs, target = all_pairs(labels)
    reference = getattr(st_losses, name)(model=None).compute_loss_from_embeddings(
        [emb[pairs[:, 0]], emb[pairs[:, 1]]], target)
    assert torch.allclose(build_loss(name)(emb, labels), reference, atol=1e-5)
    # explicit pairs (objective="pairs") give the same value as the batch's pairs
    assert torch.allclose(build_loss(name)(emb, pair_index=pairs, pair_target=target), reference, atol=1e-5)


@pytest.mark.parametrize("name", PAIR_LOSSES)
def test_pair_losses_prefer_embeddings_that_separate_the_classes(name):
    labels = torch.tensor([0, 0, 0, 1, 1, 1])
    gen = torch.Generator().manual_seed(0)
    a, b = torch.randn(2, 8, generator=gen)  # one direction per class (8 dims: AnglE reads 4 complex numbers)
    noise = 0.05 * torch.randn(6, 8, generator=gen)
    separated = torch.stack([a, a, a, b, b, b]) + noise
    mixed = torch.stack([a, b, a, b, a, b]) + noise
    loss = build_loss(name, margin=0.5)
    assert loss(separated, labels) < loss(mixed, labels)


def test_unknown_loss_names_the_choices():
    with pytest.raises(ValueError, match="CoSENTLoss"):
        build_loss("NoSuchLoss")


def _split_reference(loss, emb: torch.Tensor, pairs: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """0.5 x sentence-transformers' loss on the positive pairs + 0.5 x on the negative pairs."""
    def on(mask: torch.Tensor) -> torch.Tensor:
        return loss.compute_loss_from_embeddings([emb[pairs[mask, 0]], emb[pairs[mask, 1]]], target[mask])

    return 0.5 * on(target == 1) + 0.5 * on(target == 0)


@pytest.mark.parametrize("name", ["CosineSimilarityLoss", "ContrastiveLoss"])
def test_pair_losses_are_sentence_transformers_on_positives_and_negatives(name):
    emb, labels = batch(2)
    pairs, target = all_pairs(labels)
    kwargs = {"margin": 0.7} if name == "ContrastiveLoss" else {}
    reference = _split_reference(getattr(st_losses, name)(model=None, **kwargs), emb, pairs, target)
    assert torch.allclose(build_loss(name, margin=0.7)(emb, labels), reference, atol=1e-6)


def test_contrastive_losses_use_the_distance_metric():
    emb, labels = batch(3)
    pairs, target = all_pairs(labels)
    euclidean = st_losses.SiameseDistanceMetric.EUCLIDEAN
    reference = _split_reference(st_losses.ContrastiveLoss(model=None, distance_metric=euclidean, margin=5.0),
                                 emb, pairs, target)
    value = build_loss("ContrastiveLoss", margin=5.0, distance_metric=euclidean)(emb, labels)
    assert torch.allclose(value, reference, atol=1e-5)
    assert not torch.allclose(value, build_loss("ContrastiveLoss", margin=5.0)(emb, labels))  # not the cosine one
    online = build_loss("OnlineContrastiveLoss", margin=5.0, distance_metric=euclidean)
    assert online.inner.distance_metric is euclidean
    assert not torch.allclose(online(emb, labels), build_loss("OnlineContrastiveLoss", margin=5.0)(emb, labels))


def test_online_contrastive_keeps_the_hard_pairs_only():
    emb, labels = batch(4)
    pairs, target = all_pairs(labels)
    distance = 1 - F.cosine_similarity(emb[pairs[:, 0]], emb[pairs[:, 1]])
    pos, neg = target == 1, target == 0
    hard_pos = pos & (distance > distance[neg].min())
    hard_neg = neg & (distance < distance[pos].max())
    assert 0 < int(hard_pos.sum()) < int(pos.sum()) or 0 < int(hard_neg.sum()) < int(neg.sum())  # a real selection
    keep = hard_pos | hard_neg
    inner = st_losses.ContrastiveLoss(model=None, margin=0.5)
    expected = _split_reference(inner, emb, pairs[keep], target[keep])
    assert torch.allclose(build_loss("OnlineContrastiveLoss", margin=0.5)(emb, labels), expected, atol=1e-6)
    unbalanced = inner.compute_loss_from_embeddings([emb[pairs[keep, 0]], emb[pairs[keep, 1]]], target[keep])
    assert torch.allclose(build_loss("OnlineContrastiveLoss", margin=0.5, balance=False)(emb, labels), unbalanced,
                          atol=1e-6)
