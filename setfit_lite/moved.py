"""The module paths of earlier releases, still importable: ``import setfit_lite.export``, ``from setfit_lite.params
import check_param`` and the like give the modules that hold those names now (`MOVED`).

A finder on ``sys.meta_path`` (installed by ``import setfit_lite``) answers for the old names only, and only when
one is imported: nothing is loaded in advance, so the old paths cost nothing to code that does not use them. An old
path whose names now live in one module is that module (``setfit_lite.inference is
setfit_lite.runtime.predictor``); an old path that was split (``setfit_lite.export``: the ONNX runtime and the ONNX
writer; ``setfit_lite.static``: the static runtime and the static writer) is a module that looks each name up in
its new modules in order, so ``from setfit_lite.export import OnnxSetFitModel`` still imports no torch.

Examples:
    >>> import setfit_lite.inference, setfit_lite.runtime.predictor
    >>> setfit_lite.inference is setfit_lite.runtime.predictor
    True
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any

__all__ = ["MOVED", "install"]

# old path -> the modules that hold its names now, searched in this order
MOVED: dict[str, tuple[str, ...]] = {
    "setfit_lite.inference": ("setfit_lite.runtime.predictor",),
    "setfit_lite.chunking": ("setfit_lite.runtime.chunking",),
    "setfit_lite.parallel": ("setfit_lite.runtime.threads",),
    "setfit_lite.signal_stack": ("setfit_lite.runtime.signal_stack",),
    "setfit_lite.export": ("setfit_lite.runtime.onnx", "setfit_lite.exporting.onnx"),
    "setfit_lite.static": ("setfit_lite.runtime.static", "setfit_lite.exporting.static"),
    "setfit_lite.rules": ("setfit_lite.config.rules",),
    "setfit_lite.params": ("setfit_lite.config.params",),
    "setfit_lite.loss_names": ("setfit_lite.config.loss_names",),
    "setfit_lite.sampling_policy": ("setfit_lite.config.sampling_policy",),
    "setfit_lite.batch_samplers": ("setfit_lite.training.batch_samplers",),
    "setfit_lite.checkpoint_files": ("setfit_lite.training.checkpoints",),
    "setfit_lite.callbacks": ("setfit_lite.training.callbacks",),
    "setfit_lite.calibration": ("setfit_lite.heads.calibration",),
    "setfit_lite.setfit_format": ("setfit_lite.heads.setfit_format",),
    "setfit_lite.jsonable": ("setfit_lite.serialization.jsonable",),
    "setfit_lite.heads.params": ("setfit_lite.heads.estimator_params",),
}


def _split_module(name: str, targets: tuple[str, ...]) -> ModuleType:
    """A module ``name`` whose attributes are looked up in the modules ``targets``, each imported when needed."""
    module = ModuleType(name, f"Moved: its names are now in {', '.join(targets)}.")

    def __getattr__(attribute: str) -> Any:
        if attribute == "__all__":
            return [n for target in targets for n in getattr(importlib.import_module(target), "__all__", ())]
        if attribute.startswith("__"):  # __path__, __file__, ...: asked by the import system, never moved names
            raise AttributeError(attribute)
        for target in targets:
            loaded = importlib.import_module(target)
            if hasattr(loaded, attribute):
                return getattr(loaded, attribute)
        raise AttributeError(f"module {name!r} (now {', '.join(targets)}) has no attribute {attribute!r}")

    def __dir__() -> list[str]:
        return sorted({n for target in targets for n in dir(importlib.import_module(target))})

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    module.__dir__ = __dir__  # type: ignore[method-assign]
    return module


class MovedFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old module paths of `MOVED` (and nothing else) and loads them as their new modules."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        return importlib.machinery.ModuleSpec(fullname, self) if fullname in MOVED else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        targets = MOVED[spec.name]
        if len(targets) > 1:
            return _split_module(spec.name, targets)
        module = importlib.import_module(targets[0])
        spec.loader_state = module.__spec__  # the import machinery sets __spec__ to ours: exec_module puts it back
        return module

    def exec_module(self, module: ModuleType) -> None:
        own = module.__spec__.loader_state if module.__spec__ is not None else None
        if own is not None:
            module.__spec__ = own


def install() -> None:
    """Put the finder on ``sys.meta_path`` (once; ``import setfit_lite`` calls this)."""
    if not any(isinstance(finder, MovedFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, MovedFinder())  # before any path finder: a stale file of an old path never wins
