"""A save into a folder whose ``head/`` (or a module's folder, ``1_Pooling/``) cannot be written in fails before its
commit point: PermissionError naming that folder, nothing changed, no journal or staging folder left, and the
previous model still loads; `check_can_update` says the same before a long job.

Without the check, the journal was written, the top-level files were replaced, and moving the head's files in
failed with no way back: a folder that no load could complete ("holds an interrupted save").

Root ignores permission bits, so the read-only folder is made two ways: really (``chmod``, as a user other than
root: this process, or a child run as ``nobody`` where the tests run as root), and by making every way of creating,
replacing or removing a file in it raise PermissionError, which works for any user.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from conftest import make_sentences

from setfit_lite import SetFitModel
from setfit_lite.serialization import atomic_update_directory, check_can_update

TEXTS = ["a good and great film", "a bad and boring plot"]


def _fitted(body: str, seed: int) -> SetFitModel:
    model = SetFitModel.from_pretrained(body, labels=["negative", "positive"])
    torch.manual_seed(seed)
    with torch.no_grad():
        for param in model.model_body.parameters():
            param.add_(0.1 * seed * torch.randn_like(param))
    texts, labels = make_sentences(6, seed=seed)
    model.model_head = model.new_head(2, multi_label=False).fit(model.encode(texts), model.label_ids(labels))
    return model


def _snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (hidden ones too) with its content."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _check_refused_and_unchanged(folder: Path, sub: str, old: SetFitModel, new: SetFitModel) -> None:
    """``new`` saved over ``old`` into ``folder``, whose ``sub`` cannot be written in, is refused before anything
    changes, and ``old`` still loads."""
    before = _snapshot(folder)
    with pytest.raises(PermissionError) as raised:
        new.save_pretrained(folder)
    assert _snapshot(folder) == before  # nothing replaced, no journal, no staging folder
    assert not [p.name for p in folder.iterdir() if p.name.startswith(".")]
    assert f"cannot save into {folder}" in str(raised.value) and str(folder / sub) in str(raised.value)
    with pytest.raises(PermissionError, match=f"cannot save into .*{sub}"):  # the save's own check, at its commit
        with atomic_update_directory(folder) as tmp:
            (tmp / sub).mkdir()
            (tmp / sub / "config.json").write_text("{}")
    with pytest.raises(PermissionError, match=f"cannot save into .*{sub}"):  # before a long job
        check_can_update(folder)
    assert _snapshot(folder) == before
    loaded = SetFitModel.from_pretrained(folder)
    np.testing.assert_allclose(loaded.predict_proba(TEXTS, as_numpy=True), old.predict_proba(TEXTS, as_numpy=True),
                               atol=1e-6)


@pytest.fixture(scope="module")
def old_and_new(tiny_body_path: str) -> tuple[SetFitModel, SetFitModel]:
    return _fitted(tiny_body_path, 0), _fitted(tiny_body_path, 3)


@pytest.mark.parametrize("sub", ["head", "1_Pooling"])
def test_save_into_an_unwritable_subfolder_changes_nothing(sub: str, tmp_path: Path, old_and_new: tuple,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Any user: creating, replacing or removing a file in ``sub`` raises PermissionError, as in a read-only
    folder (``os.open`` creating a file there, ``os.replace``/``os.rename`` onto it, ``os.unlink``, and
    ``os.access`` asked for write access)."""
    old, new = old_and_new
    folder = tmp_path / "model"
    old.save_pretrained(folder)
    locked = os.path.realpath(folder / sub)

    def denied(path: Any) -> PermissionError:
        return PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))

    def inside(path: Any) -> bool:
        return os.path.dirname(os.path.realpath(path)) == locked

    real_open, real_replace, real_rename, real_unlink, real_access = (os.open, os.replace, os.rename, os.unlink,
                                                                      os.access)

    def open_(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        tmpfile = getattr(os, "O_TMPFILE", 0)
        if (tmpfile and (flags & tmpfile) == tmpfile and os.path.realpath(path) == locked
                or flags & os.O_CREAT and inside(path)):
            raise denied(path)
        return real_open(path, flags, *args, **kwargs)

    def replace(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        if inside(dst) or inside(src):
            raise denied(dst)
        return real_replace(src, dst, *args, **kwargs)

    def rename(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        if inside(dst) or inside(src):
            raise denied(dst)
        return real_rename(src, dst, *args, **kwargs)

    def unlink(path: Any, *args: Any, **kwargs: Any) -> None:
        if inside(path):
            raise denied(path)
        return real_unlink(path, *args, **kwargs)

    def access(path: Any, mode: int, *args: Any, **kwargs: Any) -> bool:
        if mode & os.W_OK and os.path.realpath(path) == locked:
            return False
        return real_access(path, mode, *args, **kwargs)

    for name, function in (("open", open_), ("replace", replace), ("rename", rename), ("unlink", unlink),
                           ("access", access)):
        monkeypatch.setattr(os, name, function)
    _check_refused_and_unchanged(folder, sub, old, new)


SCENARIO = """
import sys
sys.path[:0] = [{tests!r}, {root!r}]
from pathlib import Path
import pytest
from benchmarks.smoke import build_tiny_body
from test_fix_save_readonly_subfolder import _check_refused_and_unchanged, _fitted
work = Path({work!r})
body = str(build_tiny_body(work / "body"))
old, new = _fitted(body, 0), _fitted(body, 3)
for sub in ("head", "1_Pooling"):
    folder = work / sub / "model"
    old.save_pretrained(folder)
    (folder / sub).chmod(0o555)
    _check_refused_and_unchanged(folder, sub, old, new)
    (folder / sub).chmod(0o755)
print("refused and unchanged")
"""


def test_save_into_a_read_only_subfolder_changes_nothing(tmp_path: Path, old_and_new: tuple) -> None:
    """A real read-only ``head/`` or ``1_Pooling/`` (``chmod 555``): as this user, or as ``nobody`` where the
    tests run as root."""
    tests, root = Path(__file__).resolve().parent, Path(__file__).resolve().parents[1]
    if os.geteuid() != 0:
        old, new = old_and_new
        for sub in ("head", "1_Pooling"):
            folder = tmp_path / sub / "model"
            old.save_pretrained(folder)
            (folder / sub).chmod(0o555)
            try:
                _check_refused_and_unchanged(folder, sub, old, new)
            finally:
                (folder / sub).chmod(0o755)
        return
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root, which ignores permission bits, without setpriv to run as another user")
    work = Path(tempfile.mkdtemp(prefix="setfit_lite-readonly-"))  # pytest's folder: for root only
    work.chmod(0o777)
    try:
        env = {**os.environ, "HOME": str(work), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
               "SETFIT_LITE_INFERENCE_PRECISION": "fp32"}
        as_nobody = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable, "-c"]
        probe = f"import sys; sys.path.insert(0, {str(root)!r}); import setfit_lite, benchmarks.smoke"
        if subprocess.run([*as_nobody, probe], env=env, cwd=str(work), capture_output=True).returncode != 0:
            pytest.skip("running as root, which ignores permission bits, and the user nobody cannot import setfit_lite")
        script = SCENARIO.format(tests=str(tests), root=str(root), work=str(work))
        done = subprocess.run([*as_nobody, script], env=env, cwd=str(work), capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
        assert "refused and unchanged" in done.stdout
    finally:
        for path in sorted(work.rglob("*"), reverse=True):
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(work, ignore_errors=True)
