"""The model card (README.md) saved beside a model: YAML front matter the Hub reads (labels, evaluation results as
``model-index``), whatever the labels and paths hold, and the Markdown summary."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from huggingface_hub import ModelCard

from setfit_lite import SetFitModel, Trainer, TrainingArguments


def _front_matter(card: str) -> dict:
    assert card.startswith("---\n")
    return yaml.safe_load(card.split("---\n", 2)[1])


@pytest.fixture(scope="module")
def saved(tiny_body_path: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    from conftest import make_sentences

    texts, labels = make_sentences(8, seed=0)
    names = {"negative": "no: never", "positive": "yes"}  # YAML-special: a colon, a boolean word
    labels = [names[y] for y in labels]
    model = SetFitModel.from_pretrained(tiny_body_path)
    trainer = Trainer(model=model, args=TrainingArguments(max_steps=2, show_progress_bar=False, backend="cpu"),
                      train_dataset={"text": texts, "label": labels}, eval_dataset={"text": texts, "label": labels})
    trainer.train()
    result = trainer.evaluate()
    folder = tmp_path_factory.mktemp("card") / "model"
    model.save_pretrained(folder)
    return folder, result


def test_front_matter_parses_and_holds_labels_and_metrics(saved: tuple[Path, dict]) -> None:
    folder, result = saved
    card = (folder / "README.md").read_text(encoding="utf-8")
    data = _front_matter(card)
    assert data["library_name"] == "setfit_lite" and data["pipeline_tag"] == "text-classification"
    assert data["labels"] == ["no: never", "yes"]  # strings still: "yes" did not become True
    assert "setfit" in data["tags"] and "accuracy" in data["metrics"]
    (entry,) = data["model-index"]
    scores = {(r["dataset"]["split"], m["type"]): m["value"] for r in entry["results"] for m in r["metrics"]}
    assert scores[("test", "accuracy")] == pytest.approx(result["accuracy"])
    assert "base_model" not in data  # the body came from a local folder, not a Hub model


def test_huggingface_hub_reads_the_card(saved: tuple[Path, dict]) -> None:
    folder, result = saved
    card = ModelCard.load(folder / "README.md")
    assert card.data.library_name == "setfit_lite"
    accuracy = [r for r in card.data.eval_results if r.metric_type == "accuracy"]
    assert [r.metric_value for r in accuracy] == [pytest.approx(result["accuracy"])]
    assert "# setfit_lite model" in card.text and "Load with `SetFitModel.from_pretrained(path)`" in card.text


def test_a_hub_body_is_the_base_model(tiny_body_path: str) -> None:
    from setfit_lite.model_card import render_model_card

    model = SetFitModel.from_pretrained(tiny_body_path)
    model.source = "sentence-transformers/all-MiniLM-L6-v2"
    data = _front_matter(render_model_card(model))
    assert data["base_model"] == "sentence-transformers/all-MiniLM-L6-v2"
    assert "model-index" not in data  # nothing evaluated: no results to report


def test_numpy_labels_and_scores_are_plain_yaml(tiny_body_path: str) -> None:
    """numpy scalars (integer labels, a metric computed by numpy) are written as plain YAML values."""
    import numpy as np

    from setfit_lite.model_card import render_model_card

    model = SetFitModel.from_pretrained(tiny_body_path, labels=[np.int64(0), np.int64(1)])
    model.training_info = {"eval_results": {"test": {"accuracy": np.float64(0.75), "n": np.int64(4)}}}
    data = _front_matter(render_model_card(model))  # safe_load refuses !!python/object tags
    assert data["labels"] == [0, 1]
    scores = {m["type"]: m["value"] for r in data["model-index"][0]["results"] for m in r["metrics"]}
    assert scores == {"accuracy": 0.75, "n": 4}


def test_model_card_data_is_written_into_the_card(tiny_body_path: str, tmp_path: Path) -> None:
    """setfit's `SetFitModelCardData`: what the user states (language, license, ids, tags) reaches the card's
    metadata and text, through `from_pretrained` and `create_model_card`."""
    from setfit_lite import SetFitModelCardData

    data = SetFitModelCardData(language=["en", "de"], license="apache-2.0", tags=["absa"],
                               model_id="org/my-model", dataset_id="org/reviews", st_id="org/body")
    model = SetFitModel.from_pretrained(tiny_body_path, model_card_data=data)
    assert model.model_card_data is data
    model.create_model_card(tmp_path / "card", model_name="My model")
    card = (tmp_path / "card" / "README.md").read_text(encoding="utf-8")
    meta = _front_matter(card)
    assert meta["language"] == ["en", "de"] and meta["license"] == "apache-2.0"
    assert meta["datasets"] == ["org/reviews"] and meta["base_model"] == "org/body"
    assert meta["tags"][:3] == ["setfit", "sentence-transformers", "text-classification"] and "absa" in meta["tags"]
    assert "# My model" in card and "- Model id: org/my-model" in card and "- Language: en, de" in card
    with pytest.raises(FileExistsError, match="README.md"):  # a card already there is never written over
        model.create_model_card(tmp_path / "card")


@pytest.mark.parametrize("change", [{"language": 3}, {"tags": "absa"}, {"license": ["mit"]}])
def test_model_card_data_refuses_wrong_types(change: dict) -> None:
    from setfit_lite import SetFitModelCardData

    with pytest.raises(TypeError, match=f"SetFitModelCardData.{next(iter(change))} must be"):
        SetFitModelCardData(**change)


def test_from_pretrained_refuses_a_model_card_data_of_another_type(tiny_body_path: str) -> None:
    with pytest.raises(TypeError, match="model_card_data must be a SetFitModelCardData"):
        SetFitModel.from_pretrained(tiny_body_path, model_card_data={"language": "en"})
