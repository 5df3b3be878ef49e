"""Self-training on unlabeled texts: the pseudo-label policy, its rounds, its logs, and the pool's checks."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import fold_bodies, make_sentences

from setfit_lite import SetFitModel, Trainer, TrainingArguments
from setfit_lite.training import self_training
from setfit_lite.training.callbacks import TrainerCallback
from setfit_lite.training.self_training import (
    cv_folds,
    fewest_trained,
    keeps_pool,
    knn_agreement,
    select_pseudo_labels,
    spread_agreement,
)

# the tests of the rounds pin the confidence policy, always on; the decision and the kNN vote have their own tests
FAST = {"num_epochs": (1, 4), "max_steps": 4, "body_learning_rate": 1e-2, "show_progress_bar": False,
        "backend": "cpu", "seed": 3, "self_training": True, "pseudo_label_method": "confidence"}
AUTO = {"self_training": "auto", "pseudo_label_method": "knn"}  # the defaults
POOL, POOL_LABELS = make_sentences(30, seed=7)  # 60 texts, none labelled here


def _train(body: str, data: dict, pool: object = None, trainer_class: type = Trainer, **args: object
           ) -> tuple[SetFitModel, Trainer]:
    model = SetFitModel.from_pretrained(body)
    trainer = trainer_class(model, TrainingArguments(**(FAST | args)), train_dataset=data, unlabeled_dataset=pool)
    trainer.train()
    return model, trainer


class Spy(Trainer):
    """Records the texts (their token lists) each head fit is given."""

    def train_classifier(self, args, tokens, ids, multi_label):  # type: ignore[override]
        self.head_sets = [*getattr(self, "head_sets", []), (list(tokens), ids.copy())]
        super().train_classifier(args, tokens, ids, multi_label)


# ------------------------------------------------------------------------------------------------- the policy


def test_select_keeps_only_rows_at_or_above_the_threshold() -> None:
    proba = np.array([[0.9, 0.1], [0.55, 0.45], [0.2, 0.8], [0.35, 0.65], [0.5, 0.5]])
    rows, ids = select_pseudo_labels(proba, np.array([10, 10]), threshold=0.6, per_class=1.0)
    assert rows.tolist() == [0, 2, 3] and ids.tolist() == [0, 1, 1]
    assert (proba[rows].max(axis=1) >= 0.6).all()


def test_select_caps_each_class_at_its_labelled_count_times_the_factor() -> None:
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(200, 3))
    proba = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    counts = np.array([2, 4, 1])
    rows, ids = select_pseudo_labels(proba, counts, threshold=0.0, per_class=2.5)
    assert np.bincount(ids, minlength=3).tolist() == [5, 10, 2]
    for c in range(3):  # the most confident of each class are the ones kept
        kept = proba[rows[ids == c], c]
        others = proba[(proba.argmax(axis=1) == c)][:, c]
        assert kept.min() >= np.sort(others)[-len(kept)]


# -------------------------------------------------------------------------------------------- through Trainer


def test_rounds_zero_is_training_without_the_pool(tiny_body_path: str, toy_data: dict, toy_eval: dict) -> None:
    alone, _ = _train(tiny_body_path, toy_data)
    with_pool, _ = _train(tiny_body_path, toy_data, POOL, self_training_rounds=0)
    np.testing.assert_allclose(with_pool.predict_proba(toy_eval["text"], as_numpy=True),
                               alone.predict_proba(toy_eval["text"], as_numpy=True), atol=1e-6)
    assert "self_training" not in with_pool.training_info


def test_a_threshold_no_probability_reaches_adds_nothing(tiny_body_path: str, toy_data: dict,
                                                         toy_eval: dict) -> None:
    alone, _ = _train(tiny_body_path, toy_data)
    model, trainer = _train(tiny_body_path, toy_data, POOL, trainer_class=Spy, pseudo_label_threshold=1.0)
    assert model.training_info["self_training"]["rounds"][0]["counts"] == {"negative": 0, "positive": 0}
    assert len(trainer.head_sets) == 1  # the head was not fitted again
    np.testing.assert_allclose(model.predict_proba(toy_eval["text"], as_numpy=True),
                               alone.predict_proba(toy_eval["text"], as_numpy=True), atol=1e-6)


def test_pseudo_labels_are_the_confident_ones_and_balanced_per_class(tiny_body_path: str) -> None:
    texts, labels = make_sentences(6, seed=0)
    data = {"text": texts[:6] + texts[6:9], "label": labels[:6] + labels[6:9]}  # 6 positive, 3 negative
    model, trainer = _train(tiny_body_path, data, POOL, trainer_class=Spy, pseudo_labels_per_class=2.0,
                            pseudo_label_threshold=0.0, self_training_body=False)
    counts = model.training_info["self_training"]["rounds"][0]["counts"]
    assert counts["positive"] <= 12 and counts["negative"] <= 6 and sum(counts.values()) > 0
    tokens, ids = trainer.head_sets[-1]
    assert len(tokens) == 9 + sum(counts.values())
    assert np.bincount(ids[9:], minlength=2).tolist() == [counts[label] for label in model.labels]


def test_threshold_bounds_the_probabilities_of_the_pseudo_labelled(tiny_body_path: str, toy_data: dict) -> None:
    """Every pseudo-labelled text had, under the labelled-only model, its label's probability >= the threshold."""
    alone, _ = _train(tiny_body_path, toy_data)
    proba = alone.predict_proba(POOL, as_numpy=True)
    threshold = float(np.median(proba.max(axis=1)))
    model, trainer = _train(tiny_body_path, toy_data, POOL, trainer_class=Spy, pseudo_label_threshold=threshold,
                            pseudo_labels_per_class=100.0, self_training_body=False)
    tokens, ids = trainer.head_sets[-1]
    n = len(toy_data["text"])
    by_tokens = {tuple(t): i for i, t in enumerate(model.tokenize(POOL))}
    rows = [by_tokens[tuple(t)] for t in tokens[n:]]
    assert len(rows) == int((proba.max(axis=1) >= threshold).sum()) > 0
    assert (proba[rows, ids[n:]] >= threshold).all()


def test_a_pool_text_equal_to_a_labelled_one_counts_once(tiny_body_path: str, toy_data: dict) -> None:
    pool = toy_data["text"] + POOL[:10] + POOL[:10]  # the labelled texts, and ten texts twice
    model, trainer = _train(tiny_body_path, toy_data, pool, trainer_class=Spy, pseudo_label_threshold=0.0,
                            pseudo_labels_per_class=100.0, self_training_body=False)
    info = model.training_info["self_training"]
    assert info["pool"] == 10 and info["dropped"] == len(toy_data["text"]) + 10
    tokens, _ = trainer.head_sets[-1]
    assert len(tokens) == len(toy_data["text"]) + 10
    assert len({tuple(t) for t in tokens}) == len(tokens)


def test_the_body_is_trained_again_only_when_asked(tiny_body_path: str, toy_data: dict, toy_eval: dict) -> None:
    alone, _ = _train(tiny_body_path, toy_data)
    head_only, _ = _train(tiny_body_path, toy_data, POOL, self_training_body=False, pseudo_label_threshold=0.0)
    with_body, _ = _train(tiny_body_path, toy_data, POOL, self_training_body=True, pseudo_label_threshold=0.0)
    np.testing.assert_allclose(head_only.encode(toy_eval["text"]), alone.encode(toy_eval["text"]), atol=1e-6)
    assert not np.allclose(with_body.encode(toy_eval["text"]), alone.encode(toy_eval["text"]), atol=1e-4)
    assert with_body.training_info["self_training"]["rounds"][0]["body"] is True


def test_callbacks_see_each_rounds_counts_per_class(tiny_body_path: str, toy_data: dict) -> None:
    class Logs(TrainerCallback):
        entries: list = []

        def on_log(self, args, state, control, logs=None, **kwargs):  # type: ignore[override]
            if "pseudo_labels" in logs:
                self.entries.append(dict(logs))

    model = SetFitModel.from_pretrained(tiny_body_path)
    trainer = Trainer(model, TrainingArguments(**FAST | {"self_training_rounds": 2, "pseudo_label_threshold": 0.0}),
                      train_dataset=toy_data, unlabeled_dataset={"text": POOL}, callbacks=[Logs()])
    trainer.train()
    rounds = model.training_info["self_training"]["rounds"]
    assert [e["self_training_round"] for e in Logs.entries] == [1.0, 2.0] == [float(r["round"]) for r in rounds]
    for entry, done in zip(Logs.entries, rounds):
        assert entry["pseudo_labels/positive"] == done["counts"]["positive"]
        assert entry["pseudo_labels"] == sum(done["counts"].values())
    assert [e for e in trainer.state.log_history if "pseudo_labels" in e] == \
        [e | {"step": e2["step"]} for e, e2 in zip(Logs.entries, [e for e in trainer.state.log_history
                                                                  if "pseudo_labels" in e])]


# --------------------------------------------------------------------------------------------- the pool's checks


def test_the_pool_never_holds_evaluated_texts(tiny_body_path: str, toy_data: dict, toy_eval: dict) -> None:
    model = SetFitModel.from_pretrained(tiny_body_path)
    with pytest.raises(ValueError, match="shares 3 text.*eval dataset"):
        Trainer(model, TrainingArguments(**FAST), train_dataset=toy_data, eval_dataset=toy_eval,
                unlabeled_dataset=POOL + toy_eval["text"][:3])
    trainer = Trainer(model, TrainingArguments(**FAST), train_dataset=toy_data, unlabeled_dataset=POOL)
    trainer.train()
    with pytest.raises(ValueError, match="evaluated dataset"):
        trainer.evaluate({"text": POOL[:4], "label": ["positive"] * 4})
    assert "accuracy" in trainer.evaluate(toy_eval)


def test_the_benchmark_pool_is_drawn_apart_from_sample_and_scored_split(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location(
        "compare_setfit", Path(__file__).resolve().parent.parent / "benchmarks" / "compare_setfit.py")
    compare_setfit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare_setfit)
    folder = tmp_path / "toy"
    folder.mkdir()
    texts, labels = make_sentences(40, seed=0)
    rows = [{"text": t, "label": int(lab == "positive")} for t, lab in zip(texts, labels)]
    (folder / "train.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    (folder / "test.jsonl").write_text("\n".join(json.dumps(r) for r in rows[::7]))  # some shared with train
    task = compare_setfit.load_task(tmp_path, "toy:4", seed=0, pool=1000)
    pool = set(task["pool_texts"])
    assert pool and not pool & set(task["texts"]) and not pool & set(task["test_texts"])


@pytest.mark.parametrize(("pool", "error", "match"), [
    ("one text", TypeError, "single string"),
    ([1, 2], TypeError, "row 0: text must be a str"),
    (["fine", "  "], ValueError, "row 1: text is empty"),
    ([], ValueError, "empty"),
    ({"sentence": ["a text"]}, ValueError, "expected a 'text' column"),
    ({"text": ["a", None]}, TypeError, "column 'text'.*row 1"),
])
def test_bad_pools_raise_clear_errors(tiny_body_path: str, toy_data: dict, pool: object, error: type,
                                      match: str) -> None:
    model = SetFitModel.from_pretrained(tiny_body_path)
    with pytest.raises(error, match=f"unlabeled_dataset.*{match}"):
        Trainer(model, TrainingArguments(**FAST), train_dataset=toy_data, unlabeled_dataset=pool)


@pytest.mark.parametrize(("name", "value", "error"), [
    ("pseudo_label_threshold", 1.5, ValueError), ("pseudo_label_threshold", "high", TypeError),
    ("self_training_rounds", -1, ValueError), ("self_training_rounds", 1.5, TypeError),
    ("pseudo_labels_per_class", 0, ValueError), ("self_training_body", "yes", TypeError),
    ("self_training", "maybe", ValueError), ("self_training", 1, TypeError), ("self_training_folds", 1, ValueError),
    ("self_training_margin", 2.0, ValueError), ("pseudo_label_method", "vote", ValueError),
    ("pseudo_label_neighbors", 0, ValueError),
])
def test_bad_arguments_raise(name: str, value: object, error: type) -> None:
    with pytest.raises(error, match=f"TrainingArguments: {name} must be"):
        TrainingArguments(**{name: value})


def test_a_pool_with_multi_label_data_raises(tiny_body_path: str) -> None:
    model = SetFitModel.from_pretrained(tiny_body_path, multi_target_strategy="one-vs-rest")
    data = {"text": ["good film", "bad film", "good dull film", "fine story"],
            "label": [[1, 0], [0, 1], [1, 1], [1, 0]]}
    trainer = Trainer(model, TrainingArguments(**FAST), train_dataset=data, unlabeled_dataset=POOL)
    with pytest.raises(ValueError, match="single-label"):
        trainer.train()


# ------------------------------------------------------------------------------------- the kNN agreement rule


def test_knn_agreement_needs_a_strict_majority_of_the_nearest_labelled_texts() -> None:
    labelled = np.array([[1.0, 0.0], [0.9, 0.1], [0.8, 0.2], [0.0, 1.0], [0.1, 0.9], [0.2, 0.8]])
    ids = np.array([0, 0, 0, 1, 1, 1])
    pool = np.array([[1.0, 0.05], [0.05, 1.0], [0.6, 0.4], [1.0, 0.05]])
    # row 0: near class 0, predicted 0 -> agrees; row 1: near class 1, predicted 0 -> not;
    # row 2: its 3 nearest are 0, 0, 0 (cosine) -> predicted 1 does not agree; row 3: predicted 1 near class 0 -> not
    agree = knn_agreement(pool, labelled, ids, np.array([0, 0, 1, 1]), neighbors=3)
    assert agree.tolist() == [True, False, False, False]
    assert knn_agreement(pool, labelled, ids, np.array([0, 1, 0, 0]), neighbors=3).tolist() == [True, True, True,
                                                                                               True]
    # a tie (1 of 2 neighbours) is no majority
    tie = knn_agreement(np.array([[1.0, 1.0]]), np.array([[1.0, 0.0], [0.0, 1.0]]), np.array([0, 1]),
                        np.array([0]), neighbors=2)
    assert tie.tolist() == [False]


def _arc(degrees: np.ndarray) -> np.ndarray:
    return np.stack([np.cos(np.radians(degrees)), np.sin(np.radians(degrees))], axis=1)


def test_spread_agreement_follows_the_pool_s_clusters_where_the_knn_vote_cannot() -> None:
    # labelled texts at 0 degrees (class 0) and 90 (class 1); the pool: a dense arc from 0 to 60 degrees and a
    # short one from 90 down to 74. The pool text at 60 degrees is nearer class 1's labelled texts (30 degrees)
    # than class 0's (60), so the vote of the labelled texts says 1; along its own arc the labels of class 0 reach it
    labelled, ids = _arc(np.array([-4.0, -2.0, 0.0, 90.0, 92.0, 94.0])), np.array([0, 0, 0, 1, 1, 1])
    first, second = np.arange(2.0, 62.0, 2.0), np.arange(88.0, 72.0, -2.0)
    pool = _arc(np.concatenate([first, second]))
    truth = np.array([0] * len(first) + [1] * len(second))
    at_60 = len(first) - 1
    assert spread_agreement(pool, labelled, ids, truth).all()  # every text of each arc gets its arc's class
    assert not spread_agreement(pool, labelled, ids, 1 - truth).any()
    assert not knn_agreement(pool, labelled, ids, truth, neighbors=3)[at_60]
    assert knn_agreement(pool, labelled, ids, 1 - truth, neighbors=3)[at_60]


def test_a_spread_pseudo_labelling_round_keeps_only_what_spreading_agrees_with(
        tiny_body_path: str, toy_data: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    # the agreement rule of "spread" in a real round: every pool text it keeps is one spreading agreed with
    agreed: list[int] = []

    def recording(*args):
        agree = spread_agreement(*args)
        agreed.append(int(agree.sum()))
        return agree

    monkeypatch.setattr(self_training, "spread_agreement", recording)
    model, trainer = _train(tiny_body_path, toy_data, POOL, pseudo_label_method="spread", pseudo_label_threshold=0.0)
    rounds = model.training_info["self_training"]["rounds"]
    kept = sum(rounds[0]["counts"].values())
    assert len(rounds) == 1 and len(agreed) == 1 and 0 < kept <= agreed[0]


def test_select_keeps_only_rows_the_vote_agrees_with() -> None:
    proba = np.array([[0.9, 0.1], [0.95, 0.05], [0.2, 0.8], [0.1, 0.9]])
    rows, ids = select_pseudo_labels(proba, np.array([5, 5]), 0.5, 1.0, agree=np.array([False, True, True, False]))
    assert rows.tolist() == [1, 2] and ids.tolist() == [0, 1]


# --------------------------------------------------------------------- the decision: cross-validated, per task


def _fake_pseudo_labels(wrong: bool):
    """A stand-in for the pseudo-labeller: every pool text, labelled with its true class (or the other one)."""
    truth = dict(zip(POOL, POOL_LABELS))

    def fake(model, args, backend, tokens, ids, pool_tokens):
        by_tokens = {tuple(t): text for text, t in zip(POOL, model.tokenize(POOL))}
        labels = list(model.labels)
        names = [truth[by_tokens[tuple(t)]] for t in pool_tokens]
        pseudo = [1 - labels.index(name) if wrong else labels.index(name) for name in names]
        return np.arange(len(pool_tokens)), np.asarray(pseudo)

    return fake


def test_the_pool_is_dropped_when_cross_validation_says_it_hurts(tiny_body_path: str, toy_data: dict,
                                                                toy_eval: dict, monkeypatch) -> None:
    alone, _ = _train(tiny_body_path, toy_data)
    monkeypatch.setattr(self_training, "pseudo_label", _fake_pseudo_labels(wrong=True))
    model, trainer = _train(tiny_body_path, toy_data, POOL, **AUTO)
    info = model.training_info["self_training"]
    assert info["used"] is False and info["rounds"] == [] and info["cv"]["gain"] < 0
    # the continuous score sees the wrong pseudo-labels too: the held-out texts' own class lost probability
    assert 0.0 <= info["cv"]["proba_with"] < info["cv"]["proba_without"] <= 1.0
    assert info["cv"]["held_out"] == len(toy_data["text"]) and info["cv"]["folds"] == 3
    np.testing.assert_allclose(model.predict_proba(toy_eval["text"], as_numpy=True),
                               alone.predict_proba(toy_eval["text"], as_numpy=True), atol=1e-6)
    logged = [e for e in trainer.state.log_history if "self_training_used" in e]
    assert len(logged) == 1 and logged[0]["self_training_used"] == 0.0
    assert logged[0]["self_training_cv_gain"] == pytest.approx(info["cv"]["gain"])


def test_the_pool_is_kept_when_cross_validation_says_it_helps(tiny_body_path: str, toy_data: dict,
                                                             monkeypatch) -> None:
    monkeypatch.setattr(self_training, "pseudo_label", _fake_pseudo_labels(wrong=False))
    model, trainer = _train(tiny_body_path, toy_data, POOL, **AUTO)
    info = model.training_info["self_training"]
    assert info["used"] is True and info["cv"]["gain"] > 0 and info["cv"]["with_pool"] > info["cv"]["without"]
    assert info["rounds"][0]["counts"] == {"negative": 30, "positive": 30}
    assert [e["self_training_used"] for e in trainer.state.log_history if "self_training_used" in e] == [1.0]
    assert info["cv"]["pseudo_labels"] == [len(POOL)] * 3 and "not tested" not in info["cv"]["reason"]
    assert 0.0 <= info["cv"]["proba_without"] < info["cv"]["proba_with"] <= 1.0


def test_a_kept_pool_trains_the_model_forcing_the_pool_trains(tiny_body_path: str, toy_data: dict,
                                                              toy_eval: dict, monkeypatch) -> None:
    """The decision only decides: its folds' trainings draw random numbers, and the round after it must draw the
    ones it would have drawn without the decision, so "auto" that keeps the pool is `self_training=True`."""
    monkeypatch.setattr(self_training, "pseudo_label", _fake_pseudo_labels(wrong=False))
    kept, _ = _train(tiny_body_path, toy_data, POOL, **AUTO)
    forced, _ = _train(tiny_body_path, toy_data, POOL, **(AUTO | {"self_training": True}))
    assert kept.training_info["self_training"]["used"] is True
    assert [r["body"] for r in kept.training_info["self_training"]["rounds"]] == [True]
    np.testing.assert_array_equal(kept.encode(toy_eval["text"]), forced.encode(toy_eval["text"]))
    np.testing.assert_array_equal(kept.predict_proba(toy_eval["text"], as_numpy=True),
                                  forced.predict_proba(toy_eval["text"], as_numpy=True))


def test_the_folds_models_are_freed_as_the_decision_goes(tiny_body_path: str, toy_data: dict, monkeypatch) -> None:
    """A sentence-transformers body is in reference cycles (its model card data holds it): without an explicit
    collection each fold's copy of the body (with its optimizer state and bf16 copy) stays alive until the cyclic
    collector runs, and the decision held several at once. With the collector off, none may be alive at the end."""
    with fold_bodies(monkeypatch) as made:  # checked inside: the collector, on again, would free them
        model, _ = _train(tiny_body_path, toy_data, POOL, **AUTO)
        assert len(made) == model.training_info["self_training"]["cv"]["folds"] == 3  # the folds' bodies
        assert [ref() for ref in made] == [None, None, None]


def test_a_decision_whose_folds_pseudo_labelled_nothing_says_the_pool_was_not_tested(tiny_body_path: str,
                                                                                       toy_data: dict) -> None:
    # no probability reaches 1: every fold's round keeps no pool text, so with and without are the same model
    model, _ = _train(tiny_body_path, toy_data, POOL, **AUTO, pseudo_label_threshold=1.0)
    cv = model.training_info["self_training"]["cv"]
    assert cv["used"] is False and cv["pseudo_labels"] == [0, 0, 0] and cv["gain"] == 0.0
    assert cv["proba_with"] == pytest.approx(cv["proba_without"])
    assert "pseudo-labelled no pool text" in cv["reason"] and "pseudo_label_threshold=" in cv["reason"]



@pytest.mark.parametrize(("method", "view"), [("knn", "the kNN vote"), ("spread", "label spreading's agreement"),
                                              ("confidence", None)])
def test_the_not_tested_reason_names_the_agreement_view_that_filtered(tiny_body_path: str, toy_data: dict,
                                                                      method: str, view: str | None) -> None:
    model, _ = _train(tiny_body_path, toy_data, POOL, **(AUTO | {"pseudo_label_method": method}),
                      pseudo_label_threshold=1.0)
    reason = model.training_info["self_training"]["cv"]["reason"]
    assert "pseudo-labelled no pool text" in reason
    if view is None:
        assert "vote" not in reason and "spreading" not in reason
    else:
        assert f"pseudo_label_threshold=1.0, {view} and the per-class cap" in reason


@pytest.mark.parametrize("settings", [AUTO, {"self_training": False, "calibration": "temperature"}])
def test_evaluation_during_training_does_not_break_the_folds(tiny_body_path: str, toy_data: dict, toy_eval: dict,
                                                             settings: dict) -> None:
    """eval_steps alone means eval_strategy="steps" to TrainingArguments: the folds of the decision (and of the
    calibration) turn evaluation off, and must not have it turned back on by the run's eval_steps (a fold has no
    eval dataset: "eval_strategy='steps' needs an eval_dataset" after the labelled training)."""
    model = SetFitModel.from_pretrained(tiny_body_path)
    trainer = Trainer(model, TrainingArguments(**(FAST | settings | {"eval_strategy": "steps", "eval_steps": 2})),
                      train_dataset=toy_data, eval_dataset=toy_eval, unlabeled_dataset=POOL)
    trainer.train()
    assert any("eval_accuracy" in entry for entry in trainer.state.log_history)
    if settings is AUTO:
        assert model.training_info["self_training"]["cv"]["folds"] == 3
    else:
        assert model.training_info["calibration"]["temperature"] is not None


def test_a_tie_keeps_a_tested_pool_and_never_an_untested_one() -> None:
    assert keeps_pool(0.0, 0.0, [3, 0, 1])  # tested, no held-out text lost: kept
    assert keeps_pool(0.05, 0.0, [2, 2, 2]) and not keeps_pool(-0.01, 0.0, [2, 2, 2])
    assert not keeps_pool(0.0, 0.0, [0, 0, 0])  # nothing pseudo-labelled: nothing was measured
    assert not keeps_pool(0.02, 0.05, [1]) and keeps_pool(0.05, 0.05, [1])  # the margin is the least gain
    assert keeps_pool(-0.01, -0.02, [1])  # a negative margin accepts a small loss


def test_the_decision_reads_only_the_labelled_texts_and_the_pool(tiny_body_path: str, toy_data: dict,
                                                                toy_eval: dict, monkeypatch) -> None:
    import setfit_lite.trainer

    seen: set[str] = set()
    tokenize = SetFitModel.tokenize

    def spy(self, texts, *args, **kwargs):
        texts = list(texts)
        assert not set(texts) & set(toy_eval["text"]), "the decision touched evaluation data"
        seen.update(texts)
        return tokenize(self, texts, *args, **kwargs)

    def no_evaluation(*args, **kwargs):
        raise AssertionError("the decision evaluated on the eval dataset")

    monkeypatch.setattr(SetFitModel, "tokenize", spy)
    monkeypatch.setattr(setfit_lite.trainer, "evaluate_model", no_evaluation)
    model = SetFitModel.from_pretrained(tiny_body_path)
    trainer = Trainer(model, TrainingArguments(**FAST | AUTO), train_dataset=toy_data, eval_dataset=toy_eval,
                      unlabeled_dataset=POOL)
    trainer.train()
    assert model.training_info["self_training"]["cv"]["held_out"] == len(toy_data["text"])
    anchors = {trainer.args.anchor_template.format(label=label) for label in model.labels}  # the label names
    assert seen <= set(toy_data["text"]) | set(POOL) | anchors and set(toy_data["text"]) <= seen


def test_the_folds_keep_single_text_classes_in_every_training_and_score_the_others() -> None:
    ids = np.array([0, 1, 0, 2, 1, 0, 1, 3, 0, 1, 0, 1])  # classes 2 and 3: one labelled text each
    fold_of, folds = cv_folds(ids, 3, seed=0)
    assert folds == 3 and fold_of[[3, 7]].tolist() == [-1, -1]
    for number in range(folds):
        held_out, train = ids[fold_of == number], ids[fold_of != number]
        assert len(held_out) and set(held_out) <= {0, 1} and set(train) == {0, 1, 2, 3}
    assert sorted(np.flatnonzero(fold_of >= 0).tolist()) == [i for i in range(12) if i not in (3, 7)]
    again, _ = cv_folds(ids, 3, seed=0)
    np.testing.assert_array_equal(fold_of, again)  # deterministic per seed
    assert not np.array_equal(fold_of, cv_folds(ids, 3, seed=1)[0])
    assert cv_folds(np.array([0, 0, 1, 1, 1, 2]), 3, seed=0)[1] == 2  # at most the smallest scored class's count


@pytest.mark.parametrize(("ids", "fewest"), [([0, 0, 1, 1, 2, 2], 1), ([0, 0, 0, 1, 1, 1], 2),
                                             ([0, 0, 0, 0, 1, 1, 1, 2], 2), ([0, 0, 0, 0, 0, 1, 1, 1, 1, 1], 3),
                                             ([0, 1, 1, 1], 0)])
def test_the_fewest_texts_of_a_class_a_fold_trains_on(ids: list[int], fewest: int) -> None:
    fold_of, folds = cv_folds(np.array(ids), 3, seed=0)
    assert fewest_trained(np.array(ids), fold_of, folds) == fewest


@pytest.mark.parametrize("ids", [[0, 0, 0, 1], [0, 1, 2], [0, 0, 0, 0]])
def test_the_folds_are_empty_when_fewer_than_two_classes_can_be_scored(ids: list[int]) -> None:
    fold_of, folds = cv_folds(np.array(ids), 3, seed=0)
    assert folds == 0 and (fold_of == -1).all()


def test_a_class_with_one_labelled_text_still_gets_a_decision(tiny_body_path: str, toy_data: dict,
                                                             monkeypatch) -> None:
    """Skewed labels, as `suggest_labels` picks them: a third class with a single text. The folds split the two
    others; the single text is trained on in every fold; the decision is cross-validated and deterministic."""
    data = {"text": toy_data["text"] + ["an odd neutral remark"], "label": toy_data["label"] + ["neutral"]}
    monkeypatch.setattr(self_training, "pseudo_label", _fake_pseudo_labels(wrong=False))
    model, _ = _train(tiny_body_path, data, POOL, **AUTO)
    info = model.training_info["self_training"]
    cv = info["cv"]
    assert cv["folds"] == 3 and cv["held_out"] == len(toy_data["text"]) and cv["train_only"] == 1
    assert cv["fold_min_train"] >= 2  # every scored class has 3 or more texts: each fold trains on 2 or more
    assert cv["gain"] is not None and "1 text(s) of single-text classes" in cv["reason"]
    assert info["used"] is True and info["rounds"]  # right pseudo-labels help: the pool is used
    again, _ = _train(tiny_body_path, data, POOL, **AUTO)
    assert again.training_info["self_training"]["cv"] == cv


def test_a_class_with_one_labelled_text_cannot_be_cross_validated(tiny_body_path: str, toy_data: dict,
                                                                 toy_eval: dict) -> None:
    """Only one class has 2 or more texts: nothing sound to score, so the labels alone are the model."""
    data = {"text": toy_data["text"][:5] + toy_data["text"][-1:], "label": toy_data["label"][:5] + ["negative"]}
    alone, _ = _train(tiny_body_path, data)
    model, _ = _train(tiny_body_path, data, POOL, **AUTO)
    info = model.training_info["self_training"]
    assert info["used"] is False and "fewer than 2 classes have 2 or more" in info["cv"]["reason"]
    assert info["cv"]["gain"] is None and info["cv"]["train_only"] == 6 and info["rounds"] == []
    np.testing.assert_allclose(model.predict_proba(toy_eval["text"], as_numpy=True),
                               alone.predict_proba(toy_eval["text"], as_numpy=True), atol=1e-6)


def _per_class(data: dict, count: int) -> dict:
    """The first ``count`` texts of each class of ``data``."""
    keep = [i for i, label in enumerate(data["label"]) if data["label"][:i].count(label) < count]
    return {"text": [data["text"][i] for i in keep], "label": [data["label"][i] for i in keep]}


def test_under_three_labelled_texts_per_class_the_pool_is_not_decided_on(tiny_body_path: str, toy_data: dict,
                                                                       toy_eval: dict, monkeypatch) -> None:
    """2 labelled texts per class: the folds' models would see one text of a class; no fold is trained, the
    labels alone are the model, even where right pseudo-labels would pass the folds (they do at 3 per class)."""
    monkeypatch.setattr(self_training, "pseudo_label", _fake_pseudo_labels(wrong=False))
    two = _per_class(toy_data, 2)
    alone, _ = _train(tiny_body_path, two)
    model, _ = _train(tiny_body_path, two, POOL, **AUTO)
    info = model.training_info["self_training"]
    assert info["used"] is False and info["rounds"] == [] and info["cv"]["folds"] == 0 and info["cv"]["gain"] is None
    assert "4 labelled texts for 2 classes, fewer than 3 per class" in info["cv"]["reason"]
    np.testing.assert_allclose(model.predict_proba(toy_eval["text"], as_numpy=True),
                               alone.predict_proba(toy_eval["text"], as_numpy=True), atol=1e-6)
    three, _ = _train(tiny_body_path, _per_class(toy_data, 3), POOL, **AUTO)
    assert three.training_info["self_training"]["cv"]["folds"] == 3 and three.training_info["self_training"]["used"]
    # the classes the model knows count: 6 texts of two classes, a third class named with no text yet
    named = SetFitModel.from_pretrained(tiny_body_path, labels=[*dict.fromkeys(toy_data["label"]), "mixed"])
    Trainer(named, TrainingArguments(**(FAST | AUTO)), train_dataset=_per_class(toy_data, 3),
            unlabeled_dataset=POOL).train()
    assert "6 labelled texts for 3 classes" in named.training_info["self_training"]["cv"]["reason"]
    forced, _ = _train(tiny_body_path, two, POOL, self_training=True)
    assert forced.training_info["self_training"]["used"] is True  # True uses it anyway


def test_self_training_false_ignores_the_pool(tiny_body_path: str, toy_data: dict) -> None:
    model, _ = _train(tiny_body_path, toy_data, POOL, self_training=False)
    assert "self_training" not in model.training_info


@pytest.mark.parametrize("without", [{"self_training": False}, {"self_training_rounds": 0}, {"pool": None}])
def test_training_again_without_the_pool_drops_the_earlier_self_training_record(tiny_body_path: str,
                                                                                toy_data: dict,
                                                                                without: dict) -> None:
    """training_info describes the last training: a model self-trained before (or loaded with that record) and
    trained again without the pool must not claim a pool it was not trained on."""
    model, _ = _train(tiny_body_path, toy_data, POOL, pseudo_label_threshold=0.0)
    assert model.training_info["self_training"]["used"] is True
    settings = dict(without)
    pool = settings.pop("pool", POOL)
    Trainer(model, TrainingArguments(**(FAST | settings)), train_dataset=toy_data, unlabeled_dataset=pool).train()
    assert "self_training" not in model.training_info


@pytest.mark.parametrize("size, reports", [(self_training.POOL_CHUNK * 2 + 5, 3), (self_training.POOL_CHUNK - 1, 0)])
def test_a_large_pool_reports_its_tokenising_progress(size: int, reports: int, caplog: pytest.LogCaptureFixture
                                                      ) -> None:
    """A pool of 10,000 texts or more logs each chunk it tokenises (and draws a bar on a terminal); the ids are
    those of one call on the whole pool, in order."""
    class Counting:
        calls: list[int] = []

        def tokenize(self, texts: list[str]) -> list[list[int]]:
            self.calls.append(len(texts))
            return [[len(t)] for t in texts]

    pool = [f"text {i}" for i in range(size)]
    with caplog.at_level("INFO", logger=self_training.__name__):
        ids = self_training.tokenize_pool(Counting(), pool)
    assert ids == [[len(t)] for t in pool]
    lines = [r.getMessage() for r in caplog.records if "unlabeled pool" in r.getMessage()]
    assert len(lines) == reports
    if reports:
        assert lines[-1] == f"unlabeled pool: {size} of {size} texts tokenised"


def test_with_bf16_prediction_the_round_s_body_is_the_one_that_predicts(tiny_body_path: str, toy_data: dict,
                                                                           toy_eval: dict) -> None:
    """Pseudo-labelling predicts (a bf16 copy of the body is made), then the round trains the body with the fused
    AdamW: the trained model must embed with its final body, not with a copy made before the round."""
    import copy
    import warnings

    model = SetFitModel.from_pretrained(tiny_body_path, inference_precision="bf16")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # bf16 emulated on a CPU without it: slower, same numbers
        trainer = Trainer(model, TrainingArguments(**FAST), train_dataset=toy_data, unlabeled_dataset=POOL)
        trainer.train()
        assert model.training_info["self_training"]["rounds"][0]["body"] is True
        final = model.with_body(copy.deepcopy(model.model_body))
        np.testing.assert_allclose(model.encode(toy_eval["text"]), final.encode(toy_eval["text"]), atol=1e-6)


# ------------------------------------------------------------------------------ checkpoints, resumes, calibration
class _Saves(TrainerCallback):
    def __init__(self) -> None:
        self.steps: list[int] = []

    def on_save(self, args, state, control, **kwargs):  # type: ignore[no-untyped-def]
        self.steps.append(state.global_step)


def test_the_rounds_body_training_never_replaces_the_labelled_checkpoints(tiny_body_path: str, toy_data: dict,
                                                                          tmp_path: Path) -> None:
    """Checkpoints are of the labelled training: a round (whose steps count from 0 again) saving `checkpoint-2`
    over the labelled one would make a resumed run load the round's body into the labelled phase."""
    saves = _Saves()
    model = SetFitModel.from_pretrained(tiny_body_path)
    trainer = Trainer(model, TrainingArguments(**FAST, save_strategy="steps", save_steps=2, output_dir=str(tmp_path)),
                      train_dataset=toy_data, unlabeled_dataset=POOL, callbacks=[saves])
    trainer.train()
    assert model.training_info["self_training"]["rounds"][0]["body"]
    assert saves.steps == [2, 4]  # the labelled phase's; the round's 4 steps saved nothing


def test_a_resume_by_the_interrupted_trainer_gives_its_folds_the_untrained_body(tiny_body_path: str,
                                                                                toy_data: dict, tmp_path: Path
                                                                                ) -> None:
    """The folds of calibration (and of the pool decision) retrain the body from before training; a resume by
    the trainer that was interrupted must not hand them the body trained up to the interruption."""
    import signal

    from setfit_lite.trainer import TrainingInterrupted

    class Stop(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):  # type: ignore[no-untyped-def]
            if state.global_step == 3:
                signal.raise_signal(signal.SIGTERM)

    args = {**FAST, "self_training": False, "calibration": "temperature", "save_strategy": "steps",
            "save_steps": 2}
    reference = SetFitModel.from_pretrained(tiny_body_path)
    Trainer(reference, TrainingArguments(**args, output_dir=str(tmp_path / "a")), train_dataset=toy_data).train()
    model = SetFitModel.from_pretrained(tiny_body_path)
    trainer = Trainer(model, TrainingArguments(**args, output_dir=str(tmp_path / "b")), train_dataset=toy_data,
                      callbacks=[Stop()])
    with pytest.raises(TrainingInterrupted):
        trainer.train()
    trainer.pop_callback(Stop)
    trainer.train(resume_from_checkpoint=True)
    assert model.training_info["calibration"] == reference.training_info["calibration"]
    texts = toy_data["text"][:6]
    np.testing.assert_allclose(model.predict_proba(texts, as_numpy=True),
                               reference.predict_proba(texts, as_numpy=True), atol=1e-6)


def test_the_temperature_is_fitted_on_the_labelled_texts_only(tiny_body_path: str, toy_data: dict,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """With a body that is not trained the temperature comes from heads refitted on folds of the labelled
    embeddings, once: a round's head keeps it (refitted on the pseudo-labels, the head's own confident guesses, it
    would sharpen the probabilities)."""
    import setfit_lite.trainer as trainer_module

    fitted_on: list[int] = []
    original = trainer_module.cv_temperature

    def spy(new_head, fit, embeddings, ids, *args, **kwargs):  # type: ignore[no-untyped-def]
        fitted_on.append(len(ids))
        return original(new_head, fit, embeddings, ids, *args, **kwargs)

    monkeypatch.setattr(trainer_module, "cv_temperature", spy)
    model, _ = _train(tiny_body_path, toy_data, POOL, body_learning_rate=0.0, calibration="temperature")
    assert sum(model.training_info["self_training"]["rounds"][0]["counts"].values()) > 0
    assert fitted_on == [len(toy_data["text"])]


def test_a_set_is_refused_as_the_pool(tiny_body_path: str, toy_data: dict) -> None:
    """A set's order changes from one Python process to the next, and the round's batches follow the pool's."""
    model = SetFitModel.from_pretrained(tiny_body_path)
    with pytest.raises(TypeError, match="unlabeled_dataset: got a set.*sorted"):
        Trainer(model, TrainingArguments(**FAST), train_dataset=toy_data, unlabeled_dataset=set(POOL))
