"""Zero-shot: synthetic training examples from label names and a template, like ``setfit.get_templated_dataset``."""

from __future__ import annotations

import string
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .checks import is_dataframe, is_dataset, is_dataset_dict, short_repr
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


def _empty_columns(dataset: Any, text_column: str, label_column: str) -> list[str] | None:
    """The columns of ``dataset`` when it has no rows (none for setfit's ``Dataset.from_dict({})``), None when it has
    rows; an empty dataset with columns must still have the text and label columns (ValueError naming the missing
    ones)."""
    table = as_table(dataset)
    if table is None or any(table.values()):
        return None
    missing = sorted({text_column, label_column} - set(table))
    if table and missing:
        raise ValueError(f"The following columns are missing from the input dataset: {missing}.")
    return list(table)


def _check_template(template: Any) -> None:
    """Refuse a template that is not a format string with exactly one positional replacement field for the name.

    The field is ``{}`` or ``{0}``, with any conversion (``!s``, ``!r``, ``!a``) and format spec (``:>10``), as
    `str.format` takes them; escaped ``{{``/``}}`` are plain text. Named fields (``{name}``), attribute or index
    access (``{0.x}``, ``{0[1]}``) and format specs with nested fields (``{:{}}``) are refused.
    """
    problem = ("template must contain exactly one replacement field for the label name ('{}' or '{0}', optionally "
               f"with a conversion and format spec such as '{{!r}}' or '{{:>10}}'), got {template!r}")
    if not isinstance(template, str):
        raise TypeError(problem)
    try:
        fields = [(name, spec) for _, name, spec, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as err:  # unbalanced braces
        raise ValueError(f"{problem} ({err})") from None
    if len(fields) != 1:
        raise ValueError(f"{problem} ({len(fields)} fields)")
    name, spec = fields[0]
    if name not in ("", "0"):
        raise ValueError(f"{problem} (the field {{{name}}} is named or indexed)")
    if "{" in spec:
        raise ValueError(f"{problem} (the format spec {spec!r} holds a nested field)")


def _format_all(template: str, names: Sequence[str]) -> list[str]:
    """``template.format(name)`` for each name; a ValueError naming the template when one fails (``{:d}``, ``{!x}``)."""
    texts = []
    for name in names:
        try:
            texts.append(template.format(name))
        except (ValueError, TypeError, IndexError, KeyError, AttributeError) as err:
            raise ValueError(f"template {template!r} cannot format the label name {name!r}: {err}") from None
    return texts


def _as_dataset(dataset: Any, real: Any, text_column: str, label_column: str) -> datasets.Dataset:
    """``dataset`` as a ``datasets.Dataset`` with all its columns in their order: itself (or its one split) when it
    is one, else built from its table (``real``'s texts, labels and other columns when it is not a table)."""
    from datasets import Dataset

    if is_dataset_dict(dataset):
        dataset = dataset[next(iter(dataset.keys()))]  # as_table has checked there is one split
    if is_dataset(dataset):
        return dataset
    if is_dataframe(dataset):
        return Dataset.from_pandas(dataset, preserve_index=False)
    table = as_table(dataset) if not isinstance(dataset, (str, bytes)) else None
    if table is None:
        table = {text_column: real.texts, label_column: real.labels, **real.columns}
    return Dataset.from_dict(table)


def _label_fits(feature: Any, n: int, label_column: str) -> None:
    """Refuse a ``ClassLabel`` label feature with fewer classes than the candidate labels (the templated ids would
    not fit it)."""
    num_classes = getattr(feature, "num_classes", None)
    if num_classes is not None and hasattr(feature, "str2int") and num_classes < n:
        raise ValueError(f"dataset's {label_column!r} is a ClassLabel of {num_classes} names "
                         f"{short_repr(feature.names)} but there are {n} candidate_labels: the templated ids "
                         f"0..{n - 1} do not fit it")


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
    one-hot list when `multi_label`), appended to `dataset` as setfit appends them: its columns, their order and
    features (a `ClassLabel` included) are kept, and its other columns are None in the templated rows. Pass
    `labels=candidate_labels` to `SetFitModel.from_pretrained` to get names back from `predict`; training on such a
    set alone uses the zero-shot prototypes (`TrainingArguments.zero_shot`).

    Args:
        dataset: Real examples the templated ones are appended to (any table `Trainer` reads; one without columns
            counts as none), their labels ids into `candidate_labels` or the names themselves (turned into their
            ids, an int64 column); None for none.
        candidate_labels: The label names; give this or `reference_dataset`.
        reference_dataset: A dataset whose label names are used: a `datasets.Dataset`, or a name or folder
            `datasets.load_dataset` reads, as in setfit.
        template: The text, with one positional replacement field where the name goes: `{}` or `{0}`, with any
            conversion and format spec (`{!r}`, `{:>10}`) that formats a string.
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
            template with no replacement field, two, or a named or indexed one (`{name}`, `{0[1]}`), or one that
            cannot format a name (`{:d}`), a `sample_size` below 1, labels of `dataset` that do not fit
            `candidate_labels`, or a `ClassLabel` label feature with fewer names than `candidate_labels`.
        TypeError: Names that are not non-empty strings, or a template that is not a string.

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
    for i, text in enumerate(_format_all(template, candidate_labels)):
        target = [int(j == i) for j in range(n)] if multi_label else i
        texts += [text] * sample_size
        labels += [target] * sample_size
    templated = Dataset.from_dict({text_column: texts, label_column: labels})
    empty_columns = None if dataset is None else _empty_columns(dataset, text_column, label_column)
    if dataset is None or empty_columns == []:
        return templated
    real, kind = None, None
    if empty_columns is None:  # rows to check
        real = to_labeled_data(dataset, text_column=text_column, label_column=label_column)
        values, kind = normalize_labels(real.labels)
        if (kind == "multi") != multi_label:
            raise ValueError(f"dataset labels are {kind_name(kind)} but multi_label={multi_label}")
        if multi_label and (any(len(row) != n for row in values) or not is_multi_hot(values)):
            raise ValueError(
                f"multi-label dataset rows must be multi-hot vectors of length {n} (one per candidate label)")
        if kind == "str":  # label names: ids into candidate_labels
            values = index_in(values, candidate_labels)
        if not multi_label and not all(0 <= v < n for v in values):
            raise ValueError(f"dataset labels must be ids 0..{n - 1} into candidate_labels, got {short_repr(values)}")
    base = _as_dataset(dataset, real, text_column, label_column)
    _label_fits(base.features[label_column], n, label_column)
    features = base.features.copy()
    if kind == "str":  # the names become their ids, in the label column's place
        order = base.column_names
        base = base.remove_columns(label_column).add_column(label_column, values).select_columns(order)
        features = base.features.copy()
    for column in (text_column, label_column):  # the columns of an empty dataset can be untyped
        if getattr(features[column], "dtype", None) == "null":
            features[column] = templated.features[column]
    added = {column: [None] * len(texts) for column in base.column_names}  # setfit's None in the other columns
    added.update({text_column: texts, label_column: labels})
    added_ds = Dataset.from_dict(added, features=features)
    return concatenate_datasets([base, added_ds]) if len(base) else added_ds
