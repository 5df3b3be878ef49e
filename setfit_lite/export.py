"""Export a trained SetFitModel to one ONNX graph (token ids to class probabilities) and run it with onnxruntime.

The exported folder holds ``model.onnx`` (inputs ``input_ids`` and ``attention_mask``, int64 of shape
(batch, sequence); output ``probabilities``, float32 of shape (batch, len(labels)), columns in ``labels``
order), the tokenizer files, ``config_setfit_lite_onnx.json`` and an integrity manifest. A calibrated model's
temperature is in the config (``calibration_temperature``) and applied to the graph's probabilities by
``OnnxSetFitModel`` with the rule every tier applies (``setfit_lite.inference.temper``). With
``quantize="int8"`` the weights are dynamically quantised to int8 and ``model.onnx`` is the quantised graph
(the float32 graph is not kept).

The head becomes graph operations: LogisticRegression (plain, one-vs-rest or multi-output) from its fitted
``coef_``/``intercept_``, reproducing scikit-learn's ``predict_proba``, and a ``TorchHead`` through its own
forward. Other heads cannot be exported.

A model that chunks long texts (``long_text="chunk"``, see ``setfit_lite.chunking``) is exported with a second
output, ``embedding`` (the text embedding the head reads), and the head alone as ``head.onnx`` (``embedding`` to
``probabilities``): ``OnnxSetFitModel`` embeds each window with the first graph, pools the windows of a text as the
torch model does (``setfit_lite.chunking.pool``) and runs the head graph on the pooled embeddings. The config records
the setting (``long_text``, ``chunk_overlap``, ``chunk_pooling``, ``normalize_embeddings``).
"""

from __future__ import annotations

import importlib
import os
import threading
import warnings
import weakref
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from .chunking import Chunking, affixes, pool, split_windows
from .inference import Predictor, TokenizerFile, length_sorted_batches, tokenize_texts, with_prompt
from .parallel import default_workers, run_pieces
from .params import check_param
from .serialization import (
    atomic_update_directory,
    check_output_path,
    load_json,
    refuse_pickles,
    save_json,
    verify_manifest,
    write_manifest,
)
from .serialization.manifest import is_inside
from .serialization.validate import (
    ModelFormatError,
    check_count,
    check_labels,
    check_temperature,
    check_type,
    check_version,
    temperature_field,
)
from .signal_stack import kept_signal_stack
from .verbosity import filter_log_records
from .version import __version__

__all__ = ["ONNX_CONFIG_NAME", "ONNX_MODEL_NAME", "OnnxSetFitModel", "export_onnx"]

ONNX_CONFIG_NAME = "config_setfit_lite_onnx.json"
ONNX_MODEL_NAME = "model.onnx"
ONNX_FORMAT_VERSION = 1
QUANTIZE_OPTIONS = (None, "int8", "int8-static")
INPUT_NAMES = ("input_ids", "attention_mask")
OUTPUT_NAME = "probabilities"
EMBEDDING_NAME = "embedding"  # the second output of a chunking model's graph, and its head graph's input
HEAD_MODEL_NAME = "head.onnx"
# onnxruntime.quantization logs these to the root logger on every call
_ORT_PREPROCESS_ADVICE = ("Please consider to run pre-processing", "Please consider pre-processing")


def _require(module: str) -> ModuleType:
    """Import an optional dependency of the ``onnx`` extra, or fail saying how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"ONNX export and inference need {module.split('.')[0]}: "
                          'pip install "setfit_lite[onnx]"') from exc


# ------------------------------------------------------------------------------------------------ head graphs


def _build_graph(model: Any) -> Any:
    """A torch module ``(input_ids, attention_mask) -> probabilities`` for the fitted ``model``."""
    import torch
    from torch import nn

    from .heads import SklearnHead, TorchHead
    from .heads.linear import linear_head_spec

    class LinearProba(nn.Module):
        """``predict_proba`` of a LogisticRegression-family head from its fitted coefficients.

        kind: "binary" (sigmoid p -> [1 - p, p]), "softmax" (multinomial), "normalized_sigmoid" (one-vs-rest:
        sigmoids divided by their row sum) or "sigmoid" (independent labels). Output columns are then scattered
        to class ids (classes absent from training get zeros, as ``SklearnHead.predict_proba``).
        """

        def __init__(self, spec: dict[str, Any]) -> None:
            super().__init__()
            self.kind = spec["kind"]
            self.register_buffer("weight", torch.as_tensor(np.asarray(spec["weight"]), dtype=torch.float32))
            self.register_buffer("bias", torch.as_tensor(np.asarray(spec["bias"]), dtype=torch.float32))
            constant = spec.get("constant")
            self.has_constant = constant is not None
            if self.has_constant:
                self.register_buffer("constant_mask", torch.as_tensor(np.isfinite(constant)))
                self.register_buffer("constant", torch.as_tensor(np.nan_to_num(constant), dtype=torch.float32))
            columns = np.asarray(spec["columns"])
            n_out = 2 if self.kind == "binary" else len(columns)
            scatter = np.zeros((n_out, spec["num_classes"]), dtype=np.float32)
            scatter[np.arange(n_out), columns[:n_out]] = 1.0
            self.register_buffer("scatter", torch.as_tensor(scatter))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            z = x @ self.weight.T + self.bias
            if self.kind == "softmax":
                return torch.softmax(z, dim=-1) @ self.scatter
            p = torch.sigmoid(z)
            if self.has_constant:
                p = torch.where(self.constant_mask, self.constant, p)
            if self.kind == "binary":
                p = torch.cat([1 - p, p], dim=-1)
            elif self.kind == "normalized_sigmoid":
                total = p.sum(dim=-1, keepdim=True)
                p = p / torch.where(total == 0, torch.ones_like(total), total)
            return p @ self.scatter

    class TorchProba(nn.Module):
        def __init__(self, head: TorchHead) -> None:
            super().__init__()
            self.head = head

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            logits = self.head(x.to(self.head.linear.weight.dtype)).float()
            return torch.sigmoid(logits) if self.head.multi_label else torch.softmax(logits, dim=-1)

    class Graph(nn.Module):
        def __init__(self, body: nn.Module, head: nn.Module, normalize: bool, with_embedding: bool) -> None:
            super().__init__()
            self.body, self.head, self.normalize, self.with_embedding = body, head, normalize, with_embedding

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> Any:
            emb = self.body({"input_ids": input_ids, "attention_mask": attention_mask})["sentence_embedding"]
            if self.normalize:
                emb = nn.functional.normalize(emb, dim=-1)
            emb = emb.float()
            return (self.head(emb), emb) if self.with_embedding else self.head(emb)

    head = model.model_head
    if isinstance(head, TorchHead):
        head_module: nn.Module = TorchProba(head)
    elif isinstance(head, SklearnHead):
        head_module = LinearProba(linear_head_spec(head))
    else:
        raise ValueError(f"cannot export a {type(head).__name__} head to ONNX: only SklearnHead (LogisticRegression) "
                         "and TorchHead heads can be written as graph operations")
    return Graph(model.model_body, head_module, model.normalize_embeddings, model.chunking.enabled).to(model.device)


# ----------------------------------------------------------------------------------------------------- export


def export_onnx(model: Any, path: str | os.PathLike, quantize: str | None = None, opset: int = 17,
                calibration_texts: Sequence[str] | None = None) -> Path:
    """Write ``model`` (a fitted SetFitModel) as an ONNX folder at ``path`` (atomically); return the folder.

    ``quantize="int8"`` dynamically quantises the weights (smaller and usually faster on CPU, slightly less
    accurate); ``"int8-static"`` also quantises the inputs of the weight matmuls with scales calibrated on
    ``calibration_texts`` (e.g. the training texts; QDQ format, which OpenVINO runs with int8 kernels too).
    ``model.onnx`` is then the quantised graph. Raises ValueError for heads with no graph form, and for a ``path``
    that is, contains or lies inside the folder ``model`` was loaded from (before anything is read or written).
    """
    check_output_path(path, getattr(model, "source_folder", None), suffix="onnx")
    if quantize not in QUANTIZE_OPTIONS:
        raise ValueError(f"quantize must be one of {QUANTIZE_OPTIONS}, got {quantize!r}")
    check_param("opset", opset)
    if quantize == "int8-static" and not calibration_texts:
        raise ValueError("quantize='int8-static' needs calibration_texts (e.g. the training texts) to calibrate "
                         "the activation scales")
    model._check_fitted()
    _require("onnx")
    if quantize is not None:
        _require("onnxruntime")
    import torch

    graph = _build_graph(model)
    body_was_training = model.model_body.training
    head_was_training = getattr(model.model_head, "training", False)
    graph.eval()
    tokenizer = model.model_body.tokenizer
    example = model.collate(model.tokenize(["an example text to trace", "short"]))  # padded: traces the mask
    inputs = tuple(example[name].to(model.device) for name in INPUT_NAMES)
    dynamic = {name: {0: "batch", 1: "sequence"} for name in INPUT_NAMES}
    chunked = model.chunking.enabled
    outputs = [OUTPUT_NAME, EMBEDDING_NAME] if chunked else [OUTPUT_NAME]
    try:
        with atomic_update_directory(path) as tmp:
            fp32_path = tmp / (ONNX_MODEL_NAME if quantize is None else "model-fp32.onnx")
            with torch.no_grad(), warnings.catch_warnings():
                # tracing notes shapes read as Python values; the example batch is padded, so the traced
                # graph keeps the attention-mask path, and batch and sequence axes are declared dynamic
                warnings.simplefilter("ignore", torch.jit.TracerWarning)
                warnings.filterwarnings("ignore", message="Exporting aten::index operator")  # non-negative here
                torch.onnx.export(graph, inputs, str(fp32_path), input_names=list(INPUT_NAMES),
                                  output_names=outputs, dynamic_axes={**dynamic, **{n: {0: "batch"} for n in outputs}},
                                  opset_version=opset, do_constant_folding=True, dynamo=False)
                if chunked:  # the head alone, run on pooled window embeddings
                    torch.onnx.export(graph.head, (torch.zeros(2, model.embedding_dim, device=model.device),),
                                      str(tmp / HEAD_MODEL_NAME), input_names=[EMBEDDING_NAME],
                                      output_names=[OUTPUT_NAME],
                                      dynamic_axes={EMBEDDING_NAME: {0: "batch"}, OUTPUT_NAME: {0: "batch"}},
                                      opset_version=opset, do_constant_folding=True, dynamo=False)
            if quantize == "int8":
                from onnxruntime.quantization import QuantType, quantize_dynamic

                # per-channel scales: on SST-2/MiniLM, 96.8 % agreement with fp32 against 92.6 % per tensor, at the
                # same speed (benchmarks/README.md)
                # onnxruntime advises pre-processing the graph on every call; users cannot act on it (the graph is
                # quantised as exported, and measured so)
                with filter_log_records("", *_ORT_PREPROCESS_ADVICE):
                    quantize_dynamic(str(fp32_path), str(tmp / ONNX_MODEL_NAME), weight_type=QuantType.QInt8,
                                     per_channel=True)
                fp32_path.unlink()
            elif quantize == "int8-static":
                assert calibration_texts is not None
                _quantize_static(model, fp32_path, tmp / ONNX_MODEL_NAME, calibration_texts)
                fp32_path.unlink()
            tokenizer.save_pretrained(str(tmp))
            save_json(tmp / ONNX_CONFIG_NAME, {
                "format_version": ONNX_FORMAT_VERSION,
                "setfit_lite_version": __version__,
                "labels": model.labels,
                "multi_label": model.multi_label,
                "prompt": model.prompt,
                "max_seq_length": model.model_body.max_seq_length,
                "quantized": quantize,
                "opset": opset,
                "model_file": ONNX_MODEL_NAME,
                "inputs": list(INPUT_NAMES),
                "output": OUTPUT_NAME,
                **model.chunking.to_config(),
                "normalize_embeddings": model.normalize_embeddings,
                "head_file": HEAD_MODEL_NAME if chunked else None,
                **temperature_field(model.calibration_temperature),  # applied to the graph's output
            })
            write_manifest(tmp)
    finally:
        model.model_body.train(body_was_training)
        if hasattr(model.model_head, "train"):
            model.model_head.train(head_was_training)
    return Path(path)


def _quantize_static(model: Any, fp32_path: Path, out_path: Path, texts: Sequence[str], batch_size: int = 16) -> None:
    """Static int8 (QDQ) of the weight matmuls: per-channel int8 weights, uint8 activations with min-max scales
    calibrated on ``texts``. The attention's activation-by-activation matmuls stay fp32 (quantising them too cost
    6 more points of agreement with fp32 on SST-2, benchmarks/README.md)."""
    import onnx
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    from .data import validate_texts

    token_ids = model.tokenize(validate_texts(texts))

    class Batches(CalibrationDataReader):
        def __init__(self) -> None:
            self.batches = iter(length_sorted_batches(token_ids, batch_size))

        def get_next(self) -> dict[str, np.ndarray] | None:
            idx = next(self.batches, None)
            if idx is None:
                return None
            batch = model.collate([token_ids[i] for i in idx])
            return {name: batch[name].numpy().astype(np.int64) for name in INPUT_NAMES}

    prepared = fp32_path.with_name("model-prepared.onnx")
    with filter_log_records("", *_ORT_PREPROCESS_ADVICE):
        quant_pre_process(str(fp32_path), str(prepared), skip_symbolic_shape=True)
        graph = onnx.load(str(prepared), load_external_data=False).graph
        weights = {init.name for init in graph.initializer}
        activation_matmuls = [node.name for node in graph.node
                              if node.op_type == "MatMul" and not weights.intersection(node.input)]
        quantize_static(str(prepared), str(out_path), Batches(), quant_format=QuantFormat.QDQ, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                        op_types_to_quantize=["MatMul"], nodes_to_exclude=activation_matmuls)
    prepared.unlink()


# -------------------------------------------------------------------------------------------------- inference


class OpenVinoSession:
    """The exported ONNX graph compiled by OpenVINO for the CPU, behind onnxruntime's ``run`` signature."""

    def __init__(self, model_file: str, num_threads: int | None = None, precision: str = "f32") -> None:
        try:
            import openvino as ov
        except ImportError as exc:
            raise ImportError('runtime="openvino" needs OpenVINO: pip install "setfit_lite[openvino]"') from exc
        # f32 execution: on CPUs with AMX, OpenVINO would otherwise run fp32 graphs in bf16 (probabilities off
        # by ~1e-3); int8 graphs keep their quantised matmuls either way.
        # OpenVINO 2026's default on this CPU class is bf16 too: with AVX512-BF16 and no AMX (AMD EPYC) the CPU
        # plugin reports INFERENCE_PRECISION_HINT bfloat16 (``python -m benchmarks.precision openvino``).
        config: dict[str, Any] = {"INFERENCE_PRECISION_HINT": precision}
        if num_threads is not None:
            config["INFERENCE_NUM_THREADS"] = int(num_threads)
        with kept_signal_stack():  # OpenVINO swaps the thread's signal stack (setfit_lite.signal_stack)
            compiled = ov.Core().compile_model(model_file, "CPU", config)
        # the compiled model and an infer request per calling thread (a request is not thread-safe)
        self._parts: dict[str, Any] = {"compiled": compiled, "local": threading.local()}
        # freed inside kept_signal_stack (freeing puts back the stack OpenVINO found, maybe freed since) when the
        # session is collected, or at interpreter exit while modules still work: a __del__ run during module
        # teardown found kept_signal_stack set to None ("Exception ignored in OpenVinoSession.__del__")
        weakref.finalize(self, _free_openvino_parts, self._parts, kept_signal_stack)

    @property
    def compiled(self) -> Any:
        """OpenVINO's ``CompiledModel``."""
        return self._parts["compiled"]

    def run(self, output_names: list[str], feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        local = self._parts["local"]
        request = getattr(local, "request", None)
        if request is None:
            request = local.request = self.compiled.create_infer_request()
        result = request.infer(feeds)
        return [np.array(result[self.compiled.output(name)]) for name in output_names]


def _free_openvino_parts(parts: dict[str, Any], keep_stack: Any) -> None:
    """Drop an :class:`OpenVinoSession`'s compiled model and requests with the thread's signal stack kept
    (``keep_stack`` is :func:`kept_signal_stack`, bound when the session was made)."""
    with keep_stack():
        parts.clear()


class _TransformersTokenizer:
    """A tokenizer without ``tokenizer.json`` (not a fast one), through transformers, as :class:`TokenizerFile`."""

    def __init__(self, folder: Path, max_length: int | None) -> None:
        from transformers import AutoTokenizer

        self.tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        self.max_length = max_length

    def encode(self, texts: list[str], add_special_tokens: bool = True) -> list[list[int]]:
        if not add_special_tokens:
            return self.tokenizer(texts, add_special_tokens=False)["input_ids"]
        return tokenize_texts(self.tokenizer, texts, None, self.max_length, truncate=self.max_length is not None)

    def pad(self, token_ids: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
        batch = self.tokenizer.pad({"input_ids": token_ids}, return_tensors="np")
        return tuple(np.asarray(batch[name], dtype=np.int64) for name in INPUT_NAMES)  # type: ignore[return-value]


def _load_tokenizer(folder: Path, max_length: int | None) -> TokenizerFile | _TransformersTokenizer:
    """The export's tokenizer: its ``tokenizer.json`` run by the ``tokenizers`` library (the ids the body's
    tokenizer gives: tested on MiniLM and the tests' body), without transformers, whose import alone took 1-4 s
    of the 3.3-4.4 s cold start of ``setfit-lite predict`` here. A folder without one goes through transformers."""
    if (folder / "tokenizer.json").is_file():
        return TokenizerFile.from_folder(folder, max_length=max_length)
    return _TransformersTokenizer(folder, max_length)


def validate_onnx_config(folder: Path) -> dict[str, Any]:
    """The export's config, every field checked (ModelFormatError naming the file and the field): the format
    version, labels (distinct), ``multi_label``, ``prompt``, ``max_seq_length``, ``quantized``, the graph file (in
    the folder) and the input and output names this reader feeds and reads."""
    config_path = folder / ONNX_CONFIG_NAME
    config = load_json(config_path, what="setfit_lite ONNX config")
    check_version(config, "format_version", ONNX_FORMAT_VERSION, config_path)
    check_labels(config, "labels", config_path)
    check_type(config, "multi_label", config_path, bool)
    check_type(config, "prompt", config_path, str, optional=True)
    max_length = check_type(config, "max_seq_length", config_path, int, optional=True, what="a positive int")
    if max_length is not None and max_length < 1:
        raise ModelFormatError(config_path, "max_seq_length", f"must be a positive int, got {max_length}")
    if config.get("quantized") not in QUANTIZE_OPTIONS:
        raise ModelFormatError(config_path, "quantized", f"must be one of {QUANTIZE_OPTIONS}, got "
                                                         f"{config.get('quantized')!r}")
    model_file = check_type(config, "model_file", config_path, str)
    if not is_inside(model_file) or not (folder / model_file).is_file():
        raise ModelFormatError(config_path, "model_file", f"{model_file!r} is not a file in {folder}")
    if check_type(config, "inputs", config_path, list) != list(INPUT_NAMES):
        raise ModelFormatError(config_path, "inputs", f"is {config['inputs']}; this setfit_lite feeds "
                                                      f"{list(INPUT_NAMES)}")
    if check_type(config, "output", config_path, str) != OUTPUT_NAME:
        raise ModelFormatError(config_path, "output", f"is {config['output']!r}; this setfit_lite reads "
                                                      f"{OUTPUT_NAME!r}")
    check_temperature(config, config_path)
    try:
        chunking = Chunking.from_config(config)
    except (TypeError, ValueError) as error:
        raise ModelFormatError(config_path, "long_text/chunk_overlap/chunk_pooling", str(error)) from None
    check_type(config, "normalize_embeddings", config_path, bool, optional=True)
    head_file = check_type(config, "head_file", config_path, str, optional=True)
    if chunking.enabled and (head_file is None or not is_inside(head_file) or not (folder / head_file).is_file()):
        raise ModelFormatError(config_path, "head_file", f"{head_file!r} is not a file in {folder} (a chunking "
                                                         "export needs its head graph)")
    return config


def _check_graph(session: Any, folder: Path, config: dict[str, Any]) -> None:
    """The graph's inputs and output must be those the config names, with one output column per label."""
    config_path, graph_file = folder / ONNX_CONFIG_NAME, config["model_file"]
    if isinstance(session, OpenVinoSession):
        inputs = [name for port in session.compiled.inputs for name in port.get_names()]
        outputs = {name: port.get_partial_shape() for port in session.compiled.outputs for name in port.get_names()}
        width = outputs[OUTPUT_NAME][1] if OUTPUT_NAME in outputs else None
        columns = width.get_length() if width is not None and width.is_static else None
    else:
        inputs = [node.name for node in session.get_inputs()]
        outputs = {node.name: node.shape for node in session.get_outputs()}
        columns = outputs[OUTPUT_NAME][1] if OUTPUT_NAME in outputs and len(outputs[OUTPUT_NAME]) == 2 else None
    if sorted(inputs) != sorted(INPUT_NAMES) or OUTPUT_NAME not in outputs:
        raise ModelFormatError(folder / graph_file, "inputs/outputs", f"are {inputs} / {sorted(outputs)}, but "
                                                                      f"{config_path.name} names {config['inputs']} / "
                                                                      f"{config['output']!r}")
    if isinstance(columns, int):  # a symbolic width (a graph exported otherwise) is not checked
        check_count(config_path, "labels", len(config["labels"]), columns,
                    f"{graph_file}'s output {OUTPUT_NAME!r} (columns)")


def _session(model_file: str, runtime: str, num_threads: int | None) -> Any:
    """An OpenVINO or onnxruntime session of ``model_file``; onnxruntime's runs a batch on one intra-op thread
    without spinning (the batches run in parallel, see ``OnnxSetFitModel.load``)."""
    if runtime == "openvino":
        return OpenVinoSession(model_file, num_threads)
    ort = _require("onnxruntime")
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(model_file, sess_options=options, providers=["CPUExecutionProvider"])


class OnnxSetFitModel(Predictor):
    """An exported SetFitModel run by onnxruntime or OpenVINO: ``predict``/``predict_proba`` as ``SetFitModel``'s."""

    def __init__(self, session: Any, tokenizer: Any, config: dict[str, Any], num_workers: int = 1) -> None:
        self.session, self.tokenizer, self.config = session, tokenizer, config
        self.num_workers = num_workers  # batches run at once (onnxruntime: each on one intra-op thread)
        self.labels: list = list(config["labels"])
        self.multi_label = bool(config["multi_label"])
        self.prompt: str = config.get("prompt") or ""
        self.max_seq_length: int | None = config.get("max_seq_length")
        self.calibration_temperature = float(config.get("calibration_temperature") or 1.0)
        self.chunking = Chunking.from_config(config)
        self.head_session: Any = None  # the head graph of a chunking export (set by load)

    @classmethod
    def load(cls, path: str | os.PathLike, num_threads: int | None = None,
             runtime: str = "onnxruntime") -> OnnxSetFitModel:
        """Load a folder written by ``export_onnx``, checking its manifest and refusing pickles.

        ``num_threads``: threads a prediction uses (default: the CPUs this process may use). With onnxruntime,
        that many batches run at once, each on one intra-op thread without spinning (``setfit_lite.parallel``:
        on 2 cores this gave 230 int8 texts/s where onnxruntime's own two spinning threads gave 142); OpenVINO
        gets it as ``INFERENCE_NUM_THREADS`` and runs one batch at a time. ``runtime``: ``"onnxruntime"``, or
        ``"openvino"`` (Intel's runtime reads the same ONNX graph; ``pip install "setfit_lite[openvino]"``).
        """
        num_threads = check_param("num_threads", num_threads)
        folder = Path(path)
        refuse_pickles(folder)
        verify_manifest(folder)
        config = validate_onnx_config(folder)
        chunked = Chunking.from_config(config).enabled
        tokenizer = _load_tokenizer(folder, None if chunked else config.get("max_seq_length"))
        if runtime not in ("onnxruntime", "openvino"):
            raise ValueError(f"runtime must be 'onnxruntime' or 'openvino', got {runtime!r}")
        session = _session(str(folder / config["model_file"]), runtime, num_threads)
        workers = 1 if runtime == "openvino" else default_workers() if num_threads is None else num_threads
        _check_graph(session, folder, config)
        model = cls(session, tokenizer, config, num_workers=workers)
        if chunked:
            model.head_session = _session(str(folder / config["head_file"]), runtime, num_threads)
        return model

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        """Token ids of ``texts`` (prompt prepended, truncated to ``max_seq_length``), unpadded."""
        return self.tokenizer.encode(with_prompt(texts, self.prompt))

    def _proba_chunk(self, texts: list[str], batch_size: int, show_progress_bar: bool | None = None) -> np.ndarray:
        """Probabilities of validated texts (no progress bar: ``show_progress_bar`` is ignored)."""
        token_ids = self.tokenize(texts)
        if not self.chunking.enabled or self.max_seq_length is None:
            return self._run_graph(token_ids, batch_size, OUTPUT_NAME)
        prefix, suffix = affixes(self.tokenizer.encode, self.prompt)
        windows = split_windows(token_ids, self.max_seq_length, self.chunking.chunk_overlap, prefix, suffix)
        embeddings = self._run_graph(windows.token_ids, batch_size, EMBEDDING_NAME)
        pooled = pool(embeddings, windows, self.chunking.chunk_pooling,
                      normalize=bool(self.config.get("normalize_embeddings")))
        return np.asarray(self.head_session.run([OUTPUT_NAME], {EMBEDDING_NAME: pooled})[0], dtype=np.float32)

    def _run_graph(self, token_ids: list[list[int]], batch_size: int, output: str) -> np.ndarray:
        """The graph's ``output`` for each row of ``token_ids`` (float32), batched by length."""
        batches = length_sorted_batches(token_ids, batch_size)

        def run(idx: np.ndarray) -> np.ndarray:
            feeds = dict(zip(INPUT_NAMES, self.tokenizer.pad([token_ids[i] for i in idx])))
            return self.session.run([output], feeds)[0]

        results = run_pieces(run, batches, self.num_workers)
        out = np.empty((len(token_ids), results[0].shape[1] if results else len(self.labels)), dtype=np.float32)
        for idx, result in zip(batches, results):
            out[idx] = result
        return out
