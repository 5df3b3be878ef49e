"""Long texts: windows with overlap, pooling, and the same chunked prediction in every tier."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from conftest import FILLER, NEGATIVE, POSITIVE, make_sentences

from setfit_lite import SetFitModel
from setfit_lite.runtime.chunking import Chunking, Windows, pool, split_windows

MAX_LENGTH = 16  # the tiny body reads 16 tokens here: [CLS] + 14 words + [SEP]
LABELS = ["positive", "negative"]


def fitted(body_path: str, **options: object) -> SetFitModel:
    """A tiny model with a logistic-regression head fitted on the toy sentences."""
    texts, labels = make_sentences(12, seed=0)
    model = SetFitModel.from_pretrained(body_path, labels=LABELS, max_length=MAX_LENGTH, **options)
    head = model.new_head(2, multi_label=False)
    head.fit(model.encode(texts), model.label_ids(labels))
    model.model_head = head
    return model


def long_texts(n: int = 6, seed: int = 0) -> list[str]:
    """Texts whose first 20 words are neutral filler and whose last words carry the sentiment."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = POSITIVE if i % 2 == 0 else NEGATIVE
        out.append(" ".join([rng.choice(FILLER) for _ in range(20)] + rng.sample(words, 6)))
    return out


# ---------------------------------------------------------------------------------------------- windows and pooling


def test_an_overlap_as_large_as_the_window_is_capped_at_half() -> None:
    doc = [101, *range(1000, 1030), 102]
    windows = split_windows([doc], 10, 50, [101], [102])
    starts = [doc.index(w[1]) for w in windows.token_ids]
    assert np.diff(starts).tolist() == [4] * (len(starts) - 1)  # 8 text tokens a window, 4 shared
    assert windows.token_ids[-1][-2] == 1029


@pytest.mark.parametrize("overlap", [0, 1, 3, 4])
def test_windows_cover_every_token_with_the_overlap(overlap: int) -> None:
    rng = np.random.default_rng(overlap)
    prefix, suffix, max_length = [101], [102], 10
    docs = [[*prefix, *rng.integers(1000, 2000, size=n).tolist(), *suffix] for n in (0, 3, 8, 9, 20, 57)]
    windows = split_windows(docs, max_length, overlap, prefix, suffix)
    width = max_length - 2
    for index, ids in enumerate(docs):
        rows = [w for w, d in zip(windows.token_ids, windows.doc) if d == index]
        assert all(len(w) <= max_length and w[0] == 101 and w[-1] == 102 for w in rows)
        content = [w[1:-1] for w in rows]
        assert [t for part in content[:1] for t in part] + [t for part in content[1:] for t in part[overlap:]] \
            == ids[1:-1]  # every token, in order, each once once the overlaps are removed
        for before, after in zip(content, content[1:]):
            assert len(before) == width
            assert before[len(before) - overlap:] == after[:overlap]
        if len(ids) <= max_length:
            assert rows == [ids]
    assert np.all(np.diff(windows.doc) >= 0)


def test_pooling_matches_a_hand_computation() -> None:
    emb = np.array([[1.0, 0.0], [3.0, 4.0], [5.0, -2.0], [0.5, 0.5]], dtype=np.float32)
    windows = Windows([[0]] * 4, np.array([0, 0, 0, 1]), np.array([8.0, 8.0, 2.0, 3.0], dtype=np.float32), 2)
    np.testing.assert_allclose(pool(emb, windows, "mean"), [[3.0, 2 / 3], [0.5, 0.5]], rtol=1e-6)
    np.testing.assert_allclose(pool(emb, windows, "max"), [[5.0, 4.0], [0.5, 0.5]])
    np.testing.assert_allclose(pool(emb, windows, "weighted"),
                               [[(8 + 24 + 10) / 18, (0 + 32 - 4) / 18], [0.5, 0.5]], rtol=1e-6)
    normed = pool(emb, windows, "mean", normalize=True)
    np.testing.assert_allclose(np.linalg.norm(normed[0]), 1.0, rtol=1e-6)
    assert np.array_equal(normed[1], emb[3])  # a one-window text keeps its row exactly


# ---------------------------------------------------------------------------------------------------- behaviour


def test_chunking_reads_beyond_the_max_length_and_truncation_does_not(tiny_body_path: str) -> None:
    texts = long_texts()
    same_start = [texts[0], texts[0].rsplit(" ", 6)[0] + " " + " ".join(NEGATIVE[:6])]  # only the tail differs
    truncated = fitted(tiny_body_path, long_text="truncate").predict_proba(same_start, as_numpy=True)
    np.testing.assert_array_equal(truncated[0], truncated[1])
    for pooling in ("mean", "max", "weighted"):
        chunked = fitted(tiny_body_path, long_text="chunk", chunk_pooling=pooling).predict_proba(same_start,
                                                                                                 as_numpy=True)
        assert np.abs(chunked[0] - chunked[1]).max() > 1e-4, pooling


def test_short_texts_are_unchanged_by_chunking(tiny_body_path: str) -> None:
    texts, _ = make_sentences(5, seed=3)
    np.testing.assert_array_equal(fitted(tiny_body_path, long_text="chunk").encode(texts),
                                  fitted(tiny_body_path, long_text="truncate").encode(texts))


@pytest.mark.parametrize("pooling", ["mean", "max"])
def test_onnx_predicts_long_texts_as_torch(tiny_body_path: str, tmp_path, pooling: str) -> None:
    pytest.importorskip("onnxruntime")
    model = fitted(tiny_body_path, long_text="chunk", chunk_overlap=4, chunk_pooling=pooling)
    texts = long_texts(8) + make_sentences(2)[0]
    onnx = SetFitModel.from_onnx(model.export_onnx(tmp_path / "onnx"))
    np.testing.assert_allclose(onnx.predict_proba(texts, batch_size=3), model.predict_proba(texts, as_numpy=True),
                               atol=1e-5)
    config = json.loads((tmp_path / "onnx" / "config_setfit_lite_onnx.json").read_text())
    assert (config["long_text"], config["chunk_overlap"], config["chunk_pooling"]) == ("chunk", 4, pooling)


def test_onnx_of_a_truncating_model_truncates(tiny_body_path: str, tmp_path) -> None:
    pytest.importorskip("onnxruntime")
    model = fitted(tiny_body_path, long_text="truncate")
    texts = long_texts(4)
    onnx = SetFitModel.from_onnx(model.export_onnx(tmp_path / "onnx"))
    np.testing.assert_allclose(onnx.predict_proba(texts), model.predict_proba(texts, as_numpy=True), atol=1e-5)


def test_static_tier_reads_the_whole_text(tiny_body_path: str, tmp_path) -> None:
    model = fitted(tiny_body_path, long_text="chunk")
    texts, labels = make_sentences(12, seed=0)
    static = SetFitModel.from_static(model.export_static(tmp_path / "static", texts, labels, pca_dims=16,
                                                         dtype="float32", refine_epochs=0))
    start = long_texts()[0].rsplit(" ", 6)[0]
    proba = static.predict_proba([start + " " + " ".join(POSITIVE[:6]), start + " " + " ".join(NEGATIVE[:6])])
    assert np.abs(proba[0] - proba[1]).max() > 1e-4


def test_save_and_load_keep_the_setting(tiny_body_path: str, tmp_path) -> None:
    model = fitted(tiny_body_path, long_text="chunk", chunk_overlap=5, chunk_pooling="weighted")
    model.save_pretrained(tmp_path / "m")
    loaded = SetFitModel.from_pretrained(tmp_path / "m", max_length=MAX_LENGTH)
    assert loaded.chunking == Chunking("chunk", 5, "weighted")
    texts = long_texts(4)
    np.testing.assert_array_equal(loaded.predict_proba(texts, as_numpy=True), model.predict_proba(texts, as_numpy=True))
    assert SetFitModel.from_pretrained(tmp_path / "m", chunk_pooling="max").chunking.chunk_pooling == "max"


def test_a_saved_model_without_the_setting_truncates(tiny_body_path: str, tmp_path) -> None:
    fitted(tiny_body_path).save_pretrained(tmp_path / "m")
    config_path = tmp_path / "m" / "config_setfit_lite.json"
    config = json.loads(config_path.read_text())
    for name in ("long_text", "chunk_overlap", "chunk_pooling"):
        config.pop(name)
    config_path.write_text(json.dumps(config))
    manifest = tmp_path / "m" / "manifest.json"
    manifest.unlink()  # an older save: rewrite the manifest for the edited config
    from setfit_lite.serialization import write_manifest

    write_manifest(tmp_path / "m")
    assert SetFitModel.from_pretrained(tmp_path / "m").chunking.long_text == "truncate"


@pytest.mark.parametrize(("options", "error"), [
    ({"long_text": "split"}, ValueError), ({"long_text": 1}, TypeError), ({"chunk_overlap": -1}, ValueError),
    ({"chunk_overlap": 2.5}, TypeError), ({"chunk_pooling": "sum"}, ValueError),
])
def test_invalid_settings_raise(tiny_body_path: str, options: dict, error: type) -> None:
    name = next(iter(options))
    with pytest.raises(error, match=name):
        SetFitModel.from_pretrained(tiny_body_path, max_length=MAX_LENGTH, **options)


def test_training_on_long_texts_fits_the_head_on_pooled_windows(tiny_body_path: str) -> None:
    from setfit_lite import Trainer, TrainingArguments

    texts = long_texts(8) + [" ".join([t] * 30) for t in make_sentences(2)[0]]  # > 64 positions when whole
    labels = ["positive" if i % 2 == 0 else "negative" for i in range(8)] + make_sentences(2)[1]
    model = SetFitModel.from_pretrained(tiny_body_path, long_text="chunk", chunk_overlap=2)
    args = TrainingArguments(num_epochs=(1, 2), batch_size=(4, 4), max_steps=2, max_length=MAX_LENGTH,
                             label_anchors="off", show_progress_bar=False)
    Trainer(model=model, args=args, train_dataset={"text": texts, "label": labels}).train()
    assert model.predict_proba(texts, as_numpy=True).shape == (len(texts), 2)
    assert np.abs(np.diff(model.encode(texts[:2]), axis=0)).max() > 0


def test_a_prompt_without_room_for_text_is_refused_before_training(tiny_body_path: str) -> None:
    """A prompt as long as the window leaves no text in it: the trainer says so before the body trains."""
    import torch

    from setfit_lite import Trainer, TrainingArguments

    texts, labels = make_sentences(12, seed=0)
    model = SetFitModel.from_pretrained(tiny_body_path, max_length=MAX_LENGTH, long_text="chunk",
                                        prompt=" ".join(FILLER * 2) + " : ")  # 26 tokens
    with pytest.raises(ValueError) as embedding:
        model.encode(texts[:1])
    before = {name: value.clone() for name, value in model.model_body.state_dict().items()}
    args = TrainingArguments(num_epochs=(1, 1), max_steps=3, label_anchors="off", show_progress_bar=False)
    with pytest.raises(ValueError, match="no room for text") as training:
        Trainer(model=model, args=args, train_dataset={"text": texts, "label": labels}).train()
    assert str(training.value) == str(embedding.value)
    assert all(torch.equal(value, model.model_body.state_dict()[name]) for name, value in before.items())


def test_end_to_end_training_reads_first_windows_as_the_docs_say(tiny_body_path: str, monkeypatch) -> None:
    """``end_to_end=True`` trains body and head on each text's first window (not pooled windows), which
    docs/long_documents.md states as the exception to fitting the head on pooled embeddings."""
    from setfit_lite import Trainer, TrainingArguments
    from setfit_lite.training import modules

    seen: list[tuple[int, ...]] = []
    forward = modules.ClassifierModule.forward

    def recording(self, input_ids, attention_mask, labels):
        seen.append(tuple(input_ids.shape))
        return forward(self, input_ids, attention_mask, labels)

    monkeypatch.setattr(modules.ClassifierModule, "forward", recording)
    texts = long_texts(8)  # 26 words: two windows each
    labels = ["positive" if i % 2 == 0 else "negative" for i in range(8)]
    model = SetFitModel.from_pretrained(tiny_body_path, max_length=MAX_LENGTH, long_text="chunk",
                                        use_differentiable_head=True)
    assert all(len(ids) > MAX_LENGTH for ids in model.tokenize(texts))
    args = TrainingArguments(num_epochs=(1, 1), batch_size=(4, 4), max_steps=2, end_to_end=True,
                             label_anchors="off", show_progress_bar=False)
    Trainer(model=model, args=args, train_dataset={"text": texts, "label": labels}).train()
    assert seen and all(shape == (4, MAX_LENGTH) for shape in seen)  # one first window a text
    doc = (Path(__file__).resolve().parents[1] / "docs" / "long_documents.md").read_text(encoding="utf-8")
    assert "`end_to_end=True`" in doc and "**first window**" in doc
