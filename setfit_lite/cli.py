"""``setfit-lite`` command line: demo | train | search | evaluate | predict | export | convert.

Quiet by default: results go to stdout, warnings to stderr, progress bars only when stderr is a terminal
(``--quiet``: none, and errors only; ``--verbose``: the training log too). Ctrl-C or SIGTERM ends a command with
one line on stderr and exit status 128 + the signal's number (130, 143); ``train --save-steps N`` checkpoints first
and says how to resume.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import shlex
import signal
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from trainers.names import NAMES as BACKEND_NAMES
from trainers.names import PRECISION_NAMES

from .errors import NoCompletedTrialError
from .params import TRAINING_RULES, argument_type
from .verbosity import get_verbosity, quiet_dependencies, quiet_optuna, set_verbosity, show_progress

DEFAULT_BODY = "sentence-transformers/all-MiniLM-L6-v2"
CHECKPOINTS = "checkpoints"  # sub-folder of --output-dir that --save-steps writes and --resume reads


def _add_data_args(p: argparse.ArgumentParser, labelled: bool = True) -> None:
    p.add_argument("--text-column", default="text")
    if labelled:
        p.add_argument("--label-column", default="label")


def _add_train_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", help="training data: CSV, JSON or JSONL file")
    _add_data_args(p)
    p.add_argument("--model", default=DEFAULT_BODY, help="body: hub name or local folder")
    p.add_argument("--shots", type=argument_type("num_samples"), default=None,
                   help="examples per class to sample (default: all)")
    p.add_argument("--eval-data", default=None)
    p.add_argument("--output-dir", default="setfit-lite-model")
    p.add_argument("--seed", type=argument_type("seed", TRAINING_RULES), default=42)
    p.add_argument("--num-epochs", type=argument_type("num_epochs", TRAINING_RULES), default=None)
    p.add_argument("--batch-size", type=argument_type("batch_size", TRAINING_RULES), default=None)
    p.add_argument("--objective", choices=["sentence_batch", "pairs"], default=None)
    p.add_argument("--backend", default="auto", type=str.lower, choices=BACKEND_NAMES)
    p.add_argument("--precision", default="auto", choices=PRECISION_NAMES)
    p.add_argument("--max-length", type=argument_type("max_length", TRAINING_RULES), default=None)
    p.add_argument("--max-steps", type=argument_type("max_steps", TRAINING_RULES), default=None,
                   help="stop body training after this many steps")


def _add_shared_study_args(p: argparse.ArgumentParser) -> None:
    """Options for several workers (processes or machines) sharing one study in a database."""
    p.add_argument("--max-trials", type=argument_type("max_trials"), default=None,
                   help="stop once the study holds N complete trials, counting every worker's (without --n-trials "
                        "this worker runs until then)")
    p.add_argument("--heartbeat-interval", type=argument_type("heartbeat_interval"), default=None,
                   help="seconds between a running trial's heartbeats in the database; the trial of a worker that "
                        "stopped beating (killed, machine lost) is marked failed and run again by another worker")
    p.add_argument("--grace-period", type=argument_type("grace_period"), default=None,
                   help="seconds without a heartbeat before a trial counts as dead (default: 2 x the interval)")
    p.add_argument("--max-retry", type=argument_type("max_retry"), default=3,
                   help="times a dead worker's trial is run again (default 3)")


def _verbosity_parser() -> argparse.ArgumentParser:
    """``--quiet``/``--verbose``, accepted before or after the command name."""
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_mutually_exclusive_group()
    group.add_argument("-q", "--quiet", dest="verbosity", action="store_const", const="quiet",
                       default=argparse.SUPPRESS, help="print only results and errors: no warnings, no progress bars")
    group.add_argument("-v", "--verbose", dest="verbosity", action="store_const", const="verbose",
                       default=argparse.SUPPRESS, help="also log training progress and dependencies' messages")
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _verbosity_parser()
    parser = argparse.ArgumentParser(prog="setfit-lite", description="Few-shot text classification.",
                                     parents=[common])
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, **kwargs: Any) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[common], **kwargs)

    demo = add("demo", help="train on 8 examples per class of a shipped SST-2 sample and evaluate")
    demo.add_argument("--output-dir", default="setfit-lite-demo-model")
    demo.add_argument("--model", default=DEFAULT_BODY)
    demo.add_argument("--seed", type=argument_type("seed", TRAINING_RULES), default=0)
    demo.add_argument("--shots", type=argument_type("num_samples"), default=8)

    train = add("train", help="train a model and save it")
    _add_train_args(train)
    train.add_argument("--save-steps", type=argument_type("save_steps", TRAINING_RULES), default=None,
                       help=f"checkpoint body training every N steps into OUTPUT_DIR/{CHECKPOINTS} (and on "
                            "Ctrl-C/SIGTERM); the latest checkpoint is kept after training")
    train.add_argument("--resume", action="store_true",
                       help=f"continue from the latest complete checkpoint in OUTPUT_DIR/{CHECKPOINTS}")

    search = add("search", help="search hyperparameters with Optuna (each trial scored on --eval-data)")
    _add_train_args(search)
    search.add_argument("--space", default=None,
                        help="JSON file: a SigOpt-style parameter list or experiment dict (default: setfit's space)")
    search.add_argument("--n-trials", type=argument_type("n_trials"), default=None,
                        help="default: the experiment's budget, else 10")
    search.add_argument("--storage", default=None,
                        help="Optuna storage: a URL (sqlite:///study.db), a .db path or a .log/.jsonl journal file")
    search.add_argument("--study-name", default=None,
                        help="with --storage: an existing study of this name is continued (resume, or share it "
                             "between processes)")
    search.add_argument("--direction", choices=["maximize", "minimize"], default=None)
    search.add_argument("--output", default=None, help="write the best trial as JSON to this file")
    _add_shared_study_args(search)

    evaluate = add("evaluate", help="evaluate a saved model on labelled data")
    evaluate.add_argument("model_dir", help="a saved model, or a folder written by `setfit-lite export`")
    evaluate.add_argument("data")
    _add_data_args(evaluate)
    evaluate.add_argument("--metric", default="accuracy")
    evaluate.add_argument("--group-by", default=None, help="also report the metric per value of this column")
    evaluate.add_argument("--runtime", choices=["onnxruntime", "openvino"], default="onnxruntime",
                          help="runtime for an exported (ONNX) model")

    predict = add("predict", help="predict labels for a file or stdin, one JSON line per text")
    predict.add_argument("model_dir", help="a saved model, or a folder written by `setfit-lite export`")
    predict.add_argument("data", nargs="?", default="-", help="CSV/JSON/JSONL file, a text file, or - for stdin")
    predict.add_argument("--text-column", default="text")
    predict.add_argument("--batch-size", type=argument_type("batch_size"), default=64)
    predict.add_argument("--proba", action="store_true", help="also print class probabilities")
    predict.add_argument("--runtime", choices=["onnxruntime", "openvino"], default="onnxruntime",
                         help="runtime for an exported (ONNX) model")

    export = add("export", help="export a saved model to ONNX (one graph: token ids to probabilities), or with "
                                "--static to static token embeddings (model2vec's format) and a refitted head")
    export.add_argument("model_dir")
    export.add_argument("output_dir")
    export.add_argument("--quantize", choices=["int8", "int8-static"], default=None,
                        help="int8: dynamic int8 weight quantisation; int8-static: also the activations, calibrated "
                             "on the texts of --data")
    export.add_argument("--opset", type=argument_type("opset"), default=17)
    _add_static_export_args(export)

    convert = add("convert", help="convert a model saved by setfit (model_head.pkl) to the pickle-free format; "
                                  "its pickle is trusted")
    convert.add_argument("setfit_dir", help="a folder written by setfit's save_pretrained, from a source you trust")
    convert.add_argument("output_dir")
    return parser


def _check_output(output: str, *inputs: str | None, suffix: str) -> None:
    """The output-path guard (:func:`~setfit_lite.serialization.check_output_path`), before anything is read: no
    command writes into, over or around a folder or file it reads (inputs that do not exist, hub names, are
    skipped)."""
    from .serialization import check_output_path

    check_output_path(output, *inputs, suffix=suffix)


def _train_args(ns: argparse.Namespace) -> Any:
    from .training_args import TrainingArguments

    kwargs: dict[str, Any] = {"seed": ns.seed, "backend": ns.backend, "precision": ns.precision,
                              "output_dir": str(Path(ns.output_dir) / CHECKPOINTS),
                              "show_progress_bar": show_progress()}
    for name in ("num_epochs", "batch_size", "objective", "max_length", "max_steps"):
        if getattr(ns, name) is not None:
            kwargs[name] = getattr(ns, name)
    if getattr(ns, "save_steps", None) is not None:
        kwargs.update(save_strategy="steps", save_steps=ns.save_steps)
    return TrainingArguments(**kwargs)


def _train_eval_rows(ns: argparse.Namespace) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """Training rows (sampled with ``--shots``) and the ``--eval-data`` columns, if given."""
    from .data import sample_dataset, to_labeled_data

    train = to_labeled_data(ns.data, text_column=ns.text_column, label_column=ns.label_column)
    rows = [{"text": t, "label": y} for t, y in zip(train.texts, train.labels)]
    if ns.shots:
        rows = sample_dataset(rows, label_column="label", num_samples=ns.shots, seed=ns.seed)
    eval_rows = None
    if ns.eval_data:
        ev = to_labeled_data(ns.eval_data, text_column=ns.text_column, label_column=ns.label_column)
        eval_rows = {"text": ev.texts, "label": ev.labels, **ev.columns}
    return rows, eval_rows


def cmd_train(ns: argparse.Namespace) -> dict[str, Any]:
    from .checkpoint import latest_checkpoint
    from .modeling import SetFitModel
    from .trainer import Trainer

    _check_output(ns.output_dir, ns.model, ns.data, ns.eval_data, suffix="trained")
    args = _train_args(ns)
    if ns.save_steps and not ns.resume and (earlier := latest_checkpoint(args.output_dir)) is not None:
        raise ValueError(f"{earlier} is a checkpoint of an earlier run: add --resume to continue it, or remove "
                         f"{args.output_dir} to start over")
    rows, eval_rows = _train_eval_rows(ns)
    model = SetFitModel.from_pretrained(ns.model)
    trainer = Trainer(model=model, args=args, train_dataset=rows, eval_dataset=eval_rows)
    start = time.perf_counter()
    trainer.train(resume_from_checkpoint=True if ns.resume else None)
    result: dict[str, Any] = {"train_examples": len(rows), "train_seconds": round(time.perf_counter() - start, 2)}
    if not trainer.is_world_process_zero():  # under torchrun every rank holds the same model; rank 0 reports
        return result
    if eval_rows is not None:
        result["eval"] = trainer.evaluate()
    trainer.save_model(ns.output_dir)
    result["saved_to"] = ns.output_dir
    print(json.dumps(result, default=str))
    return result


def cmd_search(ns: argparse.Namespace) -> dict[str, Any]:
    from .modeling import SetFitModel
    from .search import load_space, open_storage
    from .trainer import Trainer

    if ns.study_name and not ns.storage:
        raise ValueError("--study-name needs --storage (an in-memory study cannot be continued)")
    if ns.output:
        storage_file = ns.storage.removeprefix("sqlite:///") if ns.storage else None  # a URL is no path: skipped
        _check_output(ns.output, ns.model, ns.data, ns.eval_data, ns.space, storage_file, suffix="best")
    # a database that cannot be reached, or refuses the password, fails here: before any data or model is loaded
    storage = open_storage(ns.storage, heartbeat_interval=ns.heartbeat_interval, grace_period=ns.grace_period,
                           max_retry=ns.max_retry)
    space = load_space(ns.space) if ns.space else None
    if isinstance(space, dict):  # explicit options override the experiment's budget and objective
        space = dict(space)
        if ns.n_trials is not None:
            space["observation_budget"] = ns.n_trials
        elif ns.max_trials is not None:
            space.pop("observation_budget", None)  # --max-trials alone: run until the study holds that many
        if ns.direction is not None and space.get("metrics"):
            space["metrics"] = [{**m, "objective": ns.direction} if m.get("strategy", "optimize") == "optimize"
                                else m for m in space["metrics"]]
    args = _train_args(ns)
    rows, eval_rows = _train_eval_rows(ns)
    if eval_rows is None:
        raise ValueError("search needs --eval-data: each trial is scored on it")
    trainer = Trainer(args=args, train_dataset=rows, eval_dataset=eval_rows,
                      model_init=lambda: SetFitModel.from_pretrained(ns.model))
    options: dict[str, Any] = {"storage": storage, "study_name": ns.study_name,
                               "load_if_exists": bool(ns.study_name)}
    if ns.n_trials is not None:
        options["n_trials"] = ns.n_trials
    elif ns.max_trials is not None:
        options["n_trials"] = None  # until the study holds --max-trials complete trials
    options.update(max_trials=ns.max_trials)
    if ns.direction is not None:
        options["direction"] = ns.direction
    best = trainer.hyperparameter_search(hp_space=space, **options)
    study = best.study
    result: dict[str, Any] = {"run_id": best.run_id, "objective": best.objective,
                              "hyperparameters": best.hyperparameters, "study_name": study.study_name,
                              "direction": study.direction.name.lower(), "n_trials": len(study.trials)}
    text = json.dumps(result, default=str)
    if ns.output:
        from .serialization import atomic_write_text

        atomic_write_text(ns.output, json.dumps(result, indent=2, default=str) + "\n")
    print(text)
    return result


def _exported_format(model_dir: str) -> str | None:
    """``"onnx"`` or ``"static"`` for a folder written by ``setfit-lite export`` (read from its config file's name,
    before anything heavy is imported), else None."""
    from .export import ONNX_CONFIG_NAME
    from .static import STATIC_CONFIG_NAME

    folder = Path(model_dir)
    if (folder / ONNX_CONFIG_NAME).is_file():
        return "onnx"
    if (folder / STATIC_CONFIG_NAME).is_file():
        return "static"
    return None


def _load_model(model_dir: str, runtime: str = "onnxruntime") -> Any:
    """A saved SetFitModel, or, without importing torch, an ``OnnxSetFitModel`` or ``StaticSetFitModel`` for a
    folder written by ``setfit-lite export``."""
    kind = _exported_format(model_dir)
    if kind == "onnx":
        from .export import OnnxSetFitModel

        return OnnxSetFitModel.load(model_dir, runtime=runtime)
    if kind == "static":
        from .static import StaticSetFitModel

        return StaticSetFitModel.load(model_dir)
    from .modeling import SetFitModel

    return SetFitModel.from_pretrained(model_dir)


def cmd_evaluate(ns: argparse.Namespace) -> dict[str, Any]:
    from .data import to_labeled_data
    from .evaluation import evaluate_model

    model = _load_model(ns.model_dir, ns.runtime)
    data = to_labeled_data(ns.data, text_column=ns.text_column, label_column=ns.label_column)
    result = evaluate_model(model, data, ns.metric, group_by=ns.group_by)
    if ns.group_by:
        print(format_groups(result, ns.metric, ns.group_by))
    print(json.dumps(result, default=str))
    return result


def format_groups(result: dict[str, Any], metric: str, column: str) -> str:
    """A plain-text table of a per-group evaluation."""
    lines = [f"{column:<12} {'n':>6} {metric:>10}"]
    for group, values in result.get("groups", {}).items():
        lines.append(f"{group:<12} {values['n']:>6} {values.get(metric, float('nan')):>10.4f}")
    lines.append(f"{'all':<12} {sum(v['n'] for v in result.get('groups', {}).values()):>6} "
                 f"{result.get(metric, float('nan')):>10.4f}")
    return "\n".join(lines)


def _read_texts(source: str, text_column: str) -> Iterator[str]:
    if source == "-":
        from .inference import decoded_lines

        buffer = getattr(sys.stdin, "buffer", None)  # bytes, decoded line by line: an error names the line
        lines = decoded_lines(buffer, "<stdin>") if buffer is not None else (t.rstrip("\n") for t in sys.stdin)
        for line in lines:
            if line.strip():
                yield _maybe_json_text(line, text_column)
        return
    path = Path(source)
    if path.suffix.lower() in (".csv", ".json", ".jsonl"):
        from .data import to_labeled_data

        yield from to_labeled_data(path, text_column=text_column, require_labels=False).texts
        return
    from .inference import iter_text_file

    yield from iter_text_file(path)


def _maybe_json_text(line: str, text_column: str) -> str:
    if line.startswith("{"):
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            return line
        if isinstance(obj, dict) and text_column in obj:
            return obj[text_column]
    return line


def cmd_predict(ns: argparse.Namespace) -> None:
    model = _load_model(ns.model_dir, ns.runtime)
    for chunk, proba in model.iter_proba(_read_texts(ns.data, ns.text_column), batch_size=ns.batch_size):
        labels = model.labels_from_proba(proba)
        for text, label, p in zip(chunk, labels, proba):
            row: dict[str, Any] = {"text": text, "label": label.tolist() if hasattr(label, "tolist") else label}
            if ns.proba:
                row["proba"] = {str(k): round(float(v), 6) for k, v in zip(model.labels, p)}
            print(json.dumps(row, ensure_ascii=False, default=str))


def _add_static_export_args(export: argparse.ArgumentParser) -> None:
    export.add_argument("--static", action="store_true",
                        help="distil the body into static token embeddings (numpy-only inference, model2vec's "
                             "format); the head is refitted on --data")
    export.add_argument("--data", default=None,
                        help="with --static: CSV/JSON/JSONL/text file of texts to refit the head on (a label column "
                             "gives their labels, else the model labels them); with --quantize int8-static: the "
                             "calibration texts")
    export.add_argument("--unlabeled-data", default=None,
                        help="with --static: more texts (any readable file) that the model labels for the refit")
    _add_data_args(export)
    export.add_argument("--pca-dims", type=argument_type("pca_dims"), default=256,
                        help="with --static: embedding size after PCA")


def _export_static(ns: argparse.Namespace, model: Any) -> Any:
    from .data import to_labeled_data

    if not ns.data:
        raise ValueError("export --static needs --data: texts to refit the head on the static embeddings")
    if Path(ns.data).suffix.lower() in (".csv", ".json", ".jsonl"):
        data = to_labeled_data(ns.data, text_column=ns.text_column, label_column=ns.label_column,
                               require_labels=False)
        texts, labels = data.texts, data.labels
    else:  # a text file: one text per line, labelled by the model
        texts, labels = list(_read_texts(ns.data, ns.text_column)), None
    unlabeled = list(_read_texts(ns.unlabeled_data, ns.text_column)) if ns.unlabeled_data else []
    return model.export_static(ns.output_dir, texts, labels, unlabeled_texts=unlabeled, pca_dims=ns.pca_dims)


def cmd_export(ns: argparse.Namespace) -> dict[str, Any]:
    from .modeling import SetFitModel

    if ns.static and ns.quantize:
        raise ValueError("--quantize applies to ONNX exports, not to --static")
    _check_output(ns.output_dir, ns.model_dir, ns.data, ns.unlabeled_data, suffix="static" if ns.static else "onnx")
    model = SetFitModel.from_pretrained(ns.model_dir)
    if ns.static:
        out = _export_static(ns, model)
    else:
        calibration = list(_read_texts(ns.data, ns.text_column)) if ns.data else None
        out = model.export_onnx(ns.output_dir, quantize=ns.quantize, opset=ns.opset, calibration_texts=calibration)
    result = {"exported_to": str(out), "format": "static" if ns.static else "onnx", "quantized": ns.quantize,
              "labels": model.labels}
    print(json.dumps(result, default=str))
    return result


def cmd_convert(ns: argparse.Namespace) -> dict[str, Any]:
    """Load a setfit folder trusting its pickles, save it in setfit_lite's pickle-free format."""
    from .modeling import SetFitModel
    from .serialization import find_pickle_files

    source, out = Path(ns.setfit_dir), Path(ns.output_dir)
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} exists and is not a folder; give a folder for the converted model")
    _check_output(ns.output_dir, ns.setfit_dir, suffix="setfit-lite")  # not beside the pickles it replaces
    if not source.is_dir():
        raise FileNotFoundError(f"{source} is not a folder")
    pickles = find_pickle_files(source)
    if pickles:
        print(f"setfit-lite convert: warning: trusting the pickle file(s) {', '.join(p.name for p in pickles)} "
              f"in {source}: loading a pickle can run any code it holds, convert only models from a source you "
              "trust", file=sys.stderr)
    model = SetFitModel.from_pretrained(source, allow_pickle=True)
    if model.model_head is None or model.labels is None:
        raise ValueError(f"{source} has no trained head and labels to convert (setfit saves them as "
                         "model_head.pkl and config_setfit.json)")
    model.save_pretrained(out)
    result = {"converted_to": str(out), "labels": model.labels}
    print(json.dumps(result, default=str))
    return result


def cmd_demo(ns: argparse.Namespace) -> dict[str, Any]:
    """8 examples per class of the shipped SST-2 sample, evaluated on the rest."""
    from .data import demo_dataset, sample_dataset
    from .modeling import SetFitModel
    from .trainer import Trainer
    from .training_args import TrainingArguments

    _check_output(ns.output_dir, ns.model, suffix="demo")
    data = demo_dataset()
    train = sample_dataset(data, label_column="label", num_samples=ns.shots, seed=ns.seed)
    train_texts = set(train["text"])
    test = data.filter(lambda row: row["text"] not in train_texts)
    print(f"setfit-lite demo: {len(train)} training sentences ({ns.shots} per class), {len(test)} test sentences "
          "from SST-2 (shipped sample)")
    model = SetFitModel.from_pretrained(ns.model, labels=["negative", "positive"])
    trainer = Trainer(model=model, args=TrainingArguments(seed=ns.seed, show_progress_bar=show_progress()),
                      train_dataset=train, eval_dataset=test, metric="accuracy")
    start = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - start
    if not trainer.is_world_process_zero():
        return {"train_seconds": seconds}
    result = trainer.evaluate()
    print(f"accuracy: {result['accuracy']:.3f}   training time: {seconds:.1f} s")
    examples = ["a gripping, beautiful film", "dull and far too long", "the best movie of the year",
                "i wanted my two hours back"]
    for text, label in zip(examples, model.predict(examples)):
        print(f"  {label:>8}  <- {text}")
    trainer.save_model(ns.output_dir)
    print(f"model saved to {ns.output_dir}")
    return {"accuracy": result["accuracy"], "train_seconds": seconds}


class _Interrupted(KeyboardInterrupt):
    """SIGINT/SIGTERM outside the trainer's checkpointing window."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum


def _raise_interrupted(signum: int, frame: Any) -> None:
    raise _Interrupted(signum)


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    """SIGTERM, like Ctrl-C, raises a KeyboardInterrupt (the trainer takes both over while it can checkpoint)."""
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, _raise_interrupted)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _signal_number(interrupt: KeyboardInterrupt) -> int:
    """The signal that interrupted: our own handler and the trainer's ``TrainingInterrupted`` name it."""
    signum = getattr(interrupt, "signum", None)
    return int(signum) if signum is not None else int(signal.SIGINT)


def _interrupted_line(ns: argparse.Namespace, signum: int, argv: list[str]) -> str:
    """One line: where the checkpoint is and the command that resumes from it, or that nothing was saved."""
    from .checkpoint import latest_checkpoint

    head = f"setfit-lite {ns.command}: interrupted by {signal.Signals(signum).name}"
    if ns.command != "train":
        return f"{head}; nothing was saved"
    saved = latest_checkpoint(Path(ns.output_dir) / CHECKPOINTS) if ns.save_steps or ns.resume else None
    if saved is None:
        hint = "" if ns.save_steps else " (train with --save-steps N to checkpoint)"
        return f"{head}; nothing was saved{hint}"
    command = shlex.join(["setfit-lite", *argv, *([] if ns.resume else ["--resume"])])
    return f"{head}; checkpoint saved in {saved}; resume with: {command}"


class _DropSignalNotice(logging.Filter):
    """The trainer's "signal received: saving a checkpoint" notice; the command line prints its own summary."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name == "setfit_lite.trainer" and str(record.msg).startswith("signal "))


@contextlib.contextmanager
def _output(verbosity: str, dependencies: bool = True) -> Iterator[None]:
    """Logging, warnings and progress bars for ``verbosity`` ("quiet", "default" or "verbose").

    ``dependencies=False`` (a command that runs an exported folder) leaves transformers, huggingface_hub and
    Optuna unimported: their settings are not touched.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("setfit-lite: %(levelname)s: %(message)s"))
    if verbosity != "verbose":
        handler.addFilter(_DropSignalNotice())
    level = {"quiet": logging.ERROR, "default": logging.WARNING, "verbose": logging.INFO}[verbosity]
    loggers = [logging.getLogger(name) for name in ("setfit_lite", "trainers")]
    saved = [(lg.level, lg.propagate) for lg in loggers]
    previous_verbosity = get_verbosity()
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(level)
        lg.propagate = False
    set_verbosity(verbosity)
    try:
        with warnings.catch_warnings(), contextlib.ExitStack() as stack:
            if verbosity == "quiet":
                warnings.simplefilter("ignore")
            if dependencies:
                stack.enter_context(_dependency_output(verbosity))
            yield
    finally:
        set_verbosity(previous_verbosity)
        for lg, (lg_level, propagate) in zip(loggers, saved):
            lg.removeHandler(handler)
            lg.setLevel(lg_level)
            lg.propagate = propagate


@contextlib.contextmanager
def _dependency_output(verbosity: str) -> Iterator[None]:
    """transformers' logging, its and the hub's progress bars, and Optuna's trial lines, for ``verbosity``."""
    from transformers.utils import logging as hf_logging

    transformers_level = hf_logging.get_verbosity()
    try:
        with quiet_dependencies(), quiet_optuna():
            if verbosity == "quiet":
                hf_logging.set_verbosity_error()
            yield
    finally:
        hf_logging.set_verbosity(transformers_level)


def _runs_exported(ns: argparse.Namespace) -> bool:
    """Whether the command runs an exported (ONNX, OpenVINO or static) folder: then torch, transformers and
    Optuna are never imported."""
    return ns.command in ("predict", "evaluate") and _exported_format(ns.model_dir) is not None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ns = build_parser().parse_args(argv)
    commands = {"demo": cmd_demo, "train": cmd_train, "search": cmd_search, "evaluate": cmd_evaluate,
                "predict": cmd_predict, "export": cmd_export, "convert": cmd_convert}
    with _output(getattr(ns, "verbosity", "default"), dependencies=not _runs_exported(ns)), _interruptible():
        try:
            commands[ns.command](ns)
        except KeyboardInterrupt as interrupt:  # Ctrl-C, SIGTERM, or the trainer's TrainingInterrupted
            signum = _signal_number(interrupt)
            print(_interrupted_line(ns, signum, argv), file=sys.stderr)
            return 128 + signum
        except (ValueError, TypeError, OSError, ImportError) as error:
            print(f"setfit-lite {ns.command}: error: {error}", file=sys.stderr)
            return 2
        except NoCompletedTrialError as error:
            print(f"setfit-lite {ns.command}: error: {error}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
