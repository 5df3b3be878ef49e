"""Label work that grows with the data, not with rows times classes or groups squared, and gives the same results.

The work is counted, never timed: label names whose comparisons and hashes are counted, and label arrays whose
numpy operations count the elements they touch. The equivalence tests compare with straightforward reference
implementations of the documented rules.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from setfit_lite.data import labels as label_module
from setfit_lite.data.labels import check_label_names, encode_labels, index_in
from setfit_lite.training import batch_samplers
from setfit_lite.training.batch_samplers import PairSampler, PairSpace, SentenceBatchSampler, label_groups


class CountedName(str):
    """A label name that counts its comparisons and hashes (in ``work``); ``str()`` keeps it one."""

    work = 0

    def __str__(self) -> str:
        return self

    def __eq__(self, other: object) -> bool:
        CountedName.work += 1
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        CountedName.work += 1
        return str.__hash__(self)


class CountedArray(np.ndarray):
    """An array whose numpy operations (ufuncs, matrix products included) add the elements they touch to
    ``work``; their results are plain arrays."""

    work = 0

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        arrays = [np.asarray(x) for x in inputs]
        if ufunc is np.matmul:
            CountedArray.work += int(np.prod(arrays[0].shape)) * (arrays[1].shape[-1] if arrays[1].ndim > 1 else 1)
        else:
            CountedArray.work += max(a.size for a in arrays)
        plain = [x.view(np.ndarray) if isinstance(x, CountedArray) else x for x in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(o.view(np.ndarray) if isinstance(o, CountedArray) else o for o in kwargs["out"])
        return getattr(ufunc, method)(*plain, **kwargs)


def counted_names(count: int, prefix: str = "c") -> list[CountedName]:
    return [CountedName(f"{prefix}{i}") for i in range(count)]


def sparse_multi_hot(rows: int, labels: int, most: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y = np.zeros((rows, labels), dtype=np.int64)
    for i in range(rows):
        y[i, rng.choice(labels, rng.integers(0, most + 1), replace=False)] = 1
    return y


# work counts


def test_check_label_names_compares_names_linearly() -> None:
    names = counted_names(400)
    CountedName.work = 0
    assert check_label_names(names) == names
    assert CountedName.work <= 4 * len(names)  # a scan of the names for each name is 400 * 399 comparisons


def test_multi_label_matching_builds_the_label_index_once() -> None:
    known = counted_names(300)
    rng = np.random.default_rng(0)

    def work(rows: int) -> int:
        values = [[known[j] for j in rng.choice(len(known), 2, replace=False)] for _ in range(rows)]
        CountedName.work = 0
        ids, labels, multi = encode_labels(values, known)
        assert multi and ids.shape == (rows, len(known)) and ids.sum() == 2 * rows
        return CountedName.work

    # the index of the 300 known labels is built once: each more row costs its own 2 lookups, not 300 hashes
    assert (work(800) - work(400)) / 400 <= 20


def test_int_class_positions_check_does_not_scan_the_names_per_row() -> None:
    names = [CountedName(name) for name in sorted(str(i) for i in range(300))]  # "0", "1", "10", "100", ...

    def work(rows: int) -> int:
        CountedName.work = 0
        ids, labels, _ = encode_labels([2, 5, 7] * (rows // 3), names)
        assert len(ids) == rows
        return CountedName.work

    assert work(1200) - work(300) <= 50


def test_sentence_batches_group_rows_without_a_pass_per_group(monkeypatch: pytest.MonkeyPatch) -> None:
    real = batch_samplers.group_keys
    monkeypatch.setattr(batch_samplers, "group_keys", lambda labels: real(labels).view(CountedArray))
    y = np.random.default_rng(0).integers(0, 1500, 3000)
    groups = len(np.unique(y))
    CountedArray.work = 0
    sampler = SentenceBatchSampler(y, batch_size=8, seed=0)
    assert len(sampler.groups) == groups > 1000
    assert CountedArray.work <= 20 * len(y)  # comparing every row with each group's key is 3000 * groups


def test_pair_sampler_label_set_work_is_linear_at_start_and_per_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    real = batch_samplers.label_groups

    def counted(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        keys, sets = real(labels)
        return keys, None if sets is None else sets.view(CountedArray)

    monkeypatch.setattr(batch_samplers, "label_groups", counted)
    y = sparse_multi_hot(600, 300, 3, seed=1)
    CountedArray.work = 0
    sampler = PairSampler(y, batch_size=16, seed=0, num_iterations=1)
    groups, width = sampler.space.sets.shape
    assert groups > 300
    # the label sets once or twice over, not the groups squared times the labels
    assert CountedArray.work <= 3 * groups * width
    CountedArray.work = 0
    batches = list(itertools.islice(sampler.epoch(0), 20))
    drawn = sum(len(b["pair_target"]) for b in batches)
    assert drawn == 320
    assert CountedArray.work <= 4 * width * drawn  # per pair: not a comparison with every later group's set


# equivalence with straightforward references


def reference_pairs(labels: np.ndarray) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The pairs of `PairSpace` in its order: group by group (groups in key order), the pairs inside the group
    (``i <= j`` row-major) when of the kind, then each row of the group with each row of the later groups whose
    label sets share a label (positive) or do not (negative)."""
    labels = np.asarray(labels)
    if labels.ndim == 1:
        keys = labels
        groups = [np.flatnonzero(keys == k) for k in np.unique(keys)]
        sets = None
    else:
        unique = np.unique(labels, axis=0)
        groups = [np.flatnonzero((labels == row).all(axis=1)) for row in unique]
        sets = [set(np.flatnonzero(row)) for row in unique]
    pos: list[tuple[int, int]] = []
    neg: list[tuple[int, int]] = []
    for g, rows in enumerate(groups):
        inside = [(int(rows[i]), int(rows[j])) for i in range(len(rows)) for j in range(i, len(rows))]
        inside_positive = sets is None or bool(sets[g])
        for want, out in ((True, pos), (False, neg)):
            if inside_positive == want:
                out.extend(inside)
            later = [int(r) for h in range(g + 1, len(groups)) for r in groups[h]
                     if (sets is not None and bool(sets[g] & sets[h])) == want]
            out.extend((int(a), b) for a in rows for b in later)
    return pos, neg


DATASETS = {
    "classes": np.array([2, 0, 2, 1, 1, 0, 2, 2, 5]),
    "sparse": sparse_multi_hot(40, 30, 3, seed=2),  # empty label sets included
    "dense": (np.random.default_rng(3).random((30, 5)) < 0.6).astype(np.int64),
    "one_label_everywhere": np.hstack([np.ones((25, 1), np.int64), sparse_multi_hot(25, 70, 2, seed=4)]),
    "one_set": np.tile([[1, 0, 1]], (6, 1)),
    "sets_of_one_row": np.array([[1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 1], [0, 0, 0]]),
}


@pytest.mark.parametrize("name", list(DATASETS))
@pytest.mark.parametrize("costs", [None, (0, 0, 3), (10**12, 10**12, 1)])
def test_pair_space_equals_the_reference(name: str, costs: tuple[int, int, int] | None,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    if costs is not None:  # posting lists everywhere (in tiny chunks), or set comparisons everywhere
        for attr, value in zip(("_COUNT_COST", "_LOOKUP_COST", "_CHUNK"), costs):
            monkeypatch.setattr(batch_samplers, attr, value, raising=False)
    y = DATASETS[name]
    space = PairSpace(y)
    pos, neg = reference_pairs(y)
    assert [space.positive(k) for k in range(space.num_positive)] == pos
    assert [space.negative(k) for k in range(space.num_negative)] == neg


@pytest.mark.parametrize("name", list(DATASETS))
def test_groups_equal_the_reference(name: str) -> None:
    y = DATASETS[name]
    keys, sets = label_groups(y)
    if y.ndim == 1:
        assert np.array_equal(keys, y) and sets is None
    else:
        unique, inverse = np.unique(y, axis=0, return_inverse=True)
        assert keys.dtype == np.int64 and np.array_equal(keys, inverse.reshape(-1))
        assert np.array_equal(sets, unique != 0)
    sampler = SentenceBatchSampler(y, batch_size=4, seed=0)
    reference = [np.flatnonzero(keys == k) for k in np.unique(keys)]
    assert len(sampler.groups) == len(reference)
    assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(sampler.groups, reference))


@pytest.mark.parametrize("y", [np.array([[2, 0], [1, 0], [2, 0], [0, 1]]), np.array([[0.0, 1.0], [1.0, 1.0]]),
                               np.array([[True, False], [True, False]])])
def test_groups_of_other_values_equal_numpys(y: np.ndarray) -> None:
    unique, inverse = np.unique(y, axis=0, return_inverse=True)
    keys, sets = label_groups(y)
    assert np.array_equal(keys, inverse.reshape(-1)) and np.array_equal(sets, unique != 0)


def reference_multi_hot(rows: list[list], known: list) -> np.ndarray:
    """Multi-hot rows of label values: a value is the known label equal to it or, for a str, the int it writes."""
    def position(value: object) -> int:
        for i, label in enumerate(known):
            if value == label or (isinstance(label, int) and value == str(label)):
                return i
        raise KeyError(value)

    ids = np.zeros((len(rows), len(known)), dtype=np.int64)
    for i, row in enumerate(rows):
        for value in row:
            ids[i, position(value)] = 1
    return ids


@pytest.mark.parametrize(("rows", "known"), [
    ([["b", "a"], [], ["c"], ["a", "a"]], ["c", "b", "a", "d"]),
    ([["1", "3"], ["2"], []], [3, 1, 2]),
    ([[2, 1], [3]], [1, 2, 3]),
])
def test_multi_label_encoding_equals_the_reference(rows: list[list], known: list) -> None:
    ids, labels, multi = encode_labels(rows, known)
    assert multi and labels == known
    assert np.array_equal(ids, reference_multi_hot(rows, known))


def test_unknown_multi_label_values_name_the_first_rows_values() -> None:
    known = ["c", "b", "a"]
    rows = [["a"], ["z", "b", "q"], ["y"]]
    with pytest.raises(ValueError) as err:
        encode_labels(rows, known)
    assert str(err.value) == "labels not in the known labels: ['q', 'z']; known labels: ['c', 'b', 'a']"
    with pytest.raises(ValueError, match=r"labels not in the known labels: \['02'\]; known labels: \[1, 2\]"):
        encode_labels([["1"], ["02"]], [1, 2])
    assert index_in(["2", 1, "1"], [1, 2]) == [1, 0, 0]


@pytest.mark.parametrize("names", [["a", "b", "a", "c", "b", "a"], [3, 1, 3, 2, 1], list(range(30)) + [7, 29]])
def test_duplicate_names_are_listed_as_before(names: list) -> None:
    duplicates = sorted({label for label in names if names.count(label) > 1})
    with pytest.raises(ValueError) as err:
        check_label_names(names)
    assert str(err.value) == f"labels has duplicates: {label_module.short_repr(duplicates)}"
