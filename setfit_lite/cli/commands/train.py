"""``setfit-lite train``: train a model and save it; ``--save-steps`` checkpoints, ``--resume`` continues."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from ...config.params import TRAINING_RULES, argument_type
from ..inputs import check_output
from ..options import CHECKPOINTS
from ..training import add_train_args, train_args, train_eval_rows

HELP = "train a model and save it"


def add_arguments(train: argparse.ArgumentParser) -> None:
    add_train_args(train)
    train.add_argument("--save-steps", type=argument_type("save_steps", TRAINING_RULES), default=None,
                       help=f"checkpoint body training every N steps into OUTPUT_DIR/{CHECKPOINTS} (and on "
                            "Ctrl-C/SIGTERM); the latest checkpoint is kept after training")
    train.add_argument("--resume", action="store_true",
                       help=f"continue from the latest complete checkpoint in OUTPUT_DIR/{CHECKPOINTS}")


def run(ns: argparse.Namespace) -> dict[str, Any]:
    from ...config.rules import check_writable_folder
    from ...modeling import SetFitModel
    from ...serialization import check_can_update
    from ...trainer import Trainer
    from ...training.checkpoints import latest_checkpoint

    check_output(ns.output_dir, ns.model, ns.data, ns.eval_data, suffix="trained")
    # a file there or above it, or a folder that cannot be written in, is refused before training, not after
    check_writable_folder("--output-dir", ns.output_dir)
    check_can_update(ns.output_dir)  # so is a file of the user's that the save would have to replace
    args = train_args(ns)
    if ns.save_steps and not ns.resume and (earlier := latest_checkpoint(args.output_dir)) is not None:
        raise ValueError(f"{earlier} is a checkpoint of an earlier run: add --resume to continue it, or remove "
                         f"{args.output_dir} to start over")
    rows, eval_rows = train_eval_rows(ns)
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
