"""setfit_lite's `Trainer` inside Ray Train workers (``ray.train.torch.TorchTrainer``).

Ray Train starts ``ScalingConfig(num_workers=N)`` worker processes and initialises the torch process group (gloo on
CPUs, nccl on GPUs) before the training function runs. The Trainer's backend takes that group as it is (rank and
world size from it, the device from ``ray.train.torch.get_device()``), trains data-parallel exactly as under
torchrun, and leaves the group to Ray. Only rank 0 saves; checkpoints and the trained model reach the run's storage
through ``ray.train.report``. Install with ``pip install "setfit-lite[ray]"``; the page ``docs/ray_train.md`` has a
complete example.
"""

from __future__ import annotations

import numbers
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from ..modeling import SetFitModel
from ..trainer import Trainer
from ..training_args import TrainingArguments

__all__ = ["CONFIG_KEYS", "RayTrainReportCallback", "build_trainer", "report_model", "train_loop_per_worker"]

CONFIG_KEYS = ("model", "model_kwargs", "train_dataset", "eval_dataset", "args", "metric", "column_mapping",
               "report_checkpoints", "save_to")
"""The keys `train_loop_per_worker` reads from Ray's `train_loop_config` (`"model"` and `"train_dataset"` are
required)."""


def _numbers(logs: Mapping[str, Any]) -> dict[str, float]:
    """The numeric entries of ``logs`` (what Ray's metrics hold)."""
    return {key: float(value) for key, value in logs.items()
            if isinstance(value, numbers.Real) and not isinstance(value, bool)}


def _report(metrics: Mapping[str, Any], folder: str | Path | None) -> None:
    """``ray.train.report(metrics)`` with ``folder`` as the checkpoint where given. Every worker must call it as
    often as the others: it is a barrier across Ray Train's workers."""
    import ray.train

    checkpoint = ray.train.Checkpoint.from_directory(str(folder)) if folder is not None else None
    ray.train.report(dict(metrics), checkpoint=checkpoint)


class RayTrainReportCallback(TrainerCallback):
    """Hand each checkpoint the Trainer saves (``save_strategy``) to Ray Train, with the metrics logged since.

    At every save all workers call ``ray.train.report``: rank 0 with the ``checkpoint-<step>`` folder as a
    ``ray.train.Checkpoint`` (Ray copies it to ``RunConfig.storage_path``; the folder itself stays where it is, so
    ``resume_from_checkpoint`` still finds it), the other ranks with none. As under torchrun, rank 0 writes the
    checkpoint with every rank's RNG state; resuming reads it on every rank (the same path on every node).
    """

    def __init__(self) -> None:
        self.metrics: dict[str, float] = {}

    def on_log(self, args: TrainingArguments, state: Any, control: Any, logs: Mapping[str, Any] | None = None,
               **kwargs: Any) -> None:
        self.metrics.update(_numbers(logs or {}))

    def on_save(self, args: TrainingArguments, state: Any, control: Any, **kwargs: Any) -> None:
        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}" if state.is_world_process_zero else None
        _report({**self.metrics, "step": state.global_step}, folder)


def report_model(trainer: Trainer, metrics: Mapping[str, Any] | None = None,
                 save_to: str | Path | None = None) -> bool:
    """Report the trained model to Ray Train as the run's latest checkpoint; call it on every worker.

    Rank 0 saves the model and reports the folder; Ray copies it to the run's storage, where `Result.checkpoint`
    points to it (`SetFitModel.from_pretrained(result.checkpoint.path)`). The other ranks report `metrics` only.

    Args:
        trainer: The trained [`Trainer`][setfit_lite.trainer.Trainer].
        metrics: The numbers reported with the checkpoint.
        save_to: The folder rank 0 saves into; None for a temporary one.

    Returns:
        Whether this process saved.
    """
    with tempfile.TemporaryDirectory(prefix="setfit-lite-ray-") as tmp:
        folder = Path(save_to) if save_to is not None else Path(tmp) / "model"
        saved = trainer.save_model(folder)
        _report(metrics or {}, folder if saved else None)
    return saved


def build_trainer(config: Mapping[str, Any]) -> Trainer:
    """The Trainer `train_loop_per_worker` trains, built from Ray's `train_loop_config`.

    Args:
        config: The keys of `CONFIG_KEYS`: `model` (a folder or name for `SetFitModel.from_pretrained`, with
            `model_kwargs`), `train_dataset` and `eval_dataset` (anything `Trainer` takes: Ray ships them to every
            worker, a few-shot set is small; or a file path every node can read), `args` (`TrainingArguments`
            keyword arguments), `metric` and `column_mapping` (as `Trainer`'s), `report_checkpoints` (default
            True: report every checkpoint the Trainer saves to Ray) and `save_to`.

    Returns:
        The [`Trainer`][setfit_lite.trainer.Trainer].

    Raises:
        TypeError: An unknown key.
        ValueError: No `model` or no `train_dataset`.
    """
    unknown = sorted(set(config) - set(CONFIG_KEYS))
    if unknown:
        raise TypeError(f"train_loop_config has unknown key(s) {', '.join(map(repr, unknown))}; "
                        f"known: {', '.join(CONFIG_KEYS)}")
    missing = [key for key in ("model", "train_dataset") if config.get(key) is None]
    if missing:
        raise ValueError(f"train_loop_config needs {' and '.join(map(repr, missing))}")
    model = SetFitModel.from_pretrained(config["model"], **(config.get("model_kwargs") or {}))
    callbacks = [RayTrainReportCallback()] if config.get("report_checkpoints", True) else []
    return Trainer(model=model, args=TrainingArguments(**(config.get("args") or {})),
                   train_dataset=config["train_dataset"], eval_dataset=config.get("eval_dataset"),
                   metric=config.get("metric", "accuracy"), column_mapping=config.get("column_mapping"),
                   callbacks=callbacks)


def train_loop_per_worker(config: Mapping[str, Any]) -> Trainer:
    """Ray Train's `TorchTrainer` training function: build the Trainer, train it data-parallel over Ray's workers,
    evaluate on rank 0 when there is an `eval_dataset`, and report the model.

    Args:
        config: Ray's `train_loop_config`, as [`build_trainer`][setfit_lite.integrations.ray_train.build_trainer]
            reads it; the model is reported into `config["save_to"]` when given.

    Returns:
        The trainer (every rank holds the same trained model).

    Example:
        ```python
        from ray.train import ScalingConfig
        from ray.train.torch import TorchTrainer

        from setfit_lite.integrations.ray_train import train_loop_per_worker

        config = {"model": "sentence-transformers/all-MiniLM-L6-v2", "train_dataset": train,
                  "args": {"num_epochs": 1}}
        result = TorchTrainer(train_loop_per_worker, train_loop_config=config,
                              scaling_config=ScalingConfig(num_workers=2)).fit()
        ```
    """
    trainer = build_trainer(config)
    trainer.train()
    metrics = {"global_step": trainer.state.global_step, "train_seconds": trainer.state.train_seconds}
    if trainer.eval_dataset is not None and trainer.is_world_process_zero():
        metrics.update(_numbers(trainer.evaluate()))
    report_model(trainer, metrics, config.get("save_to"))
    return trainer
