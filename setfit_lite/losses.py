"""Losses over a batch of sentence embeddings: the in-batch pair-matrix loss and adapters for
sentence-transformers' losses. Each takes the embeddings of a batch (each sentence encoded once)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from sentence_transformers.sentence_transformer import losses as st_losses

from .training_args import PAIR_LOSSES, RANKING_LOSSES, TRIPLET_LOSSES

__all__ = ["PAIR_LOSSES", "RANKING_LOSSES", "TRIPLET_LOSSES", "PairMatrixLoss", "TripletLoss", "build_loss",
           "SimilarityDistillationLoss", "all_pairs", "balanced_mean", "rows", "same_label"]


def same_label(labels: torch.Tensor) -> torch.Tensor:
    """(n, n) bool: same class, or for multi-hot labels at least one shared label."""
    if labels.dim() == 1:
        return labels[:, None] == labels[None, :]
    hot = labels.float()
    return (hot @ hot.T) > 0


def rows(values: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``values[index]`` along dim 0, with a backward that gives the same gradient on every run.

    The backward of advanced indexing (``values[index]``) on CPU is ``index_put_(accumulate=True)``, which adds
    the rows of a repeated index from several threads in whatever order they finish: with two or more OpenMP
    threads the same seed then gave different models. ``index_select``'s backward (``index_add_``) adds them in
    index order. Measured cost: none (benchmarks/README.md, "Determinism").
    """
    return torch.index_select(values, 0, index)


def all_pairs(labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Every pair i < j of the batch and its target (1 same label, 0 otherwise)."""
    n = labels.shape[0]
    i, j = torch.triu_indices(n, n, offset=1, device=labels.device)
    return torch.stack([i, j], dim=1), same_label(labels)[i, j].float()


def balanced_mean(values: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Mean over positives and mean over negatives, weighted equally (the balance of setfit's oversampling)."""
    pos, neg = target > 0.5, target <= 0.5
    if pos.any() and neg.any():
        return 0.5 * values[pos].mean() + 0.5 * values[neg].mean()
    return values.mean()


class PairMatrixLoss(torch.nn.Module):
    """A pair loss on pairs of a batch of embeddings: either the given pairs or every pair of the batch.

    - ``CosineSimilarityLoss``: (cos(u, v) - target)^2, setfit's default;
    - ``ContrastiveLoss``: target * d^2 + (1 - target) * relu(margin - d)^2 with d = 1 - cos, as in
      sentence-transformers (which halves both terms);
    - ``OnlineContrastiveLoss``: the contrastive loss on hard positives and hard negatives only;
    - ``CoSENTLoss`` / ``AnglELoss``: sentence-transformers' ranking losses (every same-label pair should be
      more similar than every different-label pair), computed by sentence-transformers on the batch's pairs.

    With ``balance=True`` positives and negatives count equally, whatever their numbers in the batch (the
    ranking losses compare each positive with each negative, so they are balanced by construction).
    """

    def __init__(self, name: str = "CosineSimilarityLoss", margin: float = 0.25, balance: bool = True) -> None:
        super().__init__()
        if name not in PAIR_LOSSES:
            raise ValueError(f"{name!r} is not a pair loss; choose one of {PAIR_LOSSES}")
        self.name, self.margin, self.balance = name, margin, balance
        # the model argument is only stored by these losses; the embeddings are computed by our loop
        self.ranking = getattr(st_losses, name)(model=None) if name in RANKING_LOSSES else None

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor | None = None,
                pair_index: torch.Tensor | None = None, pair_target: torch.Tensor | None = None) -> torch.Tensor:
        if pair_index is None:
            if labels is None:
                raise ValueError("PairMatrixLoss needs labels or explicit pairs")
            pair_index, pair_target = all_pairs(labels)
        assert pair_target is not None
        if self.ranking is not None:
            pairs = [rows(embeddings, pair_index[:, 0]).float(), rows(embeddings, pair_index[:, 1]).float()]
            return self.ranking.compute_loss_from_embeddings(pairs, pair_target.float())
        normed = F.normalize(embeddings.float(), dim=-1)
        cos = (rows(normed, pair_index[:, 0]) * rows(normed, pair_index[:, 1])).sum(-1)
        target = pair_target.float()
        if self.name == "CosineSimilarityLoss":
            values = (cos - target) ** 2
        else:
            distance = 1.0 - cos
            values = 0.5 * (target * distance.pow(2) + (1 - target) * F.relu(self.margin - distance).pow(2))
            if self.name == "OnlineContrastiveLoss":
                pos, neg = target > 0.5, target <= 0.5
                hard_pos = pos & (distance > (distance[neg].min() if neg.any() else -1.0))
                hard_neg = neg & (distance < (distance[pos].max() if pos.any() else 2.0))
                keep = hard_pos | hard_neg
                if not keep.any():
                    return values.sum() * 0.0
                values, target = values[keep], target[keep]
                return values.sum() / max(1, int(keep.sum())) if not self.balance else balanced_mean(values, target)
        return balanced_mean(values, target) if self.balance else values.mean()


class TripletLoss(torch.nn.Module):
    """sentence-transformers' batch triplet losses applied to a batch of embeddings and class ids."""

    def __init__(self, name: str, margin: float = 0.25, distance_metric=None) -> None:
        super().__init__()
        if name not in TRIPLET_LOSSES:
            raise ValueError(f"{name!r} is not a triplet loss; choose one of {TRIPLET_LOSSES}")
        self.name = name
        cls = getattr(st_losses, name)
        kwargs = {}
        if distance_metric is not None:
            kwargs["distance_metric"] = distance_metric
        if name != "BatchHardSoftMarginTripletLoss":
            kwargs["margin"] = margin
        # the model argument is only stored by these losses; the embeddings are computed by our loop
        self.inner = cls(model=None, **kwargs) if "model" in cls.__init__.__code__.co_varnames else cls(**kwargs)
        self.compute = getattr(self.inner, {
            "BatchAllTripletLoss": "batch_all_triplet_loss",
            "BatchHardTripletLoss": "batch_hard_triplet_loss",
            "BatchSemiHardTripletLoss": "batch_semi_hard_triplet_loss",
            "BatchHardSoftMarginTripletLoss": "batch_hard_triplet_soft_margin_loss",
        }[name])

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor | None = None,
                pair_index: torch.Tensor | None = None, pair_target: torch.Tensor | None = None) -> torch.Tensor:
        if labels is None or labels.dim() != 1:
            raise ValueError(f"{self.name} needs single-label class ids")
        return self.compute(labels, embeddings.float())


def build_loss(loss: object, margin: float = 0.25, distance_metric=None, balance: bool = True) -> torch.nn.Module:
    """A batch loss from a name or a sentence-transformers loss class."""
    name = loss if isinstance(loss, str) else getattr(loss, "__name__", str(loss))
    if name in PAIR_LOSSES:
        return PairMatrixLoss(name, margin=margin, balance=balance)
    if name in TRIPLET_LOSSES:
        return TripletLoss(name, margin=margin, distance_metric=distance_metric)
    raise ValueError(f"unknown loss {name!r}; choose one of {PAIR_LOSSES + TRIPLET_LOSSES}")


class SimilarityDistillationLoss(torch.nn.Module):
    """Distillation: the student's cosine similarities regress onto the teacher's, over every pair of a batch.

    The teacher's embeddings of all training texts are computed once and held here (normalised); the batch's
    ``labels`` are the row indices of its texts in that matrix. Cost grows with the texts, not with pairs.
    """

    def __init__(self, teacher_embeddings: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("teacher", F.normalize(torch.as_tensor(teacher_embeddings).float(), dim=-1),
                             persistent=False)

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor | None = None,
                pair_index: torch.Tensor | None = None, pair_target: torch.Tensor | None = None) -> torch.Tensor:
        if labels is None:
            raise ValueError("SimilarityDistillationLoss needs the batch's row indices as labels")
        n = embeddings.shape[0]
        i, j = torch.triu_indices(n, n, offset=1, device=embeddings.device)
        teacher = self.teacher[labels.long()]
        target = (teacher[i] * teacher[j]).sum(-1)
        normed = F.normalize(embeddings.float(), dim=-1)
        return ((rows(normed, i) * rows(normed, j)).sum(-1) - target).pow(2).mean()
