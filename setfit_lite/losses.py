"""Losses over a batch of sentence embeddings: the in-batch pair-matrix loss and adapters for
sentence-transformers' losses. Each takes the embeddings of a batch (each sentence encoded once)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from sentence_transformers.sentence_transformer import losses as st_losses

from .config.loss_names import LOSSES, MNRL_LOSS, PAIR_LOSSES, RANKING_LOSSES, SUPCON_LOSS, TRIPLET_LOSSES, loss_name

__all__ = ["LOSSES", "PAIR_LOSSES", "RANKING_LOSSES", "TRIPLET_LOSSES", "EmbeddingDistillationLoss",
           "InBatchNegativesLoss", "LabelAnchorLoss", "PairMatrixLoss", "SimilarityDistillationLoss", "SupConLoss",
           "TripletLoss", "all_pairs", "build_loss", "rows", "same_label"]


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


class PairMatrixLoss(torch.nn.Module):
    """A pair loss on pairs of a batch of embeddings: either the given pairs or every pair of the batch.

    Each is sentence-transformers' own ``compute_loss_from_embeddings`` on the rows of the pairs:

    - ``CosineSimilarityLoss``: (cos(u, v) - target)^2, setfit's default;
    - ``ContrastiveLoss``: 0.5 * (target * d^2 + (1 - target) * relu(margin - d)^2), d the ``distance_metric``
      (default: cosine distance);
    - ``OnlineContrastiveLoss``: the contrastive loss on hard positives and hard negatives only;
    - ``CoSENTLoss`` / ``AnglELoss``: ranking losses (every same-label pair should be more similar than every
      different-label pair).

    With ``balance=True`` positives and negatives count equally, whatever their numbers in the batch (the balance
    of setfit's oversampling): the loss is 0.5 * the loss on the positive pairs + 0.5 * the loss on the negative
    pairs (sentence-transformers' Cosine and Contrastive losses are means, so this is the balanced mean). The
    ranking losses compare each positive with each negative, so they are balanced by construction.

    Args:
        name: The loss: one of `PAIR_LOSSES`.
        margin: The margin of the contrastive losses.
        balance: Whether positive and negative pairs count equally.
        distance_metric: The contrastive losses' distance (a sentence-transformers distance function); None for
            cosine distance.

    Raises:
        ValueError: A name that is not a pair loss.
    """

    def __init__(self, name: str = "CosineSimilarityLoss", margin: float = 0.25, balance: bool = True,
                 distance_metric: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None) -> None:
        super().__init__()
        if name not in PAIR_LOSSES:
            raise ValueError(f"{name!r} is not a pair loss; choose one of {PAIR_LOSSES}")
        self.name, self.margin, self.balance = name, margin, balance
        # OnlineContrastiveLoss: our hard-pair selection, then sentence-transformers' ContrastiveLoss on the
        # selected pairs (its own OnlineContrastiveLoss sums over both subsets at once, which cannot be balanced)
        st_name = "ContrastiveLoss" if name == "OnlineContrastiveLoss" else name
        kwargs: dict[str, Any] = {}
        if st_name == "ContrastiveLoss":
            kwargs["margin"] = margin
            if distance_metric is not None:
                kwargs["distance_metric"] = distance_metric
        # the model argument is only stored by these losses; the embeddings are computed by our loop
        self.inner = getattr(st_losses, st_name)(model=None, **kwargs)

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor | None = None,
                pair_index: torch.Tensor | None = None, pair_target: torch.Tensor | None = None) -> torch.Tensor:
        if pair_index is None:
            if labels is None:
                raise ValueError("PairMatrixLoss needs labels or explicit pairs")
            pair_index, pair_target = all_pairs(labels)
        assert pair_target is not None
        embeddings, target = embeddings.float(), pair_target.float()
        if self.name in RANKING_LOSSES:
            return self._loss(embeddings, pair_index, target)
        if self.name == "OnlineContrastiveLoss":
            keep = self._hard_pairs(embeddings, pair_index, target)
            if not keep.any():
                return embeddings.sum() * 0.0
            pair_index, target = pair_index[keep], target[keep]
        positive = target > 0.5
        if not self.balance or bool(positive.all()) or not bool(positive.any()):
            return self._loss(embeddings, pair_index, target)
        negative = ~positive
        return (0.5 * self._loss(embeddings, pair_index[positive], target[positive])
                + 0.5 * self._loss(embeddings, pair_index[negative], target[negative]))

    def _loss(self, embeddings: torch.Tensor, pair_index: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """sentence-transformers' loss on the pairs ``pair_index`` (rows gathered with `rows`)."""
        pairs = [rows(embeddings, pair_index[:, 0]), rows(embeddings, pair_index[:, 1])]
        return self.inner.compute_loss_from_embeddings(pairs, target)

    @torch.no_grad()
    def _hard_pairs(self, embeddings: torch.Tensor, pair_index: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """OnlineContrastiveLoss's selection: positives farther apart than the closest negative, negatives closer
        than the farthest positive (all positives, or all negatives, when the other kind is absent)."""
        distance = self.inner.distance_metric(embeddings[pair_index[:, 0]], embeddings[pair_index[:, 1]])
        pos, neg = target > 0.5, target <= 0.5
        inf = torch.tensor(float("inf"), device=distance.device)
        hard_pos = pos & (distance > (distance[neg].min() if neg.any() else -inf))
        hard_neg = neg & (distance < (distance[pos].max() if pos.any() else inf))
        return hard_pos | hard_neg


class TripletLoss(torch.nn.Module):
    """sentence-transformers' batch triplet losses applied to a batch of embeddings and class ids.

    Args:
        name: The loss: one of `TRIPLET_LOSSES` (`BatchAllTripletLoss`, `BatchHardTripletLoss`,
            `BatchSemiHardTripletLoss`, `BatchHardSoftMarginTripletLoss`).
        margin: The triplet margin (the soft-margin loss has none).
        distance_metric: A sentence-transformers distance function; None for the loss's default.

    Raises:
        ValueError: A name that is not a triplet loss.
    """

    def __init__(self, name: str, margin: float = 0.25, distance_metric: Callable | None = None) -> None:
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


class SupConLoss(torch.nn.Module):
    """Supervised contrastive loss (Khosla et al. 2020, https://arxiv.org/abs/2004.11362), setfit's ``SupConLoss``.

    On a batch of embeddings (L2-normalised here): for each anchor, the mean log-probability of its positives (same
    label; multi-hot rows: a shared label) under a softmax of ``cos / temperature`` over the other embeddings of the
    batch, scaled by ``temperature / base_temperature``; averaged over the anchors. Anchors without a positive in
    the batch are left out (setfit divides by their zero positives, which gives NaN). ``model`` is accepted for
    setfit's signature and not used (the loop computes the embeddings); with one view per sentence
    ``contrast_mode`` "all" and "one" are the same.

    Args:
        model: setfit's argument; accepted and unused.
        temperature: The softmax temperature (> 0).
        contrast_mode: `"all"` or `"one"` (the same with one view per sentence).
        base_temperature: The loss is scaled by `temperature / base_temperature` (> 0).

    Raises:
        ValueError: An unknown mode, or a temperature that is not positive.
    """

    def __init__(self, model: Any = None, temperature: float = 0.07, contrast_mode: str = "all",
                 base_temperature: float = 0.07) -> None:
        super().__init__()
        if contrast_mode not in ("all", "one"):
            raise ValueError(f"Unknown mode: {contrast_mode}")
        if not temperature > 0 or not base_temperature > 0:
            raise ValueError(f"temperature and base_temperature must be > 0, got {temperature}, {base_temperature}")
        self.model, self.temperature = model, temperature
        self.contrast_mode, self.base_temperature = contrast_mode, base_temperature

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor | None = None,
                pair_index: torch.Tensor | None = None, pair_target: torch.Tensor | None = None) -> torch.Tensor:
        if labels is None:
            raise ValueError("SupConLoss needs the batch's labels")
        normed = F.normalize(embeddings.float(), dim=-1)
        logits = normed @ normed.T / self.temperature
        others = ~torch.eye(len(normed), dtype=torch.bool, device=normed.device)
        log_prob = logits - torch.logsumexp(logits.masked_fill(~others, float("-inf")), dim=1, keepdim=True)
        positive = same_label(labels) & others
        count = positive.sum(dim=1)
        anchors = count > 0
        if not anchors.any():
            return embeddings.sum() * 0.0
        mean_log_prob = (log_prob * positive).sum(dim=1)[anchors] / count[anchors]
        return -(self.temperature / self.base_temperature) * mean_log_prob.mean()


class InBatchNegativesLoss(torch.nn.Module):
    """sentence-transformers' ``MultipleNegativesRankingLoss`` on a labelled sentence batch.

    Each sentence is a query whose positive is the next sentence of its class in the batch (cyclically); the
    other positives of the batch are its negatives, as in the loss's usual (anchor, positive) use. Sentences
    alone in their class in the batch are left out.

    Args:
        scale: The similarities' scale (the inverse of a softmax temperature).
    """

    def __init__(self, scale: float = 20.0) -> None:
        super().__init__()
        self.inner = st_losses.MultipleNegativesRankingLoss(model=None, scale=scale)

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor | None = None,
                pair_index: torch.Tensor | None = None, pair_target: torch.Tensor | None = None) -> torch.Tensor:
        if labels is None or labels.dim() != 1:
            raise ValueError(f"{MNRL_LOSS} needs single-label class ids")
        query, positive = _next_of_class(labels)
        if len(query) < 2:
            return embeddings.sum() * 0.0
        return self.inner.compute_loss_from_embeddings([rows(embeddings, query), rows(embeddings, positive)], None)


def _next_of_class(labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """For each row with a classmate in the batch: its index and the next classmate's (cyclically)."""
    order = torch.argsort(labels, stable=True)
    sorted_labels = labels[order]
    first = torch.ones_like(sorted_labels, dtype=torch.bool)
    first[1:] = sorted_labels[1:] != sorted_labels[:-1]
    group = torch.cumsum(first.long(), 0) - 1
    starts = torch.nonzero(first).flatten()
    sizes = torch.bincount(group)
    position = torch.arange(len(labels), device=labels.device) - starts[group]
    nxt = starts[group] + (position + 1) % sizes[group]
    keep = sizes[group] > 1
    return order[keep], order[nxt[keep]]


def build_loss(loss: object, margin: float = 0.25, distance_metric: Callable | None = None,
               balance: bool = True) -> torch.nn.Module:
    """The batch loss `TrainingArguments(loss=...)` trains with, from a name or a sentence-transformers loss class.

    Args:
        loss: A name of `LOSSES` or the sentence-transformers class (or setfit's `SupConLoss`).
        margin: The margin of the contrastive and triplet losses (the cosine and ranking losses have none).
        distance_metric: Their distance function; None for the loss's default.
        balance: Whether a pair loss counts positive and negative pairs equally.

    Returns:
        A [`PairMatrixLoss`][setfit_lite.losses.PairMatrixLoss],
        [`TripletLoss`][setfit_lite.losses.TripletLoss], [`SupConLoss`][setfit_lite.losses.SupConLoss] or
        [`InBatchNegativesLoss`][setfit_lite.losses.InBatchNegativesLoss].

    Raises:
        ValueError: An unknown loss.
    """
    name = loss_name(loss)
    if name in PAIR_LOSSES:
        return PairMatrixLoss(name, margin=margin, balance=balance, distance_metric=distance_metric)
    if name in TRIPLET_LOSSES:
        return TripletLoss(name, margin=margin, distance_metric=distance_metric)
    if name == SUPCON_LOSS:
        return SupConLoss()
    if name == MNRL_LOSS:
        return InBatchNegativesLoss()
    raise ValueError(f"unknown loss {name!r}; choose one of {LOSSES}")


class SimilarityDistillationLoss(torch.nn.Module):
    """Distillation: the student's cosine similarities regress onto the teacher's, over every pair of a batch.

    The teacher's embeddings of all training texts are computed once and held here (normalised); the batch's
    ``labels`` are the row indices of its texts in that matrix. Cost grows with the texts, not with pairs.

    Args:
        teacher_embeddings: The teacher's embeddings of every training text `(n, dim)`.
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


class EmbeddingDistillationLoss(torch.nn.Module):
    """Distillation: the student's embeddings regress onto the teacher's (mean squared error per text, as
    sentence-transformers' ``MSELoss`` for model distillation), so the student learns the teacher's space itself.

    The teacher's embeddings of all training texts are computed once and held here; the batch's ``labels`` are the
    row indices of its texts in that matrix.

    Args:
        teacher_embeddings: The teacher's embeddings of every training text `(n, dim)`.
    """

    def __init__(self, teacher_embeddings: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("teacher", torch.as_tensor(teacher_embeddings).float(), persistent=False)

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor | None = None,
                pair_index: torch.Tensor | None = None, pair_target: torch.Tensor | None = None) -> torch.Tensor:
        if labels is None:
            raise ValueError("EmbeddingDistillationLoss needs the batch's row indices as labels")
        return (embeddings.float() - self.teacher[labels.long()]).pow(2).sum(-1).mean()


class LabelAnchorLoss(torch.nn.Module):
    """A batch loss plus a term that ties each sentence to the embedding of its class's label text.

    The last ``num_anchors`` rows of every batch are the anchors, label texts encoded by the body like the sentences
    (so the label texts move with the body); their ``labels`` say whose (every class in order, or a subset holding
    at least the batch's classes). The loss is
    ``inner(sentences) + weight * term`` with ``term``:

    - ``"softmax"`` (FastFit, Yehudai & Bandel 2024): cross-entropy of each sentence's class under a softmax of
      ``cos(sentence, anchor) / temperature`` over the anchors;
    - ``"pairs"`` (AncSetFit, Pauli et al. 2023): the balanced cosine-similarity loss on every (sentence, anchor)
      pair, target 1 for its own class and 0 otherwise.

    Args:
        inner: The loss on the sentences (such as `build_loss`'s).
        num_anchors: The anchor rows at the end of every batch.
        weight: The anchor term's weight.
        mode: `"softmax"` or `"pairs"`.
        temperature: The softmax temperature of `"softmax"`.

    Raises:
        ValueError: An unknown mode.
    """

    def __init__(self, inner: torch.nn.Module, num_anchors: int, weight: float = 1.0, mode: str = "softmax",
                 temperature: float = 0.05) -> None:
        super().__init__()
        if mode not in ("softmax", "pairs"):
            raise ValueError(f"unknown anchor loss {mode!r}; choose 'softmax' or 'pairs'")
        self.inner, self.num_anchors, self.weight = inner, num_anchors, weight
        self.mode, self.temperature = mode, temperature
        self.pair_loss = PairMatrixLoss("CosineSimilarityLoss") if mode == "pairs" else None

    def forward(self, embeddings: torch.Tensor, labels: torch.Tensor | None = None,
                pair_index: torch.Tensor | None = None, pair_target: torch.Tensor | None = None) -> torch.Tensor:
        if labels is None or labels.dim() != 1:
            raise ValueError("LabelAnchorLoss needs single-label class ids")
        n = embeddings.shape[0] - self.num_anchors
        sentences, classes = embeddings[:n], labels[:n]
        loss = self.inner(sentences, classes, pair_index, pair_target)
        if self.weight == 0:
            return loss
        anchor_classes = labels[n:]  # which class each anchor row is (all classes in order, or a batch's subset)
        if self.pair_loss is None:
            logits = F.normalize(sentences.float(), dim=-1) @ F.normalize(embeddings[n:].float(), dim=-1).T
            term = F.cross_entropy(logits / self.temperature, (classes[:, None] == anchor_classes).int().argmax(1))
        else:
            i = torch.arange(n, device=labels.device).repeat_interleave(self.num_anchors)
            k = torch.arange(self.num_anchors, device=labels.device).repeat(n)
            target = (classes[i] == anchor_classes[k]).float()
            term = self.pair_loss(embeddings, pair_index=torch.stack([i, n + k], dim=1), pair_target=target)
        return loss + self.weight * term
