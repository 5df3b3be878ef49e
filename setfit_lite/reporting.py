"""``TrainingArguments(report_to=...)``: transformers' own reporting callbacks (TensorBoard, MLflow, ...) on
setfit_lite's training loop.

transformers' integration callbacks (``transformers.integrations``) read a transformers ``TrainingArguments`` and a
``PreTrainedModel``; `IntegrationCallback` gives them those views of setfit_lite's arguments and model (the
body's transformers model, whose config they log), and otherwise receives the events the loop dispatches: the
losses and learning rate every ``logging_steps``, the ``eval_*`` metrics of each evaluation during training, and at
the end ``train_runtime`` with the final model's ``final_eval_*`` metrics on the eval dataset.

Nothing here imports transformers' integrations (hence torch) unless a reporting integration is asked for.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any

__all__ = ["IntegrationCallback", "check_report_to", "reporting_callbacks"]

_EXTRAS = {"tensorboard": "tensorboard", "mlflow": "mlflow"}  # integrations with a setfit_lite extra


def check_report_to(names: Sequence[str]) -> list[str]:
    """``report_to`` checked against transformers' integrations: ``["none"]`` (nothing), ``["all"]`` (every
    installed one) or names of ``transformers.integrations``' callbacks. An unknown name is a ``ValueError``, a
    known one whose package is missing an ``ImportError`` naming what to install."""
    names = list(names)
    if names in (["none"], [], ["all"]):
        return names or ["none"]
    from transformers.integrations.integration_utils import (
        INTEGRATION_TO_CALLBACK,
        get_available_reporting_integrations,
    )

    unknown = [name for name in names if name not in INTEGRATION_TO_CALLBACK]
    if unknown:
        raise ValueError(f"TrainingArguments: report_to got unknown integration(s) {unknown}: use 'none', 'all' or "
                         f"names among {sorted(INTEGRATION_TO_CALLBACK)}")
    missing = [name for name in names if name not in get_available_reporting_integrations()]
    if missing:
        hints = [f'pip install "setfit_lite[{_EXTRAS[name]}]"' if name in _EXTRAS else f"install {name}'s package"
                 for name in missing]
        raise ImportError(f"TrainingArguments: report_to={missing} is not installed here ({'; '.join(hints)})")
    return names


def reporting_callbacks(args: Any) -> list[IntegrationCallback]:
    """One `IntegrationCallback` per integration ``args.report_to`` asks for (none for ``["none"]``)."""
    if args.report_to == ["none"]:
        return []
    from transformers.integrations import get_reporting_integration_callbacks

    report_to = "all" if args.report_to == ["all"] else args.report_to
    return [IntegrationCallback(cls()) for cls in get_reporting_integration_callbacks(report_to)]


class _TransformersArgs:
    """setfit_lite's ``TrainingArguments`` with what transformers' callbacks read of theirs: ``to_dict``,
    ``to_json_string``, ``to_sanitized_dict``, and ``logging_dir`` (default, as transformers:
    ``output_dir/runs/<date>_<host>``)."""

    def __init__(self, args: Any, logging_dir: str) -> None:
        self._args, self.logging_dir = args, logging_dir

    def __getattr__(self, name: str) -> Any:
        return getattr(self._args, name)

    def to_dict(self) -> dict[str, Any]:
        return self._args.to_dict()

    def to_json_string(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    def to_sanitized_dict(self) -> dict[str, Any]:
        """Values as TensorBoard's hparams take them: numbers, strings and booleans; others as strings."""
        return {k: v if isinstance(v, (bool, int, float, str)) else str(v) for k, v in self.to_dict().items()}


class IntegrationCallback:
    """Runs one of transformers' reporting callbacks (``callback``) on setfit_lite's training loop."""

    def __init__(self, callback: Any) -> None:
        self.callback = callback
        self._args: tuple[Any, _TransformersArgs] | None = None

    def __repr__(self) -> str:
        return f"IntegrationCallback({type(self.callback).__name__})"

    def _view(self, args: Any) -> _TransformersArgs:
        if self._args is None or self._args[0] is not args:
            logging_dir = args.logging_dir
            if logging_dir is None:
                try:
                    from transformers.integrations.integration_utils import default_logdir
                except ImportError:  # transformers 4
                    from transformers.training_args import default_logdir

                logging_dir = os.path.join(args.output_dir, default_logdir())
            logging_dir = os.fspath(logging_dir)
            if hasattr(self.callback, "logging_dir") and self.callback.logging_dir is None:  # TensorBoard (5.x)
                self.callback.logging_dir = logging_dir
            self._args = (args, _TransformersArgs(args, logging_dir))
        return self._args[1]

    def __getattr__(self, event: str) -> Any:
        if not event.startswith("on_") or not hasattr(self.callback, event):
            raise AttributeError(event)
        method = getattr(self.callback, event)

        def dispatch(args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> Any:
            body = getattr(model, "model_body", None)
            first = body[0] if body is not None and len(body) else None
            return method(self._view(args), state, control, model=getattr(first, "auto_model", None), **kwargs)

        return dispatch
