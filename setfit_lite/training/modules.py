"""The modules a backend wraps (DDP, torch.compile, PopTorch): ``forward(**batch)`` returns the loss."""

from __future__ import annotations

import torch


class EmbeddingModule(torch.nn.Module):
    """The body and a batch loss (contrastive, triplet or distillation)."""

    def __init__(self, body: torch.nn.Module, loss: torch.nn.Module) -> None:
        super().__init__()
        self.body, self.loss = body, loss

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor,
                pair_index: torch.Tensor | None = None, pair_target: torch.Tensor | None = None) -> torch.Tensor:
        embeddings = self.body({"input_ids": input_ids, "attention_mask": attention_mask})["sentence_embedding"]
        return self.loss(embeddings, labels, pair_index, pair_target)


class ClassifierModule(torch.nn.Module):
    """Body and differentiable head trained together (``end_to_end``) on the head's loss."""

    def __init__(self, body: torch.nn.Module, head: torch.nn.Module, normalize: bool) -> None:
        super().__init__()
        self.body, self.head, self.normalize = body, head, normalize

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        embeddings = self.body({"input_ids": input_ids, "attention_mask": attention_mask})["sentence_embedding"]
        if self.normalize:
            embeddings = torch.nn.functional.normalize(embeddings, dim=-1)
        return self.head.loss(self.head(embeddings), labels)
