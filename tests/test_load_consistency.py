"""Saved folders whose files disagree with each other, or come from a newer setfit_lite, are refused at load time.

Every format (torch model folder, ONNX export, static export, setfit's folder, training checkpoint) is saved from a
tiny model, then one file is corrupted (a JSON field edited, a safetensors file rewritten) and the manifest
rewritten, so that only the load-time consistency checks can catch it: loading must raise a ValueError that names
the corrupted file and the field, before any prediction can happen.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import joblib
import numpy as np
import pytest
import torch
from conftest import make_sentences
from safetensors.numpy import load_file, save_file
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OneVsRestClassifier

from setfit_lite import SetFitModel
from setfit_lite.heads import TorchHead
from setfit_lite.runtime.static import StaticSetFitModel
from setfit_lite.serialization import MANIFEST_NAME, ModelFormatError, write_manifest
from setfit_lite.training.checkpoints import finalize_checkpoint, load_body_state, load_checkpoint, write_rank_state

LABELS = ["positive", "negative"]
NEWER = 99


# ------------------------------------------------------------------------------------------ the saved folders


@pytest.fixture(scope="module")
def data() -> tuple[list[str], np.ndarray]:
    texts, labels = make_sentences(8, seed=0)
    return texts, np.array([LABELS.index(y) for y in labels])


@pytest.fixture(scope="module")
def lr_model(tiny_body_path: str, data) -> SetFitModel:
    model = SetFitModel.from_pretrained(tiny_body_path, labels=LABELS)
    head = model.new_head(2, multi_label=False)
    head.fit(model.encode(data[0]), data[1])
    model.model_head = head
    return model


@pytest.fixture(scope="module")
def saved(lr_model: SetFitModel, tiny_body_path: str, data, tmp_path_factory: pytest.TempPathFactory
          ) -> dict[str, Path]:
    """One pristine folder per format."""
    root = tmp_path_factory.mktemp("saved")
    lr_model.save_pretrained(root / "model")
    torch_head = TorchHead(lr_model.embedding_dim, 2).fit(lr_model.encode(data[0]), data[1], epochs=1, seed=0)
    SetFitModel(lr_model.model_body, model_head=torch_head, labels=LABELS).save_pretrained(root / "model_torch")
    lr_model.export_onnx(root / "onnx")
    lr_model.export_static(root / "static", data[0], [LABELS[i] for i in data[1]], pca_dims=16, dtype="float32",
                           refine_epochs=0)
    setfit = root / "setfit"
    lr_model.model_body.save(str(setfit))
    embeddings = lr_model.encode(data[0])
    multi_hot = np.stack([data[1], 1 - data[1]], axis=1)
    joblib.dump(OneVsRestClassifier(LogisticRegression()).fit(embeddings, multi_hot), setfit / "model_head.pkl")
    (setfit / "config_setfit.json").write_text(json.dumps({"labels": LABELS, "normalize_embeddings": False}))
    body = torch.nn.Linear(4, 2)
    staging = root / "checkpoints" / ".tmp-checkpoint-5"
    write_rank_state(staging, 0)
    finalize_checkpoint(staging, step=5, body=body, states={"trainer_state": {"global_step": 5}}, world_size=1,
                        save_total_limit=None)
    return {"model": root / "model", "model_torch": root / "model_torch", "onnx": root / "onnx",
            "static": root / "static", "setfit": setfit, "checkpoint": root / "checkpoints" / "checkpoint-5"}


LOADERS: dict[str, Callable[[Path], Any]] = {
    "model": SetFitModel.from_pretrained,
    "model_torch": SetFitModel.from_pretrained,
    "onnx": SetFitModel.from_onnx,
    "static": StaticSetFitModel.load,
    "setfit": lambda folder: SetFitModel.from_pretrained(folder, allow_pickle=True),
    "checkpoint": lambda folder: load_checkpoint(folder, 0),
}


# ------------------------------------------------------------------------------------------------ corruptions


Corruption = Callable[[Path, str], None]  # (folder, file) -> None
DELETE = object()


def set_field(field: str, value: Any) -> Corruption:
    """Set (or, with value ``DELETE``, remove) a top-level field of a JSON file."""
    def corrupt(folder: Path, file: str) -> None:
        path = folder / file
        data = json.loads(path.read_text())
        if value is DELETE:
            del data[field]
        else:
            data[field] = value
        path.write_text(json.dumps(data))
    corrupt.newer = field.endswith("version") and value == NEWER  # type: ignore[attr-defined]
    return corrupt


def set_tensor(name: str, change: Callable[[np.ndarray], np.ndarray]) -> Corruption:
    """Rewrite one tensor of a safetensors file."""
    def corrupt(folder: Path, file: str) -> None:
        arrays = load_file(str(folder / file))
        arrays[name] = np.ascontiguousarray(change(arrays[name]))
        save_file(arrays, str(folder / file))
    return corrupt


def torch_head_of_width(dim: int, rows: int = 2) -> Corruption:
    """A torch head consistent in itself, of another input width or number of outputs."""
    def corrupt(folder: Path, file: str) -> None:
        save_file({"linear.weight": np.zeros((rows, dim), np.float32), "linear.bias": np.zeros(rows, np.float32)},
                  str(folder / "head" / "head.safetensors"))
        set_field("in_features", dim)(folder, HEAD)
        set_field("num_classes", rows)(folder, HEAD)
    return corrupt


def setfit_head(n_features: int) -> Corruption:
    """setfit's pickled head replaced by one fitted on embeddings of another width."""
    def corrupt(folder: Path, file: str) -> None:
        rng = np.random.default_rng(0)
        x, y = rng.normal(size=(8, n_features)), np.array([[0, 1], [1, 0]] * 4)
        joblib.dump(OneVsRestClassifier(LogisticRegression()).fit(x, y), folder / file)
    return corrupt


STATIC = "config_setfit_lite_static.json"
ONNX = "config_setfit_lite_onnx.json"
MODEL = "config_setfit_lite.json"
HEAD = "head/head_config.json"
CASES = [
    # (format, file corrupted, the field the error must name, corruption)
    ("model", MODEL, "config_version", set_field("config_version", NEWER)),
    ("model", MODEL, "config_version", set_field("config_version", "1")),
    ("model", MODEL, "config_version", set_field("config_version", DELETE)),
    ("model", MODEL, "config_version", set_field("config_version", 0)),
    ("model", MODEL, "labels", set_field("labels", [*LABELS, "neutral"])),
    ("model", MODEL, "labels", set_field("labels", LABELS[:1])),
    ("model", MODEL, "labels", set_field("labels", ["positive", "positive"])),
    ("model", MODEL, "labels", set_field("labels", "positive")),
    ("model", "config_setfit.json", "labels", set_field("labels", ["negative", "positive"])),
    ("model", MODEL, "use_differentiable_head", set_field("use_differentiable_head", True)),
    ("model", HEAD, "format_version", set_field("format_version", NEWER)),
    ("model", HEAD, "format_version", set_field("format_version", "1")),
    ("model", HEAD, "format_version", set_field("format_version", DELETE)),
    ("model", HEAD, "format_version", set_field("format_version", True)),
    ("model", HEAD, "n_features_in", set_field("n_features_in", 16)),
    ("model", "head/head.safetensors", "estimators.0.coef", set_tensor("estimators.0.coef", lambda a: a[:, :16])),
    ("model", "head/head.safetensors", "estimators.0.coef",
     set_tensor("estimators.0.coef", lambda a: a.astype(np.int64))),
    ("model", "head/head.safetensors", "estimators.0.classes",
     set_tensor("estimators.0.classes", lambda a: a + 1)),
    ("model_torch", HEAD, "format_version", set_field("format_version", NEWER)),
    ("model_torch", HEAD, "format_version", set_field("format_version", [1])),
    ("model_torch", HEAD, "in_features", set_field("in_features", 16)),
    ("model_torch", "head/head.safetensors", "linear.weight",
     set_tensor("linear.weight", lambda a: a.astype(np.int32))),
    ("model_torch", HEAD, "in_features", torch_head_of_width(16)),
    ("model_torch", MODEL, "labels", torch_head_of_width(32, rows=3)),
    ("onnx", ONNX, "format_version", set_field("format_version", NEWER)),
    ("onnx", ONNX, "format_version", set_field("format_version", "1")),
    ("onnx", ONNX, "format_version", set_field("format_version", DELETE)),
    ("onnx", ONNX, "labels", set_field("labels", [*LABELS, "neutral"])),
    ("onnx", ONNX, "labels", set_field("labels", LABELS[:1])),
    ("onnx", ONNX, "labels", set_field("labels", ["negative", "negative"])),
    ("onnx", ONNX, "output", set_field("output", "logits")),
    ("onnx", ONNX, "inputs", set_field("inputs", ["input_ids"])),
    ("onnx", ONNX, "model_file", set_field("model_file", "../model.onnx")),
    ("onnx", ONNX, "max_seq_length", set_field("max_seq_length", "64")),
    ("onnx", ONNX, "multi_label", set_field("multi_label", "no")),
    ("static", STATIC, "format_version", set_field("format_version", NEWER)),
    ("static", STATIC, "format_version", set_field("format_version", "1")),
    ("static", STATIC, "format_version", set_field("format_version", DELETE)),
    ("static", STATIC, "format_version", set_field("format_version", 1.0)),
    ("static", STATIC, "labels", set_field("labels", [*LABELS, "neutral"])),
    ("static", STATIC, "labels", set_field("labels", LABELS[:1])),
    ("static", STATIC, "head_columns", set_field("head_columns", [0, 2])),
    ("static", STATIC, "head_columns", set_field("head_columns", [-1, 1])),
    ("static", STATIC, "head_columns", set_field("head_columns", [1, 1])),
    ("static", STATIC, "head_columns", set_field("head_columns", [0, 1, 1])),
    ("static", STATIC, "head_kind", set_field("head_kind", "sigmoid")),
    ("static", STATIC, "multi_label", set_field("multi_label", True)),
    ("static", "head_static.safetensors", "weight", set_tensor("weight", lambda a: a[:, :8])),
    ("static", "head_static.safetensors", "weight", set_tensor("weight", lambda a: np.concatenate([a, a]))),
    ("static", "head_static.safetensors", "bias", set_tensor("bias", lambda a: np.concatenate([a, a]))),
    ("static", "head_static.safetensors", "weight", set_tensor("weight", lambda a: a.astype(np.int32))),
    ("static", "model.safetensors", "embeddings", set_tensor("embeddings", lambda a: a[:-3])),
    ("static", "model.safetensors", "embeddings", set_tensor("embeddings", lambda a: a[:, :8])),
    ("static", "model.safetensors", "embeddings", set_tensor("embeddings", lambda a: a.astype(np.int64))),
    ("static", "config.json", "hidden_dim", set_field("hidden_dim", 8)),
    ("setfit", "config_setfit.json", "labels", set_field("labels", [*LABELS, "neutral"])),
    ("setfit", "config_setfit.json", "labels", set_field("labels", LABELS[:1])),
    ("setfit", "config_setfit.json", "labels", set_field("labels", ["a", "a"])),
    ("setfit", "model_head.pkl", "n_features_in", setfit_head(8)),
    ("checkpoint", "checkpoint.json", "format_version", set_field("format_version", NEWER)),
    ("checkpoint", "checkpoint.json", "format_version", set_field("format_version", "2")),
    ("checkpoint", "checkpoint.json", "format_version", set_field("format_version", DELETE)),
    ("checkpoint", "checkpoint.json", "format_version", set_field("format_version", 1)),
    ("checkpoint", "checkpoint.json", "world_size", set_field("world_size", 0)),
    ("checkpoint", "checkpoint.json", "world_size", set_field("world_size", 2)),
    ("checkpoint", "checkpoint.json", "step", set_field("step", 7)),
    ("checkpoint", "checkpoint.json", "states", set_field("states", ["trainer_state", "optimizer"])),
    ("checkpoint", "checkpoint.json", "states", set_field("states", "trainer_state")),
]


def case_id(case: tuple) -> str:
    fmt, file, field, corruption = case
    return f"{fmt}-{Path(file).name}-{field}-{CASES.index(case)}"


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_inconsistent_or_newer_files_are_refused_naming_file_and_field(case, saved, tmp_path) -> None:
    fmt, file, field, corruption = case
    folder = tmp_path / saved[fmt].name  # a checkpoint's folder name says its step
    shutil.copytree(saved[fmt], folder)
    corruption(folder, file)
    if (folder / MANIFEST_NAME).is_file():
        write_manifest(folder)  # the files agree with the manifest: only the consistency checks can catch it
    with pytest.raises(ValueError) as info:
        LOADERS[fmt](folder)
    message = str(info.value)
    assert Path(file).name in message and field in message, message
    if getattr(corruption, "newer", False):
        assert "newer" in message and "upgrade" in message, message


@pytest.mark.parametrize("fmt", sorted(LOADERS))
def test_pristine_folders_load(fmt, saved) -> None:
    """The checks accept every folder the savers write."""
    LOADERS[fmt](saved[fmt])


def test_the_format_error_is_a_value_error_naming_file_and_field(saved, tmp_path) -> None:
    folder = tmp_path / "static"
    shutil.copytree(saved["static"], folder)
    set_field("head_columns", [0, 5])(folder, STATIC)
    write_manifest(folder)
    with pytest.raises(ModelFormatError) as info:
        StaticSetFitModel.load(folder)
    assert info.value.file == folder / STATIC and info.value.field == "head_columns"


def test_a_checkpoint_body_of_another_shape_is_refused_naming_the_tensor(saved) -> None:
    saved_state = load_checkpoint(saved["checkpoint"], 0)["body"]
    with pytest.raises(ValueError, match=r"body.safetensors: weight has shape \(2, 4\).*\(2, 3\)"):
        load_body_state(torch.nn.Linear(3, 2), saved_state, saved["checkpoint"])
    load_body_state(torch.nn.Linear(4, 2), saved_state, saved["checkpoint"])
