"""Shared fixtures: a tiny BERT sentence-transformer built in the test session (no downloads)."""

from __future__ import annotations

import contextlib
import gc
import os
import sys
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# prediction in fp32 whatever the CPU, so that comparisons between tiers do not depend on the machine; the tests of
# bf16 prediction (test_inference_precision.py) remove it
os.environ.setdefault("SETFIT_LITE_INFERENCE_PRECISION", "fp32")
# a test (or a docs page) that calls ray.init() with no address starts a Ray of its own: without this it would join
# the cluster Ray's record names (the last one started on this machine, which the Ray tests' own clusters write), a
# cluster another test is using or has just stopped
os.environ.setdefault("RAY_ADDRESS", "local")

# the repository root on the path for subprocess workers that import this file outside pytest (pytest's
# pythonpath setting covers only its own process)
if str(Path(__file__).resolve().parents[1]) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# the word lists, the toy sentences and the tiny body live with the benchmarks' smoke mode (one builder for both)
from benchmarks.smoke import FILLER, NEGATIVE, POSITIVE, build_tiny_body, make_sentences  # noqa: E402

__all__ = ["FILLER", "NEGATIVE", "POSITIVE", "build_tiny_body", "make_sentences"]


@pytest.fixture(scope="session")
def tiny_body_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(build_tiny_body(tmp_path_factory.mktemp("tiny_body")))


@pytest.fixture()
def toy_data() -> dict[str, list[str]]:
    texts, labels = make_sentences(12, seed=0)
    return {"text": texts, "label": labels}


@pytest.fixture()
def toy_eval() -> dict[str, list[str]]:
    texts, labels = make_sentences(10, seed=1)
    return {"text": texts, "label": labels}


@pytest.fixture(scope="session")
def tier_models(tiny_body_path: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One fitted model of each prediction tier on the tiny body: ``torch`` (logistic-regression head),
    ``torch-differentiable`` (a torch head with dropout), ``onnx`` and ``static`` (both exported from ``torch``)."""
    from setfit_lite import SetFitModel

    texts, labels = make_sentences(12, seed=0)
    models = {}
    for name, options in (("torch", {}), ("torch-differentiable", {"use_differentiable_head": True,
                                                                   "head_params": {"dropout": 0.5}})):
        model = SetFitModel.from_pretrained(tiny_body_path, labels=["positive", "negative"], **options)
        head = model.new_head(2, multi_label=False)
        head.fit(model.encode(texts), model.label_ids(labels))
        model.model_head = head
        models[name] = model
    folder = tmp_path_factory.mktemp("tiers")
    models["onnx"] = SetFitModel.from_onnx(models["torch"].export_onnx(folder / "onnx"))
    models["static"] = SetFitModel.from_static(models["torch"].export_static(
        folder / "static", texts, labels, pca_dims=16, dtype="float32", refine_epochs=0))
    models["folders"] = {"onnx": folder / "onnx", "static": folder / "static"}  # to load them again
    return models


@contextlib.contextmanager
def fold_bodies(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[weakref.ref]]:
    """Weak references to every body given to `SetFitModel.with_body` (the folds' copies) inside the block, which
    runs with Python's cyclic garbage collector off: a body still alive at the end is one nothing freed."""
    from setfit_lite import SetFitModel

    made: list[weakref.ref] = []
    with_body = SetFitModel.with_body

    def recording(self: SetFitModel, body: object) -> SetFitModel:
        made.append(weakref.ref(body))
        return with_body(self, body)

    monkeypatch.setattr(SetFitModel, "with_body", recording)
    gc.collect()
    gc.disable()
    try:
        yield made
    finally:
        gc.enable()
