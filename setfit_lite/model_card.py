"""A short model card (README.md) written beside every saved model: YAML metadata the Hugging Face Hub reads
(written by ``huggingface_hub.ModelCardData``), then a Markdown summary."""

from __future__ import annotations

import json
import os
from typing import Any

import numpy as np

from .version import __version__

TAGS = ["setfit", "sentence-transformers", "text-classification"]


def card_data(model: Any) -> Any:
    """``huggingface_hub.ModelCardData`` for ``model``: library, tags, labels, the Hub body it started from and its
    evaluation results (``model-index``, one entry per split and metric)."""
    from huggingface_hub import EvalResult, ModelCardData

    info = model.training_info or {}
    results = [EvalResult(task_type="text-classification", dataset_type="unknown", dataset_name="Unknown",
                          dataset_split=split, metric_type=name, metric_value=_plain(value))
               for split, result in (info.get("eval_results") or {}).items()
               for name, value in result.items() if isinstance(value, (int, float, np.number))
               and not isinstance(value, bool)]
    return ModelCardData(library_name="setfit_lite", tags=TAGS, pipeline_tag="text-classification",
                         base_model=_hub_id(model.source),
                         metrics=sorted({r.metric_type for r in results}) or None,
                         eval_results=results or None, model_name="setfit_lite model" if results else None,
                         labels=[_plain(label) for label in model.labels] if model.labels is not None else None)


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value YAML writes plainly (``0.5``, not a ``!!python/object`` tag)."""
    return value.item() if isinstance(value, np.generic) else value


def _hub_id(source: str | None) -> str | None:
    """``source`` when it names a Hub model (``org/name``, not a local folder), else None."""
    if not source or os.path.exists(source):
        return None
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(source)
    except HFValidationError:
        return None
    return source


def render_model_card(model: Any) -> str:
    """Markdown: labels, body it started from, training arguments, data sizes, evaluation results."""
    info = model.training_info or {}
    lines = [
        "---",
        card_data(model).to_yaml(),
        "---",
        "",
        "# setfit_lite model",
        "",
        f"- Body started from: `{model.source or 'unknown'}`",
        f"- Labels ({len(model.labels or [])}): {', '.join(map(str, model.labels or []))}",
        f"- Head: `{type(model.model_head).__name__ if model.model_head is not None else 'none'}`"
        + (" (multi-label)" if model.multi_label else ""),
        f"- Prompt: `{model.prompt!r}`" if model.prompt else "- Prompt: none",
        f"- setfit_lite version: {__version__}",
    ]
    if info.get("distilled_from"):
        lines.append(f"- Distilled from the teacher: `{info['distilled_from']}`")
    if info.get("dataset_sizes"):
        lines += ["", "## Data", ""] + [f"- {k}: {v} examples" for k, v in info["dataset_sizes"].items()]
    if info.get("eval_results"):
        lines += ["", "## Evaluation", ""]
        for split, result in info["eval_results"].items():
            lines.append(f"- {split}: " + ", ".join(f"{k} = {_fmt(v)}" for k, v in result.items() if k != "groups"))
            for group, values in (result.get("groups") or {}).items():
                lines.append(f"  - {group}: " + ", ".join(f"{k} = {_fmt(v)}" for k, v in values.items()))
    if info.get("training_args"):
        lines += ["", "## Training arguments", "", "```json", json.dumps(info["training_args"], indent=2,
                                                                           sort_keys=True), "```"]
    lines += ["", "Load with `SetFitModel.from_pretrained(path)`; weights are safetensors, config is JSON.", ""]
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if isinstance(value, dict):  # a nested group of scores, e.g. evaluate's "calibration"
        return "(" + ", ".join(f"{k} = {_fmt(v)}" for k, v in value.items()) + ")"
    return f"{value:.4f}" if isinstance(value, float) else str(value)
