"""End-to-end pipeline on a tiny BERT built in the test: train, predict, save/load, errors, callbacks."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from setfit_lite import SetFitModel, Trainer, TrainingArguments
from setfit_lite.training.callbacks import TrainerCallback

FAST = {"num_epochs": (3, 4), "body_learning_rate": 1e-2, "show_progress_bar": False, "backend": "cpu"}


def train(tiny_body_path, data, eval_data=None, labels=None, **kwargs):
    model = SetFitModel.from_pretrained(tiny_body_path, labels=labels,
                                        **{k: kwargs.pop(k) for k in list(kwargs) if k in _MODEL_KW})
    callbacks = kwargs.pop("callbacks", None)
    args = TrainingArguments(**{**FAST, **kwargs})
    trainer = Trainer(model=model, args=args, train_dataset=data, eval_dataset=eval_data, callbacks=callbacks)
    trainer.train()
    return model, trainer


_MODEL_KW = ("use_differentiable_head", "multi_target_strategy", "head_params")


@pytest.fixture(scope="module")
def trained(tiny_body_path):
    """One model trained with the defaults (sentence batches), shared by the tests that only read it."""
    from conftest import make_sentences

    texts, labels = make_sentences(12, seed=0)
    return train(tiny_body_path, {"text": texts, "label": labels}, seed=7)


@pytest.mark.parametrize("objective", ["sentence_batch", "pairs"])
def test_train_predict_string_labels(tiny_body_path, toy_data, toy_eval, objective):
    model, trainer = train(tiny_body_path, toy_data, toy_eval, objective=objective)
    assert model.labels == ["negative", "positive"]
    result = trainer.evaluate()
    assert set(result) == {"accuracy", "calibration"} and result["accuracy"] >= 0.8
    preds = model.predict(toy_eval["text"])
    assert all(isinstance(p, str) for p in preds)
    assert np.mean([p == y for p, y in zip(preds, toy_eval["label"])]) == result["accuracy"]
    assert model.predict(toy_eval["text"][0]) == preds[0]


def test_predict_proba_columns_follow_labels_order(tiny_body_path, toy_data):
    # labels given in non-sorted order: predict and predict_proba must agree on it
    model, _ = train(tiny_body_path, toy_data, labels=["positive", "negative"])
    texts = ["great wonderful superb film", "awful dull terrible movie", "the plot was nice", "boring sad acting"]
    proba = model.predict_proba(texts)
    assert proba.shape == (4, 2)
    np.testing.assert_allclose(proba.sum(1), 1.0, rtol=1e-5)
    assert [model.labels[i] for i in proba.argmax(1)] == model.predict(texts)
    assert model.predict(texts)[0] == "positive"


def test_int_labels_with_names(tiny_body_path, toy_data):
    data = {"text": toy_data["text"], "label": [1 if y == "positive" else 0 for y in toy_data["label"]]}
    model, _ = train(tiny_body_path, data, labels=["negative", "positive"])
    assert model.predict(["great wonderful superb film"]) == ["positive"]
    model2, _ = train(tiny_body_path, data)
    # integer labels without names: setfit's tensor of label values (a numpy array with as_numpy)
    prediction = model2.predict(["great wonderful superb film"])
    assert model2.labels == [0, 1] and isinstance(prediction, torch.Tensor) and prediction.tolist() == [1]
    assert model2.predict(["great wonderful superb film"], as_numpy=True).tolist() == [1]


def test_save_load_identical_and_seeded(tiny_body_path, toy_data, tmp_path, trained):
    model, _ = trained
    texts = toy_data["text"][:6]
    model.save_pretrained(tmp_path / "m")
    files = {p.name for p in (tmp_path / "m").iterdir()}
    assert {"config_setfit_lite.json", "README.md", "modules.json", "head", "manifest.json"} <= files
    assert not any(p.suffix in (".pkl", ".joblib", ".pickle") for p in (tmp_path / "m").rglob("*"))
    loaded = SetFitModel.from_pretrained(tmp_path / "m")
    assert np.array_equal(model.predict_proba(texts), loaded.predict_proba(texts))
    assert loaded.labels == model.labels
    again, _ = train(tiny_body_path, toy_data, seed=7)
    assert np.array_equal(model.predict_proba(texts), again.predict_proba(texts))


def test_tampered_model_folder_is_refused(tmp_path, trained):
    model, _ = trained
    model.save_pretrained(tmp_path / "m")
    config = tmp_path / "m" / "config_setfit_lite.json"
    config.write_text(config.read_text().replace("positive", "positivo"))
    with pytest.raises(ValueError, match="config_setfit_lite.json") as refused:
        SetFitModel.from_pretrained(tmp_path / "m")
    assert "edited by hand after saving is refused" in str(refused.value)  # what a deliberate edit should do
    (tmp_path / "m2").mkdir()
    (tmp_path / "m2" / "model_head.pkl").write_bytes(b"\x80\x04N.")
    with pytest.raises(ValueError, match="model_head.pkl"):
        SetFitModel.from_pretrained(tmp_path / "m2")


def test_differentiable_head_end_to_end(tiny_body_path, toy_data, toy_eval, tmp_path):
    model, trainer = train(tiny_body_path, toy_data, toy_eval, use_differentiable_head=True, end_to_end=True,
                           head_learning_rate=5e-2, min_steps_per_epoch=8)
    assert trainer.evaluate()["accuracy"] >= 0.8
    model.save_pretrained(tmp_path / "m")
    loaded = SetFitModel.from_pretrained(tmp_path / "m")
    np.testing.assert_allclose(model.predict_proba(toy_eval["text"]), loaded.predict_proba(toy_eval["text"]))


def test_multi_label(tiny_body_path, toy_data):
    labels = [[1, 0] if y == "positive" else [0, 1] for y in toy_data["label"]]
    data = {"text": toy_data["text"], "label": labels}
    model, _ = train(tiny_body_path, data, multi_target_strategy="one-vs-rest")
    pred = model.predict(["great wonderful superb film", "awful dull terrible movie"])
    assert pred.shape == (2, 2)
    assert pred[0].tolist() == [1, 0] and pred[1].tolist() == [0, 1]


class Recorder(TrainerCallback):
    def __init__(self):
        self.events, self.metrics = [], []

    def on_train_begin(self, args, state, control, model=None, **kw):
        self.events.append("train_begin")
        assert model is not None

    def on_evaluate(self, args, state, control, metrics=None, **kw):
        self.metrics.append(metrics)

    def on_train_end(self, args, state, control, **kw):
        self.events.append("train_end")


def test_eval_during_training_reports_real_metric_and_stops_early(tiny_body_path, toy_data, toy_eval):
    kwargs = {"num_epochs": (20, 2), "eval_strategy": "steps", "eval_steps": 4, "metric_for_best_model": "accuracy",
              "load_best_model_at_end": True}
    full_rec, stop_rec = Recorder(), Recorder()
    _, full = train(tiny_body_path, toy_data, toy_eval, callbacks=[full_rec], **kwargs)
    _, trainer = train(tiny_body_path, toy_data, toy_eval, callbacks=[stop_rec], early_stopping_patience=1, **kwargs)
    assert stop_rec.events == ["train_begin", "train_end"]
    assert stop_rec.metrics and "eval_accuracy" in stop_rec.metrics[0]
    # without early stopping the run takes every step; with it, it stops at the evaluation that did not improve
    assert full.state.global_step == full.state.max_steps == trainer.state.max_steps
    accuracies = [m["eval_accuracy"] for m in stop_rec.metrics]
    assert trainer.state.global_step == 4 * len(accuracies) < full.state.global_step
    assert len(accuracies) >= 2 and accuracies[-1] <= max(accuracies[:-1])  # patience 1: the first non-improvement
    assert all(b > a for a, b in zip(accuracies, accuracies[1:-1]))  # ... and not an earlier one
    assert stop_rec.metrics == full_rec.metrics[:len(accuracies)]  # same seed, same run up to the stop


def test_a_callable_metrics_result_is_returned_as_it_gives_it(toy_eval, trained):
    """setfit's evaluate returns what the metric returns: no calibration key beside a callable's keys (code that
    sums or formats the values, as a search's compute_objective does, must not meet a nested dict)."""
    model, trainer = trained
    by_name = trainer.evaluate(toy_eval)
    assert set(by_name["calibration"]) == {"expected_calibration_error", "brier_score"}
    old = trainer.metric
    trainer.metric = lambda y_pred, y_true: {"right": float(sum(p == t for p, t in zip(y_pred, y_true)))}
    try:
        result = trainer.evaluate(toy_eval)
    finally:
        trainer.metric = old
    assert list(result) == ["right"] and sum(result.values()) >= 0


def test_evaluate_group_by(toy_eval, trained):
    _, trainer = trained
    data = dict(toy_eval, lang=["en", "fr"] * (len(toy_eval["text"]) // 2))
    result = trainer.evaluate(data, group_by="lang")
    assert set(result["groups"]) == {"en", "fr"} and result["groups"]["en"]["n"] == len(toy_eval["text"]) // 2
    with pytest.raises(ValueError, match="nope"):
        trainer.evaluate(data, group_by="nope")


@pytest.mark.parametrize("bad, match", [
    ({"text": [], "label": []}, "empty"),
    ({"text": ["a good film", "bad"], "label": ["positive", "positive"]}, "class"),
    ({"text": ["a good film", ""], "label": ["positive", "negative"]}, "row 1"),
    ({"text": ["a good film", "bad one"], "label": ["positive", None]}, "row 1"),
    ({"txt": ["a"], "label": [1]}, "text"),
])
def test_bad_input_fails_before_training(tiny_body_path, bad, match):
    model = SetFitModel.from_pretrained(tiny_body_path)
    with pytest.raises((ValueError, TypeError), match=match):
        Trainer(model=model, args=TrainingArguments(**FAST), train_dataset=bad).train()


def test_unknown_label_at_evaluate_and_unfitted_predict(tiny_body_path, trained):
    model = SetFitModel.from_pretrained(tiny_body_path)
    with pytest.raises(ValueError, match="no fitted head"):
        model.predict(["a film"])
    _, trainer = trained
    with pytest.raises(ValueError, match="neutral"):
        trainer.evaluate({"text": ["ok film"], "label": ["neutral"]})


@pytest.mark.parametrize("loss", ["ContrastiveLoss", "CoSENTLoss", "BatchHardTripletLoss"])
def test_other_losses(tiny_body_path, toy_data, loss, trained):
    import torch

    before = SetFitModel.from_pretrained(tiny_body_path).model_body.state_dict()
    model, _ = train(tiny_body_path, toy_data, loss=loss, seed=7)  # as `trained` (the default loss) but this loss
    after = model.model_body.state_dict()
    assert all(torch.isfinite(value).all() for value in after.values() if value.is_floating_point())
    unchanged = {name for name in before if torch.equal(before[name], after[name])}
    assert unchanged <= {name for name in before if ".pooler." in name}  # mean pooling never uses BERT's pooler
    default_loss = trained[0].model_body.state_dict()
    assert not all(torch.equal(default_loss[name], after[name]) for name in after)  # the loss was used
    assert model.predict(["great wonderful superb film"]) == ["positive"]


def test_model_init_and_unknown_args(tiny_body_path, toy_data):
    trainer = Trainer(model_init=lambda: SetFitModel.from_pretrained(tiny_body_path),
                      args=TrainingArguments(**FAST), train_dataset=toy_data)
    trainer.train()
    assert trainer.model.predict(["great wonderful superb film"]) == ["positive"]
    with pytest.raises(TypeError, match="bogus"):
        SetFitModel.from_pretrained(tiny_body_path, bogus=1)
    # a name not computed here goes to evaluate.load (as in setfit), tried when the trainer is built: offline, it
    # finds no such metric
    with pytest.raises(ValueError, match="unknown metric 'nonsense'.*FileNotFoundError"):
        Trainer(model=trainer.model, metric="nonsense", eval_dataset=toy_data)
    with pytest.raises(TypeError, match="metric must be a name or a callable"):
        Trainer(model=trainer.model, metric=3)


@pytest.mark.parametrize("bad, error", [(None, TypeError), ("  ", ValueError)])
def test_bad_text_past_the_first_chunk_is_named_by_its_row(trained, monkeypatch, bad, error):
    import setfit_lite.runtime.predictor as inference

    monkeypatch.setattr(inference, "STREAM_CHUNK", 3)
    texts = ["good film", "bad film", "fine", "awful", "nice", bad, "dull"]
    with pytest.raises(error, match=r"^row 5: text"):
        trained[0].predict(iter(texts))


def _never(*args, **kwargs):
    raise AssertionError("the body started training before the check")


def test_metric_and_metric_kwargs_are_checked_when_the_trainer_is_built(tiny_body_path, toy_data, toy_eval):
    """A metric evaluate cannot load and metric_kwargs the metric does not take fail when the trainer is built, not
    at the first evaluation (after training, or mid-training with an eval_strategy)."""
    model = SetFitModel.from_pretrained(tiny_body_path)
    build = {"model": model, "args": TrainingArguments(**FAST, eval_strategy="epoch"), "train_dataset": toy_data,
             "eval_dataset": toy_eval}
    with pytest.raises(ValueError, match="unknown metric 'f1_score'"):
        Trainer(**build, metric="f1_score")
    with pytest.raises(ValueError, match="metric_kwargs 'averge' not taken by metric 'f1'"):
        Trainer(**build, metric="f1", metric_kwargs={"averge": "macro"})
    with pytest.raises(TypeError, match="metric_kwargs must be a dict"):
        Trainer(**build, metric="f1", metric_kwargs="macro")
    assert model.model_head is None


@pytest.mark.parametrize("head_params, name", [({"C": -1}, "C"), ({"solver": "bogus"}, "solver"),
                                               ({"class_weight": "bogus"}, "class_weight")])
def test_head_params_scikit_learn_refuses_fail_before_the_body_trains(tiny_body_path, toy_data, monkeypatch,
                                                                     head_params, name):
    monkeypatch.setattr(Trainer, "train_embeddings", _never)
    model = SetFitModel.from_pretrained(tiny_body_path, head_params=head_params)
    trainer = Trainer(model=model, args=TrainingArguments(**FAST), train_dataset=toy_data)
    with pytest.raises(ValueError, match=f"head_params .*scikit-learn refuses: The '{name}' parameter"):
        trainer.train()
    assert model.labels is None and model.model_head is None


_LONG_PROMPT = "one two three four five six seven eight nine ten: "


@pytest.mark.parametrize("settings, error, match", [
    ({"backend_options": {"bogus": 1}}, TypeError, "no option"),
    pytest.param({"backend": "cuda"}, RuntimeError, "needs a CUDA GPU",
                 marks=pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA GPU is here")),
    ({"prompt": _LONG_PROMPT}, ValueError, "room"),  # a chunking model's windows: checked once the prompt is set
])
def test_a_train_that_fails_its_checks_leaves_the_model_as_it_was(tiny_body_path, toy_data, monkeypatch, settings,
                                                                  error, match):
    """Every check of train(), the backend's device included, comes before the model changes (or the change is
    undone): labels, prompt and the body's max length were set before the backend was built."""
    monkeypatch.setattr(Trainer, "train_embeddings", _never)
    model = SetFitModel.from_pretrained(tiny_body_path, long_text="chunk")
    before = (model.labels, model.prompt, model.model_body.max_seq_length)
    args = TrainingArguments(**{**FAST, "max_length": 8, "prompt": "query: ", **settings})
    with pytest.raises(error, match=match):
        Trainer(model=model, args=args, train_dataset=toy_data).train()
    assert (model.labels, model.prompt, model.model_body.max_seq_length) == before
