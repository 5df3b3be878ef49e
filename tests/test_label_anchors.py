"""Label anchors (the label texts as extra rows of every batch) and the in-batch-negatives loss."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from sentence_transformers.sentence_transformer import losses as st_losses

from setfit_lite import SetFitModel, Trainer, TrainingArguments
from setfit_lite.losses import InBatchNegativesLoss, LabelAnchorLoss, PairMatrixLoss, _next_of_class, build_loss
from setfit_lite.training.batch_samplers import SentenceBatchSampler, WithAnchors


def _batch(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    torch.manual_seed(seed)
    return torch.randn(8, 6), torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])


def test_softmax_anchor_term_is_cross_entropy_over_cosines_to_the_anchors():
    sentences, labels = _batch()
    anchors = torch.randn(3, 6)
    inner = PairMatrixLoss()
    loss = LabelAnchorLoss(inner, 3, weight=0.5, mode="softmax", temperature=0.1)
    got = loss(torch.cat([sentences, anchors]), torch.cat([labels, torch.arange(3)]))
    logits = F.normalize(sentences, dim=-1) @ F.normalize(anchors, dim=-1).T / 0.1
    expected = inner(sentences, labels) + 0.5 * F.cross_entropy(logits, labels)
    assert torch.allclose(got, expected)


def test_pairs_anchor_term_is_the_balanced_cosine_loss_on_sentence_anchor_pairs():
    sentences, labels = _batch(1)
    anchors = torch.randn(3, 6)
    inner = PairMatrixLoss()
    got = LabelAnchorLoss(inner, 3, weight=2.0, mode="pairs")(torch.cat([sentences, anchors]),
                                                             torch.cat([labels, torch.arange(3)]))
    cos = F.normalize(sentences, dim=-1) @ F.normalize(anchors, dim=-1).T
    target = (labels[:, None] == torch.arange(3)[None, :]).float()
    term = 0.5 * ((cos - 1)[target == 1] ** 2).mean() + 0.5 * (cos[target == 0] ** 2).mean()
    assert torch.allclose(got, inner(sentences, labels) + 2.0 * term, atol=1e-6)


def test_anchor_weight_zero_is_the_inner_loss_alone():
    sentences, labels = _batch(2)
    inner = PairMatrixLoss()
    got = LabelAnchorLoss(inner, 3, weight=0.0)(torch.cat([sentences, torch.randn(3, 6)]),
                                                torch.cat([labels, torch.arange(3)]))
    assert torch.equal(got, inner(sentences, labels))


def test_anchor_term_pulls_sentences_toward_their_own_label_text():
    labels = torch.tensor([0, 1, 0, 1])
    anchors = torch.eye(2, 4)
    near = torch.tensor([[1.0, 0.1, 0, 0], [0.1, 1.0, 0, 0], [1.0, 0, 0.1, 0], [0, 1.0, 0.1, 0]])

    class Zero(torch.nn.Module):
        def forward(self, embeddings, *rest):
            return embeddings.sum() * 0.0

    loss = LabelAnchorLoss(Zero(), 2, mode="softmax")
    own = loss(torch.cat([near, anchors]), torch.cat([labels, torch.arange(2)]))
    swapped = loss(torch.cat([near, anchors]), torch.cat([1 - labels, torch.arange(2)]))
    assert own < 0.01 < swapped


def test_with_anchors_appends_every_anchor_row_to_every_batch():
    sampler = WithAnchors(SentenceBatchSampler(np.array([0, 1, 0, 1, 0, 1]), 4, seed=0, batches_per_epoch=3), 6, 2)
    batches = list(sampler.epoch(0))
    assert len(sampler) == 3 and len(batches) == 3
    for batch in batches:
        assert batch["indices"][-2:].tolist() == [6, 7] and (batch["indices"][:-2] < 6).all()


def test_next_of_class_pairs_each_sentence_with_a_classmate_cyclically():
    query, positive = _next_of_class(torch.tensor([1, 0, 1, 2, 0, 1]))
    pairs = sorted(zip(query.tolist(), positive.tolist()))
    assert pairs == [(0, 2), (1, 4), (2, 5), (4, 1), (5, 0)]  # 3 is alone in class 2


def test_in_batch_negatives_is_sentence_transformers_mnrl_on_classmate_pairs():
    embeddings, labels = _batch(3)
    query, positive = _next_of_class(labels)
    expected = st_losses.MultipleNegativesRankingLoss(model=None).compute_loss_from_embeddings(
        [embeddings[query], embeddings[positive]], None)
    assert torch.allclose(build_loss("MultipleNegativesRankingLoss")(embeddings, labels), expected)
    assert isinstance(build_loss(st_losses.MultipleNegativesRankingLoss), InBatchNegativesLoss)
    separated = torch.eye(3, 6)[labels] * 5
    assert build_loss("MultipleNegativesRankingLoss")(separated, labels) < expected
    with pytest.raises(ValueError, match="single-label"):
        InBatchNegativesLoss()(embeddings, torch.eye(3)[labels])


@pytest.mark.parametrize("template", ["x", "Topic: {{label}}", "{label} ({topic})", "{label} {}", "{label}{",
                                      "{label} {label.x}"])
def test_anchor_template_must_hold_the_label_placeholder(template: str):
    """Every replacement field is {label}, and there is one: "{{label}}" gave every class the same anchor, other
    fields failed inside training with a bare KeyError or IndexError."""
    with pytest.raises(ValueError, match=r"anchor_template must be a str.format template whose replacement fields "
                                         r"are all '\{label\}'"):
        TrainingArguments(anchor_template=template)
    for fine in ("{label!r}", "{label:>3}", "About {label}, {{braces}}."):
        assert TrainingArguments(anchor_template=fine).anchor_template == fine
    with pytest.raises(ValueError, match="label_anchors must be one of"):
        TrainingArguments(label_anchors="yes")


def _train(tiny_body_path: str, data: dict, labels: list | None = None, **kwargs) -> SetFitModel:
    model = SetFitModel.from_pretrained(tiny_body_path, labels=labels)
    args = TrainingArguments(max_steps=3, batch_size=8, show_progress_bar=False, seed=0, **kwargs)
    Trainer(model=model, args=args, train_dataset=data).train()
    return model


def test_label_names_become_anchors_in_every_batch_and_the_model_says_so(tiny_body_path, toy_data, monkeypatch):
    seen: list[tuple[int, list]] = []
    forward = LabelAnchorLoss.forward

    def spy(self, embeddings, labels=None, *rest):
        seen.append((embeddings.shape[0], labels[-self.num_anchors:].tolist()))
        return forward(self, embeddings, labels, *rest)

    monkeypatch.setattr(LabelAnchorLoss, "forward", spy)
    model = _train(tiny_body_path, toy_data, anchor_template="it is {label}")
    info = model.training_info["label_anchors"]
    assert info == {"used": True, "texts": ["it is negative", "it is positive"], "reason": None, "prior": None}
    assert seen == [(10, [0, 1])] * 3  # 8 sentences + the 2 anchors, class k's anchor labelled k


@pytest.mark.parametrize(("labels", "kwargs", "reason"), [
    (None, {}, "the labels are not names"),
    (["negative", "positive"], {"label_anchors": "off"}, "label_anchors='off'"),
])
def test_anchors_are_skipped_with_the_reason(tiny_body_path, toy_data, labels, kwargs, reason):
    ids = {"negative": 0, "positive": 1}
    data = {"text": toy_data["text"], "label": [ids[label] for label in toy_data["label"]]}
    model = _train(tiny_body_path, data, labels=labels, **kwargs)
    info = model.training_info["label_anchors"]
    assert info["used"] is False and info["texts"] is None and reason in info["reason"]


def test_int_labels_with_label_names_given_to_the_model_use_the_names(tiny_body_path, toy_data):
    ids = {"negative": 0, "positive": 1}
    data = {"text": toy_data["text"], "label": [ids[label] for label in toy_data["label"]]}
    model = _train(tiny_body_path, data, labels=["negative", "positive"])
    texts = model.training_info["label_anchors"]["texts"]
    assert texts == ["This text is about negative.", "This text is about positive."]
    proba = model.predict_proba(data["text"], as_numpy=True)
    assert model.predict(data["text"]) == [["negative", "positive"][k] for k in proba.argmax(1)]  # id k is name k


def test_anchors_pull_the_trained_body_toward_each_sentence_s_label_text(tiny_body_path, toy_data):
    """With anchors, a training sentence ends nearer its own label's text than the other label's (by cosine), more
    so than the same training without them."""
    from sklearn.preprocessing import normalize

    names = {"positive": "great", "negative": "awful"}  # words of the tiny body's vocabulary
    data = {"text": toy_data["text"], "label": [names[label] for label in toy_data["label"]]}

    def margin(model: SetFitModel) -> float:
        own = np.array([model.labels.index(label) for label in data["label"]])
        cos = normalize(model.encode(data["text"])) @ normalize(model.encode(model.labels)).T
        return float(np.mean(cos[np.arange(len(own)), own] - cos[np.arange(len(own)), 1 - own]))

    def train(anchors: str) -> SetFitModel:
        model = SetFitModel.from_pretrained(tiny_body_path)
        args = TrainingArguments(max_steps=10, batch_size=8, body_learning_rate=1e-3, show_progress_bar=False, seed=0,
                                 label_anchors=anchors, anchor_template="{label}")
        Trainer(model=model, args=args, train_dataset=data).train()
        return model

    on, off = train("auto"), train("off")
    assert on.training_info["label_anchors"]["texts"] == on.labels
    assert margin(on) > margin(off) + 0.01, (margin(on), margin(off))  # measured: 0.0197 against 0.0035


@pytest.mark.parametrize("num_classes", [2, 3])
def test_label_prior_is_the_product_of_the_head_and_a_softmax_over_the_label_texts(num_classes):
    from sklearn.preprocessing import normalize

    from setfit_lite.heads import SklearnHead
    from setfit_lite.training.head_fit import add_label_prior

    rng = np.random.default_rng(0)
    X, y = normalize(rng.normal(size=(30, 5))), np.arange(30) % num_classes
    anchors = rng.normal(size=(num_classes, 5)) * 3
    head = SklearnHead(num_classes=num_classes).fit(X, y)
    before = head.predict_proba(X)
    assert add_label_prior(head, X, anchors, 0.2) is None
    prior = np.exp(X @ normalize(anchors).T / 0.2)
    expected = before * prior / (before * prior).sum(1, keepdims=True)
    assert np.allclose(head.predict_proba(X), expected, atol=1e-6)
    assert "unit length" in add_label_prior(head, X * 2, anchors, 0.2)


def test_trainer_folds_the_label_prior_and_says_so(tiny_body_path, toy_data):
    def train(**kwargs):
        model = SetFitModel.from_pretrained(tiny_body_path, normalize_embeddings=True)
        args = TrainingArguments(max_steps=2, batch_size=8, show_progress_bar=False, seed=0, **kwargs)
        Trainer(model=model, args=args, train_dataset=toy_data).train()
        return model

    names = {"positive": "great", "negative": "awful"}  # words of the tiny body's vocabulary
    toy_data = {"text": toy_data["text"], "label": [names[label] for label in toy_data["label"]]}
    plain, prior = train(), train(label_prior_temperature=0.1)
    assert plain.training_info["label_anchors"]["prior"] is None
    assert prior.training_info["label_anchors"]["prior"] == 0.1
    texts = ["good great", "bad awful"]  # each names one label: the prior raises that label's probability
    named = [prior.labels.index("great"), prior.labels.index("awful")]
    before, after = (m.predict_proba(texts, as_numpy=True)[[0, 1], named] for m in (plain, prior))
    assert (after > before).all(), (before, after)


def test_label_policy_decides_from_the_arguments_and_the_model_alone(tiny_body_path):
    """The label policy needs no Trainer: the arguments, the model and the class ids; a trainer with an objective
    of its own gives its reason, which then wins over using the anchors."""
    from setfit_lite.training.label_policy import MAX_ANCHORS, label_anchor_texts, zero_shot_prototypes

    args = TrainingArguments(anchor_template="it is {label}")
    model = SetFitModel.from_pretrained(tiny_body_path, labels=["great", "awful"], normalize_embeddings=True)
    ids = np.array([0, 1, 0, 1])
    assert label_anchor_texts(args, model, ids, prototypes=False) == ["it is great", "it is awful"]
    assert model.training_info["label_anchors"]["used"] is True
    assert label_anchor_texts(args, model, ids, prototypes=False, own_objective="it distils") is None
    assert model.training_info["label_anchors"]["reason"] == "it distils"
    assert label_anchor_texts(args, model, ids, prototypes=True) is None
    assert "zero-shot prototypes" in model.training_info["label_anchors"]["reason"]
    model.labels = [f"class {k}" for k in range(MAX_ANCHORS + 1)]
    assert label_anchor_texts(args, model, ids, prototypes=False) is None
    assert model.training_info["label_anchors"]["reason"] == f"more than {MAX_ANCHORS} classes"
    model.labels = ["great", "awful"]
    assert zero_shot_prototypes(args, model, ["great", "awful"], np.array([0, 1]), multi_label=False) is True
    assert zero_shot_prototypes(args, model, ["great", "awful"], np.array([0, 1]), False, "it distils") is False
    assert model.training_info["zero_shot"] == {"prototypes": False, "reason": "it distils"}


def test_the_call_s_label_decisions_live_on_its_session(tiny_body_path, toy_data):
    """What one train() decided about the labels is kept on its Session, not on the Trainer."""
    model = SetFitModel.from_pretrained(tiny_body_path)
    trainer = Trainer(model=model, args=TrainingArguments(max_steps=2, batch_size=8, show_progress_bar=False),
                      train_dataset=toy_data)
    assert trainer.session is None and trainer.backend is None
    trainer.train()
    session = trainer.session
    assert session.anchor_texts == model.training_info["label_anchors"]["texts"] == \
        ["This text is about negative.", "This text is about positive."]
    assert session.prototypes is False and trainer.backend is session.backend and trainer.state is session.state
    assert not {"_anchor_texts", "_prototypes", "backend"} & set(vars(trainer))
