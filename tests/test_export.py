"""ONNX export: one graph from token ids to probabilities, matching the torch model; loading, safety, CLI."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from setfit_lite import SetFitModel, Trainer, TrainingArguments  # noqa: E402
from setfit_lite.heads import SklearnHead, TorchHead  # noqa: E402
from setfit_lite.runtime.onnx import ONNX_CONFIG_NAME, ONNX_MODEL_NAME, OnnxSetFitModel  # noqa: E402

FAST = {"num_epochs": (3, 4), "body_learning_rate": 1e-2, "show_progress_bar": False, "backend": "cpu", "seed": 3}
TEXTS = ["great wonderful superb film", "awful dull terrible movie", "the plot was nice", "boring sad acting",
         "the movie was a really good story", "so very bad", "plot", "acting was fine but the story was weak"]


@pytest.fixture(scope="module")
def lr_model(tiny_body_path):
    """The one trained model: default LR head, labels given in non-sorted order."""
    from conftest import make_sentences

    texts, labels = make_sentences(12, seed=0)
    model = SetFitModel.from_pretrained(tiny_body_path, labels=["positive", "negative"])
    Trainer(model=model, args=TrainingArguments(**FAST), train_dataset={"text": texts, "label": labels}).train()
    return model


@pytest.fixture(scope="module")
def embeddings(lr_model):
    from conftest import make_sentences

    texts, labels = make_sentences(12, seed=0)
    return lr_model.encode(texts), np.array([y == "positive" for y in labels])


def with_head(base, head, labels, **kwargs):
    """A model sharing ``base``'s trained body with another fitted head (heads fitted on embeddings are cheap)."""
    return SetFitModel(base.model_body, model_head=head, labels=labels, **kwargs)


def eval_texts():
    from conftest import make_sentences

    return make_sentences(10, seed=1)[0] + TEXTS


def assert_matches(model, path, atol=1e-4):
    onnx_model = SetFitModel.from_onnx(path)
    texts = eval_texts()
    expected = model.class_proba(texts)  # (n, L) for every head, as the exported tiers give it
    got = onnx_model.predict_proba(texts, batch_size=5)
    assert got.dtype == np.float32 and got.shape == expected.shape
    np.testing.assert_allclose(got, expected, atol=atol)
    pred, onnx_pred = model.predict(texts), onnx_model.predict(texts)
    assert np.array_equal(np.asarray(pred), np.asarray(onnx_pred))
    return onnx_model


def test_fp32_lr_head_matches_torch(lr_model, tmp_path):
    out = lr_model.export_onnx(tmp_path / "onnx")
    files = {p.name for p in out.iterdir()}
    assert {ONNX_MODEL_NAME, ONNX_CONFIG_NAME, "manifest.json", "tokenizer.json"} <= files
    config = json.loads((out / ONNX_CONFIG_NAME).read_text())
    assert config["labels"] == ["positive", "negative"] and config["quantized"] is None
    assert config["multi_label"] is False and config["opset"] == 17
    onnx_model = assert_matches(lr_model, out)
    assert onnx_model.labels == ["positive", "negative"]
    preds = onnx_model.predict(TEXTS[:2])
    assert preds == ["positive", "negative"]
    assert onnx_model.predict(TEXTS[0]) == "positive"
    np.testing.assert_allclose(onnx_model.predict_proba(TEXTS[0]), lr_model.predict_proba(TEXTS[0]), atol=1e-4)
    # the graph has dynamic batch and sequence axes, and the declared input/output names
    session = onnx_model.session
    assert [i.name for i in session.get_inputs()] == ["input_ids", "attention_mask"]
    # a chunking model's graph also gives the text embedding its head graph reads (setfit_lite.runtime.chunking)
    assert [o.name for o in session.get_outputs()] == ["probabilities", "embedding"][:1 + lr_model.chunking.enabled]
    assert all(isinstance(d, str) for i in session.get_inputs() for d in i.shape)


def test_int8_export_is_smaller_and_agrees(lr_model, tmp_path):
    fp32 = lr_model.export_onnx(tmp_path / "fp32")
    int8 = lr_model.export_onnx(tmp_path / "int8", quantize="int8")
    assert (int8 / ONNX_MODEL_NAME).stat().st_size < (fp32 / ONNX_MODEL_NAME).stat().st_size
    assert sorted(p.name for p in int8.glob("*.onnx")) == ["head.onnx"] * lr_model.chunking.enabled + [ONNX_MODEL_NAME]
    assert json.loads((int8 / ONNX_CONFIG_NAME).read_text())["quantized"] == "int8"
    texts = eval_texts()
    onnx_model = OnnxSetFitModel.load(int8, num_threads=1)
    agreement = np.mean([a == b for a, b in zip(onnx_model.predict(texts), lr_model.predict(texts))])
    assert agreement >= 0.8
    with pytest.raises(ValueError, match="quantize"):
        lr_model.export_onnx(tmp_path / "bad", quantize="int4")


def test_multilabel_one_vs_rest_matches(lr_model, embeddings, tmp_path):
    X, positive = embeddings
    multi_hot = np.stack([positive, ~positive], axis=1).astype(np.int64)
    multi_hot[:3] = 1  # some rows carry both labels
    head = SklearnHead(num_classes=2, multi_label=True, multi_target_strategy="one-vs-rest").fit(X, multi_hot)
    model = with_head(lr_model, head, ["pos", "neg"])
    onnx_model = assert_matches(model, model.export_onnx(tmp_path / "ml"))
    assert onnx_model.multi_label and onnx_model.predict(TEXTS).dtype == np.int64


@pytest.mark.parametrize("case", ["multi-output", "multiclass", "absent-class"])
def test_other_lr_heads_match(lr_model, embeddings, tmp_path, case):
    from sklearn.linear_model import LogisticRegression

    X, positive = embeddings
    if case == "multi-output":
        y = np.stack([positive, ~positive, np.arange(len(X)) % 2 == 0], axis=1).astype(np.int64)
        head = SklearnHead(num_classes=3, multi_label=True, multi_target_strategy="multi-output").fit(X, y)
        labels = ["a", "b", "c"]
    else:
        y = np.where(positive, 0, 1 + np.arange(len(X)) % 2)  # three classes: softmax
        k = 3 if case == "multiclass" else 4  # class 3 never seen: a column of zeros
        head = SklearnHead(LogisticRegression(max_iter=1000), num_classes=k).fit(X, y)
        labels = ["a", "b", "c", "d"][:k]
    model = with_head(lr_model, head, labels, normalize_embeddings=case == "multiclass")
    assert_matches(model, model.export_onnx(tmp_path / case))


def test_torch_head_matches(lr_model, embeddings, tmp_path):
    X, positive = embeddings
    head = TorchHead(X.shape[1], 2, hidden_size=8).fit(X, positive.astype(np.int64), epochs=5, seed=0)
    model = with_head(lr_model, head, ["negative", "positive"])
    head.train()
    exported = model.export_onnx(tmp_path / "torch")
    assert head.training and not model.model_body.training  # export restores train/eval modes
    assert_matches(model, exported)
    ml_head = TorchHead(X.shape[1], 2, multi_label=True).fit(X, np.stack([positive, ~positive], 1), epochs=3, seed=0)
    ml_model = with_head(lr_model, ml_head, ["x", "y"])
    assert_matches(ml_model, ml_model.export_onnx(tmp_path / "torch-ml"))


def test_unsupported_head_is_refused(lr_model, embeddings, tmp_path):
    from sklearn.ensemble import RandomForestClassifier

    X, positive = embeddings
    head = SklearnHead(RandomForestClassifier(n_estimators=3, random_state=0), num_classes=2).fit(X, positive)
    model = with_head(lr_model, head, ["negative", "positive"])
    with pytest.raises(ValueError, match="RandomForestClassifier"):
        model.export_onnx(tmp_path / "rf")
    assert not (tmp_path / "rf").exists()
    with pytest.raises(ValueError, match="no fitted head"):
        SetFitModel(lr_model.model_body).export_onnx(tmp_path / "unfitted")


def test_tampered_folder_and_pickles_are_refused(lr_model, tmp_path):
    out = lr_model.export_onnx(tmp_path / "onnx")
    config_path = out / ONNX_CONFIG_NAME
    original = config_path.read_text()
    config_path.write_text(original.replace('"positive"', '"negative!"'))
    with pytest.raises(ValueError, match="changed"):
        OnnxSetFitModel.load(out)
    config_path.write_text(original)
    OnnxSetFitModel.load(out)
    (out / "extra.pkl").write_bytes(b"\x80\x04N.")
    with pytest.raises(ValueError, match="pickle"):
        SetFitModel.from_onnx(out)


def test_cli_export_and_predict(lr_model, tmp_path, capsys):
    from setfit_lite.cli import main

    lr_model.save_pretrained(tmp_path / "model")
    assert main(["export", str(tmp_path / "model"), str(tmp_path / "onnx")]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["exported_to"] == str(tmp_path / "onnx")
    data = tmp_path / "texts.txt"
    data.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    assert main(["predict", str(tmp_path / "onnx"), str(data), "--proba"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert [r["text"] for r in rows] == TEXTS
    assert [r["label"] for r in rows] == lr_model.predict(TEXTS)
    assert list(rows[0]["proba"]) == ["positive", "negative"]
    assert main(["export", str(tmp_path / "missing"), str(tmp_path / "x")]) == 2


OPENVINO = """
import json, sys
from setfit_lite import SetFitModel
from setfit_lite.cli import main

fp32, int8, data = sys.argv[1:4]
texts = json.loads(sys.argv[4])
model = SetFitModel.from_onnx(fp32, runtime="openvino", num_threads=1)
int8_model = SetFitModel.from_onnx(int8, runtime="openvino")
try:
    SetFitModel.from_onnx(fp32, runtime="tensorrt")
except ValueError as error:
    refused = str(error)
result = {"proba": model.predict_proba(texts, batch_size=5).tolist(), "labels": model.predict(texts),
          "int8": int8_model.predict(texts), "refused": refused}
assert main(["predict", fp32, data, "--runtime", "openvino"]) == 0
print(json.dumps(result))
"""


def test_openvino_runtime_matches_torch(lr_model, tmp_path):
    """In a child process: OpenVINO's threads in the pytest process make a later in-process SIGINT test crash."""
    pytest.importorskip("openvino")
    from test_torch_free import run_python

    lr_model.export_onnx(tmp_path / "fp32")
    lr_model.export_onnx(tmp_path / "int8", quantize="int8")
    data = tmp_path / "texts.txt"
    data.write_text("\n".join(TEXTS[:3]) + "\n", encoding="utf-8")
    texts = eval_texts()
    lines = run_python(OPENVINO, str(tmp_path / "fp32"), str(tmp_path / "int8"), str(data),
                       json.dumps(texts)).stdout.splitlines()
    result = json.loads(lines[-1])
    np.testing.assert_allclose(result["proba"], lr_model.predict_proba(texts), atol=1e-4)
    assert result["labels"] == lr_model.predict(texts)
    assert np.mean(np.array(result["int8"]) == np.array(lr_model.predict(texts))) >= 0.9
    assert [json.loads(line)["label"] for line in lines[:-1]] == lr_model.predict(TEXTS[:3])
    assert result["refused"] == "runtime must be one of 'auto', 'onnxruntime', 'openvino', got 'tensorrt'"


def test_export_into_an_existing_folder_keeps_the_users_files(lr_model, tmp_path):
    out = tmp_path / "mine"
    (out / "notes").mkdir(parents=True)
    (out / "keep.txt").write_text("mine")
    (out / "notes" / "n.md").write_text("notes")
    lr_model.export_onnx(out)
    lr_model.export_onnx(out, quantize="int8")  # a second export replaces the first one's files only
    assert (out / "keep.txt").read_text() == "mine" and (out / "notes" / "n.md").read_text() == "notes"
    assert json.loads((out / ONNX_CONFIG_NAME).read_text())["quantized"] == "int8"
    # the int8 files replaced the fp32 ones: the folder holds what an int8 export into an empty folder holds
    # (int8 accuracy itself is test_int8_export_is_smaller_and_agrees's: its error depends on the CPU's int8 path)
    fresh = lr_model.export_onnx(tmp_path / "fresh", quantize="int8")
    assert (out / ONNX_MODEL_NAME).read_bytes() == (fresh / ONNX_MODEL_NAME).read_bytes()
    assert sorted(p.name for p in out.iterdir()) == sorted([p.name for p in fresh.iterdir()] + ["keep.txt", "notes"])
    (tmp_path / "a-file").write_text("x")
    with pytest.raises(FileExistsError, match="a-file"):
        lr_model.export_onnx(tmp_path / "a-file")
    assert (tmp_path / "a-file").read_text() == "x"


def test_int8_static_export_is_calibrated_qdq(lr_model, tmp_path):
    """``quantize="int8-static"``: QDQ graph (weights and the weight matmuls' inputs quantised, scales calibrated on
    the given texts; the attention's activation matmuls stay fp32), agreeing with the torch model."""
    import onnx
    from conftest import make_sentences

    with pytest.raises(ValueError, match="calibration_texts"):
        lr_model.export_onnx(tmp_path / "x", quantize="int8-static")
    assert not (tmp_path / "x").exists()
    out = lr_model.export_onnx(tmp_path / "q", quantize="int8-static", calibration_texts=make_sentences(12, 0)[0])
    assert {p.name for p in out.iterdir()} >= {ONNX_MODEL_NAME, ONNX_CONFIG_NAME, "manifest.json"}
    assert not list(out.glob("model-*.onnx"))  # intermediate graphs removed
    graph = onnx.load(str(out / ONNX_MODEL_NAME)).graph
    ops = [node.op_type for node in graph.node]
    assert ops.count("QuantizeLinear") > 0 and ops.count("DequantizeLinear") > ops.count("QuantizeLinear")
    producers = {o: node.op_type for node in graph.node for o in node.output}
    weights = {i.name for i in graph.initializer}
    float_matmuls = [n for n in graph.node if n.op_type == "MatMul"
                     and not any(producers.get(i) == "DequantizeLinear" or i in weights for i in n.input)]
    assert float_matmuls  # the attention's score and context matmuls
    assert json.loads((out / ONNX_CONFIG_NAME).read_text())["quantized"] == "int8-static"
    onnx_model = SetFitModel.from_onnx(out)
    texts = eval_texts()
    assert np.mean(np.array(onnx_model.predict(texts)) == np.array(lr_model.predict(texts))) >= 0.8
    np.testing.assert_allclose(onnx_model.predict_proba(texts), lr_model.predict_proba(texts), atol=0.15)


# the operators quantisation brings into a graph (dynamic: DynamicQuantizeLinear -> MatMulInteger; static: QDQ)
QUANTIZATION_OPS = {"DynamicQuantizeLinear", "MatMulInteger", "QuantizeLinear", "DequantizeLinear", "QLinearMatMul"}
ROW_SUMS = """
import json, sys
import numpy as np
from setfit_lite import SetFitModel

texts = json.loads(sys.argv[1])
sums = {}
for folder in sys.argv[2:]:
    model = SetFitModel.from_onnx(folder, runtime="openvino", inference_precision="fp32", num_threads=1)
    sums[folder] = model.predict_proba(texts).sum(axis=1).tolist()
print(json.dumps(sums))
"""


def test_int8_keeps_a_truncating_models_head_fp32(lr_model, embeddings, tmp_path):
    """A ``long_text="truncate"`` model's one graph holds its head: quantisation leaves the head fp32 (as a chunking
    model's ``head.onnx``), so single-label rows sum to 1 as in fp32 and the folder loads on every runtime."""
    import onnx
    from conftest import make_sentences

    X, positive = embeddings
    y = np.where(positive, 0, 1 + np.arange(len(X)) % 2)  # three classes: a softmax, scattered to class ids
    multi_hot = np.stack([positive, ~positive], axis=1).astype(np.int64)
    multi_hot[:3] = 1
    models = {
        "single": with_head(lr_model, SklearnHead(num_classes=3).fit(X, y), ["a", "b", "c"], long_text="truncate"),
        "multi": with_head(lr_model, SklearnHead(num_classes=2, multi_label=True,
                                                 multi_target_strategy="one-vs-rest").fit(X, multi_hot),
                           ["pos", "neg"], long_text="truncate"),
    }
    texts, calibration = eval_texts(), make_sentences(12, seed=0)[0]
    folders = {}
    for kind, model in models.items():
        for quantize in ["int8", "int8-static"]:
            out = model.export_onnx(tmp_path / f"{kind}-{quantize}", quantize=quantize,
                                    calibration_texts=calibration if quantize == "int8-static" else None)
            graph = onnx.load(str(out / ONNX_MODEL_NAME)).graph
            ops = [node.op_type for node in graph.node]
            head_ops = {node.op_type for node in graph.node if node.name.startswith("/head/")}
            assert QUANTIZATION_OPS & set(ops) and head_ops, (kind, quantize)  # the body is quantised
            assert not QUANTIZATION_OPS & head_ops, (kind, quantize, head_ops)
            proba = SetFitModel.from_onnx(out, runtime="onnxruntime").predict_proba(texts)
            np.testing.assert_allclose(proba, model.class_proba(texts), atol=0.15)
            if kind == "single":
                np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-5)
                assert proba.min() > 0  # no probability rounded to zero
            folders[str(out)] = kind
    if importlib.util.find_spec("openvino") is not None:  # in a child: see test_openvino_runtime_matches_torch
        from test_torch_free import run_python

        sums = json.loads(run_python(ROW_SUMS, json.dumps(texts), *folders).stdout.splitlines()[-1])
        assert sorted(sums) == sorted(folders)  # every folder loads
        for folder in (folder for folder, kind in folders.items() if kind == "single"):
            np.testing.assert_allclose(sums[folder], 1.0, atol=1e-5, err_msg=folder)


AMX_CPU = "processor\t: 0\nflags\t\t: avx2 avx512f amx_tile amx_bf16 amx_int8\n"
BF16_CPU = "processor\t: 0\nflags\t\t: avx2 avx512f avx512_vnni avx512_bf16\n"
AVX2_CPU = "processor\t: 0\nflags\t\t: avx2 fma\n"


@pytest.mark.parametrize(("cpuinfo", "requested", "runtime", "expected"), [
    (AMX_CPU, "auto", "openvino", "bf16"), (BF16_CPU, "auto", "openvino", "bf16"),
    (AVX2_CPU, "auto", "openvino", "fp32"), ("flags : avx2 avx512f avx512bw", "auto", "openvino", "fp32"),
    (AMX_CPU, "fp32", "openvino", "fp32"), (AMX_CPU, "f32", "openvino", "fp32"),
    (AVX2_CPU, "bf16", "openvino", "bf16"), (AMX_CPU, "auto", "onnxruntime", "fp32")])
def test_openvino_precision_is_bf16_only_where_the_cpu_has_it(monkeypatch, cpuinfo, requested, runtime, expected):
    from setfit_lite.runtime.onnx import resolve_inference_precision

    monkeypatch.delenv("SETFIT_LITE_INFERENCE_PRECISION", raising=False)
    assert resolve_inference_precision(requested, runtime, cpuinfo=cpuinfo) == expected


def test_openvino_precision_env_unknown_cpu_and_bad_values(monkeypatch, tmp_path):
    import trainers.cpu_flags
    from setfit_lite.runtime.onnx import resolve_inference_precision

    monkeypatch.setenv("SETFIT_LITE_INFERENCE_PRECISION", "fp32")  # pins what "auto" means, even with AMX
    assert resolve_inference_precision("auto", cpuinfo=AMX_CPU) == "fp32"
    assert resolve_inference_precision("bf16", cpuinfo=AMX_CPU) == "bf16"  # a forced value wins over it
    monkeypatch.delenv("SETFIT_LITE_INFERENCE_PRECISION")
    monkeypatch.setattr(trainers.cpu_flags, "CPUINFO_PATH", tmp_path / "missing")  # flags unknown: fp32
    assert resolve_inference_precision("auto") == "fp32"
    with pytest.raises(ValueError, match="inference_precision"):
        resolve_inference_precision("half")
    with pytest.raises(ValueError, match="needs runtime=\"openvino\""):
        resolve_inference_precision("bf16", "onnxruntime")


OPENVINO_PRECISION = """
import json, os, sys
from pathlib import Path
import trainers.cpu_flags
from setfit_lite.runtime.onnx import OnnxSetFitModel

folder, texts, fake = sys.argv[1], json.loads(sys.argv[2]), Path(sys.argv[3])
os.environ.pop("SETFIT_LITE_INFERENCE_PRECISION", None)
trainers.cpu_flags.CPUINFO_PATH = fake
out = {}
for name, cpuinfo, requested in (("bf16_cpu", sys.argv[4], "auto"), ("avx2_cpu", sys.argv[5], "auto"),
                                 ("forced_fp32", sys.argv[4], "fp32")):
    fake.write_text(cpuinfo)
    model = OnnxSetFitModel.load(folder, runtime="openvino", inference_precision=requested)
    out[name] = {"precision": model.inference_precision,
                 "hint": model.session.compiled.get_property("INFERENCE_PRECISION_HINT").get_type_name(),
                 "proba": model.predict_proba(texts).tolist()}
try:
    OnnxSetFitModel.load(folder, runtime="openvino", inference_precision="half")
except ValueError as error:
    out["refused"] = str(error)
print(json.dumps(out))
"""


def test_openvino_runs_bf16_on_a_bf16_cpu_and_fp32_otherwise(lr_model, tmp_path):
    """Faked CPU flags in a child process: "auto" compiles with bf16 on an AVX512-BF16 CPU (probabilities within
    bf16's 1e-2 of fp32, same labels), f32 on an AVX2 CPU, and a forced fp32 is honoured on a bf16 CPU."""
    pytest.importorskip("openvino")
    from test_torch_free import run_python

    lr_model.export_onnx(tmp_path / "fp32")
    texts = eval_texts()
    lines = run_python(OPENVINO_PRECISION, str(tmp_path / "fp32"), json.dumps(texts), str(tmp_path / "cpuinfo"),
                       BF16_CPU, AVX2_CPU).stdout.splitlines()
    out = json.loads(lines[-1])
    assert (out["bf16_cpu"]["precision"], out["bf16_cpu"]["hint"]) == ("bf16", "bf16")
    assert (out["avx2_cpu"]["precision"], out["avx2_cpu"]["hint"]) == ("fp32", "f32")
    assert (out["forced_fp32"]["precision"], out["forced_fp32"]["hint"]) == ("fp32", "f32")
    reference = np.asarray(lr_model.predict_proba(texts))
    np.testing.assert_allclose(out["avx2_cpu"]["proba"], reference, atol=1e-4)
    np.testing.assert_allclose(out["bf16_cpu"]["proba"], reference, atol=3e-2)
    assert np.mean(np.argmax(out["bf16_cpu"]["proba"], 1) == reference.argmax(1)) >= 0.9
    assert "inference_precision" in out["refused"]


@pytest.mark.parametrize(("requested", "quantized", "precision", "cpuinfo", "installed", "expected"), [
    ("auto", None, "auto", AMX_CPU, True, "openvino"),  # the fp32 graph on AMX tiles: OpenVINO's bf16
    ("auto", "int8", "auto", AMX_CPU, True, "onnxruntime"),  # dynamic int8 is onnxruntime's own operators
    ("auto", "int8-static", "auto", AMX_CPU, True, "onnxruntime"),  # OpenVINO: 2.6-9x slower on a single text
    ("auto", None, "auto", BF16_CPU, True, "onnxruntime"),  # no AMX: not measured faster there
    ("auto", None, "auto", AVX2_CPU, True, "onnxruntime"),
    ("auto", None, "auto", AMX_CPU, False, "onnxruntime"),  # OpenVINO not installed
    ("auto", None, "fp32", AMX_CPU, True, "onnxruntime"),  # fp32 forced: OpenVINO's lead was bf16's
    ("auto", None, "bf16", AVX2_CPU, True, "openvino"),  # only OpenVINO runs bf16
    ("onnxruntime", None, "auto", AMX_CPU, True, "onnxruntime"), ("openvino", "int8", "auto", AVX2_CPU, True,
                                                                  "openvino")])
def test_auto_runtime_is_openvino_only_for_an_fp32_graph_on_amx(monkeypatch, requested, quantized, precision,
                                                                cpuinfo, installed, expected):
    import importlib.util

    from setfit_lite.runtime import onnx as onnx_runtime

    monkeypatch.delenv("SETFIT_LITE_INFERENCE_PRECISION", raising=False)
    real = importlib.util.find_spec
    found = object() if installed else None
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: found if name == "openvino" else real(name, *a))
    assert onnx_runtime.resolve_runtime(requested, quantized, precision, cpuinfo=cpuinfo) == expected


def test_auto_runtime_follows_the_precision_environment_and_refuses_unknown_names(monkeypatch):
    import importlib.util

    from setfit_lite.runtime.onnx import resolve_runtime

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: object() if name == "openvino" else real(name, *a))
    monkeypatch.setenv("SETFIT_LITE_INFERENCE_PRECISION", "fp32")  # pins "auto" to fp32: onnxruntime
    assert resolve_runtime("auto", None, "auto", cpuinfo=AMX_CPU) == "onnxruntime"
    monkeypatch.setenv("SETFIT_LITE_INFERENCE_PRECISION", "auto")
    assert resolve_runtime("auto", None, "auto", cpuinfo=AMX_CPU) == "openvino"
    with pytest.raises(ValueError, match="runtime must be one of 'auto', 'onnxruntime', 'openvino', got 'ort'"):
        resolve_runtime("ort")


OPENVINO_AUTO = """
import json, os, sys
from pathlib import Path
import trainers.cpu_flags
from setfit_lite import SetFitModel

fp32, int8, texts, fake = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), Path(sys.argv[4])
os.environ.pop("SETFIT_LITE_INFERENCE_PRECISION", None)
trainers.cpu_flags.CPUINFO_PATH = fake
out = {}
for name, folder, cpuinfo in (("fp32_amx", fp32, sys.argv[5]), ("int8_amx", int8, sys.argv[5]),
                              ("fp32_avx2", fp32, sys.argv[6])):
    fake.write_text(cpuinfo)
    model = SetFitModel.from_onnx(folder)  # runtime="auto", the default
    out[name] = {"runtime": model.runtime, "precision": model.inference_precision,
                 "labels": model.predict(texts)}
print(json.dumps(out))
"""


def test_default_runtime_runs_an_fp32_graph_with_openvino_on_amx(lr_model, tmp_path):
    """Faked CPU flags in a child process (OpenVINO's threads stay out of pytest's): with no runtime given, an fp32
    export runs under OpenVINO in bf16 on a CPU with AMX, and under onnxruntime without AMX; an int8 export runs
    under onnxruntime either way; the labels are the torch model's."""
    pytest.importorskip("openvino")
    from test_torch_free import run_python

    lr_model.export_onnx(tmp_path / "fp32")
    lr_model.export_onnx(tmp_path / "int8", quantize="int8")
    texts = eval_texts()
    out = json.loads(run_python(OPENVINO_AUTO, str(tmp_path / "fp32"), str(tmp_path / "int8"), json.dumps(texts),
                                str(tmp_path / "cpuinfo"), AMX_CPU, AVX2_CPU).stdout.splitlines()[-1])
    assert (out["fp32_amx"]["runtime"], out["fp32_amx"]["precision"]) == ("openvino", "bf16")
    assert (out["int8_amx"]["runtime"], out["int8_amx"]["precision"]) == ("onnxruntime", "fp32")
    assert (out["fp32_avx2"]["runtime"], out["fp32_avx2"]["precision"]) == ("onnxruntime", "fp32")
    assert np.mean(np.array(out["fp32_amx"]["labels"]) == np.array(lr_model.predict(texts))) >= 0.9
    assert out["fp32_avx2"]["labels"] == lr_model.predict(texts)
