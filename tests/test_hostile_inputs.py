"""Property tests over the public entry points: hostile input either works or raises a ValueError/TypeError
that names the problem, never an IndexError/KeyError/AttributeError from deep inside."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
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


@settings(max_examples=150, deadline=None)
@given(st.lists(values, max_size=8), st.lists(values, max_size=8))
def test_to_labeled_data_on_anything(column_a: list, column_b: list) -> None:
    for data in ({"text": column_a, "label": column_b}, list(zip(column_a, column_b)),
                 [{"text": a, "label": b} for a, b in zip(column_a, column_b)], (column_a, column_b)):
        raises_only_allowed(to_labeled_data, data)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 4), st.sampled_from(["a", "b", "c"]), st.none()), max_size=30),
       st.one_of(st.integers(-2, 10), st.floats(allow_nan=True), st.none(), st.text(max_size=2)))
def test_sample_dataset_on_anything(labels: list, num_samples) -> None:
    data = {"text": [f"t{i}" for i in range(len(labels))], "label": labels}
    out = raises_only_allowed(sample_dataset, data, num_samples=num_samples, seed=0)
    if isinstance(out, dict):
        assert set(out["text"]) <= set(data["text"])


@settings(max_examples=80, deadline=None)
@given(st.one_of(st.none(), st.lists(st.text(max_size=6), max_size=5), st.text(max_size=5)),
       st.text(max_size=12), st.integers(-1, 3), st.booleans())
def test_templated_dataset_on_anything(labels, template, sample_size, multi_label) -> None:
    out = raises_only_allowed(get_templated_dataset, candidate_labels=labels, template=template,
                              sample_size=sample_size, multi_label=multi_label)
    if not isinstance(out, Exception):
        assert len(out) == len(labels) * sample_size


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
    raises_only_allowed(sigopt_to_optuna, space)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=200), st.sampled_from([".csv", ".json", ".jsonl"]))
def test_file_readers_on_random_bytes(tmp_path: Path, raw: bytes, suffix: str) -> None:
    path = tmp_path / f"data{suffix}"
    path.write_bytes(raw)
    raises_only_allowed(to_labeled_data, str(path))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.fixed_dictionaries({"text": values, "label": values}), max_size=5))
def test_jsonl_reader_on_random_rows(tmp_path: Path, rows: list) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    raises_only_allowed(to_labeled_data, str(path))


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
    if isinstance(proba, Exception):
        with pytest.raises(type(proba)):
            trained.predict(inputs)
        return
    proba = np.atleast_2d(proba)
    assert proba.shape[1] == 2 and np.allclose(proba.sum(1), 1, atol=1e-5) and np.isfinite(proba).all()
    predicted = trained.predict(inputs)
    predicted = [predicted] if isinstance(inputs, str) else predicted
    assert all(p in trained.labels for p in predicted)


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
    if isinstance(trainer, Exception):
        return
    if raises_only_allowed(trainer.train) is None:
        assert sorted(set(data["label"]), key=str) == sorted(model.labels, key=str)
        assert len(model.predict(["good movie"])) == 1
