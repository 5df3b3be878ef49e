"""Property tests over the public entry points: hostile input either works or raises a ValueError/TypeError
that names the problem, never an IndexError/KeyError/AttributeError from deep inside."""

from __future__ import annotations

import json
import math
import re
import string
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from setfit_lite import SetFitModel, Trainer, TrainingArguments, get_templated_dataset, sample_dataset
from setfit_lite.data import to_labeled_data
from setfit_lite.search import sigopt_to_optuna

FAST = {"num_epochs": (1, 2), "max_steps": 2, "body_learning_rate": 1e-2, "show_progress_bar": False,
        "backend": "cpu", "min_steps_per_epoch": 1}
ALLOWED = (ValueError, TypeError)

texts = st.one_of(
    st.text(max_size=40),                                   # any unicode, empty and whitespace included
    st.text(alphabet="good bad movie", min_size=1, max_size=30),
    st.sampled_from(["", " ", "\n", "\x00", "😀" * 50, "a" * 5000, "مرحبا", "你好世界", "नमस्ते", "สวัสดี"]),
)
scalars = st.one_of(st.none(), st.just(math.nan), st.integers(-3, 3), st.sampled_from(["pos", "neg", ""]),
                    st.booleans(), st.floats(allow_nan=True), st.lists(st.integers(0, 1), max_size=3))
values = st.one_of(texts, scalars)


def raises_only_allowed(fn, *args, **kwargs):
    """Call ``fn``; a ValueError/TypeError must carry a message; anything else fails the test."""
    try:
        return fn(*args, **kwargs)
    except ALLOWED as err:
        assert str(err).strip(), f"{type(err).__name__} without a message"
        return err


def row(i: int) -> re.Pattern:
    """Matches ``row i`` and not ``row i0``."""
    return re.compile(rf"\brow {i}\b")


def assert_names(result, *needles: str | re.Pattern) -> None:
    """``result`` is a ValueError/TypeError whose message contains every needle (a substring or a pattern)."""
    assert isinstance(result, ALLOWED), f"expected an error naming {needles}, got {result!r}"
    message = str(result)
    for needle in needles:
        found = needle.search(message) if isinstance(needle, re.Pattern) else needle in message
        assert found, f"{needle!r} not named in {type(result).__name__}: {message!r}"


def text_problem(texts: list) -> tuple | None:
    """What an error must name for the first text that is not a non-blank str: its row and its type or 'empty'."""
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            return row(i), "text", type(text).__name__
        if not text.strip():
            return row(i), "text", "empty"
    return None


def too_big(value) -> bool:
    """Whether ``value`` is an int label (an int, or an integral float) outside 64 bits (refused, naming it)."""
    integral = (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, float) and value.is_integer())
    return integral and not -2**63 <= int(value) <= 2**63 - 1


def label_kind(value) -> str | None:
    """'int', 'str' or 'list' for a valid label of the strategies above, 'big' for an int label outside 64 bits,
    None for another invalid one."""
    if isinstance(value, list):
        return "big" if any(too_big(item) for item in value) else "list"
    if isinstance(value, str):
        return "str"
    if too_big(value):
        return "big"
    if isinstance(value, int) and not isinstance(value, bool):
        return "int"
    if isinstance(value, float) and value.is_integer():
        return "int"
    return None  # None, NaN, a bool, a non-integer float


def label_problem(labels: list) -> tuple | None:
    """What an error must name: the first invalid label (its row and value), else the first row whose label type
    differs from row 0's (its row and type)."""
    kinds = [label_kind(v) for v in labels]
    for i, (value, kind) in enumerate(zip(labels, kinds)):
        if kind is None:
            return row(i), "label", repr(value)
        if kind == "big":
            return row(i), "label", "64 bits"
    for i, kind in enumerate(kinds):
        if kind != kinds[0]:
            return row(i), "label", kind
    return None


def texts_and_labels_problem(texts: list, labels: list) -> tuple | None:
    if not texts:
        return ("empty",)
    return text_problem(texts) or label_problem(labels)


def check_labeled(result, texts: list, labels: list, problem: tuple | None) -> None:
    if problem is not None:
        assert_names(result, *problem)
    else:
        assert not isinstance(result, Exception), f"valid data refused: {result}"
        assert result.texts == texts and len(result.labels) == len(labels)


@settings(max_examples=150, deadline=None)
@given(st.lists(values, max_size=8), st.lists(values, max_size=8))
def test_to_labeled_data_on_anything(column_a: list, column_b: list) -> None:
    n = min(len(column_a), len(column_b))
    # a dict of columns: the lengths first, then the rows
    result = raises_only_allowed(to_labeled_data, {"text": column_a, "label": column_b})
    if len(column_a) != len(column_b):
        assert_names(result, f"'text': {len(column_a)}", f"'label': {len(column_b)}")
    else:
        check_labeled(result, column_a, column_b, texts_and_labels_problem(column_a, column_b))
    # a list of dicts
    result = raises_only_allowed(to_labeled_data, [{"text": a, "label": b} for a, b in zip(column_a, column_b)])
    check_labeled(result, column_a[:n], column_b[:n], texts_and_labels_problem(column_a[:n], column_b[:n]))
    # a (texts, labels) tuple: the texts first, then the lengths, then the labels
    result = raises_only_allowed(to_labeled_data, (column_a, column_b))
    problem = (("empty",) if not column_a else text_problem(column_a)) or (
        (f"{len(column_a)} texts", f"{len(column_b)} labels") if len(column_a) != len(column_b)
        else label_problem(column_b))
    check_labeled(result, column_a, column_b, problem)
    # a list of (text, label) pairs is a list of texts whose row 0 is a tuple
    result = raises_only_allowed(to_labeled_data, list(zip(column_a, column_b)))
    assert_names(result, *(("empty",) if n == 0 else (row(0), "text", "tuple")))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 4), st.sampled_from(["a", "b", "c"]), st.none()), max_size=30),
       st.one_of(st.integers(-2, 10), st.floats(allow_nan=True), st.none(), st.text(max_size=2)))
def test_sample_dataset_on_anything(labels: list, num_samples) -> None:
    data = {"text": [f"t{i}" for i in range(len(labels))], "label": labels}
    out = raises_only_allowed(sample_dataset, data, num_samples=num_samples, seed=0)
    if not isinstance(num_samples, int) or num_samples < 1:
        assert_names(out, "num_samples", repr(num_samples))
        return
    problem = label_problem(labels)
    if problem is not None:
        assert_names(out, *problem)
        return
    assert isinstance(out, dict), out
    assert set(out["text"]) <= set(data["text"])
    for label in set(labels):
        assert out["label"].count(label) == min(num_samples, labels.count(label))


def template_is_valid(template: str, labels: list[str]) -> bool:
    """Exactly one positional replacement field, ``{}`` or ``{0}`` (per Python's own format-string parser), with
    any conversion and a format spec without nested fields, that formats every label name (setfit's rule)."""
    try:
        fields = [parts[1:] for parts in string.Formatter().parse(template) if parts[1] is not None]
    except ValueError:
        return False
    if len(fields) != 1 or fields[0][0] not in ("", "0") or "{" in (fields[0][1] or ""):
        return False
    try:
        for name in labels:
            template.format(name)
    except (ValueError, KeyError, IndexError, TypeError):
        return False
    return True


@settings(max_examples=120, deadline=None)
@given(st.one_of(st.none(), st.lists(st.text(max_size=6), max_size=5), st.text(max_size=5)),
       st.one_of(st.text(max_size=12), st.text(alphabet="{}x0:!r", max_size=8)), st.integers(-1, 3), st.booleans())
@example(["a", "b"], "{}{", 1, False).via("unbalanced brace")
@example(["a", "b"], "{{}}", 1, False).via("escaped braces, no field")
@example(["a", "b"], "{} {x}", 1, False).via("a named field")
@example(["a", "b"], "{0}{}", 1, False).via("manual and automatic numbering")
@example(["a", "b"], "{{{}}}", 1, False).via("a field in escaped braces")
def test_templated_dataset_on_anything(labels, template, sample_size, multi_label) -> None:
    out = raises_only_allowed(get_templated_dataset, candidate_labels=labels, template=template,
                              sample_size=sample_size, multi_label=multi_label)
    if labels is None:
        return assert_names(out, "candidate_labels")
    if isinstance(labels, str):
        return assert_names(out, "candidate_labels", repr(labels))
    blank = next((i for i, name in enumerate(labels) if not name.strip()), None)
    if blank is not None:
        return assert_names(out, f"candidate_labels[{blank}]", repr(labels[blank]))
    if not labels:
        return assert_names(out, "candidate_labels", "empty")
    repeated = [name for name in labels if labels.count(name) > 1]
    if repeated:
        return assert_names(out, "candidate_labels", "unique", repr(repeated[0]))
    if not template_is_valid(template, labels):
        return assert_names(out, "template", repr(template))
    if sample_size < 1:
        return assert_names(out, "sample_size", repr(sample_size))
    assert not isinstance(out, Exception), out
    assert list(out["text"]) == [template.format(name) for name in labels for _ in range(sample_size)]


sigopt_params = st.fixed_dictionaries(
    {"name": st.one_of(st.text(max_size=6), st.integers())},
    optional={"type": st.sampled_from(["double", "int", "categorical", "float", "", None]),
              "bounds": st.one_of(st.none(), st.fixed_dictionaries(
                  {}, optional={"min": st.one_of(st.floats(allow_nan=True), st.integers(-3, 3), st.text(max_size=2)),
                                "max": st.one_of(st.floats(allow_nan=True), st.integers(-3, 3))})),
              "categorical_values": st.one_of(st.lists(st.one_of(st.text(max_size=3), st.integers()), max_size=3),
                                              st.text(max_size=3)),
              "transformation": st.sampled_from(["log", "linear", None]),
              "grid": st.lists(st.one_of(st.floats(allow_nan=True), st.integers()), max_size=3)})


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.lists(sigopt_params, max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
                 st.integers(), st.none()))
def test_sigopt_spaces_on_anything(space) -> None:
    result = raises_only_allowed(sigopt_to_optuna, space)
    if not isinstance(result, Exception):
        assert isinstance(space, list) and set(result) == {p["name"] for p in space}
    elif isinstance(space, list) and space:
        # the parameter that makes the space invalid (the first prefix that fails ends with it) is named
        bad = next(i for i in range(len(space)) if isinstance(raises_only_allowed(sigopt_to_optuna, space[:i + 1]),
                                                               Exception))
        name = space[bad]["name"]
        assert f"#{bad}" in str(result) or (isinstance(name, str) and name and repr(name) in str(result)), result
    elif isinstance(space, list):
        assert_names(result, "no parameters")
    elif isinstance(space, dict):
        unknown = sorted(set(space) - {"parameters", "metrics", "observation_budget", "name", "project", "type",
                                       "metadata", "parallel_bandwidth"})
        assert_names(result, *unknown or ["parameter"])
    else:
        assert_names(result, type(space).__name__)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=200), st.sampled_from([".csv", ".json", ".jsonl"]))
def test_file_readers_on_random_bytes(tmp_path: Path, raw: bytes, suffix: str) -> None:
    path = tmp_path / f"data{suffix}"
    path.write_bytes(raw)
    result = raises_only_allowed(to_labeled_data, str(path))
    if isinstance(result, Exception):
        assert_names(result, str(path))  # whatever is wrong with it, the message says which file
        return
    # accepted: the bytes held a text and a label column, and every row a non-blank text and a label
    assert b"text" in raw and b"label" in raw, (raw, result)
    assert len(result.texts) == len(result.labels) >= 1
    assert all(isinstance(t, str) and t.strip() for t in result.texts), result.texts


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.fixed_dictionaries({"text": values, "label": values}), max_size=5))
def test_jsonl_reader_on_random_rows(tmp_path: Path, rows: list) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    result = raises_only_allowed(to_labeled_data, str(path))
    texts, labels = [r["text"] for r in rows], [r["label"] for r in rows]
    problem = texts_and_labels_problem(texts, labels)
    check_labeled(result, texts, labels, problem and (str(path), *problem))


@pytest.fixture(scope="module")
def trained(tiny_body_path: str) -> SetFitModel:
    from conftest import make_sentences

    t, y = make_sentences(6, seed=0)
    model = SetFitModel.from_pretrained(tiny_body_path)
    Trainer(model=model, args=TrainingArguments(**FAST), train_dataset={"text": t, "label": y}).train()
    return model


@settings(max_examples=60, deadline=None)
@given(st.one_of(st.lists(values, max_size=6), texts, scalars))
def test_predict_on_anything(trained: SetFitModel, inputs) -> None:
    proba = raises_only_allowed(trained.predict_proba, inputs)
    if isinstance(inputs, str):
        problem = None if inputs.strip() else ("empty",)
    elif isinstance(inputs, list):
        problem = text_problem(inputs)
    else:  # a number, None, a bool: not a text and not a list of texts
        problem = (type(inputs).__name__,)
    if problem is not None:
        assert_names(proba, *problem)
        with pytest.raises(type(proba), match=re.escape(str(proba))):
            trained.predict(inputs)
        return
    assert not isinstance(proba, Exception), f"valid input refused: {proba}"
    proba = np.atleast_2d(proba)
    assert proba.shape[1] == 2 and np.allclose(proba.sum(1), 1, atol=1e-5) and np.isfinite(proba).all()
    predicted = trained.predict(inputs)
    predicted = [predicted] if isinstance(inputs, str) else predicted
    assert predicted == [trained.labels[k] for k in proba.argmax(1)]  # the most probable label of each input


@settings(max_examples=8, deadline=None)
@given(st.lists(st.tuples(texts, st.one_of(st.integers(0, 300), st.sampled_from(["x", "y"]))), min_size=0,
                max_size=12),
       st.booleans())
def test_training_on_hostile_datasets(tiny_body_path: str, rows: list, duplicate: bool) -> None:
    """One example per class, thousands of class ids, duplicates, unicode: trains or fails up front."""
    rows = rows + rows if duplicate else rows
    data = {"text": [t for t, _ in rows], "label": [y for _, y in rows]}
    model = SetFitModel.from_pretrained(tiny_body_path)
    trainer = raises_only_allowed(Trainer, model=model, args=TrainingArguments(**FAST), train_dataset=data)
    result = trainer if isinstance(trainer, Exception) else raises_only_allowed(trainer.train)
    problem = texts_and_labels_problem(data["text"], data["label"])
    if problem is None and len(set(data["label"])) == 1:
        problem = ("2 classes",)  # the label itself: test_single_class_error_names_the_label
    if problem is not None:
        return assert_names(result, *problem)
    assert result is None, f"valid data refused: {result}"
    assert sorted(set(data["label"]), key=str) == sorted(model.labels, key=str)
    proba = model.predict_proba(data["text"], as_numpy=True)
    assert proba.shape == (len(rows), len(model.labels)) and np.allclose(proba.sum(1), 1, atol=1e-5)
    assert list(model.predict(data["text"], as_numpy=True)) == [model.labels[k] for k in proba.argmax(1)]


def test_single_class_error_names_the_label(tiny_body_path: str) -> None:
    model = SetFitModel.from_pretrained(tiny_body_path)
    trainer = Trainer(model=model, args=TrainingArguments(**FAST), train_dataset={"text": ["a film"], "label": [7]})
    with pytest.raises(ValueError, match=r"2 classes.*\[7\]"):
        trainer.train()


_written_texts = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=30).filter(str.strip)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(_written_texts, st.one_of(st.integers(-5, 20), st.sampled_from(["pos", "neg"]))),
                min_size=1, max_size=6).filter(lambda rows: len({type(y) for _, y in rows}) == 1),
       st.sampled_from([".csv", ".jsonl"]))
@example([("a\u2028b", 1), ("c\u2029d\x85e", 0), ('"quoted",\r\ncell', 1)], ".jsonl")
@example([("a\u2028b", 1), ("c\u2029d\x85e", 0), ('"quoted",\r\ncell', 1), ("x" * 140_000, 2)], ".csv")
def test_rows_written_by_the_standard_writers_read_back_as_written(tmp_path: Path, rows: list, suffix: str) -> None:
    """What csv.writer or json.dumps(ensure_ascii=False) writes reads back row for row, each row in its columns:
    any text (line separators, quotes, line breaks, a field over the csv module's 128 KiB limit) and label."""
    import csv

    path = tmp_path / f"rows{suffix}"
    with path.open("w", encoding="utf-8", newline="") as handle:
        if suffix == ".csv":
            csv.writer(handle).writerows([("text", "label"), *rows])
        else:
            handle.writelines(json.dumps({"text": t, "label": y}, ensure_ascii=False) + "\n" for t, y in rows)
    result = to_labeled_data(path)
    assert list(zip(result.texts, result.labels)) == rows
