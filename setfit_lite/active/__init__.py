"""Choosing what to label: `suggest_labels` picks the texts of an unlabelled pool worth a person's time.

- `suggest`: `suggest_labels`, the entry point (parameters checked before any work);
- `strategies`: the strategies behind ``strategy=`` and how ``"auto"`` picks one;
- `uncertainty`: informativeness from a head's probabilities;
- `diversity`: k-means representatives, the best text per cluster, the texts nearest a label name;
- `pool`: the pool's embeddings and probabilities from any predictor, in chunks;
- `params`: the parameters' rules (shared with ``setfit-lite suggest``).

Guide: docs/active_learning.md ("Choosing what to label").
"""

from __future__ import annotations

from .params import STRATEGIES
from .suggest import suggest_labels

__all__ = ["STRATEGIES", "suggest_labels"]
