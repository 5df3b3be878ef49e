"""The rules of `TrainingArguments`' fields (`TRAINING_RULES`, one `Rule` a
field) and `check_argument`, which applies one: torch-free, used by the dataclass, the search (its values)
and the CLI (its options: ``setfit_lite.config.params.argument_type``). Cross-field rules are the constructor's.
"""

from __future__ import annotations

from typing import Any

from trainers.names import NAMES as BACKEND_NAMES
from trainers.names import PRECISION_NAMES

from .loss_names import LOSSES, loss_name
from .rules import (
    Rule,
    check_rule,
    flag,
    folder,
    integer,
    number,
    option,
    optional,
    pair_of,
    text,
)
from .sampling_policy import (
    OBJECTIVES,
    SAMPLING_STRATEGIES,
)

__all__ = ["SEED", "TRAINING_RULES", "check_argument"]

LABEL_ANCHORS = ("auto", "off")
ANCHOR_LOSSES = ("pairs", "softmax")
ZERO_SHOT_MODES = ("prototypes", "train")
CALIBRATION_MODES = ("temperature", "none")
HEAD_CLASS_WEIGHTS = ("auto", "balanced")
PSEUDO_LABEL_METHODS = ("knn", "spread", "confidence")
STRATEGIES = ("no", "steps", "epoch")
#: the one seed rule: `TrainingArguments.seed`, ``sample_dataset``'s and the CLI's ``--seed``
#: (`setfit_lite.config.params.PARAMS`); numpy's legacy seeding (``RandomState``, ``np.random.seed``) and
#: scikit-learn take seeds below 2**32 only
SEED = integer(low=0, high=2**32 - 1, note="numpy and scikit-learn take seeds below 2**32")


# ------------------------------------------------------------------------------------------------ the fields' rules


def _report_to(value: Any) -> list[str]:
    """setfit's ``report_to``: a name or a list of names, kept as a list; each name once, and ``"none"`` or
    ``"all"`` alone."""
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, (list, tuple)) or not all(isinstance(name, str) for name in names):
        raise TypeError
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise ValueError(f"duplicate name(s) {duplicates}: each integration reports once")
    for alone in ("none", "all"):
        if alone in names and len(names) > 1:
            raise ValueError(f"{alone!r} cannot be combined with other integrations")
    return list(names)


def _loss(value: Any) -> Any:
    if not isinstance(value, (str, type)):
        raise TypeError
    if loss_name(value) not in LOSSES:
        raise ValueError
    return value


def _callable(value: Any) -> Any:
    if not callable(value):
        raise TypeError
    return value


def _template(value: Any) -> str:
    """A `str.format` template whose only replacement fields are ``{label}`` (a conversion or format spec
    allowed), and at least one: each label name then gives its own text (``"{{label}}"`` gave every class one)."""
    import string

    if not isinstance(value, str):
        raise TypeError
    try:
        fields = [name for _, name, _, _ in string.Formatter().parse(value) if name is not None]
        distinct = value.format(label="a") != value.format(label="b")
    except (ValueError, KeyError, IndexError, AttributeError):  # a lone brace, another field, "{label.x}"
        raise ValueError from None
    if not fields or any(name != "label" for name in fields) or not distinct:
        raise ValueError
    return value


def _options(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError
    if not all(isinstance(k, str) and k.isidentifier() for k in value):
        raise ValueError
    return dict(value)


def _self_training(value: Any) -> Any:
    """``"auto"``, True or False (Python's or numpy's bool)."""
    if isinstance(value, str):
        if value != "auto":
            raise ValueError
        return value
    return flag().check(value)


def _backend(value: Any) -> Any:
    if isinstance(value, str):
        return option(BACKEND_NAMES, fold_case=True).check(value)
    from trainers.base import Backend  # a Backend instance was built with trainers (and torch) imported

    if not isinstance(value, Backend):
        raise TypeError
    return value


_POSITIVE = integer()
_STRATEGY = option(STRATEGIES)
TRAINING_RULES: dict[str, Rule] = {
    "output_dir": folder(),
    "batch_size": pair_of(_POSITIVE),
    "num_epochs": pair_of(_POSITIVE),
    "max_steps": integer(also=(-1,), note="no limit"),
    "sampling_strategy": option(SAMPLING_STRATEGIES),
    "num_iterations": optional(_POSITIVE),
    "body_learning_rate": optional(pair_of(number(note="0 freezes the body in that phase")),
                                   "the objective's default"),
    "head_learning_rate": number(low_open=True),
    "loss": Rule(f"one of {', '.join(LOSSES)} (a name, the sentence-transformers class or "
                 "setfit_lite.losses.SupConLoss)", _loss),
    "distance_metric": optional(Rule("a callable (a sentence-transformers distance function)", _callable),
                                "the loss's default"),
    "margin": number(),
    "end_to_end": flag(),
    "use_amp": flag(),
    "warmup_proportion": number(high=1.0),
    "l2_weight": optional(number()),
    "max_length": optional(integer(low=2), "the body's limit"),
    "samples_per_label": _POSITIVE,
    "show_progress_bar": flag(),
    "seed": SEED,
    "report_to": Rule("'none', 'all', or a name or list of names of transformers' reporting integrations",
                      _report_to),
    "run_name": optional(text()),
    "logging_dir": optional(folder()),
    "logging_strategy": _STRATEGY,
    "logging_first_step": flag(),
    "logging_steps": integer(low=0, note="0 only with a logging_strategy other than 'steps'"),
    "eval_strategy": _STRATEGY,
    "eval_steps": optional(_POSITIVE, "logging_steps"),
    "eval_delay": number(),
    "eval_max_steps": integer(also=(-1,), note="no limit"),
    "save_strategy": _STRATEGY,
    "save_steps": _POSITIVE,
    "save_total_limit": optional(_POSITIVE, "keep all"),
    "load_best_model_at_end": flag(),
    "metric_for_best_model": optional(text("a non-empty string", empty=False), "the first metric"),
    "greater_is_better": optional(flag(), "from the metric's name"),
    "objective": option(OBJECTIVES),
    "sentence_batch_size": optional(integer(low=2), "batch_size"),
    "min_steps_per_epoch": optional(_POSITIVE, "from the data"),
    "early_stopping_patience": optional(_POSITIVE, "no early stopping"),
    "max_grad_norm": optional(number(note="0: no clipping"), "no clipping"),
    "backend": Rule(f"one of {', '.join(map(repr, BACKEND_NAMES))} (any case) or a trainers.Backend", _backend),
    "backend_options": optional(Rule("a dict of the backend's options by name, e.g. {'num_threads': 8} or "
                                      "{'gaudi_config': 'gaudi_config.json'}", _options), "the defaults"),
    "precision": option(PRECISION_NAMES),
    "compile": flag(),
    "prompt": optional(text()),
    "freeze_word_embeddings": optional(flag(), "by vocabulary size"),
    "label_anchors": option(LABEL_ANCHORS),
    "anchor_template": Rule("a str.format template whose replacement fields are all '{label}' (e.g. "
                            "'This text is about {label}.'; a literal brace is written '{{' or '}}')", _template),
    "anchor_weight": number(),
    "anchors_per_batch": optional(_POSITIVE, "every class's anchor in every batch"),
    "anchor_loss": option(ANCHOR_LOSSES),
    "anchor_temperature": number(low_open=True),
    "label_prior_temperature": optional(number(low_open=True), "no prior"),
    "zero_shot": option(ZERO_SHOT_MODES),
    "calibration": option(CALIBRATION_MODES),
    "calibration_folds": optional(integer(low=2), "the method's default"),
    "head_class_weight": optional(option(HEAD_CLASS_WEIGHTS), "no class weights"),
    "self_training": Rule("'auto' (cross-validated on the labelled texts), True or False", _self_training),
    "self_training_folds": integer(low=2),
    "self_training_margin": number(low=-1.0, high=1.0),
    "pseudo_label_method": option(PSEUDO_LABEL_METHODS),
    "pseudo_label_neighbors": _POSITIVE,
    "self_training_rounds": integer(low=0, note="0: the unlabeled pool is not used"),
    "pseudo_label_threshold": number(high=1.0, note="a probability"),
    "pseudo_labels_per_class": number(low_open=True, note="times the class's labelled count"),
    "self_training_body": flag(),
}


def check_argument(name: str, value: Any) -> Any:
    """``value`` of the `TrainingArguments` field ``name``, normalised (numpy numbers to Python ones,
    enums to their value, a backend name to lower case), or ``TypeError`` (wrong type) / ``ValueError`` (out of
    range) naming the field, the value and what is allowed. Cross-field rules are checked by the constructor."""
    rule = TRAINING_RULES.get(name)
    if rule is None:
        raise TypeError(f"TrainingArguments has no argument {name!r}")
    return check_rule(rule, name, value, owner="TrainingArguments: ")
