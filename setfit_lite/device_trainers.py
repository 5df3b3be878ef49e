"""``GaudiTrainer(..., gaudi_config=...)`` and ``IPUTrainer(..., ipu_config=...)``: setfit_lite's one Trainer under
the names optimum-habana and optimum-graphcore users know.

Each is `setfit_lite.Trainer` with ``backend`` set to its device and the config passed as the backend
option (``TrainingArguments(backend="hpu", backend_options={"gaudi_config": ...})``): nothing else differs.
``from setfit_lite import GaudiTrainer, IPUTrainer``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .trainer import Trainer
from .training_args import TrainingArguments

__all__ = ["GaudiTrainer", "IPUTrainer"]


class _DeviceTrainer(Trainer):
    """A `Trainer` fixed to the backend `backend_name`, its config given as `config_option`."""

    backend_name: str
    config_option: str

    def __init__(self, *args: Any, config: Any = None, **kwargs: Any) -> None:
        self.device_config = config
        super().__init__(*args, **kwargs)
        self.args = self.on_device(self.args)

    def on_device(self, args: TrainingArguments) -> TrainingArguments:
        """``args`` with this trainer's backend and config (a different backend or a second config is an error).

        A backend instance of this trainer's kind (its ``name`` is `backend_name`) is kept as built, with its own
        config; the config cannot be given to the trainer as well.
        """
        if not isinstance(args.backend, str):
            return self._on_instance(args)
        if args.backend not in ("auto", self.backend_name):
            raise ValueError(f"{type(self).__name__} trains on backend {self.backend_name!r}, but its "
                             f"TrainingArguments ask for backend={args.backend!r}: use setfit_lite.Trainer for that")
        options = dict(args.backend_options or {})
        if self.device_config is not None:
            if options.get(self.config_option, self.device_config) is not self.device_config:
                raise ValueError(f"{self.config_option} given both to {type(self).__name__} and in "
                                 f"TrainingArguments.backend_options: give it once")
            options[self.config_option] = self.device_config
        return args.update({"backend": self.backend_name, "backend_options": options or None})

    def _on_instance(self, args: TrainingArguments) -> TrainingArguments:
        """``args`` as they are when their backend is an instance of this trainer's kind; ValueError otherwise."""
        backend = args.backend
        kind = type(backend).__name__
        name = getattr(backend, "name", None)
        if name != self.backend_name:
            raise ValueError(f"{type(self).__name__} trains on backend {self.backend_name!r}, but its "
                             f"TrainingArguments hold a {kind} (backend {name!r}): use setfit_lite.Trainer for that")
        if self.device_config is not None:
            raise ValueError(f"{self.config_option} was given to {type(self).__name__} with a {kind} instance, "
                             f"which keeps the config it was built with: build the {kind} with "
                             f"{self.config_option}=..., or pass the backend by name")
        return args

    def train(self, args: TrainingArguments | None = None, trial: Any = None, **kwargs: Any) -> None:
        """`Trainer.train`; ``args``, when given, runs on this trainer's backend too."""
        super().train(self.on_device(args) if args is not None else None, trial, **kwargs)


class GaudiTrainer(_DeviceTrainer):
    """[`Trainer`][setfit_lite.trainer.Trainer] on Intel Gaudi (backend `"hpu"`), under optimum-habana's name.

    The same as `Trainer(..., args=TrainingArguments(backend="hpu", backend_options={"gaudi_config": ...}))`;
    `train(args)` runs on Gaudi too.

    Args:
        *args: `Trainer`'s arguments.
        gaudi_config: A dict, a `gaudi_config.json` path or a folder holding one, or a
            [`GaudiConfig`][trainers.gaudi.GaudiConfig]; None for the defaults. See
            [Backends and devices](../backends.md).
        **kwargs: `Trainer`'s keyword arguments.

    Raises:
        ValueError: Training arguments that ask for another backend, a `gaudi_config` given twice, or a
            `gaudi_config` with a `GaudiBackend` instance (which keeps its own).

    Example:
        ```python
        from setfit_lite import GaudiTrainer, SetFitModel

        trainer = GaudiTrainer(model=SetFitModel.from_pretrained("sentence-transformers/all-MiniLM-L6-v2"),
                               train_dataset=train, gaudi_config={"use_fused_adam": True})
        trainer.train()
        ```
    """

    backend_name, config_option = "hpu", "gaudi_config"

    def __init__(self, *args: Any, gaudi_config: Mapping[str, Any] | str | os.PathLike | Any = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, config=gaudi_config, **kwargs)


class IPUTrainer(_DeviceTrainer):
    """[`Trainer`][setfit_lite.trainer.Trainer] on Graphcore IPUs (backend `"ipu"`), under optimum-graphcore's
    name.

    The same as `Trainer(..., args=TrainingArguments(backend="ipu", backend_options={"ipu_config": ...}))`;
    `train(args)` runs on IPUs too.

    Args:
        *args: `Trainer`'s arguments.
        ipu_config: A dict, an `ipu_config.json` path or a folder holding one, or an
            [`IpuConfig`][trainers.ipu.IpuConfig]; None for the defaults. See
            [Backends and devices](../backends.md).
        **kwargs: `Trainer`'s keyword arguments.

    Raises:
        ValueError: Training arguments that ask for another backend, an `ipu_config` given twice, or an
            `ipu_config` with an `IpuBackend` instance (which keeps its own).

    Example:
        ```python
        from setfit_lite import IPUTrainer, SetFitModel

        trainer = IPUTrainer(model=SetFitModel.from_pretrained("sentence-transformers/all-MiniLM-L6-v2"),
                             train_dataset=train, ipu_config={"replication_factor": 2})
        trainer.train()
        ```
    """

    backend_name, config_option = "ipu", "ipu_config"

    def __init__(self, *args: Any, ipu_config: Mapping[str, Any] | str | os.PathLike | Any = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, config=ipu_config, **kwargs)
