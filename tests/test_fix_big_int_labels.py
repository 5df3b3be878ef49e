"""Int labels must fit in 64 bits (predictions give them as int64 arrays): a larger one is refused where labels
are validated, naming the row, before any training; a model holding one says so rather than overflowing; and a
label written "-0" is not the integer 0 (only ``str(int)``'s form is)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import make_sentences

from setfit_lite import SetFitModel, Trainer, TrainingArguments
from setfit_lite.data import to_labeled_data
from setfit_lite.data.labels import encode_labels, is_int_text, normalize_labels


@pytest.mark.parametrize("wide", [2**63, -(2**63) - 1, np.uint64(2**63), 1e20, 2**100])
def test_an_int_label_outside_64_bits_is_refused_naming_its_row(wide: object) -> None:
    with pytest.raises(ValueError, match=r"row 1: label .* does not fit in 64 bits"):
        normalize_labels([0, wide, 1])
    with pytest.raises(ValueError, match="row 0: label list item .* 64 bits"):
        encode_labels([[wide], [0]])


def test_the_64_bit_bounds_are_accepted() -> None:
    values, kind = normalize_labels([2**63 - 1, -(2**63), np.int64(5)])
    assert kind == "int" and values == [2**63 - 1, -(2**63), 5]


def test_training_on_such_labels_is_refused_before_any_work(tiny_body_path: str) -> None:
    texts, labels = make_sentences(12, seed=0)
    wide = [2**63 if label == "positive" else 0 for label in labels]
    with pytest.raises(ValueError, match="does not fit in 64 bits"):
        Trainer(SetFitModel.from_pretrained(tiny_body_path), TrainingArguments(max_steps=2, backend="cpu"),
                train_dataset={"text": texts, "label": wide})
    with pytest.raises(ValueError, match="64 bits"):
        SetFitModel.from_pretrained(tiny_body_path, labels=[0, 2**63])


def test_training_on_the_largest_int64_labels_predicts_them(tiny_body_path: str) -> None:
    texts, labels = make_sentences(12, seed=0)
    big = [2**63 - 1 if label == "positive" else -(2**63) for label in labels]
    model = SetFitModel.from_pretrained(tiny_body_path)
    Trainer(model, TrainingArguments(max_steps=2, backend="cpu", show_progress_bar=False),
            train_dataset={"text": texts, "label": big}).train()
    assert set(model.predict(texts[:4], as_numpy=True).tolist()) <= {2**63 - 1, -(2**63)}


def test_an_exported_model_with_such_labels_says_so(tier_models: dict) -> None:
    model = SetFitModel.from_onnx(tier_models["folders"]["onnx"])
    model.labels = [2**64, 1]  # as a hand-edited or older saved config could hold
    with pytest.raises(ValueError, match=r"\[18446744073709551616\] do not fit in 64 bits"):
        model.predict(["good film"])


def test_minus_zero_is_not_the_integer_zero(tmp_path: Path) -> None:
    assert is_int_text("0") and is_int_text("-3") and is_int_text("12")
    assert not any(is_int_text(v) for v in ("-0", "-00", "00", "+1", " 1", "1.0", "-"))
    path = tmp_path / "data.csv"
    path.write_text("text,label\ngood film,-0\nbad film,0\n", encoding="utf-8")
    assert to_labeled_data(str(path)).labels == ["-0", "0"]  # two labels, as written
    path.write_text("text,label\ngood film,-3\nbad film,0\n", encoding="utf-8")
    assert to_labeled_data(str(path)).labels == [-3, 0]
