"""``setfit-lite export``: a saved model to ONNX (one graph: token ids to probabilities, optionally int8), or with
``--static`` to static token embeddings (model2vec's format) and a head refitted on ``--data``; with ``--student N``
an ``N``-layer student distilled from the model on the texts of ``--data`` and ``--unlabeled-data`` is exported
instead (the speed tier)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ...config.params import argument_type
from ..inputs import check_inputs_exist, check_output, is_table, read_labelled, read_texts
from ..options import LABEL_COLUMN, add_data_args

#: the speed tier's distillation epochs (docs/export.md: chosen on validation texts)
STUDENT_EPOCHS = 10

HELP = ("export a saved model to ONNX (one graph: token ids to probabilities), or with --static to static token "
        "embeddings (model2vec's format) and a refitted head")


def add_arguments(export: argparse.ArgumentParser) -> None:
    export.add_argument("model_dir", help="a model saved with save_pretrained (or setfit-lite train)")
    export.add_argument("output_dir", help="the folder the exported model is written to")
    export.add_argument("--quantize", choices=["int8", "int8-static"], default=None,
                        help="int8: dynamic int8 weight quantisation; int8-static: also the activations, calibrated "
                             "on the texts of --data")
    export.add_argument("--opset", type=argument_type("opset"), default=None,
                        help="the ONNX opset of the graph (default: 17)")
    export.add_argument("--static", action="store_true",
                        help="distil the body into static token embeddings (numpy-only inference, model2vec's "
                             "format); the head is refitted on --data")
    export.add_argument("--student", type=argument_type("student_layers"), default=None, metavar="LAYERS",
                        help="export a LAYERS-layer student instead: the body's first and last layers (and evenly "
                             "spaced ones between), distilled onto the model's embeddings on the texts of --data and "
                             "--unlabeled-data (labels ignored), then exported to ONNX (the speed tier; "
                             "docs/export.md)")
    export.add_argument("--student-epochs", type=argument_type("student_epochs"), default=None,
                        help=f"with --student: the distillation's epochs (default: {STUDENT_EPOCHS})")
    export.add_argument("--data", default=None,
                        help="with --static: CSV/JSON/JSONL/text file of texts to refit the head on (a label column "
                             "gives their labels, else the model labels them); with --quantize int8-static: the "
                             "calibration texts; with --student: texts to distil on")
    export.add_argument("--unlabeled-data", default=None,
                        help="with --static: more texts (any readable file) that the model labels for the refit; "
                             "with --student: more texts to distil on")
    add_data_args(export, labels_optional=True)
    export.add_argument("--pca-dims", type=argument_type("pca_dims"), default=None,
                        help="with --static: embedding size after PCA (default: 256)")


def run(ns: argparse.Namespace) -> dict[str, Any]:
    from ...modeling import SetFitModel
    from ...serialization import check_can_update

    if ns.static and ns.quantize:
        raise ValueError("--quantize applies to ONNX exports, not to --static")
    if ns.quantize == "int8-static" and not ns.data:
        raise ValueError("--quantize int8-static needs --data: the texts it calibrates on")
    if ns.static and not ns.data:
        raise ValueError("export --static needs --data: texts to refit the head on the static embeddings")
    ignored = [option for option, given in (
        ("--pca-dims", ns.pca_dims is not None and not ns.static), ("--opset", ns.opset is not None and ns.static),
        ("--data", ns.data and not (ns.static or ns.student is not None or ns.quantize == "int8-static")),
        ("--unlabeled-data", ns.unlabeled_data and not (ns.static or ns.student is not None))) if given]
    if ignored:  # an option this export would not read is refused, not silently dropped
        raise ValueError(f"{', '.join(ignored)}: not read by this export (--pca-dims with --static; --opset without "
                         "it; --data with --static, --student or --quantize int8-static; --unlabeled-data with "
                         "--static or --student)")
    ns.pca_dims = 256 if ns.pca_dims is None else ns.pca_dims
    ns.opset = 17 if ns.opset is None else ns.opset
    check_inputs_exist({"--data": ns.data, "--unlabeled-data": ns.unlabeled_data})
    if ns.student is None and ns.student_epochs is not None:
        raise ValueError("--student-epochs applies only with --student")
    if ns.student is not None and ns.static:
        raise ValueError("--student exports an ONNX student; it does not combine with --static")
    if ns.student is not None and not (ns.data or ns.unlabeled_data):
        raise ValueError("export --student needs texts to distil on: --data and/or --unlabeled-data")
    check_output(ns.output_dir, ns.model_dir, ns.data, ns.unlabeled_data, suffix="static" if ns.static else "onnx")
    check_can_update(ns.output_dir)  # a file of the user's the export would replace: refused before the work
    model = SetFitModel.from_pretrained(ns.model_dir)
    student: dict[str, Any] = {}
    if ns.student is not None:
        epochs = ns.student_epochs or STUDENT_EPOCHS
        texts = [*(read_texts(ns.data, ns.text_column) if ns.data else []),
                 *(read_texts(ns.unlabeled_data, ns.text_column) if ns.unlabeled_data else [])]
        model = _distil_student(model, ns.student, epochs, texts)
        student = {"student": {"layers": ns.student, "epochs": epochs, "texts": len(texts),
                               "layers_kept": model.training_info["layers_kept"]["indices"]}}
    if ns.static:
        out = _export_static(ns, model)
    else:
        calibration = list(read_texts(ns.data, ns.text_column)) if ns.data and ns.quantize == "int8-static" else None
        out = model.export_onnx(ns.output_dir, quantize=ns.quantize, opset=ns.opset, calibration_texts=calibration)
    result = {"exported_to": str(out), "format": "static" if ns.static else "onnx", "quantized": ns.quantize,
              "labels": model.labels, **student}
    print(json.dumps(result, default=str))
    return result


def _distil_student(teacher: Any, layers: int, epochs: int, texts: list[str]) -> Any:
    """The speed tier's student of ``teacher``: ``layers`` of its layers (``keep="spread"``), distilled onto its
    embeddings for ``epochs`` epochs on ``texts``, its head fitted on the teacher's labels of them."""
    from ...distillation import DistillationTrainer, shrink_body
    from ...training_args import TrainingArguments

    student = shrink_body(teacher, layers, keep="spread")
    DistillationTrainer(teacher_model=teacher, student_model=student, target="embeddings",
                        args=TrainingArguments(num_epochs=(epochs, 16)), train_dataset={"text": texts}).train()
    return student


def _export_static(ns: argparse.Namespace, model: Any) -> Any:
    if is_table(ns.data):
        # without a label column the model labels the texts; a --label-column given must be there
        data = read_labelled(ns.data, "--data", ns.text_column, ns.label_column or LABEL_COLUMN,
                             require_labels=ns.label_column is not None)
        texts, labels = data.texts, data.labels
    else:  # a text file: one text per line, labelled by the model
        texts, labels = list(read_texts(ns.data, ns.text_column)), None
    unlabeled = list(read_texts(ns.unlabeled_data, ns.text_column)) if ns.unlabeled_data else []
    return model.export_static(ns.output_dir, texts, labels, unlabeled_texts=unlabeled, pca_dims=ns.pca_dims)
