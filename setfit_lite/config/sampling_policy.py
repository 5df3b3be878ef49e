"""How the embedding phase samples its batches and how long an epoch is: the objectives, setfit's pair-sampling
strategies, the steps-per-epoch floor of sentence batches and each objective's default body learning rates.

The samplers that draw the batches are in `setfit_lite.training.batch_samplers`. Torch- and numpy-free
(``TrainingArguments`` checks and documents its fields with these).
"""

from __future__ import annotations

import math

__all__ = ["MAX_FLOOR_STEPS", "OBJECTIVES", "SAMPLING_STRATEGIES", "default_body_learning_rate",
           "steps_per_epoch_floor"]

OBJECTIVES = ("sentence_batch", "pairs")
SAMPLING_STRATEGIES = ("oversampling", "undersampling", "unique")
MAX_FLOOR_STEPS = 384  # the cap of the default steps-per-epoch floor (see TrainingArguments)


def steps_per_epoch_floor(num_classes: int, num_texts: int = 0, batch_size: int = 16) -> int:
    """The default least number of sentence batches an epoch has for K classes and N texts in batches of b: the
    larger of ``K**2`` (4 to 32) and ``1.75 * N(N-1) / (b(b-1))`` (each pair in a batch about 1.75 times), at
    most `MAX_FLOOR_STEPS`."""
    by_classes = min(32, max(4, num_classes**2))
    b = max(2, batch_size)
    by_pairs = math.ceil(1.75 * num_texts * (num_texts - 1) / (b * (b - 1))) if num_texts > 1 else 0
    return min(MAX_FLOOR_STEPS, max(by_classes, by_pairs))


def default_body_learning_rate(objective: str) -> tuple[float, float]:
    """The ``(embedding phase, classifier phase)`` body learning rates of ``objective``: ``(1e-4, 1e-5)`` for
    sentence batches (each step averages ~120 pairs), setfit's ``(2e-5, 1e-5)`` for pairs."""
    return (1e-4 if objective == "sentence_batch" else 2e-5, 1e-5)
