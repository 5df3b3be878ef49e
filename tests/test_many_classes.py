"""Many classes (50 to 150 at 8 per class): the sentence batches cover every class with positive pairs, the
training cost grows linearly with the classes (setfit's pairs grow quadratically), label anchors stop at
MAX_ANCHORS classes and say why."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from setfit_lite import SetFitModel, Trainer, TrainingArguments
from setfit_lite.losses import LabelAnchorLoss, PairMatrixLoss
from setfit_lite.training.batch_samplers import PairSpace, SentenceBatchSampler, WithAnchors, pair_counts
from setfit_lite.training.label_policy import MAX_ANCHORS, label_anchor_texts


def labels_of(num_classes: int, per_class: int = 8) -> np.ndarray:
    return np.repeat(np.arange(num_classes), per_class)


def sampler_for(tiny_body_path: str, ids: np.ndarray, **args: object):
    model = SetFitModel.from_pretrained(tiny_body_path)
    trainer = Trainer(model, TrainingArguments(seed=0, show_progress_bar=False, **args),
                      train_dataset={"text": ["a"] * len(ids), "label": ids.tolist()})
    return trainer.make_sampler(trainer.args, ids)


@pytest.mark.parametrize("num_classes", [50, 150])
def test_an_epoch_gives_every_class_a_positive_pair(tiny_body_path, num_classes):
    ids = labels_of(num_classes)
    sampler = sampler_for(tiny_body_path, ids)
    pairs_per_class = np.zeros(num_classes, dtype=int)
    for batch in sampler.epoch(0):
        counts = np.bincount(ids[batch["indices"]], minlength=num_classes)
        pairs_per_class += counts * (counts - 1) // 2
    assert (pairs_per_class > 0).all(), np.flatnonzero(pairs_per_class == 0)


def test_training_cost_is_linear_in_the_classes(tiny_body_path):
    """Sentences encoded per epoch at 8 per class: the training rows grow at most linearly with the classes (setfit's
    pairs with their square), and with the label anchors (one row per class in every batch, up to MAX_ANCHORS
    classes) the whole epoch stays under a bound that does not depend on the classes."""
    rows, with_anchors, setfit_pairs = {}, {}, {}
    args = TrainingArguments()
    for k in (20, 60, 180):
        ids = labels_of(k)
        batches = list(sampler_for(tiny_body_path, ids).epoch(0))
        rows[k] = sum(len(b["indices"]) for b in batches)
        with_anchors[k] = rows[k] + len(batches) * (k if k <= MAX_ANCHORS else 0)
        setfit_pairs[k] = sum(pair_counts(PairSpace(ids), "oversampling", None, len(ids)))
        bound = args.steps_per_epoch_floor(10**6, 10**6, args.embedding_batch_size) * \
            (args.embedding_batch_size + MAX_ANCHORS)
        assert with_anchors[k] <= bound, (k, with_anchors[k], bound)
    assert setfit_pairs[180] > 8 * setfit_pairs[20]  # quadratic: 9x the classes, ~81x the pairs
    for small, large in ((20, 60), (60, 180), (20, 180)):
        assert rows[large] <= (large / small) * rows[small] * 1.05, rows


def test_label_anchors_stop_beyond_max_anchors(tiny_body_path):
    names = [f"class {i}" for i in range(MAX_ANCHORS + 1)]
    ids = labels_of(len(names), 2)
    model = SetFitModel.from_pretrained(tiny_body_path, labels=names)
    trainer = Trainer(model, TrainingArguments(show_progress_bar=False),
                      train_dataset={"text": ["a"] * len(ids), "label": [names[i] for i in ids]})
    assert label_anchor_texts(trainer.args, model, ids, False) is None
    assert f"more than {MAX_ANCHORS} classes" in model.training_info["label_anchors"]["reason"]
    model.labels = names[:MAX_ANCHORS]
    assert len(label_anchor_texts(trainer.args, model, ids % MAX_ANCHORS, False)) == MAX_ANCHORS


def test_anchors_per_batch_holds_the_batch_classes_and_a_fixed_count():
    ids = labels_of(150)
    inner = SentenceBatchSampler(ids, 16, seed=0, batches_per_epoch=20)
    sampler = WithAnchors(inner, len(ids), 150, per_batch=16, labels=ids, seed=0)
    assert sampler.per_batch == 16
    for batch in sampler.epoch(0):
        rows, anchors = batch["indices"][:16], batch["indices"][16:] - len(ids)
        assert len(anchors) == 16 and len(set(anchors.tolist())) == 16
        assert set(ids[rows].tolist()) <= set(anchors.tolist())  # every sentence's label text is there
    assert WithAnchors(inner, len(ids), 150, labels=ids).per_batch == 150  # default: every class


def test_anchor_loss_reads_which_classes_the_anchor_rows_are():
    """A batch anchored to a subset of the classes (in any order) scores as the same rows anchored to all."""
    torch.manual_seed(0)
    sentences, labels = torch.randn(6, 8), torch.tensor([4, 1, 4, 1, 2, 2])
    anchors = torch.randn(5, 8)
    for mode in ("softmax", "pairs"):
        inner = PairMatrixLoss()
        subset = torch.tensor([2, 4, 1])
        got = LabelAnchorLoss(inner, 3, mode=mode)(torch.cat([sentences, anchors[subset]]),
                                                   torch.cat([labels, subset]))
        remap = {2: 0, 4: 1, 1: 2}
        dense = torch.tensor([remap[int(y)] for y in labels])
        want = LabelAnchorLoss(inner, 3, mode=mode)(torch.cat([sentences, anchors[subset]]),
                                                    torch.cat([dense, torch.arange(3)]))
        assert torch.allclose(got, want, atol=1e-6), mode


def test_anchors_per_batch_anchors_more_than_max_anchors_classes_at_bounded_cost(tiny_body_path):
    names = [f"class {i}" for i in range(MAX_ANCHORS + 6)]
    ids = labels_of(len(names), 2)
    model = SetFitModel.from_pretrained(tiny_body_path, labels=names)
    trainer = Trainer(model, TrainingArguments(show_progress_bar=False, anchors_per_batch=16),
                      train_dataset={"text": ["a"] * len(ids), "label": [names[i] for i in ids]})
    assert len(label_anchor_texts(trainer.args, model, ids, False)) == len(names)


def test_the_default_head_loosens_its_regularisation_from_many_classes(tiny_body_path) -> None:
    """From MANY_CLASSES single-label classes the model's default logistic regression takes C=MANY_CLASSES_C (chosen
    on CLINC150's validation split); fewer classes, multi-label heads and a user's C are left alone."""
    from setfit_lite.heads import build_head
    from setfit_lite.heads.factory import MANY_CLASSES, MANY_CLASSES_C

    model = SetFitModel.from_pretrained(tiny_body_path)
    assert model.new_head(MANY_CLASSES, multi_label=False).estimator.C == MANY_CLASSES_C
    assert model.new_head(MANY_CLASSES - 1, multi_label=False).estimator.C == 1.0
    assert build_head(None, num_classes=MANY_CLASSES, multi_label=True).estimator.get_params()["estimator__C"] \
        == 1.0
    user = SetFitModel.from_pretrained(tiny_body_path, head_params={"C": 2.0})
    assert user.new_head(MANY_CLASSES, multi_label=False).estimator.C == 2.0
