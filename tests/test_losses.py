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
