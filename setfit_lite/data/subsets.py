"""Few-shot subsets: up to N rows per label, the same rows ``setfit.sample_dataset`` picks for a seed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..config.params import PARAMS, check_param
from ..config.rules import check_rule, optional
from .checks import is_dataframe, is_dataset, is_dataset_dict, pick_split_error
from .labels import normalize_labels
from .readers import as_table

__all__ = ["sample_dataset"]

#: ``sample_dataset``'s seed: the shared seed rule, or None as in setfit (``Dataset.shuffle(seed=None)``)
_SEED = optional(PARAMS["seed"], "unseeded: a different sample each call")


def _sample_indices(labels: list, num_samples: int | Mapping[Any, int], seed: int | None) -> list[int]:
    """setfit's ``sample_dataset`` selection, as indices into the original rows.

    setfit shuffles (``Dataset.shuffle(seed)``: ``default_rng(seed).permutation``), groups by label in sorted
    label order, draws ``min(num_samples, size)`` rows per group with ``DataFrame.sample(random_state=seed)``
    (``RandomState(seed).choice`` without replacement), concatenates, and shuffles again with the same seed.
    A mapping ``num_samples`` gives each label its own count.
    """
    if labels and all(isinstance(v, (bool, np.bool_)) for v in labels):  # setfit groups bools too
        keys: list = [bool(v) for v in labels]
    else:
        values, kind = normalize_labels(labels)
        keys = [tuple(v) for v in values] if kind == "multi" else values
    order = np.random.default_rng(seed).permutation(len(keys))
    groups: dict[Any, list[int]] = {}
    for index in order.tolist():
        groups.setdefault(keys[index], []).append(index)
    counts = _counts_per_label(num_samples, sorted(groups))
    chosen: list[int] = []
    for key in sorted(groups):
        members = groups[key]
        picks = np.random.RandomState(seed).choice(len(members), size=min(counts[key], len(members)), replace=False)
        chosen.extend(members[p] for p in picks.tolist())
    final = np.random.default_rng(seed).permutation(len(chosen))
    return [chosen[p] for p in final.tolist()]


def _counts_per_label(num_samples: int | Mapping[Any, int], labels: list) -> dict[Any, int]:
    """The number of rows to draw for each label: ``num_samples`` for all, or a mapping's count per label (every
    label of the data needs one; list labels of multi-label rows are keyed as tuples)."""
    if not isinstance(num_samples, Mapping):
        return dict.fromkeys(labels, num_samples)
    given = {tuple(k) if isinstance(k, list) else k: v for k, v in num_samples.items()}
    missing, unknown = [k for k in labels if k not in given], [k for k in given if k not in labels]
    if missing or unknown:
        problems = [f"no count for label {', '.join(map(repr, missing))}"] * bool(missing)
        problems += [f"label {', '.join(map(repr, unknown))} not in the data"] * bool(unknown)
        raise ValueError(f"num_samples: {'; '.join(problems)} (labels: {labels})")
    return {k: check_param("num_samples", given[k]) for k in labels}


def sample_dataset(dataset: Any, label_column: str = "label", num_samples: int | Mapping[Any, int] = 8,
                   seed: int | None = 42) -> Any:
    """Take up to `num_samples` random rows per label, like `setfit.sample_dataset`.

    Args:
        dataset: A `datasets.Dataset` (the same rows as setfit picks for the same seed), a pandas DataFrame, a list
            of dicts or a dict of lists.
        label_column: The column holding the labels.
        num_samples: The rows per label (a class with fewer keeps all of them), or a mapping `{label: count}` for
            every label of the data, to draw a skewed few-shot set such as `{0: 32, 1: 8, 2: 2}` (each label's rows
            are those a uniform `num_samples` of that count draws for it).
        seed: The random seed, an integer in [0, 2**32 - 1]; the same seed gives the same rows. None, as in
            setfit, draws unseeded: a different sample each call.

    Returns:
        The rows, of the input's type.

    Raises:
        ValueError: No `label_column`, a `DatasetDict` (pick a split), a mapping that does not cover the
            labels, or a `seed` out of range.
        TypeError: An input of another type, or a `seed` that is not an integer (a bool included) or None.

    Example:
        ```python
        from setfit_lite import load_sample, sample_dataset

        train = sample_dataset(load_sample("sst2"), num_samples=8, seed=0)
        print(len(train))   # 16
        ```
    """
    if not isinstance(num_samples, Mapping):
        num_samples = check_param("num_samples", num_samples)
    seed = check_rule(_SEED, "seed", seed)
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
