"""A short model card (README.md) written beside every saved model: YAML metadata the Hugging Face Hub reads
(written by ``huggingface_hub.ModelCardData``), then a Markdown summary."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from .serialization import atomic_write_text
from .version import __version__

logger = logging.getLogger(__name__)

TAGS = ["setfit", "sentence-transformers", "text-classification"]


@dataclass
class SetFitModelCardData:
    """What setfit's `SetFitModelCardData` lets a user state for the model card: its fields, written into the card
    setfit_lite generates (`save_pretrained`, `create_model_card`). Fields setfit fills itself during training
    (hyperparameters, metrics, widget examples) are not arguments, as in setfit. `save_pretrained` records them in
    the saved config (as JSON), and `from_pretrained` restores them when it is given none, so a model saved again
    writes the same card.

    Args:
        language: The language code(s) of the training texts, such as `"en"` or `["en", "de"]`.
        license: The license, such as `"apache-2.0"`.
        tags: Tags added to setfit_lite's own.
        model_name: The card's title; None for a generic one.
        model_id: The model's Hub id once uploaded, such as `"org/setfit-absa-laptops"`.
        dataset_name: The training dataset's readable name (the name of the card's evaluation results; None: the
            dataset id, or "Unknown").
        dataset_id: The training dataset's Hub id (the card's `datasets` metadata and its evaluation results'
            dataset type; None: "unknown").
        dataset_revision: The dataset revision trained on (recorded with the evaluation results).
        task_name: What the model does, in a few words.
        st_id: The Hub id of the Sentence Transformer body (the card's `base_model`; None: the body's id when it
            was loaded by Hub name).

    Raises:
        TypeError: A field is not a string (a list of strings for `language` and `tags`) or None.

    Example:
        ```python
        from setfit_lite import AbsaModel, SetFitModelCardData

        model = AbsaModel.from_pretrained("sentence-transformers/all-MiniLM-L6-v2", spacy_model="en_core_web_sm",
                                          model_card_data=SetFitModelCardData(language="en", license="mit"))
        ```
    """

    language: str | list[str] | None = None
    license: str | None = None
    tags: list[str] | None = None
    model_name: str | None = None
    model_id: str | None = None
    dataset_name: str | None = None
    dataset_id: str | None = None
    dataset_revision: str | None = None
    task_name: str | None = None
    st_id: str | None = None

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            lists = f.name in ("language", "tags")
            if value is None or (isinstance(value, str) and f.name != "tags"):
                continue
            if lists and isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
                setattr(self, f.name, list(value))
                continue
            wanted = "a list of strings" if f.name == "tags" else "a string or a list of strings" if lists else \
                "a string"
            raise TypeError(f"SetFitModelCardData.{f.name} must be {wanted} or None, got {value!r}")


def card_data_config(data: SetFitModelCardData | None) -> dict[str, Any] | None:
    """What the saved config records of a model's `SetFitModelCardData` (JSON values only, no pickle).

    Args:
        data: The model's `model_card_data`, or None.

    Returns:
        The fields that are set, by name; None for a model without card data.
    """
    if data is None:
        return None
    return {name: value for name, value in dataclasses.asdict(data).items() if value is not None}


def card_data_from_config(value: Any, file: str | os.PathLike[str]) -> SetFitModelCardData | None:
    """The `SetFitModelCardData` a saved config records (`card_data_config`), checked; a field this version does
    not know (a newer setfit_lite's) is left out with a warning.

    Args:
        value: The config's ``model_card_data`` value.
        file: The config file, named in errors.

    Returns:
        The card data, or None when the config records none.

    Raises:
        ModelFormatError: The value is not a JSON object (or null), or a field is of the wrong type.
    """
    from .serialization.validate import ModelFormatError

    if value is None:
        return None
    if not isinstance(value, dict):
        raise ModelFormatError(file, "model_card_data", f"must be a JSON object or null, got {type(value).__name__}")
    known = {f.name for f in fields(SetFitModelCardData)}
    unknown = sorted(set(value) - known)
    if unknown:
        logger.warning("%s: model_card_data field(s) %s are not known to this setfit_lite and are left out of the "
                       "model card", file, ", ".join(unknown))
    try:
        return SetFitModelCardData(**{name: item for name, item in value.items() if name in known})
    except TypeError as exc:
        raise ModelFormatError(file, "model_card_data", f"cannot be read: {exc}") from exc


def card_data(model: Any) -> Any:
    """``huggingface_hub.ModelCardData`` for ``model``: library, tags, labels, the Hub body it started from and its
    evaluation results (``model-index``, one entry per split and metric)."""
    from huggingface_hub import EvalResult, ModelCardData

    info = model.training_info or {}
    user = _user_data(model)
    # the dataset as setfit names it: its Hub id ("unknown" without), its readable name (else the id, "Unknown")
    results = [EvalResult(task_type="text-classification", dataset_type=user.dataset_id or "unknown",
                          dataset_name=user.dataset_name or user.dataset_id or "Unknown",
                          dataset_revision=user.dataset_revision, dataset_split=split, metric_type=name,
                          metric_value=_plain(value))
               for split, result in (info.get("eval_results") or {}).items()
               for name, value in result.items() if isinstance(value, (int, float, np.number))
               and not isinstance(value, bool)]
    tags = TAGS + [tag for tag in user.tags or [] if tag not in TAGS]
    return ModelCardData(library_name="setfit_lite", tags=tags, pipeline_tag="text-classification",
                         base_model=user.st_id or _hub_id(model.source),
                         metrics=sorted({r.metric_type for r in results}) or None, eval_results=results or None,
                         model_name=user.model_name or ("setfit_lite model" if results else None),
                         labels=[_plain(label) for label in model.labels] if model.labels is not None else None,
                         language=user.language, license=user.license,
                         datasets=[user.dataset_id] if user.dataset_id else None)


def _user_data(model: Any) -> SetFitModelCardData:
    """The model's `model_card_data` (an empty one for a model without)."""
    return getattr(model, "model_card_data", None) or SetFitModelCardData()


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python value YAML writes plainly (``0.5``, not a ``!!python/object`` tag)."""
    return value.item() if isinstance(value, np.generic) else value


def _hub_id(source: str | None) -> str | None:
    """``source`` when it names a Hub model (``org/name``), else None. Decided from the name alone, never from the
    files of the current folder: `from_pretrained` records a local folder it loaded as an absolute path, which is no
    Hub id."""
    if not source or os.path.isabs(source) or source.startswith((".", "~")):
        return None
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(source)
    except HFValidationError:
        return None
    return source


def render_model_card(model: Any, model_name: str | None = None) -> str:
    """Markdown: labels, body it started from, calibration, training arguments, data sizes, evaluation results,
    and what the model's `model_card_data` states (``model_name``: the title when that names none)."""
    info = model.training_info or {}
    user = _user_data(model)
    stated = [(name, getattr(user, key)) for name, key in (
        ("Model id", "model_id"), ("Task", "task_name"), ("Language", "language"), ("License", "license"),
        ("Dataset", "dataset_name"), ("Dataset id", "dataset_id"), ("Dataset revision", "dataset_revision"))]
    lines = [
        "---",
        card_data(model).to_yaml(),
        "---",
        "",
        f"# {user.model_name or model_name or 'setfit_lite model'}",
        "",
        *(f"- {name}: {', '.join(value) if isinstance(value, list) else value}" for name, value in stated if value),
        f"- Body started from: `{model.source or 'unknown'}`",
        f"- Labels ({len(model.labels or [])}): {', '.join(map(str, model.labels or []))}",
        f"- Head: `{type(model.model_head).__name__ if model.model_head is not None else 'none'}`"
        + (" (multi-label)" if model.multi_label else ""),
        *_calibration_lines(info),
        f"- Prompt: `{model.prompt!r}`" if model.prompt else "- Prompt: none",
        *([f"- spaCy pipeline: `{model.spacy_model}`"] if getattr(model, "spacy_model", None) else []),
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


def _calibration_lines(info: dict[str, Any]) -> list[str]:
    """The card's line on the probabilities' temperature: the fitted one and how it was fitted, or none and why
    (``training_info["calibration"]``, as training records it); no line for a model not trained."""
    calibration = info.get("calibration")
    if not isinstance(calibration, dict):
        return []
    temperature, method = calibration.get("temperature"), calibration.get("method")
    if temperature is None:
        return [f"- Calibration: none ({method})" if method else "- Calibration: none"]
    return [f"- Calibration: temperature {_fmt(float(temperature))}" + (f", fitted by {method}" if method else "")]


def _fmt(value: Any) -> str:
    if isinstance(value, dict):  # a nested group of scores, e.g. evaluate's "calibration"
        return "(" + ", ".join(f"{k} = {_fmt(v)}" for k, v in value.items()) + ")"
    return f"{value:.4f}" if isinstance(value, float) else str(value)


def write_model_card(model: Any, path: str | os.PathLike, model_name: str | None = None) -> Path:
    """Write ``render_model_card(model, model_name)`` to ``<path>/README.md`` atomically (the folder made if
    missing); a README.md already there, or a symbolic link of that name (even a dangling one), is never replaced
    nor written through (`FileExistsError`). Returns the file written."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise FileExistsError(f"{str(folder)!r} exists and is not a folder: the model card goes into a folder")
    card = folder / "README.md"
    if card.is_symlink():
        raise FileExistsError(f"{str(card)!r} is a symbolic link (to {os.readlink(card)!r}): the model card is not "
                              "written through it (remove it, or choose another folder)")
    if card.exists():
        raise FileExistsError(f"{str(card)!r} exists: the model card is not written over it (remove it, or choose "
                              "another folder)")
    atomic_write_text(card, render_model_card(model, model_name), overwrite=False)
    return card
