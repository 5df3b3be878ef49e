"""What the strategies read of the pool: its embeddings (unit length) and the head's probabilities, from any
predictor, computed once each and in chunks of `STREAM_CHUNK` texts.

A ``SetFitModel`` with a fitted head embeds each chunk once and gives the head those embeddings (one body pass for
both views); a fresh ``SetFitModel.from_pretrained(body)`` (no fitted head) has embeddings only. The static tier
(``SetFitModel.from_static``) gives both from one pass too (``encode_with_proba``: its static sentence embeddings,
what its head reads, and the head's probabilities). An ONNX export (``SetFitModel.from_onnx``) gives probabilities
only (``class_proba``): its probability rows stand in for embeddings where a strategy needs a geometry (diversity).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..runtime.predictor import STREAM_CHUNK, temper

__all__ = ["PoolView", "can_embed", "has_fitted_head", "unit_rows"]


def has_fitted_head(model: Any) -> bool:
    """Whether ``model`` gives probabilities: a ``SetFitModel`` once its head is fitted (``model_head`` set, with
    ``labels``), an exported model always."""
    if not callable(getattr(model, "class_proba", None)):
        return False
    if hasattr(model, "model_body"):
        return getattr(model, "model_head", None) is not None and getattr(model, "labels", None) is not None
    return True


def can_embed(model: Any) -> bool:
    """Whether ``model`` embeds texts (``encode``): a ``SetFitModel`` and the static tier do, ONNX exports do not."""
    return callable(getattr(model, "encode", None))


def unit_rows(x: np.ndarray) -> np.ndarray:
    """``x`` (float32) with each row scaled to unit length (zero rows stay zero)."""
    x = np.asarray(x, dtype=np.float32)
    return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


class PoolView:
    """The pool ``texts`` as ``model`` sees it: `embeddings` and `proba`, each computed on first use.

    Args:
        model: a ``SetFitModel`` (fitted or not) or an exported model (any ``Predictor``).
        texts: the validated pool.
        batch_size: texts per forward pass.
    """

    def __init__(self, model: Any, texts: list[str], batch_size: int) -> None:
        self.model, self.texts, self.batch_size = model, texts, batch_size
        self.fitted = has_fitted_head(model)
        self.multi_label = bool(getattr(model, "multi_label", False)) if self.fitted else False
        self._embeddings: np.ndarray | None = None
        self._proba: np.ndarray | None = None

    def embeddings(self) -> np.ndarray:
        """(n, dim) unit-length embeddings of the pool (an ONNX export: its probability rows, unit length)."""
        if self._embeddings is None:
            if self._one_pass():
                self._both()
            elif can_embed(self.model):
                self._embeddings = unit_rows(np.concatenate([self.model.encode(chunk, batch_size=self.batch_size)
                                                             for chunk in self._chunks()]))
            else:
                self._embeddings = unit_rows(self.proba())
        assert self._embeddings is not None
        return self._embeddings

    def proba(self) -> np.ndarray:
        """(n, classes) probabilities of the pool (calibrated as ``predict_proba`` gives them), float32."""
        if not self.fitted:
            raise ValueError("this model has no fitted head: it gives no probabilities to choose by")
        if self._proba is None:
            if self._one_pass():
                self._both()
            else:
                self._proba = np.asarray(self.model.class_proba(self.texts, batch_size=self.batch_size),
                                         dtype=np.float32)
        assert self._proba is not None
        return self._proba

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit-length embeddings of other ``texts`` (the label names' texts), as the pool's are made."""
        return unit_rows(self.model.encode(texts, batch_size=self.batch_size))

    def _one_pass(self) -> bool:
        """A fitted ``SetFitModel`` (its head reads the embeddings) or the static tier (``encode_with_proba``):
        one pass over the pool gives both views."""
        return self.fitted and (hasattr(self.model, "model_body") or callable(getattr(self.model, "encode_with_proba",
                                                                                      None)))

    def _both(self) -> None:
        model, embeddings, proba = self.model, [], []
        if not hasattr(model, "model_body"):
            emb, self._proba = model.encode_with_proba(self.texts, batch_size=self.batch_size)
            self._embeddings = unit_rows(emb)
            return
        temperature = 1.0 if self.multi_label else model.calibration_temperature
        for chunk in self._chunks():
            emb = model.encode(chunk, batch_size=self.batch_size)
            proba.append(temper(np.asarray(model.model_head.predict_proba(emb), dtype=np.float32), temperature))
            embeddings.append(emb)
        self._embeddings, self._proba = unit_rows(np.concatenate(embeddings)), np.concatenate(proba)

    def _chunks(self) -> list[list[str]]:
        return [self.texts[start:start + STREAM_CHUNK] for start in range(0, len(self.texts), STREAM_CHUNK)]
