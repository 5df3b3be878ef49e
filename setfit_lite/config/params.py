"""One rule per numeric parameter outside `TrainingArguments`, shared by the API and the CLI.

`PARAMS` holds the rules of prediction (``batch_size`` of ``predict``/``predict_proba``/``predict_iter``/
``encode`` on torch, ONNX and static models, ONNX ``num_threads``), of the search (``n_trials``, ``timeout``,
``n_jobs``, ``max_trials`` and the storage's heartbeat options), of ``SetFitModel.from_pretrained``'s settings, of
Ray Data scoring (``num_cpus``, ``concurrency``, ``max_retries``) and of the other numbers the CLI takes. They are
built with, and checked by, the rules of `setfit_lite.config.rules`, as are the rules of the training arguments
(`TRAINING_RULES`, the table of `setfit_lite.config.training_rules`).

The API calls `check_param` (``TypeError`` for a wrong type, ``ValueError`` for a value out of range, both
naming the parameter, the value and what is allowed); the CLI's options are parsed by `argument_type`, built
from the same rule, so a bad number is an argparse error (exit status 2) before any data or model is loaded.

Torch-free: this module imports only the standard library and ``setfit_lite.config``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any

from .rules import Rule, check_rule, flag, integer, is_integer, number, option, optional, rule_message, text
from .training_rules import TRAINING_RULES

__all__ = ["PARAMS", "TRAINING_RULES", "argument_type", "check_param", "check_params", "is_integer"]

_POSITIVE = integer()
LONG_TEXT_MODES = ("truncate", "chunk")
CHUNK_POOLINGS = ("mean", "max", "weighted")
#: what ``SetFitModel(inference_precision=...)`` accepts: "auto" (bf16 where the device computes it natively, the
#: training rule: ``trainers.registry.prediction_precision``), or forced "fp32" / "bf16"
INFERENCE_PRECISIONS = ("auto", "fp32", "bf16")
#: environment variable that replaces ``inference_precision="auto"`` ("fp32", "bf16" or "auto"), for the torch
#: tier and the OpenVINO runtime alike
PRECISION_ENV = "SETFIT_LITE_INFERENCE_PRECISION"

#: how an ABSA span model writes a span for its body (``setfit_lite.absa.modeling.SpanSetFitModel.span_text``)
SPAN_FORMATS = ("prefix", "marked", "window")
#: which spans of a sentence are aspect candidates (``setfit_lite.absa.aspect_extractor.AspectExtractor``)
CANDIDATE_RULES = ("nouns", "nouns+adjectives", "nouns+adjectives+parts")

MULTI_TARGET_STRATEGY_NAMES = ("one-vs-rest", "multi-output", "classifier-chain")  # setfit_lite.heads' wrappers


def _head_params(value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError
    if not all(isinstance(name, str) for name in value):
        raise ValueError("the names must be strings")
    return dict(value)


def _concurrency(value: Any) -> Any:
    """A positive int, or a ``(min, max)`` pair of them with min <= max."""
    if isinstance(value, (tuple, list)):
        if len(value) != 2 or not all(is_integer(v) for v in value):
            raise TypeError
        if not 1 <= value[0] <= value[1]:
            raise ValueError
        return tuple(int(v) for v in value)
    return _POSITIVE.check(value)


PARAMS: dict[str, Rule] = {
    # prediction and encoding, every tier
    "batch_size": _POSITIVE,
    "inference_precision": option(INFERENCE_PRECISIONS),
    "num_threads": optional(_POSITIVE, "the runtime's choice"),
    "openvino_streams": optional(_POSITIVE, "one per thread"),
    # hyperparameter search
    "n_trials": optional(_POSITIVE, "no limit: until max_trials or timeout"),
    "timeout": optional(number(low_open=True, note="seconds"), "no limit"),
    "n_jobs": integer(high=1, note="trials share one Trainer; to search in parallel run several processes with the "
                                    "same storage and study_name, load_if_exists=True"),
    "max_trials": optional(_POSITIVE, "no limit"),
    "heartbeat_interval": optional(integer(note="seconds"), "no heartbeat"),
    "grace_period": optional(integer(note="seconds"), "2 x heartbeat_interval"),
    "max_retry": optional(integer(low=0), "retry without limit"),
    # data sampling (sample_dataset, which also takes seed=None: unseeded), exports
    "num_samples": _POSITIVE,
    "seed": TRAINING_RULES["seed"],
    "opset": integer(low=7, note="an ONNX opset version"),
    "pca_dims": optional(_POSITIVE, "the body's embedding size"),
    "student_layers": _POSITIVE,
    "student_epochs": _POSITIVE,
    "refine_epochs": integer(low=0),
    # long texts (setfit_lite.runtime.chunking)
    "long_text": option(LONG_TEXT_MODES),
    "chunk_overlap": integer(low=0, note="tokens shared by consecutive windows"),
    "chunk_pooling": option(CHUNK_POOLINGS),
    # SetFitModel.from_pretrained (max_length and prompt: the training arguments' rules)
    "multi_target_strategy": optional(option(MULTI_TARGET_STRATEGY_NAMES), "the head's default"),
    "use_differentiable_head": optional(flag(), "the saved value, else False"),
    "head_params": optional(Rule("a dict of the head's parameters by name", _head_params), "none"),
    "normalize_embeddings": optional(flag(), "the saved value, else False"),
    "device": optional(text("a device name such as 'cpu' or 'cuda:0'", empty=False), "the CPU"),
    "trust_remote_code": flag(),
    "allow_pickle": flag(),
    "max_length": TRAINING_RULES["max_length"],
    "prompt": TRAINING_RULES["prompt"],
    # ABSA span models (setfit_lite.absa): how a span and its sentence are written
    "span_format": option(SPAN_FORMATS),
    "aspect_candidates": option(CANDIDATE_RULES),
    "aspect_threshold": number(high=1.0, low_open=True, note="a probability"),
    # Ray Data scoring (setfit_lite.integrations.ray_data, predict --ray)
    "num_cpus": number(low_open=True, note="CPUs per actor"),
    "concurrency": optional(Rule("a positive integer (actors), or a (min, max) pair of them", _concurrency),
                            "Ray Data sizes the pool"),
    "max_retries": integer(low=0),
    # metrics.coverage_accuracy, predict(abstain_below=)
    "threshold": number(high=1.0, note="a probability"),
}


def check_param(name: str, value: Any) -> Any:
    """``value`` of the parameter ``name`` (numpy numbers become Python ones), or ``TypeError`` (wrong type) /
    ``ValueError`` (out of range) naming the parameter, the value and what is allowed."""
    return check_rule(PARAMS[name], name, value)


def check_params(values: Mapping[str, Any]) -> dict[str, Any]:
    """`check_param` on each ``name: value``."""
    return {name: check_param(name, value) for name, value in values.items()}


def _number_or_text(text: str) -> Any:
    """A command-line value as an int, else a float, else None for "none" (the rules that allow None say so),
    else the text itself (which then fails its rule's type)."""
    if text.strip().lower() == "none":
        return None
    for parse in (int, float):
        try:
            return parse(text)
        except ValueError:
            pass
    return text


def argument_type(name: str, rules: Mapping[str, Rule] = PARAMS) -> Callable[[str], Any]:
    """An argparse ``type=`` for the parameter ``name`` of ``rules`` (`PARAMS` or `TRAINING_RULES`):
    the number, checked by the parameter's rule; otherwise an argparse error with the rule's message."""
    rule = rules[name]

    def parse(text: str) -> Any:
        try:
            return rule.check(_number_or_text(text))
        except (TypeError, ValueError) as error:
            raise argparse.ArgumentTypeError(rule_message(rule, text, error)) from None

    parse.__name__ = name
    return parse
