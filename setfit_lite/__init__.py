"""setfit_lite: few-shot text classification with Sentence Transformers, setfit's API, faster and safer."""

from __future__ import annotations

import importlib
from typing import Any

from . import moved as _moved
from .version import __version__

_moved.install()  # the module paths of earlier releases (setfit_lite.export, ...) stay importable

_EXPORTS = {
    "SetFitModel": "modeling",
    "SetFitHead": "heads.torch_head",
    "SetFitModelCardData": "model_card",
    "Trainer": "trainer",
    "TrainingArguments": "training_args",
    "sample_dataset": "data",
    "get_templated_dataset": "data",
    "load_sample": "data",
    "suggest_labels": "active",
    "DistillationTrainer": "distillation",
    "GaudiTrainer": "device_trainers",
    "IPUTrainer": "device_trainers",
    "AbsaModel": "absa.modeling",
    "AbsaTrainer": "absa.trainer",
    "AspectModel": "absa.modeling",
    "PolarityModel": "absa.modeling",
    "AspectExtractor": "absa.aspect_extractor",
    "SetFitTrainer": "trainer",
    "DistillationSetFitTrainer": "distillation",
}

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str) -> Any:
    """Import the heavy modules (torch, transformers) only when their names are first used."""
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'setfit_lite' has no attribute {name!r}")
