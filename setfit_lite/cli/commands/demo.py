"""``setfit-lite demo``: train on 8 examples per class of the shipped SST-2 sample and evaluate on the rest."""

from __future__ import annotations

import argparse
import time
from typing import Any

from ...config.params import TRAINING_RULES, argument_type
from ..inputs import check_output
from ..options import DEFAULT_BODY

HELP = "train on 8 examples per class of a shipped SST-2 sample and evaluate"


def add_arguments(demo: argparse.ArgumentParser) -> None:
    demo.add_argument("--output-dir", default="setfit-lite-demo-model",
                      help="the folder the model is saved to (default: %(default)s)")
    demo.add_argument("--model", default=DEFAULT_BODY, help="body: hub name or local folder (default: %(default)s)")
    demo.add_argument("--seed", type=argument_type("seed", TRAINING_RULES), default=0,
                      help="random seed of sampling and training (default: %(default)s)")
    demo.add_argument("--shots", type=argument_type("num_samples"), default=8,
                      help="training examples per class (default: %(default)s)")


def run(ns: argparse.Namespace) -> dict[str, Any]:
    """8 examples per class of the shipped SST-2 sample, evaluated on the rest."""
    from ...data import demo_dataset, sample_dataset
    from ...modeling import SetFitModel
    from ...trainer import Trainer
    from ...training_args import TrainingArguments

    check_output(ns.output_dir, ns.model, suffix="demo")
    data = demo_dataset()
    train = sample_dataset(data, label_column="label", num_samples=ns.shots, seed=ns.seed)
    train_texts = set(train["text"])
    test = data.select([i for i, text in enumerate(data["text"]) if text not in train_texts])  # no progress bar
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
