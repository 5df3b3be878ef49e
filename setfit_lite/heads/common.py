"""What every head module shares: file names, the format version, multi-target strategies, the file error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sklearn.multiclass import OneVsRestClassifier
from sklearn.multioutput import ClassifierChain, MultiOutputClassifier

from ..serialization import load_json
from ..serialization.validate import check_version

HEAD_CONFIG_NAME = "head_config.json"
HEAD_WEIGHTS_NAME = "head.safetensors"
HEAD_SKOPS_NAME = "head.skops"
HEAD_FILES = (HEAD_WEIGHTS_NAME, HEAD_SKOPS_NAME)
FORMAT_VERSION = 1

MULTI_TARGET_STRATEGIES: dict[str, type] = {
    "one-vs-rest": OneVsRestClassifier,
    "multi-output": MultiOutputClassifier,
    "classifier-chain": ClassifierChain,
}
STRATEGY_OF_TYPE: dict[type, str] = {v: k for k, v in MULTI_TARGET_STRATEGIES.items()}


def corrupt_head_error(path: Path, problem: str) -> ValueError:
    """The error for a head file that does not hold what ``head_config.json`` describes."""
    return ValueError(f"head file {path} {problem}; the saved head is corrupt or does not match {HEAD_CONFIG_NAME}")



def read_head_config(folder: Path, kind: str) -> tuple[Path, dict[str, Any]]:
    """``(path, config)`` of a saved head's ``head_config.json``, checked to describe a ``kind`` head ("torch" or
    "sklearn") of a format version this setfit_lite reads."""
    config_path = Path(folder) / HEAD_CONFIG_NAME
    cfg = load_json(config_path, what="head config")
    if not isinstance(cfg, dict) or cfg.get("type") != kind:
        raise ValueError(f"head config file {config_path} does not describe a{'n' * (kind == 'sklearn')} {kind} head")
    check_version(cfg, "format_version", FORMAT_VERSION, config_path)
    return config_path, cfg
