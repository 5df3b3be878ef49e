"""Zero-shot prototypes: one distinct text per class leaves the body untrained and the head the nearest text."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.preprocessing import normalize

from setfit_lite import SetFitModel, Trainer, TrainingArguments, get_templated_dataset
from setfit_lite.heads import SklearnHead
from setfit_lite.training.head_fit import fit_prototypes, single_text_classes

NAMES = ["great", "awful", "movie"]  # words of the tiny body's vocabulary


def _train(path: str, data: dict, **kwargs) -> SetFitModel:
    model = SetFitModel.from_pretrained(path, labels=NAMES, normalize_embeddings=True)
    args = TrainingArguments(max_steps=3, batch_size=8, show_progress_bar=False, seed=0, **kwargs)
    Trainer(model=model, args=args, train_dataset=data).train()
    return model


def _body_state(model: SetFitModel) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.model_body.state_dict().items()}


def test_single_text_classes_needs_one_distinct_text_in_every_class():
    assert single_text_classes(["a", "a", "b", "b"], np.array([0, 0, 1, 1]))
    assert not single_text_classes(["a", "c", "b", "b"], np.array([0, 0, 1, 1]))
    assert not single_text_classes(["a", "b"], np.array([[1, 0], [0, 1]]))  # multi-label
    assert not single_text_classes([], np.array([], dtype=int))


@pytest.mark.parametrize("num_classes", [2, 4])
def test_prototype_head_scores_are_cosines_to_the_class_means_over_the_temperature(num_classes):
    rng = np.random.default_rng(0)
    X, y = normalize(rng.normal(size=(20, 6))), np.arange(20) % num_classes
    head = SklearnHead(num_classes=num_classes)
    fit_prototypes(head, X, y, temperature=0.1)
    means = normalize(np.stack([X[y == k].mean(0) for k in range(num_classes)]))
    logits = X @ means.T / 0.1
    expected = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    assert np.allclose(head.predict_proba(X), expected, atol=1e-6)
    assert np.array_equal(head.predict(X), logits.argmax(1))


def test_templated_zero_shot_set_keeps_the_body_and_predicts_the_nearest_label_sentence(tiny_body_path, tmp_path):
    data = get_templated_dataset(candidate_labels=NAMES, template="it is {}", sample_size=4)
    untouched = _body_state(SetFitModel.from_pretrained(tiny_body_path))
    model = _train(tiny_body_path, data)
    assert model.training_info["zero_shot"] == {"prototypes": True, "reason": None}
    assert model.training_info["label_anchors"]["used"] is False
    assert model.training_info["label_anchors"]["prior"] is None
    assert "zero-shot prototypes" in model.training_info["label_anchors"]["reason"]
    after = _body_state(model)
    assert all(torch.equal(untouched[k], after[k]) for k in untouched)
    texts = ["great great movie", "awful", "movie movie", "it is great"]
    sentences = normalize(model.encode([f"it is {name}" for name in NAMES]))
    nearest = (normalize(model.encode(texts)) @ sentences.T).argmax(1)
    assert model.predict(texts) == [NAMES[k] for k in nearest]
    assert model.predict(["it is awful"]) == ["awful"]
    model.save_pretrained(tmp_path / "zs")  # an ordinary logistic-regression head: saved and loaded as one
    loaded = SetFitModel.from_pretrained(tmp_path / "zs")
    assert np.allclose(loaded.predict_proba(texts, as_numpy=True), model.predict_proba(texts, as_numpy=True))


def test_zero_shot_train_trains_the_body_on_the_templates(tiny_body_path):
    data = get_templated_dataset(candidate_labels=NAMES, template="it is {}", sample_size=4)
    untouched = _body_state(SetFitModel.from_pretrained(tiny_body_path))
    model = _train(tiny_body_path, data, zero_shot="train")
    assert model.training_info["zero_shot"] == {"prototypes": False, "reason": "zero_shot='train'"}
    after = _body_state(model)
    assert not all(torch.equal(untouched[k], after[k]) for k in untouched)


def test_real_examples_train_as_before(tiny_body_path, toy_data):
    model = SetFitModel.from_pretrained(tiny_body_path)
    Trainer(model=model, args=TrainingArguments(max_steps=2, batch_size=8, show_progress_bar=False),
            train_dataset=toy_data).train()
    info = model.training_info["zero_shot"]
    assert info["prototypes"] is False and "several distinct texts" in info["reason"]


def test_zero_shot_prototypes_need_a_logistic_regression_head(tiny_body_path):
    data = get_templated_dataset(candidate_labels=NAMES, template="it is {}", sample_size=4)
    model = SetFitModel.from_pretrained(tiny_body_path, labels=NAMES, use_differentiable_head=True,
                                        head_params={"out_features": len(NAMES)})
    args = TrainingArguments(max_steps=2, batch_size=8, num_epochs=(1, 1), show_progress_bar=False)
    Trainer(model=model, args=args, train_dataset=data).train()
    info = model.training_info["zero_shot"]
    assert info["prototypes"] is False and "not a LogisticRegression" in info["reason"]


def test_zero_shot_option_is_validated():
    with pytest.raises(ValueError, match="zero_shot must be one of"):
        TrainingArguments(zero_shot="yes")


def test_multi_label_templates_say_why_they_train_the_body(tiny_body_path):
    """Prototypes are single-label: multi-label templates train the body, and the reason says so (it said the
    classes had several distinct texts)."""
    data = get_templated_dataset(candidate_labels=NAMES, template="it is {}", sample_size=2, multi_label=True)
    model = _train(tiny_body_path, data)
    assert model.training_info["zero_shot"] == {"prototypes": False,
                                                "reason": "multi-label data (prototypes are single-label)"}
