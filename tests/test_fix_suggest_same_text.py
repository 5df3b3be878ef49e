"""``suggest_labels`` suggests a text once: its picks are distinct by `text_key` (the one rule for "the same text":
case, Unicode form, spacing and invisible characters aside), and a copy of a text whose index is in ``exclude``
is not suggested while the pool holds enough other texts; only then do copies make up the rest."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_sentences

from setfit_lite import suggest_labels
from setfit_lite.data.checks import text_key

STRATEGIES = ["auto", "uncertainty", "margin_diverse", "margin_typical", "typical", "class_typical", "mixed",
              "cold_start_kmeans", "random"]


def _keys(pool: list[str], picks: list[int]) -> list[str]:
    return [text_key(pool[i]) for i in picks]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_one_text_in_other_case_spacing_or_with_a_zero_width_space_is_suggested_once(
        tier_models: dict, strategy: str) -> None:
    model = tier_models["torch"]
    texts, _ = make_sentences(12, seed=0)
    margin = np.abs(np.diff(model.predict_proba(texts, as_numpy=True), axis=1))[:, 0]
    top = texts[int(np.argmin(margin))]  # the most uncertain text: every copy of it is as uncertain
    for copies in ([top, top.upper(), top + " ", " " + top.title()],  # one text_key before invisible characters
                   [top, top + "\u200b", "\ufeff" + top, top.replace(" ", " \u00ad", 1)]):
        assert len({text_key(t) for t in copies}) == 1
        pool = [t for t in texts if t != top] + copies
        for k in (2, 4):
            picks = suggest_labels(model, pool, k, strategy=strategy, seed=1)
            assert len(set(picks)) == k and len(set(_keys(pool, picks))) == k, (k, picks)
            assert suggest_labels(model, pool, k, strategy=strategy, seed=1) == picks  # deterministic


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_copy_of_an_excluded_text_is_not_suggested_in_the_next_round(tier_models: dict, strategy: str) -> None:
    model = tier_models["torch"]
    texts, _ = make_sentences(10, seed=0)
    pool = texts + ["bad good film", "Bad good film ", "bad\ufeff good film"]
    first = [len(texts)]  # one copy labelled in an earlier round
    for k in (3, 6, 9):
        picks = suggest_labels(model, pool, k, exclude=first, strategy=strategy, seed=2)
        assert not set(first) & set(picks)
        assert text_key("bad good film") not in _keys(pool, picks), (k, picks)
        assert len(set(_keys(pool, picks))) == k
        assert suggest_labels(model, pool, k, exclude=first, strategy=strategy, seed=2) == picks


def test_round_two_of_exact_copies_suggests_none_of_round_one(tier_models: dict) -> None:
    model = tier_models["torch"]
    texts, _ = make_sentences(10, seed=0)
    pool = texts + ["bad good film"] * 3
    first = suggest_labels(model, pool, 3)
    second = suggest_labels(model, pool, 3, exclude=first)
    assert not {text_key(pool[i]) for i in first} & {text_key(pool[i]) for i in second}, (first, second)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_copies_make_up_the_rest_once_every_new_text_is_picked(tier_models: dict, strategy: str) -> None:
    model = tier_models["torch"]
    texts, _ = make_sentences(2, seed=0)  # 4 texts
    pool = texts + [texts[0].upper(), texts[1] + " ", texts[0] + "\u200b"]
    picks = suggest_labels(model, pool, 5, exclude=[0], strategy=strategy)  # 3 new texts left of 6 rows
    assert len(set(picks)) == 5 and 0 not in picks
    assert set(_keys(pool, picks[:3])) == {text_key(t) for t in texts[1:]}  # the new texts first, once each
    assert suggest_labels(model, pool, 5, exclude=[0], strategy=strategy) == picks
