"""The accuracy suite: setfit_lite against setfit 1.2 on six kinds of task, same samples, seeds and body, one run.

    python -m benchmarks.accuracy_suite --seeds 0 1 2 3 4 --setfit-python /path/to/venv-with-setfit/bin/python

Tasks (``--shots`` examples per class, drawn with setfit's ``sample_dataset``): SST-2, SST-5, Emotion, TREC (6
coarse classes), SUBJ, and the multilingual tweets (task ``multilingual``: trained on English, scored on the 7
other languages; with the default English body, MiniLM-L6, the table names it so: a multilingual body is
``benchmarks/multilingual.py``'s). Each
framework runs with its defaults; setfit_lite is given the datasets' label names (``label_text``) as a user who
has them would (``SetFitModel.from_pretrained(..., labels=names)``; setfit ignores label names in training).
Every run goes through ``compare_setfit.py`` (its workers, alternation and JSON lines); this script adds the
suite table: accuracy per task, the gain in points, and the mean over the suite. Other options (``--model``,
``--lite-args``, ``--setfit-args``, ``--variant``, ``--test-limit``, ``--no-label-names``) are
``compare_setfit.py``'s.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from benchmarks import compare_setfit
from benchmarks.machine import write_result
from benchmarks.smoke import add_smoke_option, apply_smoke

HERE = Path(__file__).resolve().parent

TASKS = ("sst2", "sst5", "emotion", "trec", "subj", "multilingual")
# the table's name of a task whose key says less than the run measures
ROW_NAMES = {"multilingual": "tweets, 7 non-English languages, English-trained"}


def suite_table(results: dict) -> str:
    """Markdown: accuracy per task and configuration, the gain over setfit, and the suite's mean."""
    summaries = {spec: entry["summary"] for spec, entry in results["tasks"].items()}
    configs = list(dict.fromkeys(fw for per in summaries.values() for fw in per))
    head = "| task | " + " | ".join(configs) + (" | gain (points) |" if "setfit" in configs else " |")
    lines = [head, "|---" * (len(configs) + 1 + ("setfit" in configs)) + "|"]
    means: dict[str, list[float]] = {fw: [] for fw in configs}
    gains: list[float] = []
    for spec, per in summaries.items():
        cells = []
        for fw in configs:
            s = per.get(fw)
            cells.append(f"{100 * s['accuracy_mean']:.1f} ± {100 * s['accuracy_sd']:.1f}" if s else "–")
            if s:
                means[fw].append(100 * s["accuracy_mean"])
        task = spec.partition(":")[0]
        name = f"{spec} ({ROW_NAMES[task]}, body {results.get('model', '?')})" if task in ROW_NAMES else spec
        row = f"| {name} | " + " | ".join(cells)
        if "setfit" in per and "setfit_lite" in per:
            gains.append(100 * (per["setfit_lite"]["accuracy_mean"] - per["setfit"]["accuracy_mean"]))
            row += f" | {gains[-1]:+.1f}"
        lines.append(row + " |")
    complete = all(len(v) == len(summaries) for v in means.values())
    if complete and summaries:
        row = "| **mean** | " + " | ".join(f"**{statistics.fmean(v):.1f}**" for v in means.values())
        lines.append(row + (f" | **{statistics.fmean(gains):+.1f}** |" if gains else " |"))
    seconds = {fw: statistics.fmean(per[fw]["train_seconds_median"] for per in summaries.values() if fw in per)
               for fw in configs}
    lines.append("")
    lines.append("Mean over tasks of the median train() seconds: "
                 + ", ".join(f"{fw} {sec:.1f} s" for fw, sec in seconds.items()))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shots", type=int, default=8)
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "accuracy_suite")
    parser.add_argument("--merge", type=Path, nargs="+", default=None,
                        help="only build the suite table from these results (runs split over processes)")
    add_smoke_option(parser)
    ns, rest = parser.parse_known_args(argv)
    apply_smoke(ns, parser, "accuracy_suite")
    rest += ["--smoke"] if ns.smoke else []
    if ns.merge:
        parts = [json.loads(path.read_text()) for path in ns.merge]
        results = parts[0] | {"command": " + ".join(part["command"] for part in parts),
                              "tasks": {k: v for part in parts for k, v in part["tasks"].items()}}
    else:
        specs = [f"{name}:{ns.shots}" for name in ns.tasks]
        compare_setfit.main([*rest, "--tasks", *specs, "--out", str(ns.out)])
        results = json.loads(ns.out.with_suffix(".json").read_text())
    table = suite_table(results)
    detail = compare_setfit.markdown(results)
    write_result(ns.out, results, f"`{results['command']}`\n\n{table}\n{detail}")
    print(table)


if __name__ == "__main__":
    main()
