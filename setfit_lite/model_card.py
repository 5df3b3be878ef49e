"""A short model card (README.md) written beside every saved model."""

from __future__ import annotations

import json
from typing import Any

from .version import __version__


def render_model_card(model: Any) -> str:
    """Markdown: labels, body it started from, training arguments, data sizes, evaluation results."""
    info = model.training_info or {}
    lines = [
        "---",
        "library_name: setfit_lite",
        "tags: [setfit, sentence-transformers, text-classification]",
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
