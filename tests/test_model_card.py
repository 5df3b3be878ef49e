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
