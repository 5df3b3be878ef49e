"""Optimizers and LR schedule of the loop (asked of the backend), and word-embedding freezing."""

from __future__ import annotations

import math

import torch
from transformers import get_linear_schedule_with_warmup

from trainers import Backend

from ..training_args import TrainingArguments

LARGE_VOCABULARY = 100_000


def body_optimizer(backend: Backend, body: torch.nn.Module, args: TrainingArguments) -> torch.optim.Optimizer:
    """The optimizer of the contrastive (or distillation) phase: AdamW over the body's trainable parameters."""
    params = [p for p in body.parameters() if p.requires_grad]
    return backend.make_optimizer([{"params": params, "lr": args.body_embedding_learning_rate}], weight_decay=0.01)


def end_to_end_optimizer(backend: Backend, body: torch.nn.Module, head: torch.nn.Module,
                         args: TrainingArguments) -> torch.optim.Optimizer:
    """The optimizer of ``end_to_end`` head training: the body and the head, each at its learning rate."""
    return backend.make_optimizer([
        {"params": list(body.parameters()), "lr": args.body_classifier_learning_rate},
        {"params": list(head.parameters()), "lr": args.head_learning_rate},
    ], weight_decay=args.l2_weight or 0.0)


def linear_schedule(optimizer: torch.optim.Optimizer, total_steps: int,
                    warmup_proportion: float) -> torch.optim.lr_scheduler.LambdaLR:
    """transformers' linear decay after ``warmup_proportion`` of ``total_steps`` of warm-up."""
    return get_linear_schedule_with_warmup(optimizer, math.ceil(total_steps * warmup_proportion), total_steps)


def input_embeddings(body: torch.nn.Module) -> torch.nn.Module | None:
    """The word-embedding layer of the body's transformer (``get_input_embeddings()``), or None if it has none."""
    for module in body.modules():
        getter = getattr(module, "get_input_embeddings", None)
        if callable(getter):
            try:
                return getter()
            except NotImplementedError:
                continue
    return None


def freeze_word_embeddings(body: torch.nn.Module, freeze: bool | None) -> None:
    """Freeze (or unfreeze) the body's word-embedding matrix; ``None`` freezes it only for large vocabularies.

    With more than `LARGE_VOCABULARY` rows (XLM-R-style multilingual bodies: 250k x 384 for
    multilingual-e5-small, 96M of its 118M parameters) the matrix dominates the optimizer's time, and a few
    steps on a few sentences barely move it: on 8-shot English tweets, e5 English-only training scored the same
    in every language frozen or not (benchmarks/README.md) and trained ~1.8x as fast frozen.
    """
    embeddings = input_embeddings(body)
    if embeddings is None:
        return
    for param in embeddings.parameters():
        frozen = freeze if freeze is not None else param.shape[0] > LARGE_VOCABULARY
        param.requires_grad_(not frozen)
