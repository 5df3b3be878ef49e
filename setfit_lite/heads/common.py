"""What every head module shares: file names, the format version, multi-target strategies, the file error."""

from __future__ import annotations

from pathlib import Path

from sklearn.multiclass import OneVsRestClassifier
from sklearn.multioutput import ClassifierChain, MultiOutputClassifier

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

