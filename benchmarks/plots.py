"""The plots of the benchmark pages, drawn from the recorded results (no benchmark is run).

    python -m benchmarks.plots                      # reads benchmarks/results/*.json, writes docs/benchmarks/img/*.png

- ``accuracy.png``: accuracy per task at 8 examples per class, setfit_lite against setfit 1.2
  (``accuracy_suite.json``), and accuracy against examples per class for the tasks measured at several
  (``accuracy_suite.json`` + ``accuracy_suite_64.json``).
- ``labelling.png``: accuracy against labels per class of each labelling contender, one panel per task
  (``labelling_curves.json``, when it exists).
- ``prediction_tiers.png``: throughput against accuracy of every prediction tier, setfit 1.2 and model2vec
  (``inference_default_threads_epyc.json``: AVX512-BF16 without AMX), one panel per task.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TASK_NAMES = {"sst2": "SST-2", "sst5": "SST-5", "emotion": "Emotion", "trec": "TREC", "subj": "SUBJ",
              "multilingual": "non-English tweets", "clinc150": "CLINC150",
              "multilingual+e5": "non-English tweets, multilingual-e5-small"}
COLOURS = {"setfit_lite": "tab:blue", "setfit": "tab:orange", "model2vec": "tab:green"}


def load(path: Path) -> dict:
    """One results file."""
    return json.loads(path.read_text(encoding="utf-8"))


def shots_table(*suites: dict) -> dict[str, dict[str, dict[int, float]]]:
    """``{task: {framework: {examples per class: mean accuracy}}}`` from accuracy-suite results (``task:shots``)."""
    table: dict[str, dict[str, dict[int, float]]] = {}
    for suite in suites:
        for spec, entry in suite["tasks"].items():
            task, shots = spec.split(":")
            for framework, summary in entry["summary"].items():
                if framework in ("setfit_lite", "setfit"):
                    table.setdefault(task, {}).setdefault(framework, {})[int(shots)] = summary["accuracy_mean"]
    return table


def plot_accuracy(suite: dict, suite_64: dict, out: Path) -> None:
    """Accuracy per task at 8 per class; accuracy against examples per class where several were measured."""
    table = shots_table(suite, suite_64)
    fig, (bars, curves) = plt.subplots(1, 2, figsize=(11, 4), gridspec_kw={"width_ratios": [3, 2]})
    tasks = [task for task in TASK_NAMES if 8 in table.get(task, {}).get("setfit", {})]
    for offset, framework in ((-0.2, "setfit_lite"), (0.2, "setfit")):
        xs = [i + offset for i in range(len(tasks))]
        bars.bar(xs, [100 * table[t][framework][8] for t in tasks], width=0.4, color=COLOURS[framework],
                 label="setfit 1.2" if framework == "setfit" else framework)
    bars.set_xticks(range(len(tasks)), [TASK_NAMES[t] for t in tasks])
    bars.set_ylabel("test accuracy (%)")
    bars.set_title("8 examples per class, seeds 0–4, MiniLM-L6")
    bars.legend()
    for task, style in (("sst5", "o"), ("emotion", "s")):
        for framework in ("setfit_lite", "setfit"):
            points = sorted(table.get(task, {}).get(framework, {}).items())
            if len(points) > 1:
                curves.plot([p[0] for p in points], [100 * p[1] for p in points], marker=style,
                            color=COLOURS[framework], linestyle="-" if framework == "setfit_lite" else "--",
                            label=f"{TASK_NAMES[task]}, {'setfit 1.2' if framework == 'setfit' else framework}")
    curves.set_xscale("log", base=2)
    curves.set_xticks([8, 64], ["8", "64"])
    curves.set_xlabel("examples per class")
    curves.set_ylabel("test accuracy (%)")
    curves.set_title("accuracy against examples per class")
    curves.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def plot_tiers(inference: dict, out: Path) -> None:
    """Texts per second (log scale) against test accuracy, one point per prediction path, one panel per task."""
    tasks = inference["tasks"]
    fig, axes = plt.subplots(1, len(tasks), figsize=(5.5 * len(tasks), 4.2), squeeze=False)
    for ax, entry in zip(axes[0], tasks):
        # points within a quarter point of accuracy and 3x of speed of a labelled one: one label, listing them
        clusters: list[tuple[float, float, list[str], str]] = []
        for name, row in sorted(entry["rows"].items(), key=lambda item: item[1]["per_s"]):
            colour, x, y = COLOURS.get(name, "tab:blue"), row["per_s"], 100 * row["accuracy"]
            ax.scatter(x, y, color=colour, s=36)
            label = "setfit 1.2" if name == "setfit" else name
            near = next((c for c in clusters if abs(c[1] - y) < 0.25 and x < 3 * c[0]), None)
            if near is not None:
                near[2].append(label)
            else:
                clusters.append((x, y, [label], colour))
        for i, (x, y, labels, colour) in enumerate(clusters):  # labels above and below in turn, left to right
            ax.annotate(", ".join(labels), (x, y), textcoords="offset points", xytext=(5, 5 if i % 2 == 0 else -11),
                        fontsize=7, color=colour if len(labels) == 1 else "black")
        ax.margins(x=0.15, y=0.12)
        ax.set_xscale("log")
        ax.set_xlabel("texts per second (default thread count, log scale)")
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(f"{entry['task']} ({entry['test_texts']} test texts)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


LABELLING_STYLES = {"random": ("tab:gray", ":"), "balanced": ("black", "--"), "suggest": ("tab:blue", "-"),
                    "suggest+pool": ("tab:green", "-"), "smalltext": ("tab:orange", "-.")}


def plot_labelling(results: dict, out: Path) -> None:
    """Mean test accuracy (over seeds) against labels per class, one line per contender, one panel per task (at
    most four panels a row)."""
    tasks = list(dict.fromkeys(r["task"] for r in results["rows"]))
    columns = min(4, len(tasks))
    rows = -(-len(tasks) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(5 * columns, 4 * rows), squeeze=False)
    for ax in axes.flat[len(tasks):]:
        ax.set_visible(False)
    for ax, task in zip(axes.flat, tasks):
        for contender, (colour, style) in LABELLING_STYLES.items():
            points: dict[float, list[float]] = {}
            for r in results["rows"]:
                if r["task"] == task and r["contender"] == contender:
                    points.setdefault(r["per_class"], []).append(100 * r["accuracy"])
            if points:
                xs = sorted(points)
                label = "small-text + setfit 1.2" if contender == "smalltext" else contender
                ax.plot(xs, [sum(points[x]) / len(points[x]) for x in xs], marker="o", color=colour,
                        linestyle=style, label=label)
        per_class = sorted({r["per_class"] for r in results["rows"] if r["task"] == task})
        ax.set_xscale("log", base=2)
        ax.set_xticks(per_class, [f"{x:g}" for x in per_class])
        ax.set_xlabel("labels per class (budget / classes)")
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(f"{TASK_NAMES.get(task, task)}, pool of {results.get('pools', {}).get(task, results['pool']):,}")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "results", help="results folder")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks" / "img", help="folder of the PNGs")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    plot_accuracy(load(args.results / "accuracy_suite.json"), load(args.results / "accuracy_suite_64.json"),
                  args.out / "accuracy.png")
    plot_tiers(load(args.results / "inference_default_threads_epyc.json"), args.out / "prediction_tiers.png")
    if (args.results / "labelling_curves.json").exists():
        plot_labelling(load(args.results / "labelling_curves.json"), args.out / "labelling.png")
    print("wrote", ", ".join(str(p.relative_to(args.out)) for p in sorted(args.out.glob("*.png"))))


if __name__ == "__main__":
    main()
