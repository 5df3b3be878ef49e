"""The static tier: a fine-tuned body distilled into static token embeddings, with a head refitted on them. The
running half is here (numpy and ``tokenizers``, no torch); the writer is `setfit_lite.exporting.static`.

Distillation follows model2vec's method on the *fine-tuned* body: every vocabulary token is embedded by the body
(``[CLS] token [SEP]``, the body's own pooling), the table is reduced with PCA and each row is weighted by
``sif / (sif + p(token))``, ``p`` from Zipf's law on the token's rank (model2vec's ``compute_weights``). A text's
embedding is then the mean of its tokens' rows (special tokens not added, the unknown token dropped), L2-normalised.
A LogisticRegression head is refitted on these embeddings, on the texts given (with their labels, or labelled by
the fine-tuned model) plus, optionally, unlabelled texts the fine-tuned model labels. When the model is calibrated
(``TrainingArguments.calibration``), the refitted head gets its own temperature, fitted by the same
cross-validation on those texts (``config_setfit_lite_static.json``'s ``calibration_temperature``).

Then (``refine_epochs``) the table is trained on the texts given, as model2vec's tokenlearn does: each text's mean
of token rows is pulled (cosine loss) toward the fine-tuned body's embedding of the text, projected by the same PCA.
On Emotion at 16 per class this took the static model from 0.552 to 0.588 accuracy (the fine-tuned model: 0.591).

The folder is a model2vec model (``model.safetensors`` with ``embeddings``, ``tokenizer.json``, ``config.json``:
``model2vec.StaticModel.from_pretrained(folder)`` reads the body and encodes as here) plus the head
(``head_static.safetensors``), ``config_setfit_lite_static.json`` and an integrity manifest; no pickles.

model2vec's own distillation (``model2vec.distill``) needs its ``distill`` extra, which pins ``transformers<5.4``
(this project uses transformers 5), and ``model2vec.distill`` refuses to import without that extra, so the distillation
step is written here (embedding the vocabulary is ``SetFitModel.embed_tokens``; PCA is scikit-learn's).
Inference needs numpy and ``tokenizers`` only: importing model2vec (huggingface_hub, joblib) would add
0.1-0.2 s to a 0.2 s cold start, so the mean of rows is computed here too, and tested against model2vec's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

import numpy as np

from ..config.params import check_param
from ..data import validate_texts
from ..serialization import (
    load_json,
    read_consistently,
    refuse_pickles,
    verify_manifest,
)
from ..serialization.validate import (
    ModelFormatError,
    check_count,
    check_float_dtype,
    check_indices,
    check_labels,
    check_shape,
    check_temperature,
    check_type,
    check_version,
)
from .predictor import Predictor, TokenizerFile, temper, validated_chunks, with_prompt
from .threads import default_workers, run_pieces
from .word_cache import WordCachedTokenizer

__all__ = ["STATIC_CONFIG_NAME", "StaticSetFitModel", "linear_proba", "static_tokenizer", "validate_static_folder"]

STATIC_CONFIG_NAME = "config_setfit_lite_static.json"
STATIC_HEAD_NAME = "head_static.safetensors"
EMBEDDINGS_NAME = "model.safetensors"  # model2vec's file and tensor names
EMBEDDINGS_KEY = "embeddings"
STATIC_FORMAT_VERSION = 1
HEAD_KINDS = ("binary", "softmax", "normalized_sigmoid", "sigmoid")
MIN_SLICE = 256  # fewer texts than this per thread: one thread (a thread's start costs about 50 texts' work)
HEAD_BLOCK = 64  # rows per BLAS call of the head's product (see StaticSetFitModel._proba_chunk)
MEAN_BLOCK = 16  # texts whose token rows are gathered at once (16-32 fastest of 4-64: benchmarks.speed_defaults)
MAX_GATHER_ROWS = 8192  # token rows gathered at once at most (8 MB at 256 dimensions): long texts stay bounded


# ------------------------------------------------------------------------------------------------------ the head


def linear_proba(spec: dict[str, Any], x: np.ndarray, block: int | None = None) -> np.ndarray:
    """``predict_proba`` of a LogisticRegression-family head from its ``linear_head_spec``, in numpy.

    kind: "binary" (sigmoid p -> [1 - p, p]), "softmax", "normalized_sigmoid" (one-vs-rest: sigmoids over their
    row sum) or "sigmoid" (independent labels); columns are then placed at their class ids (absent classes: 0).
    ``block``: compute the product ``block`` rows per BLAS call (the last block zero-padded), so that a row's
    numbers do not depend on the rows around it (a BLAS product's rows depend on its shape in the last bit).
    """
    weight = np.asarray(spec["weight"], dtype=np.float32).T
    if block is None:
        z = x @ weight
    else:
        padded = np.zeros((-(-len(x) // block) * block, x.shape[1]), dtype=np.float32)
        padded[:len(x)] = x
        z = np.empty((len(padded), weight.shape[1]), dtype=np.float32)
        for i in range(0, len(padded), block):
            np.matmul(padded[i:i + block], weight, out=z[i:i + block])
        z = z[:len(x)]
    z += np.asarray(spec["bias"], dtype=np.float32)
    kind = spec["kind"]
    if kind == "softmax":
        e = np.exp(z - z.max(axis=1, keepdims=True))
        p = e / e.sum(axis=1, keepdims=True)
    else:
        p = 1.0 / (1.0 + np.exp(-z))
        constant = spec.get("constant")
        if constant is not None:
            known = np.isfinite(constant)
            p[:, known] = np.asarray(constant)[known]
        if kind == "binary":
            p = np.concatenate([1.0 - p, p], axis=1)
        elif kind == "normalized_sigmoid":
            total = p.sum(axis=1, keepdims=True)
            p = p / np.where(total == 0, 1.0, total)
    out = np.zeros((len(x), int(spec["num_classes"])), dtype=np.float32)
    out[:, np.asarray(spec["columns"])[:p.shape[1]]] = p
    return out


# ------------------------------------------------------------------------------------------------------ inference


class StaticSetFitModel(Predictor):
    """A static-embedding model (numpy and `tokenizers` only); it predicts with the
    [`Predictor`][setfit_lite.runtime.predictor.Predictor] methods, as `SetFitModel` does (numpy outputs).

    Load one with [`load`][setfit_lite.runtime.static.StaticSetFitModel.load] (or `SetFitModel.from_static`);
    the constructor is what `load` calls.

    Args:
        embeddings: The token-embedding table `(vocabulary, dim)`.
        tokenizer: The folder's tokenizer.
        head: The head's arrays and kind.
        config: The folder's `config_setfit_lite_static.json`.
        normalize: Whether text embeddings are L2-normalised (model2vec's `normalize`).
        num_threads: The threads a prediction uses; None for the CPUs this process may use.
    """

    def __init__(self, embeddings: np.ndarray, tokenizer: TokenizerFile, head: dict[str, Any],
                 config: dict[str, Any], normalize: bool = True, num_threads: int | None = None) -> None:
        self.embeddings = embeddings
        self.tokenizer, self.head, self.config, self.normalize = tokenizer, head, config, normalize
        self.labels: list = list(config["labels"])
        self.multi_label = bool(config["multi_label"])
        self.prompt: str = config.get("prompt") or ""
        self.unk_id = _unk_token_id(tokenizer.backend)
        self.calibration_temperature = float(config.get("calibration_temperature") or 1.0)
        self.num_threads: int = default_workers() if num_threads is None else check_param("num_threads", num_threads)

    @property
    def word_cache(self) -> WordCachedTokenizer | None:
        """The tokenizer's word cache (each space-separated word tokenised once; None where the tokenizer does not
        allow it, and the tokenizer runs); settable, on the tokenizer: None makes every path run the tokenizer."""
        return self.tokenizer.word_cache

    @word_cache.setter
    def word_cache(self, cache: WordCachedTokenizer | None) -> None:
        self.tokenizer.word_cache = cache

    @property
    def embeddings(self) -> np.ndarray:
        """The token-embedding table `(vocabulary, dim)`, float32."""
        return self._padded_table[:-1]

    @embeddings.setter
    def embeddings(self, table: np.ndarray) -> None:
        # kept with one row of zeros after it: a text's token rows are gathered padded with that row
        padded = np.empty((len(table) + 1, table.shape[1]), dtype=np.float32)
        padded[:-1], padded[-1] = table, 0.0
        self._padded_table = padded

    @classmethod
    def load(cls, path: str | os.PathLike, num_threads: int | None = None) -> StaticSetFitModel:
        """Load a folder written by `export_static`, checking its manifest and every file against the others, and
        refusing pickles.

        Args:
            path: The exported folder.
            num_threads: The threads a prediction uses, each on its own slice of the texts; None for the CPUs
                this process may use.

        Returns:
            The model.

        Raises:
            ValueError: A pickled file, or files that disagree with each other.

        Example:
            ```python
            from setfit_lite.runtime.static import StaticSetFitModel

            model = StaticSetFitModel.load("my-model-static")
            print(model.predict(["a gripping, beautiful film"]))
            ```
        """
        folder = Path(path)

        def load() -> StaticSetFitModel:
            """The model, read from ``folder`` (run again where a save changed it meanwhile)."""
            refuse_pickles(folder)
            verify_manifest(folder)
            config, model2vec_config, arrays, embeddings, tokenizer = validate_static_folder(folder)
            head = {"kind": config["head_kind"], "columns": config["head_columns"],
                    "num_classes": len(config["labels"]), "weight": arrays["weight"], "bias": arrays["bias"],
                    "constant": arrays.get("constant")}
            return cls(embeddings, tokenizer, head, config, normalize=model2vec_config["normalize"],
                       num_threads=num_threads)

        # a save killed after its commit point is finished first; one under way is waited for (never half read)
        return read_consistently(folder, load)

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        """Token ids as model2vec takes them: no special tokens, the unknown token dropped (`_flat_token_ids`
        split back into rows)."""
        flat, lengths = self._flat_token_ids(texts)
        ends = np.cumsum(lengths)
        return [flat[end - n:end].tolist() for n, end in zip(lengths, ends)]

    def _flat_token_ids(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(flat ids, lengths)`` of the texts' token rows, the unknown token dropped in numpy (a Python filter
        over every token took a fifth of the tier's time); by the word (`word_cache`) where the tokenizer allows."""
        if self.word_cache is not None:
            flat, lengths = self.word_cache.flat_ids(with_prompt(texts, self.prompt))
        else:
            token_ids = self.tokenizer.encode(with_prompt(texts, self.prompt), add_special_tokens=False)
            lengths = np.fromiter((len(t) for t in token_ids), dtype=np.int64, count=len(token_ids))
            flat = np.fromiter(chain.from_iterable(token_ids), dtype=np.int64, count=int(lengths.sum()))
        if self.unk_id is not None:
            keep = flat != self.unk_id
            if not keep.all():
                lengths = np.bincount(np.repeat(np.arange(len(lengths)), lengths)[keep], minlength=len(lengths))
                flat = flat[keep]
        return flat, lengths

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        """The static sentence embeddings of texts: the mean of their tokens' rows, L2-normalised (as
        `model2vec.StaticModel.encode`); a text without known tokens gives zeros.

        Args:
            texts: The texts.
            batch_size: The most texts whose token rows are gathered at once (`MEAN_BLOCK` at most); the
                embeddings do not depend on it.

        Returns:
            A float32 array `(len(texts), dim)`.

        Raises:
            TypeError: A bare str (one text: pass `[text]`), or an item that is not a str (the row named).
        """
        batch_size = check_param("batch_size", batch_size)
        texts = validate_texts(texts, allow_empty=True, allow_blank=True)  # a blank text gives zeros, as documented
        return self._mean_rows(*self._flat_token_ids(texts), batch_size)

    def _mean_rows(self, flat: np.ndarray, lengths: np.ndarray, batch_size: int) -> np.ndarray:
        """`encode` from the texts' token ids (`_flat_token_ids`); each text's row depends on its own ids only.

        The texts are taken in order of length, at most `MEAN_BLOCK` (or ``batch_size``, when smaller) and at most
        `MAX_GATHER_ROWS` padded rows at a time: their ids padded with the zero row to the longest, gathered into
        one ``(texts, width, dim)`` array and summed over the width, row after row (a zero row adds nothing, so the
        sums do not depend on the padding). A text longer than `MAX_GATHER_ROWS` is summed on its own in pieces
        of that many rows, each piece added onto the running sum in the same order."""
        zero_row, dim = len(self.embeddings), self.embeddings.shape[1]
        out = np.zeros((len(lengths), dim), dtype=np.float32)
        starts = np.cumsum(lengths) - lengths
        order = np.argsort(lengths, kind="stable")
        most = min(batch_size, MEAN_BLOCK)
        first = 0
        while first < len(order):
            count = 1  # the longest text of a block is its last (they come in order of length)
            while (count < most and first + count < len(order)
                   and (count + 1) * lengths[order[first + count]] <= MAX_GATHER_ROWS):
                count += 1
            texts = order[first:first + count]
            first += count
            width = int(lengths[texts[-1]])
            if width > MAX_GATHER_ROWS:  # one long text, in pieces
                ids, total = flat[starts[texts[0]]:starts[texts[0]] + width], None
                for begin in range(0, width, MAX_GATHER_ROWS):
                    rows = np.take(self._padded_table, ids[begin:begin + MAX_GATHER_ROWS], axis=0)
                    total = rows.sum(axis=0) if total is None else np.vstack([total[None], rows]).sum(axis=0)
                out[texts[0]] = total
            elif width > 0:
                counts = lengths[texts]
                offsets = np.arange(width)
                inside = offsets[None, :] < counts[:, None]
                positions = np.minimum(starts[texts][:, None] + offsets[None, :], len(flat) - 1)
                index = np.where(inside, flat[positions], zero_row)
                out[texts] = np.take(self._padded_table, index, axis=0).sum(axis=1)
        out /= np.maximum(lengths, 1)[:, None]
        if self.normalize:
            out /= np.linalg.norm(out, axis=1, keepdims=True) + 1e-32
        return out

    def encode_with_proba(self, inputs: Iterable[str] | os.PathLike, batch_size: int = 64
                          ) -> tuple[np.ndarray, np.ndarray]:
        """The texts' static sentence embeddings and their class probabilities, from one pass over the texts
        (each text tokenised and its token rows gathered once; the head reads the embeddings just made).

        Args:
            inputs: An iterable of texts (streamed in chunks of `STREAM_CHUNK`) or a text file (`os.PathLike`).
            batch_size: The texts whose token rows are gathered at once.

        Returns:
            `(embeddings, probabilities)`: the float32 arrays `encode` and `class_proba` give for these texts,
            `(n, dim)` and `(n, len(labels))`.

        Raises:
            TypeError: A bare `str` (pass `[text]` or `pathlib.Path(...)`) or other inputs that are not texts.
            ValueError: An empty text, naming its row.

        Example:
            ```python
            embeddings, proba = model.encode_with_proba(["a gripping film", "a dull plot"])
            ```
        """
        batch_size = check_param("batch_size", batch_size)
        parts = validated_chunks(inputs)
        temperature = 1.0 if self.multi_label else self.calibration_temperature
        embeddings, probas = [], []
        for _, chunk in parts:
            emb, proba = self._embed_proba_chunk(chunk, batch_size)
            embeddings.append(emb)
            probas.append(temper(proba, temperature))
        if not embeddings:
            return (np.zeros((0, self.embeddings.shape[1]), dtype=np.float32),
                    np.zeros((0, len(self.labels)), dtype=np.float32))
        return np.concatenate(embeddings), np.concatenate(probas)

    def _proba_chunk(self, texts: list[str], batch_size: int, show_progress_bar: bool | None = None) -> np.ndarray:
        """Probabilities of validated texts (`_embed_proba_chunk`'s second array)."""
        return self._embed_proba_chunk(texts, batch_size)[1]

    def _embed_proba_chunk(self, texts: list[str], batch_size: int) -> tuple[np.ndarray, np.ndarray]:
        """Embeddings and probabilities (untempered) of validated texts, embedded ``max(batch_size, 64)`` texts
        at a time, in up to `num_threads` slices of at least `MIN_SLICE` texts that run in parallel.

        The numbers do not depend on the slicing: slices start at multiples of `HEAD_BLOCK` and the head's
        product runs on blocks of exactly that many rows (the last one zero-padded), so each text meets the same
        BLAS call whatever the number of threads (a BLAS product's rows depend on its shape in the last bit)."""
        gather = max(batch_size, 64)
        blocks = -(-len(texts) // HEAD_BLOCK)
        slices = max(1, min(self.num_threads, len(texts) // MIN_SLICE))
        bounds = np.minimum(np.linspace(0, blocks, slices + 1).astype(int) * HEAD_BLOCK, len(texts))

        if self.word_cache is not None:
            # the word cache is Python (it holds the GIL): the ids of every text first, here; the threads then
            # gather and average rows and apply the head, in numpy, which lets go of the GIL
            flat, lengths = self._flat_token_ids(texts)
            ends = np.concatenate([[0], np.cumsum(lengths)])

            def piece(span: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
                emb = self._mean_rows(flat[ends[span[0]]:ends[span[1]]], lengths[span[0]:span[1]], gather)
                return emb, linear_proba(self.head, emb, block=HEAD_BLOCK)
        else:
            # the tokenizer (Rust) lets go of the GIL: each thread tokenises its own slice
            def piece(span: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
                emb = self._mean_rows(*self._flat_token_ids(texts[span[0]:span[1]]), gather)  # checked texts
                return emb, linear_proba(self.head, emb, block=HEAD_BLOCK)

        parts = run_pieces(piece, list(zip(bounds[:-1], bounds[1:])), self.num_threads)
        if len(parts) == 1:
            return parts[0]
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def _read_arrays(path: Path) -> tuple[dict[str, np.ndarray], dict[str, str]]:
    """A safetensors file's arrays (numpy) and metadata; ValueError naming the file if it cannot be read."""
    from safetensors import SafetensorError, safe_open

    if not path.is_file():
        raise ValueError(f"tensor file {path} is missing")
    try:
        with safe_open(str(path), framework="np") as handle:
            return {name: handle.get_tensor(name) for name in handle.keys()}, dict(handle.metadata() or {})
    except (SafetensorError, OSError, ValueError) as exc:
        raise ValueError(f"tensor file {path} is truncated or corrupt and cannot be loaded: {exc}") from exc


def _array(arrays: dict[str, np.ndarray], name: str, path: Path, expected: Sequence[int | None],
           expected_from: str) -> np.ndarray:
    """``arrays[name]``, a floating-point array of the ``expected`` shape."""
    if name not in arrays:
        raise ModelFormatError(path, name, f"is missing (the file has {sorted(arrays)})")
    check_float_dtype(path, name, arrays[name].dtype)
    check_shape(path, name, arrays[name].shape, expected, expected_from)
    return arrays[name]


def validate_static_folder(folder: Path) -> tuple[dict[str, Any], dict[str, Any], dict[str, np.ndarray],
                                                  np.ndarray, TokenizerFile]:
    """Read a static folder's files and check each against the others: ``(config, model2vec_config, head arrays,
    embeddings, tokenizer)``, or a ModelFormatError naming the file and the field.

    Checked: the format version; labels (distinct), ``multi_label`` and ``head_kind`` (sigmoid heads are the
    multi-label ones); the head's columns (distinct label indices, two for a binary head, one per weight row
    otherwise, as many as the head's ``num_classes`` when its file records it); the head's weight (one row per
    output, one column per embedding dimension), bias and constants; the table (one row per tokenizer token, as
    wide as ``hidden_dim``); floating-point tensors.
    """
    config_path, head_path = folder / STATIC_CONFIG_NAME, folder / STATIC_HEAD_NAME
    table_path, model2vec_path = folder / EMBEDDINGS_NAME, folder / "config.json"
    config = load_json(config_path, what="setfit_lite static config")
    check_version(config, "format_version", STATIC_FORMAT_VERSION, config_path)
    labels = check_labels(config, "labels", config_path)
    multi_label = check_type(config, "multi_label", config_path, bool)
    kind = check_type(config, "head_kind", config_path, str)
    check_type(config, "prompt", config_path, str, optional=True)
    check_temperature(config, config_path)
    if kind not in HEAD_KINDS:
        raise ModelFormatError(config_path, "head_kind", f"must be one of {HEAD_KINDS}, got {kind!r}")
    if (kind == "sigmoid") != multi_label:
        raise ModelFormatError(config_path, "head_kind", f"is {kind!r} but multi_label is {multi_label}: sigmoid "
                                                         "heads, and only they, are multi-label")
    model2vec_config = load_json(model2vec_path, what="model2vec config")
    dim = check_type(model2vec_config, "hidden_dim", model2vec_path, int, what="a positive int")
    check_type(model2vec_config, "normalize", model2vec_path, bool)
    tokenizer = static_tokenizer(folder)
    table = _array(_read_arrays(table_path)[0], EMBEDDINGS_KEY, table_path, (tokenizer.backend.get_vocab_size(), dim),
                   f"tokenizer.json's vocabulary and {model2vec_path.name}'s hidden_dim")
    arrays, metadata = _read_arrays(head_path)
    if "num_classes" in metadata:  # written since this check exists; earlier heads have only their columns
        check_count(config_path, "labels", len(labels), int(metadata["num_classes"]),
                    f"{head_path.name}'s num_classes")
    rows = _array(arrays, "weight", head_path, (None, dim), f"the embeddings' width in {table_path.name}").shape[0]
    _array(arrays, "bias", head_path, (rows,), f"weight's {rows} row(s)")
    if "constant" in arrays:
        _array(arrays, "constant", head_path, (rows,), f"weight's {rows} row(s)")
    if kind == "binary":
        check_count(head_path, "weight", rows, 1, f"{config_path.name}'s head_kind 'binary'")
    check_indices(config_path, "head_columns", config.get("head_columns"), len(labels), f"the {len(labels)} labels",
                  count=2 if kind == "binary" else rows,
                  count_from=f"the head_kind {kind!r} with {rows} weight rows in {head_path.name}")
    return config, model2vec_config, arrays, table, tokenizer


def _unk_token_id(backend: Any) -> int | None:
    """The unknown token's id, which model2vec drops from a text's tokens (WordPiece, BPE, WordLevel, Unigram)."""
    if hasattr(backend.model, "unk_token"):
        token = backend.model.unk_token
        return backend.token_to_id(token) if token else None
    return json.loads(backend.to_str())["model"].get("unk_id")


def static_tokenizer(folder: Path) -> TokenizerFile:
    """The folder's ``tokenizer.json``, untruncated, as model2vec runs it."""
    tokenizer = TokenizerFile(folder / "tokenizer.json")
    tokenizer.backend.no_truncation()
    return tokenizer
