"""setfit's benchmark splits: few-shot training splits for each sample size over fixed seeds.

``create_fewshot_splits`` draws, for each sample size and each of the 10 `SEEDS`, up to ``sample_size``
rows per label with pandas' ``DataFrame.sample(random_state=seed)``: the same rows as setfit for the same data.
pandas and ``datasets`` are imported when a function needs them (setfit's ``SetFitDataset``, which needs
torch, is in `torch_dataset`).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .templates import get_templated_dataset

if TYPE_CHECKING:
    import datasets
    import pandas as pd

__all__ = ["SAMPLE_SIZES", "SEEDS", "add_templated_examples", "create_fewshot_splits",
           "create_fewshot_splits_multilabel", "create_samples", "create_samples_multilabel"]

SEEDS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
SAMPLE_SIZES = [2, 4, 8, 16, 32, 64]


def _at_most(subset: pd.DataFrame, sample_size: int, seed: int) -> pd.DataFrame:
    return subset.sample(sample_size, random_state=seed, replace=False) if len(subset) > sample_size else subset


def create_samples(df: pd.DataFrame, sample_size: int, seed: int) -> pd.DataFrame:
    """setfit's benchmark helper: up to `sample_size` random rows of each label.

    Args:
        df: A DataFrame with a `label` column.
        sample_size: The rows per label at most (a smaller class keeps all its rows).
        seed: The random seed.

    Returns:
        The rows, labels in order of first appearance.
    """
    import pandas as pd

    return pd.concat([_at_most(df[df["label"] == label], sample_size, seed) for label in df["label"].unique()])


def create_samples_multilabel(df: pd.DataFrame, sample_size: int, seed: int) -> pd.DataFrame:
    """setfit's benchmark helper for multi-label data: up to `sample_size` rows where each label is 1.

    Args:
        df: A DataFrame with a `text` column and one 0/1 column per label.
        sample_size: The rows per label at most.
        seed: The random seed.

    Returns:
        The rows, without duplicates.
    """
    import pandas as pd

    labels = [column for column in df.columns if column != "text"]
    return pd.concat([_at_most(df[df[label] == 1], sample_size, seed) for label in labels]).drop_duplicates()


def create_fewshot_splits(dataset: datasets.Dataset, sample_sizes: Sequence[int], add_data_augmentation: bool = False,
                          dataset_name: str | None = None) -> datasets.DatasetDict:
    """setfit's benchmark splits: `create_samples` for every size and each of the 10 seeds of `SEEDS`.

    Args:
        dataset: A dataset with `text` and `label` columns.
        sample_sizes: The rows per label of the splits.
        add_data_augmentation: Whether each split also gets `sample_size` templated examples per label of
            `dataset_name` (`get_templated_dataset`), shuffled in with the split's seed.
        dataset_name: The dataset whose label names the templates use (needed with `add_data_augmentation`).

    Returns:
        A `DatasetDict` of splits named `train-{sample_size}-{i}`.

    Raises:
        ValueError: `add_data_augmentation` without `dataset_name`.
    """
    import pandas as pd
    from datasets import Dataset, DatasetDict

    if add_data_augmentation and dataset_name is None:
        raise ValueError("If `add_data_augmentation` is True, must supply a `dataset_name` to create_fewshot_splits()!")
    df = dataset.to_pandas()
    splits = DatasetDict()
    for sample_size in sample_sizes:
        augmented = (get_templated_dataset(reference_dataset=dataset_name, sample_size=sample_size).to_pandas()
                     if add_data_augmentation else None)
        for idx, seed in enumerate(SEEDS):
            split = create_samples(df, sample_size, seed)
            if augmented is not None:
                split = pd.concat([split, augmented], axis=0).sample(frac=1, random_state=seed)
            splits[f"train-{sample_size}-{idx}"] = Dataset.from_pandas(split, preserve_index=False)
    return splits


def create_fewshot_splits_multilabel(dataset: datasets.Dataset, sample_sizes: Sequence[int]
                                     ) -> datasets.DatasetDict:
    """`create_fewshot_splits` for multi-label data.

    Args:
        dataset: A dataset with a `text` column and one 0/1 column per label.
        sample_sizes: The rows per label of the splits.

    Returns:
        A `DatasetDict` of splits named `train-{sample_size}-{i}`.
    """
    from datasets import Dataset, DatasetDict

    df = dataset.to_pandas()
    splits = DatasetDict()
    for sample_size in sample_sizes:
        for idx, seed in enumerate(SEEDS):
            split = create_samples_multilabel(df, sample_size, seed)
            splits[f"train-{sample_size}-{idx}"] = Dataset.from_pandas(split, preserve_index=False)
    return splits


def add_templated_examples(dataset: Any, candidate_labels: Sequence[str], template: str = "This sentence is {}",
                           sample_size: int = 2, text_column: str = "text", label_column: str = "label",
                           multi_label: bool = False) -> datasets.Dataset:
    """setfit 0.x's name of [`get_templated_dataset`][setfit_lite.data.get_templated_dataset] (a
    `DeprecationWarning`).

    Args:
        dataset: As in `get_templated_dataset`.
        candidate_labels: As in `get_templated_dataset`.
        template: As in `get_templated_dataset`.
        sample_size: As in `get_templated_dataset`.
        text_column: As in `get_templated_dataset`.
        label_column: As in `get_templated_dataset`.
        multi_label: As in `get_templated_dataset`.

    Returns:
        What `get_templated_dataset` returns.
    """
    warnings.warn("`add_templated_examples` is deprecated, use `get_templated_dataset` (same arguments by name)",
                  DeprecationWarning, stacklevel=2)
    return get_templated_dataset(dataset, candidate_labels=candidate_labels, template=template,
                                 sample_size=sample_size, text_column=text_column, label_column=label_column,
                                 multi_label=multi_label)
