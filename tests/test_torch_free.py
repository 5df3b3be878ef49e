"""ONNX inference without torch (issue 18): ``SetFitModel.from_onnx``, ``OnnxSetFitModel`` (onnxruntime and
OpenVINO) and ``setfit-lite predict/evaluate`` on an exported folder, each in a child process where torch cannot
be imported, and where it can but is not (nor transformers: issue 22, cold start)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import make_sentences

REPO = Path(__file__).resolve().parents[1]
TEXTS = ["great wonderful superb film", "awful dull terrible movie", "the plot was nice", "boring sad acting"]
HEAVY = ("torch", "sentence_transformers", "transformers")  # transformers: 1-4 s of import at cold start

# torch and sentence-transformers made unimportable: every import of them, by anyone, raises ImportError
NO_TORCH = f"""
import importlib.abc, importlib.machinery, sys

class Blocker(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        return importlib.machinery.ModuleSpec(name, self) if name.split(".")[0] in {HEAVY!r} else None

    def create_module(self, spec):
        raise ImportError(f"{{spec.name}} is blocked by the test", name=spec.name)

    def exec_module(self, module):
        pass

sys.meta_path.insert(0, Blocker())
try:
    import torch
except ImportError:
    pass
else:
    raise AssertionError("torch is still importable")
"""

PREDICT = """
import json, sys
from setfit_lite import SetFitModel
from setfit_lite.runtime.onnx import OnnxSetFitModel

folder, runtime, texts = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
model = SetFitModel.from_onnx(folder, runtime=runtime)
assert type(model) is OnnxSetFitModel, type(model)
print(json.dumps({"proba": model.predict_proba(iter(texts), batch_size=3).tolist(), "labels": model.predict(texts),
                  "one": model(texts[0]), "ids": model.label_ids(["positive", "negative"]).tolist()}))
"""

CLI = f"""
import sys
from setfit_lite.cli import main

code = main(sys.argv[1:])
loaded = sorted(name for name in {HEAVY!r} if sys.modules.get(name) is not None)
print("loaded:", ",".join(loaded))
sys.exit(code)
"""


def run_python(code: str, *args: str) -> subprocess.CompletedProcess:
    """``python -c code args`` in a child process with this checkout first on the path; fails on a non-zero exit."""
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc


# every module of the torch-free packages, found on disk (a new module is covered without editing this test)
TORCH_FREE_PACKAGES = ("setfit_lite.runtime", "setfit_lite.config")
IMPORT_ALL = """
import importlib, pkgutil, sys
names = []
for package in {packages!r}:
    module = importlib.import_module(package)
    names.append(package)
    for info in pkgutil.walk_packages(module.__path__, package + "."):
        importlib.import_module(info.name)
        names.append(info.name)
# the old paths of the runtimes' names, through setfit_lite.moved
from setfit_lite.export import OnnxSetFitModel
from setfit_lite.static import StaticSetFitModel
from setfit_lite.inference import Predictor
from setfit_lite.params import check_param
print(" ".join(names))
"""


def test_the_runtimes_and_the_configuration_import_without_torch() -> None:
    out = run_python(NO_TORCH + IMPORT_ALL.format(packages=TORCH_FREE_PACKAGES)).stdout.split()
    expected = {".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
                for package in TORCH_FREE_PACKAGES for path in (REPO / package.replace(".", "/")).rglob("*.py")}
    assert set(out) == expected and {"setfit_lite.runtime.onnx", "setfit_lite.runtime.static"} <= set(out)


def test_the_blocker_blocks() -> None:
    """The check above can fail: a module of the writers (which need torch) does not import under NO_TORCH."""
    code = NO_TORCH + "import setfit_lite.exporting.onnx\n"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode != 0 and "torch is blocked by the test" in proc.stderr


@pytest.fixture(scope="module")
def exported(tiny_body_path: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    """An exported folder, and the torch model it was exported from (its head fitted on the body's embeddings)."""
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from setfit_lite import SetFitModel

    texts, labels = make_sentences(12, seed=0)
    model = SetFitModel.from_pretrained(tiny_body_path, labels=["positive", "negative"])
    head = model.new_head(2, multi_label=False)
    head.fit(model.encode(texts), model.label_ids(labels))
    model.model_head = head
    return model.export_onnx(tmp_path_factory.mktemp("torch_free") / "onnx"), model


@pytest.mark.parametrize("runtime", ["onnxruntime", "openvino"])
def test_from_onnx_predicts_without_torch(exported: tuple[Path, object], runtime: str) -> None:
    if runtime == "openvino":
        pytest.importorskip("openvino")
    folder, model = exported
    out = json.loads(run_python(NO_TORCH + PREDICT, str(folder), runtime, json.dumps(TEXTS)).stdout.splitlines()[-1])
    np.testing.assert_allclose(out["proba"], model.predict_proba(TEXTS), atol=1e-4)
    assert out["labels"] == model.predict(TEXTS) and out["one"] == model.predict(TEXTS[0])
    assert out["ids"] == [0, 1]


def test_cli_predict_and_evaluate_an_export_without_torch(exported: tuple[Path, object], tmp_path: Path) -> None:
    folder, model = exported
    (tmp_path / "texts.txt").write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    texts, labels = make_sentences(6, seed=1)
    (tmp_path / "eval.jsonl").write_text("".join(
        json.dumps({"text": t, "label": y, "source": "ab"[i % 2]}) + "\n" for i, (t, y) in enumerate(zip(texts, labels))
    ), encoding="utf-8")

    lines = run_python(NO_TORCH + CLI, "predict", str(folder), str(tmp_path / "texts.txt")).stdout.splitlines()
    assert [json.loads(line)["label"] for line in lines[:-1]] == model.predict(TEXTS)
    lines = run_python(NO_TORCH + CLI, "evaluate", str(folder), str(tmp_path / "eval.jsonl"), "--group-by",
                 "source").stdout.splitlines()
    result = json.loads(lines[-2])
    expected = float(np.mean(np.asarray(model.predict(texts)) == np.asarray(labels)))
    assert result["accuracy"] == pytest.approx(expected) and {g: v["n"] for g, v in result["groups"].items()} == {
        "a": 6, "b": 6}


def test_onnx_inference_leaves_an_installed_torch_unloaded(exported: tuple[Path, object], tmp_path: Path) -> None:
    """With torch installed, neither ``SetFitModel.from_onnx`` nor ``setfit-lite predict`` imports it."""
    folder, model = exported
    check = PREDICT + f"\nassert not [n for n in {HEAVY!r} if n in sys.modules], sorted(sys.modules)\n"
    out = json.loads(run_python(check, str(folder), "onnxruntime", json.dumps(TEXTS)).stdout.splitlines()[-1])
    assert out["labels"] == model.predict(TEXTS)
    (tmp_path / "texts.txt").write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    lines = run_python(CLI, "predict", str(folder), str(tmp_path / "texts.txt"), "--proba").stdout.splitlines()
    assert lines[-1] == "loaded: " and [json.loads(line)["label"] for line in lines[:-1]] == model.predict(TEXTS)


def test_an_interrupted_command_without_torch_says_so_in_one_line() -> None:
    """Ctrl-C or SIGTERM during `predict` (or `evaluate`, `serve`) of an export prints the one line without importing
    torch: it imported the checkpoints module first, which failed where torch is not installed."""
    code = NO_TORCH + """
import argparse, signal
from setfit_lite.cli.signals import interrupted_line
print(interrupted_line(argparse.Namespace(command="predict"), int(signal.SIGINT), ["predict", "m", "t.txt"]))
print("torch" in sys.modules)
"""
    assert run_python(code).stdout.split("\n")[:2] == ["setfit-lite predict: interrupted by SIGINT; nothing was saved",
                                                       "False"]
