"""The exported tiers at their edges: a re-export killed after its commit point is finished by the next load, a
chunking model's head graph is checked against its labels, `use_labels=False` gives class ids on every tier, the
exported tiers predict the torch tier's types with `as_numpy`, the static `encode` refuses a bare string, and the
exports refuse bad input before their long work (an opset the installed torch does not export, texts or labels that
are a table or a set) and read texts and labels from any iterable."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import numpy as np
import pandas as pd
import pytest
from conftest import make_sentences

from setfit_lite import SetFitModel
from setfit_lite.modeling import load_model_folder
from setfit_lite.serialization import update as update_module
from setfit_lite.serialization import write_manifest

TEXTS, LABELS = make_sentences(12, seed=0)


def fitted(body_path: str, labels: list[str], **options: object) -> SetFitModel:
    """A tiny model with a logistic-regression head fitted on the toy sentences (labels cycled over ``labels``
    beyond the toy's two)."""
    model = SetFitModel.from_pretrained(body_path, labels=labels, **options)
    y = [labels[i % len(labels)] for i in range(len(TEXTS))] if len(labels) > 2 else LABELS
    head = model.new_head(len(labels), multi_label=False)
    head.fit(model.encode(TEXTS), model.label_ids(y))
    model.model_head = head
    return model


@pytest.mark.parametrize("tier", ["static", "onnx"])
def test_a_re_export_killed_after_its_commit_is_finished_by_the_next_load(tier_models: dict, tmp_path: Path,
                                                                          tier: str,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    model = tier_models["torch"]
    folder, original = tmp_path / tier, model.prompt

    def export(target: Path, prompt: str | None) -> None:
        model.prompt = prompt  # the second export differs from the first (its config holds the prompt)
        if tier == "static":
            model.export_static(target, TEXTS, LABELS, pca_dims=16, dtype="float32", refine_epochs=0)
        else:
            model.export_onnx(target)

    try:
        export(folder, original)
        monkeypatch.setattr(update_module, "_apply_journal", lambda root, journal: None)
        export(folder, "query: ")
        monkeypatch.undo()
    finally:
        model.prompt = original
    assert (folder / update_module.SAVE_JOURNAL_NAME).is_file()  # the commit point was passed
    loaded = getattr(SetFitModel, f"from_{tier}")(folder)
    assert loaded.prompt == "query: "  # the new export, whole
    assert not (folder / update_module.SAVE_JOURNAL_NAME).exists()


def test_a_folder_re_exported_as_another_tier_loads_as_the_new_one(tier_models: dict, tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """ONNX re-exported as static, killed after the commit: the folder still holds the ONNX config until the
    journal is applied, so the tier is read after recovery."""
    folder = tmp_path / "m"
    tier_models["torch"].export_onnx(folder)
    monkeypatch.setattr(update_module, "_apply_journal", lambda root, journal: None)
    tier_models["torch"].export_static(folder, TEXTS, LABELS, pca_dims=16, dtype="float32", refine_epochs=0)
    monkeypatch.undo()
    loaded = load_model_folder(folder)
    assert type(loaded).__name__ == "StaticSetFitModel"
    assert loaded.predict(TEXTS[:4]) == tier_models["static"].predict(TEXTS[:4])


def test_a_chunking_models_head_graph_of_another_model_is_refused(tiny_body_path: str, tmp_path: Path) -> None:
    options = {"long_text": "chunk", "max_length": 16}
    two = fitted(tiny_body_path, ["negative", "positive"], **options).export_onnx(tmp_path / "two")
    three = fitted(tiny_body_path, ["a", "b", "c"], **options).export_onnx(tmp_path / "three")
    assert len(SetFitModel.from_onnx(two).predict_proba(TEXTS[:2], as_numpy=True)[0]) == 2
    (two / "head.onnx").write_bytes((three / "head.onnx").read_bytes())
    (two / "manifest.json").unlink()
    write_manifest(two)  # the hashes agree: only the graph says it is another model's head
    with pytest.raises(ValueError, match=r"labels.*head\.onnx's output 'probabilities'"):
        SetFitModel.from_onnx(two)


@pytest.mark.parametrize("tier", ["torch", "onnx", "static"])
def test_use_labels_false_gives_class_ids_on_every_tier(tier_models: dict, tier: str) -> None:
    texts = ["a good film", "an awful plot", "good", "bad"]
    model = tier_models[tier]
    names = model.predict(texts)
    ids = model.predict(texts, use_labels=False, as_numpy=True)
    assert np.asarray(ids).tolist() == [model.labels.index(name) for name in names]
    if tier != "torch":  # the exported tiers answer in lists unless as_numpy, as for their labels
        assert model.predict(texts, use_labels=False) == np.asarray(ids).tolist()
        assert model.predict(texts[0], use_labels=False) == ids[0]


def result_type(result: object) -> tuple:
    """A prediction's type, with its items' types (a list) or dtype and shape (an array)."""
    if isinstance(result, np.ndarray):
        return np.ndarray, result.dtype, result.shape
    if isinstance(result, list):
        return list, [type(item) for item in result]
    return (type(result),)


@pytest.mark.parametrize("tier", ["onnx", "static"])
@pytest.mark.parametrize("labels", ["names", "values"])
def test_the_exported_tiers_predict_the_torch_tiers_types_with_as_numpy(tier_models: dict, tiny_body_path: str,
                                                                        tmp_path: Path, tier: str,
                                                                        labels: str) -> None:
    """With ``as_numpy`` every tier returns the same types: label names as a list (setfit's), label values and
    class ids as numpy (an array, or a numpy scalar for one text); ``as_numpy`` changes the container only."""
    if labels == "names":
        torch_model, model = tier_models["torch"], tier_models[tier]
    else:
        torch_model = fitted(tiny_body_path, [7, 3, 5])
        y = [torch_model.labels[i % 3] for i in range(len(TEXTS))]
        if tier == "onnx":
            model = SetFitModel.from_onnx(torch_model.export_onnx(tmp_path / tier))
        else:
            model = SetFitModel.from_static(torch_model.export_static(tmp_path / tier, TEXTS, y, pca_dims=8,
                                                                      dtype="float32", refine_epochs=0))
    texts = ["a good film", "an awful plot", "good"]
    for inputs in (texts, texts[0]):
        for use_labels in (True, False):
            want = torch_model.predict(inputs, as_numpy=True, use_labels=use_labels)
            got = model.predict(inputs, as_numpy=True, use_labels=use_labels)
            assert result_type(got) == result_type(want), (inputs, use_labels)
            values = np.asarray(got).tolist()
            assert values == np.asarray(model.predict(inputs, use_labels=use_labels)).tolist()
            if tier == "onnx":  # the same graph: the same predictions (the static tier's body is another)
                assert values == np.asarray(want).tolist()


@pytest.mark.parametrize("texts", ["a good film", ("t" for t in ["a"]), ["good", 3]])
def test_static_encode_refuses_what_is_not_a_list_of_texts(tier_models: dict, texts: object) -> None:
    static = tier_models["static"]
    if isinstance(texts, str):
        with pytest.raises(TypeError, match="single string"):
            static.encode(texts)
    elif isinstance(texts, list):
        with pytest.raises(TypeError, match="row 1: text must be a str"):
            static.encode(texts)
    else:  # a generator is a collection of texts
        assert static.encode(texts).shape == (1, static.encode(["a"]).shape[1])
    assert not static.encode([""]).any()  # a blank text still gives zeros, as documented


@pytest.mark.parametrize(("case", "error", "words"), [
    ("a label the model never saw", ValueError, "neutral"),
    ("bad head_params", TypeError, "bogus"),
    ("labels of one class", ValueError, "one class"),
    ("a file of the user's", FileExistsError, "config.json"),
    ("texts as a DataFrame", TypeError, r"^texts: got a pandas DataFrame, .*df\['text'\]\.tolist\(\)"),
    ("texts as a Dataset", TypeError, r"^texts: got a datasets\.Dataset, .*ds\['text'\]"),
    ("unlabeled texts as a set", TypeError, r"^unlabeled_texts: got a set, which has no order"),
    ("unlabeled texts with None", TypeError, r"^unlabeled_texts: row 1: text must be a str"),
    ("labels as a DataFrame", TypeError, r"^labels: got a pandas DataFrame, .*df\['label'\]\.tolist\(\)"),
    ("labels as a str", TypeError, r"^labels must be a list of the texts' labels .*got str"),
])
def test_export_static_refuses_bad_input_before_the_distillation(tier_models: dict, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch, case: str,
                                                                  error: type, words: str) -> None:
    from setfit_lite.exporting import static as static_export

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the distillation ran before the check")

    monkeypatch.setattr(static_export, "_token_embeddings", never)
    folder = tmp_path / "out"
    texts, labels, unlabeled, head_params = list(TEXTS), list(LABELS), [], None
    if case == "a label the model never saw":
        labels[3] = "neutral"
    elif case == "bad head_params":
        head_params = {"bogus": 1}
    elif case == "labels of one class":
        labels = ["positive"] * len(TEXTS)
    elif case == "texts as a DataFrame":
        texts = pd.DataFrame({"text": TEXTS, "label": LABELS})
    elif case == "texts as a Dataset":
        texts = datasets.Dataset.from_dict({"text": TEXTS})
    elif case == "unlabeled texts as a set":
        unlabeled = {"a good film", "a bad plot"}
    elif case == "unlabeled texts with None":
        unlabeled = ["a good film", None]
    elif case == "labels as a DataFrame":
        labels = pd.DataFrame({"label": LABELS})
    elif case == "labels as a str":
        labels = "positive"
    else:
        folder.mkdir()
        (folder / "config.json").write_text(json.dumps({"mine": True}))
    with pytest.raises(error, match=words):
        tier_models["torch"].export_static(folder, texts, labels, unlabeled_texts=unlabeled, pca_dims=16,
                                           head_params=head_params)
    if case == "a file of the user's":
        assert json.loads((folder / "config.json").read_text()) == {"mine": True}
        assert sorted(p.name for p in folder.iterdir()) == ["config.json"]
    else:
        assert not folder.exists()


@pytest.mark.parametrize(("case", "error", "words"), [
    ("a file of the user's", FileExistsError, "tokenizer.json"),
    ("calibration texts without int8-static", ValueError, "only by quantize='int8-static'"),
    ("a blank calibration text", ValueError, "row 1: text is empty"),
    ("an opset torch does not export", ValueError, r"opset=99 is not an ONNX opset this torch .* from 7 to \d+"),
])
def test_export_onnx_refuses_bad_input_before_the_trace(tier_models: dict, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch, case: str, error: type,
                                                        words: str) -> None:
    from setfit_lite.exporting import onnx as onnx_export

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("the trace ran before the check")

    monkeypatch.setattr(onnx_export, "_build_graph", never)
    folder = tmp_path / "out"
    options: dict = {}
    if case == "a file of the user's":
        folder.mkdir()
        (folder / "tokenizer.json").write_text("mine")
    elif case == "calibration texts without int8-static":
        options = {"quantize": "int8", "calibration_texts": TEXTS}
    elif case == "an opset torch does not export":
        options = {"opset": 99}
    else:
        options = {"quantize": "int8-static", "calibration_texts": ["good", " "]}
    with pytest.raises(error, match=words):
        tier_models["torch"].export_onnx(folder, **options)
    if case == "a file of the user's":
        assert (folder / "tokenizer.json").read_text() == "mine"
    else:
        assert not folder.exists()


def test_export_onnx_takes_every_opset_torch_exports(tier_models: dict, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from torch.onnx import _constants

    from setfit_lite.exporting import onnx as onnx_export

    def traced(*args: object, **kwargs: object) -> None:
        raise AssertionError("traced")

    monkeypatch.setattr(onnx_export, "_build_graph", traced)
    highest = _constants.ONNX_TORCHSCRIPT_EXPORTER_MAX_OPSET
    for opset in (7, 17, highest):  # the check passes them on to the trace
        with pytest.raises(AssertionError, match="traced"):
            tier_models["torch"].export_onnx(tmp_path / "out", opset=opset)
    with pytest.raises(ValueError, match=rf"opset={highest + 1} .* from 7 to {highest}"):
        tier_models["torch"].export_onnx(tmp_path / "out", opset=highest + 1)


def test_export_static_reads_texts_and_labels_from_iterators(tier_models: dict, tmp_path: Path) -> None:
    model = tier_models["torch"]
    options = {"pca_dims": 16, "dtype": "float32", "refine_epochs": 0}
    unlabeled = ["a good film", "a dull plot"]
    model.export_static(tmp_path / "lists", TEXTS, LABELS, unlabeled_texts=unlabeled, **options)
    model.export_static(tmp_path / "iterators", iter(TEXTS), (label for label in LABELS),
                        unlabeled_texts=(text for text in unlabeled), **options)
    configs = [json.loads((tmp_path / name / "config_setfit_lite_static.json").read_text())
               for name in ("lists", "iterators")]
    assert configs[1]["refit_texts"] == len(TEXTS) and configs[1]["refit_unlabeled_texts"] == len(unlabeled)
    assert configs[1]["refit_labels"] == "given" and configs[0] == configs[1]
    lists, iterators = (SetFitModel.from_static(tmp_path / name) for name in ("lists", "iterators"))
    np.testing.assert_array_equal(iterators.predict_proba(TEXTS), lists.predict_proba(TEXTS))
