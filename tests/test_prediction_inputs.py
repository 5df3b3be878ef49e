"""What prediction accepts, one rule for every tier (torch, ONNX, static) and entry point: a ``str`` is one text, a
file is an ``os.PathLike`` (one text per non-blank line), an iterable of ``str`` is streamed; a bare ``str`` where
texts are streamed (``predict_iter``), a dict, bytes, a DataFrame or Dataset, a set and non-str texts are refused
with a TypeError that says what to pass, a text that is not valid Unicode (a lone surrogate) with a ValueError naming
its row; a list is checked whole before any text is encoded. A predict file that is not UTF-8 names the file and the
line."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pandas as pd
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
    "pandas Series": (lambda tmp: pd.Series(TEXTS, index=[7, 3, 5]), {"*": MANY}),
    "Dataset column": (lambda tmp: datasets.Dataset.from_dict({"text": TEXTS})["text"], {"*": MANY}),
    "DataFrame": (lambda tmp: pd.DataFrame({"text": TEXTS, "id": [7, 8, 9]}),
                  {"*": (TypeError, r"got a pandas DataFrame, whose iteration gives its column names.*"
                                    r"df\['text'\]\.tolist\(\)")}),
    "Dataset": (lambda tmp: datasets.Dataset.from_dict({"text": TEXTS}),
                {"*": (TypeError, r"got a datasets\.Dataset, whose iteration gives its rows as dicts.*ds\['text'\]")}),
    "DatasetDict": (lambda tmp: datasets.DatasetDict({"test": datasets.Dataset.from_dict({"text": TEXTS})}),
                    {"*": (TypeError, r"got a DatasetDict of the splits \['test'\].*data\['test'\]\['text'\]")}),
    "set": (lambda tmp: set(TEXTS), {"*": (TypeError, r"got a set, which has no order.*pass a list")}),
    "frozenset": (lambda tmp: frozenset(TEXTS), {"*": (TypeError, r"got a frozenset, which has no order")}),
    "2-D array": (lambda tmp: np.array([TEXTS]), {"*": (TypeError, r"got a 2-D array of shape \(1, 3\)")}),
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
def test_a_table_path_and_bare_cr_lines_read_as_the_cli_reads_them(tier_models: dict, tmp_path: Path,
                                                                   tier: str) -> None:
    """A CSV path is a table (its header is not a text) and a bare carriage return ends a line, as in
    `setfit-lite predict`: one answer per text, in order."""
    model = tier_models[tier]
    expected = list(model.predict(TEXTS))
    table = tmp_path / "texts.csv"
    table.write_text("text,id\n" + "".join(f"{t},{i}\n" for i, t in enumerate(TEXTS)), encoding="utf-8")
    old_mac = tmp_path / "texts.txt"
    old_mac.write_bytes("\r".join(TEXTS).encode() + b"\r")
    assert list(model.predict(table)) == expected
    assert list(model.predict(old_mac)) == expected


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


TABLES_AND_SETS = {
    "DataFrame": (lambda: pd.DataFrame({"text": TEXTS, "id": [7, 8, 9]}), r"DataFrame.*df\['text'\]\.tolist\(\)"),
    "Dataset": (lambda: datasets.Dataset.from_dict({"text": TEXTS}), r"datasets\.Dataset.*ds\['text'\]"),
    "set": (lambda: set(TEXTS), r"set, which has no order"),
}


@pytest.mark.parametrize("kind", list(TABLES_AND_SETS))
@pytest.mark.parametrize("tier", TIERS)
def test_encode_and_suggest_labels_refuse_a_table_or_a_set(tier_models: dict, tier: str, kind: str) -> None:
    from setfit_lite import suggest_labels

    model = tier_models[tier]
    make, pattern = TABLES_AND_SETS[kind]
    with pytest.raises(TypeError, match=pattern):
        suggest_labels(model, make(), k=2)
    if tier != "onnx":  # the ONNX tier gives no embeddings
        with pytest.raises(TypeError, match=pattern):
            model.encode(make())
    assert suggest_labels(model, make()["text"] if kind != "set" else sorted(make()), k=2)


@pytest.mark.parametrize("tier", TIERS)
def test_a_bad_text_late_in_a_list_is_refused_before_any_text_is_encoded(tier_models: dict, tier: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A list (tuple, array, Series) is checked whole before the first chunk is encoded; an iterator is checked as
    it is read, so the chunks before a bad text are scored first (its memory stays bounded)."""
    from setfit_lite.runtime import predictor

    model = tier_models[tier]
    encoded: list[int] = []
    real = type(model)._proba_chunk

    def counted(self: Any, texts: list[str], *args: Any, **kwargs: Any) -> np.ndarray:
        encoded.append(len(texts))
        return real(self, texts, *args, **kwargs)

    monkeypatch.setattr(type(model), "_proba_chunk", counted)
    monkeypatch.setattr(predictor, "STREAM_CHUNK", 2)
    texts = [*TEXTS, *TEXTS, None]  # the bad text in the fourth chunk
    for inputs in (texts, tuple(texts), pd.Series(texts, dtype=object)):
        for call in (model.predict, model.predict_proba, lambda x: list(model.predict_iter(x))):
            with pytest.raises(TypeError, match="row 6: text must be a str, got NoneType"):
                call(inputs)
    assert encoded == []
    with pytest.raises(TypeError, match="row 6: text must be a str, got NoneType"):
        model.predict(iter(texts))
    assert encoded == [2, 2, 2]
    encoded.clear()
    assert len(model.predict(TEXTS * 2)) == 6 and encoded == [2, 2, 2]  # a valid list is still scored in chunks


def test_the_static_tiers_encode_with_proba_checks_a_list_whole(tier_models: dict,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from setfit_lite.runtime import predictor
    from setfit_lite.runtime.static import StaticSetFitModel

    def never(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a text was embedded before the check")

    monkeypatch.setattr(predictor, "STREAM_CHUNK", 2)
    monkeypatch.setattr(StaticSetFitModel, "_embed_proba_chunk", never)
    with pytest.raises(ValueError, match="row 4: text is empty"):
        tier_models["static"].encode_with_proba([*TEXTS, "fine", " "])
