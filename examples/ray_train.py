"""Train a setfit_lite model with Ray Train: one Trainer per Ray worker, data-parallel (DDP) over Ray's process group.

    python examples/ray_train.py                      # a local Ray instance, 2 CPU workers, MiniLM from PyPI
    python examples/ray_train.py --address auto --workers 8 --gpu --storage /shared/ray_results   # a running cluster

``--storage`` must be a folder every node sees (or a cloud URI Ray supports) on a cluster of several machines.
Prints where Ray stored the trained model and the model's predictions on two new sentences.
"""

from __future__ import annotations

import argparse
import tempfile

import ray
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer

from setfit_lite import SetFitModel
from setfit_lite.integrations.ray_train import check_train_loop_config, train_loop_per_worker

TRAIN = {
    "text": ["a moving, beautifully acted film", "the best thing I have seen this year", "warm, funny and wise",
             "a delight from start to finish", "dull, long and pointless", "the plot makes no sense at all",
             "I walked out after an hour", "flat characters and a lazy script"],
    "label": ["positive"] * 4 + ["negative"] * 4,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--address", default=None,
                        help="HOST:PORT of a running cluster; default: the one on this machine, else a new one "
                             "('local': always a new one)")
    parser.add_argument("--workers", type=int, default=2, help="Ray Train workers (processes), default 2")
    parser.add_argument("--gpu", action="store_true", help="one GPU per worker (nccl); default: CPU workers (gloo)")
    parser.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--storage", default=None, help="Ray's storage_path (default: a temporary folder)")
    args = parser.parse_args()

    config = {
        "model": args.model,
        "train_dataset": TRAIN,  # shipped to every worker; each trains on its share of the batches
        "args": {"num_epochs": 1, "seed": 0, "show_progress_bar": False},
    }
    # checked before Ray starts (a mistake is an error now, not once the workers are up); a relative path (a
    # local --model folder, output_dir) is made absolute: the workers run in a folder of Ray's
    config = check_train_loop_config(config, num_workers=args.workers)
    ray.init(address=args.address)
    trainer = TorchTrainer(
        train_loop_per_worker,
        train_loop_config=config,
        scaling_config=ScalingConfig(num_workers=args.workers, use_gpu=args.gpu),
        run_config=RunConfig(name="setfit-lite", storage_path=args.storage or tempfile.mkdtemp(prefix="ray-")),
    )
    result = trainer.fit()
    print("model saved by Ray at", result.checkpoint.path, "metrics", result.metrics)
    with result.checkpoint.as_directory() as folder:
        model = SetFitModel.from_pretrained(folder)
        print(model.predict(["an instant classic", "a waste of two hours"]))


if __name__ == "__main__":
    main()
