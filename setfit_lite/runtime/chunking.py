"""Long texts: token windows with overlap, and the pooling of window embeddings into one embedding per text.

A body reads at most ``max_length`` tokens. With ``long_text="truncate"`` a longer text is cut to its first
``max_length`` tokens (what sentence-transformers and setfit do). With ``long_text="chunk"`` the text's tokens are
split into windows of ``max_length`` tokens (special tokens and prompt included in each window) where consecutive
windows share ``chunk_overlap`` tokens (at most half the window's text tokens: a larger setting is capped there,
so that windows always advance), every window is embedded, and the window embeddings are pooled into the text's
embedding (``chunk_pooling``): ``"mean"``, ``"max"`` (per dimension) or ``"weighted"`` (mean weighted by
each window's count of text tokens, so a short last window counts less). A text that fits one window gets its
window's embedding, bit for bit the truncated one.

The torch (``SetFitModel``) and ONNX (``OnnxSetFitModel``) tiers embed through `split_windows` and
`pool`; the static tier has no max length (a text's embedding is the mean of all its token rows, which is
already length-free) and does not chunk.

Torch-free: numpy and the standard library only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config.params import CHUNK_POOLINGS, LONG_TEXT_MODES, check_param

__all__ = ["CHUNK_POOLINGS", "DEFAULT_CHUNKING", "LONG_TEXT_MODES", "Chunking", "Windows", "affixes",
           "first_window", "pool", "split_windows", "window_width"]

# what a saved model without these keys did: it was trained and predicted on truncated texts
LEGACY = {"long_text": "truncate", "chunk_overlap": 0, "chunk_pooling": "mean"}


@dataclass(frozen=True)
class Chunking:
    """How texts longer than the body's max length are read; saved with a model and applied by every tier.

    Args:
        long_text: `"chunk"` (default) splits a long text into windows and pools their embeddings; `"truncate"`
            reads its first window only (what sentence-transformers and setfit do).
        chunk_overlap: The tokens consecutive windows share (>= 0; at most half a window's text tokens, so that
            windows always advance).
        chunk_pooling: How window embeddings are pooled: `"mean"`, `"max"` (per dimension) or `"weighted"` (a
            mean weighted by each window's text tokens, so a short last window counts less).

    Raises:
        TypeError: A value of the wrong type.
        ValueError: A value out of range.
    """

    # defaults chosen on bbc_news's validation split (docs/benchmarks/long_documents.md)
    long_text: str = "chunk"
    chunk_overlap: int = 0
    chunk_pooling: str = "mean"

    def __post_init__(self) -> None:
        for name in ("long_text", "chunk_overlap", "chunk_pooling"):
            object.__setattr__(self, name, check_param(name, getattr(self, name)))

    @property
    def enabled(self) -> bool:
        return self.long_text == "chunk"

    def to_config(self) -> dict[str, Any]:
        """The JSON fields a saved model and its ONNX export record."""
        return {"long_text": self.long_text, "chunk_overlap": self.chunk_overlap, "chunk_pooling": self.chunk_pooling}

    @classmethod
    def from_config(cls, config: Mapping[str, Any], given: Mapping[str, Any] | None = None) -> Chunking:
        """The setting a config records (a config without it: truncation, as such a model was trained), each
        field replaced by a ``given`` value that is not None."""
        values = {name: config.get(name, default) for name, default in LEGACY.items()}
        values.update({name: value for name, value in (given or {}).items() if value is not None})
        return cls(**values)

DEFAULT_CHUNKING = Chunking()


def affixes(encode: Callable[[list[str], bool], list[list[int]]], prompt: str | None) -> tuple[list[int], list[int]]:
    """``(prefix, suffix)``: the ids a tokenised text has before its own tokens (special tokens, the prompt's)
    and after them, found by tokenising a one-token text with and without special tokens.
    ``encode(texts, add_special_tokens)`` gives unpadded ids."""
    plain = encode(["a"], False)[0]
    full = encode([(prompt or "") + "a"], True)[0]
    at = next((i for i in range(len(full) - len(plain), -1, -1) if full[i:i + len(plain)] == plain), None)
    if at is None:  # the tokenizer merged the prompt into the text: keep the special tokens around the text
        bare = encode(["a"], True)[0]
        at = next(i for i in range(len(bare)) if bare[i:i + len(plain)] == plain)
        return bare[:at], bare[at + len(plain):]
    return full[:at], full[at + len(plain):]


@dataclass(frozen=True)
class Windows:
    """The windows of a batch of texts: ``token_ids`` (each at most the max length), ``doc`` (the text each
    window comes from, ascending), ``weight`` (the text tokens each window holds) and ``n_docs``."""

    token_ids: list[list[int]]
    doc: np.ndarray
    weight: np.ndarray
    n_docs: int

    @property
    def single(self) -> bool:
        """Whether every text is one window (pooling is then the identity)."""
        return len(self.token_ids) == self.n_docs


def window_width(max_length: int, prefix: Sequence[int], suffix: Sequence[int]) -> int:
    """The text tokens a window holds: ``max_length`` less the ``prefix`` (special and prompt tokens) and ``suffix``.

    Args:
        max_length: The body's max length (tokens a window holds in all).
        prefix: The ids every window starts with (`affixes`).
        suffix: The ids every window ends with.

    Returns:
        The width, at least 1.

    Raises:
        ValueError: The prefix and suffix leave no room for text (a prompt as long as the max length); a
            chunking model cannot embed any text then, so the trainer checks this before it trains.
    """
    width = max_length - len(prefix) - len(suffix)
    if width < 1:
        raise ValueError(f"a window of max length {max_length} has no room for text after its {len(prefix)} "
                         f"prefix (special and prompt) and {len(suffix)} suffix tokens")
    return width


def split_windows(token_ids: Sequence[Sequence[int]], max_length: int, overlap: int, prefix: Sequence[int],
                  suffix: Sequence[int]) -> Windows:
    """Split each tokenised text (``prefix + text tokens + suffix``) longer than ``max_length`` into windows
    ``prefix + tokens[start:start + width] + suffix``, ``width = max_length - len(prefix) - len(suffix)``,
    starts ``width - overlap`` apart, until a window reaches the last token; shorter texts are one window as they
    are. Every token is in a window; consecutive windows of a text share ``overlap`` tokens, capped at
    ``width // 2``."""
    prefix, suffix = list(prefix), list(suffix)
    width = window_width(max_length, prefix, suffix)
    step = width - min(overlap, width // 2)
    windows: list[list[int]] = []
    doc: list[int] = []
    weight: list[int] = []
    for index, ids in enumerate(token_ids):
        ids = list(ids)
        if len(ids) <= max_length:
            windows.append(ids)
            doc.append(index)
            weight.append(max(len(ids) - len(prefix) - len(suffix), 1))
            continue
        body = ids[len(prefix):len(ids) - len(suffix)]
        start = 0
        while True:
            part = body[start:start + width]
            windows.append(prefix + part + suffix)
            doc.append(index)
            weight.append(len(part))
            if start + width >= len(body):
                break
            start += step
    return Windows(windows, np.asarray(doc, dtype=np.int64), np.asarray(weight, dtype=np.float32), len(token_ids))


def first_window(token_ids: Sequence[int], max_length: int, suffix: Sequence[int]) -> list[int]:
    """A text's first window: its ids cut to ``max_length`` with ``suffix`` kept at the end (what the tokenizer's
    truncation gives)."""
    if len(token_ids) <= max_length:
        return list(token_ids)
    return list(token_ids[:max_length - len(suffix)]) + list(suffix)


def pool(embeddings: np.ndarray, windows: Windows, pooling: str, normalize: bool = False) -> np.ndarray:
    """One embedding per text from its windows' ``embeddings`` (rows in ``windows`` order): ``"mean"``,
    ``"max"`` (per dimension) or ``"weighted"`` (mean weighted by ``windows.weight``). A text of one window keeps
    its window's row exactly; with ``normalize`` pooled rows of several windows are L2-normalised again."""
    check_param("chunk_pooling", pooling)
    embeddings = np.asarray(embeddings, dtype=np.float32)
    if windows.single:
        return embeddings
    counts = np.bincount(windows.doc, minlength=windows.n_docs)
    if pooling == "max":
        out = np.full((windows.n_docs, embeddings.shape[1]), -np.inf, dtype=np.float32)
        np.maximum.at(out, windows.doc, embeddings)
    else:
        weight = windows.weight if pooling == "weighted" else np.ones(len(windows.doc), dtype=np.float32)
        out = np.zeros((windows.n_docs, embeddings.shape[1]), dtype=np.float64)
        np.add.at(out, windows.doc, embeddings * weight[:, None].astype(np.float64))
        out = (out / np.bincount(windows.doc, weights=weight, minlength=windows.n_docs)[:, None]).astype(np.float32)
    single = counts == 1
    out[single] = embeddings[np.searchsorted(windows.doc, np.flatnonzero(single))]
    if normalize:
        many = ~single
        out[many] /= np.linalg.norm(out[many], axis=1, keepdims=True) + 1e-12
    return out
