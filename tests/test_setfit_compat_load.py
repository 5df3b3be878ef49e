"""Folders written by setfit 1.x (body + joblib ``model_head.pkl`` + ``config_setfit.json``) load completely and
predict as setfit does; ``save_pretrained`` then writes setfit_lite's pickle-free format.

The folders are built here in setfit's format (setfit itself is not a dependency): the body saved by
sentence-transformers, the fitted head dumped with joblib, the config as setfit writes it.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import joblib
import numpy as np
import pytest
import torch
from conftest import make_sentences
from sentence_transformers import SentenceTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OneVsRestClassifier
from sklearn.multioutput import MultiOutputClassifier

from setfit_lite import SetFitModel
from setfit_lite.heads import SklearnHead, TorchHead
from setfit_lite.serialization import find_pickle_files

TEXTS = ["great wonderful superb film", "awful dull terrible movie", "the plot was nice", "boring sad acting",
         "the movie was a really good story", "so very bad", "plot", "acting was fine but the story was weak"]


@pytest.fixture(scope="module")
def train_set() -> tuple[list[str], np.ndarray]:
    texts, labels = make_sentences(8, seed=0)
    return texts, np.array([int(y == "positive") for y in labels])


def _write_setfit_folder(folder: Path, body_path: str, head: object, config: dict | None) -> Path:
    """A folder laid out as setfit's SetFitModel.save_pretrained writes it."""
    SentenceTransformer(body_path, device="cpu").save(str(folder))
    joblib.dump(head, folder / "model_head.pkl")
    if config is not None:
        (folder / "config_setfit.json").write_text(json.dumps(config, indent=2))
    return folder


def _setfit_embeddings(body_path: str, texts: list[str], normalize: bool) -> np.ndarray:
    """The embeddings setfit's head sees: SentenceTransformer.encode with setfit's normalisation flag."""
    return SentenceTransformer(body_path, device="cpu").encode(texts, normalize_embeddings=normalize)


def _round_trip(model: SetFitModel, out: Path) -> SetFitModel:
    """save_pretrained writes no pickle and the folder loads without allow_pickle, predicting the same."""
    model.save_pretrained(out)
    assert find_pickle_files(out) == [] and not list(out.rglob("*.pkl"))
    loaded = SetFitModel.from_pretrained(out)
    np.testing.assert_array_equal(loaded.predict_proba(TEXTS), model.predict_proba(TEXTS))
    assert loaded.labels == model.labels and loaded.normalize_embeddings == model.normalize_embeddings
    assert loaded.multi_target_strategy == model.multi_target_strategy
    return loaded


@pytest.mark.parametrize("normalize", [False, True])
def test_logistic_regression_head_with_labels(tmp_path, tiny_body_path, train_set, normalize):
    texts, y = train_set
    lr = LogisticRegression().fit(_setfit_embeddings(tiny_body_path, texts, normalize), y)
    labels = ["negative", "positive"]
    folder = _write_setfit_folder(tmp_path / "setfit", tiny_body_path, lr,
                                  {"normalize_embeddings": normalize, "labels": labels})

    with pytest.raises(ValueError, match=r"model_head\.pkl.*allow_pickle=True"):
        SetFitModel.from_pretrained(folder)
    model = SetFitModel.from_pretrained(folder, allow_pickle=True)
    assert isinstance(model.model_head, SklearnHead) and model.labels == labels
    assert model.normalize_embeddings is normalize and model.multi_target_strategy is None

    emb = _setfit_embeddings(tiny_body_path, TEXTS, normalize)
    assert model.predict(TEXTS) == [labels[i] for i in lr.predict(emb)]  # setfit: labels[head.predict(emb)]
    np.testing.assert_allclose(model.predict_proba(TEXTS), lr.predict_proba(emb), rtol=1e-5, atol=1e-6)
    _round_trip(model, tmp_path / "converted")


def test_multiclass_string_classes_and_unnamed_ids(tmp_path, tiny_body_path, train_set):
    texts, y = train_set
    emb_train = _setfit_embeddings(tiny_body_path, texts, False)
    emb = _setfit_embeddings(tiny_body_path, TEXTS, False)
    # trained on string labels, no labels in the config: setfit predicts the head's own classes
    names = np.array(["neg", "pos", "other"])[np.where(np.arange(len(y)) % 5 == 0, 2, y)]
    lr = LogisticRegression().fit(emb_train, names)
    model = SetFitModel.from_pretrained(
        _write_setfit_folder(tmp_path / "strings", tiny_body_path, lr, {"normalize_embeddings": False,
                                                                         "labels": None}), allow_pickle=True)
    assert model.labels == lr.classes_.tolist() and model.predict(TEXTS) == lr.predict(emb).tolist()
    np.testing.assert_allclose(model.predict_proba(TEXTS), lr.predict_proba(emb), rtol=1e-5, atol=1e-6)
    _round_trip(model, tmp_path / "strings_converted")

    # class ids 1 and 3 named by a longer label list: setfit maps labels[id]; columns follow classes_
    lr = LogisticRegression().fit(emb_train, np.where(y == 1, 3, 1))
    model = SetFitModel.from_pretrained(
        _write_setfit_folder(tmp_path / "sparse", tiny_body_path, lr, {"normalize_embeddings": False,
                                                                        "labels": ["a", "b", "c", "d"]}),
        allow_pickle=True)
    assert model.labels == ["b", "d"]
    assert model.predict(TEXTS) == [["a", "b", "c", "d"][i] for i in lr.predict(emb)]
    np.testing.assert_allclose(model.predict_proba(TEXTS), lr.predict_proba(emb), rtol=1e-5, atol=1e-6)
    _round_trip(model, tmp_path / "sparse_converted")


def test_bool_classes_are_named_by_the_labels_as_setfit_names_them(tmp_path, tiny_body_path, train_set):
    """setfit trains its ABSA aspect head on True/False and names them by labels ["no aspect", "aspect"]: the
    classes are label ids (labels[True] is labels[1]), not labels of their own."""
    texts, y = train_set
    emb_train = _setfit_embeddings(tiny_body_path, texts, False)
    lr = LogisticRegression().fit(emb_train, y.astype(bool))
    assert lr.classes_.dtype == bool
    names = ["no aspect", "aspect"]
    model = SetFitModel.from_pretrained(
        _write_setfit_folder(tmp_path / "bools", tiny_body_path, lr, {"normalize_embeddings": False,
                                                                       "labels": names}), allow_pickle=True)
    emb = _setfit_embeddings(tiny_body_path, TEXTS, False)
    assert model.labels == names and model.predict(TEXTS) == [names[int(c)] for c in lr.predict(emb)]
    np.testing.assert_allclose(model.predict_proba(TEXTS), lr.predict_proba(emb), rtol=1e-5, atol=1e-6)
    _round_trip(model, tmp_path / "bools_converted")


def test_old_setfit_folder_without_config(tmp_path, tiny_body_path, train_set):
    texts, y = train_set
    lr = LogisticRegression().fit(_setfit_embeddings(tiny_body_path, texts, False), y)
    model = SetFitModel.from_pretrained(_write_setfit_folder(tmp_path / "s", tiny_body_path, lr, None),
                                        allow_pickle=True, labels=["neg", "pos"])
    emb = _setfit_embeddings(tiny_body_path, TEXTS, False)
    assert model.labels == ["neg", "pos"] and model.predict(TEXTS) == [["neg", "pos"][i] for i in lr.predict(emb)]


@pytest.mark.parametrize("wrapper", [OneVsRestClassifier, MultiOutputClassifier])
def test_multi_label_head(tmp_path, tiny_body_path, train_set, wrapper):
    texts, y = train_set
    multi_hot = np.stack([y, 1 - y, (np.arange(len(y)) % 3 == 0).astype(int)], axis=1)
    head = wrapper(LogisticRegression()).fit(_setfit_embeddings(tiny_body_path, texts, True), multi_hot)
    labels = ["pos", "neg", "third"]
    folder = _write_setfit_folder(tmp_path / "setfit", tiny_body_path, head,
                                  {"normalize_embeddings": True, "labels": labels})
    model = SetFitModel.from_pretrained(folder, allow_pickle=True)
    strategy = {OneVsRestClassifier: "one-vs-rest", MultiOutputClassifier: "multi-output"}[wrapper]
    assert model.multi_label and model.labels == labels and model.multi_target_strategy == strategy

    emb = _setfit_embeddings(tiny_body_path, TEXTS, True)
    np.testing.assert_array_equal(model.predict(TEXTS), head.predict(emb))  # multi-hot, as setfit's predict
    expected = head.predict_proba(emb)
    if isinstance(expected, list):  # setfit stacks MultiOutput's per-label (n, 2) arrays, and so do we
        expected = np.stack(expected, axis=1)
    np.testing.assert_allclose(model.predict_proba(TEXTS), expected, rtol=1e-5, atol=1e-6)
    _round_trip(model, tmp_path / "converted")

    with pytest.raises(ValueError, match=r"multi_target_strategy='classifier-chain' conflicts"):
        SetFitModel.from_pretrained(folder, allow_pickle=True, multi_target_strategy="classifier-chain")


def test_conflicting_arguments_and_bad_files(tmp_path, tiny_body_path, train_set):
    texts, y = train_set
    lr = LogisticRegression().fit(_setfit_embeddings(tiny_body_path, texts, False), y)
    folder = _write_setfit_folder(tmp_path / "s", tiny_body_path, lr,
                                  {"normalize_embeddings": False, "labels": ["negative", "positive"]})
    with pytest.raises(ValueError, match=r"labels \['positive', 'negative'\] are the saved labels .* another order"):
        SetFitModel.from_pretrained(folder, allow_pickle=True, labels=["positive", "negative"])
    with pytest.raises(ValueError, match=r"labels \['x', 'y', 'z'\] name 3 classes; the model saved in .* has 2"):
        SetFitModel.from_pretrained(folder, allow_pickle=True, labels=["x", "y", "z"])
    with pytest.raises(ValueError, match=r"normalize_embeddings=True conflicts .* has normalize_embeddings=False"):
        SetFitModel.from_pretrained(folder, allow_pickle=True, normalize_embeddings=True)
    with pytest.raises(ValueError, match=r"multi_target_strategy='one-vs-rest' conflicts"):
        SetFitModel.from_pretrained(folder, allow_pickle=True, multi_target_strategy="one-vs-rest")
    with pytest.raises(ValueError, match=r"use_differentiable_head=True conflicts"):
        SetFitModel.from_pretrained(folder, allow_pickle=True, use_differentiable_head=True)
    assert SetFitModel.from_pretrained(folder, allow_pickle=True, normalize_embeddings=False).labels

    (folder / "config_setfit.json").write_text(json.dumps({"normalize_embeddings": False, "labels": ["only one"]}))
    with pytest.raises(ValueError, match=r"predicts class 1, which has no name in the labels \['only one'\]"):
        SetFitModel.from_pretrained(folder, allow_pickle=True)
    (folder / "model_head.pkl").write_bytes((folder / "model_head.pkl").read_bytes()[:40])
    with pytest.raises(ValueError, match=r"cannot load .*model_head\.pkl .*truncated"):
        SetFitModel.from_pretrained(folder, allow_pickle=True)
    joblib.dump(LogisticRegression(), folder / "model_head.pkl")
    with pytest.raises(ValueError, match=r"model_head\.pkl holds an unfitted LogisticRegression"):
        SetFitModel.from_pretrained(folder, allow_pickle=True)


# setfit's differentiable head: a pickled setfit.modeling.SetFitHead, readable only where setfit is installed


class _SetFitHead(torch.nn.Module):
    """Stands in for setfit.modeling.SetFitHead (same attributes and forward) so the test can pickle one."""

    def __init__(self, in_features: int, out_features: int, temperature: float, multitarget: bool) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(in_features, out_features)
        self.in_features, self.out_features, self.temperature, self.eps = in_features, out_features, temperature, 1e-5
        self.multitarget = multitarget

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logits = self.linear(x) / (self.temperature + self.eps)
        return torch.sigmoid(logits) if self.multitarget else torch.softmax(logits, dim=-1)


_SetFitHead.__module__, _SetFitHead.__qualname__, _SetFitHead.__name__ = "setfit.modeling", "SetFitHead", "SetFitHead"


def _fake_setfit(monkeypatch: pytest.MonkeyPatch) -> None:
    package, module = types.ModuleType("setfit"), types.ModuleType("setfit.modeling")
    module.SetFitHead, package.modeling = _SetFitHead, module
    monkeypatch.setitem(sys.modules, "setfit", package)
    monkeypatch.setitem(sys.modules, "setfit.modeling", module)


@pytest.mark.parametrize("multitarget", [False, True])
def test_differentiable_head(tmp_path, tiny_body_path, monkeypatch, multitarget):
    torch.manual_seed(0)
    head = _SetFitHead(32, 3, temperature=0.7, multitarget=multitarget)
    with monkeypatch.context() as installed:
        _fake_setfit(installed)
        folder = _write_setfit_folder(tmp_path / "setfit", tiny_body_path, head,
                                      {"normalize_embeddings": False, "labels": ["a", "b", "c"]})

    with pytest.raises(ValueError, match=r"model_head\.pkl: it holds setfit's differentiable head .* setfit "
                                         r"package, which is not installed"):
        SetFitModel.from_pretrained(folder, allow_pickle=True)

    _fake_setfit(monkeypatch)  # as where setfit is installed: the head converts to a TorchHead
    model = SetFitModel.from_pretrained(folder, allow_pickle=True)
    assert isinstance(model.model_head, TorchHead) and model.labels == ["a", "b", "c"]
    assert model.multi_label is multitarget
    with torch.no_grad():
        expected = head(torch.from_numpy(_setfit_embeddings(tiny_body_path, TEXTS, False))).numpy()
    np.testing.assert_allclose(model.predict_proba(TEXTS), expected, rtol=1e-5, atol=1e-6)
    if not multitarget:
        assert model.predict(TEXTS) == [["a", "b", "c"][i] for i in expected.argmax(1)]
    _round_trip(model, tmp_path / "converted")


def test_unpickling_a_setfit_head_warns(tmp_path, tiny_body_path, train_set):
    texts, y = train_set
    head = LogisticRegression().fit(_setfit_embeddings(tiny_body_path, texts, False), y)
    folder = _write_setfit_folder(tmp_path / "sf", tiny_body_path, head, {"labels": ["neg", "pos"]})
    with pytest.warns(UserWarning, match=r"unpickling .*model_head\.pkl \(allow_pickle=True\): a pickle can run"):
        SetFitModel.from_pretrained(folder, allow_pickle=True)


def test_a_setfit_model_of_a_body_with_a_query_prompt_encodes_as_setfit(tmp_path, tiny_body_path, train_set):
    """setfit encodes with the body's default prompt only; a body whose config has an E5-style "query" prompt but
    no default was trained and is scored without it, so the loaded model applies none."""
    texts, y = train_set
    body = SentenceTransformer(tiny_body_path, device="cpu")
    body.prompts = {"query": "awful awful awful ", "passage": ""}
    folder = tmp_path / "sf"
    body.save(str(folder))
    head = LogisticRegression().fit(body.encode(texts), y)
    joblib.dump(head, folder / "model_head.pkl")
    (folder / "config_setfit.json").write_text(json.dumps({"labels": ["neg", "pos"], "normalize_embeddings": False}))
    with pytest.warns(UserWarning, match="unpickling"):
        model = SetFitModel.from_pretrained(folder, allow_pickle=True)
    assert model.prompt == ""
    np.testing.assert_allclose(model.predict_proba(texts, as_numpy=True), head.predict_proba(body.encode(texts)),
                               rtol=0, atol=1e-5)


def test_new_label_names_rename_a_loaded_model_as_in_setfit(tmp_path, tiny_body_path, train_set,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    """setfit overrides the saved names with the ones given (its log line); the same names in another order would
    rename classes silently and stay refused. Names assigned to `model.labels` are checked, and a count that the
    head does not have is refused before predicting or saving (the folder would not load)."""
    texts, y = train_set
    lr = LogisticRegression().fit(_setfit_embeddings(tiny_body_path, texts, False), y)
    folder = _write_setfit_folder(tmp_path / "s", tiny_body_path, lr,
                                  {"normalize_embeddings": False, "labels": ["negative", "positive"]})
    with caplog.at_level("WARNING"):
        model = SetFitModel.from_pretrained(folder, allow_pickle=True, labels=["bad", "good"])
    assert model.labels == ["bad", "good"]
    assert "Overriding labels in model configuration from ['negative', 'positive'] to ['bad', 'good']" in caplog.text
    assert set(model.predict(texts[:4])) <= {"bad", "good"}
    model.save_pretrained(tmp_path / "lite")
    assert SetFitModel.from_pretrained(tmp_path / "lite", labels=["no", "yes"]).labels == ["no", "yes"]
    with pytest.raises(ValueError, match="duplicates"):
        model.labels = ["a", "a"]
    with pytest.raises(TypeError, match="must be a list of label names"):
        model.labels = "ab"
    with pytest.raises(ValueError, match=r"labels\[0\] is ''"):
        model.labels = ["", "x"]
    model.labels = ["a", "b", "c"]
    with pytest.raises(ValueError, match="model.labels names 3 classes but the head predicts 2"):
        model.predict(texts[:2])
    with pytest.raises(ValueError, match="model.labels names 3 classes but the head predicts 2"):
        model.save_pretrained(tmp_path / "broken")
    assert not (tmp_path / "broken").exists()
