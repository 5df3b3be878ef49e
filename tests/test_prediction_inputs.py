"""What prediction accepts, one rule for every tier (torch, ONNX, static) and entry point: a ``str`` is one text, a
file is an ``os.PathLike`` (one text per non-blank line), an iterable of ``str`` is streamed; a bare ``str`` where
texts are streamed (``predict_iter``), a dict, bytes and non-str texts are refused with a TypeError that says what
to pass, a text that is not valid Unicode (a lone surrogate) with a ValueError naming its row. A predict file that
is not UTF-8 names the file and the line."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from setfit_lite.cli import main

TEXTS = ["good great film", "bad awful plot", "a wonderful story"]
ONE = TEXTS[0]
MANY, SINGLE = "many", "single"  # the result: that of predicting TEXTS, or that of ONE (one label, one row)


def _file(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(TEXTS) + "\n\n", encoding="utf-8")
    return path


# input kind -> (the input, made in tmp_path; {entry point: expected}), "*" for every entry point not named
KINDS: dict[str, tuple[Callable[[Path], Any], dict[str, Any]]] = {
    "str": (lambda tmp: ONE, {"predict": SINGLE, "predict_proba": SINGLE,
                              "predict_iter": (TypeError, r"pass \[text\] for one text or pathlib\.Path")}),
    "str naming a file": (lambda tmp: str(_file(tmp)), {"predict": "one text", "predict_proba": "one text",
                                                       "predict_iter": (TypeError, r"pathlib\.Path\(\.\.\.\)")}),
    "Path": (_file, {"*": MANY}),
    "list": (lambda tmp: list(TEXTS), {"*": MANY}),
    "tuple": (lambda tmp: tuple(TEXTS), {"*": MANY}),
    "numpy array": (lambda tmp: np.array(TEXTS), {"*": MANY}),
    "generator": (lambda tmp: (t for t in TEXTS), {"*": MANY}),
    "dict": (lambda tmp: dict.fromkeys(TEXTS, 1), {"*": (TypeError, r"got a dict.*pass a list of texts")}),
    "bytes": (lambda tmp: ONE.encode(), {"*": (TypeError, r"got bytes.*decode")}),
    "bytearray": (lambda tmp: bytearray(ONE.encode()), {"*": (TypeError, r"got bytearray.*decode")}),
    "list with an int": (lambda tmp: [ONE, 3], {"*": (TypeError, r"row 1: text must be a str, got int")}),
    "list with bytes": (lambda tmp: [ONE, b"x"], {"*": (TypeError, r"row 1: text must be a str, got bytes.*decode")}),
    "list with None": (lambda tmp: [ONE, None], {"*": (TypeError, r"row 1: .*got NoneType \(a missing value\)")}),
    "list with a lone surrogate": (lambda tmp: [ONE, "good \ud800 film"],
                                   {"*": (ValueError, r"row 1: text is not valid Unicode: .*lone surrogate")}),
    "int": (lambda tmp: 3, {"*": (TypeError, r"got int.*pass a list of texts")}),
    "None": (lambda tmp: None, {"*": (TypeError, r"got NoneType.*pass a list of texts")}),
}
ENTRY_POINTS = ["predict", "predict_proba", "predict_iter"]
TIERS = ["torch", "onnx", "static"]
CASES = [pytest.param(kind, entry, tier, id=f"{tier}-{entry}-{kind}")
         for kind in KINDS for entry in ENTRY_POINTS for tier in TIERS]


def _call(model: Any, entry: str, inputs: Any) -> Any:
    if entry == "predict_iter":
        return list(model.predict_iter(inputs))
    result = getattr(model, entry)(inputs)
    return np.asarray(result) if entry == "predict_proba" else result


@pytest.mark.parametrize(("kind", "entry", "tier"), CASES)
def test_prediction_inputs(tier_models: dict, tmp_path: Path, kind: str, entry: str, tier: str) -> None:
    model = tier_models[tier]
    make, expectations = KINDS[kind]
    expected = expectations.get(entry, expectations.get("*"))
    inputs = make(tmp_path)
    if isinstance(expected, tuple):
        error, pattern = expected
        with pytest.raises(error, match=pattern):
            _call(model, entry, inputs)
        return
    got = _call(model, entry, inputs)
    if expected == MANY:
        want = _call(model, entry, list(TEXTS))
        assert len(want) == len(TEXTS)
    else:  # one text: the text itself, or the file's name taken as a text (never the file's lines)
        text = inputs
        want = _call(model, entry, [text])[0]
        assert np.ndim(got) == np.ndim(want)
    if entry == "predict_proba":
        assert np.array_equal(got, want)
    else:
        assert got == want


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_a_predict_input_that_is_not_utf8_names_the_file_and_line(tier_models: dict, tmp_path: Path, source: str,
                                                                  capsys: pytest.CaptureFixture,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "model"
    tier_models["torch"].save_pretrained(folder)
    data = "good film\n\nbad plot\ncaf\xe9 ok\n".encode("latin-1")
    path = tmp_path / "texts.txt"
    path.write_bytes(data)
    if source == "stdin":
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    assert main(["predict", str(folder), str(path) if source == "file" else "-"]) == 2
    err = capsys.readouterr().err
    name = str(path) if source == "file" else "<stdin>"
    assert f"{name}: line 4 is not valid UTF-8 (byte 3 of the line is b'\\xe9')" in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize("tier", TIERS)
def test_reading_a_non_utf8_path_names_the_line(tier_models: dict, tmp_path: Path, tier: str) -> None:
    path = tmp_path / "texts.txt"
    path.write_bytes(b"good film\n\xff\xfe bad\n")
    with pytest.raises(ValueError, match=rf"{path.name}: line 2 .*not valid UTF-8.*byte 0"):
        list(tier_models[tier].predict_iter(path))


def test_stdin_json_lines_without_the_text_column_name_the_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from setfit_lite.cli.inputs import read_texts

    data = b'{"text": "a good film"}\n\n{"sentence": "great"}\n'
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    with pytest.raises(ValueError, match=r"<stdin> line 3 is a JSON object without the text column 'text' "
                                         r"\(its keys: \['sentence'\]\)"):
        list(read_texts("-", "text"))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"text": 3}\n'), encoding="utf-8"))
    with pytest.raises(ValueError, match=r"<stdin> line 1: 'text' is a int, not a text"):
        list(read_texts("-", "text"))
    plain = b"\xef\xbb\xbf{not json} but a text\nsecond\n"  # with a byte-order mark
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(plain), encoding="utf-8"))
    assert list(read_texts("-", "text")) == ["{not json} but a text", "second"]


def test_a_partly_labelled_file_is_predicted(tmp_path: Path) -> None:
    from setfit_lite.cli.inputs import read_texts

    (tmp_path / "pool.csv").write_text("text,label\nhello,positive\nanother one,\n", encoding="utf-8")
    assert list(read_texts(str(tmp_path / "pool.csv"), "text")) == ["hello", "another one"]
