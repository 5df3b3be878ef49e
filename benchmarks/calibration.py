"""Calibration: expected calibration error (ECE, 15 bins) and Brier score on the six suite tasks, setfit_lite against
setfit 1.2, same samples, seeds and body, one run.

    python -m benchmarks.calibration --seeds 0 1 2 3 4 --setfit-python SETFIT_VENV/bin/python

Runs go through ``compare_setfit.py`` with ``--proba`` (its workers return the test probabilities, scored by
``setfit_lite.metrics``), over the tasks of ``accuracy_suite.py``; setfit_lite runs with its defaults and, as the
variant ``setfit_lite[temperature]``, with ``calibration="temperature"`` (cross-fitted: each fold scored by a
model trained without it). The table gives accuracy, ECE and Brier score per task and configuration (means over
seeds) and the ECE as a fraction of setfit's. Other options (``--model``, ``--test-limit``, ``--lite-args``, ...)
are ``compare_setfit.py``'s.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from benchmarks import accuracy_suite, compare_setfit
from benchmarks.smoke import add_smoke_option, apply_smoke

HERE = Path(__file__).resolve().parent

VARIANTS = {"temperature": {"calibration": "temperature"}}


def calibration_table(results: dict) -> str:
    """Markdown: accuracy, ECE and Brier score (means over seeds) per task and configuration, ECE against setfit's."""
    lines = ["| task | configuration | accuracy | ECE | Brier | ECE / setfit's | seeds |",
             "|---|---|---|---|---|---|---|"]
    for spec, entry in results["tasks"].items():
        means = {fw: {key: statistics.fmean(run[key] for run in runs)
                      for key in ("accuracy", "expected_calibration_error", "brier_score")}
                 for fw, runs in entry["runs"].items() if runs}
        reference = means.get("setfit", {}).get("expected_calibration_error")
        for fw, m in means.items():
            ratio = f"{m['expected_calibration_error'] / reference:.2f}" if reference else "–"
            lines.append(f"| {spec} | {fw} | {100 * m['accuracy']:.1f} | {m['expected_calibration_error']:.3f} | "
                         f"{m['brier_score']:.3f} | {ratio} | {len(entry['runs'][fw])} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shots", type=int, default=8)
    parser.add_argument("--tasks", nargs="+", default=list(accuracy_suite.TASKS), choices=accuracy_suite.TASKS)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "calibration")
    add_smoke_option(parser)
    ns, rest = parser.parse_known_args(argv)
    apply_smoke(ns, parser, "calibration")
    rest += ["--smoke"] if ns.smoke else []
    variants = [f"{name}={json.dumps(args)}" for name, args in VARIANTS.items()]
    compare_setfit.main([*rest, "--proba", "--tasks", *(f"{name}:{ns.shots}" for name in ns.tasks),
                         *(arg for v in variants for arg in ("--variant", v)), "--out", str(ns.out)])
    table = calibration_table(json.loads(ns.out.with_suffix(".json").read_text()))
    ns.out.with_suffix(".md").write_text(ns.out.with_suffix(".md").read_text() + "\n" + table)
    print(table)


if __name__ == "__main__":
    main()
