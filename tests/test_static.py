"""The static tier (issue 22): a fine-tuned body distilled into static token embeddings in model2vec's format, a
head refitted on them, loading and predicting with numpy and tokenizers only."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import make_sentences
from test_torch_free import run_python

from setfit_lite import SetFitModel
from setfit_lite.exporting.static import zipf_weights
from setfit_lite.heads import build_head
from setfit_lite.heads.linear import linear_head_spec
from setfit_lite.runtime.static import EMBEDDINGS_KEY, STATIC_CONFIG_NAME, StaticSetFitModel, linear_proba

TEXTS = ["great wonderful superb film", "awful dull terrible movie", "the plot was nice", "boring sad acting",
         "zzzz qqqq", "great great great"]


@pytest.fixture(scope="module")
def fitted(tiny_body_path: str) -> SetFitModel:
    texts, labels = make_sentences(12, seed=0)
    model = SetFitModel.from_pretrained(tiny_body_path, labels=["positive", "negative"])
    head = model.new_head(2, multi_label=False)
    head.fit(model.encode(texts), model.label_ids(labels))
    model.model_head = head
    return model


@pytest.fixture(scope="module")
def exported(fitted: SetFitModel, tmp_path_factory: pytest.TempPathFactory) -> Path:
    texts, labels = make_sentences(12, seed=0)
    unlabeled = make_sentences(10, seed=5)[0]
    return fitted.export_static(tmp_path_factory.mktemp("static") / "static", texts, labels,
                                unlabeled_texts=unlabeled, pca_dims=16, dtype="float32", refine_epochs=0)


def expected_table(model: SetFitModel, pca_dims: int) -> np.ndarray:
    """model2vec's method written out: each token as [CLS] token [SEP] through the body, PCA, Zipf/SIF weights."""
    from sklearn.decomposition import PCA

    tok = model.model_body.tokenizer
    cls, sep = tok.cls_token_id, tok.sep_token_id
    emb = model.embed_tokens([[cls, i, sep] for i in range(len(tok))])
    table = PCA(n_components=pca_dims, svd_solver="full", random_state=0).fit_transform(emb)
    return table * zipf_weights(len(table), 1e-4)[:, None]


def test_static_folder_is_a_model2vec_model_with_the_fine_tuned_table(fitted: SetFitModel, exported: Path) -> None:
    from safetensors.numpy import load_file

    files = {p.name for p in exported.iterdir()}
    assert files == {"model.safetensors", "tokenizer.json", "config.json", STATIC_CONFIG_NAME,
                     "head_static.safetensors", "manifest.json"}
    table = load_file(str(exported / "model.safetensors"))[EMBEDDINGS_KEY]
    assert table.shape == (len(fitted.model_body.tokenizer), 16) and table.dtype == np.float32
    np.testing.assert_allclose(table, expected_table(fitted, 16), atol=1e-5)
    config = json.loads((exported / "config.json").read_text())
    assert config["model_type"] == "model2vec" and config["normalize"] is True and config["hidden_dim"] == 16
    ours = json.loads((exported / STATIC_CONFIG_NAME).read_text())
    assert ours["labels"] == ["positive", "negative"] and ours["refit_labels"] == "given"
    assert (ours["refit_texts"], ours["refit_unlabeled_texts"]) == (24, 20)


def test_model2vec_reads_the_body_and_encodes_as_we_do(exported: Path) -> None:
    model2vec = pytest.importorskip("model2vec")
    texts = [*TEXTS, ""]  # no tokens: zeros
    theirs = model2vec.StaticModel.from_pretrained(str(exported)).encode(texts)
    ours = StaticSetFitModel.load(exported).encode(texts)
    np.testing.assert_allclose(ours, theirs, atol=1e-6)
    assert np.all(ours[-1] == 0) and np.linalg.norm(ours[0]) == pytest.approx(1.0, abs=1e-6)


def test_head_is_refitted_on_the_static_embeddings(fitted: SetFitModel, exported: Path) -> None:
    """Predictions are those of a LogisticRegression fitted on the static embeddings of the given texts with their
    labels plus the unlabelled texts with the fine-tuned model's labels."""
    texts, labels = make_sentences(12, seed=0)
    unlabeled = make_sentences(10, seed=5)[0]
    static = SetFitModel.from_static(exported)
    y = np.concatenate([fitted.label_ids(labels), fitted.class_proba(unlabeled).argmax(1)])
    head = build_head(None, num_classes=2, multi_label=False)
    head.fit(static.encode(texts + unlabeled), y)
    eval_texts = make_sentences(8, seed=9)[0] + TEXTS
    np.testing.assert_allclose(static.predict_proba(eval_texts), head.predict_proba(static.encode(eval_texts)),
                               atol=1e-5)
    assert static.predict(TEXTS[:2]) == [["positive", "negative"][i] for i in head.predict_proba(
        static.encode(TEXTS[:2])).argmax(1)]
    assert static.predict(TEXTS[0]) in ("positive", "negative") and static.labels == ["positive", "negative"]
    # on its own training texts the static model mostly agrees with the labels it was fitted on
    assert np.mean(static.class_proba(texts + unlabeled).argmax(1) == y) >= 0.8


def test_multiclass_head_is_saved_as_fitted(tiny_body_path: str, tmp_path: Path) -> None:
    """A 3-class softmax head (sklearn's coef_ is Fortran-ordered) loads with the weights it was fitted with."""
    texts = make_sentences(12, seed=0)[0]
    labels = ["a", "b", "c"] * 8
    model = SetFitModel.from_pretrained(tiny_body_path, labels=["a", "b", "c"])
    head = model.new_head(3, multi_label=False)
    head.fit(model.encode(texts), model.label_ids(labels))
    model.model_head = head
    static = SetFitModel.from_static(model.export_static(tmp_path / "s", texts, labels, pca_dims=8))
    refit = build_head(None, num_classes=3, multi_label=False)
    refit.fit(static.encode(texts), model.label_ids(labels))
    assert static.head["kind"] == "softmax" and static.head["weight"].shape == (3, 8)
    np.testing.assert_allclose(static.head["weight"], refit.estimator.coef_, atol=1e-5)
    np.testing.assert_allclose(static.predict_proba(texts), refit.predict_proba(static.encode(texts)), atol=1e-5)


def test_refinement_pulls_text_embeddings_toward_the_fine_tuned_body(fitted: SetFitModel, exported: Path,
                                                                      tmp_path: Path) -> None:
    """``refine_epochs``: the table is trained so that the texts' static embeddings point where the body embeds
    them (after the same PCA); rows of tokens in none of the texts stay as distilled."""
    from sklearn.decomposition import PCA

    texts, labels = make_sentences(12, seed=0)
    unlabeled = make_sentences(10, seed=5)[0]
    refined = SetFitModel.from_static(fitted.export_static(tmp_path / "r", texts, labels, unlabeled_texts=unlabeled,
                                                           pca_dims=16, dtype="float32", refine_epochs=30))
    plain = SetFitModel.from_static(exported)
    tok = fitted.model_body.tokenizer
    pca = PCA(n_components=16, svd_solver="full", random_state=0).fit(
        fitted.embed_tokens([[tok.cls_token_id, i, tok.sep_token_id] for i in range(len(tok))]))
    target = pca.transform(fitted.encode(texts + unlabeled))
    target /= np.linalg.norm(target, axis=1, keepdims=True)

    def mean_cosine(static: StaticSetFitModel) -> float:
        return float(np.mean(np.sum(static.encode(texts + unlabeled) * target, axis=1)))

    assert mean_cosine(refined) > mean_cosine(plain) + 0.1
    used = {i for ids in plain.tokenize(texts + unlabeled) for i in ids}
    unused = [i for i in range(len(tok)) if i not in used]
    assert unused and np.array_equal(refined.embeddings[unused], plain.embeddings[unused])
    assert not np.allclose(refined.embeddings[sorted(used)], plain.embeddings[sorted(used)])
    assert json.loads((tmp_path / "r" / STATIC_CONFIG_NAME).read_text())["refine_epochs"] == 30


def test_teacher_labels_when_no_labels_are_given(fitted: SetFitModel, tmp_path: Path) -> None:
    texts = make_sentences(12, seed=0)[0]
    out = fitted.export_static(tmp_path / "s", texts, pca_dims=8)
    config = json.loads((out / STATIC_CONFIG_NAME).read_text())
    assert config["refit_labels"] == "teacher" and config["refit_unlabeled_texts"] == 0
    static = SetFitModel.from_static(out)
    head = build_head(None, num_classes=2, multi_label=False)
    head.fit(static.encode(texts), fitted.class_proba(texts).argmax(1))
    np.testing.assert_allclose(static.predict_proba(texts), head.predict_proba(static.encode(texts)), atol=1e-4)
    assert json.loads((out / "config.json").read_text())["embedding_dtype"] == "float16"


@pytest.mark.parametrize("case", ["multinomial", "ovr", "multilabel"])
def test_linear_proba_is_sklearns_predict_proba(case: str) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 6)).astype(np.float32)
    if case == "multilabel":
        y = (rng.random((40, 3)) > 0.5).astype(int)
        y[:, 2] = 1  # a constant label: its probability is the constant
        head = build_head(None, num_classes=3, multi_label=True, multi_target_strategy="one-vs-rest")
    else:
        y = rng.integers(0, 3, size=40)
        head = build_head(None, num_classes=4, multi_label=False,  # class 3 never seen: probability 0
                          multi_target_strategy="one-vs-rest" if case == "ovr" else None)
    head.fit(x, y)
    np.testing.assert_allclose(linear_proba(linear_head_spec(head), x), head.predict_proba(x), atol=1e-5)


def test_static_folder_safety(fitted: SetFitModel, exported: Path, tmp_path: Path) -> None:
    texts, labels = make_sentences(4, seed=0)
    out = tmp_path / "mine"
    (out / "notes").mkdir(parents=True)
    (out / "keep.txt").write_text("mine")
    fitted.export_static(out, texts, labels, pca_dims=8)
    fitted.export_static(out, texts, labels, pca_dims=4)  # replaces the first export's files only
    assert (out / "keep.txt").read_text() == "mine" and (out / "notes").is_dir()
    assert SetFitModel.from_static(out).embeddings.shape[1] == 4
    (out / "model.safetensors").write_bytes((out / "model.safetensors").read_bytes()[:-4] + b"\0\0\0\0")
    with pytest.raises(ValueError, match="model.safetensors"):
        SetFitModel.from_static(out)
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(FileExistsError):
        fitted.export_static(tmp_path / "a-file", texts, labels)
    assert (tmp_path / "a-file").read_text() == "x"
    with pytest.raises(ValueError, match=r"exported with export_static.* SetFitModel\.from_static\("):
        SetFitModel.from_pretrained(exported)
    (exported / "extra.pkl").write_bytes(b"\x80\x04N.")
    try:
        with pytest.raises(ValueError, match="pickle"):
            SetFitModel.from_static(exported)
    finally:
        (exported / "extra.pkl").unlink()


HEAVY = ("torch", "transformers", "sentence_transformers", "sklearn", "onnxruntime")
STATIC_PREDICT = f"""
import json, sys
from setfit_lite.runtime.static import StaticSetFitModel
from setfit_lite.cli import main

model = StaticSetFitModel.load(sys.argv[1])
print(json.dumps(model.predict_proba(json.loads(sys.argv[2])).tolist()))
assert main(["predict", sys.argv[1], sys.argv[3]]) == 0
print("loaded:", ",".join(sorted(n for n in {HEAVY!r} if n in sys.modules)))
"""


def test_static_predicts_with_numpy_and_tokenizers_only(fitted: SetFitModel, exported: Path, tmp_path: Path) -> None:
    """Neither loading nor ``setfit-lite predict`` on a static folder imports torch, transformers or sklearn."""
    data = tmp_path / "texts.txt"
    data.write_text("\n".join(TEXTS[:4]) + "\n", encoding="utf-8")
    lines = run_python(STATIC_PREDICT, str(exported), json.dumps(TEXTS), str(data)).stdout.splitlines()
    assert lines[-1] == "loaded: "
    static = SetFitModel.from_static(exported)
    np.testing.assert_allclose(json.loads(lines[0]), static.predict_proba(TEXTS), atol=1e-6)
    assert [json.loads(line)["label"] for line in lines[1:-1]] == static.predict(TEXTS[:4])


def test_cli_export_static(fitted: SetFitModel, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from setfit_lite.cli import main

    fitted.save_pretrained(tmp_path / "model")
    texts, labels = make_sentences(12, seed=0)
    (tmp_path / "train.jsonl").write_text("".join(json.dumps({"text": t, "label": y}) + "\n"
                                                  for t, y in zip(texts, labels)), encoding="utf-8")
    (tmp_path / "more.txt").write_text("\n".join(make_sentences(10, seed=5)[0]) + "\n", encoding="utf-8")
    assert main(["export", str(tmp_path / "model"), str(tmp_path / "static"), "--static", "--data",
                 str(tmp_path / "train.jsonl"), "--unlabeled-data", str(tmp_path / "more.txt"), "--pca-dims",
                 "16"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["format"] == "static" and result["exported_to"] == str(tmp_path / "static")
    config = json.loads((tmp_path / "static" / STATIC_CONFIG_NAME).read_text())
    assert (config["refit_texts"], config["refit_unlabeled_texts"], config["refit_labels"]) == (24, 20, "given")
    assert main(["predict", str(tmp_path / "static"), str(tmp_path / "more.txt")]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    more = make_sentences(10, seed=5)[0]
    assert [r["label"] for r in rows] == SetFitModel.from_static(tmp_path / "static").predict(more)
    assert main(["export", str(tmp_path / "model"), str(tmp_path / "s2"), "--static"]) == 2
    assert "needs --data" in capsys.readouterr().err


def test_encode_with_proba_is_encode_and_class_proba_in_one_pass(exported: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import setfit_lite.runtime.predictor as predictor

    monkeypatch.setattr(predictor, "STREAM_CHUNK", 640)  # several chunks, each cut into threads' slices
    base = make_sentences(20, seed=7)[0] + TEXTS
    texts = [f"{base[i % len(base)]} number {i}" for i in range(1500)]
    model = StaticSetFitModel.load(exported, num_threads=2)
    model.calibration_temperature = 1.7  # the probabilities are tempered as class_proba tempers them
    embeddings, proba = model.encode_with_proba(texts, batch_size=32)
    assert embeddings.dtype == proba.dtype == np.float32
    np.testing.assert_array_equal(embeddings, model.encode(texts))
    np.testing.assert_array_equal(proba, model.class_proba(texts))
    assert not np.allclose(proba, StaticSetFitModel.load(exported).class_proba(texts))  # temperature 1.7 applied
    with pytest.raises(TypeError, match="pass \\[text\\]"):
        model.encode_with_proba("one text")
    with pytest.raises(ValueError, match="row 2"):
        model.encode_with_proba(["a", "b", ""])


def test_config_says_pca_only_where_it_was_applied(fitted: SetFitModel, exported: Path, tmp_path: Path) -> None:
    """model2vec's config.json records `apply_pca`: the dims asked for were written even when the table has fewer
    dimensions and no PCA ran (the table is the body's width)."""
    assert json.loads((exported / "config.json").read_text())["apply_pca"] == 16
    texts, labels = make_sentences(12, seed=0)
    wide = fitted.export_static(tmp_path / "no_pca", texts, labels, pca_dims=4096, dtype="float32", refine_epochs=0)
    config = json.loads((wide / "config.json").read_text())
    assert config["apply_pca"] is None and config["hidden_dim"] == fitted.embedding_dim
