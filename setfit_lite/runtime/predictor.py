"""Prediction without torch: what ``SetFitModel`` and the exported ``OnnxSetFitModel`` share.

Texts are validated (`validated_chunks`: a list whole before any text is encoded, an iterator or a file as it is
read), streamed in chunks of `STREAM_CHUNK`, prompted and tokenised, batched by length; a model turns a chunk into
class probabilities (``_proba_chunk``) and `predict_ids` turns probabilities into classes by the one rule every
caller uses: a multi-label row is multi-hot at `MULTI_LABEL_THRESHOLD`, any other row is its argmax. A multi-label
probability of exactly the threshold is decided as the model's head decides it (`head_threshold_rule`): absent for
a scikit-learn head, present for the differentiable torch head; an exported model keeps its torch model's rule in
its config (`THRESHOLD_RULE_FIELD`).

This module imports only the standard library, numpy and ``setfit_lite.data`` (torch-free), and ``tokenizers`` when a
`TokenizerFile` is made, so that ONNX, OpenVINO and static inference never load torch or transformers.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np

from ..config.params import check_param, is_integer
from ..data import check_text_collection, encode_labels, validate_texts
from ..data.checks import is_listlike, short_repr
from ..data.readers import TABLE_SUFFIXES, numbered_lines, to_labeled_data
from .word_cache import WordCachedTokenizer, word_cache_applies

__all__ = [
    "MULTI_LABEL_THRESHOLD",
    "STREAM_CHUNK",
    "THRESHOLD_RULES",
    "THRESHOLD_RULE_FIELD",
    "Predictor",
    "TokenizerFile",
    "chunks",
    "decoded_lines",
    "head_threshold_rule",
    "iter_text_file",
    "labels_from_proba",
    "length_sorted_batches",
    "predict_ids",
    "temper",
    "text_stream",
    "threshold_rule_field",
    "tokenize_texts",
    "validated_chunks",
    "with_prompt",
]

STREAM_CHUNK = 8192
MULTI_LABEL_THRESHOLD = 0.5
#: how a multi-label probability of exactly `MULTI_LABEL_THRESHOLD` is decided: ">" (the label is absent, as a
#: scikit-learn head's ``predict`` decides) or ">=" (present, as setfit's differentiable torch head decides)
THRESHOLD_RULES = (">", ">=")
#: the field of an exported model's config holding its `THRESHOLD_RULES` rule; a folder without it decides ">="
THRESHOLD_RULE_FIELD = "multi_label_threshold_rule"
# what to pass instead of a bare str where texts are streamed (a str there could be a text or a file's name)
STREAM_STR_HINT = "pass [text] for one text or pathlib.Path(...) for a file of one text per line"
# a transformers fast tokenizer stores its truncation in the Rust tokenizer and changes it on a call asking for
# another length: a call in another thread meanwhile would truncate to the wrong length, so calls take turns
_TOKENIZE_LOCK = threading.Lock()


def with_prompt(texts: list[str], prompt: str | None) -> list[str]:
    """``texts`` with ``prompt`` prepended (unchanged without one)."""
    return [prompt + t for t in texts] if prompt else texts


def tokenize_texts(tokenizer: Any, texts: list[str], prompt: str | None, max_length: int | None,
                   truncate: bool = True) -> list[list[int]]:
    """Token ids (unpadded, truncated to ``max_length`` unless not ``truncate``) of ``texts`` with ``prompt``
    prepended; thread-safe."""
    with _TOKENIZE_LOCK:
        out = tokenizer(with_prompt(texts, prompt), truncation=truncate, max_length=max_length if truncate else None,
                        padding=False, return_attention_mask=False, return_token_type_ids=False,
                        verbose=truncate)  # untruncated ids longer than the model's limit are meant: no warning
    return out["input_ids"]


class TokenizerFile:
    """A ``tokenizer.json`` run by the ``tokenizers`` library alone: no transformers, no torch.

    Gives the ids the body's fast tokenizer gives (special tokens added, truncated to ``max_length``), and pads a
    batch with numpy. Importing ``tokenizers`` takes ~0.1 s here; ``transformers.PreTrainedTokenizerFast`` ~1-4 s.
    Where the tokenizer allows (a BERT-style one: `word_cache_applies`), the ids come from a `WordCachedTokenizer`
    (each space-separated word tokenised once), the special tokens and the truncation put on as the tokenizer's own
    post-processor and truncation would: the same ids, several times faster once the words are known.
    """

    def __init__(self, path: str | os.PathLike, max_length: int | None = None, pad_token: str | None = None) -> None:
        from tokenizers import Tokenizer

        self.backend = Tokenizer.from_file(str(path))
        padding = self.backend.padding or {}
        self.backend.no_padding()
        if max_length is not None:
            self.backend.enable_truncation(int(max_length))
        pad_id = self.backend.token_to_id(pad_token) if pad_token else None
        self.pad_id: int = int(pad_id if pad_id is not None else padding.get("pad_id", 0))
        self._encode = getattr(self.backend, "encode_batch_fast", self.backend.encode_batch)
        self._word_cache: WordCachedTokenizer | None = None
        self._specials: tuple[list[int], list[int]] | None = None
        self._word_cache_built = False  # built at the first use: loading a model stays as fast as the tokenizer's
        self._word_cache_lock = threading.Lock()

    @property
    def word_cache(self) -> WordCachedTokenizer | None:
        """The word cache the ids come from (None where `word_cache_applies` does not hold); settable (None: the
        tokenizer runs every text)."""
        if not self._word_cache_built:
            with self._word_cache_lock:
                if not self._word_cache_built:
                    self._build_word_cache()
        return self._word_cache

    @word_cache.setter
    def word_cache(self, cache: WordCachedTokenizer | None) -> None:
        with self._word_cache_lock:
            if not self._word_cache_built:
                self._build_word_cache()
            self._word_cache = cache

    def _build_word_cache(self) -> None:
        """The cache, on an untruncated copy of the tokenizer, and the special tokens it puts around a text's ids
        (None where they are not one fixed prefix and suffix). Only a WordPiece or word-level tokenizer can
        qualify: any other (a SentencePiece one of 250,000 pieces) is not copied at all."""
        from tokenizers import Tokenizer

        if type(self.backend.model).__name__ in {"WordPiece", "WordLevel"}:
            text = self.backend.to_str()
            if word_cache_applies(json.loads(text)):
                untruncated = Tokenizer.from_str(text)
                untruncated.no_truncation()
                self._word_cache = WordCachedTokenizer(untruncated)
                self._specials = _fixed_affixes(untruncated)
        self._word_cache_built = True

    @classmethod
    def from_folder(cls, folder: str | os.PathLike, max_length: int | None = None) -> TokenizerFile:
        """The folder's ``tokenizer.json``, padded with the ``pad_token`` of its ``tokenizer_config.json``."""
        folder = Path(folder)
        config_path = folder / "tokenizer_config.json"
        config = json.loads(config_path.read_text(encoding="utf-8")) if config_path.is_file() else {}
        pad_token = config.get("pad_token")
        if isinstance(pad_token, dict):  # an AddedToken written as a dict
            pad_token = pad_token.get("content")
        return cls(folder / "tokenizer.json", max_length=max_length, pad_token=pad_token)

    def encode(self, texts: list[str], add_special_tokens: bool = True) -> list[list[int]]:
        """Token ids of each text, unpadded."""
        limit = self._cached_limit(add_special_tokens)
        if limit is False:
            return [encoding.ids for encoding in self._encode(texts, add_special_tokens=add_special_tokens)]
        cache = self.word_cache
        assert cache is not None and self._specials is not None
        flat, lengths = cache.flat_ids(texts)
        ids, ends = flat.tolist(), np.cumsum(lengths).tolist()
        prefix, suffix = self._specials if add_special_tokens else ([], [])
        out, start = [], 0
        for end in ends:
            out.append([*prefix, *ids[start:end if limit is None else min(end, start + limit)], *suffix])
            start = end
        return out

    def _cached_limit(self, add_special_tokens: bool) -> int | None | bool:
        """The most ids of a text's own the word cache may keep (None: all), or False where the tokenizer runs: no
        cache, or a truncation the cache does not reproduce (from the left, with a stride, or shorter than the
        special tokens). Read at each call: the backend's truncation may have been changed since."""
        if self.word_cache is None or self._specials is None:
            return False
        truncation = self.backend.truncation
        if truncation is None:
            return None
        specials = sum(map(len, self._specials)) if add_special_tokens else 0
        if truncation.get("direction", "right") != "right" or truncation.get("stride", 0) \
                or truncation["max_length"] <= specials:
            return False
        return int(truncation["max_length"]) - specials

    def pad(self, token_ids: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
        """``(input_ids, attention_mask)``, int64 arrays padded (right) to the longest row."""
        lengths = np.fromiter((len(t) for t in token_ids), dtype=np.int64, count=len(token_ids))
        width = int(lengths.max()) if len(lengths) else 0
        mask = (np.arange(width)[None, :] < lengths[:, None]).astype(np.int64)
        ids = np.full((len(token_ids), width), self.pad_id, dtype=np.int64)
        ids[mask.astype(bool)] = np.fromiter((i for t in token_ids for i in t), dtype=np.int64,
                                             count=int(lengths.sum()))
        return ids, mask


def _fixed_affixes(backend: Any) -> tuple[list[int], list[int]] | None:
    """The ids the tokenizer's post-processor puts before and after a single text's (BERT: ``[CLS]`` and
    ``[SEP]``), or None where they are not the same around every text (checked on three probes)."""
    probes = ["a", "a b", "the end ."]
    plain = [backend.encode(p, add_special_tokens=False).ids for p in probes]
    full = [backend.encode(p, add_special_tokens=True).ids for p in probes]
    extra = len(full[0]) - len(plain[0])
    for start in range(extra + 1):
        prefix, suffix = full[0][:start], full[0][start + len(plain[0]):]
        if all(f == [*prefix, *q, *suffix] for f, q in zip(full, plain)):
            return prefix, suffix
    return None


def decoded_lines(handle: Iterable[bytes], name: str) -> Iterator[str]:
    """The lines of a binary stream as UTF-8 text, line end removed (`setfit_lite.data.readers.numbered_lines`:
    lines end at ``\\n``, ``\\r\\n`` or ``\\r`` only). A line that is not UTF-8 raises ValueError naming ``name``,
    the line (counted from 1) and the byte of the line where decoding failed."""
    return (line for _, line in numbered_lines(handle, name))


def text_lines(handle: Iterable[bytes], name: str) -> Iterator[str]:
    """The texts of a binary stream of one text per line: its non-blank `decoded_lines`."""
    return (line for line in decoded_lines(handle, name) if line.strip())


def iter_text_file(path: str | os.PathLike) -> Iterator[str]:
    """The non-blank lines of a UTF-8 text file, newline removed, read lazily (a file of any size)."""
    with open(path, "rb") as handle:
        yield from text_lines(handle, str(path))


def text_stream(inputs: Iterable[str] | os.PathLike) -> Iterable[str]:
    """The texts of ``inputs`` where texts are streamed: an ``os.PathLike`` is a UTF-8 file of one text per
    non-blank line (read lazily), or a .csv/.json/.jsonl/.parquet table whose ``text`` column is read (whole), an
    iterable gives the texts. TypeError, saying what to pass, for a bare ``str``
    (one text or a file's name?), bytes, a mapping (its keys are not texts to predict) or a non-iterable."""
    if isinstance(inputs, os.PathLike):
        if Path(inputs).suffix.lower() in TABLE_SUFFIXES:  # a table's text column, as `setfit-lite predict` reads it
            return to_labeled_data(inputs, require_labels=False, read_labels=False).texts
        return iter_text_file(inputs)
    check_text_collection(inputs, single=STREAM_STR_HINT)
    return inputs


#: texts encoded at once when a prediction call gives no ``batch_size`` (`Predictor.default_batch_size`)
DEFAULT_BATCH_SIZE = 32


def length_sorted_batches(token_ids: Sequence[Sequence[int]], batch_size: int) -> list[np.ndarray]:
    """Index batches of ``token_ids`` from longest to shortest (little padding); together they cover every row."""
    order = np.argsort([-len(t) for t in token_ids], kind="stable")
    return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]


def chunks(inputs: Iterable[str]) -> Iterator[tuple[int, list[str]]]:
    """``(row of the chunk's first text, chunk)`` for chunks of at most `STREAM_CHUNK` texts."""
    iterator, start = iter(inputs), 0
    while chunk := list(islice(iterator, STREAM_CHUNK)):
        yield start, chunk
        start += len(chunk)


def validated_chunks(inputs: Iterable[str] | os.PathLike) -> Iterator[tuple[int, list[str]]]:
    """`chunks` of the validated texts of ``inputs`` (`text_stream`), each a ``list[str]``.

    A list, tuple, array, pandas Series or Dataset column is validated whole here, at the call, so that a bad text
    raises, naming its row, before any text is encoded. A file or an iterator (a generator) is validated chunk by
    chunk as it is read, so that a stream of any size stays bounded in memory: a bad text there raises when its
    chunk is read, after the chunks before it were yielded.

    Raises:
        TypeError: ``inputs`` are not texts (`text_stream`), or a text is not a ``str`` (naming its row).
        ValueError: A text is empty or not valid Unicode (naming its row).
    """
    texts = text_stream(inputs)
    if not is_listlike(texts):
        return ((start, validate_texts(chunk, first_row=start)) for start, chunk in chunks(texts))
    whole = validate_texts(texts, allow_empty=True)
    return ((start, whole[start:start + STREAM_CHUNK]) for start in range(0, len(whole), STREAM_CHUNK))


def predict_ids(proba: np.ndarray, multi_label: bool, rule: str = ">=") -> np.ndarray:
    """Class ids (argmax of each row) or, multi-label, multi-hot rows; int64.

    Args:
        proba: Class probabilities, one row per text (or one row).
        multi_label: Whether each column is an independent label's probability.
        rule: Multi-label only, one of `THRESHOLD_RULES`: a label is present where its probability is above
            `MULTI_LABEL_THRESHOLD` (">") or at least it (">="); `head_threshold_rule` gives a head's.

    Returns:
        The argmax of each row, or multi-hot rows.

    Raises:
        ValueError: A `rule` not in `THRESHOLD_RULES`.
    """
    proba = np.asarray(proba)
    if multi_label:
        if rule not in THRESHOLD_RULES:
            raise ValueError(f"rule must be one of {THRESHOLD_RULES}, got {rule!r}")
        above = proba > MULTI_LABEL_THRESHOLD if rule == ">" else proba >= MULTI_LABEL_THRESHOLD
        return above.astype(np.int64)
    return proba.argmax(axis=-1).astype(np.int64)


def head_threshold_rule(head: Any) -> str:
    """The `THRESHOLD_RULES` rule by which a fitted head's own ``predict`` decides a multi-label probability of
    exactly `MULTI_LABEL_THRESHOLD`, which setfit's ``predict`` returns.

    A scikit-learn head (a ``SklearnHead``, which holds an ``estimator``) decides ">": one-vs-rest predicts
    ``proba > 0.5`` (a logistic regression: ``decision_function > 0``); multi-output and a classifier chain take
    each label's estimator's ``predict``, the argmax of ``[P(0), P(1)]``, which gives a tie to 0. setfit's
    differentiable torch head, and any other head, decide ">=" (``probs >= 0.5``).

    Args:
        head: The model's fitted head.

    Returns:
        ">" or ">=".
    """
    return ">" if getattr(head, "estimator", None) is not None else ">="


def threshold_rule_field(model: Any) -> dict[str, str]:
    """The config field an export writes for a multi-label ``model``'s rule (`THRESHOLD_RULE_FIELD`), so that the
    exported tiers decide a probability of exactly 0.5 as the model does; empty for a single-label model."""
    return {THRESHOLD_RULE_FIELD: model.multi_label_threshold_rule} if model.multi_label else {}


def temper(proba: np.ndarray, temperature: float) -> np.ndarray:
    """Single-label probabilities with their log-probabilities divided by ``temperature`` before the softmax:
    ``p_k ** (1 / T)`` renormalised, i.e. ``softmax(z / T)`` for a softmax over logits ``z`` (the argmax is kept).
    Zero probabilities (classes absent from training) stay zero; ``T = 1`` returns ``proba`` itself."""
    if temperature == 1.0:
        return proba
    proba = np.asarray(proba)
    with np.errstate(divide="ignore"):
        scaled = np.log(proba.astype(np.float64)) / temperature
    scaled -= scaled.max(axis=-1, keepdims=True)
    out = np.exp(scaled)
    out /= out.sum(axis=-1, keepdims=True)
    return out.astype(proba.dtype if np.issubdtype(proba.dtype, np.floating) else np.float32)


def abstained(values: list, proba: np.ndarray, threshold: float, abstain_label: Any) -> list:
    """``values`` (one per row of ``proba``) with ``abstain_label`` where the row's max probability is below
    ``threshold``."""
    confident = np.asarray(proba).max(axis=-1) >= threshold
    return [value if keep else abstain_label for value, keep in zip(values, confident.tolist())]


def labels_from_proba(proba: np.ndarray, labels: Sequence, multi_label: bool, as_numpy: bool = False,
                      rule: str = ">=") -> Any:
    """Predicted labels for probabilities ``proba`` (columns in ``labels`` order); multi-label: multi-hot rows at
    0.5 by ``rule`` (`predict_ids`; a model's is its ``multi_label_threshold_rule``).

    One row (a single text's probabilities) gives one label; a matrix gives a list, or an array with ``as_numpy``.
    """
    ids = predict_ids(proba, multi_label, rule)
    if multi_label:
        return ids
    if ids.ndim == 0:
        return labels[int(ids)]
    if as_numpy:
        return np.asarray(labels)[ids]
    return [labels[i] for i in ids]


class Predictor:
    """The prediction methods every tier shares: `predict`, `predict_proba`, streaming, and calling the model.

    [`SetFitModel`][setfit_lite.modeling.SetFitModel] (torch),
    [`OnnxSetFitModel`][setfit_lite.runtime.onnx.OnnxSetFitModel] and
    [`StaticSetFitModel`][setfit_lite.runtime.static.StaticSetFitModel] predict through these methods. `class_proba`
    is the one numpy form; `predict_proba` and `predict` present it. With `setfit_return_types` (`SetFitModel`)
    `predict` returns what setfit's does: labels only when they have names (a list), else the label values or class
    ids as a tensor; the exported tiers return the same types, with a list (or one Python value) where that returns
    a tensor of label values or ids.

    Inputs, one rule for every method and tier: a `str` is one text (`predict` and `predict_proba` give one label or
    row; the streaming `predict_iter` and `iter_proba` refuse a bare `str`: pass `[text]`); a file is passed as an
    `os.PathLike` such as `pathlib.Path("corpus.txt")` (one text per non-blank line, UTF-8); any other iterable of
    `str` (list, tuple, 1-D array, pandas Series, generator) gives the texts. A dict, bytes, a pandas DataFrame or
    `datasets.Dataset` (pass its text column, e.g. `df["text"].tolist()`), a set (it has no order), a non-iterable
    or a text that is not a `str` raises `TypeError` saying what to pass. A list, tuple, array or Series is checked
    whole before any text is encoded; an iterator or a file is checked chunk by chunk as it is read (a bad text
    there raises after the chunks before it were scored).

    A subclass sets `labels` (the classes, in `predict_proba`'s column order) and `multi_label`, and implements
    `_proba_chunk`; it may override `_check_fitted` and `_array_output`.
    """

    labels: list | None
    multi_label: bool
    setfit_return_types: bool = False  # whether `_array_output` gives setfit's tensors (SetFitModel's does)
    # divides the log-probabilities of single-label predictions (fitted by the trainer, see
    # TrainingArguments.calibration; saved with the head, the ONNX export and the static export)
    calibration_temperature: float = 1.0

    def _check_fitted(self) -> None:
        """Raise ValueError when the model cannot predict yet (default: it always can)."""

    def _proba_chunk(self, texts: list[str], batch_size: int, show_progress_bar: bool | None) -> np.ndarray:
        """Probabilities (len(texts), len(labels)), float32, of validated texts."""
        raise NotImplementedError

    def default_batch_size(self) -> int:
        """The texts encoded at once when a prediction call gives no ``batch_size`` (32; the torch tier: 64 where
        its body runs bf16 on a CPU with AMX tiles)."""
        return DEFAULT_BATCH_SIZE

    def predict_proba(self, inputs: str | Iterable[str] | os.PathLike, batch_size: int | None = None,
                      as_numpy: bool = False, show_progress_bar: bool | None = None) -> np.ndarray:
        """The class probabilities of texts, columns in `labels` order.

        Args:
            inputs: One text (a `str`), an iterable of texts (streamed) or a text file (`os.PathLike`).
            batch_size: The texts encoded at once; None for the tier's `default_batch_size`.
            as_numpy: Accepted on every tier; the exported tiers always return numpy (the torch `SetFitModel`
                returns a tensor without it).
            show_progress_bar: Whether to show a progress bar; None follows the library's setting.

        Returns:
            An array of shape `(len(labels),)` for one text, `(n, len(labels))` for n texts.

        Raises:
            TypeError: The inputs are not texts (see the class).
            ValueError: The model has no fitted head.
        """
        return self.class_proba(inputs, batch_size=batch_size, show_progress_bar=show_progress_bar)

    def class_proba(self, inputs: str | Iterable[str] | os.PathLike, batch_size: int | None = None,
                    show_progress_bar: bool | None = None) -> np.ndarray:
        """The class probabilities of texts as a numpy array, the same on every tier and for every head.

        Args:
            inputs: One text (a `str`), an iterable of texts (streamed) or a text file (`os.PathLike`).
            batch_size: The texts encoded at once; None for the tier's `default_batch_size`.
            show_progress_bar: Whether to show a progress bar; None follows the library's setting.

        Returns:
            An array `(n, len(labels))`, columns in `labels` order (multi-label: each label's probability); one
            row for one text.

        Raises:
            TypeError: The inputs are not texts.
            ValueError: The model has no fitted head.
        """
        self._check_fitted()
        assert self.labels is not None
        single = isinstance(inputs, str)
        parts = [proba for _, proba in self.iter_proba([inputs] if single else inputs, batch_size, show_progress_bar)]
        proba = np.concatenate(parts) if parts else np.zeros((0, len(self.labels)), dtype=np.float32)
        return proba[0] if single else proba

    def iter_proba(self, inputs: Iterable[str] | os.PathLike, batch_size: int | None = None,
                   show_progress_bar: bool | None = None) -> Iterator[tuple[list[str], np.ndarray]]:
        """The probabilities of a stream of texts, chunk by chunk, computed as they are consumed.

        Memory stays bounded for an iterable or a text file of any size.

        Args:
            inputs: An iterable of texts or a text file (`os.PathLike`: one text per non-blank line).
            batch_size: The texts encoded at once; None for the tier's `default_batch_size`.
            show_progress_bar: Whether to show a progress bar; None follows the library's setting.

        Returns:
            An iterator of `(texts, probabilities)` for consecutive chunks of at most `STREAM_CHUNK` texts.

        Raises:
            TypeError: A bare `str` (pass `[text]` or `pathlib.Path(...)`) or other inputs that are not texts: at
                the call, before anything is read; a text that is not a `str`, naming its row: at the call for a
                list, tuple, array or Series, when its chunk is read for an iterator or a file.
            ValueError: An empty text or one that is not valid Unicode, naming its row (when, as for TypeError).
        """
        self._check_fitted()
        batch_size = check_param("batch_size", self.default_batch_size() if batch_size is None else batch_size)
        return self._iter_proba(validated_chunks(inputs), batch_size, show_progress_bar)

    def _iter_proba(self, parts: Iterator[tuple[int, list[str]]], batch_size: int, show_progress_bar: bool | None
                    ) -> Iterator[tuple[list[str], np.ndarray]]:
        temperature = 1.0 if self.multi_label else self.calibration_temperature
        for _, chunk in parts:
            yield chunk, temper(self._proba_chunk(chunk, batch_size, show_progress_bar), temperature)

    def predict_iter(self, inputs: Iterable[str] | os.PathLike, batch_size: int | None = None,
                     use_labels: bool = True, abstain_below: float | None = None,
                     abstain_label: Any = None) -> Iterator[Any]:
        """`predict`'s label of each text, one at a time, over a stream of any size with bounded memory.

        Args:
            inputs: An iterable of texts or a text file (`os.PathLike`: one text per non-blank line).
            batch_size: The texts encoded at once; None for the tier's `default_batch_size`.
            use_labels: Whether to give the label names (False: class ids), as in `predict`.
            abstain_below: As in `predict`.
            abstain_label: As in `predict`.

        Returns:
            An iterator of one Python value a text (multi-label: a multi-hot numpy row).

        Raises:
            TypeError: A bare `str` (pass `[text]`, or `pathlib.Path(...)` for a file): at the call.
            ValueError: `abstain_below` is not a probability, or the model is multi-label.
        """
        self._check_abstain(abstain_below)
        return self._predict_iter(self.iter_proba(inputs, batch_size), use_labels, abstain_below, abstain_label)

    def _predict_iter(self, parts: Iterator[tuple[list[str], np.ndarray]], use_labels: bool,
                      abstain_below: float | None = None, abstain_label: Any = None) -> Iterator[Any]:
        for _, proba in parts:
            labels = self.labels_from_proba(proba, as_numpy=True, use_labels=use_labels)
            values = labels if self.multi_label or isinstance(labels, list) else labels.tolist()
            yield from (values if abstain_below is None else abstained(values, proba, abstain_below, abstain_label))

    def _check_abstain(self, abstain_below: float | None) -> None:
        """ValueError unless ``abstain_below`` is None or a probability, for a single-label model."""
        if abstain_below is None:
            return
        if isinstance(abstain_below, bool) or not isinstance(abstain_below, (int, float, np.floating, np.integer)) \
                or not 0.0 <= float(abstain_below) <= 1.0:
            raise ValueError(f"abstain_below must be a probability in [0, 1] or None, got {abstain_below!r}")
        if self.multi_label:
            raise ValueError("abstain_below applies to single-label models (a multi-label row has no single "
                             "probability to abstain on)")

    def predict(self, inputs: str | Iterable[str] | os.PathLike, batch_size: int | None = None, as_numpy: bool = False,
                use_labels: bool = True, show_progress_bar: bool | None = None, abstain_below: float | None = None,
                abstain_label: Any = None) -> Any:
        """The predicted label of each text.

        Args:
            inputs: One text (a `str`), an iterable of texts (streamed) or a text file (`os.PathLike`).
            batch_size: The texts encoded at once; None for the tier's `default_batch_size`.
            as_numpy: Whether label values or ids come as a numpy array rather than setfit's tensor (the torch
                tier) or a list (the exported tiers); label names come as a list either way, as setfit's.
            use_labels: setfit's: with False a model whose labels are names gives class ids.
            show_progress_bar: Whether to show a progress bar; None follows the library's setting.
            abstain_below: Single-label only: a text whose highest (calibrated) probability is below it gets
                `abstain_label` instead of a label; the labels then come as a list of Python values (an object
                array with `as_numpy`). [`coverage_accuracy`][setfit_lite.metrics.coverage_accuracy] tells how many
                texts a threshold keeps and how accurate they are.
            abstain_label: What an abstained text gets.

        Returns:
            One label for one text; for several, a list of label names, or label values or ids as a tensor on the
            torch tier and a list on the exported tiers (numpy with `as_numpy` on every tier); multi-label: multi-hot
            rows in `labels` order (a numpy array; a tensor on the torch tier without `as_numpy`).

        Raises:
            TypeError: The inputs are not texts.
            ValueError: The model has no fitted head, or `abstain_below` is not a probability or is given to a
                multi-label model.

        Example:
            ```python
            from setfit_lite import SetFitModel

            model = SetFitModel.from_pretrained("path/to/trained-model")
            print(model.predict(["a great film", "dull and long"]))   # ['positive', 'negative']
            print(model.predict("a great film", abstain_below=0.9))     # 'positive', or None when unsure
            ```
        """
        self._check_abstain(abstain_below)
        proba = self.class_proba(inputs, batch_size=batch_size, show_progress_bar=show_progress_bar)
        if abstain_below is None:
            return self.labels_from_proba(proba, as_numpy=as_numpy, use_labels=use_labels)
        rows = proba[None] if isinstance(inputs, str) else proba
        labels = self.labels_from_proba(rows, as_numpy=True, use_labels=use_labels)
        values = abstained(labels if isinstance(labels, list) else labels.tolist(), rows, abstain_below,
                           abstain_label)
        if isinstance(inputs, str) or not as_numpy:
            return values[0] if isinstance(inputs, str) else values
        array = np.empty(len(values), dtype=object)
        array[:] = values
        return array

    def __call__(self, inputs: str | Iterable[str], batch_size: int | None = None, as_numpy: bool = False,
                 use_labels: bool = True, show_progress_bar: bool | None = None, abstain_below: float | None = None,
                 abstain_label: Any = None) -> Any:
        """Same as `predict`."""
        return self.predict(inputs, batch_size=batch_size, as_numpy=as_numpy, use_labels=use_labels,
                            show_progress_bar=show_progress_bar, abstain_below=abstain_below,
                            abstain_label=abstain_label)

    @property
    def multi_label_threshold_rule(self) -> str:
        """How a multi-label prediction decides a probability of exactly 0.5 (">": the label is absent, ">=":
        present; `THRESHOLD_RULES`): as the model's head does, so that `predict` gives what setfit's does.

        The torch tier reads its fitted head (`head_threshold_rule`: ">" for a scikit-learn head, ">=" for the
        differentiable one); an exported tier reads its config's `THRESHOLD_RULE_FIELD`, written at export from the
        torch model's rule (">=" for a folder exported before the field was written: it decides as it did).

        Raises:
            ValueError: An exported config whose field is not one of `THRESHOLD_RULES`.
        """
        head = getattr(self, "model_head", None)
        if head is not None:
            return head_threshold_rule(head)
        config = getattr(self, "config", None)
        rule = config.get(THRESHOLD_RULE_FIELD, ">=") if isinstance(config, dict) else ">="
        if rule not in THRESHOLD_RULES:
            raise ValueError(f"the exported model's config field {THRESHOLD_RULE_FIELD!r} is {rule!r}; it must be "
                             f"one of {THRESHOLD_RULES}")
        return rule

    def _multi_hot_rule(self) -> str:
        """`multi_label_threshold_rule` for a multi-label model; ">=" (unused: rows take their argmax) otherwise."""
        return self.multi_label_threshold_rule if self.multi_label else ">="

    def class_ids(self, proba: np.ndarray) -> np.ndarray:
        """The class ids (multi-hot rows for multi-label, by `multi_label_threshold_rule`) ``predict`` decides for
        probability rows ``proba``; what evaluation scores. A model that decides otherwise than the most likely class
        overrides it."""
        return predict_ids(proba, self.multi_label, self._multi_hot_rule())

    def labels_from_proba(self, proba: np.ndarray, as_numpy: bool = False, use_labels: bool = True) -> Any:
        """The labels ``predict`` gives for probabilities ``proba``, by one rule on every tier: label names (one, or
        a list whatever ``as_numpy``, as setfit's); label values or class ids as `_array_output` presents them."""
        self._check_fitted()
        assert self.labels is not None
        named = any(not is_integer(label) for label in self.labels)
        if use_labels and named and not self.multi_label:
            return labels_from_proba(proba, self.labels, multi_label=False)
        ids = predict_ids(proba, self.multi_label, self._multi_hot_rule())
        if not (self.multi_label or named):
            ids = self._int_labels()[ids]
        return self._array_output(ids, as_numpy)

    def _int_labels(self) -> np.ndarray:
        """The model's int labels as an int64 array; ValueError (not numpy's OverflowError) for labels outside 64
        bits, which training refuses and only a model saved by hand or by an earlier version can hold."""
        try:
            return np.asarray(self.labels, dtype=np.int64)
        except OverflowError:
            wide = [label for label in self.labels if not -(2**63) <= label < 2**63]
            raise ValueError(f"this model's int labels {short_repr(wide)} do not fit in 64 bits, so it cannot "
                             "give them as predictions: retrain it with int labels in [-2**63, 2**63 - 1] or with "
                             "str labels") from None

    def _array_output(self, array: np.ndarray, as_numpy: bool) -> Any:
        """How ``predict`` returns label values, class ids or multi-hot rows ``array``: the exported tiers give numpy
        with ``as_numpy`` and for multi-hot rows, else Python values (a list; one value for one text).
        ``SetFitModel`` (`setfit_return_types`) gives a tensor unless ``as_numpy``."""
        return array if as_numpy or self.multi_label else array.tolist()

    def label_ids(self, raw_labels: Sequence) -> np.ndarray:
        """Class ids of user labels (errors on labels the model never saw)."""
        ids, _, _ = encode_labels(raw_labels, known_labels=self.labels, multi_label=self.multi_label or None)
        return ids
