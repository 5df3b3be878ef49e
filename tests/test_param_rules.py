"""One rule per numeric parameter (``setfit_lite.config.params``), applied alike by the API (every prediction tier, the
search) and the CLI (an argparse error, exit status 2, before any data or model is loaded); ``report_to`` and
``labels`` checked when the arguments or the model are made."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import make_sentences

from setfit_lite import SetFitModel, Trainer, TrainingArguments
from setfit_lite.cli import main
from setfit_lite.config.rules import Rule, integer, number

TEXTS = ["good movie", "awful film", "the plot was nice"]
SENTENCES = make_sentences(8, seed=0)
# (bad batch size, error type): the same for every entry point
BAD_BATCH_SIZES = [(0, ValueError), (-1, ValueError), (1.5, TypeError), ("8", TypeError), (True, TypeError)]


@pytest.fixture(scope="module")
def fitted(tiny_body_path: str) -> SetFitModel:
    """The tiny body with a logistic-regression head fitted on its embeddings (no body training)."""
    model = SetFitModel.from_pretrained(tiny_body_path, labels=["positive", "negative"])
    model.model_head = model.new_head(2, multi_label=False).fit(model.encode(SENTENCES[0]),
                                                                model.label_ids(SENTENCES[1]))
    return model


@pytest.fixture(scope="module")
def onnx_path(fitted: SetFitModel, tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("onnxruntime")
    return fitted.export_onnx(tmp_path_factory.mktemp("onnx") / "onnx")


@pytest.fixture(scope="module")
def models(fitted: SetFitModel, onnx_path: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The same classifier as a torch, an ONNX and a static model."""
    static_path = fitted.export_static(tmp_path_factory.mktemp("static") / "static", *SENTENCES, pca_dims=8,
                                       dtype="float32", refine_epochs=0)
    return {"torch": fitted, "onnx": SetFitModel.from_onnx(onnx_path), "static": SetFitModel.from_static(static_path)}


CALLS = {
    "predict": lambda model, b: model.predict(TEXTS, batch_size=b),
    "predict_proba": lambda model, b: model.predict_proba(TEXTS, batch_size=b),
    "call": lambda model, b: model(TEXTS, batch_size=b),
    "predict_iter": lambda model, b: list(model.predict_iter(TEXTS, batch_size=b)),
    "iter_proba": lambda model, b: list(model.iter_proba(TEXTS, batch_size=b)),
    "encode": lambda model, b: model.encode(TEXTS, batch_size=b),
}
NOT_PROVIDED = {("onnx", "encode")}  # the ONNX graph ends in probabilities (a chunking model's embedding aside)


@pytest.mark.parametrize("tier", ["torch", "onnx", "static"])
@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize(("value", "error"), BAD_BATCH_SIZES)
def test_prediction_batch_size(models: dict, tier: str, call: str, value: object, error: type) -> None:
    model = models[tier]
    if (tier, call) in NOT_PROVIDED:  # a tier without the call must not grow one silently unchecked
        assert not hasattr(model, call), f"{tier} models now have {call}: remove it from NOT_PROVIDED"
        return
    with pytest.raises(error, match=rf"batch_size must be a positive integer, got {value!r}"):
        CALLS[call](model, value)


@pytest.mark.parametrize("tier", ["torch", "onnx", "static"])
def test_valid_batch_sizes_still_predict(models: dict, tier: str) -> None:
    model = models[tier]
    expected = model.predict_proba(TEXTS, as_numpy=True) if tier == "torch" else model.predict_proba(TEXTS)
    for batch_size in (1, 2, 1000, None):  # None: the tier's default_batch_size
        got = model.predict_proba(TEXTS, batch_size=batch_size)
        got = got.numpy() if hasattr(got, "numpy") else got
        assert got.shape == expected.shape and abs(got - expected).max() < 1e-5


@pytest.mark.parametrize(("value", "error"), [(0, ValueError), (-2, ValueError), (1.5, TypeError), ("4", TypeError)])
def test_onnx_num_threads(onnx_path: Path, value: object, error: type) -> None:
    with pytest.raises(error, match=rf"num_threads must be None .* or a positive integer, got {value!r}"):
        SetFitModel.from_onnx(onnx_path, num_threads=value)


@pytest.mark.parametrize(("kwargs", "error", "name"), [
    ({"n_trials": 0}, ValueError, "n_trials"),
    ({"n_trials": -1}, ValueError, "n_trials"),
    ({"n_trials": 2.5}, TypeError, "n_trials"),
    ({"n_trials": "3"}, TypeError, "n_trials"),
    ({"timeout": 0}, ValueError, "timeout"),
    ({"timeout": -5}, ValueError, "timeout"),
    ({"timeout": float("nan")}, ValueError, "timeout"),
    ({"timeout": "60"}, TypeError, "timeout"),
    ({"n_jobs": 2}, ValueError, "n_jobs"),
    ({"n_jobs": -1}, ValueError, "n_jobs"),
    ({"n_jobs": 0}, ValueError, "n_jobs"),
    ({"max_trials": 0}, ValueError, "max_trials"),
    ({"max_trials": 1.0}, TypeError, "max_trials"),
    ({"heartbeat_interval": 0}, ValueError, "heartbeat_interval"),
    ({"max_retry": -1}, ValueError, "max_retry"),
])
def test_search_arguments(kwargs: dict, error: type, name: str) -> None:
    """Refused before any model is built or any study is created."""
    built = []
    trainer = SimpleNamespace(model_init=lambda: built.append(1), eval_dataset=[1], args=None, model=None)
    with pytest.raises(error, match=rf"{name} must be .*, got {list(kwargs.values())[0]!r}"):
        Trainer.hyperparameter_search(trainer, **kwargs)
    assert not built


def test_search_on_a_real_trainer_refuses_zero_trials(tiny_body_path: str, toy_data: dict) -> None:
    loads = []

    def model_init() -> SetFitModel:
        loads.append(1)
        return SetFitModel.from_pretrained(tiny_body_path)

    trainer = Trainer(model_init=model_init, train_dataset=toy_data, eval_dataset=toy_data)
    loads.clear()
    with pytest.raises(ValueError, match="n_trials must be .*, got 0"):
        trainer.hyperparameter_search(n_trials=0)
    assert not loads


# ------------------------------------------------------------------------------------------------------------ CLI

CLI_CASES = [
    (["predict", "no/model", "no.txt", "--batch-size", "0"], "--batch-size", "positive integer"),
    (["predict", "no/model", "no.txt", "--batch-size", "-1"], "--batch-size", "positive integer"),
    (["predict", "no/model", "no.txt", "--batch-size", "abc"], "--batch-size", "positive integer"),
    (["train", "no.jsonl", "--model", "no/model", "--batch-size", "0"], "--batch-size", "positive integer"),
    (["train", "no.jsonl", "--model", "no/model", "--num-epochs", "0"], "--num-epochs", "positive integer"),
    (["train", "no.jsonl", "--model", "no/model", "--max-steps", "0"], "--max-steps", "-1"),
    (["train", "no.jsonl", "--model", "no/model", "--max-length", "1"], "--max-length", "integer >= 2"),
    (["train", "no.jsonl", "--model", "no/model", "--seed", "-1"], "--seed", "[0, 4294967295]"),
    (["train", "no.jsonl", "--model", "no/model", "--shots", "0"], "--shots", "positive integer"),
    (["train", "no.jsonl", "--model", "no/model", "--save-steps", "0"], "--save-steps", "positive integer"),
    (["search", "no.jsonl", "--model", "no/model", "--n-trials", "0"], "--n-trials", "positive integer"),
    (["search", "no.jsonl", "--model", "no/model", "--n-trials", "1.5"], "--n-trials", "positive integer"),
    (["search", "no.jsonl", "--model", "no/model", "--max-trials", "0"], "--max-trials", "positive integer"),
    (["search", "no.jsonl", "--model", "no/model", "--heartbeat-interval", "0"], "--heartbeat-interval",
     "positive integer"),
    (["search", "no.jsonl", "--model", "no/model", "--grace-period", "-3"], "--grace-period", "positive integer"),
    (["search", "no.jsonl", "--model", "no/model", "--max-retry", "-1"], "--max-retry", "integer >= 0"),
    (["export", "no/model", "out", "--opset", "0"], "--opset", "integer >= 7"),
    (["export", "no/model", "out", "--static", "--pca-dims", "0"], "--pca-dims", "positive integer"),
    (["demo", "--shots", "0"], "--shots", "positive integer"),
    (["demo", "--seed", "-5"], "--seed", "[0, 4294967295]"),
    (["train", "no.jsonl", "--model", "no/model", "--seed", str(2**40)], "--seed", "[0, 4294967295]"),
    (["demo", "--seed", str(2**32)], "--seed", "[0, 4294967295]"),
]


@pytest.mark.parametrize(("argv", "option", "allowed"), CLI_CASES)
def test_cli_numbers_are_argparse_errors(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture,
                                         argv: list[str], option: str, allowed: str) -> None:
    """Exit status 2 with the rule's message, before any data or model is read."""
    import setfit_lite.data as data
    from setfit_lite.cli.commands import evaluate, predict

    def loaded(*args: object, **kwargs: object) -> None:
        raise AssertionError("data or a model was loaded")

    monkeypatch.setattr(SetFitModel, "from_pretrained", loaded)
    monkeypatch.setattr(evaluate, "load_model", loaded)
    monkeypatch.setattr(predict, "load_model", loaded)
    monkeypatch.setattr(data, "to_labeled_data", loaded)
    monkeypatch.setattr(data, "demo_dataset", loaded)
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: must be " in err and allowed in err, err


def test_cli_and_api_share_the_rule(capsys: pytest.CaptureFixture) -> None:
    """The CLI's message is the API's rule: same allowed values."""
    from setfit_lite.config.params import PARAMS, check_param

    with pytest.raises(ValueError) as api_error:
        check_param("batch_size", 0)
    with pytest.raises(SystemExit):
        main(["predict", "no/model", "--batch-size", "0"])
    allowed = str(api_error.value).split(" must be ", 1)[1].rsplit(", got", 1)[0]
    assert f"must be {allowed}, got 0" in capsys.readouterr().err
    assert set(PARAMS) >= {"batch_size", "num_threads", "n_trials", "timeout", "n_jobs", "max_trials"}


# ------------------------------------------------------------------------------------------------------- report_to


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"report_to": ["none", "tensorboard"]}, ValueError, "'none' cannot be combined with other integrations"),
    ({"report_to": ["tensorboard", "none"]}, ValueError, "'none' cannot be combined with other integrations"),
    ({"report_to": ["all", "tensorboard"]}, ValueError, "'all' cannot be combined with other integrations"),
    ({"report_to": ["tensorboard", "tensorboard"]}, ValueError, r"report_to.*duplicate.*'tensorboard'"),
    ({"report_to": ["none", "none"]}, ValueError, r"report_to.*duplicate.*'none'"),
])
def test_report_to_combinations(kwargs: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        TrainingArguments(**kwargs)
    with pytest.raises(error, match=message):
        TrainingArguments().update(kwargs)


@pytest.mark.parametrize("report_to", ["none", "tensorboard"])
def test_logging_dir_that_is_a_file(tmp_path: Path, report_to: str) -> None:
    if report_to == "tensorboard":
        pytest.importorskip("tensorboard")
    existing = tmp_path / "events"
    existing.write_text("mine")
    with pytest.raises(ValueError, match=rf"logging_dir .*{existing.name}.* not a folder"):
        TrainingArguments(report_to=report_to, logging_dir=str(existing))
    assert existing.read_text() == "mine"
    assert TrainingArguments(report_to=report_to, logging_dir=str(tmp_path / "new")).logging_dir == str(
        tmp_path / "new")


# ---------------------------------------------------------------------------------------------------------- labels


@pytest.mark.parametrize(("labels", "error", "message"), [
    ("ab", TypeError, r"labels must be a list of label names, e\.g\. \['negative', 'positive'\]"),
    (b"ab", TypeError, "labels must be a list of label names"),
    ({"a": 0, "b": 1}, TypeError, "labels must be a list of label names"),
    ({"negative", "positive"}, TypeError, r"labels is a set, whose order changes .* e\.g\. sorted"),
    (frozenset({"a", "b"}), TypeError, "labels is a frozenset, whose order changes"),
    ([], ValueError, "labels .*empty"),
    (["a", "b", "a"], ValueError, r"labels .*duplicate.*'a'"),
    ([0, 1, 1], ValueError, r"labels .*duplicate.*1"),
    (["a", None], ValueError, "labels"),
])
@pytest.mark.parametrize("entry", ["init", "from_pretrained"])
def test_labels_checked_at_once(fitted: SetFitModel, tiny_body_path: str, monkeypatch: pytest.MonkeyPatch,
                                entry: str, labels: object, error: type, message: str) -> None:
    if entry == "init":
        with pytest.raises(error, match=message):
            SetFitModel(fitted.model_body, labels=labels)
        return
    import sentence_transformers

    def loaded(*args: object, **kwargs: object) -> None:
        raise AssertionError("the body was loaded before the labels were checked")

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", loaded)
    with pytest.raises(error, match=message):
        SetFitModel.from_pretrained(tiny_body_path, labels=labels)


def test_class_names_as_a_set_are_refused_wherever_they_are_given(fitted: SetFitModel) -> None:
    """A set's order changes from one Python process to the next, and with it the class an int label (a position)
    or a probability column means: the same seed gave opposite predictions under two hash seeds."""
    from setfit_lite import suggest_labels
    from setfit_lite.data.labels import encode_labels

    with pytest.raises(TypeError, match="labels is a set"):
        fitted.labels = {"neg", "pos"}
    with pytest.raises(TypeError, match="label_names is a set"):
        suggest_labels(fitted, ["a good film", "a bad film", "fine"], 1, label_names={"neg", "pos"})
    with pytest.raises(TypeError, match="is a set"):
        encode_labels(["neg", "pos"], known_labels={"neg", "pos"})


def test_valid_labels_are_kept(fitted: SetFitModel) -> None:
    assert SetFitModel(fitted.model_body, labels=("neg", "pos")).labels == ["neg", "pos"]
    assert SetFitModel(fitted.model_body, labels=[2, 0, 1]).labels == [2, 0, 1]


def test_cli_search_with_no_completed_trial_is_a_clean_error(tmp_path: Path, tiny_body_path: str,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A search whose every trial failed or was pruned ends with exit 1 and one line saying so, no traceback."""
    import json

    data_file = tmp_path / "train.jsonl"
    data_file.write_text("".join(json.dumps({"text": t, "label": y}) + "\n"
                                 for t, y in zip(["good", "fine", "bad", "awful"], [1, 1, 0, 0])))
    from setfit_lite import cli
    from setfit_lite.errors import NoCompletedTrialError
    from setfit_lite.trainer import Trainer

    def no_trial(self: Trainer, **kwargs: object) -> None:
        raise NoCompletedTrialError("no trial of study 'x' completed (all pruned or failed)")

    monkeypatch.setattr(Trainer, "hyperparameter_search", no_trial)
    code = cli.main(["search", str(data_file), "--model", tiny_body_path, "--eval-data", str(data_file),
                     "--n-trials", "1", "--quiet"])
    assert code == 1
    err = capsys.readouterr().err
    assert "setfit-lite search: error: no trial" in err and "Traceback" not in err


# ------------------------------------------------------------------------------ what a rule says it allows


@pytest.mark.parametrize(("rule", "allowed"), [
    (integer(), "a positive integer"),
    (integer(low=0, note="0: never"), "an integer >= 0 (0: never)"),
    (integer(also=(-1,), note="no limit"), "a positive integer, or -1 (no limit)"),
    (integer(low=0, high=2**63 - 1), "an integer in [0, 2**63 - 1]"),
    (integer(high=1), "1"),
    (number(), "a finite number >= 0"),
    (number(low_open=True), "a finite number > 0"),
    (number(high=1.0, high_open=True), "a number in [0, 1)"),
])
def test_a_rule_says_what_its_bounds_allow(rule: Rule, allowed: str) -> None:
    assert rule.allowed == allowed


def test_the_allowed_text_agrees_with_the_check() -> None:
    """Each integer or number rule accepts the ends its text states and refuses what lies just outside."""
    for rule, inside, outside in [(integer(low=2), [2, 10**9], [1]), (integer(also=(-1,)), [-1, 1], [0, -2]),
                                  (number(high=1.0, high_open=True), [0, 0.999], [1.0, -0.01]),
                                  (number(low_open=True), [1e-9], [0.0])]:
        assert [rule.check(v) for v in inside] == inside, rule.allowed
        for value in outside:
            with pytest.raises(ValueError):
                rule.check(value)


def test_logging_steps_zero_is_allowed_where_its_text_says() -> None:
    assert TrainingArguments(logging_steps=0, logging_strategy="epoch").logging_steps == 0
    with pytest.raises(ValueError, match="logging_steps must be a positive integer with logging_strategy 'steps'"):
        TrainingArguments(logging_steps=0, logging_strategy="steps")


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"in_features": 0}, ValueError, "in_features must be a positive integer, got 0"),
    ({"in_features": 4, "hidden_size": 2.5}, TypeError, r"hidden_size must be None \(no hidden layer\) or a positive"),
    ({"in_features": 4, "dropout": 1.0}, ValueError, r"dropout must be a number in \[0, 1\), got 1.0"),
    ({"in_features": 4, "dropout": "0.1"}, TypeError, r"dropout must be a number in \[0, 1\), got '0.1'"),
    ({"in_features": 4, "temperature": 0}, ValueError, "temperature must be a finite number > 0, got 0"),
])
def test_heads_check_their_numbers_with_the_rules(kwargs: dict, error: type, message: str) -> None:
    from setfit_lite.heads import TorchHead

    with pytest.raises(error, match=message):
        TorchHead(num_classes=2, **kwargs)
