"""Imbalanced labelled sets: class-balanced sentence batches, class weights in the heads, macro-F1 for selection,
skewed few-shot samples."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_sentences
from sklearn.linear_model import LogisticRegression

from setfit_lite.heads import SklearnHead, TorchHead, load_head
from setfit_lite.metrics import compute_metric
from setfit_lite.training.batch_samplers import SentenceBatchSampler

SKEWED = [
    # (class sizes, batch size)
    ((32, 8, 2), 16),
    ((32, 8, 2, 1), 16),
    ((20, 3), 8),
    ((40, 16, 8, 4, 2), 16),
    ((10,) * 11 + (1,), 8),  # more classes than fit a batch: B // 2 classes per batch
]


def labels_of(sizes: tuple[int, ...]) -> np.ndarray:
    return np.repeat(np.arange(len(sizes)), sizes)


def batches(sampler: SentenceBatchSampler, epoch: int = 0) -> list[list[int]]:
    return [b["indices"].tolist() for b in sampler.epoch(epoch)]


@pytest.mark.parametrize(("sizes", "batch_size"), SKEWED)
def test_every_batch_is_full_and_holds_its_classes_equally(sizes, batch_size):
    y = labels_of(sizes)
    sampler = SentenceBatchSampler(y, batch_size, seed=0, batches_per_epoch=12)
    k = len(sizes)
    for batch in batches(sampler):
        assert len(batch) == batch_size
        counts = np.bincount(y[batch], minlength=k)
        present = counts[counts > 0]
        if 2 * k <= batch_size:
            assert (counts > 0).all(), counts  # every class in every batch
        assert present.max() - present.min() <= 1, counts


@pytest.mark.parametrize(("sizes", "batch_size"), SKEWED[:2])
def test_minority_is_oversampled_deterministically(sizes, batch_size):
    y = labels_of(sizes)
    first = batches(SentenceBatchSampler(y, batch_size, seed=3, batches_per_epoch=6))
    again = batches(SentenceBatchSampler(y, batch_size, seed=3, batches_per_epoch=6))
    other = batches(SentenceBatchSampler(y, batch_size, seed=4, batches_per_epoch=6))
    assert first == again and first != other
    minority = np.flatnonzero(y == 2)
    for batch in first:  # the 2-example class fills its share by repeating both examples
        drawn = [i for i in batch if i in minority]
        assert len(drawn) >= batch_size // len(sizes) and set(drawn) == set(minority.tolist())


def test_balanced_data_batches_are_unchanged():
    """Classes at least as large as their share: no repeats within a batch (as before)."""
    y = np.repeat(np.arange(4), 20)
    for batch in batches(SentenceBatchSampler(y, 16, seed=0)):
        assert len(set(batch)) == len(batch) == 16


# ---- class weights in the heads -------------------------------------------------------------------------------


def skewed_points(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Two overlapping Gaussian classes, 80 against 8 training points; a balanced test set."""
    rng = np.random.default_rng(seed)
    X = np.concatenate([rng.normal(0.0, 1.0, (80, 4)), rng.normal(1.0, 1.0, (8, 4))]).astype(np.float32)
    y = np.array([0] * 80 + [1] * 8)
    X_test = np.concatenate([rng.normal(0.0, 1.0, (200, 4)), rng.normal(1.0, 1.0, (200, 4))]).astype(np.float32)
    return X, y, X_test, np.array([0] * 200 + [1] * 200)


def make_head(kind: str, class_weight):
    if kind == "sklearn":
        return SklearnHead(LogisticRegression(max_iter=1000, class_weight=class_weight), num_classes=2)
    return TorchHead(4, 2, class_weight=class_weight)


def fit(head, X, y):
    if isinstance(head, TorchHead):
        return head.fit(X, y, epochs=30, batch_size=8, seed=0)
    return head.fit(X, y)


@pytest.mark.parametrize(("kind", "weights"), [
    ("sklearn", "balanced"), ("sklearn", {0: 1.0, 1: 10.0}),
    ("torch", "balanced"), ("torch", {0: 1.0, 1: 10.0}), ("torch", [1.0, 10.0]),
])
def test_class_weight_moves_the_decision_toward_the_minority(kind, weights):
    X, y, X_test, y_test = skewed_points()
    plain = fit(make_head(kind, None), X, y)
    weighted = fit(make_head(kind, weights), X, y)
    plain_recall = (plain.predict(X_test)[y_test == 1] == 1).mean()
    weighted_recall = (weighted.predict(X_test)[y_test == 1] == 1).mean()
    assert weighted_recall > plain_recall + 0.2
    assert compute_metric("f1_macro", weighted.predict(X_test), y_test)["f1_macro"] > \
        compute_metric("f1_macro", plain.predict(X_test), y_test)["f1_macro"]


@pytest.mark.parametrize("kind", ["sklearn", "torch"])
def test_class_weight_is_saved_and_loaded_without_pickle(kind, tmp_path):
    X, y, X_test, _ = skewed_points()
    head = fit(make_head(kind, "balanced"), X, y)
    head.save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["head.safetensors", "head_config.json"]
    loaded = load_head(tmp_path)
    np.testing.assert_array_equal(loaded.predict_proba(X_test), head.predict_proba(X_test))
    assert loaded.get_params()["class_weight"] == "balanced" if kind == "sklearn" else \
        loaded.class_weight == "balanced"
    if kind == "sklearn":  # refitting the loaded head weighs the classes again
        np.testing.assert_allclose(fit(loaded, X, y).predict_proba(X_test), head.predict_proba(X_test), atol=1e-6)
    else:  # the loaded head's loss weighs a minority example by n / (K * count) = 88 / 16 once it sees the labels
        import torch

        logits, target = loaded(torch.as_tensor(X[-1:])), torch.tensor([1])
        plain = torch.nn.functional.cross_entropy(logits, target)
        loaded.fit_class_weight(y)
        assert float(loaded.loss(logits, target)) == pytest.approx(5.5 * float(plain))


def test_torch_head_rejects_weights_of_the_wrong_size():
    with pytest.raises(ValueError, match="class_weight"):
        TorchHead(4, 3, class_weight=[1.0, 2.0])
    with pytest.raises(ValueError, match="class_weight"):
        TorchHead(4, 2, class_weight="heavy")


# ---- the trainer: the class-weight default and macro-F1 ------------------------------------------------------


def skewed_toy(n_major: int = 12, n_minor: int = 3) -> dict[str, list[str]]:
    texts, labels = make_sentences(n_major, seed=0)
    keep = [i for i, label in enumerate(labels) if label == "positive" or i < n_major + n_minor]
    return {"text": [texts[i] for i in keep], "label": [labels[i] for i in keep]}


def quick_args(**kwargs):
    from setfit_lite import TrainingArguments

    return TrainingArguments(num_epochs=(1, 4), max_steps=2, show_progress_bar=False, **kwargs)


@pytest.mark.parametrize(("head_class_weight", "skewed", "differentiable", "expected"), [
    ("auto", True, False, "balanced"),
    ("auto", False, False, None),
    ("balanced", False, False, "balanced"),
    (None, True, False, None),
    ("auto", True, True, "balanced"),
    ("auto", "mild", False, "balanced"),  # 6 to 5: any inequality is weighed
])
def test_trainer_class_weight(tiny_body_path, head_class_weight, skewed, differentiable, expected):
    from setfit_lite import SetFitModel, Trainer

    data = dict(zip(("text", "label"), make_sentences(6, seed=0)))
    if skewed == "mild":
        data = {key: values[1:] for key, values in data.items()}
        assert sorted(data["label"].count(label) for label in set(data["label"])) == [5, 6]
    elif skewed:
        data = skewed_toy()
    model = SetFitModel.from_pretrained(tiny_body_path, use_differentiable_head=differentiable)
    Trainer(model, quick_args(head_class_weight=head_class_weight), train_dataset=data).train()
    head = model.model_head
    used = head.class_weight if differentiable else head.get_params()["class_weight"]
    assert used == expected
    assert model.training_info["class_weight"]["used"] == expected


def test_explicit_head_param_wins_over_the_default(tiny_body_path):
    from setfit_lite import SetFitModel, Trainer

    model = SetFitModel.from_pretrained(tiny_body_path, head_params={"class_weight": {0: 1.0, 1: 3.0}})
    Trainer(model, quick_args(head_class_weight="balanced"), train_dataset=skewed_toy()).train()
    assert model.model_head.get_params()["class_weight"] == {0: 1.0, 1: 3.0}


def test_macro_f1_metric():
    from setfit_lite.metrics import is_skewed

    y_true = np.array([0, 0, 0, 0, 0, 0, 1, 2])
    y_pred = np.array([0, 0, 0, 0, 0, 0, 0, 2])
    assert compute_metric("f1_macro", y_pred, y_true)["f1_macro"] == pytest.approx((12 / 13 + 0 + 1) / 3)
    assert is_skewed(y_true) and not is_skewed(np.array([0, 0, 1, 1, 2, 2, 2])) and not is_skewed(np.zeros((3, 2)))


@pytest.mark.parametrize(("metric", "skewed", "keys"), [
    ("accuracy", True, {"accuracy", "f1_macro"}),
    ("accuracy", False, {"accuracy"}),
    ("f1_macro", False, {"f1_macro"}),
    ("f1_macro", True, {"f1_macro"}),
])
def test_evaluate_reports_macro_f1(tiny_body_path, metric, skewed, keys):
    from setfit_lite import SetFitModel, Trainer

    data = skewed_toy() if skewed else dict(zip(("text", "label"), make_sentences(6, seed=0)))
    model = SetFitModel.from_pretrained(tiny_body_path)
    trainer = Trainer(model, quick_args(), train_dataset=data, eval_dataset=data, metric=metric)
    trainer.train()
    assert set(trainer.evaluate()) == keys | {"calibration"}


def test_best_model_by_macro_f1(tiny_body_path):
    """metric_for_best_model="f1_macro" selects on macro-F1 even when the trainer's metric is accuracy."""
    from transformers import TrainerCallback

    from setfit_lite import SetFitModel, Trainer

    logged = []

    class Record(TrainerCallback):
        def on_evaluate(self, args, state, control, metrics=None, **kwargs):
            logged.append(dict(metrics))

    data = dict(zip(("text", "label"), make_sentences(6, seed=0)))
    model = SetFitModel.from_pretrained(tiny_body_path)
    args = quick_args(eval_steps=1, load_best_model_at_end=True, metric_for_best_model="f1_macro")
    args = args.update({"max_steps": 3})
    trainer = Trainer(model, args, train_dataset=data, eval_dataset=data, callbacks=[Record()])
    trainer.train()
    assert logged and all("eval_f1_macro" in m for m in logged)
    assert trainer.state.best_metric == max(m["eval_f1_macro"] for m in logged)


# ---- skewed samples ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["dict", "rows"])
def test_sample_dataset_with_counts_per_label(form):
    from setfit_lite.data import sample_dataset

    labels = [i % 3 for i in range(90)]
    table = {"text": [f"t{i}" for i in range(90)], "label": labels}
    data = table if form == "dict" else [{"text": t, "label": lab} for t, lab in zip(table["text"], labels)]
    counts = {0: 16, 1: 4, 2: 2}
    sample = sample_dataset(data, num_samples=counts, seed=0)
    got = sample["label"] if form == "dict" else [row["label"] for row in sample]
    assert {k: got.count(k) for k in counts} == counts
    assert sample == sample_dataset(data, num_samples=counts, seed=0)
    assert sample != sample_dataset(data, num_samples=counts, seed=1)
    # the same rows per label as a uniform sample of that size draws
    uniform = sample_dataset(data, num_samples=2, seed=0)
    texts = sample["text"] if form == "dict" else [row["text"] for row in sample]
    uniform_texts = uniform["text"] if form == "dict" else [row["text"] for row in uniform]
    assert {t for t in texts if int(t[1:]) % 3 == 2} == {t for t in uniform_texts if int(t[1:]) % 3 == 2}
    with pytest.raises(ValueError, match="label 2"):
        sample_dataset(data, num_samples={0: 16, 1: 4}, seed=0)
