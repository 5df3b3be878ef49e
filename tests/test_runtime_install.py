"""The torch-free runtime install of ``docs/install.md`` works: a fresh virtual environment holding setfit_lite
(``pip install --no-deps``) and only the runtime dependencies predicts from an exported ONNX folder and a static
folder, in Python and with ``setfit-lite predict``, and torch is not installed in it.

The environment is built once for the module, by the pip of the environment running the tests (40 s on 2 busy
cores when pip's cache holds the wheels; PyPI is reached otherwise). Nothing is downloaded from the Hugging Face
Hub: the folders are exported from the tiny body of ``conftest.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from conftest import make_sentences

ROOT = Path(__file__).resolve().parents[1]
# what docs/install.md tells a deployment to install beside setfit_lite (installed with --no-deps)
RUNTIME_DEPS = ("numpy", "tokenizers", "safetensors", "onnxruntime>=1.17")
INSTALL_LINE = "pip install " + " ".join(f'"{dep}"' if ">" in dep else dep for dep in RUNTIME_DEPS)
TEXTS = ["great wonderful superb film", "awful dull terrible movie", "the plot was nice", "boring sad acting"]

PREDICT = """
import json, sys
from setfit_lite import SetFitModel

try:
    import torch
except ImportError:
    pass
else:
    raise AssertionError("torch is installed in the runtime environment")
kind, folder, texts = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
model = SetFitModel.from_onnx(folder) if kind == "onnx" else SetFitModel.from_static(folder)
print(json.dumps({"proba": model.predict_proba(texts).tolist(), "labels": model.predict(texts)}))
"""

pytestmark = pytest.mark.slow


def _pip(python: Path, *args: str) -> None:
    # this environment's pip, installing into the other one (pip >= 22.3): the same pip wherever the test runs
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
                           "--disable-pip-version-check", *args],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"pip install {' '.join(args)} failed:\n{proc.stderr[-4000:]}"


@pytest.fixture(scope="module")
def runtime_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A virtual environment with setfit_lite and the runtime dependencies only; its ``bin`` folder."""
    folder = tmp_path_factory.mktemp("runtime_venv") / "venv"
    venv.EnvBuilder(with_pip=False).create(folder)
    python = folder / "bin" / "python"
    _pip(python, *RUNTIME_DEPS)
    # from a copy of the sources: pip builds in the source folder, and the checkout is left as it is
    source = folder.parent / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    for package in ("setfit_lite", "trainers"):
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    _pip(python, "--no-deps", str(source))
    return folder / "bin"


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    # no PYTHONPATH: the environment's own setfit_lite, not this checkout's, and nothing of the test's environment
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="1")
    proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


def test_the_install_page_gives_the_tested_command() -> None:
    page = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    assert INSTALL_LINE in page and "pip install --no-deps setfit_lite" in page


def test_the_runtime_environment_has_no_torch(runtime_venv: Path, tmp_path: Path) -> None:
    installed = _run([sys.executable, "-m", "pip", "--python", str(runtime_venv / "python"), "list", "--format",
                      "json"], tmp_path).stdout
    names = {row["name"].lower().replace("_", "-") for row in json.loads(installed)}
    assert "setfit-lite" in names
    assert not names & {"torch", "transformers", "sentence-transformers", "datasets", "scikit-learn", "pandas"}


@pytest.mark.parametrize("kind", ["onnx", "static"])
def test_the_runtime_environment_predicts(runtime_venv: Path, tier_models: dict, kind: str, tmp_path: Path) -> None:
    pytest.importorskip("onnx")  # the export (in this environment) needs it
    folder = tier_models["folders"][kind]
    out = json.loads(_run([str(runtime_venv / "python"), "-c", PREDICT, kind, str(folder), json.dumps(TEXTS)],
                          tmp_path).stdout.splitlines()[-1])
    reference = tier_models[kind]
    assert out["labels"] == reference.predict(TEXTS)
    assert abs(sum(out["proba"][0]) - 1) < 1e-4
    assert max(abs(a - b) for row, ref in zip(out["proba"], reference.predict_proba(TEXTS).tolist())
               for a, b in zip(row, ref)) < 1e-4


def test_the_runtime_environment_runs_the_command_line(runtime_venv: Path, tier_models: dict,
                                                       tmp_path: Path) -> None:
    texts, _ = make_sentences(3, seed=2)
    (tmp_path / "texts.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    for kind in ("onnx", "static"):
        folder = tier_models["folders"][kind]
        lines = _run([str(runtime_venv / "setfit-lite"), "predict", str(folder), "texts.txt"], tmp_path).stdout
        assert [json.loads(line)["label"] for line in lines.splitlines()] == tier_models[kind].predict(texts), kind


def test_the_check_can_fail(runtime_venv: Path, tmp_path: Path) -> None:
    """The runtime environment really lacks torch: training does not import there."""
    proc = subprocess.run([str(runtime_venv / "python"), "-c", "import setfit_lite.trainer"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert proc.returncode != 0 and "ModuleNotFoundError" in proc.stderr
    assert sys.executable != str(runtime_venv / "python")
