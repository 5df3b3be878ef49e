"""Seeding every random generator a trial or a training run draws from."""

from __future__ import annotations

__all__ = ["seed_everything"]


def seed_everything(seed: int) -> None:
    """``transformers.set_seed``: python, numpy, torch and every accelerator's generator.

    numpy takes seeds below 2**32 only and ``TrainingArguments`` allows up to 2**63 - 1, so the seed is taken
    mod 2**32 (unchanged for every seed below 2**32; the samplers take the whole seed).
    """
    from transformers import set_seed

    set_seed(seed % 2**32)
