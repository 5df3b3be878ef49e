"""Refusing a model folder that would make loading run code from it, before sentence-transformers reads it.

A sentence-transformers folder names the class of each of its modules in ``modules.json`` (``"type"``), and a
transformers ``config.json`` may name classes to import from the folder's own Python files (``"auto_map"``).
sentence-transformers 6 refuses a module class outside its package unless ``trust_remote_code=True``; earlier
releases import such a class from a local folder's Python files without asking. `refuse_remote_code` reads those
files itself, so that the rule does not depend on the installed sentence-transformers.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from .files import load_json
from .manifest import is_inside

__all__ = ["TRUSTED_MODULE_PREFIX", "refuse_remote_code"]

#: the package whose module classes a folder may name without ``trust_remote_code`` (with the dot: a package named
#: ``sentence_transformers_x`` is another package)
TRUSTED_MODULE_PREFIX = "sentence_transformers."
_HINT = "loading it would run code from the folder (or import another package); pass trust_remote_code=True only " \
        "if you trust the folder's code"


def refuse_remote_code(folder: str | os.PathLike[str], trust_remote_code: bool = False) -> None:
    """Refuse a folder whose loading would run code that it selects, unless ``trust_remote_code``.

    Checked, without importing anything: every ``"type"`` in ``modules.json`` is a class of the
    sentence_transformers package, and neither the folder's ``config.json`` nor that of a module sub-folder
    ``modules.json`` lists has an ``"auto_map"`` (classes transformers would import from the folder's Python files).

    Args:
        folder: The model folder (a body, a saved setfit_lite or setfit model).
        trust_remote_code: Whether the caller accepts code from the folder; True skips the checks.

    Raises:
        ValueError: Naming the file and the module type or ``auto_map`` that would run code, or a ``modules.json``
            that is not a list of modules.
    """
    if trust_remote_code:
        return
    root = Path(folder)
    configs = [root / "config.json"]
    modules_path = root / "modules.json"
    if modules_path.is_file():
        modules = load_json(modules_path, what="sentence-transformers modules file")
        if not isinstance(modules, list) or not all(isinstance(m, dict) for m in modules):
            raise ValueError(f"{modules_path} must hold a list of modules (JSON objects)")
        for module in modules:
            kind = module.get("type")
            if not isinstance(kind, str) or not kind.startswith(TRUSTED_MODULE_PREFIX):
                raise ValueError(f"{modules_path} names module type {kind!r}, which is not a class of the "
                                 f"sentence_transformers package: {_HINT}")
            sub = module.get("path")
            if isinstance(sub, str) and sub and is_inside(sub):
                configs.append(root / sub / "config.json")
    for config_path in dict.fromkeys(configs):
        auto_map = _auto_map(config_path) if config_path.is_file() else None
        if auto_map:
            named = ", ".join(sorted(map(str, auto_map))) if isinstance(auto_map, dict) else repr(auto_map)
            raise ValueError(f"{config_path} has an auto_map (classes to import from the folder's Python files: "
                             f"{named}): {_HINT}")


def _auto_map(config_path: Path) -> Any:
    """The ``auto_map`` of a transformers config file (None when it has none, or is not a JSON object)."""
    config = load_json(config_path, what="transformers config")
    return config.get("auto_map") if isinstance(config, dict) else None
