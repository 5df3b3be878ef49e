"""compute_metric: the automatic ``average`` of f1/precision/recall, checked against sklearn called directly."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn import metrics as skm

from setfit_lite.metrics import check_metric, compute_metric

SCORES = {"f1": skm.f1_score, "precision": skm.precision_score, "recall": skm.recall_score}
AVERAGES = ("binary", "micro", "macro", "weighted", "samples")

# (y_true, y_pred, the average compute_metric must pick); the data make that average's value differ from every
# other average's for at least one of f1/precision/recall, so a wrong choice cannot go unnoticed
CASES = {
    "binary": ([1, 1, 1, 1, 0, 0, 0, 0, 0, 0], [1, 1, 1, 0, 0, 0, 0, 0, 1, 1], "binary"),
    "multiclass": ([0, 0, 0, 0, 0, 0, 1, 1, 1, 2], [0, 0, 0, 0, 1, 2, 1, 1, 0, 2], "macro"),
    "multiclass, third class only predicted": ([0, 0, 0, 1, 1, 1], [0, 2, 0, 1, 1, 0], "macro"),
    "multi-label": ([[1, 0, 0], [1, 1, 0], [0, 1, 1], [1, 0, 1], [1, 0, 0], [0, 0, 1]],
                    [[1, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 1], [0, 0, 0], [0, 0, 1]], "micro"),
}


def sklearn_scores(y_true: np.ndarray, y_pred: np.ndarray, average: str) -> dict[str, float] | None:
    """The three scores with this average, or None where sklearn refuses it for this kind of target."""
    try:
        return {name: fn(y_true, y_pred, average=average, zero_division=0) for name, fn in SCORES.items()}
    except ValueError:
        return None


@pytest.mark.parametrize("case", list(CASES))
def test_automatic_average(case: str) -> None:
    y_true, y_pred, expected = np.asarray(CASES[case][0]), np.asarray(CASES[case][1]), CASES[case][2]
    want = sklearn_scores(y_true, y_pred, expected)
    assert want is not None
    for name in SCORES:
        assert compute_metric(name, y_pred, y_true) == {name: pytest.approx(want[name], abs=1e-12)}
    # the data tell the averages apart: every other average sklearn accepts changes at least one score
    for other in AVERAGES:
        scores = sklearn_scores(y_true, y_pred, other) if other != expected else None
        if scores is not None:
            assert any(abs(scores[n] - want[n]) > 1e-6 for n in SCORES), f"{case}: {other} looks like {expected}"


@pytest.mark.parametrize("average", ["micro", "macro", "weighted"])
def test_explicit_average_wins(average: str) -> None:
    y_true, y_pred, _ = CASES["binary"]
    for name, fn in SCORES.items():
        want = fn(y_true, y_pred, average=average, zero_division=0)
        assert compute_metric(name, y_pred, y_true, {"average": average}) == {name: pytest.approx(want)}


def test_unpredicted_class_scores_zero_without_warning() -> None:
    y_true, y_pred = [0, 1, 2, 2], [0, 1, 1, 1]  # class 2 is never predicted: its precision is 0/0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = compute_metric("precision", y_pred, y_true)
    assert result == {"precision": pytest.approx(skm.precision_score(y_true, y_pred, average="macro",
                                                                     zero_division=0))}


@pytest.mark.parametrize("present", [(0, 2), (1, 2)])
def test_two_classes_of_a_multiclass_model_are_not_binary(present: tuple[int, int]) -> None:
    a, b = present
    y_true, y_pred = [a, a, b, b, b], [a, b, b, b, a]
    want = skm.f1_score(y_true, y_pred, average="macro", zero_division=0)
    assert compute_metric("f1", y_pred, y_true) == {"f1": pytest.approx(want)}
    assert compute_metric("f1", y_pred, y_true, num_classes=3) == {"f1": pytest.approx(want)}


def test_classes_0_and_1_of_a_multiclass_model_use_the_model_average() -> None:
    y_true, y_pred = [0, 0, 1, 1, 1], [0, 1, 1, 1, 0]
    macro = skm.f1_score(y_true, y_pred, average="macro", zero_division=0)
    assert macro != pytest.approx(skm.f1_score(y_true, y_pred, average="binary"))
    assert compute_metric("f1", y_pred, y_true, num_classes=3) == {"f1": pytest.approx(macro)}
    assert compute_metric("f1", y_pred, y_true, num_classes=2) == {
        "f1": pytest.approx(skm.f1_score(y_true, y_pred, average="binary"))}


def test_other_metrics_and_callables(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    y_true, y_pred = [0, 1, 2, 2], [0, 1, 1, 2]
    assert compute_metric("accuracy", y_pred, y_true) == {"accuracy": 0.75}
    assert compute_metric("matthews_correlation", y_pred, y_true) == {
        "matthews_correlation": pytest.approx(skm.matthews_corrcoef(y_true, y_pred))}
    assert compute_metric(lambda p, t: {"hits": sum(np.equal(p, t))}, y_pred, y_true) == {"hits": 3.0}
    # other names go to evaluate.load, as in setfit: offline it finds no "f2" metric script (check_metric, which the
    # Trainer and the command line call before any work, says so; compute_metric raises evaluate's own error)
    with pytest.raises(ValueError, match="unknown metric 'f2'"):
        check_metric("f2")
    with pytest.raises(FileNotFoundError, match="f2"):
        compute_metric("f2", y_pred, y_true)
    with pytest.raises(TypeError, match="metric must be a name or a callable, got int"):
        check_metric(3)
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "evaluate" else find_spec(name, *a))
    with pytest.raises(ValueError, match="'f2'.*accuracy.*pip install 'setfit_lite\\[evaluate\\]'"):
        check_metric("f2")  # without evaluate, an unknown name cannot work: refused before training
    with pytest.raises(ValueError, match="'f2'"):
        compute_metric("f2", y_pred, y_true)


def test_a_name_not_computed_here_is_loaded_by_evaluate_when_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """check_metric tries evaluate.load on a name not computed here: one it cannot load is a ValueError naming the
    metric, the names computed here and the evaluate extra; one it loads is accepted (as setfit accepts any name
    evaluate knows)."""
    evaluate = pytest.importorskip("evaluate")
    with pytest.raises(ValueError, match=r"unknown metric 'f1_score': setfit_lite computes accuracy, .*f1, .*"
                                         r"pip install 'setfit_lite\[evaluate\]'.*Hugging Face Hub.*"
                                         r"evaluate.load\('f1_score'\) failed"):
        check_metric("f1_score")  # offline, and not in evaluate's cache
    loaded: list[str] = []
    monkeypatch.setattr(evaluate, "load", lambda name, *args, **kwargs: loaded.append(name) or object())
    check_metric("a_metric_evaluate_knows")
    assert loaded == ["a_metric_evaluate_knows"]
    check_metric("accuracy")  # computed here: evaluate is never asked
    assert loaded == ["a_metric_evaluate_knows"]


def test_metric_kwargs_are_checked_against_the_metric() -> None:
    """metric_kwargs must be a dict; for a metric computed here, its keys are the scikit-learn function's
    arguments (a misspelt one failed only at the first evaluation, with a TypeError naming neither)."""
    check_metric("f1", {"average": "macro", "zero_division": 0})
    check_metric("f1_macro", {"average": "weighted"})
    check_metric("accuracy", {"normalize": False})
    check_metric(lambda y_pred, y_true, **kwargs: 0.0, {"anything": 1})  # a callable's: checked when it is called
    check_metric("accuracy", None)
    with pytest.raises(ValueError, match=r"metric_kwargs 'averge' not taken by metric 'f1' \(scikit-learn's "
                                         r"f1_score\); its keyword arguments: average, labels, pos_label"):
        check_metric("f1", {"averge": "macro"})
    with pytest.raises(ValueError, match=r"metric_kwargs 'average' not taken by metric 'accuracy'.*normalize, "
                                         r"sample_weight"):
        check_metric("accuracy", {"average": "macro"})
    with pytest.raises(TypeError, match="metric_kwargs must be a dict.*got str 'macro'"):
        check_metric("f1", "macro")
    with pytest.raises(TypeError, match="metric_kwargs must be a dict"):
        check_metric(lambda y_pred, y_true: 0.0, [("average", "macro")])
