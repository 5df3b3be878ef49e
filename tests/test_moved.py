"""The module paths of earlier releases (``setfit_lite.export``, ``setfit_lite.params``, ...) still import, as the
modules that hold their names now (``setfit_lite.moved``), and only when used."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

from setfit_lite.moved import MOVED

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("old", sorted(name for name, targets in MOVED.items() if len(targets) == 1))
def test_an_old_path_is_its_new_module(old: str) -> None:
    new = importlib.import_module(MOVED[old][0])
    assert importlib.import_module(old) is new and sys.modules[old] is new
    assert new.__spec__.name == MOVED[old][0]  # the alias does not rename the module
    assert not (REPO / (old.replace(".", "/") + ".py")).exists(), f"{old} is a file again: remove it from MOVED"


def test_a_split_path_finds_each_name_where_it_went() -> None:
    from setfit_lite.export import ONNX_CONFIG_NAME, OnnxSetFitModel
    from setfit_lite.export import export_onnx as old_export_onnx
    from setfit_lite.static import StaticSetFitModel
    from setfit_lite.static import export_static as old_export_static

    from setfit_lite.exporting.onnx import export_onnx
    from setfit_lite.exporting.static import export_static
    from setfit_lite.runtime.onnx import OnnxSetFitModel as new_model
    from setfit_lite.runtime.static import StaticSetFitModel as new_static

    assert (OnnxSetFitModel, old_export_onnx, StaticSetFitModel, old_export_static) == (
        new_model, export_onnx, new_static, export_static)
    assert ONNX_CONFIG_NAME == "config_setfit_lite_onnx.json"
    import setfit_lite.export as old

    assert {"OnnxSetFitModel", "export_onnx"} <= set(old.__all__) and "export_onnx" in dir(old)
    with pytest.raises(AttributeError, match="setfit_lite.export.*no attribute 'nothing'"):
        old.nothing  # noqa: B018


def test_importing_the_package_loads_no_moved_module() -> None:
    code = ("import sys, setfit_lite\n"
            "from setfit_lite.moved import MOVED\n"
            "targets = {t for ts in MOVED.values() for t in ts}\n"
            "print(sorted(n for n in (*MOVED, *targets) if n in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(REPO), "PATH": ""}, timeout=120).stdout
    assert out.strip() == "[]"


def test_unknown_paths_stay_unknown() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("setfit_lite.no_such_module")
