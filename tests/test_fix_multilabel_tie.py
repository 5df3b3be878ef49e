"""A multi-label probability of exactly 0.5 is decided as the model's head decides it (setfit's ``predict`` returns
the head's ``predict``): absent for a scikit-learn head, present for the differentiable torch head; the exported
tiers keep their torch model's rule (an exported folder without it keeps ``>=``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.neighbors import KNeighborsClassifier

from setfit_lite import SetFitModel
from setfit_lite.heads import SklearnHead, TorchHead
from setfit_lite.runtime.predictor import predict_ids

LABELS = ["pos", "neg", "third"]
THRESHOLD_RULE_FIELD = "multi_label_threshold_rule"  # the exported config field holding the rule


@pytest.fixture(scope="module")
def body_and_data(tiny_body_path):
    """The tiny body, embeddings of training texts, their multi-hot labels, and texts to predict."""
    from conftest import make_sentences

    texts, labels = make_sentences(12, seed=0)
    base = SetFitModel.from_pretrained(tiny_body_path)
    X = base.encode(texts)
    positive = np.array([label == "positive" for label in labels])
    Y = np.stack([positive, ~positive, np.arange(len(X)) % 3 == 0], axis=1).astype(np.int64)
    return base.model_body, texts, X, Y, make_sentences(10, seed=1)[0]


def zeroed_lr_model(body_and_data):
    """A one-vs-rest logistic-regression model whose label 1 has zero weights: its probability is exactly 0.5
    on every text."""
    body, _, X, Y, _ = body_and_data
    head = SklearnHead(num_classes=3, multi_label=True, multi_target_strategy="one-vs-rest").fit(X, Y)
    member = head.estimator.estimators_[1]
    member.coef_[:] = 0.0
    member.intercept_[:] = 0.0
    return SetFitModel(body, model_head=head, labels=LABELS)


def zeroed_torch_model(body_and_data):
    """A differentiable-head model whose label 1 has zero weights: its probability is exactly 0.5 on every text."""
    body, _, X, Y, _ = body_and_data
    head = TorchHead(X.shape[1], 3, multi_label=True).fit(X, Y, epochs=3, seed=0)
    with torch.no_grad():
        head.linear.weight[1] = 0.0
        head.linear.bias[1] = 0.0
    return SetFitModel(body, model_head=head, labels=LABELS)


@pytest.mark.parametrize("strategy", ["one-vs-rest", "multi-output", "classifier-chain"])
def test_knn_head_predicts_as_its_estimator(body_and_data, strategy):
    body, _, X, Y, eval_texts = body_and_data
    head = SklearnHead(KNeighborsClassifier(4), num_classes=3, multi_label=True,
                       multi_target_strategy=strategy).fit(X, Y)
    model = SetFitModel(body, model_head=head, labels=LABELS)
    proba = model.class_proba(eval_texts)
    assert (proba == 0.5).any()  # four neighbours: ties
    expected = head.estimator.predict(model.encode(eval_texts))  # what setfit's predict returns
    np.testing.assert_array_equal(model.predict(eval_texts, as_numpy=True), expected)
    np.testing.assert_array_equal(model.class_ids(proba), expected)  # what evaluation scores
    np.testing.assert_array_equal(list(model.predict_iter(eval_texts)), expected)
    assert model.multi_label_threshold_rule == ">"


def test_lr_head_tie_is_absent_on_every_onnx_tier(body_and_data, tmp_path):
    model = zeroed_lr_model(body_and_data)
    eval_texts = body_and_data[4]
    assert np.all(model.class_proba(eval_texts)[:, 1] == 0.5)
    expected = model.model_head.estimator.predict(model.encode(eval_texts))
    assert not expected[:, 1].any()
    predicted = model.predict(eval_texts, as_numpy=True)
    np.testing.assert_array_equal(predicted, expected)
    for quantize in (None, "int8"):
        exported = SetFitModel.from_onnx(model.export_onnx(tmp_path / f"onnx-{quantize}", quantize=quantize))
        assert exported.config[THRESHOLD_RULE_FIELD] == ">"
        assert np.all(exported.class_proba(eval_texts)[:, 1] == 0.5)  # the tie survives the export
        np.testing.assert_array_equal(exported.predict(eval_texts)[:, 1], predicted[:, 1])
        if quantize is None:
            np.testing.assert_array_equal(exported.predict(eval_texts), predicted)


def test_differentiable_head_tie_is_present_on_the_onnx_tier(body_and_data, tmp_path):
    model = zeroed_torch_model(body_and_data)
    eval_texts = body_and_data[4]
    assert np.all(model.class_proba(eval_texts)[:, 1] == 0.5)
    predicted = model.predict(eval_texts, as_numpy=True)
    assert predicted[:, 1].all()  # setfit's SetFitHead.predict: probs >= 0.5
    np.testing.assert_array_equal(predicted, model.model_head.predict(model.encode(eval_texts)))
    exported = SetFitModel.from_onnx(model.export_onnx(tmp_path / "onnx"))
    assert exported.config[THRESHOLD_RULE_FIELD] == ">="
    np.testing.assert_array_equal(exported.predict(eval_texts), predicted)


@pytest.mark.filterwarnings("ignore:Label not 1 is present in all training examples:UserWarning")
def test_static_tier_keeps_the_rule(body_and_data, tmp_path):
    model = zeroed_lr_model(body_and_data)
    texts = body_and_data[1]
    static = SetFitModel.from_static(model.export_static(tmp_path / "static", texts, pca_dims=16,
                                                         dtype="float32", refine_epochs=0))
    assert static.config[THRESHOLD_RULE_FIELD] == ">" and static.multi_label_threshold_rule == ">"
    ties = np.array([[0.5, 0.2, 0.9], [0.5, 0.5, 0.5], [0.1, 0.5, 0.7]])
    np.testing.assert_array_equal(static.class_ids(ties), model.class_ids(ties))
    # the static head is refitted on the torch model's predictions: its tie label is absent there too
    np.testing.assert_array_equal(static.predict(texts)[:, 1], model.predict(texts, as_numpy=True)[:, 1])


def test_an_export_without_the_rule_keeps_deciding_at_least(body_and_data, tmp_path):
    model = zeroed_lr_model(body_and_data)
    exported = SetFitModel.from_onnx(model.export_onnx(tmp_path / "onnx"))
    del exported.config[THRESHOLD_RULE_FIELD]  # as an export written before the field was
    eval_texts = body_and_data[4]
    assert exported.multi_label_threshold_rule == ">="
    assert exported.predict(eval_texts)[:, 1].all()
    exported.config[THRESHOLD_RULE_FIELD] = "gt"
    with pytest.raises(ValueError, match=THRESHOLD_RULE_FIELD):
        exported.predict(eval_texts)


def test_predict_ids_rules():
    proba = np.array([[0.5, 0.49, 0.51]])
    np.testing.assert_array_equal(predict_ids(proba, True), [[1, 0, 1]])
    np.testing.assert_array_equal(predict_ids(proba, True, ">"), [[0, 0, 1]])
    np.testing.assert_array_equal(predict_ids(proba, False, ">"), [2])
    with pytest.raises(ValueError, match="rule must be one of"):
        predict_ids(proba, True, "gt")
