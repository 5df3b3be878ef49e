"""The ONNX runtime: a folder of one ONNX graph (token ids to class probabilities), written by
`setfit_lite.exporting.onnx.export_onnx`, run with onnxruntime or OpenVINO (no torch).

The exported folder holds ``model.onnx`` (inputs ``input_ids`` and ``attention_mask``, int64 of shape
(batch, sequence); output ``probabilities``, float32 of shape (batch, len(labels)), columns in ``labels``
order), the tokenizer files, ``config_setfit_lite_onnx.json`` and an integrity manifest. A calibrated model's
temperature is in the config (``calibration_temperature``) and applied to the graph's probabilities by
``OnnxSetFitModel`` with the rule every tier applies (``setfit_lite.runtime.predictor.temper``). With
``quantize="int8"`` the weights are dynamically quantised to int8 and ``model.onnx`` is the quantised graph
(the float32 graph is not kept).

The head becomes graph operations: LogisticRegression (plain, one-vs-rest or multi-output) from its fitted
``coef_``/``intercept_``, reproducing scikit-learn's ``predict_proba``, and a ``TorchHead`` through its own
forward. Other heads cannot be exported.

A model that chunks long texts (``long_text="chunk"``, see ``setfit_lite.runtime.chunking``) is exported with a second
output, ``embedding`` (the text embedding the head reads), and the head alone as ``head.onnx`` (``embedding`` to
``probabilities``): ``OnnxSetFitModel`` embeds each window with the first graph, pools the windows of a text as the
torch model does (``setfit_lite.runtime.chunking.pool``) and runs the head graph on the pooled embeddings. The config
records the setting (``long_text``, ``chunk_overlap``, ``chunk_pooling``, ``normalize_embeddings``).
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import threading
import weakref
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from trainers.cpu_flags import NATIVE_BF16_FLAGS, read_cpu_flags

from ..config.params import PRECISION_ENV, check_param
from ..serialization import (
    load_json,
    read_consistently,
    refuse_pickles,
    verify_manifest,
)
from ..serialization.manifest import is_inside
from ..serialization.validate import _MISMATCH as MISMATCH
from ..serialization.validate import (
    ModelFormatError,
    check_count,
    check_labels,
    check_temperature,
    check_type,
    check_version,
)
from .chunking import Chunking, affixes, pool, split_windows
from .predictor import Predictor, TokenizerFile, length_sorted_batches, tokenize_texts, with_prompt
from .signal_stack import kept_signal_stack
from .threads import default_workers, run_pieces

__all__ = ["ONNX_CONFIG_NAME", "ONNX_MODEL_NAME", "RUNTIMES", "OnnxSetFitModel", "require", "resolve_runtime"]

ONNX_CONFIG_NAME = "config_setfit_lite_onnx.json"
ONNX_MODEL_NAME = "model.onnx"
ONNX_FORMAT_VERSION = 1
QUANTIZE_OPTIONS = (None, "int8", "int8-static")
INPUT_NAMES = ("input_ids", "attention_mask")
OUTPUT_NAME = "probabilities"
EMBEDDING_NAME = "embedding"  # the second output of a chunking model's graph, and its head graph's input
HEAD_MODEL_NAME = "head.onnx"


def require(module: str) -> ModuleType:
    """Import an optional dependency of the ``onnx`` extra, or fail saying how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"ONNX export and inference need {module.split('.')[0]}: "
                          'pip install "setfit_lite[onnx]"') from exc


# -------------------------------------------------------------------------------------------------- inference


#: OpenVINO's name of each precision ``inference_precision`` resolves to
_OPENVINO_HINTS = {"fp32": "f32", "bf16": "bf16"}
#: what may run an exported graph: ``"auto"`` chooses one of the other two (`resolve_runtime`)
RUNTIMES = ("auto", "onnxruntime", "openvino")
#: CPU flags on which ``runtime="auto"`` runs an fp32 graph with OpenVINO in bf16: AMX tiles, where it measured
#: 2.9x / 2.7x onnxruntime's fp32 and 1.2x / 1.1x its dynamic int8 (SST-2 / Emotion, prediction tiers page)
OPENVINO_AUTO_FLAGS = frozenset({"amx_bf16"})


def resolve_runtime(requested: str = "auto", quantized: str | None = None, inference_precision: str = "auto",
                    cpuinfo: str | None = None) -> str:
    """What runs an exported graph: `"onnxruntime"` or `"openvino"` as asked, or for `"auto"` the faster one
    measured on this CPU: OpenVINO for an fp32 graph (``quantized`` None) when it is installed, the CPU has AMX
    tiles and the graph would run in bf16 (`resolve_inference_precision`; a forced fp32 keeps onnxruntime), or
    when bf16 is asked for (only OpenVINO runs it); onnxruntime otherwise, and always for the int8 graphs (its
    dynamic int8 is onnxruntime's own operators, and OpenVINO answered a single text of the int8-static graph
    2.6-9x slower).

    Args:
        requested: `"auto"`, `"onnxruntime"` or `"openvino"`.
        quantized: The folder's ``quantized`` (None, `"int8"` or `"int8-static"`).
        inference_precision: As `OnnxSetFitModel.load` takes it.
        cpuinfo: `/proc/cpuinfo` text to read the flags from instead of this machine's (tests).

    Returns:
        `"onnxruntime"` or `"openvino"`.

    Raises:
        ValueError: An unknown runtime.

    Example:
        >>> resolve_runtime("auto", "int8", cpuinfo="flags : avx512f amx_bf16 amx_tile")
        'onnxruntime'
    """
    if requested not in RUNTIMES:
        raise ValueError(f"runtime must be one of {', '.join(map(repr, RUNTIMES))}, got {requested!r}")
    if requested != "auto":
        return requested
    if inference_precision == "bf16":
        return "openvino"
    if quantized is not None or importlib.util.find_spec("openvino") is None:
        return "onnxruntime"
    if not (read_cpu_flags(cpuinfo) or frozenset()) & OPENVINO_AUTO_FLAGS:
        return "onnxruntime"
    bf16 = resolve_inference_precision(inference_precision, "openvino", cpuinfo) == "bf16"
    return "openvino" if bf16 else "onnxruntime"


def resolve_inference_precision(requested: str = "auto", runtime: str = "openvino",
                                cpuinfo: str | None = None) -> str:
    """The precision (`"fp32"` or `"bf16"`) an exported graph runs in: `"auto"` (first replaced by the
    `SETFIT_LITE_INFERENCE_PRECISION` environment variable where it is set) is bf16 under OpenVINO where the CPU
    computes bf16 natively (the flags `amx_bf16`, `avx512_bf16`, or ARM `bf16`), fp32 otherwise, and always fp32
    under onnxruntime (which refuses a forced bf16); `"fp32"` (or OpenVINO's `"f32"`) and `"bf16"` are honoured.

    Args:
        requested: `"auto"`, `"fp32"` / `"f32"` or `"bf16"`.
        runtime: `"openvino"` or `"onnxruntime"`.
        cpuinfo: `/proc/cpuinfo` text to read the flags from instead of this machine's (tests).

    Returns:
        `"fp32"` or `"bf16"`.

    Raises:
        ValueError: An unknown precision, or bf16 asked of onnxruntime (it runs the fp32 graph as written).

    Example:
        >>> resolve_inference_precision("auto", cpuinfo="flags : avx2 avx512f avx512_bf16")
        'bf16'
        >>> resolve_inference_precision("auto", cpuinfo="flags : avx2 avx512f")
        'fp32'
    """
    value = check_param("inference_precision", "fp32" if requested == "f32" else requested)
    if runtime != "openvino":
        if value == "bf16":
            raise ValueError('inference_precision="bf16" needs runtime="openvino" (onnxruntime runs the graph in fp32)')
        return "fp32"
    if value == "auto":
        value = check_param("inference_precision", os.environ.get(PRECISION_ENV, "auto"))
    if value == "auto":
        flags = read_cpu_flags(cpuinfo)
        value = "bf16" if flags and flags & NATIVE_BF16_FLAGS else "fp32"
    return value


class OpenVinoSession:
    """The exported ONNX graph compiled by OpenVINO for the CPU, behind onnxruntime's ``run`` signature.

    Args:
        model_file: The ONNX graph.
        num_threads: OpenVINO's `INFERENCE_NUM_THREADS` (all streams together); None for its default.
        precision: `"auto"`, `"fp32"` / `"f32"` or `"bf16"` (`resolve_inference_precision`): OpenVINO's
            `INFERENCE_PRECISION_HINT`, always set (OpenVINO's own default follows the CPU too, but not this
            package's rule nor its environment variable). int8 graphs keep their quantised products either way.
        streams: OpenVINO's `NUM_STREAMS`: the requests that run at once (each calling thread has its own), the
            threads shared among them.
    """

    def __init__(self, model_file: str, num_threads: int | None = None, precision: str = "auto",
                 streams: int = 1) -> None:
        try:
            import openvino as ov
        except ImportError as exc:
            raise ImportError('runtime="openvino" needs OpenVINO: pip install "setfit_lite[openvino]"') from exc
        #: the precision the graph runs in ("fp32" or "bf16")
        self.precision = resolve_inference_precision(precision, "openvino")
        config: dict[str, Any] = {"INFERENCE_PRECISION_HINT": _OPENVINO_HINTS[self.precision],
                                  "NUM_STREAMS": int(streams)}
        if num_threads is not None:
            config["INFERENCE_NUM_THREADS"] = int(num_threads)
        with kept_signal_stack():  # OpenVINO swaps the thread's signal stack (setfit_lite.runtime.signal_stack)
            compiled = ov.Core().compile_model(model_file, "CPU", config)
        # the compiled model and an infer request per calling thread (a request is not thread-safe)
        self._parts: dict[str, Any] = {"compiled": compiled, "local": threading.local(), "first": threading.Lock()}
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
            # a request's first inference, one at a time: two threads' first inferences at once (the load's probe
            # runs its batches on the pool) hung about one process in fifteen inside OpenVINO's input copy
            with self._parts["first"]:
                request = self.compiled.create_infer_request()
                result = request.infer(feeds)
            local.request = request
        else:
            result = request.infer(feeds)
        return [np.array(result[self.compiled.output(name)]) for name in output_names]


def _free_openvino_parts(parts: dict[str, Any], keep_stack: Any) -> None:
    """Drop an `OpenVinoSession`'s compiled model and requests with the thread's signal stack kept
    (``keep_stack`` is `kept_signal_stack`, bound when the session was made)."""
    with keep_stack():
        parts.clear()


class _TransformersTokenizer:
    """A tokenizer without ``tokenizer.json`` (not a fast one), through transformers, as `TokenizerFile`."""

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


def _ports(session: Any) -> tuple[list[str], dict[str, int | None], dict[str, int | None]]:
    """An inference session's input names, and the second dimension (the width: columns, embedding size) of each
    input and output by name, None where it is symbolic or the port is not 2-D (onnxruntime or OpenVINO)."""
    if isinstance(session, OpenVinoSession):
        def width(port: Any) -> int | None:
            shape = port.get_partial_shape()
            return shape[1].get_length() if shape.rank.is_static and len(shape) == 2 and shape[1].is_static else None

        ins = {name: width(port) for port in session.compiled.inputs for name in port.get_names()}
        outs = {name: width(port) for port in session.compiled.outputs for name in port.get_names()}
        return [name for port in session.compiled.inputs for name in port.get_names()], ins, outs

    def size(shape: Any) -> int | None:
        return shape[1] if len(shape) == 2 and isinstance(shape[1], int) else None

    ins, outs = session.get_inputs(), session.get_outputs()
    return [node.name for node in ins], {n.name: size(n.shape) for n in ins}, {n.name: size(n.shape) for n in outs}


def _check_graph(session: Any, folder: Path, config: dict[str, Any]) -> None:
    """The graph's inputs and output must be those the config names, with one output column per label."""
    config_path, graph_file = folder / ONNX_CONFIG_NAME, config["model_file"]
    inputs, _, outputs = _ports(session)
    if sorted(inputs) != sorted(INPUT_NAMES) or OUTPUT_NAME not in outputs:
        raise ModelFormatError(folder / graph_file, "inputs/outputs", f"are {inputs} / {sorted(outputs)}, but "
                                                                      f"{config_path.name} names {config['inputs']} / "
                                                                      f"{config['output']!r}")
    if isinstance(outputs[OUTPUT_NAME], int):  # a symbolic width (a graph exported otherwise) is not checked
        check_count(config_path, "labels", len(config["labels"]), outputs[OUTPUT_NAME],
                    f"{graph_file}'s output {OUTPUT_NAME!r} (columns)")


def _check_head_graph(head_session: Any, session: Any, folder: Path, config: dict[str, Any]) -> None:
    """A chunking model's head graph: it reads the main graph's pooled embedding and gives one column per label
    (prediction reads its output, so a head of another model would answer with other classes)."""
    head_file, config_path = config["head_file"], folder / ONNX_CONFIG_NAME
    _, head_inputs, head_outputs = _ports(head_session)
    _, _, outputs = _ports(session)
    if EMBEDDING_NAME not in head_inputs or OUTPUT_NAME not in head_outputs or EMBEDDING_NAME not in outputs:
        raise ModelFormatError(folder / head_file, "inputs/outputs",
                               f"are {sorted(head_inputs)} / {sorted(head_outputs)}, but a chunking model's head "
                               f"reads {EMBEDDING_NAME!r} (an output of {config['model_file']}) and gives "
                               f"{OUTPUT_NAME!r}")
    if isinstance(head_outputs[OUTPUT_NAME], int):
        check_count(config_path, "labels", len(config["labels"]), head_outputs[OUTPUT_NAME],
                    f"{head_file}'s output {OUTPUT_NAME!r} (columns)")
    read, given = head_inputs[EMBEDDING_NAME], outputs[EMBEDDING_NAME]
    if isinstance(read, int) and isinstance(given, int) and read != given:
        raise ModelFormatError(folder / head_file, "input width",
                               f"is {read}, but {config['model_file']}'s {EMBEDDING_NAME!r} output has {given} "
                               "columns: the head of another model")


# ops between a head's activation and its output that keep a row summing to 1 (binary: [1 - p, p]; one-vs-rest:
# sigmoids divided by their sum); the ops a head's output is read through (scatter to class ids, constant columns)
_SUM_TO_ONE_OPS = {"Concat", "Div"}
_HEAD_OPS = {"MatMul", "Gemm", "Where", "Cast", "Identity", "Concat", "Div", "Sub", "Add", "Mul", "ReduceSum",
             "Reshape", "Squeeze", "Unsqueeze", "Equal", "Not"}


def check_config_against_graph(model: OnnxSetFitModel, folder: Path) -> None:
    """Every config field the graph constrains, checked against the graph at load (ModelFormatError naming the
    config file and the field), so that a config that does not fit its graph is refused here, never at predict:

    - ``labels``: one output column per label (`_check_graph`, on the session);
    - ``max_seq_length``: at most the rows of the graph's position embeddings (a graph that reads positions:
      longer inputs cannot run), and not null for such a graph;
    - ``multi_label``: a graph whose rows are a softmax (or sum to 1: binary, one-vs-rest) is single-label, a
      graph of independent sigmoids multi-label;
    - and, whatever the runtime, the graph runs on a text of ``max_seq_length`` tokens and (single-label) gives
      rows that sum to 1.

    The graph's structure is read with the ``onnx`` package when it is installed (the probe run alone otherwise).
    """
    config, config_path = model.config, folder / ONNX_CONFIG_NAME
    positions, single = _graph_facts(folder / config["model_file"],
                                     folder / config["head_file"] if model.chunking.enabled else None)
    limit = config.get("max_seq_length")
    if positions is not None and (limit is None or limit > positions):
        raise ModelFormatError(config_path, "max_seq_length", f"is {limit}, but {config['model_file']} reads at most "
                               f"{positions} tokens (its position embeddings): {MISMATCH}")
    if single is not None and single == model.multi_label:
        kind = "single-label (its rows sum to 1)" if single else "multi-label (independent sigmoids)"
        raise ModelFormatError(config_path, "multi_label", f"is {str(model.multi_label).lower()}, but the graph is "
                               f"{kind}: {MISMATCH}")
    probe = ["a " * (limit or 8), "a"]
    try:
        proba = model._proba_chunk(probe, batch_size=2)
    except Exception as error:  # the runtime's own error: the graph cannot run what the config makes of a text
        raise ModelFormatError(config_path, "max_seq_length", f"is {limit}, but the graph fails on a text of that "
                               f"many tokens ({type(error).__name__}: {str(error)[:200]}): {MISMATCH}") from None
    # bf16 execution (OpenVINO): the rows' sums are exact to bf16's 8 bits of mantissa, about 1e-2
    tolerance = 1e-2 if model.inference_precision == "bf16" else 1e-3
    if not model.multi_label and not np.allclose(proba.sum(axis=1), 1.0, atol=tolerance):
        raise ModelFormatError(config_path, "multi_label", "is false, but the graph's rows do not sum to 1 (a "
                               f"multi-label graph): {MISMATCH}")


def _graph_facts(graph_file: Path, head_file: Path | None) -> tuple[int | None, bool | None]:
    """``(rows of the position embeddings, whether the head is single-label)`` of an exported graph, each None
    where the graph does not tell (or ``onnx`` is not installed)."""
    try:
        import onnx
    except ImportError:
        return None, None
    graph = onnx.load(str(graph_file), load_external_data=False).graph
    tables = [int(t.dims[0]) for t in graph.initializer if "position_embeddings" in t.name and len(t.dims) == 2]
    head = onnx.load(str(head_file), load_external_data=False).graph if head_file is not None else graph
    producers = {name: node for node in head.node for name in node.output}
    frontier, seen, single = [OUTPUT_NAME], set(), None
    while frontier and single is None:
        nodes = [producers[name] for name in frontier if name in producers]
        frontier = []
        for node in nodes:
            if node.op_type in ("Softmax", "LogSoftmax"):
                single = True
            elif node.op_type == "Sigmoid":
                single = bool(seen & _SUM_TO_ONE_OPS)
            elif node.op_type in _HEAD_OPS:
                seen.add(node.op_type)
                frontier.extend(node.input)
    return (min(tables) if tables else None), single


def _session(model_file: str, runtime: str, num_threads: int | None, precision: str = "fp32",
             streams: int = 1) -> Any:
    """An OpenVINO (in ``precision``, ``streams`` requests at once on ``num_threads`` threads) or onnxruntime
    session of ``model_file``; onnxruntime's runs a batch on one intra-op thread without spinning (the batches run
    in parallel, see ``OnnxSetFitModel.load``)."""
    if runtime == "openvino":
        return OpenVinoSession(model_file, num_threads, precision, streams)
    ort = require("onnxruntime")
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(model_file, sess_options=options, providers=["CPUExecutionProvider"])


class OnnxSetFitModel(Predictor):
    """An exported model run by onnxruntime or OpenVINO, without torch; it predicts with the
    [`Predictor`][setfit_lite.runtime.predictor.Predictor] methods, as `SetFitModel` does (numpy outputs).

    Load one with [`load`][setfit_lite.runtime.onnx.OnnxSetFitModel.load] (or `SetFitModel.from_onnx`); the
    constructor is what `load` calls.

    Args:
        session: The graph's onnxruntime `InferenceSession` (or the OpenVINO session).
        tokenizer: The folder's tokenizer.
        config: The folder's `config_setfit_lite_onnx.json`.
        num_workers: The batches run at once.

    Example:
        ```python
        from setfit_lite.runtime.onnx import OnnxSetFitModel

        model = OnnxSetFitModel.load("my-model-int8", num_threads=2)
        print(model.predict(["a gripping, beautiful film"]))
        ```
    """

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
        #: the precision the graph runs in: "bf16" only under OpenVINO (`resolve_inference_precision`)
        self.inference_precision: str = getattr(session, "precision", "fp32")
        #: what runs the graph: "openvino" (an `OpenVinoSession`) or "onnxruntime"
        self.runtime: str = "openvino" if isinstance(session, OpenVinoSession) else "onnxruntime"

    @classmethod
    def load(cls, path: str | os.PathLike, num_threads: int | None = None,
             runtime: str = "auto", inference_precision: str = "auto",
             openvino_streams: int | None = None) -> OnnxSetFitModel:
        """Load a folder written by `export_onnx`, checking its manifest and every file against the others, and
        refusing pickles.

        Args:
            path: The exported folder.
            num_threads: The threads a prediction uses; None for the CPUs this process may use. That many batches
                run at once, each on one thread: onnxruntime's intra-op thread that does not spin, or OpenVINO's
                stream of one thread (see [Export](../export.md)).
            runtime: `"auto"` (`resolve_runtime`: OpenVINO for an fp32 graph on a CPU with AMX when it is
                installed, else onnxruntime), `"onnxruntime"`, or `"openvino"` (Intel's runtime reads the same
                graph; `pip install "setfit_lite[openvino]"`). The one chosen is the model's `runtime`.
            inference_precision: `"auto"` (OpenVINO: bf16 where the CPU computes bf16 natively, AMX or
                AVX512-BF16, fp32 otherwise; onnxruntime: fp32), or `"fp32"` / `"bf16"` (OpenVINO only) to force
                one (`resolve_inference_precision`; the environment variable `SETFIT_LITE_INFERENCE_PRECISION`
                replaces `"auto"`). The head's probabilities stay within about 1e-2 of fp32 in bf16.
            openvino_streams: OpenVINO's batches at once (`NUM_STREAMS`), sharing the `num_threads` threads; None
                for one per thread (the fastest over many texts); 1 runs one batch at a time on all of them, the
                lowest latency for one text. onnxruntime ignores it.

        Returns:
            The model.

        Raises:
            ValueError: A bad `runtime`, `num_threads`, `inference_precision` or `openvino_streams` (more streams
                than threads), a pickled file, or files that disagree with each other.
            ImportError: The runtime is not installed.
        """
        num_threads = check_param("num_threads", num_threads)
        openvino_streams = check_param("openvino_streams", openvino_streams)
        threads = default_workers() if num_threads is None else num_threads
        if openvino_streams is not None and openvino_streams > threads:
            raise ValueError(f"openvino_streams={openvino_streams} is more than the {threads} threads a prediction "
                             "uses (num_threads): each stream needs a thread of its own")
        resolve_runtime(runtime)  # the name checked before any file is read
        if runtime != "auto":  # a precision the runtime asked for cannot run, before any file is read
            resolve_inference_precision(inference_precision, runtime)
        folder = Path(path)

        def load() -> OnnxSetFitModel:
            """The model, read from ``folder`` (run again where a save changed it meanwhile)."""
            refuse_pickles(folder)
            verify_manifest(folder)
            config = validate_onnx_config(folder)
            chosen = resolve_runtime(runtime, config.get("quantized"), inference_precision)
            precision = resolve_inference_precision(inference_precision, chosen)
            chunked = Chunking.from_config(config).enabled
            tokenizer = _load_tokenizer(folder, None if chunked else config.get("max_seq_length"))
            if chosen == "openvino":  # a batch at once per stream, a stream per thread unless told
                streams = workers = threads if openvino_streams is None else openvino_streams
            else:  # onnxruntime: a batch at once per thread
                streams, workers = 1, threads
            session = _session(str(folder / config["model_file"]), chosen, threads, precision, streams)
            _check_graph(session, folder, config)
            model = cls(session, tokenizer, config, num_workers=workers)
            if chunked:
                model.head_session = _session(str(folder / config["head_file"]), chosen, threads, precision, streams)
                _check_head_graph(model.head_session, session, folder, config)
            check_config_against_graph(model, folder)
            return model

        # a save killed after its commit point is finished first; one under way is waited for (never half read)
        return read_consistently(folder, load)

    def tokenize(self, texts: list[str]) -> list[list[int]]:
        """Token ids of ``texts`` (prompt prepended), unpadded: truncated to ``max_seq_length`` when the model
        reads a long text's first window only (``long_text="truncate"``), whole when it chunks them (the default)."""
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
