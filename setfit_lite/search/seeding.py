"""Seeding every random generator a trial or a training run draws from."""

from __future__ import annotations

__all__ = ["seed_everything"]


def seed_everything(seed: int) -> None:
    """``transformers.set_seed``: python, numpy, torch and every accelerator's generator.

    ``seed`` is a training seed (below 2**32, the range numpy takes, as ``TrainingArguments`` checks it).
    """
    from transformers import set_seed

    set_seed(seed)
