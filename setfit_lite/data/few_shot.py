"""Few-shot sampling: up to N rows per label, the same rows ``setfit.sample_dataset`` picks for a seed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..params import check_param
from .checks import is_dataframe, is_dataset, is_dataset_dict, pick_split_error
from .labels import normalize_labels
from .readers import as_table

__all__ = ["sample_dataset"]


def _sample_indices(labels: list, num_samples: int, seed: int) -> list[int]:
    """setfit's ``sample_dataset`` selection, as indices into the original rows.

    setfit shuffles (``Dataset.shuffle(seed)``: ``default_rng(seed).permutation``), groups by label in sorted
    label order, draws ``min(num_samples, size)`` rows per group with ``DataFrame.sample(random_state=seed)``
    (``RandomState(seed).choice`` without replacement), concatenates, and shuffles again with the same seed.
    """
    values, kind = normalize_labels(labels)
    keys = [tuple(v) for v in values] if kind == "multi" else values
    order = np.random.default_rng(seed).permutation(len(keys))
    groups: dict[Any, list[int]] = {}
    for index in order.tolist():
        groups.setdefault(keys[index], []).append(index)
    chosen: list[int] = []
    for key in sorted(groups):
        members = groups[key]
        picks = np.random.RandomState(seed).choice(len(members), size=min(num_samples, len(members)), replace=False)
        chosen.extend(members[p] for p in picks.tolist())
    final = np.random.default_rng(seed).permutation(len(chosen))
    return [chosen[p] for p in final.tolist()]


def sample_dataset(dataset: Any, label_column: str = "label", num_samples: int = 8, seed: int = 42) -> Any:
    """Take up to ``num_samples`` random rows per label, like ``setfit.sample_dataset``.

    Returns the input's type: ``datasets.Dataset`` (same rows as setfit picks for the same seed), pandas
    DataFrame, list of dicts, or dict of lists. Classes with fewer rows keep all of them. Deterministic for a
    ``seed``.
    """
    num_samples = check_param("num_samples", num_samples)
    if is_dataset_dict(dataset):
        raise pick_split_error(list(dataset.keys()))

    def missing_column(available: list) -> ValueError:
        return ValueError(f"no label column {label_column!r}; available columns: {available}")

    if is_dataset(dataset):
        if label_column not in dataset.column_names:
            raise missing_column(dataset.column_names)
        if len(dataset) == 0:
            return dataset
        return dataset.select(_sample_indices(list(dataset[label_column]), num_samples, seed))
    if is_dataframe(dataset):
        if label_column not in dataset.columns:
            raise missing_column(list(dataset.columns))
        if len(dataset) == 0:
            return dataset.copy()
        return dataset.iloc[_sample_indices(dataset[label_column].tolist(), num_samples, seed)].reset_index(drop=True)
    if isinstance(dataset, Mapping):
        table = as_table(dataset)
        if label_column not in table:
            raise missing_column(list(table))
        if not table[label_column]:
            return {name: [] for name in table}
        indices = _sample_indices(table[label_column], num_samples, seed)
        return {name: [values[i] for i in indices] for name, values in table.items()}
    if isinstance(dataset, (list, tuple)) and all(isinstance(row, Mapping) for row in dataset):
        if not dataset:
            return []
        for i, row in enumerate(dataset):
            if label_column not in row:
                raise missing_column(list(row)) if i == 0 else ValueError(f"row {i} has no {label_column!r} key")
        indices = _sample_indices([row[label_column] for row in dataset], num_samples, seed)
        return [dataset[i] for i in indices]
    raise TypeError(
        f"sample_dataset takes a datasets.Dataset, a pandas.DataFrame, a list of dicts or a dict of lists, "
        f"got {type(dataset).__name__}"
    )
