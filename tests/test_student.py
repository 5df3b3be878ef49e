"""shrink_body: a student keeping some of a trained teacher's transformer layers, distilled and exported."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import build_tiny_body, make_sentences

from setfit_lite import DistillationTrainer, SetFitModel, Trainer, TrainingArguments
from setfit_lite.distillation import shrink_body

FAST = {"num_epochs": (3, 4), "body_learning_rate": 1e-2, "show_progress_bar": False, "backend": "cpu"}


@pytest.fixture(scope="module")
def teacher(tmp_path_factory: pytest.TempPathFactory) -> SetFitModel:
    """A 4-layer tiny body trained on the toy sentences."""
    body = build_tiny_body(tmp_path_factory.mktemp("four_layers"), num_layers=4)
    texts, labels = make_sentences(12, seed=0)
    model = SetFitModel.from_pretrained(str(body))
    Trainer(model=model, args=TrainingArguments(**FAST, seed=7), train_dataset={"text": texts, "label": labels}).train()
    return model


def _layers(model: SetFitModel) -> torch.nn.ModuleList:
    return model.model_body[0].auto_model.encoder.layer


@pytest.mark.parametrize("num_layers, keep, indices", [
    (2, "spread", [0, 3]),
    (3, "spread", [0, 2, 3]),
    (1, "spread", [0]),
    (2, "first", [0, 1]),
    (4, "first", [0, 1, 2, 3]),
    (2, [1, 2], [1, 2]),
])
def test_student_keeps_the_chosen_layers(teacher: SetFitModel, num_layers: int, keep, indices: list[int]) -> None:
    student = shrink_body(teacher, num_layers, keep=keep)
    assert len(_layers(student)) == num_layers
    assert student.model_body[0].auto_model.config.num_hidden_layers == num_layers
    assert len(_layers(teacher)) == 4 and teacher.model_body[0].auto_model.config.num_hidden_layers == 4
    assert student.training_info["layers_kept"] == {"of": 4, "indices": indices}
    for mine, theirs in zip(_layers(student), (_layers(teacher)[i] for i in indices)):
        for a, b in zip(mine.parameters(), theirs.parameters()):
            assert torch.equal(a, b)
    teacher_storage = {p.untyped_storage().data_ptr() for p in teacher.model_body.parameters()}
    assert not teacher_storage & {p.untyped_storage().data_ptr() for p in student.model_body.parameters()}
    assert student.model_head is None and student.labels == teacher.labels and student.prompt == teacher.prompt


@pytest.mark.parametrize("num_layers, keep", [
    (0, "spread"), (5, "spread"), (True, "spread"), (2.0, "spread"),
    (2, "last"), (2, [0]), (2, [2, 1]), (2, [1, 1]), (2, [0, 4]), (2, [-1, 2]),
])
def test_student_refuses_bad_layer_choices(teacher: SetFitModel, num_layers, keep) -> None:
    with pytest.raises(ValueError, match="num_layers|keep"):
        shrink_body(teacher, num_layers, keep=keep)


def test_distilled_student_predicts_the_teachers_labels_and_exports(teacher: SetFitModel, tmp_path) -> None:
    before = {name: p.detach().clone() for name, p in teacher.model_body.named_parameters()}
    unlabelled, _ = make_sentences(20, seed=5)
    eval_texts, _ = make_sentences(10, seed=1)
    student = shrink_body(teacher, 2)
    DistillationTrainer(teacher_model=teacher, student_model=student, args=TrainingArguments(**FAST, seed=3),
                        train_dataset={"text": unlabelled}).train()
    after = dict(teacher.model_body.named_parameters())
    assert all(torch.equal(before[name], after[name]) for name in before)
    predicted = student.predict(eval_texts)
    assert set(predicted) <= set(teacher.labels)
    assert np.mean(np.array(predicted) == np.array(teacher.predict(eval_texts))) >= 0.8

    student.save_pretrained(tmp_path / "student")
    reloaded = SetFitModel.from_pretrained(tmp_path / "student")
    assert len(_layers(reloaded)) == 2
    np.testing.assert_allclose(reloaded.encode(eval_texts), student.encode(eval_texts), atol=1e-5)
    student.export_onnx(tmp_path / "onnx", quantize="int8")
    onnx_model = SetFitModel.from_onnx(tmp_path / "onnx")
    assert np.mean(np.array(onnx_model.predict(eval_texts)) == np.array(predicted)) >= 0.9


@pytest.mark.parametrize("names", [["negative", "positive"], [0, 1], [3, 7]])
def test_distillation_keeps_the_teachers_label_values(tiny_body_path: str, names: list) -> None:
    texts, labels = make_sentences(12, seed=0)
    values = [names[0] if label == "negative" else names[1] for label in labels]
    teacher = SetFitModel.from_pretrained(tiny_body_path)
    Trainer(model=teacher, args=TrainingArguments(**FAST, seed=7),
            train_dataset={"text": texts, "label": values}).train()
    student = shrink_body(teacher, 1)
    unlabelled, _ = make_sentences(10, seed=5)
    DistillationTrainer(teacher_model=teacher, student_model=student, args=TrainingArguments(**FAST, seed=3),
                        train_dataset={"text": unlabelled}).train()
    assert student.labels == teacher.labels == names
    assert set(np.asarray(student.predict(texts, as_numpy=True)).tolist()) <= set(names)
