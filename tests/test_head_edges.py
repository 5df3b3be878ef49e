"""Heads and metrics at their edges: a head without probabilities is refused before training, the metric reported
for `metric_for_best_model` averages as the metric does, metric values that are not one number pass through, a
model trained again reports no earlier scores, and an explicit `class_weight=None` is kept."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_sentences
from sklearn.linear_model import RidgeClassifier
from sklearn.metrics import f1_score
from sklearn.svm import SVC, LinearSVC

from setfit_lite import SetFitModel, Trainer, TrainingArguments
from setfit_lite.metrics import add_reported_metrics, compute_metric


@pytest.mark.parametrize("estimator", [LinearSVC(), SVC(), RidgeClassifier()])
def test_a_head_without_probabilities_is_refused_at_construction(tiny_body_path: str, estimator: object) -> None:
    name = type(estimator).__name__
    body = SetFitModel.from_pretrained(tiny_body_path).model_body
    with pytest.raises(ValueError, match=rf"model_head={name}\(\.\.\.\) has no predict_proba.*CalibratedClassifierCV"):
        SetFitModel(body, model_head=estimator)


def test_a_head_with_probabilities_trains_and_predicts(tiny_body_path: str) -> None:
    """The refusal is for heads without probabilities only: SVC(probability=True) trains and predicts."""
    texts, labels = make_sentences(8, seed=0)
    model = SetFitModel(SetFitModel.from_pretrained(tiny_body_path).model_body, model_head=SVC(probability=True))
    Trainer(model=model, args=_args(), train_dataset={"text": texts, "label": labels}).train()
    proba = model.predict_proba(texts, as_numpy=True)
    assert isinstance(model.model_head.estimator, SVC) and proba.shape == (len(texts), 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=0, atol=1e-5)
    assert model.predict(texts) == [model.labels[i] for i in proba.argmax(axis=1)]


def test_the_metric_for_best_model_averages_as_the_metric_does() -> None:
    y_true, y_pred = np.array([0, 1, 2, 2, 1, 0]), np.array([0, 2, 2, 2, 1, 1])
    result = add_reported_metrics({"accuracy": 0.5}, "accuracy", y_pred, y_true, wanted=["f1", "precision"],
                                  num_classes=3)
    assert result["f1"] == pytest.approx(f1_score(y_true, y_pred, average="macro"))
    assert set(result) == {"accuracy", "f1", "precision"}


def test_metric_values_that_are_not_one_number_pass_through() -> None:
    y_true, y_pred = np.array([0, 1, 1, 0]), np.array([0, 1, 0, 0])
    per_class = compute_metric("f1", y_pred, y_true, {"average": None})["f1"]
    assert per_class == pytest.approx(f1_score(y_true, y_pred, average=None).tolist())

    def report(y_pred: list, y_test: list) -> dict:
        return {"accuracy": np.float64(0.75), "report": "two classes"}

    assert compute_metric(report, y_pred, y_true) == {"accuracy": 0.75, "report": "two classes"}


def _args() -> TrainingArguments:
    return TrainingArguments(num_epochs=1, max_steps=2, show_progress_bar=False, backend="cpu")


def test_a_model_trained_again_reports_no_earlier_scores(tiny_body_path: str) -> None:
    texts, labels = make_sentences(8, seed=0)
    model = SetFitModel.from_pretrained(tiny_body_path)
    trainer = Trainer(model=model, args=_args(), train_dataset={"text": texts, "label": labels})
    trainer.train()
    trainer.evaluate({"text": texts, "label": labels})
    assert "eval_results" in model.training_info
    trainer.train()
    assert "eval_results" not in model.training_info  # the card would report the model before's score


def test_an_explicit_class_weight_of_none_is_kept(tiny_body_path: str) -> None:
    texts, labels = make_sentences(8, seed=0)
    keep = [i for i, label in enumerate(labels) if label == labels[0]] + \
        [next(i for i, label in enumerate(labels) if label != labels[0])]  # skewed: one text of the other class
    train = {"text": [texts[i] for i in keep], "label": [labels[i] for i in keep]}
    weighted = SetFitModel.from_pretrained(tiny_body_path)
    Trainer(model=weighted, args=_args(), train_dataset=train).train()
    assert weighted.model_head.estimator.class_weight == "balanced"  # the default weighs skewed counts
    unweighted = SetFitModel.from_pretrained(tiny_body_path, head_params={"class_weight": None})
    Trainer(model=unweighted, args=_args(), train_dataset=train).train()
    assert unweighted.model_head.estimator.class_weight is None
    assert unweighted.training_info["class_weight"]["used"] is None


# ------------------------------------------------------------------------------------------------ multi-label
class _Steps:
    """Counts the optimizer steps (a refusal must come before the first)."""

    def __init__(self) -> None:
        self.steps = 0

    def on_step_end(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        self.steps += 1


def _multi_hot(texts_labels: list[str], third: int | None) -> list[list[int]]:
    """Two labels from the sentences' sentiment, and a third one always (1), never (0) or as given (None)."""
    rows = [[1, 0] if y == "positive" else [0, 1] for y in texts_labels]
    return [row + [third if third is not None else i % 2] for i, row in enumerate(rows)]


@pytest.mark.parametrize(("options", "data", "match"), [
    ({"multi_target_strategy": "multi-output"}, "never", r"'c' \(no text has it\)"),
    ({"multi_target_strategy": "classifier-chain"}, "always", r"'c' \(every text has it\)"),
    ({"multi_target_strategy": "multi-output"}, "single", "needs multi-label data"),
    ({"use_differentiable_head": True, "head_params": {"class_weight": "balanced"}}, "mixed",
     "class_weight applies to single-label heads"),
])
def test_a_head_that_cannot_fit_the_labels_is_refused_before_the_body_trains(tiny_body_path: str, options: dict,
                                                                            data: str, match: str) -> None:
    texts, labels = make_sentences(6, seed=0)
    third = {"never": 0, "always": 1}.get(data)
    train = {"text": texts, "label": labels if data == "single" else _multi_hot(labels, third)}
    model = SetFitModel.from_pretrained(tiny_body_path, labels=None if data == "single" else ["a", "b", "c"],
                                        **options)
    steps = _Steps()
    trainer = Trainer(model, TrainingArguments(max_steps=2, num_epochs=(1, 1), show_progress_bar=False),
                      train_dataset=train, callbacks=[steps])
    with pytest.raises(ValueError, match=match):
        trainer.train()
    assert steps.steps == 0


def test_single_label_metrics_are_refused_for_multi_label_data_before_training(tiny_body_path: str) -> None:
    texts, labels = make_sentences(6, seed=0)
    train = {"text": texts, "label": _multi_hot(labels, None)}
    for metric in ("matthews_correlation", "balanced_accuracy"):
        trainer = Trainer(SetFitModel.from_pretrained(tiny_body_path, labels=["a", "b", "c"]),
                          TrainingArguments(max_steps=2, num_epochs=(1, 1), show_progress_bar=False),
                          train_dataset=train, metric=metric)
        with pytest.raises(ValueError, match=f"metric '{metric}' is defined for single-label data only"):
            trainer.train()
        assert trainer.state.global_step == 0
    with pytest.raises(ValueError, match="single-label data only"):
        compute_metric("matthews_correlation", np.eye(3, dtype=int), np.eye(3, dtype=int))


def test_a_one_label_multi_label_teacher_distils_and_a_constant_label_exports(tiny_body_path: str,
                                                                               tmp_path) -> None:  # noqa: ANN001
    """A one-label model's multi-hot rows ([1]) were read back as the label id 1 (out of range); a multi-output
    model's static export refitted multi-output heads, which fail on a label every text has."""
    from setfit_lite import DistillationTrainer

    texts, labels = make_sentences(6, seed=0)
    one = SetFitModel.from_pretrained(tiny_body_path, labels=["plot"])
    Trainer(one, TrainingArguments(max_steps=2, num_epochs=(1, 1), show_progress_bar=False),
            train_dataset={"text": texts, "label": [["plot"] if y == "positive" else [] for y in labels]}).train()
    student = SetFitModel.from_pretrained(tiny_body_path)
    DistillationTrainer(one, student, TrainingArguments(max_steps=2, num_epochs=(1, 1), show_progress_bar=False),
                        train_dataset={"text": texts}).train()
    assert student.labels == ["plot"] and student.multi_label
    multi = SetFitModel.from_pretrained(tiny_body_path, labels=["a", "b", "c"],
                                        multi_target_strategy="multi-output")
    Trainer(multi, TrainingArguments(max_steps=2, num_epochs=(1, 1), show_progress_bar=False),
            train_dataset={"text": texts, "label": _multi_hot(labels, None)}).train()
    static = SetFitModel.from_static(multi.export_static(tmp_path / "static", texts, _multi_hot(labels, 1),
                                                         pca_dims=8, refine_epochs=0))
    assert static.class_proba(texts[:3]).shape == (3, 3)
