"""``setfit-lite`` command line: demo | train | search | evaluate | predict | export."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

DEFAULT_BODY = "sentence-transformers/all-MiniLM-L6-v2"


def _add_data_args(p: argparse.ArgumentParser, labelled: bool = True) -> None:
    p.add_argument("--text-column", default="text")
    if labelled:
        p.add_argument("--label-column", default="label")


def _add_train_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", help="training data: CSV, JSON or JSONL file")
    _add_data_args(p)
    p.add_argument("--model", default=DEFAULT_BODY, help="body: hub name or local folder")
    p.add_argument("--shots", type=int, default=None, help="examples per class to sample (default: all)")
    p.add_argument("--eval-data", default=None)
    p.add_argument("--output-dir", default="setfit-lite-model")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--num-epochs", type=int, default=None)
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--objective", choices=["sentence_batch", "pairs"], default=None)
    p.add_argument("--backend", default="auto")
    p.add_argument("--precision", default="auto", choices=["auto", "fp32", "bf16", "fp16"])
    p.add_argument("--max-length", type=int, default=None)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="setfit-lite", description="Few-shot text classification.")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="train on 8 examples per class of a shipped SST-2 sample and evaluate")
    demo.add_argument("--output-dir", default="setfit-lite-demo-model")
    demo.add_argument("--model", default=DEFAULT_BODY)
    demo.add_argument("--seed", type=int, default=0)
    demo.add_argument("--shots", type=int, default=8)

    train = sub.add_parser("train", help="train a model and save it")
    _add_train_args(train)

    search = sub.add_parser("search", help="search hyperparameters with Optuna (each trial scored on --eval-data)")
    _add_train_args(search)
    search.add_argument("--space", default=None,
                        help="JSON file: a SigOpt-style parameter list or experiment dict (default: setfit's space)")
    search.add_argument("--n-trials", type=int, default=None, help="default: the experiment's budget, else 10")
    search.add_argument("--storage", default=None,
                        help="Optuna storage: a URL (sqlite:///study.db), a .db path or a .log/.jsonl journal file")
    search.add_argument("--study-name", default=None,
                        help="with --storage: an existing study of this name is continued (resume, or share it "
                             "between processes)")
    search.add_argument("--direction", choices=["maximize", "minimize"], default=None)
    search.add_argument("--output", default=None, help="write the best trial as JSON to this file")

    evaluate = sub.add_parser("evaluate", help="evaluate a saved model on labelled data")
    evaluate.add_argument("model_dir")
    evaluate.add_argument("data")
    _add_data_args(evaluate)
    evaluate.add_argument("--metric", default="accuracy")
    evaluate.add_argument("--group-by", default=None, help="also report the metric per value of this column")

    predict = sub.add_parser("predict", help="predict labels for a file or stdin, one JSON line per text")
    predict.add_argument("model_dir", help="a saved model, or a folder written by `setfit-lite export`")
    predict.add_argument("data", nargs="?", default="-", help="CSV/JSON/JSONL file, a text file, or - for stdin")
    predict.add_argument("--text-column", default="text")
    predict.add_argument("--batch-size", type=int, default=64)
    predict.add_argument("--proba", action="store_true", help="also print class probabilities")
    predict.add_argument("--runtime", choices=["onnxruntime", "openvino"], default="onnxruntime",
                         help="runtime for an exported (ONNX) model")

    export = sub.add_parser("export", help="export a saved model to ONNX (one graph: token ids to probabilities)")
    export.add_argument("model_dir")
    export.add_argument("output_dir")
    export.add_argument("--quantize", choices=["int8"], default=None, help="dynamic int8 weight quantisation")
    export.add_argument("--opset", type=int, default=17)
    return parser


def _train_args(ns: argparse.Namespace) -> Any:
    from .training_args import TrainingArguments

    kwargs: dict[str, Any] = {"seed": ns.seed, "backend": ns.backend, "precision": ns.precision,
                              "output_dir": ns.output_dir}
    for name in ("num_epochs", "batch_size", "objective", "max_length"):
        if getattr(ns, name) is not None:
            kwargs[name] = getattr(ns, name)
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
    from .modeling import SetFitModel
    from .trainer import Trainer

    args = _train_args(ns)
    rows, eval_rows = _train_eval_rows(ns)
    model = SetFitModel.from_pretrained(ns.model)
    trainer = Trainer(model=model, args=args, train_dataset=rows, eval_dataset=eval_rows)
    start = time.perf_counter()
    trainer.train()
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
    from .search import load_space
    from .trainer import Trainer

    if ns.study_name and not ns.storage:
        raise ValueError("--study-name needs --storage (an in-memory study cannot be continued)")
    space = load_space(ns.space) if ns.space else None
    if isinstance(space, dict):  # explicit options override the experiment's budget and objective
        space = dict(space)
        if ns.n_trials is not None:
            space["observation_budget"] = ns.n_trials
        if ns.direction is not None and space.get("metrics"):
            space["metrics"] = [{**m, "objective": ns.direction} if m.get("strategy", "optimize") == "optimize"
                                else m for m in space["metrics"]]
    args = _train_args(ns)
    rows, eval_rows = _train_eval_rows(ns)
    if eval_rows is None:
        raise ValueError("search needs --eval-data: each trial is scored on it")
    trainer = Trainer(args=args, train_dataset=rows, eval_dataset=eval_rows,
                      model_init=lambda: SetFitModel.from_pretrained(ns.model))
    options: dict[str, Any] = {"storage": ns.storage, "study_name": ns.study_name,
                               "load_if_exists": bool(ns.study_name)}
    if ns.n_trials is not None:
        options["n_trials"] = ns.n_trials
    if ns.direction is not None:
        options["direction"] = ns.direction
    best = trainer.hyperparameter_search(hp_space=space, **options)
    study = best.study
    result: dict[str, Any] = {"run_id": best.run_id, "objective": best.objective,
                              "hyperparameters": best.hyperparameters, "study_name": study.study_name,
                              "direction": study.direction.name.lower(), "n_trials": len(study.trials)}
    text = json.dumps(result, default=str)
    if ns.output:
        Path(ns.output).write_text(json.dumps(result, indent=2, default=str) + "\n", encoding="utf-8")
    print(text)
    return result


def cmd_evaluate(ns: argparse.Namespace) -> dict[str, Any]:
    from .data import to_labeled_data
    from .modeling import SetFitModel
    from .trainer import Trainer

    model = SetFitModel.from_pretrained(ns.model_dir)
    data = to_labeled_data(ns.data, text_column=ns.text_column, label_column=ns.label_column)
    trainer = Trainer(model=model, metric=ns.metric)
    result = trainer.evaluate({"text": data.texts, "label": data.labels, **data.columns}, group_by=ns.group_by)
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
        for line in sys.stdin:
            line = line.rstrip("\n")
            if line.strip():
                yield _maybe_json_text(line, text_column)
        return
    path = Path(source)
    if path.suffix.lower() in (".csv", ".json", ".jsonl"):
        from .data import to_labeled_data

        yield from to_labeled_data(path, text_column=text_column, require_labels=False).texts
        return
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                yield line.rstrip("\n")


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
    from itertools import islice

    from .export import ONNX_CONFIG_NAME
    from .modeling import SetFitModel

    if (Path(ns.model_dir) / ONNX_CONFIG_NAME).is_file():
        model: Any = SetFitModel.from_onnx(ns.model_dir, runtime=ns.runtime)
    else:
        model = SetFitModel.from_pretrained(ns.model_dir)
    texts = _read_texts(ns.data, ns.text_column)
    while chunk := list(islice(texts, 4096)):
        proba = model.predict_proba(chunk, batch_size=ns.batch_size)
        labels = model.labels_from_proba(proba)
        for text, label, p in zip(chunk, labels, proba):
            row: dict[str, Any] = {"text": text, "label": label.tolist() if hasattr(label, "tolist") else label}
            if ns.proba:
                row["proba"] = {str(k): round(float(v), 6) for k, v in zip(model.labels, p)}
            print(json.dumps(row, ensure_ascii=False, default=str))


def cmd_export(ns: argparse.Namespace) -> dict[str, Any]:
    from .modeling import SetFitModel

    model = SetFitModel.from_pretrained(ns.model_dir)
    out = model.export_onnx(ns.output_dir, quantize=ns.quantize, opset=ns.opset)
    result = {"exported_to": str(out), "quantized": ns.quantize, "labels": model.labels}
    print(json.dumps(result, default=str))
    return result


def cmd_demo(ns: argparse.Namespace) -> dict[str, Any]:
    """8 examples per class of the shipped SST-2 sample, evaluated on the rest."""
    from .data import demo_dataset, sample_dataset
    from .modeling import SetFitModel
    from .trainer import Trainer
    from .training_args import TrainingArguments

    data = demo_dataset()
    train = sample_dataset(data, label_column="label", num_samples=ns.shots, seed=ns.seed)
    train_texts = set(train["text"])
    test = data.filter(lambda row: row["text"] not in train_texts)
    print(f"setfit-lite demo: {len(train)} training sentences ({ns.shots} per class), {len(test)} test sentences "
          "from SST-2 (shipped sample)")
    model = SetFitModel.from_pretrained(ns.model, labels=["negative", "positive"])
    trainer = Trainer(model=model, args=TrainingArguments(seed=ns.seed), train_dataset=train, eval_dataset=test,
                      metric="accuracy")
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


def main(argv: list[str] | None = None) -> int:
    ns = build_parser().parse_args(argv)
    commands = {"demo": cmd_demo, "train": cmd_train, "search": cmd_search, "evaluate": cmd_evaluate,
                "predict": cmd_predict, "export": cmd_export}
    try:
        commands[ns.command](ns)
    except (ValueError, TypeError, OSError, ImportError) as error:
        print(f"setfit-lite {ns.command}: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
