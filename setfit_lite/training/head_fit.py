"""The head's features and its fitting.

The head is fitted and evaluated on the embeddings ``predict`` computes (:meth:`SetFitModel.embed_tokens`, in
fp32, whatever precision trained the body), so it is applied to features of the precision it was fitted on.
Measured against fitting it on the bf16-autocast embeddings of the same trained bodies (MiniLM-L6, seeds 0-2,
full test splits, prediction in fp32): SST-2 8-shot 0.6011 against 0.6013, Emotion 8-shot 0.3880 against 0.3873,
one or two test sentences per run either way.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from trainers import Backend

from ..heads.linear import is_lr
from ..training_args import TrainingArguments


def embed(model: Any, tokens: list[list[int]]) -> np.ndarray:
    """Embeddings of tokenised texts as the head sees them at prediction time."""
    return model.embed_tokens(tokens)


def gather_embeddings(model: Any, tokens: list[list[int]], backend: Backend) -> np.ndarray:
    """Embeddings of all ``tokens``: each rank embeds its share, rank order restores the input order."""
    positions = np.fromiter(backend.iter_shard(range(len(tokens))), dtype=np.int64)
    local = embed(model, [tokens[i] for i in positions])
    if not backend.is_distributed:
        return local
    out = np.empty((len(tokens), local.shape[1]), dtype=np.float32)
    for pos, emb in backend.gather_object((positions, local)):
        out[pos] = emb
    return out


def fit_head(head: Any, embeddings: np.ndarray, ids: np.ndarray, args: TrainingArguments) -> None:
    """Fit ``head`` on fixed embeddings: a torch head with the classifier-phase arguments, others as estimators."""
    if isinstance(head, torch.nn.Module):
        head.fit(embeddings, ids, epochs=args.classifier_num_epochs, lr=args.head_learning_rate,
                 batch_size=args.classifier_batch_size, weight_decay=args.l2_weight or 0.0, seed=args.seed)
    else:
        head.fit(embeddings, ids)


def add_label_prior(head: Any, embeddings: np.ndarray, anchors: np.ndarray, temperature: float) -> str | None:
    """Fold the label texts into a fitted logistic-regression head as a prior; returns why not, or None.

    The head's probabilities are multiplied by a softmax over ``cos(embedding, label text) / temperature`` and
    renormalised. With unit-length embeddings that product is again a logistic regression: class ``k``'s
    weights gain ``anchor_k / temperature`` (binary heads: ``(anchor_1 - anchor_0) / temperature``), so the head
    keeps its type, its files and its ONNX graph. Needs unit-length embeddings (cosine = dot product) and a plain
    single-label ``LogisticRegression``.
    """
    estimator = getattr(head, "estimator", None)
    if not is_lr(estimator) or getattr(head, "multi_label", False):
        return "the head is not a single-label LogisticRegression"
    if not np.allclose(np.linalg.norm(embeddings, axis=1), 1.0, atol=1e-3):
        return "the embeddings are not unit length (cosine is not a dot product)"
    scaled = anchors / np.linalg.norm(anchors, axis=1, keepdims=True) / temperature
    classes = estimator.classes_
    if estimator.coef_.shape[0] == 1:
        estimator.coef_ = estimator.coef_ + (scaled[classes[1]] - scaled[classes[0]])[None, :]
    else:
        estimator.coef_ = estimator.coef_ + scaled[classes]
    return None
