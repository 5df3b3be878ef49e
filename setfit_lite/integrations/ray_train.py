"""setfit_lite's `Trainer` inside Ray Train workers (``ray.train.torch.TorchTrainer``).

Ray Train starts ``ScalingConfig(num_workers=N)`` worker processes and initialises the torch process group (gloo on
CPUs, nccl on GPUs) before the training function runs. The Trainer's backend takes that group as it is (rank and
world size from it, the device from ``ray.train.torch.get_device()``), trains data-parallel exactly as under
torchrun, and leaves the group to Ray. Only rank 0 saves; checkpoints and the trained model reach the run's storage
through ``ray.train.report``. `check_train_loop_config` checks the config in the driver before Ray starts the
workers and makes its relative paths absolute (the workers run in a folder of Ray's). Install with
``pip install "setfit-lite[ray]"``; the page ``docs/ray_train.md`` has a complete example.
"""

from __future__ import annotations

import numbers
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from ..config.rules import check_rule, folder, integer
from ..modeling import SetFitModel
from ..trainer import Trainer
from ..training.cross_fit import check_folds_in_one_process
from ..training_args import TrainingArguments

__all__ = ["CONFIG_KEYS", "RayTrainReportCallback", "build_trainer", "check_train_loop_config", "report_model",
           "train_loop_per_worker", "train_on_worker"]

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
    """Hand each checkpoint the Trainer saves (``save_strategy``) to Ray Train, with the metrics logged since the
    previous checkpoint (the latest value of each; only ``step`` when nothing was logged in between).

    At every save all workers call ``ray.train.report``: rank 0 with the ``checkpoint-<step>`` folder as a
    ``ray.train.Checkpoint`` (Ray copies it to ``RunConfig.storage_path``; the folder itself stays where it is, so
    ``resume_from_checkpoint`` still finds it), the other ranks with none. As under torchrun, rank 0 writes the
    checkpoint with every rank's RNG state; resuming reads it on every rank (the same path on every node).

    Attributes:
        metrics: The numbers logged since the last report (each report empties it).
    """

    def __init__(self) -> None:
        self.metrics: dict[str, float] = {}

    def on_log(self, args: TrainingArguments, state: Any, control: Any, logs: Mapping[str, Any] | None = None,
               **kwargs: Any) -> None:
        self.metrics.update(_numbers(logs or {}))

    def on_save(self, args: TrainingArguments, state: Any, control: Any, **kwargs: Any) -> None:
        folder = Path(args.output_dir) / f"checkpoint-{state.global_step}" if state.is_world_process_zero else None
        metrics, self.metrics = self.metrics, {}
        _report({**metrics, "step": state.global_step}, folder)


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


def _training_args(config: Mapping[str, Any], num_workers: int) -> TrainingArguments:
    """The checks of ``config`` that need no model and no data (its keys, ``model_kwargs``, ``save_to``, ``args``
    as `TrainingArguments`, the rules of training on ``num_workers`` processes), and the `TrainingArguments`."""
    if not isinstance(config, Mapping):
        raise TypeError(f"train_loop_config must be a dict, got {type(config).__name__}")
    unknown = sorted(set(config) - set(CONFIG_KEYS))
    if unknown:
        raise TypeError(f"train_loop_config has unknown key(s) {', '.join(map(repr, unknown))}; "
                        f"known: {', '.join(CONFIG_KEYS)}")
    missing = [key for key in ("model", "train_dataset") if config.get(key) is None]
    if missing:
        raise ValueError(f"train_loop_config needs {' and '.join(map(repr, missing))}")
    for key in ("model_kwargs", "args"):
        if not isinstance(config.get(key) or {}, Mapping):
            raise TypeError(f"train_loop_config[{key!r}] must be a dict of keyword arguments, got "
                            f"{type(config[key]).__name__}")
    if config.get("save_to") is not None:
        check_rule(folder(), "save_to", config["save_to"], owner="train_loop_config: ")
    args = TrainingArguments(**(config.get("args") or {}))
    check_folds_in_one_process(args.calibration, num_workers, f"{num_workers} Ray Train workers")
    return args


def _written_folders(config: Mapping[str, Any], args: TrainingArguments) -> dict[str, Any]:
    """The folders training writes into, by their names in ``config``: ``save_to``; ``output_dir`` with
    checkpoints (``save_strategy``) or with ``report_to`` logging into it (no ``logging_dir``); ``logging_dir``
    with ``report_to``."""
    reporting = args.report_to != ["none"]
    folders = {"save_to": config.get("save_to"),
               "args['output_dir']": args.output_dir
               if args.save_strategy != "no" or (reporting and args.logging_dir is None) else None,
               "args['logging_dir']": args.logging_dir if reporting else None}
    return {name: path for name, path in folders.items() if path is not None}


def _absolute(path: str | os.PathLike) -> str:
    """``path`` made absolute against this process's working directory."""
    return os.path.abspath(os.fspath(path))


def check_train_loop_config(config: Mapping[str, Any], num_workers: int) -> dict[str, Any]:
    """Check Ray's `train_loop_config` in the driver, before `TorchTrainer(...).fit()` starts the workers, and
    return it with its relative paths made absolute; pass what it returns as `train_loop_config`.

    It raises what the workers would raise only once Ray has started them (tens of seconds later): an unknown key,
    no `model` or `train_dataset`, `args` that `TrainingArguments` refuses, and `calibration="temperature"` with
    several workers (it trains whole models on folds of the data in one process). Ray's workers run in a working
    directory of Ray's (a temporary folder of the run), where a relative path would land; so `save_to`,
    `args["output_dir"]` (its default `"checkpoints"` included) and `args["logging_dir"]` are made absolute here,
    against the caller's working directory, and so are `model`, `train_dataset` and `eval_dataset` when they are
    relative paths that exist here. The workers refuse a relative folder they would write into.

    Args:
        config: Ray's `train_loop_config`, as `build_trainer` reads it.
        num_workers: The Ray Train workers, `ScalingConfig(num_workers=...)`.

    Returns:
        A copy of `config` with absolute paths (`config` itself is not changed).

    Raises:
        TypeError: An unknown key, `args` or `model_kwargs` not a dict, or a path or `num_workers` of another
            type.
        ValueError: No `model` or no `train_dataset`, `num_workers` < 1, `args` that `TrainingArguments`
            refuses, or `calibration="temperature"` with several workers.

    Example:
        ```python
        config = check_train_loop_config({"model": "sentence-transformers/all-MiniLM-L6-v2",
                                          "train_dataset": train, "save_to": "model"}, num_workers=2)
        assert config["save_to"] == os.path.abspath("model")  # the workers save there
        ```
    """
    check_rule(integer(low=1), "num_workers", num_workers, owner="check_train_loop_config: ")
    args = _training_args(config, num_workers)
    given = dict(config.get("args") or {})
    given["output_dir"] = _absolute(args.output_dir)
    if args.logging_dir is not None:
        given["logging_dir"] = _absolute(args.logging_dir)
    checked = {**config, "args": given}
    if config.get("save_to") is not None:
        checked["save_to"] = _absolute(config["save_to"])
    for key in ("model", "train_dataset", "eval_dataset"):
        value = config.get(key)
        if isinstance(value, (str, os.PathLike)) and not os.path.isabs(value) and os.path.exists(value):
            checked[key] = _absolute(value)
    return checked


def _world_size() -> int:
    """The processes of the torch process group this one belongs to (Ray Train's workers); 1 without one."""
    import torch.distributed as dist

    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def build_trainer(config: Mapping[str, Any]) -> Trainer:
    """The Trainer `train_loop_per_worker` trains, built from Ray's `train_loop_config`.

    The config is checked as `check_train_loop_config` checks it in the driver (best before Ray starts the
    workers), for the processes of the group this one belongs to, before the model is loaded; a relative folder
    training would write into is refused (it would resolve in the worker's working directory, a temporary folder
    of Ray's).

    Args:
        config: The keys of `CONFIG_KEYS`: `model` (a folder or name for `SetFitModel.from_pretrained`, with
            `model_kwargs`), `train_dataset` and `eval_dataset` (anything `Trainer` takes: Ray ships them to every
            worker, a few-shot set is small; or a file path every node can read), `args` (`TrainingArguments`
            keyword arguments), `metric` and `column_mapping` (as `Trainer`'s), `report_checkpoints` (default
            True: report every checkpoint the Trainer saves to Ray) and `save_to`.

    Returns:
        The [`Trainer`][setfit_lite.trainer.Trainer].

    Raises:
        TypeError: An unknown key, or `args` or `model_kwargs` not a dict.
        ValueError: No `model` or no `train_dataset`, `args` that `TrainingArguments` refuses,
            `calibration="temperature"` with several workers, or a relative `save_to`, `output_dir` or
            `logging_dir` that training would write into.
    """
    args = _training_args(config, _world_size())
    relative = {name: path for name, path in _written_folders(config, args).items() if not os.path.isabs(path)}
    if relative:
        shown = ", ".join(f"{name}={os.fspath(path)!r}" for name, path in relative.items())
        raise ValueError(f"train_loop_config: {shown} {'is' if len(relative) == 1 else 'are'} relative, and Ray's "
                         "workers run in a working directory of Ray's (a temporary folder): give absolute paths, "
                         "or pass the config through check_train_loop_config(config, num_workers) in the driver, "
                         "which makes them absolute")
    model = SetFitModel.from_pretrained(config["model"], **(config.get("model_kwargs") or {}))
    callbacks = [RayTrainReportCallback()] if config.get("report_checkpoints", True) else []
    return Trainer(model=model, args=args, train_dataset=config["train_dataset"],
                   eval_dataset=config.get("eval_dataset"), metric=config.get("metric", "accuracy"),
                   column_mapping=config.get("column_mapping"), callbacks=callbacks)


def train_loop_per_worker(config: Mapping[str, Any]) -> None:
    """Ray Train's `TorchTrainer` training function: build the Trainer, train it data-parallel over Ray's workers,
    evaluate on rank 0 when there is an `eval_dataset`, and report the model (`train_on_worker`). It returns
    nothing: Ray pickles a training function's return value, and the model reaches you as `result.checkpoint`.

    Args:
        config: Ray's `train_loop_config`, as [`build_trainer`][setfit_lite.integrations.ray_train.build_trainer]
            reads it; the model is reported into `config["save_to"]` when given.

    Example:
        ```python
        from ray.train import ScalingConfig
        from ray.train.torch import TorchTrainer

        from setfit_lite.integrations.ray_train import check_train_loop_config, train_loop_per_worker

        config = {"model": "sentence-transformers/all-MiniLM-L6-v2", "train_dataset": train,
                  "args": {"num_epochs": 1}, "save_to": "model"}
        config = check_train_loop_config(config, num_workers=2)  # before Ray starts; paths made absolute
        result = TorchTrainer(train_loop_per_worker, train_loop_config=config,
                              scaling_config=ScalingConfig(num_workers=2)).fit()
        ```
    """
    train_on_worker(config)


def train_on_worker(config: Mapping[str, Any]) -> Trainer:
    """What `train_loop_per_worker` does, returning the trainer (for a training function of your own that goes on
    with it): build the Trainer, train it data-parallel over Ray's workers, evaluate on rank 0 when there is an
    `eval_dataset`, and report the model.

    Args:
        config: Ray's `train_loop_config`, as [`build_trainer`][setfit_lite.integrations.ray_train.build_trainer]
            reads it; the model is reported into `config["save_to"]` when given.

    Returns:
        The trainer (every rank holds the same trained model).
    """
    trainer = build_trainer(config)
    trainer.train()
    metrics = {"global_step": trainer.state.global_step, "train_seconds": trainer.state.train_seconds}
    if trainer.eval_dataset is not None and trainer.is_world_process_zero():
        metrics.update(_numbers(trainer.evaluate()))
    report_model(trainer, metrics, config.get("save_to"))
    return trainer
