"""Heads: class-id columns, multi-label strategies, TorchHead training, and bit-identical save/load."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.ensemble import RandomForestClassifier
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.multiclass import OneVsRestClassifier
from sklearn.multioutput import ClassifierChain

from setfit_lite.heads import (
    HEAD_CONFIG_NAME,
    HEAD_SKOPS_NAME,
    HEAD_WEIGHTS_NAME,
    SklearnHead,
    TorchHead,
    build_head,
    load_head,
)
from setfit_lite.serialization import find_pickle_files, load_json, load_tensors, save_json, save_tensors

RNG = np.random.default_rng(0)
X = RNG.normal(size=(48, 6))
Y_MULTI = (RNG.random((48, 4)) > 0.5).astype(np.int64)


def _ids(num_present: int) -> np.ndarray:
    return np.arange(48) % num_present


def _round_trip(head, folder: Path):
    before = head.predict_proba(X)
    head.save(folder)
    loaded = load_head(folder)
    after = loaded.predict_proba(X)
    assert type(loaded) is type(head)
    assert before.shape == after.shape and before.dtype == after.dtype
    assert np.array_equal(before, after)
    assert np.array_equal(head.predict(X), loaded.predict(X))
    assert find_pickle_files(folder) == []
    return loaded


# ------------------------------------------------------------------------------------------- SklearnHead


def test_lr_binary_round_trip(tmp_path: Path) -> None:
    head = SklearnHead(num_classes=2).fit(X, _ids(2))
    assert head.fitted and head.estimator.max_iter == 1000
    proba = head.predict_proba(X)
    assert proba.shape == (48, 2) and np.allclose(proba.sum(1), 1)
    loaded = _round_trip(head, tmp_path / "head")
    assert {p.name for p in (tmp_path / "head").iterdir()} == {HEAD_CONFIG_NAME, HEAD_WEIGHTS_NAME}
    assert loaded.fitted and loaded.estimator.get_params() == head.estimator.get_params()


def test_lr_multiclass_absent_class_gets_zero_column(tmp_path: Path) -> None:
    y = np.array([0, 1, 3])[_ids(3)]  # class 2 and class 4 never seen
    head = SklearnHead(num_classes=5).fit(X, y)
    proba = head.predict_proba(X)
    assert proba.shape == (48, 5)
    assert np.all(proba[:, [2, 4]] == 0) and np.all(proba[:, [0, 1, 3]] > 0)
    assert np.allclose(proba.sum(1), 1)
    assert set(head.predict(X)) <= {0, 1, 3}
    _round_trip(head, tmp_path / "head")


def test_lr_params_survive(tmp_path: Path) -> None:
    est = LogisticRegression(C=0.3, class_weight={0: 2.0, 1: 1.0}, fit_intercept=False, max_iter=500)
    head = SklearnHead(est, num_classes=2).fit(X, _ids(2))
    loaded = _round_trip(head, tmp_path / "head")
    params = loaded.estimator.get_params()
    assert params["C"] == 0.3 and params["class_weight"] == {0: 2.0, 1: 1.0} and params["fit_intercept"] is False


@pytest.mark.parametrize("strategy", ["one-vs-rest", "multi-output", "classifier-chain"])
def test_multi_label_strategies_round_trip(tmp_path: Path, strategy: str) -> None:
    head = SklearnHead(num_classes=4, multi_label=True, multi_target_strategy=strategy).fit(X, Y_MULTI)
    proba = head.predict_proba(X)
    assert proba.shape == (48, 4) and ((proba >= 0) & (proba <= 1)).all()
    assert not np.allclose(proba.sum(1), 1)  # independent per-label probabilities
    assert np.array_equal(head.predict(X), (proba >= 0.5).astype(np.int64))
    _round_trip(head, tmp_path / "head")


def test_multi_label_defaults_to_one_vs_rest_and_handles_constant_label(tmp_path: Path) -> None:
    y = Y_MULTI.copy()
    y[:, 2] = 0  # a label never present: OvR keeps a constant predictor
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        head = SklearnHead(num_classes=4, multi_label=True).fit(X, y)
    assert head.multi_target_strategy == "one-vs-rest"
    assert np.all(head.predict_proba(X)[:, 2] == 0)
    _round_trip(head, tmp_path / "head")


def test_random_order_chain_and_wrapped_estimator(tmp_path: Path) -> None:
    chain = ClassifierChain(LogisticRegression(), order="random", random_state=3)
    head = SklearnHead(chain, num_classes=4, multi_label=True).fit(X, Y_MULTI)
    assert head.multi_target_strategy == "classifier-chain" and head.estimator is chain
    loaded = _round_trip(head, tmp_path / "head")
    assert np.array_equal(loaded.estimator.order_, chain.order_)


def test_one_vs_rest_single_label_round_trip(tmp_path: Path) -> None:
    head = SklearnHead(num_classes=4, multi_target_strategy="one-vs-rest").fit(X, _ids(3))
    assert isinstance(head.estimator, OneVsRestClassifier)
    proba = head.predict_proba(X)
    assert np.allclose(proba.sum(1), 1) and np.all(proba[:, 3] == 0)
    _round_trip(head, tmp_path / "head")


def test_sklearn_head_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="one-vs-rest, multi-output, classifier-chain"):
        SklearnHead(num_classes=2, multi_target_strategy="bogus")
    with pytest.raises(ValueError, match="needs multi-label"):
        SklearnHead(num_classes=2, multi_target_strategy="multi-output")
    head = SklearnHead(num_classes=3)
    assert not head.fitted
    with pytest.raises(NotFittedError):
        head.predict_proba(X)
    with pytest.raises(NotFittedError):
        head.save(tmp_path / "head")
    with pytest.raises(ValueError, match="class ids must be in 0..2"):
        head.fit(X, _ids(4))
    with pytest.raises(ValueError, match="at least two distinct classes"):
        head.fit(X, np.zeros(48, dtype=int))
    with pytest.raises(ValueError, match=r"shape \(n, 4\)"):
        SklearnHead(num_classes=4, multi_label=True).fit(X, Y_MULTI[:, :3])


@pytest.mark.parametrize("estimator, strategy, name", [
    (LogisticRegression(C=-1), None, "C"),
    (LogisticRegression(solver="bogus"), None, "solver"),
    (LogisticRegression(class_weight="bogus"), None, "class_weight"),
    (LogisticRegression(C=-1), "one-vs-rest", "C"),  # the estimator a multi-label wrapper holds
    (LogisticRegression(C=-1), "classifier-chain", "C"),
])
def test_sklearn_head_check_params_refuses_what_fit_would(estimator, strategy: str | None, name: str) -> None:
    """check_params says, without fitting, what scikit-learn's fit would refuse (after the body trained)."""
    head = SklearnHead(estimator, num_classes=4, multi_label=strategy is not None, multi_target_strategy=strategy)
    with pytest.raises(ValueError, match=f"head_params .*scikit-learn refuses: The '{name}' parameter"):
        head.check_params()
    with pytest.raises(ValueError, match=f"The '{name}' parameter"):  # the error fit raises, checked alike
        head.fit(X, Y_MULTI if strategy else _ids(4))


def test_sklearn_head_check_params_passes_valid_and_unconstrained_estimators() -> None:
    SklearnHead(LogisticRegression(C=0.5, class_weight="balanced"), num_classes=4).check_params()
    SklearnHead(RandomForestClassifier(n_estimators=3), num_classes=4, multi_label=True).check_params()


def test_sklearn_load_rejects_mismatched_files(tmp_path: Path) -> None:
    folder = tmp_path / "head"
    SklearnHead(num_classes=3).fit(X, _ids(3)).save(folder)
    tensors = {k: v.numpy() for k, v in load_tensors(folder / HEAD_WEIGHTS_NAME).items()}
    tensors["estimators.0.coef"] = tensors["estimators.0.coef"][:, :5]
    save_tensors(folder / HEAD_WEIGHTS_NAME, tensors)
    with pytest.raises(ValueError, match=r"head\.safetensors: estimators\.0\.coef has shape \(3, 5\)"):
        load_head(folder)

    folder2 = tmp_path / "head2"
    SklearnHead(num_classes=4, multi_label=True).fit(X, Y_MULTI).save(folder2)
    cfg = load_json(folder2 / HEAD_CONFIG_NAME, what="head config")
    save_json(folder2 / HEAD_CONFIG_NAME, {**cfg, "num_classes": 5})
    with pytest.raises(ValueError, match=r"head\.safetensors.*one per label"):
        load_head(folder2)

    (folder2 / HEAD_WEIGHTS_NAME).write_bytes((folder2 / HEAD_WEIGHTS_NAME).read_bytes()[:-7])
    with pytest.raises(ValueError, match=r"head\.safetensors is truncated or corrupt"):
        load_head(folder2)

    save_json(folder2 / HEAD_CONFIG_NAME, {"type": "mystery"})
    with pytest.raises(ValueError, match="unknown head type 'mystery'"):
        load_head(folder2)


# ------------------------------------------------------------------------------ other estimators (skops)


class CustomLR(LogisticRegression):
    """Not on the scikit-learn allow-list: needs an explicit trusted_types opt-in."""


def test_other_estimator_without_skops_gives_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "skops", None)
    monkeypatch.setitem(sys.modules, "skops.io", None)
    head = SklearnHead(RandomForestClassifier(n_estimators=3, random_state=0), num_classes=3).fit(X, _ids(3))
    with pytest.raises(ImportError, match=r"RandomForestClassifier.*pip install skops"):
        head.save(tmp_path / "head")
    assert not (tmp_path / "head" / HEAD_CONFIG_NAME).exists()
    save_json(
        tmp_path / "head" / HEAD_CONFIG_NAME,
        {
            "type": "sklearn",
            "format_version": 1,
            "num_classes": 3,
            "multi_label": False,
            "format": "skops",
            "estimator": "RandomForestClassifier",
        },
    )
    (tmp_path / "head" / HEAD_SKOPS_NAME).write_bytes(b"PK")
    with pytest.raises(ImportError, match="pip install skops"):
        load_head(tmp_path / "head")


def test_other_estimator_round_trips_through_skops(tmp_path: Path) -> None:
    pytest.importorskip("skops.io")
    head = SklearnHead(RandomForestClassifier(n_estimators=3, random_state=0), num_classes=4).fit(X, _ids(3))
    assert np.all(head.predict_proba(X)[:, 3] == 0)
    _round_trip(head, tmp_path / "head")
    assert (tmp_path / "head" / HEAD_SKOPS_NAME).exists() and not (tmp_path / "head" / HEAD_WEIGHTS_NAME).exists()


def test_skops_refuses_types_outside_allow_list(tmp_path: Path) -> None:
    pytest.importorskip("skops.io")
    head = SklearnHead(CustomLR(), num_classes=2).fit(X, _ids(2))
    head.save(tmp_path / "head")
    with pytest.raises(ValueError, match=r"head\.skops contains types outside .*CustomLR"):
        load_head(tmp_path / "head")
    name = f"{CustomLR.__module__}.CustomLR"
    loaded = load_head(tmp_path / "head", trusted_types=[name])
    assert np.array_equal(loaded.predict_proba(X), head.predict_proba(X))
    (tmp_path / "head" / HEAD_SKOPS_NAME).write_bytes(b"not a zip")
    with pytest.raises(ValueError, match=r"head\.skops is not a valid skops file"):
        load_head(tmp_path / "head")


# --------------------------------------------------------------------------------------------- TorchHead


def test_torch_head_single_label(tmp_path: Path) -> None:
    y = (X[:, 0] > 0).astype(np.int64)
    head = TorchHead(6, 2)
    assert not head.fitted
    assert head(torch.zeros(3, 6)).shape == (3, 2)
    head.fit(X, y, epochs=20, batch_size=8, lr=5e-2, seed=0)
    assert head.fitted
    proba = head.predict_proba(X)
    assert proba.shape == (48, 2) and proba.dtype == np.float32 and np.allclose(proba.sum(1), 1, atol=1e-6)
    assert (head.predict(X) == y).mean() > 0.9
    loaded = _round_trip(head, tmp_path / "head")
    assert loaded.fitted and not loaded.training
    assert load_json(tmp_path / "head" / HEAD_CONFIG_NAME, what="head config")["type"] == "torch"


def test_torch_head_multi_label_hidden_round_trip(tmp_path: Path) -> None:
    head = TorchHead(6, 4, multi_label=True, hidden_size=5, dropout=0.1).fit(X, Y_MULTI, epochs=2, seed=0)
    assert not head.training  # fit leaves the head in eval mode
    expected = head.predict_proba(torch.as_tensor(X, dtype=torch.float32))
    head.train()
    proba = head.predict_proba(torch.as_tensor(X, dtype=torch.float32))
    # a head in training mode predicts in eval mode, and stays there (prediction never switches to training)
    assert proba.shape == (48, 4) and np.array_equal(proba, expected) and not head.training
    loss = head.loss(head(torch.as_tensor(X, dtype=torch.float32)), torch.as_tensor(Y_MULTI))
    assert loss.ndim == 0 and loss.item() > 0
    _round_trip(head, tmp_path / "head")


def test_torch_head_seed_is_deterministic_and_local() -> None:
    a, b = TorchHead(6, 3, dropout=0.2), TorchHead(6, 3, dropout=0.2)
    b.load_state_dict(a.state_dict())
    state = torch.random.get_rng_state()
    a.fit(X, _ids(3), epochs=2, seed=7)
    assert torch.equal(state, torch.random.get_rng_state())
    b.fit(X, _ids(3), epochs=2, seed=7)
    assert np.array_equal(a.predict_proba(X), b.predict_proba(X))


def test_torch_head_errors(tmp_path: Path) -> None:
    head = TorchHead(6, 3)
    with pytest.raises(ValueError, match="expected embeddings with 6 features"):
        head(torch.zeros(2, 5))
    with pytest.raises(ValueError, match="class ids must be in 0..2"):
        head.fit(X, _ids(4), epochs=1)
    with pytest.raises(ValueError, match="positive int"):
        TorchHead(0, 3)
    head.save(tmp_path / "head")
    cfg = load_json(tmp_path / "head" / HEAD_CONFIG_NAME, what="head config")
    save_json(tmp_path / "head" / HEAD_CONFIG_NAME, {**cfg, "in_features": 7})
    with pytest.raises(ValueError, match=r"head\.safetensors: linear\.weight has shape"):
        load_head(tmp_path / "head")


# ------------------------------------------------------------------------------------------ build_head


def test_build_head_variants() -> None:
    head = build_head(None, num_classes=3)
    assert isinstance(head, SklearnHead) and type(head.estimator) is LogisticRegression
    multi = build_head(None, num_classes=4, multi_label=True, multi_target_strategy="multi-output")
    assert multi.multi_target_strategy == "multi-output"
    torch_head = build_head(None, 3, in_features=6, use_differentiable_head=True, hidden_size=4)
    assert isinstance(torch_head, TorchHead) and torch_head.hidden_size == 4
    rf = RandomForestClassifier(n_estimators=2)
    wrapped = build_head(rf, num_classes=3)
    assert isinstance(wrapped.estimator, RandomForestClassifier) and wrapped.estimator is not rf
    assert build_head("logistic_regression", 2, C=0.5).estimator.C == 0.5
    spec = TorchHead(6, 2)
    assert build_head(spec, 2) is not spec


def test_build_head_errors() -> None:
    with pytest.raises(ValueError, match="valid names"):
        build_head("svm", 2)
    with pytest.raises(ValueError, match="in_features"):
        build_head(None, 2, use_differentiable_head=True)
    with pytest.raises(ValueError, match="not differentiable"):
        build_head(RandomForestClassifier(), 2, use_differentiable_head=True)
    with pytest.raises(ValueError, match="num_classes=2"):
        build_head(TorchHead(6, 3), 2)
    with pytest.raises(TypeError, match="unsupported torch head Linear; use setfit_lite.heads.TorchHead"):
        build_head(torch.nn.Linear(6, 2), 2)


# ------------------------------------------------------------------------- saved format and versions

FORMAT1 = Path(__file__).parent / "data" / "heads_format1"


def _format1_cases() -> list[str]:
    return sorted(p.name for p in FORMAT1.iterdir() if p.is_dir())


@pytest.mark.parametrize("case", _format1_cases())
def test_heads_saved_by_the_single_module_code_load_and_resave_unchanged(tmp_path: Path, case: str) -> None:
    """Heads written by ``heads.py`` before it became a package load, predict as then, and save the same files."""
    expected = load_json(FORMAT1 / "expected.json", what="expected")
    X1 = np.asarray(expected["X"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # same scikit-learn release, no unknown parameters: no warning
        head = load_head(FORMAT1 / case)
    np.testing.assert_allclose(head.predict_proba(X1), np.asarray(expected[case]), rtol=1e-6, atol=1e-12)
    head.save(tmp_path / case)
    old_cfg = load_json(FORMAT1 / case / HEAD_CONFIG_NAME, what="old config")
    new_cfg = load_json(tmp_path / case / HEAD_CONFIG_NAME, what="new config")
    old_cfg.pop("sklearn_version", None), new_cfg.pop("sklearn_version", None)
    assert new_cfg == old_cfg
    old_t, new_t = load_tensors(FORMAT1 / case / HEAD_WEIGHTS_NAME), load_tensors(tmp_path / case / HEAD_WEIGHTS_NAME)
    assert old_t.keys() == new_t.keys() and all(torch.equal(old_t[k], new_t[k]) for k in old_t)


def _saved_lr(folder: Path, **changes) -> Path:
    SklearnHead(num_classes=3).fit(X, _ids(3)).save(folder)
    cfg = load_json(folder / HEAD_CONFIG_NAME, what="head config")
    params = {**cfg["estimator_params"], **changes.pop("estimator_params", {})}
    save_json(folder / HEAD_CONFIG_NAME, {**cfg, "estimator_params": params, **changes})
    return folder


def test_newer_sklearn_version_warns_naming_both(tmp_path: Path) -> None:
    import sklearn

    folder = _saved_lr(tmp_path / "head", sklearn_version="99.1.0")
    with pytest.warns(UserWarning, match=r"saved with scikit-learn 99\.1\.0 and is loaded with scikit-learn") as rec:
        head = load_head(folder)
    assert sklearn.__version__ in str(rec[0].message) and "newer release" in str(rec[0].message)
    assert "install scikit-learn 99.1" in str(rec[0].message)
    assert head.predict_proba(X).shape == (48, 3)


def test_unknown_saved_parameter_warns_and_older_version_is_silent(tmp_path: Path) -> None:
    folder = _saved_lr(tmp_path / "a", sklearn_version="1.3.0", estimator_params={"multi_class": "ovr"})
    with pytest.warns(UserWarning, match=r"LogisticRegression\.multi_class='ovr' do not exist .* ignored"):
        head = load_head(folder)
    assert "multi_class" not in head.estimator.get_params()
    # an older release, only parameters it had deprecated ("deprecated") or that still exist: no warning
    folder = _saved_lr(tmp_path / "b", sklearn_version="1.3.0", estimator_params={"gone": "deprecated"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_head(folder)
    with pytest.raises(ValueError, match=r"invalid sklearn_version 'banana'"):
        load_head(_saved_lr(tmp_path / "c", sklearn_version="banana"))


def test_non_finite_parameter_is_saved(tmp_path: Path) -> None:
    """C=inf was dropped with a warning (JSON has no inf); it is now stored and restored."""
    head = SklearnHead(LogisticRegression(C=np.inf, max_iter=1000), num_classes=2).fit(X, _ids(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = _round_trip(head, tmp_path / "head")
    assert loaded.estimator.C == np.inf


def test_non_finite_embeddings_are_refused() -> None:
    bad = X.copy()
    bad[3, 2] = np.nan
    head = TorchHead(6, 2).fit(X, _ids(2), epochs=1, seed=0)
    for fitted in (head, SklearnHead(num_classes=2).fit(X, _ids(2))):
        with pytest.raises(ValueError, match="embeddings contains NaN"):
            fitted.predict_proba(bad)
    with pytest.raises(ValueError, match=r"embeddings must be 2-D \(n_samples, n_features\), got shape \(6,\)"):
        head.predict_proba(X[0])


def test_head_names_are_public() -> None:
    from setfit_lite.heads import SKLEARN_HEAD_NAMES, TORCH_HEAD_NAMES

    assert SKLEARN_HEAD_NAMES[0] == "logistic_regression" and TORCH_HEAD_NAMES[0] == "differentiable"
    assert isinstance(build_head(TORCH_HEAD_NAMES[0], 2, in_features=6), TorchHead)


def test_one_private_sklearn_name_in_one_function() -> None:
    """heads use scikit-learn's public API, except ``_ConstantPredictor`` (no public equivalent), in one place."""
    import ast

    import setfit_lite.heads as heads_pkg

    uses = set()
    for path in sorted(Path(heads_pkg.__file__).parent.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        owner = {child: node.name for node in ast.walk(tree) if isinstance(node, ast.FunctionDef)
                 for child in ast.walk(node)}  # innermost function last: ast.walk goes outside in
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("sklearn"):
                uses |= {(path.name, owner.get(node), a.name) for a in node.names if a.name.startswith("_")}
            elif isinstance(node, ast.Attribute) and node.attr in ("_get_param_names", "_ConstantPredictor"):
                uses.add((path.name, owner.get(node), node.attr))
    assert uses == {("linear.py", "_constant_predictor_type", "_ConstantPredictor")}
