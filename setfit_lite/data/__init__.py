"""Input handling: turn user data into validated texts and labels, encode labels, sample few-shot subsets.

Everything here runs before any model work, so that a bad dataset fails fast with a message that names the
problem (the row, the column, the type) instead of failing deep inside training.

- `readers`: any supported input -> `LabeledData` (`to_labeled_data`);
- `labels`: label validation and encoding to class ids (`encode_labels`);
- `subsets`: `sample_dataset`, a few-shot subset of N examples per label as setfit draws them;
- `templates`: `get_templated_dataset`, zero-shot examples from label names;
- `samples`: `load_sample`, the real data shipped in ``setfit_lite/resources``;
- `checks`: the shared container and text checks (`validate_texts`);
- `benchmark_splits`: setfit's benchmark splits (`SAMPLE_SIZES`, `SEEDS`,
  `create_fewshot_splits`, ...);
- `torch_dataset`: setfit's ``SetFitDataset`` (loaded, with torch, when the name is first used).

This package imports only numpy and the standard library when loaded (``datasets`` and scikit-learn when a
function needs them), so torch-free inference can use it.
"""

from __future__ import annotations

from typing import Any

from .benchmark_splits import (
    SAMPLE_SIZES,
    SEEDS,
    add_templated_examples,
    create_fewshot_splits,
    create_fewshot_splits_multilabel,
    create_samples,
    create_samples_multilabel,
)
from .checks import check_ordered_rows, check_text_collection, validate_texts
from .labels import check_label_names, check_trainable, encode_labels, relabelled
from .readers import LabeledData, to_labeled_data
from .samples import SAMPLES, demo_dataset, load_sample
from .subsets import sample_dataset
from .templates import get_templated_dataset

__all__ = [
    "SAMPLES",
    "SAMPLE_SIZES",
    "SEEDS",
    "LabeledData",
    "SetFitDataset",
    "add_templated_examples",
    "check_label_names",
    "check_ordered_rows",
    "check_text_collection",
    "check_trainable",
    "create_fewshot_splits",
    "create_fewshot_splits_multilabel",
    "create_samples",
    "create_samples_multilabel",
    "demo_dataset",
    "encode_labels",
    "get_templated_dataset",
    "load_sample",
    "relabelled",
    "sample_dataset",
    "to_labeled_data",
    "validate_texts",
]


def __getattr__(name: str) -> Any:
    """``SetFitDataset`` imports torch: load it when the name is first used, so this package stays torch-free."""
    if name == "SetFitDataset":
        from .torch_dataset import SetFitDataset

        return SetFitDataset
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
