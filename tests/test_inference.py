"""The torch-free prediction layer (``setfit_lite.runtime.predictor``, ``setfit_lite.evaluation``): one prediction
rule, one ``Predictor`` base for the torch and the exported model, streaming, evaluation."""

from __future__ import annotations

import numpy as np
import pytest
from test_imports import import_graph

import setfit_lite.runtime.predictor as inference
from setfit_lite.data import LabeledData
from setfit_lite.evaluation import evaluate_model
from setfit_lite.runtime.predictor import Predictor, labels_from_proba, predict_ids


class LengthModel(Predictor):
    """A model with no body: P(long) = 1 for texts of more than 4 characters."""

    def __init__(self, labels: list | None = None, multi_label: bool = False) -> None:
        self.labels = ["short", "long"] if labels is None else labels
        self.multi_label = multi_label
        self.chunk_sizes: list[int] = []

    def _check_fitted(self) -> None:
        if not self.labels:
            raise ValueError("not fitted")

    def _proba_chunk(self, texts: list[str], batch_size: int, show_progress_bar: bool | None) -> np.ndarray:
        self.chunk_sizes.append(len(texts))
        long = np.array([len(t) > 4 for t in texts], dtype=np.float32)
        return np.stack([1 - long, long], axis=1)


def test_predict_ids_is_the_one_rule() -> None:
    proba = np.array([[0.2, 0.8], [0.5, 0.5], [0.9, 0.1]])
    ids = predict_ids(proba, multi_label=False)
    assert ids.tolist() == [1, 0, 0] and ids.dtype == np.int64  # a tie goes to the first class, as argmax
    hot = predict_ids(proba, multi_label=True)
    assert hot.tolist() == [[0, 1], [1, 1], [1, 0]] and hot.dtype == np.int64  # 0.5 is positive
    assert predict_ids(np.array([0.3, 0.7]), multi_label=False) == 1  # one text's row


def test_labels_from_proba() -> None:
    proba = np.array([[0.2, 0.8], [0.6, 0.4]])
    assert labels_from_proba(proba, ["neg", "pos"], multi_label=False) == ["pos", "neg"]
    assert labels_from_proba(proba[0], ["neg", "pos"], multi_label=False) == "pos"
    as_numpy = labels_from_proba(proba, [3, 7], multi_label=False, as_numpy=True)
    assert isinstance(as_numpy, np.ndarray) and as_numpy.tolist() == [7, 3]
    assert labels_from_proba(proba, ["a", "b"], multi_label=True).tolist() == [[0, 1], [1, 0]]


def test_torch_and_exported_models_share_one_predictor() -> None:
    from setfit_lite.modeling import SetFitModel
    from setfit_lite.runtime.onnx import OnnxSetFitModel

    for cls in (SetFitModel, OnnxSetFitModel):
        assert issubclass(cls, Predictor)
        assert not {"predict", "labels_from_proba", "label_ids", "__call__"} & set(vars(cls)), cls
        assert "_proba_chunk" in vars(cls)


def test_inference_is_a_leaf() -> None:
    graph = import_graph()
    data = {name for name in graph if name == "setfit_lite.data" or name.startswith("setfit_lite.data.")}
    # and the parameter rules (setfit_lite.config.params, on the rule engine and the training arguments' rules:
    # the standard library only),
    # and the word cache its tokenizer reads ids from (the standard library and numpy only)
    assert graph["setfit_lite.runtime.predictor"] <= data | {"setfit_lite.config", "setfit_lite.config.params",
                                                             "setfit_lite.runtime.word_cache"}
    assert not graph["setfit_lite.runtime.word_cache"]
    assert graph["setfit_lite.config.params"] == {"setfit_lite.config.rules", "setfit_lite.config.training_rules"}
    assert "setfit_lite.modeling" not in graph["setfit_lite.runtime.onnx"]


def test_predictor_streams_chunks_and_names_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inference, "STREAM_CHUNK", 2)
    model = LengthModel()
    texts = ["tiny", "a long one", "ok", "longer text", "x"]
    assert model.predict(iter(texts)) == ["short", "long", "short", "long", "short"]
    assert model.chunk_sizes == [2, 2, 1]
    assert model(texts[1]) == "long" and model.predict_proba(texts[1]).tolist() == [0.0, 1.0]
    assert model.predict_proba([]).shape == (0, 2)
    assert model.label_ids(["long", "short"]).tolist() == [1, 0]
    with pytest.raises(ValueError, match=r"^row 3: text"):
        model.predict(iter(["tiny", "a long one", "ok", "   ", "x"]))
    with pytest.raises(ValueError, match="not fitted"):
        LengthModel(labels=[]).predict(["a"])


def test_evaluate_model_with_groups() -> None:
    data = LabeledData(["tiny", "a long one", "ok", "longer text"], ["short", "long", "long", "long"],
                       {"lang": ["en", "en", "fr", "fr"]})
    result = evaluate_model(LengthModel(), data, "accuracy", group_by="lang")
    assert set(result.pop("calibration")) == {"expected_calibration_error", "brier_score"}
    # 1 "short" against 3 "long" is skewed: macro-F1 ((2/3 + 0.8) / 2) is reported beside accuracy
    assert result == {"accuracy": 0.75, "f1_macro": pytest.approx(11 / 15),
                      "groups": {"en": {"accuracy": 1.0, "n": 2}, "fr": {"accuracy": 0.5, "n": 2}}}
    with pytest.raises(ValueError, match="group_by column 'source' not in the dataset; its columns besides the "
                                         "text and the label: \\['lang'\\]"):
        evaluate_model(LengthModel(), data, group_by="source")

    class Unscorable(LengthModel):
        def class_proba(self, texts: list[str]) -> np.ndarray:
            raise AssertionError("predicted before the group_by column was checked")

    with pytest.raises(ValueError, match="group_by column 'source'"):  # before any text is predicted
        evaluate_model(Unscorable(), data, group_by="source")
    with pytest.raises(ValueError, match="the dataset has no labels"):
        evaluate_model(LengthModel(), LabeledData(["tiny"], None))


def test_predict_iter_streams_lazily_over_an_iterable_or_a_file(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """``predict_iter`` yields the first chunk's labels before reading past it (bounded memory), from a generator
    or a text file given as a path (blank lines skipped)."""
    monkeypatch.setattr(inference, "STREAM_CHUNK", 2)
    model, read = LengthModel(), []

    def texts():
        for text in ["tiny", "a long one", "ok", "longer text", "x"]:
            read.append(text)
            yield text

    stream = model.predict_iter(texts())
    assert [next(stream), next(stream)] == ["short", "long"] and len(read) == 2  # nothing read beyond the chunk
    assert list(stream) == ["short", "long", "short"] and model.chunk_sizes == [2, 2, 1]
    path = tmp_path / "texts.txt"
    path.write_text("tiny\n\na long one\r\nok\n", encoding="utf-8")
    assert list(model.predict_iter(path)) == ["short", "long", "short"]
    assert [(chunk, p.argmax(1).tolist()) for chunk, p in model.iter_proba(path)] == [
        (["tiny", "a long one"], [0, 1]), (["ok"], [0])]
    multi = LengthModel(labels=["short", "long"], multi_label=True)
    assert [row.tolist() for row in multi.predict_iter(["tiny", "a long one"])] == [[1, 0], [0, 1]]


def test_tokenizer_file_gives_the_body_tokenizers_ids_and_padding(tiny_body_path: str) -> None:
    """The transformers-free tokenizer of exported folders: same ids, truncation and padding as the body's."""
    from transformers import AutoTokenizer

    from setfit_lite.runtime.predictor import TokenizerFile

    body_tokenizer = AutoTokenizer.from_pretrained(tiny_body_path)
    texts = ["great wonderful superb film", "so bad", "a " * 40 + "end", "zzqq unknown words"]
    tokenizer = TokenizerFile.from_folder(tiny_body_path, max_length=12)
    expected = body_tokenizer(texts, truncation=True, max_length=12)["input_ids"]
    assert tokenizer.encode(texts) == expected and max(map(len, expected)) == 12
    ids, mask = tokenizer.pad(tokenizer.encode(texts))
    batch = body_tokenizer.pad({"input_ids": expected}, return_tensors="np")
    assert ids.dtype == mask.dtype == np.int64
    np.testing.assert_array_equal(ids, batch["input_ids"])
    np.testing.assert_array_equal(mask, batch["attention_mask"])
    assert tokenizer.pad_id == body_tokenizer.pad_token_id
