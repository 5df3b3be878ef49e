"""The ONNX writer: a trained SetFitModel as one ONNX graph (token ids to class probabilities), optionally
quantised to int8 (dynamic, or static with scales calibrated on texts). Needs torch and the ``onnx`` extra; the
folder it writes is read by `setfit_lite.runtime.onnx.OnnxSetFitModel` (the folder's layout: see there)."""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ..config.params import check_param
from ..data import validate_texts
from ..heads import SklearnHead, TorchHead
from ..heads.linear import linear_head_spec
from ..runtime.onnx import (
    EMBEDDING_NAME,
    HEAD_MODEL_NAME,
    INPUT_NAMES,
    ONNX_CONFIG_NAME,
    ONNX_FORMAT_VERSION,
    ONNX_MODEL_NAME,
    OUTPUT_NAME,
    QUANTIZE_OPTIONS,
    require,
)
from ..runtime.predictor import length_sorted_batches, threshold_rule_field
from ..serialization import (
    atomic_update_directory,
    check_can_update,
    check_output_path,
    save_json,
    write_manifest,
)
from ..serialization.validate import temperature_field
from ..verbosity import filter_log_records
from ..version import __version__

__all__ = ["export_onnx"]

# onnxruntime.quantization logs these to the root logger on every call
_ORT_PREPROCESS_ADVICE = ("Please consider to run pre-processing", "Please consider pre-processing")
# the scope torch.onnx names the nodes of `_build_graph`'s ``Graph.head`` by ("/head/MatMul", "/head/Softmax"); a
# fused node keeps its name's scope ("/head/MatMul/MatMulAddFusion")
_HEAD_SCOPE = "/head/"

# ------------------------------------------------------------------------------------------------ head graphs


def _build_graph(model: Any) -> Any:
    """A torch module ``(input_ids, attention_mask) -> probabilities`` for the fitted ``model``."""
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
    """Write a fitted model as an ONNX folder (one graph from token ids to probabilities, its tokenizer, a config
    and a manifest), atomically; `SetFitModel.export_onnx` calls it.

    Args:
        model: A fitted [`SetFitModel`][setfit_lite.modeling.SetFitModel].
        path: The folder to write.
        quantize: None (fp32); `"int8"` dynamically quantises the body's weights (smaller and usually faster on
            CPU, slightly less accurate); `"int8-static"` also quantises the inputs of the body's weight matmuls
            with scales calibrated on `calibration_texts` (QDQ format, which OpenVINO runs with int8 kernels too).
            The head stays fp32 either way (its probabilities sum to 1 as fp32 ones do).
        opset: The ONNX opset, in the range the installed torch's exporter writes (7 to 20 with torch 2.13).
        calibration_texts: The texts `"int8-static"` calibrates on (such as the training texts).

    Returns:
        The folder written.

    Raises:
        ValueError: A head with no graph form, an unknown `quantize`, an `opset` outside the range the installed
            torch exports, `"int8-static"` without texts (or texts without it), or a `path` that is, contains or
            lies inside the folder `model` was loaded from (checked before anything is read or written).
        FileExistsError: `path` holds a file of a name the export writes that setfit_lite did not write (checked
            before the trace).

    Example:
        ```python
        from setfit_lite.exporting.onnx import export_onnx

        export_onnx(model, "my-model-int8", quantize="int8")
        ```
    """
    check_output_path(path, getattr(model, "source_folder", None), suffix="onnx")
    if quantize not in QUANTIZE_OPTIONS:
        raise ValueError(f"quantize must be one of {QUANTIZE_OPTIONS}, got {quantize!r}")
    _check_opset(opset)
    if quantize == "int8-static" and not calibration_texts:
        raise ValueError("quantize='int8-static' needs calibration_texts (e.g. the training texts) to calibrate "
                         "the activation scales")
    if quantize != "int8-static" and calibration_texts is not None:
        raise ValueError(f"calibration_texts are read only by quantize='int8-static' (got quantize={quantize!r}): "
                         "pass them with it, or leave them out")
    if calibration_texts is not None:  # checked here, not after the trace
        calibration_texts = validate_texts(calibration_texts)
    model._check_fitted()
    check_can_update(path)  # a file of the user's the export would replace: refused before the trace
    require("onnx")
    if quantize is not None:
        require("onnxruntime")

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
                import onnx
                from onnxruntime.quantization import QuantType, quantize_dynamic

                # per-channel scales: on SST-2/MiniLM, 96.8 % agreement with fp32 against 92.6 % per tensor, at the
                # same speed (benchmarks/README.md)
                # onnxruntime advises pre-processing the graph on every call; users cannot act on it (the graph is
                # quantised as exported, and measured so)
                head_nodes = _head_nodes(onnx.load(str(fp32_path), load_external_data=False).graph)
                with filter_log_records("", *_ORT_PREPROCESS_ADVICE):
                    quantize_dynamic(str(fp32_path), str(tmp / ONNX_MODEL_NAME), weight_type=QuantType.QInt8,
                                     per_channel=True, nodes_to_exclude=head_nodes)
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
                **threshold_rule_field(model),  # a multi-label probability of 0.5 decided as the model does
            })
            write_manifest(tmp)
    finally:
        model.model_body.train(body_was_training)
        if hasattr(model.model_head, "train"):
            model.model_head.train(head_was_training)
    return Path(path)


def _opset_range() -> tuple[int, int | None]:
    """The lowest and highest ONNX opset the installed torch's TorchScript exporter (the one `export_onnx` runs,
    ``dynamo=False``) writes; the highest is None where this torch does not say (then torch's export decides)."""
    try:
        from torch.onnx import _constants
    except ImportError:  # a private module: a torch without it is left to refuse an opset itself
        return 7, None
    low = getattr(_constants, "ONNX_MIN_OPSET", 7)
    high = getattr(_constants, "ONNX_TORCHSCRIPT_EXPORTER_MAX_OPSET", getattr(_constants, "ONNX_MAX_OPSET", None))
    return int(low), None if high is None else int(high)


def _check_opset(opset: Any) -> None:
    """TypeError unless ``opset`` is an integer; ValueError naming it and the range of `_opset_range` unless it lies
    there (torch would otherwise trace the model first, then fail)."""
    check_param("opset", opset)
    low, high = _opset_range()
    if opset < low or (high is not None and opset > high):
        span = f"{low} to {high}" if high is not None else f"{low} or more"
        raise ValueError(f"opset={opset} is not an ONNX opset this torch ({torch.__version__}) exports: give one "
                         f"from {span} (the default is 17)")


def _quantize_static(model: Any, fp32_path: Path, out_path: Path, texts: Sequence[str], batch_size: int = 16) -> None:
    """Static int8 (QDQ) of the body's weight matmuls: per-channel int8 weights, uint8 activations with min-max
    scales calibrated on ``texts``. The attention's activation-by-activation matmuls stay fp32 (quantising them too
    cost 6 more points of agreement with fp32 on SST-2, benchmarks/README.md), and so does the head (`_head_nodes`)."""
    import onnx
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    token_ids = model.tokenize(list(texts))

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
                        op_types_to_quantize=["MatMul"], nodes_to_exclude=activation_matmuls + _head_nodes(graph))
    prepared.unlink()


def _head_nodes(graph: Any) -> list[str]:
    """The names of the head's nodes in an exported graph (an ``onnx.GraphProto``), which quantisation leaves fp32,
    as in a chunking export's ``head.onnx``: quantised, the head's last matmul (scattering probabilities to class
    ids) rounds them to an 8-bit grid, so that rows no longer sum to 1 and small probabilities become zeros.

    Args:
        graph: The graph `export_onnx` traced (or onnxruntime's pre-processing of it, which keeps node names).

    Returns:
        The names of the nodes in the head's scope.

    Raises:
        RuntimeError: No node is in the head's scope (an exporter naming nodes otherwise): quantising would round
            the probabilities.
    """
    names = [node.name for node in graph.node if node.name.startswith(_HEAD_SCOPE)]
    if not names:
        raise RuntimeError(f"the traced graph has no node named in the head's scope {_HEAD_SCOPE!r} (torch "
                           f"{torch.__version__} names them otherwise?): cannot keep the head out of quantisation")
    return names
