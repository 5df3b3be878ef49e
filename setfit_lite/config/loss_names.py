"""The names of the embedding-phase losses, by family; `setfit_lite.losses` builds them.

Torch-free (``TrainingArguments`` checks ``loss`` against these names without importing torch).
"""

from __future__ import annotations

from typing import Any

__all__ = ["LOSSES", "MNRL_LOSS", "PAIR_LOSSES", "RANKING_LOSSES", "SUPCON_LOSS", "TRIPLET_LOSSES", "loss_name"]

# sentence-transformers' pair losses, on (sentence, sentence, same class?) pairs
PAIR_LOSSES = ("CosineSimilarityLoss", "ContrastiveLoss", "OnlineContrastiveLoss", "CoSENTLoss", "AnglELoss")
# sentence-transformers' losses that rank every positive pair above every negative one
RANKING_LOSSES = ("CoSENTLoss", "AnglELoss")
TRIPLET_LOSSES = ("BatchAllTripletLoss", "BatchHardTripletLoss", "BatchSemiHardTripletLoss",
                  "BatchHardSoftMarginTripletLoss")
# setfit's own loss (setfit_lite.losses.SupConLoss), on the embeddings of a sentence batch like the triplet losses
SUPCON_LOSS = "SupConLoss"
# sentence-transformers' in-batch-negatives loss, on (sentence, another sentence of its class) pairs of a batch
MNRL_LOSS = "MultipleNegativesRankingLoss"
LOSSES = PAIR_LOSSES + TRIPLET_LOSSES + (SUPCON_LOSS, MNRL_LOSS)


def loss_name(loss: Any) -> str:
    """The name of ``loss``: a name, or a loss class (its ``__name__``)."""
    return loss if isinstance(loss, str) else getattr(loss, "__name__", str(loss))
