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


@pytest.mark.parametrize("target", ["dangling", "existing"])
def test_create_model_card_never_writes_through_a_symlinked_readme(target: str, tiny_body_path: str,
                                                                   tmp_path: Path) -> None:
    """A README.md that is a symbolic link (dangling, or to a file elsewhere) is refused, naming it: nothing is
    written where it points, and no temp file is left; without it the card is written whole."""
    model = SetFitModel.from_pretrained(tiny_body_path)
    outside = tmp_path / "outside.md"
    if target == "existing":
        outside.write_text("the user's notes\n")
    folder = tmp_path / "card"
    folder.mkdir()
    (folder / "README.md").symlink_to(outside)
    with pytest.raises(FileExistsError, match=r"README\.md' is a symbolic link"):
        model.create_model_card(folder)
    assert (outside.read_text() == "the user's notes\n") if target == "existing" else not outside.exists()
    assert sorted(p.name for p in folder.iterdir()) == ["README.md"] and (folder / "README.md").is_symlink()
    (folder / "README.md").unlink()
    model.create_model_card(folder)
    assert _front_matter((folder / "README.md").read_text(encoding="utf-8"))["library_name"] == "setfit_lite"
    assert sorted(p.name for p in folder.iterdir()) == ["README.md"]


@pytest.mark.parametrize("change", [{"language": 3}, {"tags": "absa"}, {"license": ["mit"]}])
def test_model_card_data_refuses_wrong_types(change: dict) -> None:
    from setfit_lite import SetFitModelCardData

    with pytest.raises(TypeError, match=f"SetFitModelCardData.{next(iter(change))} must be"):
        SetFitModelCardData(**change)


def test_from_pretrained_refuses_a_model_card_data_of_another_type(tiny_body_path: str) -> None:
    with pytest.raises(TypeError, match="model_card_data must be a SetFitModelCardData"):
        SetFitModel.from_pretrained(tiny_body_path, model_card_data={"language": "en"})


def test_an_edited_or_deleted_card_leaves_the_model_loadable(tiny_body_path: str, tmp_path: Path) -> None:
    """The card is documentation: editing or deleting it leaves the model loadable. An edited card is the user's:
    a save does not replace it (FileExistsError naming it, nothing written); a deleted one is written again, and an
    unedited one replaced."""
    model = SetFitModel.from_pretrained(tiny_body_path, labels=["negative", "positive"])
    folder = tmp_path / "model"
    model.save_pretrained(folder)
    model.save_pretrained(folder)  # unedited: replaced
    card = folder / "README.md"
    card.write_text(card.read_text(encoding="utf-8") + "\nIntended use: internal triage only.\n", encoding="utf-8")
    assert SetFitModel.from_pretrained(folder).labels == ["negative", "positive"]
    edited = card.read_bytes()
    with pytest.raises(FileExistsError, match="README.md, which changed since setfit_lite wrote"):
        model.save_pretrained(folder)
    assert card.read_bytes() == edited
    card.unlink()
    assert SetFitModel.from_pretrained(folder).labels == ["negative", "positive"]
    model.save_pretrained(folder)
    assert "# setfit_lite model" in card.read_text(encoding="utf-8")


def _evaluated(tiny_body_path: str, **card: object) -> SetFitModel:
    from setfit_lite import SetFitModelCardData

    model = SetFitModel.from_pretrained(tiny_body_path, labels=["negative", "positive"],
                                        model_card_data=SetFitModelCardData(**card) if card else None)
    model.training_info = {"eval_results": {"test": {"accuracy": 0.75}}}
    return model


@pytest.mark.parametrize(("card", "dataset"), [
    ({"dataset_id": "org/reviews", "dataset_name": "My Reviews", "dataset_revision": "v2"},
     {"type": "org/reviews", "name": "My Reviews", "revision": "v2"}),
    ({"dataset_id": "org/reviews"}, {"type": "org/reviews", "name": "org/reviews"}),
    ({"dataset_name": "My Reviews"}, {"type": "unknown", "name": "My Reviews"}),
    ({}, {"type": "unknown", "name": "Unknown"}),
], ids=["all", "id-only", "name-only", "none"])
def test_model_index_names_the_users_dataset(card: dict, dataset: dict, tiny_body_path: str) -> None:
    """The evaluation results name the dataset as setfit's card does: the Hub id as its type, the readable name (else
    the id) as its name, and the revision."""
    from setfit_lite.model_card import render_model_card

    data = _front_matter(render_model_card(_evaluated(tiny_body_path, **card)))
    (result,) = data["model-index"][0]["results"]
    assert result["dataset"] == {**dataset, "split": "test"}


@pytest.mark.parametrize(("calibration", "line"), [
    ({"temperature": 1.23456, "method": "5-fold cross-validation on the training embeddings"},
     "- Calibration: temperature 1.2346, fitted by 5-fold cross-validation on the training embeddings"),
    ({"temperature": None, "method": "a class has a single training example (no fold can hold it out)"},
     "- Calibration: none (a class has a single training example (no fold can hold it out))"),
    ({"temperature": None, "method": "calibration='none'"}, "- Calibration: none (calibration='none')"),
], ids=["fitted", "not-fitted", "not-asked"])
def test_the_card_states_the_calibration(calibration: dict, line: str, tiny_body_path: str) -> None:
    """The temperature training fitted, and how; or that none was, and why (``training_info["calibration"]``)."""
    from setfit_lite.model_card import render_model_card

    model = _evaluated(tiny_body_path)
    assert "Calibration" not in render_model_card(model)  # not trained: nothing to state
    model.training_info["calibration"] = calibration
    assert [x for x in render_model_card(model).splitlines() if "Calibration" in x] == [line]


def test_a_trained_models_card_states_its_calibration(saved: tuple[Path, dict]) -> None:
    folder, _ = saved
    assert "- Calibration: none (calibration='none')" in (folder / "README.md").read_text(encoding="utf-8")


def test_model_card_data_is_saved_and_restored(tiny_body_path: str, tmp_path: Path) -> None:
    """`model_card_data` is saved (JSON, in the config) and restored when from_pretrained gets none: the model saved
    again writes the same card. One given at loading replaces it."""
    import json

    from setfit_lite import SetFitModelCardData

    data = SetFitModelCardData(language=["en", "de"], license="mit", dataset_id="org/reviews",
                               dataset_name="My Reviews", model_name="Reviews")
    model = _evaluated(tiny_body_path)
    model.model_card_data = data
    model.save_pretrained(tmp_path / "a")
    config = json.loads((tmp_path / "a" / "config_setfit_lite.json").read_text())
    assert config["model_card_data"] == {"language": ["en", "de"], "license": "mit", "dataset_id": "org/reviews",
                                         "dataset_name": "My Reviews", "model_name": "Reviews"}
    loaded = SetFitModel.from_pretrained(tmp_path / "a")
    assert loaded.model_card_data == data
    loaded.save_pretrained(tmp_path / "b")
    assert (tmp_path / "b" / "README.md").read_text() == (tmp_path / "a" / "README.md").read_text()
    meta = _front_matter((tmp_path / "b" / "README.md").read_text())
    assert meta["language"] == ["en", "de"] and meta["datasets"] == ["org/reviews"]
    other = SetFitModelCardData(language="fr")
    assert SetFitModel.from_pretrained(tmp_path / "a", model_card_data=other).model_card_data is other
    _evaluated(tiny_body_path).save_pretrained(tmp_path / "c")
    assert json.loads((tmp_path / "c" / "config_setfit_lite.json").read_text())["model_card_data"] is None
    assert SetFitModel.from_pretrained(tmp_path / "c").model_card_data is None


def test_saved_model_card_data_is_checked(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """What a saved config records is checked as the class checks its arguments, naming the file; a field this
    version does not know (a newer one's) is left out, with a warning."""
    from setfit_lite import SetFitModelCardData
    from setfit_lite.model_card import card_data_from_config
    from setfit_lite.serialization import ModelFormatError

    file = tmp_path / "config_setfit_lite.json"
    for bad in (["en"], {"language": 3}, {"tags": "absa"}):
        with pytest.raises(ModelFormatError, match="config_setfit_lite.json: model_card_data"):
            card_data_from_config(bad, file)
    assert card_data_from_config(None, file) is None
    with caplog.at_level("WARNING"):
        assert card_data_from_config({"license": "mit", "carbon": 1}, file) == SetFitModelCardData(license="mit")
    assert "carbon" in caplog.text
