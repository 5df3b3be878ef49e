"""``suggest_labels``: which texts of an unlabelled pool to label next, for a model with or without a fitted head."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ..config.params import check_param
from .params import check_exclude, check_k_left, check_label_names_arg, check_pool, check_suggest_param
from .pool import PoolView, can_embed, has_fitted_head
from .strategies import NEEDS_HEAD, Request, resolve, select

__all__ = ["suggest_labels"]

logger = logging.getLogger(__name__)


def suggest_labels(model: Any, texts: Sequence[str], k: int, exclude: Iterable[int] = (), *, strategy: str = "auto",
                   label_names: Sequence[str] | None = None, seed: int = 0, batch_size: int = 64) -> list[int]:
    """The indices of ``k`` texts of ``texts`` to label next: distinct, none in ``exclude``, the same for a seed.

    A text the pool holds more than once is suggested once (its first copy the strategy reaches), and not at all
    when a copy of it is in ``exclude``, while the texts not excluded hold ``k`` distinct texts that are not
    excluded; copies make up the rest only when fewer are left. Texts are compared as the model reads them
    (`setfit_lite.data.checks.text_key`: ignoring case, Unicode form, spacing and invisible characters).

    A model without a fitted head (a fresh ``SetFitModel.from_pretrained(body)``) gets a cold start: for each label
    name, the text its name claims most surely (names encoded as training encodes them), then texts diverse and
    representative of the pool by the body's embeddings (k-means, the text nearest each centre). A model with a
    fitted head (trained, or exported with ``SetFitModel.from_static``/``from_onnx``, which score a large pool
    fastest) gets informative texts: of those nearest its decision boundary, ``k`` that are typical of them and not
    all alike (k-means, the text nearest each centre), and a class it has never seen labelled (a column of zeros,
    as the logistic-regression head gives it) is searched for by its name. ``strategy`` names the alternatives
    (`setfit_lite.active.strategies`).

    Everything is checked before any text is embedded.

    Args:
        model: a ``SetFitModel`` (with or without a fitted head) or an exported model.
        texts: the pool: a list of non-empty strings (the indices returned are positions in it).
        k: how many texts to suggest, at most the number not in ``exclude``.
        exclude: indices of texts not to suggest (those already labelled or suggested).
        strategy: "auto" (default), "random", "cold_start_kmeans", "uncertainty", "margin_diverse",
            "margin_typical", "typical", "class_typical" or "mixed" (docs/active_learning.md, "Strategies").
        label_names: the classes' names to search the pool for (default: the model's ``labels`` when they are
            names; ``[]``: no search). With a fitted head, one name per column of ``predict_proba``.
        seed: seeds k-means and the random draw, an integer in [0, 2**32 - 1]: the same seed, model and pool
            give the same indices.
        batch_size: texts per forward pass.

    Returns:
        ``k`` distinct indices of ``texts``, none in ``exclude``, of distinct texts not excluded while enough are
        left, the first ones found by name (if any).

    Raises:
        TypeError: a parameter of the wrong type (texts that are not strings, a non-integer ``k`` or index), or a
            model that neither embeds texts nor gives probabilities.
        ValueError: ``k <= 0`` or more than the texts left, an index of ``exclude`` out of range, a ``seed``
            outside [0, 2**32 - 1], an empty pool or text, an unknown strategy, or one that needs a fitted head on
            a model without one.

    Examples:
        >>> from setfit_lite import SetFitModel, suggest_labels
        >>> model = SetFitModel.from_pretrained("sentence-transformers/all-MiniLM-L6-v2",
        ...                                     labels=["negative", "positive"])
        >>> pool = ["a dull film", "a wonderful film", "I loved it", "it bored me", "the plot"]
        >>> to_label = suggest_labels(model, pool, k=2)  # cold start: one text per label name
    """
    k = check_suggest_param("k", k)
    strategy = check_suggest_param("strategy", strategy)
    seed = check_suggest_param("seed", seed)
    batch_size = check_param("batch_size", batch_size)
    if not (can_embed(model) or callable(getattr(model, "class_proba", None))):
        raise TypeError(f"model must be a SetFitModel or an exported model (SetFitModel.from_static/from_onnx), got "
                        f"{type(model).__name__}")
    texts = check_pool(texts)
    excluded = check_exclude(exclude, len(texts))
    left = check_k_left(k, len(texts), excluded)
    names = check_label_names_arg(label_names)
    fitted = has_fitted_head(model)
    name = resolve(strategy, fitted)
    if name in NEEDS_HEAD and not fitted:
        raise ValueError(f"strategy={strategy!r} chooses by the head's probabilities, and this model has no fitted "
                         "head: train it first, or use strategy='auto' or 'cold_start_kmeans' (a cold start)")
    if not fitted and not can_embed(model):
        raise TypeError(f"{type(model).__name__} has neither a fitted head nor embeddings to choose by")
    if names is None:
        labels = getattr(model, "labels", None) or []
        names = list(labels) if labels and all(isinstance(label, str) for label in labels) else []
    elif fitted and names and len(names) != len(model.labels):
        raise ValueError(f"label_names has {len(names)} names but the model's head has {len(model.labels)} classes: "
                         "give one name per column of predict_proba, in the model's labels order")
    view = PoolView(model, texts, batch_size)
    req = Request(view, np.setdiff1d(np.arange(len(texts)), excluded), k, seed)
    if name != "random" and names and can_embed(model):
        search = tuple(range(len(names))) if not fitted else \
            tuple(int(j) for j in np.flatnonzero(view.proba().max(axis=0) <= 0.0))
        if search:
            from ..training.label_policy import label_texts

            req.names, req.search = view.encode(label_texts(names)), search
    picks = select(name, req)
    logger.info("suggest_labels: %d of %d texts by %s%s", k, left, name,
                f" ({min(k, len(req.search))} found by label name)" if req.search else "")
    assert len(picks) == k and len(set(picks)) == k and not np.isin(picks, excluded).any(), picks
    return picks
