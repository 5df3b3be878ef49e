"""Zero-shot: synthetic training examples from label names and a template, like ``setfit.get_templated_dataset``."""

from __future__ import annotations

import string
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .checks import short_repr
from .labels import index_in, is_multi_hot, kind_name, normalize_labels
from .readers import as_table, to_labeled_data

if TYPE_CHECKING:
    import datasets

__all__ = ["get_templated_dataset"]


def _label_names(reference_dataset: Any, label_names_column: str, label_column: str) -> list[str]:
    """Label names of a ``datasets.Dataset``: its ClassLabel feature, or the id → name pairs of a names column."""
    features = getattr(reference_dataset, "features", None) or {}
    names = getattr(features.get(label_column), "names", None)
    if names:
        return list(names)
    table = as_table(reference_dataset)
    if table is None or label_names_column not in table or label_column not in table:
        raise ValueError(
            f"reference_dataset has neither a ClassLabel {label_column!r} feature nor a {label_names_column!r} "
            "column of label names; pass candidate_labels="
        )
    pairs = sorted(set(zip(table[label_column], table[label_names_column])))
    ids = [i for i, _ in pairs]
    if len(set(ids)) != len(ids) or ids != list(range(len(ids))):
        raise ValueError(f"reference_dataset: {label_column!r} must map one-to-one onto 0..n-1, got {pairs[:10]}")
    return [str(name) for _, name in pairs]


def _is_empty(dataset: Any, text_column: str, label_column: str) -> bool:
    """Whether ``dataset`` has no rows (setfit's ``Dataset.from_dict({})`` included); a dataset with columns must
    still have the text and label columns (ValueError naming the missing ones)."""
    table = as_table(dataset)
    if table is None or any(table.values()):
        return False
    missing = sorted({text_column, label_column} - set(table))
    if table and missing:
        raise ValueError(f"The following columns are missing from the input dataset: {missing}.")
    return True


def _check_template(template: Any) -> None:
    """Refuse a template that is not a format string with exactly one bare ``{}`` (escaped ``{{``/``}}`` are fine)."""
    problem = f"template must contain exactly one '{{}}' for the label name, got {template!r}"
    if not isinstance(template, str):
        raise TypeError(problem)
    try:
        fields = [parts[1:] for parts in string.Formatter().parse(template) if parts[1] is not None]
    except ValueError as err:  # unbalanced braces
        raise ValueError(f"{problem} ({err})") from None
    if fields != [("", "", None)]:
        raise ValueError(problem)


def get_templated_dataset(
    dataset: Any = None,
    candidate_labels: Sequence[str] | None = None,
    reference_dataset: Any = None,
    template: str = "This sentence is {}",
    sample_size: int = 2,
    text_column: str = "text",
    label_column: str = "label",
    multi_label: bool = False,
    label_names_column: str = "label_text",
) -> datasets.Dataset:
    """Synthetic training examples from label names (zero-shot), like `setfit.get_templated_dataset`.

    Each label name gives `sample_size` copies of `template.format(name)`, labelled with the name's index (a
    one-hot list when `multi_label`). Pass `labels=candidate_labels` to `SetFitModel.from_pretrained` to get names
    back from `predict`; training on such a set alone uses the zero-shot prototypes
    (`TrainingArguments.zero_shot`).

    Args:
        dataset: Real examples the templated ones are appended to (any table `Trainer` reads; an empty one counts as
            none), their labels ids into `candidate_labels` or the names themselves; None for none.
        candidate_labels: The label names; give this or `reference_dataset`.
        reference_dataset: A dataset whose label names are used: a `datasets.Dataset`, or a name or folder
            `datasets.load_dataset` reads, as in setfit.
        template: The text, with `{}` where the name goes.
        sample_size: The copies of each label's text.
        text_column: The text column of `dataset` and of the result.
        label_column: The label column of `dataset` and of the result.
        multi_label: Whether labels are one-hot lists (multi-label data).
        label_names_column: The column of `reference_dataset` that holds the label names, when its labels are not a
            `ClassLabel`.

    Returns:
        A `datasets.Dataset`: `dataset`'s rows, then the templated ones.

    Raises:
        ValueError: Both or neither of `candidate_labels` and `reference_dataset`, repeated or no names, a
            template without `{}`, or labels of `dataset` that do not fit `candidate_labels`.
        TypeError: Names that are not non-empty strings.

    Example:
        ```python
        from setfit_lite import get_templated_dataset

        train = get_templated_dataset(candidate_labels=["sports", "politics"], sample_size=8)
        print(len(train), train[0]["text"])   # 16 This sentence is sports
        ```
    """
    from datasets import Dataset, concatenate_datasets, load_dataset

    if (candidate_labels is None) == (reference_dataset is None):
        raise ValueError("Must supply exactly one of `reference_dataset` or `candidate_labels` to "
                         f"`get_templated_dataset()`! (got {'both' if candidate_labels is not None else 'neither'})")
    if isinstance(reference_dataset, str):  # a dataset name or folder, as setfit takes it
        reference_dataset = load_dataset(reference_dataset, split="train")
    if candidate_labels is None:
        candidate_labels = _label_names(reference_dataset, label_names_column, label_column)
    if isinstance(candidate_labels, (str, bytes)) or not isinstance(candidate_labels, Iterable):
        raise TypeError(f"candidate_labels must be a list of non-empty strings, got a {type(candidate_labels).__name__}"
                        f" {candidate_labels!r}")
    candidate_labels = list(candidate_labels)
    for i, name in enumerate(candidate_labels):
        if not isinstance(name, str) or not name.strip():
            raise TypeError(f"candidate_labels must be a list of non-empty strings: candidate_labels[{i}] is {name!r}")
    if not candidate_labels:
        raise ValueError("candidate_labels must be non-empty, got []")
    repeated = sorted({name for name in candidate_labels if candidate_labels.count(name) > 1})
    if repeated:
        raise ValueError(f"candidate_labels must be unique; repeated: {short_repr(repeated)}")
    _check_template(template)
    if isinstance(sample_size, bool) or not isinstance(sample_size, int) or sample_size < 1:
        raise ValueError(f"sample_size must be a positive int, got {sample_size!r}")
    n = len(candidate_labels)
    texts, labels = [], []
    for i, name in enumerate(candidate_labels):
        target = [int(j == i) for j in range(n)] if multi_label else i
        texts += [template.format(name)] * sample_size
        labels += [target] * sample_size
    templated = Dataset.from_dict({text_column: texts, label_column: labels})
    if dataset is not None and _is_empty(dataset, text_column, label_column):
        dataset = None
    if dataset is None:
        return templated
    real = to_labeled_data(dataset, text_column=text_column, label_column=label_column)
    values, kind = normalize_labels(real.labels)
    if (kind == "multi") != multi_label:
        raise ValueError(f"dataset labels are {kind_name(kind)} but multi_label={multi_label}")
    if multi_label and (any(len(row) != n for row in values) or not is_multi_hot(values)):
        raise ValueError(f"multi-label dataset rows must be multi-hot vectors of length {n} (one per candidate label)")
    if kind == "str":  # label names: ids into candidate_labels
        values = index_in(values, candidate_labels)
    if not multi_label and not all(0 <= v < n for v in values):
        raise ValueError(f"dataset labels must be ids 0..{n - 1} into candidate_labels, got {short_repr(values)}")
    real_ds = Dataset.from_dict({text_column: real.texts, label_column: values})
    return concatenate_datasets([real_ds, templated.cast(real_ds.features)])
