"""``SetFitDataset``: setfit's torch dataset of tokenised texts and labels, for training a differentiable head."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch.utils.data import Dataset

__all__ = ["SetFitDataset"]


class SetFitDataset(Dataset):
    """setfit's torch dataset of tokenised texts and their labels, for training a differentiable head by hand.

    `collate_fn` batches its items as `(features, labels)` with exactly the tokenizer's `model_input_names` as
    feature keys (int32) and labels as int64, or float for multi-hot rows.

    Args:
        x: The texts.
        y: Their labels: class ids, or multi-hot rows.
        tokenizer: A transformers tokenizer (the body's `model_body.tokenizer`).
        max_length: The tokens each text is padded or truncated to.

    Raises:
        ValueError: `x` and `y` of different lengths.
    """

    def __init__(self, x: Sequence[str], y: Sequence[Any], tokenizer: Any, max_length: int = 32) -> None:
        if len(x) != len(y):
            raise ValueError(f"SetFitDataset got {len(x)} texts but {len(y)} labels")
        self.x, self.y, self.tokenizer, self.max_length = x, y, tokenizer, max_length

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, idx: int) -> tuple[dict[str, list[int]], Any]:
        names = self.tokenizer.model_input_names
        feature = self.tokenizer(self.x[idx], max_length=self.max_length, padding="max_length", truncation=True,
                                 return_attention_mask="attention_mask" in names,
                                 return_token_type_ids="token_type_ids" in names)
        return {name: feature[name] for name in names if name in feature}, self.y[idx]

    def collate_fn(self, batch: Sequence[tuple[dict[str, list[int]], Any]]) -> tuple[dict[str, torch.Tensor],
                                                                                     torch.Tensor]:
        """Batch items of this dataset, for a `torch.utils.data.DataLoader`'s `collate_fn`.

        Args:
            batch: `(features, label)` items.

        Returns:
            `(features, labels)`: int32 tensors by input name, and the labels (int64, or float for multi-hot rows).
        """
        features = {name: torch.tensor([f[name] for f, _ in batch], dtype=torch.int32) for name in batch[0][0]}
        labels = torch.tensor([label for _, label in batch])
        return features, labels.long() if labels.dim() == 1 else labels.float()
