"""Evaluation metrics: the usual names computed locally with scikit-learn (no hub downloads); any other name goes
to Hugging Face ``evaluate`` as setfit sends every name (a metric on the hub, or a local metric script)."""

from __future__ import annotations

import importlib.util
import inspect
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache, partial
from typing import Any

import numpy as np
from sklearn import metrics as skm

_METRICS: dict[str, Callable[..., float]] = {
    "accuracy": skm.accuracy_score,
    "f1": skm.f1_score,
    "precision": skm.precision_score,
    "recall": skm.recall_score,
    "matthews_correlation": skm.matthews_corrcoef,
    "balanced_accuracy": skm.balanced_accuracy_score,
    # the mean of the per-class F1 scores: every class counts alike, however few its examples
    "f1_macro": partial(skm.f1_score, average="macro", zero_division=0),
}
SKEW_RATIO = 2.0  # labels are skewed when the largest class has at least this many times the smallest's rows


def is_skewed(y: np.ndarray, ratio: float = SKEW_RATIO) -> bool:
    """Whether single-label class ids are skewed, the rule of `TrainingArguments(head_class_weight="auto")`.

    Args:
        y: Class ids `(n,)` (multi-hot rows are never skewed).
        ratio: How many times the smallest present class's rows the largest class must have.

    Returns:
        Whether the largest class has at least `ratio` times the rows of the smallest.
    """
    y = np.asarray(y)
    if y.ndim != 1 or y.size == 0:
        return False
    counts = np.unique(y, return_counts=True)[1]
    return bool(counts.max() >= ratio * counts.min())


def add_reported_metrics(result: dict[str, Any], metric: str | Callable[..., Any], y_pred: np.ndarray,
                         y_true: np.ndarray, wanted: Iterable[str] = (), num_classes: int | None = None
                         ) -> dict[str, Any]:
    """``result`` (``metric``'s) with the metrics reported beside it: ``wanted`` names computed here (the
    ``metric_for_best_model``, with `compute_metric`'s averaging for f1, precision and recall), and macro-F1 beside
    accuracy when the true labels are skewed (accuracy alone then hides how the small classes fare)."""
    names = [name for name in wanted if name in _METRICS]
    if metric == "accuracy" and is_skewed(y_true):
        names.append("f1_macro")
    return result | {name: compute_metric(name, y_pred, y_true, num_classes=num_classes)[name] for name in names
                     if name not in result}


MetricInputs = Callable[[np.ndarray, np.ndarray], tuple[Any, Any]]


def compute_metric(metric: str | Callable[..., Any], y_pred: np.ndarray, y_true: np.ndarray,
                   metric_kwargs: dict[str, Any] | None = None, num_classes: int | None = None,
                   metric_inputs: MetricInputs | None = None) -> dict[str, Any]:
    """``{name: value}`` for a metric name or a callable ``metric(y_pred, y_true, **kwargs)`` (setfit's order).

    A callable's single number is returned as ``{"metric": value}``, as setfit does.
    ``y_pred``/``y_true`` are class ids (multi-label: multi-hot rows); ``metric_inputs(y_pred, y_true)``, when
    given, turns them into what a callable receives (the trainer gives setfit's forms). f1/precision/recall
    without an ``average`` use ``"binary"`` for a two-class model, ``"macro"`` for more classes and ``"micro"`` for
    multi-label. ``num_classes`` is the model's number of classes (a subset of a multiclass eval set is still
    multiclass); without it, ids other than 0 and 1 mean multiclass. A name not computed here is loaded with
    ``evaluate.load`` (config "multilabel" for multi-label data, as setfit does), which raises
    ``FileNotFoundError`` for a name it cannot find (offline: any name not in its cache).
    """
    kwargs = dict(metric_kwargs or {})
    if callable(metric):
        inputs = metric_inputs(y_pred, y_true) if metric_inputs is not None else (y_pred, y_true)
        result = metric(*inputs, **kwargs)
        if isinstance(result, dict):
            return {str(k): _value(v) for k, v in result.items()}
        return {"metric": _value(result)}  # setfit's key for a callable's single value
    y_pred, y_true = np.asarray(y_pred), np.asarray(y_true)
    check_metric_for(metric, y_true.ndim > 1)
    if metric not in _METRICS:
        return _evaluate_metric(metric, y_pred, y_true, kwargs)
    if metric in ("f1", "precision", "recall") and "average" not in kwargs:
        present = np.unique(np.concatenate([y_true.ravel(), y_pred.ravel()]))
        binary = num_classes == 2 if num_classes is not None else set(present.tolist()) <= {0, 1}
        kwargs["average"] = "micro" if y_true.ndim > 1 else ("binary" if binary else "macro")
    if metric in ("f1", "precision", "recall"):
        kwargs.setdefault("zero_division", 0)
    return {metric: _value(_METRICS[metric](y_true, y_pred, **kwargs))}


def _value(value: Any) -> Any:
    """A metric's value as JSON takes it: a number as a float, an array (``average=None``: one per class) as a
    list, anything else (a report string) as it is."""
    if isinstance(value, numbers.Real) or (isinstance(value, np.ndarray) and value.ndim == 0):
        return float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    return value


def _evaluate_metric(name: str, y_pred: np.ndarray, y_true: np.ndarray, kwargs: dict[str, Any]) -> dict[str, Any]:
    """``evaluate.load(name).compute(...)``, as setfit computes every metric name."""
    if importlib.util.find_spec("evaluate") is None:
        raise ValueError(_unknown(name))
    import evaluate

    module = evaluate.load(name, config_name="multilabel" if y_true.ndim > 1 else None)
    result = module.compute(predictions=y_pred, references=y_true, **kwargs) or {}
    return {str(k): float(v) if isinstance(v, numbers.Real) else v for k, v in result.items()}


def _unknown(metric: Any) -> str:
    return (f"unknown metric {metric!r}: setfit_lite computes {', '.join(sorted(_METRICS))}; any other name goes "
            "to evaluate.load, which needs the `evaluate` extra (pip install 'setfit_lite[evaluate]') and the Hugging "
            "Face Hub (or evaluate's cache of that metric, or a local metric script); or pass a callable")


SINGLE_LABEL_METRICS = ("matthews_correlation", "balanced_accuracy")
"""The metrics computed here that scikit-learn defines for single-label data only."""


def check_metric_for(metric: Any, multi_label: bool) -> None:
    """ValueError for a metric computed here that multi-label data cannot have (`SINGLE_LABEL_METRICS`), naming
    the ones it can; checked when the labels are known, before training or scoring."""
    if multi_label and isinstance(metric, str) and metric in SINGLE_LABEL_METRICS:
        raise ValueError(f"metric {metric!r} is defined for single-label data only; on multi-label data use "
                         "'accuracy' (every label of a text right), 'f1', 'precision' or 'recall' (micro-averaged "
                         "unless metric_kwargs give an average), or a callable")


def check_metric(metric: Any, metric_kwargs: Any = None) -> None:
    """Fail early, before any data is read or any training, on a metric that cannot work.

    A name computed here passes; any other name is loaded with ``evaluate.load`` now, as scoring would load it.
    ``metric_kwargs`` must be a dict, and for a name computed here hold only arguments of its scikit-learn function.

    Args:
        metric: A name or a callable ``metric(y_pred, y_true, **metric_kwargs)``.
        metric_kwargs: The metric's keyword arguments, or None.

    Raises:
        TypeError: A metric that is neither a name nor a callable, or ``metric_kwargs`` that is not a dict with
            string keys.
        ValueError: A name computed neither here nor by ``evaluate`` (not installed, or ``evaluate.load`` fails
            on it), or a key of ``metric_kwargs`` the named metric does not take.
    """
    if not callable(metric):
        if not isinstance(metric, str):
            raise TypeError(f"metric must be a name or a callable, got {type(metric).__name__}")
        if metric not in _METRICS:
            _check_evaluate_loads(metric)
    check_metric_kwargs(metric, metric_kwargs)


@cache
def _check_evaluate_loads(name: str) -> None:
    """ValueError (`_unknown`, with evaluate's reason) unless ``evaluate.load(name)`` loads a metric; a name that
    loaded once is not loaded again."""
    if importlib.util.find_spec("evaluate") is None:
        raise ValueError(_unknown(name))
    import evaluate

    try:
        evaluate.load(name)
    except Exception as error:  # evaluate raises FileNotFoundError, ConnectionError, ImportError, ... by cause
        raise ValueError(f"{_unknown(name)}. evaluate.load({name!r}) failed: {type(error).__name__}: "
                         f"{error}") from error


def check_metric_kwargs(metric: Any, metric_kwargs: Any) -> None:
    """TypeError unless ``metric_kwargs`` is None or a dict with string keys; ValueError naming the keys a metric
    computed here does not take (the parameters of its scikit-learn function after ``y_true`` and ``y_pred``).
    The keywords of a callable or of a metric of ``evaluate`` are checked when it is called."""
    if metric_kwargs is None:
        return
    if not isinstance(metric_kwargs, Mapping) or not all(isinstance(key, str) for key in metric_kwargs):
        raise TypeError(f"metric_kwargs must be a dict of the metric's keyword arguments by name (such as "
                        f"{{'average': 'macro'}}), got {type(metric_kwargs).__name__} {metric_kwargs!r}")
    if not isinstance(metric, str) or metric not in _METRICS:
        return
    accepted = _keyword_arguments(_METRICS[metric])
    unknown = sorted(set(metric_kwargs) - accepted) if accepted is not None else []
    if unknown:
        raise ValueError(f"metric_kwargs {', '.join(map(repr, unknown))} not taken by metric {metric!r} "
                         f"(scikit-learn's {_function_name(_METRICS[metric])}); its keyword arguments: "
                         f"{', '.join(sorted(accepted or ()))}")


def _keyword_arguments(function: Callable[..., Any]) -> set[str] | None:
    """The names ``function`` takes after its first two (``y_true``, ``y_pred``); None when it takes any
    (``**kwargs``)."""
    parameters = list(inspect.signature(function).parameters.values())[2:]
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return None
    return {p.name for p in parameters if p.kind is not inspect.Parameter.VAR_POSITIONAL}


def _function_name(function: Callable[..., Any]) -> str:
    return getattr(function, "__name__", None) or getattr(getattr(function, "func", None), "__name__", "function")


def check_metric_for_best_model(name: str | None, metric: Any) -> None:
    """ValueError, before any training, for a ``metric_for_best_model`` that evaluations with ``metric``, a name
    computed here, never report: they report that metric and any other computed here that ``name`` asks for
    (`add_reported_metrics`). The keys of a callable or of a metric of ``evaluate`` are known at the first
    evaluation, where `check_best_key` checks them."""
    if name is None or not (isinstance(metric, str) and metric in _METRICS) or name.removeprefix("eval_") in _METRICS:
        return
    raise ValueError(f"metric_for_best_model={name!r} is not a metric the evaluations report: with "
                     f"metric={metric!r} they report {metric!r} and, when metric_for_best_model names it, any of "
                     f"{', '.join(sorted(_METRICS))} (with or without the 'eval_' prefix)")


def check_best_key(name: str, metrics: Mapping[str, Any]) -> str:
    """The key of ``metrics`` (an evaluation's, ``eval_``-prefixed) that ``metric_for_best_model`` ``name`` names
    (with or without the prefix); ValueError listing the keys when there is none."""
    for key in (name, f"eval_{name}"):
        if key in metrics:
            return key
    raise ValueError(f"metric_for_best_model={name!r} is not among the evaluation's metrics {sorted(metrics)}: name "
                     "one of them (with or without the 'eval_' prefix)")


# ------------------------------------------------------------------------------------------------- calibration


def _checked_proba(proba: Any, labels: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(proba, labels)`` as a float (n, K) array and int (n,) class ids, checked to agree."""
    proba, labels = np.asarray(proba, dtype=np.float64), np.asarray(labels).astype(np.int64)
    if proba.ndim != 2 or labels.shape != (proba.shape[0],):
        raise ValueError(f"need probabilities (n, K) and n class ids, got shapes {proba.shape} and {labels.shape}")
    if labels.size and (labels.min() < 0 or labels.max() >= proba.shape[1]):
        raise ValueError(f"class ids must be in 0..{proba.shape[1] - 1}")
    return proba, labels


def expected_calibration_error(proba: Any, labels: Any, n_bins: int = 15) -> float:
    """The expected calibration error of single-label probabilities (Guo et al., 2017).

    Rows are binned by their largest probability into `n_bins` equal-width bins `(i/n_bins, (i+1)/n_bins]`; the
    error is the mean over bins, weighted by their share of rows, of `|accuracy - mean confidence|`.

    Args:
        proba: Probabilities `(n, K)`, such as `model.predict_proba(texts, as_numpy=True)`.
        labels: The true class ids `(n,)` (`model.label_ids(labels)` converts label names).
        n_bins: The bins.

    Returns:
        The error, from 0 (calibrated) to 1; 0 for no rows.

    Raises:
        ValueError: Shapes that do not match, or class ids out of range.
    """
    proba, labels = _checked_proba(proba, labels)
    if not len(labels):
        return 0.0
    confidence, correct = proba.max(axis=1), (proba.argmax(axis=1) == labels).astype(np.float64)
    bins = np.clip(np.ceil(confidence * n_bins).astype(np.int64) - 1, 0, n_bins - 1)
    gap = np.bincount(bins, weights=correct - confidence, minlength=n_bins)  # sum of (accuracy - confidence)
    return float(np.abs(gap).sum() / len(labels))


def brier_score(proba: Any, labels: Any) -> float:
    """The multi-class Brier score: the mean over rows of `sum_k (proba_k - onehot_k)^2`.

    For two classes it is twice scikit-learn's binary `brier_score_loss`.

    Args:
        proba: Probabilities `(n, K)`.
        labels: The true class ids `(n,)`.

    Returns:
        The score, from 0 (perfect) to 2 (the worst); 0 for no rows.

    Raises:
        ValueError: Shapes that do not match, or class ids out of range.
    """
    proba, labels = _checked_proba(proba, labels)
    if not len(labels):
        return 0.0
    onehot = np.zeros_like(proba)
    onehot[np.arange(len(labels)), labels] = 1.0
    return float(((proba - onehot) ** 2).sum(axis=1).mean())


def calibration_metrics(proba: Any, labels: Any) -> dict[str, float]:
    """The calibration metrics `Trainer.evaluate` reports under `"calibration"`.

    Args:
        proba: Single-label probabilities `(n, K)`.
        labels: The true class ids `(n,)`.

    Returns:
        `{"expected_calibration_error": ..., "brier_score": ...}`.

    Raises:
        ValueError: Shapes that do not match, or class ids out of range.

    Example:
        ```python
        import numpy as np

        from setfit_lite.metrics import calibration_metrics

        proba = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
        print(calibration_metrics(proba, np.array([0, 1, 1])))
        ```
    """
    return {"expected_calibration_error": expected_calibration_error(proba, labels),
            "brier_score": brier_score(proba, labels)}


def coverage_accuracy(proba: Any, labels: Any, thresholds: Sequence[float]) -> list[dict[str, float]]:
    """What abstaining below each threshold gives (`predict(..., abstain_below=t)`): how many texts are kept and
    how accurate they are.

    Args:
        proba: Single-label probabilities `(n, K)`.
        labels: The true class ids `(n,)`.
        thresholds: The probabilities to try.

    Returns:
        One dict per threshold, in the order given: `{"threshold", "coverage", "accuracy"}`, where `coverage` is
        the share of rows whose largest probability is at least the threshold and `accuracy` the accuracy on
        those rows (NaN when none is left).

    Raises:
        ValueError: A threshold that is not a probability, shapes that do not match, or class ids out of range.

    Example:
        ```python
        import numpy as np

        from setfit_lite.metrics import coverage_accuracy

        proba = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
        for row in coverage_accuracy(proba, np.array([0, 1, 1]), [0.5, 0.75]):
            print(row)   # threshold 0.5: coverage 1.0, accuracy 0.67; 0.75: coverage 0.67, accuracy 1.0
        ```
    """
    from .config.params import check_param

    thresholds = [check_param("threshold", threshold) for threshold in thresholds]
    proba, labels = _checked_proba(proba, labels)
    confidence, correct = proba.max(axis=1), proba.argmax(axis=1) == labels
    out = []
    for threshold in thresholds:
        kept = confidence >= threshold
        accuracy = float(correct[kept].mean()) if kept.any() else float("nan")
        out.append({"threshold": float(threshold), "coverage": float(kept.mean()) if len(labels) else 0.0,
                    "accuracy": accuracy})
    return out
