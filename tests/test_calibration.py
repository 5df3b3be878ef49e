"""Calibrated probabilities: the temperature fitted by cross-validation, saved with the model and applied by every
prediction tier; ECE and Brier score; abstaining below a probability and its coverage/accuracy."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import fold_bodies, make_sentences
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import brier_score_loss

from setfit_lite import SetFitModel, Trainer, TrainingArguments
from setfit_lite.evaluation import evaluate_model
from setfit_lite.heads import SklearnHead, load_head
from setfit_lite.heads.calibration import cv_temperature, out_of_fold_log_proba
from setfit_lite.metrics import brier_score, calibration_metrics, coverage_accuracy, expected_calibration_error
from setfit_lite.runtime.predictor import temper
from setfit_lite.serialization.validate import ModelFormatError

FAST = {"num_epochs": (1, 4), "max_steps": 4, "body_learning_rate": 1e-2, "show_progress_bar": False,
        "backend": "cpu", "seed": 3}

# ----------------------------------------------------------------------------------------------- the metrics


@pytest.mark.parametrize(("proba", "labels", "expected"), [
    # four bins of one row each: (|1-.95| + |0-.62| + |1-.71| + |1-.83|) / 4
    ([[0.95, 0.05], [0.62, 0.38], [0.29, 0.71], [0.83, 0.17]], [0, 1, 1, 0], 1.13 / 4),
    # one bin (0.8, 0.8667] of two rows, one right: |0.5 - 0.83|
    ([[0.81, 0.19], [0.15, 0.85]], [0, 0], 0.33),
    # perfectly calibrated: in the bin (0.4667, 0.5333] half are right
    ([[0.5, 0.3, 0.2], [0.5, 0.3, 0.2]], [0, 1], 0.0),
    # a row at exactly 1.0 falls in the last bin, wrong: gap 1
    ([[1.0, 0.0], [0.7, 0.3]], [1, 0], (1.0 + 0.3) / 2),
])
def test_expected_calibration_error_by_hand(proba, labels, expected) -> None:
    assert expected_calibration_error(proba, labels) == pytest.approx(expected)


@pytest.mark.parametrize(("proba", "labels", "expected"), [
    ([[0.9, 0.1], [0.6, 0.4]], [0, 1], (0.01 + 0.01 + 0.36 + 0.36) / 2),
    ([[0.5, 0.3, 0.2]], [2], 0.25 + 0.09 + 0.64),
    ([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], [0, 1], 0.0),
    ([[0.0, 1.0]], [0], 2.0),
])
def test_brier_score_by_hand(proba, labels, expected) -> None:
    assert brier_score(proba, labels) == pytest.approx(expected)


def test_brier_score_is_twice_sklearns_binary_one() -> None:
    rng = np.random.default_rng(0)
    p1 = rng.uniform(size=50)
    labels = rng.integers(0, 2, size=50)
    assert brier_score(np.column_stack([1 - p1, p1]), labels) == pytest.approx(2 * brier_score_loss(labels, p1))


@pytest.mark.parametrize("bad", [([[0.5, 0.5]], [2]), ([0.5, 0.5], [0]), ([[0.5, 0.5]], [0, 1])])
def test_calibration_metrics_refuse_mismatched_inputs(bad) -> None:
    with pytest.raises(ValueError):
        expected_calibration_error(*bad)


def test_coverage_accuracy_by_hand() -> None:
    proba = [[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.45, 0.55], [0.3, 0.7]]
    labels = [0, 0, 0, 0, 1]  # right, wrong, right, wrong, right
    got = coverage_accuracy(proba, labels, [0.0, 0.6, 0.75, 0.95])
    assert [(r["threshold"], r["coverage"]) for r in got] == [(0.0, 1.0), (0.6, 0.8), (0.75, 0.4), (0.95, 0.0)]
    assert [r["accuracy"] for r in got[:3]] == pytest.approx([0.6, 0.75, 0.5])
    assert math.isnan(got[3]["accuracy"])


# ------------------------------------------------------------------------------------------- the temperature


@pytest.mark.parametrize("temperature", [0.3, 1.0, 2.5])
def test_temper_is_softmax_of_scaled_logits_and_keeps_the_argmax(temperature) -> None:
    rng = np.random.default_rng(1)
    logits = rng.normal(size=(20, 4)) * 3
    proba = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    expected = np.exp(logits / temperature) / np.exp(logits / temperature).sum(1, keepdims=True)
    got = temper(proba.astype(np.float32), temperature)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, expected, atol=1e-6)
    assert (got.argmax(1) == proba.argmax(1)).all()
    assert (temper(np.array([[0.7, 0.0, 0.3]], np.float32), temperature)[:, 1] == 0).all()  # absent class


def _toy_embeddings(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Three overlapping Gaussian classes in 8 dimensions: no classifier is sure of every row."""
    rng = np.random.default_rng(seed)
    ids = np.repeat(np.arange(3), n // 3)
    centres = rng.normal(size=(3, 8)) * 1.2
    return centres[ids] + rng.normal(size=(len(ids), 8)), ids


@pytest.mark.parametrize(("c", "direction"), [(1e4, "flatten"), (1e-3, "sharpen")])
def test_cv_temperature_moves_ece_the_right_way(c, direction) -> None:
    """An unregularised head is overconfident (T > 1 flattens it), a heavily regularised one underconfident
    (T < 1 sharpens it); the fitted T lowers the ECE on held-out rows and keeps every prediction."""
    x, ids = _toy_embeddings(60, seed=0)
    x_test, ids_test = _toy_embeddings(3000, seed=0)

    def new_head():
        return SklearnHead(LogisticRegression(C=c, max_iter=5000), num_classes=3)

    temperature, how = cv_temperature(new_head, lambda h, a, b: h.fit(a, b), x, ids, seed=0)
    assert "5-fold" in how
    assert (temperature > 1.2) if direction == "flatten" else (temperature < 0.8)
    head = new_head().fit(x, ids)
    raw = head.predict_proba(x_test)
    calibrated = temper(raw, temperature)
    assert expected_calibration_error(calibrated, ids_test) < expected_calibration_error(raw, ids_test) - 0.02
    assert (calibrated.argmax(1) == raw.argmax(1)).all()


@pytest.mark.parametrize(("ids", "reason"), [
    (np.array([0, 0, 0, 1]), "single training example"),
    (np.array([[0, 1], [1, 0], [1, 1], [0, 1]]), "multi-label"),
])
def test_cv_temperature_declines_what_it_cannot_fit(ids, reason) -> None:
    temperature, how = cv_temperature(lambda: None, lambda h, a, b: None, np.zeros((4, 2)), ids)
    assert temperature is None and reason in how


# -------------------------------------------------------------------------------------------------- training


def _train(tiny_body_path: str, **kwargs) -> SetFitModel:
    texts, labels = make_sentences(6, seed=0)
    model = SetFitModel.from_pretrained(tiny_body_path)
    Trainer(model=model, args=TrainingArguments(**{**FAST, **kwargs}),
            train_dataset={"text": texts, "label": labels}).train()
    return model


def test_training_fits_a_temperature_on_request_and_none_by_default(tiny_body_path) -> None:
    texts = make_sentences(5, seed=4)[0]
    calibrated, plain = _train(tiny_body_path, calibration="temperature"), _train(tiny_body_path)
    info = calibrated.training_info["calibration"]
    assert info["temperature"] is not None and "2-fold cross-fitting" in info["method"]
    assert calibrated.calibration_temperature == info["temperature"] != 1.0
    assert plain.calibration_temperature == 1.0 and plain.training_info["calibration"]["temperature"] is None
    raw = calibrated.model_head.predict_proba(calibrated.encode(texts))
    np.testing.assert_allclose(calibrated.predict_proba(texts, as_numpy=True), temper(raw, info["temperature"]),
                               atol=1e-6)
    assert calibrated.predict(texts) == plain.predict(texts)  # same seed, same head: the argmax is kept


def test_multi_label_training_is_not_calibrated(tiny_body_path) -> None:
    texts, labels = make_sentences(6, seed=0)
    hot = [[1, 0] if y == "positive" else [0, 1] for y in labels]
    hot[0] = [1, 1]
    model = SetFitModel.from_pretrained(tiny_body_path)
    Trainer(model=model, args=TrainingArguments(**FAST, calibration="temperature"),
            train_dataset={"text": texts, "label": hot}).train()
    assert model.calibration_temperature == 1.0
    assert "multi-label" in model.training_info["calibration"]["method"]


def test_out_of_fold_rows_never_train_the_model_that_scores_them() -> None:
    ids = np.array([0] * 6 + [1] * 4 + [2] * 8)
    seen: list[tuple[np.ndarray, np.ndarray]] = []

    def fit_predict(train, held_out):
        seen.append((train, held_out))
        assert not set(train) & set(held_out)
        assert set(ids[train]) == {0, 1, 2}  # stratified: every class trains every fold
        return np.full((len(held_out), 3), 1 / 3)

    log_proba, folds = out_of_fold_log_proba(fit_predict, ids, max_folds=3, seed=0)
    assert folds == 3 and len(seen) == 3
    assert sorted(np.concatenate([h for _, h in seen]).tolist()) == list(range(len(ids)))
    np.testing.assert_allclose(log_proba, np.log(1 / 3))


def test_calibration_of_a_trained_body_comes_from_folds_trained_without_their_rows(tiny_body_path, monkeypatch) -> None:
    """Each fold's model is trained from the untrained body on the other fold's texts only; the temperature
    comes from their out-of-fold probabilities, and the final model is the one trained without calibration."""
    import setfit_lite.training.cross_fit as cross_fit

    texts, labels = make_sentences(6, seed=0)
    trained_on: list[list[str]] = []
    real = cross_fit.fold_trainer

    def spying(trainer_class, model, body, args, texts_, labels_):
        fit_predict = real(trainer_class, model, body, args, texts_, labels_)

        def spy(train, held_out):
            trained_on.append([texts_[i] for i in train])
            assert not {texts_[i] for i in train} & {texts_[i] for i in held_out}
            return fit_predict(train, held_out)
        return spy

    monkeypatch.setattr("setfit_lite.trainer.fold_trainer", spying)
    crossed, plain = _train(tiny_body_path, calibration="temperature"), _train(tiny_body_path)
    info = crossed.training_info["calibration"]
    assert "2-fold cross-fitting" in info["method"] and info["temperature"] is not None
    assert len(trained_on) == 2 and sorted(trained_on[0] + trained_on[1]) == sorted(texts)
    probe = make_sentences(5, seed=4)[0]
    np.testing.assert_allclose(crossed.predict_proba(probe, as_numpy=True),
                               temper(plain.predict_proba(probe, as_numpy=True), info["temperature"]), atol=1e-6)


def test_cross_fitting_does_not_sharpen_what_the_trained_body_memorised(tiny_body_path) -> None:
    """Folds of the embeddings of a body trained on all the shots look easy, so a temperature fitted on them
    sharpens; folds trained without their rows do not share that leak and give a larger temperature."""
    crossed = _train(tiny_body_path, calibration="temperature")
    texts, labels = make_sentences(6, seed=0)
    ids = np.asarray(crossed.label_ids(labels))
    leaky, how = cv_temperature(lambda: crossed.new_head(2, False), lambda h, x, y: h.fit(x, y),
                                crossed.encode(texts), ids, seed=3)
    assert "embeddings" in how and crossed.calibration_temperature > leaky


def test_the_cross_fitted_folds_bodies_are_freed_as_they_go(tiny_body_path, monkeypatch) -> None:
    """A sentence-transformers body is in reference cycles: with the cyclic collector off, no fold's copy of the
    body may be alive once training ends (the folds free theirs as they are scored)."""
    with fold_bodies(monkeypatch) as made:  # checked inside: the collector, on again, would free them
        model = _train(tiny_body_path, calibration="temperature")
        assert "cross-fitting" in model.training_info["calibration"]["method"] and len(made) >= 2
        assert [ref() for ref in made] == [None] * len(made)


def test_an_end_to_end_head_is_not_calibrated_and_trains_no_folds(tiny_body_path, monkeypatch) -> None:
    def no_folds(*args, **kwargs):
        raise AssertionError("an end-to-end head is never calibrated: no fold may be trained for it")

    monkeypatch.setattr("setfit_lite.trainer.fold_trainer", no_folds)
    texts, labels = make_sentences(6, seed=0)
    model = SetFitModel.from_pretrained(tiny_body_path, use_differentiable_head=True)
    trainer = Trainer(model=model, args=TrainingArguments(**FAST, calibration="temperature", end_to_end=True),
                      train_dataset={"text": texts, "label": labels})
    trainer.train()
    assert trainer.session.initial_body is None  # no copy of the untrained body kept for folds never trained
    assert model.calibration_temperature == 1.0
    assert "end-to-end" in model.training_info["calibration"]["method"]


def test_calibration_of_a_body_not_trained_is_the_embedding_cross_validation(tiny_body_path) -> None:
    model = _train(tiny_body_path, calibration="temperature", body_learning_rate=0.0)
    assert "5-fold cross-validation on the training embeddings" in model.training_info["calibration"]["method"]
    assert model.calibration_temperature != 1.0


# ------------------------------------------------------------------------------------- saving and the tiers


@pytest.fixture(scope="module")
def calibrated_tiers(tiny_body_path, tmp_path_factory) -> dict:
    """A fitted model (logistic-regression head, then a torch head) with a temperature, saved, exported to ONNX
    and to the static tier, and loaded back from each."""
    texts, labels = make_sentences(12, seed=0)
    folder = tmp_path_factory.mktemp("calibrated")
    out = {"texts": texts, "labels": labels}
    for name, options, temperature in (("lr", {}, 0.4), ("torch", {"use_differentiable_head": True}, 2.5)):
        model = SetFitModel.from_pretrained(tiny_body_path, labels=["positive", "negative"], **options)
        head = model.new_head(2, multi_label=False)
        head.fit(model.encode(texts), model.label_ids(labels))
        head.calibration_temperature = temperature
        model.model_head = head
        model.save_pretrained(folder / name)
        out[name] = {"model": model, "saved": SetFitModel.from_pretrained(folder / name),
                     "onnx": SetFitModel.from_onnx(model.export_onnx(folder / f"{name}-onnx")),
                     "folder": folder / name}
    out["static"] = SetFitModel.from_static(out["lr"]["model"].export_static(
        folder / "static", texts, labels, pca_dims=16, dtype="float32", refine_epochs=0))
    return out


@pytest.mark.parametrize("head", ["lr", "torch"])
def test_temperature_is_saved_loaded_and_applied_alike_by_torch_and_onnx(calibrated_tiers, head) -> None:
    tiers, texts = calibrated_tiers[head], calibrated_tiers["texts"] + ["wonderful", "awful film"]
    model = tiers["model"]
    config = json.loads((tiers["folder"] / "head" / "head_config.json").read_text())
    assert config["calibration_temperature"] == model.calibration_temperature != 1.0
    raw = np.asarray(model.model_head.predict_proba(model.encode(texts)))
    expected = temper(raw, model.calibration_temperature)
    assert not np.allclose(expected, raw, atol=1e-3)  # the temperature does something here
    for tier in ("model", "saved", "onnx"):
        assert tiers[tier].calibration_temperature == pytest.approx(model.calibration_temperature)
        np.testing.assert_allclose(np.asarray(tiers[tier].predict_proba(texts)), expected, atol=1e-6, err_msg=tier)
        assert list(tiers[tier].predict(texts)) == list(model.predict(texts))


def test_static_tier_fits_and_applies_its_own_temperature(calibrated_tiers) -> None:
    static, texts = calibrated_tiers["static"], calibrated_tiers["texts"]
    assert static.calibration_temperature not in (1.0, calibrated_tiers["lr"]["model"].calibration_temperature)
    from setfit_lite.runtime.static import linear_proba

    raw = linear_proba(static.head, static.encode(texts))
    np.testing.assert_allclose(static.predict_proba(texts), temper(raw, static.calibration_temperature), atol=1e-6)


def test_static_tier_of_an_uncalibrated_model_is_not_calibrated(tier_models) -> None:
    assert tier_models["static"].calibration_temperature == 1.0
    config = json.loads((tier_models["folders"]["static"] / "config_setfit_lite_static.json").read_text())
    assert "calibration_temperature" not in config


def test_model_saved_without_the_field_loads_with_temperature_one(tier_models, tmp_path) -> None:
    model = tier_models["torch"]
    assert model.calibration_temperature == 1.0
    model.save_pretrained(tmp_path / "plain")
    config = json.loads((tmp_path / "plain" / "head" / "head_config.json").read_text())
    assert "calibration_temperature" not in config  # files as before calibration existed
    loaded = SetFitModel.from_pretrained(tmp_path / "plain")
    assert loaded.calibration_temperature == 1.0
    texts = make_sentences(3, seed=2)[0]
    np.testing.assert_allclose(loaded.predict_proba(texts, as_numpy=True),
                               loaded.model_head.predict_proba(loaded.encode(texts)), atol=1e-7)
    assert tier_models["onnx"].calibration_temperature == 1.0


@pytest.mark.parametrize("value", [0, -1.5, "2", True])
def test_invalid_saved_temperature_is_refused(calibrated_tiers, tmp_path, value) -> None:
    head_folder = tmp_path / "head"
    calibrated_tiers["lr"]["model"].model_head.save(head_folder)
    path = head_folder / "head_config.json"
    path.write_text(json.dumps(json.loads(path.read_text()) | {"calibration_temperature": value}))
    with pytest.raises(ModelFormatError, match="calibration_temperature"):
        load_head(head_folder)


# ----------------------------------------------------------------------------------------------- abstaining


@pytest.mark.parametrize("tier", ["lr/model", "lr/saved", "lr/onnx", "torch/model", "torch/onnx", "static"])
def test_abstain_below_a_threshold_on_every_tier(calibrated_tiers, tier) -> None:
    parts = tier.split("/")
    model = calibrated_tiers[parts[0]][parts[1]] if len(parts) == 2 else calibrated_tiers["static"]
    texts = calibrated_tiers["texts"]
    proba = np.asarray(model.predict_proba(texts))
    confidence = proba.max(1)
    threshold = float(np.median(confidence))
    labels = list(model.predict(texts))
    got = model.predict(texts, abstain_below=threshold)
    assert got == [None if c < threshold else y for c, y in zip(confidence, labels)]
    assert None in got and any(g is not None for g in got)
    unsure = model.predict(texts, abstain_below=threshold, abstain_label="unsure", as_numpy=True)
    assert unsure.dtype == object and list(unsure) == [("unsure" if g is None else g) for g in got]
    assert list(model.predict_iter(texts, abstain_below=threshold)) == got
    low = int(np.argmin(confidence))
    assert model.predict(texts[low], abstain_below=threshold) is None
    assert model.predict(texts, abstain_below=0.0) == labels
    coverage = coverage_accuracy(proba, model.label_ids(calibrated_tiers["labels"]), [threshold])[0]["coverage"]
    assert coverage == pytest.approx(np.mean([g is not None for g in got]))


@pytest.mark.parametrize("bad", [1.5, -0.1, "0.5", True])
def test_abstain_below_must_be_a_probability(calibrated_tiers, bad) -> None:
    with pytest.raises(ValueError, match="abstain_below"):
        calibrated_tiers["lr"]["model"].predict(["good"], abstain_below=bad)


# ----------------------------------------------------------------------------------------------- evaluation


def test_evaluate_reports_ece_and_brier_of_the_calibrated_probabilities(calibrated_tiers) -> None:
    from setfit_lite.data import LabeledData

    texts, labels = make_sentences(8, seed=5)
    for tier in ("model", "onnx"):
        model = calibrated_tiers["lr"][tier]
        result = evaluate_model(model, LabeledData(texts, labels), "accuracy")
        expected = calibration_metrics(np.asarray(model.predict_proba(texts)), model.label_ids(labels))
        assert result["calibration"] == pytest.approx(expected)
        assert set(result) == {"accuracy", "calibration"}
