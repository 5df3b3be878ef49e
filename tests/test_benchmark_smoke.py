"""The benchmarks' shared helpers (the CPU every result file records) and every ``python -m benchmarks.<module>``
command of the README's "Against setfit" table run as written in its ``--smoke`` mode (`benchmarks.smoke`: a tiny
body built in code, a few synthetic texts, two training steps, the peers skipped: that they run, not what they
measure)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from benchmarks.machine import cpu_class, cpu_info, shown_paths, write_result

ROOT = Path(__file__).resolve().parent.parent
EPYC = "processor\t: 0\nmodel name\t: AMD EPYC 9R14\nflags\t\t: fpu avx2 fma avx512f avx512bw avx512_vnni avx512_bf16\n"
SPR = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) 8488C\nflags\t\t: avx2 avx512f amx_bf16 amx_int8\n"


def test_cpu_info_names_the_cpu_and_its_class() -> None:
    epyc = cpu_info(EPYC)
    assert epyc["model_name"] == "AMD EPYC 9R14" and epyc["class"] == "AVX512-BF16, no AMX"
    assert epyc["flags"] == ["avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx512_bf16"]
    assert cpu_info(SPR)["class"] == "AMX (AMX-BF16/INT8)"
    assert cpu_class({"avx2"}) == "AVX2" and cpu_class({"avx512f"}) == "AVX-512, no BF16"


def test_write_result_records_the_cpu(tmp_path: Path) -> None:
    write_result(tmp_path / "r", {"command": "x", "rows": [1]}, "| a |")
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["rows"] == [1] and data["cpu"] == cpu_info()
    assert (tmp_path / "r.md").read_text().splitlines()[-1].startswith(f"CPU: {cpu_info()['model_name']} (")
    given = {"model_name": "elsewhere", "flags": [], "class": "AVX2", "cpus": 8}
    write_result(tmp_path / "s", {"cpu": given}, "t")  # a result measured elsewhere keeps its machine
    assert json.loads((tmp_path / "s.json").read_text())["cpu"] == given


def readme_commands() -> list[str]:
    """The commands of the README's "Against setfit" table (written there as ``<module>.py ...``, to be run as
    ``python -m benchmarks.<module> ...``; a trailing ``...`` stands for options left out)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text[text.index("## Against setfit"):].split("\n## ", 1)[0]
    found = re.findall(r"`([a-z_]+)\.py ?([^`]*)`", table)
    return sorted({f"python -m benchmarks.{module} {args.removesuffix('...').strip()}".strip()
                   for module, args in found})


def run_smoke(module: str, out: Path, **env: str) -> None:
    """``python -m benchmarks.<module> --smoke --out OUT`` from the repository root (``env``: more environment
    variables); it must exit 0."""
    done = subprocess.run([sys.executable, "-m", f"benchmarks.{module}", "--smoke", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **env})
    assert done.returncode == 0, done.stderr[-3000:]


def test_result_files_name_no_machine_path(tmp_path: Path) -> None:
    import site

    packages = site.getsitepackages()[0]
    body = f"{packages}/some_model/model"
    data = str(ROOT.parent / "shared" / "data" / "sst2")
    write_result(tmp_path / "r", {"model": body, "data": data, "out": str(ROOT / "benchmarks" / "results")},
                 f"`--model {body}`")
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["model"] == "VENV/site-packages/some_model/model"
    assert record["data"] == "../shared/data/sst2" and record["out"] == "./benchmarks/results"
    assert "VENV/site-packages/some_model" in (tmp_path / "r.md").read_text()
    assert shown_paths("no path here") == "no path here"
    assert shown_paths("--smalltext-python /opt/envs/small-text/bin/python3.11 --x") == \
        "--smalltext-python SMALL_TEXT_VENV/bin/python3.11 --x"
    assert shown_paths(f"--model {Path.home()}/.cache/m") == "--model ~/.cache/m"


def test_labelling_curves_validation_holds_training_rows_out_of_the_pool(tmp_path: Path) -> None:
    from benchmarks.labelling_curves import load_pool

    folder = tmp_path / "toy"
    folder.mkdir()
    rows = [{"text": f"text {i}", "label": i % 2, "label_text": ["no", "yes"][i % 2]} for i in range(60)]
    (folder / "train.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    (folder / "test.jsonl").write_text("\n".join(json.dumps(r) for r in rows[:5]))
    data = load_pool(tmp_path, "toy", 0, 100, 10, split="validation")
    assert len(data["test_texts"]) == 10 and not set(data["test_texts"]) & set(data["pool_texts"])
    assert len(data["pool_texts"]) == 50 and data["label_names"] == ["no", "yes"]
    test = load_pool(tmp_path, "toy", 0, 100, None)
    assert test["test_texts"] == [r["text"] for r in rows[:5]] and len(test["pool_texts"]) == 55


def test_labelling_curves_scores_one_labelled_class_as_that_class_everywhere() -> None:
    from benchmarks.labelling_curves import Lite

    data = {"pool_texts": ["a", "b", "c"], "pool_labels": [1, 1, 0], "test_texts": ["x", "y", "z", "w"],
            "test_labels": [1, 0, 1, 1], "label_names": ["no", "yes"]}
    lite = Lite(data, "unused", 0, {})
    row = lite.constant([0, 1])  # both labels "yes": no model trains on them
    assert row is not None and row["accuracy"] == 0.75 and row["one_class"]
    assert lite.constant([0, 2]) is None  # two classes: the model trains


def test_labelling_curves_goals_compare_the_seeds_both_sides_have() -> None:
    from benchmarks.labelling_curves import goals

    def row(task: str, contender: str, seed: int, per_class: int, accuracy: float) -> dict:
        return {"task": task, "contender": contender, "seed": seed, "budget": 2 * per_class, "accuracy": accuracy}

    rows = [row("a", "suggest", 0, 8, 0.70), row("a", "suggest", 1, 8, 0.50), row("a", "balanced", 0, 8, 0.60),
            row("a", "balanced", 1, 8, 0.60), row("a", "smalltext", 0, 8, 0.65), row("a", "balanced", 0, 16, 0.62),
            row("a", "suggest+pool", 0, 8, 0.68), row("a", "suggest+pool", 1, 8, 0.50),
            row("b", "suggest", 0, 8, 0.90), row("b", "balanced", 0, 8, 0.80)]
    text = goals(rows, {"a": 2, "b": 2})
    # suggest 60 (a, seeds 0-1) and 90 (b) against balanced 60 and 80: 75.0 against 70.0
    assert "balanced 8 per class: 75.0 against 70.0 (met; 2 tasks)" in text
    # small-text ran seed 0 only: suggest's seed 0 (70) is compared with it (65), not the two seeds' 60
    assert "small-text + setfit at 8 per class: 70.0 against 65.0 (met; 1 tasks)" in text
    assert "balanced 16 per class: 68.0 against 62.0 (met; 1 tasks)" in text  # seed 0 only at 16
    assert "worst -1.0 (a, 8 per class; met; 1 points)" in text
    assert goals([], {}) == ""


def test_pool_choice_compares_each_variant_with_no_pool_on_the_same_runs() -> None:
    from benchmarks.pool_choice import check_settings, merged, parse_variant, table

    assert parse_variant('forced={"self_training": true}') == ("forced", {"self_training": True})
    for bad in ("forced", '=({"a": 1})', "x=[1]", "x={nope"):
        with pytest.raises(ValueError, match="--variants"):
            parse_variant(bad)
    check_settings({}, {"ok": {"self_training": True}})
    with pytest.raises((TypeError, ValueError), match="--variants typo: .*pseudo_label_treshold"):
        check_settings({}, {"ok": {}, "typo": {"pseudo_label_treshold": 0.0}})
    with pytest.raises(ValueError, match="--variants bad: .*self_training_margin"):
        check_settings({}, {"bad": {"self_training_margin": 5.0}})

    def row(task: str, seed: int, variant: str, accuracy: float, used: bool | None = None) -> dict:
        extra = {} if used is None else {"settings": {"v": variant}, "self_training": {"used": used}}
        return {"task": task, "seed": seed, "variant": variant, "accuracy": accuracy} | extra

    rows = [row("a", 0, "none", 0.60), row("a", 0, "x", 0.64, True), row("a", 1, "none", 0.70),
            row("a", 1, "x", 0.68, False), row("b", 0, "none", 0.80), row("b", 0, "x", 0.83, True)]
    text = table({"commands": ["c"], "split": "validation", "per_class": 8, "rows": rows})
    assert "| a | 65.0 | 66.0 |" in text and "| b | 80.0 | 83.0 |" in text
    assert "| **mean** (tasks) | **72.5** (2) | **74.5** (2) |" in text
    assert "| gain over none (mean of runs) | +0.0 | +1.7 |" in text  # (+4 - 2 + 3) / 3
    assert "| worst run against none | +0.0 | -2.0 |" in text and "| pool used (runs) | – | 2 of 3 |" in text
    first = {"commands": ["c1"], "split": "validation", "per_class": 8, "pool": 3000, "machine": {}, "rows": rows}
    again = first | {"commands": ["c2"], "rows": [row("a", 0, "x", 0.70, True)]}
    result, page = merged([first, again])
    assert result["commands"] == ["c1", "c2"] and len(result["rows"]) == 6 and "| a | 65.0 | 69.0 |" in page
    with pytest.raises(ValueError, match="different splits or budgets"):
        merged([first, first | {"per_class": 4}])


def test_pool_choice_rules_read_the_model_each_decision_rule_keeps() -> None:
    from benchmarks.pool_choice import rules_table

    def runs(task: str, seed: int, none: float, forced: float, gain: float, proba: float,
             tested: bool = True) -> list[dict]:
        cv = {"folds": 3, "gain": gain, "held_out": 10, "proba_without": 0.5, "proba_with": 0.5 + proba,
              "pseudo_labels": [5 if tested else 0] * 3}
        kept = tested and gain >= 0
        return [{"task": task, "seed": seed, "variant": "none", "accuracy": none},
                {"task": task, "seed": seed, "variant": "forced", "accuracy": forced},
                {"task": task, "seed": seed, "variant": "default", "accuracy": forced if kept else none,
                 "self_training": {"cv": cv}}]

    rows = (runs("a", 0, 0.60, 0.64, 0.0, +0.02)      # tie, probability up: R0, R1, R2 keep (+4)
            + runs("a", 1, 0.70, 0.66, 0.0, -0.03)    # tie, probability down: R0 keeps (-4), R1 and R2 do not
            + runs("b", 0, 0.80, 0.83, -0.1, +0.01)   # accuracy down, probability up: R1 alone keeps (+3)
            + runs("b", 1, 0.80, 0.90, 0.1, +0.05, tested=False)  # untested: nobody keeps it
            + runs("b", 3, 0.50, 0.40, 0.1, -0.01))   # the fresh draw: R0 keeps (-10), R1 not, R2 keeps
    figures, page = rules_table(rows, {3})
    chosen, fresh = figures["chosen_on"], figures["fresh_draw"]
    assert chosen["R0"]["sum_gain"] == pytest.approx(0.0) and chosen["R1"]["sum_gain"] == pytest.approx(0.07)
    assert chosen["R2"]["sum_gain"] == pytest.approx(0.04) and chosen["oracle"]["sum_gain"] == pytest.approx(0.17)
    assert chosen["always"]["worst_run"] == pytest.approx(-0.04) and chosen["R0"]["worst_task_mean"] == 0.0
    assert fresh["R0"]["sum_gain"] == pytest.approx(-0.1) and fresh["R1"]["sum_gain"] == 0.0
    assert fresh["R2"]["sum_gain"] == pytest.approx(-0.1)
    # R3 and R4 ask for one and two more held-out texts right: the ties are dropped, one text of 10 keeps for R3
    assert chosen["R3"]["sum_gain"] == 0.0 and chosen["R4"]["sum_gain"] == 0.0
    assert fresh["R3"]["sum_gain"] == pytest.approx(-0.1) and fresh["R4"]["sum_gain"] == 0.0
    assert "| a | 1 | 70.0 | 66.0 | +0.000 | -0.030 | yes | 66.0 | 70.0 | 70.0 | 70.0 | 70.0 | 66.0 | 66.0 |" in page
    # R5 is R0 where every fold's model saw 2 texts of each class: recorded, or 3 folds for older runs
    assert chosen["R5"] == chosen["R0"] and fresh["R5"] == fresh["R0"]
    two_folds = [r | ({"self_training": {"cv": r["self_training"]["cv"] | {"folds": 2}}}
                      if r["variant"] == "default" else {}) for r in rows]
    assert rules_table(two_folds, {3})[0]["chosen_on"]["R5"]["sum_gain"] == 0.0
    recorded = [r | ({"self_training": {"cv": r["self_training"]["cv"] | {"folds": 2, "fold_min_train": 2}}}
                     if r["variant"] == "default" else {}) for r in rows]
    assert rules_table(recorded, {3})[0]["chosen_on"]["R5"] == chosen["R0"]
    # a margin is R0's and R5's alone: with a margin of 0.05 a tie no longer keeps for them, and still does for R2
    margined = [r | ({"self_training": {"cv": r["self_training"]["cv"] | {"margin": 0.05}}}
                     if r["variant"] == "default" else {}) for r in rows]
    strict = rules_table(margined, {3})[0]["runs"][0]  # a, seed 0: a tie, probability up
    assert strict["R0"] == strict["R5"] == 0.60 and strict["R2"] == 0.64
    # a run without the probability scores (recorded before them) is left out, not guessed
    old = [r | ({"self_training": {"cv": {"folds": 3, "gain": 0.0}}} if r["variant"] == "default" else {})
           for r in runs("c", 0, 0.5, 0.6, 0.0, 0.0)]
    assert [r["task"] for r in rules_table(rows + old, {3})[0]["runs"]] == ["a", "a", "b", "b", "b"]
    # a run that could not be cross-validated (no folds: the figures are None) counts, and no rule keeps its pool
    none = [r | ({"self_training": {"cv": {"folds": 0, "gain": None, "proba_with": None, "proba_without": None,
                                           "pseudo_labels": []}}} if r["variant"] == "default" else {})
            for r in runs("d", 0, 0.5, 0.6, 0.0, 0.0)]
    undecided = rules_table(rows + none, {3})[0]["runs"][-1]
    assert undecided["task"] == "d" and all(undecided[n] == 0.5 for n in ("R0", "R1", "R2", "R3", "R4", "R5"))
    # every run a fresh draw: no table of runs chosen on, the fresh draw's alone
    figures, page = rules_table(rows, {0, 1, 3})
    assert figures["chosen_on"] == {} and "runs the rule is chosen on" not in page and "fresh draw" in page


def test_absa_choice_ensembles_average_saved_polarities_and_name_a_missing_variant() -> None:
    from benchmarks.absa_choice import ensemble

    def saved(proba: list[list[float]], seconds: float) -> dict:
        return {"kind": "polarity", "labels": ["negative", "positive"], "candidate_proba": proba,
                "train_cpu_seconds": seconds}

    runs = {"polarity_a": saved([[0.9, 0.1], [0.2, 0.8]], 10.0), "polarity_b": saved([[0.3, 0.7], [0.4, 0.6]], 5.0),
            "aspect_m": {"kind": "aspect"}}
    made = ensemble(runs, "a+b")
    np.testing.assert_allclose(made["candidate_proba"], [[0.6, 0.4], [0.3, 0.7]])
    assert made["train_cpu_seconds"] == 15.0 and made["gold_accuracy"] is None
    with pytest.raises(ValueError, match="no polarity variant c in this run .it has a, b."):
        ensemble(runs, "a+c")


def test_absa_choice_smooths_a_sentences_polarities_towards_their_mean() -> None:
    from benchmarks.absa_choice import smoothed

    proba = np.array([[0.9, 0.1], [0.2, 0.8], [0.4, 0.6], [0.0, 1.0]])  # rows: the sentence's candidates
    assert smoothed(proba, [0, 1], [0, 1, 2, 3], None)[1].tolist() == [0.2, 0.8]
    kept = smoothed(proba, [0, 1], [0, 1, 2, 3], "kept:0.5")  # the mean of the kept rows 0 and 1: [0.55, 0.45]
    np.testing.assert_allclose([kept[0], kept[1]], [[0.725, 0.275], [0.375, 0.625]])
    np.testing.assert_allclose(smoothed(proba, [0], [0, 1, 2, 3], "kept:1.0")[0], [0.9, 0.1])  # one span: as it was
    np.testing.assert_allclose(smoothed(proba, [0], [0, 1, 2, 3], "cands:1.0")[0], [0.375, 0.625])
    with pytest.raises(ValueError, match="expected kept:W or cands:W"):
        smoothed(proba, [0], [0], "all:0.5")


def test_suggest_choice_writes_a_summary_only_where_told(tmp_path: Path) -> None:
    """Runs append JSON lines to a file of the user's; a summary is written only to an --out given (a run without
    it once wrote over another study's summary), and merging needs one."""
    from benchmarks.suggest_choice import main

    row = {"labels": 4, "accuracy": 0.5, "classes_labelled": 2, "suggest_seconds": 0.1}
    lines = tmp_path / "runs.jsonl"
    lines.write_text(json.dumps({"task": "sst2", "seed": 0, "loop": "random", "rows": [row], "seconds": 1.0}) + "\n")
    with pytest.raises(SystemExit):
        main(["--merge-lines", str(lines), "--seeds", "0"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.jsonl"]
    main(["--merge-lines", str(lines), "--seeds", "0", "--tasks", "sst2", "--out", str(tmp_path / "merged")])
    assert "| random | 0.500 |" in (tmp_path / "merged.md").read_text()


def test_the_readme_table_names_every_benchmark_it_states() -> None:
    modules = {shlex.split(c)[2] for c in readme_commands()}
    assert {"benchmarks.accuracy_suite", "benchmarks.zero_shot", "benchmarks.imbalanced", "benchmarks.inference",
            "benchmarks.long_documents", "benchmarks.many_classes", "benchmarks.calibration", "benchmarks.unlabeled",
            "benchmarks.labelling_curves", "benchmarks.precision", "benchmarks.absa"} <= modules


@pytest.mark.smoke
@pytest.mark.parametrize("command", readme_commands())
def test_readme_benchmark_command_runs_in_smoke_mode(command: str) -> None:
    argv = shlex.split(command)
    done = subprocess.run([sys.executable, *argv[1:], "--smoke"], cwd=ROOT, capture_output=True, text=True,
                          timeout=900, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Exception ignored" not in done.stderr, done.stderr[-3000:]
    if "--setfit-python" in argv:  # the peer is said to be skipped, not silently dropped
        assert "smoke: setfit 1.2 skipped" in done.stdout


def test_inference_merge_joins_runs_split_by_task_on_one_cpu() -> None:
    from benchmarks.inference import merge

    cpu = {"model_name": "AMD EPYC", "flags": ["avx512_bf16"], "class": "AVX512-BF16, no AMX", "cpus": 2}
    a = {"command": "a", "tasks": [{"task": "sst2:8"}], "cpu": cpu, "roofline_peaks": {"x": 1}}
    b = {"command": "b", "tasks": [{"task": "emotion:16"}], "cpu": cpu}
    merged = merge([a, b])
    assert merged["command"] == "a + b" and [t["task"] for t in merged["tasks"]] == ["sst2:8", "emotion:16"]
    assert merged["cpu"] == cpu and merged["runs"][0]["roofline_peaks"] == {"x": 1}
    with pytest.raises(ValueError, match="different CPUs"):
        merge([a, {**b, "cpu": {**cpu, "class": "AVX2"}}])
    with pytest.raises(ValueError, match="more than one"):
        merge([a, a])


@pytest.mark.smoke
def test_inference_runs_torch_in_fp32_beside_its_bf16_and_takes_it_as_reference(tmp_path: Path) -> None:
    # bf16 forced (emulated where the CPU lacks it: a warning, not an error): the torch tier runs in bf16 and the
    # same folder forced to fp32 is the row every accuracy and agreement is measured against
    out = tmp_path / "inference"
    run_smoke("inference", out, SETFIT_LITE_INFERENCE_PRECISION="bf16")
    task = json.loads(out.with_suffix(".json").read_text())["tasks"][0]
    assert task["reference"] == "torch_fp32"
    assert task["rows"]["torch"]["precision"] == "bf16" and task["rows"]["torch_fp32"]["precision"] == "fp32"
    assert task["rows"]["torch_fp32"]["agreement"] == 1.0
    # OpenVINO's rows say the precision its "auto" hint ran the graph in (bf16 here, as the environment pins)
    assert all(task["rows"][v]["precision"] == "bf16" for v in task["rows"] if v.startswith("openvino"))
    assert "| torch (bf16) |" in out.with_suffix(".md").read_text()


def test_precision_suite_summarizes_several_logs_the_last_one_winning(tmp_path: Path) -> None:
    from benchmarks.precision import main as precision_main

    def row(texts: int, agreement: float) -> dict:
        return {"test_texts": texts, "train_s": 1.0, "accuracy_fp32": 0.5, "accuracy_bf16": 0.5,
                "accuracy_diff_points": 0.0, "agreement": agreement, "max_abs_proba_diff": 0.001,
                "per_s_fp32": 1.0, "per_s_bf16": 2.0, "speed_bf16_vs_fp32": 2.0}

    first, second = tmp_path / "a.log", tmp_path / "b.log"
    first.write_text(json.dumps({"sst2": row(300, 0.9)}) + "\nnot a result\n" + json.dumps({"trec": row(500, 1.0)}))
    second.write_text(json.dumps({"sst2": row(1821, 0.99)}) + "\n")
    precision_main(["suite", "--summarize", str(first), str(second), "--out", str(tmp_path / "s")])
    tasks = json.loads((tmp_path / "s.json").read_text())["suite"]["tasks"]
    assert list(tasks) == ["sst2", "trec"] and tasks["sst2"]["test_texts"] == 1821
    page = (tmp_path / "s.md").read_text()
    assert "From the logs a.log, b.log." in page and "| sst2 | 1821 |" in page and "| trec | 500 |" in page


def test_absa_summary_keeps_training_cpu_seconds(tmp_path: Path) -> None:
    from benchmarks.absa import write_summary

    def line(framework: str, wall: float, cpu: float | None) -> str:
        row = {"domain": "restaurants", "framework": framework, "seed": 0, "span_f1": 0.5, "e2e_f1": 0.25,
               "train_seconds": wall, "peak_rss_mb": 100.0, "cpu": {"model_name": "x"}, "versions": {}}
        return json.dumps(row | ({"train_cpu_seconds": cpu} if cpu is not None else {}))

    log = tmp_path / "run.jsonl"
    log.write_text("\n".join([line("setfit_lite", 20.0, 12.5), line("setfit", 90.0, None), "| a table |"]) + "\n")
    write_summary([log], tmp_path / "absa")
    summary = json.loads((tmp_path / "absa.json").read_text())["summary"]["restaurants"]
    assert summary["setfit_lite"]["train_cpu_seconds"] == 12.5 and summary["setfit_lite"]["train_seconds"] == 20.0
    assert "train_cpu_seconds" not in summary["setfit"]  # a line without it (an older run): not invented
    table = (tmp_path / "absa.md").read_text()
    assert "training CPU s" in table and "| 20.0 | 12.5 |" in table and "| 90.0 | – |" in table


def test_absa_summary_states_the_goals_on_the_seeds_both_ran(tmp_path: Path) -> None:
    from benchmarks.absa import write_summary

    def line(framework: str, seed: int, e2e: float, cpu: float) -> str:
        return json.dumps({"domain": "laptops", "framework": framework, "seed": seed, "span_f1": 0.5, "e2e_f1": e2e,
                           "train_seconds": cpu, "train_cpu_seconds": cpu, "peak_rss_mb": 1.0})

    log = tmp_path / "run.jsonl"
    # seed 2 only for setfit_lite: not in the means; seeds 0-1: lite 0.40 and 0.30 against 0.36 and 0.32 (+1.0)
    log.write_text("\n".join([line("setfit_lite", 0, 0.40, 10.0), line("setfit_lite", 1, 0.30, 30.0),
                              line("setfit_lite", 2, 0.90, 1.0), line("setfit", 0, 0.36, 100.0),
                              line("setfit", 1, 0.32, 100.0)]) + "\n")
    write_summary([log], tmp_path / "absa")
    table = (tmp_path / "absa.md").read_text()
    assert ("- laptops, seeds 0, 1: end-to-end F1 35.0 against 34.0 (+1.0, goal +3: not met); aspect-span F1 50.0 "
            "against 50.0; training CPU s 5.0x less (goal 3x: met)") in table


def test_thread_scaling_counts_double_up_to_the_cpus() -> None:
    from benchmarks.thread_scaling import thread_counts

    assert thread_counts(1) == [1] and thread_counts(16) == [1, 2, 4, 8, 16] and thread_counts(6) == [1, 2, 4, 6]


@pytest.mark.smoke
def test_thread_scaling_runs_in_smoke_mode(tmp_path: Path) -> None:
    out = tmp_path / "scaling"
    run_smoke("thread_scaling", out)
    task = json.loads(out.with_suffix(".json").read_text())["tasks"][0]
    # every split of the same work gives the same probabilities (static: exactly; onnxruntime at one batch size)
    assert all(row["max_abs_diff"] == 0.0 for row in task["static"] if row["path"] == "static")
    first = task["onnx"][0]["batch_size"]
    assert all(row["max_abs_diff"] < 1e-5 for row in task["onnx"] if row["batch_size"] == first)


@pytest.mark.smoke
def test_pool_choice_runs_in_smoke_mode(tmp_path: Path) -> None:
    out = tmp_path / "pool_choice"
    run_smoke("pool_choice", out)
    rows = json.loads(out.with_suffix(".json").read_text())["rows"]
    # every run: the labels alone, then each variant on the same labels with the pool
    assert [r["variant"] for r in rows] == ["none", "forced"] * (len(rows) // 2) and rows
    assert all(r["self_training"]["decision"] == "always" for r in rows if r["variant"] == "forced")


def serving_page_commands() -> list[str]:
    """The benchmark commands of docs/serving.md (every bash block of its "## Benchmark" section), but the py-spy
    profile (it needs py-spy)."""
    text = (ROOT / "docs" / "serving.md").read_text(encoding="utf-8")
    section = text.split("\n## Benchmark", 1)[1].split("\n## ", 1)[0]
    blocks = [part.split("```", 1)[0] for part in section.split("```bash")[1:]]
    commands = [" ".join(line.split()) for block in blocks for line in block.replace("\\\n", " ").splitlines()]
    return [c for c in commands if c.startswith("python -m benchmarks.serving") and "--profile" not in c]


def test_the_serving_page_names_its_benchmark_commands() -> None:
    commands = serving_page_commands()
    assert len(commands) >= 3 and any("--soak" in c for c in commands), commands


@pytest.mark.smoke
@pytest.mark.parametrize("command", serving_page_commands())
def test_serving_page_command_runs_in_smoke_mode(command: str, tmp_path: Path) -> None:
    """Each command of the serving page as written, in its ``--smoke`` mode (tiny tiers, small cells): it runs, and
    every request of every cell (and of the soak) is answered, none lost or refused."""
    argv = [a for a in shlex.split(command)[1:] if a != "DATA_DIR"]
    argv = [*argv[:argv.index("--data-dir")], *argv[argv.index("--data-dir") + 1:]] if "--data-dir" in argv else argv
    out = tmp_path / "serving"
    argv = [*argv[:argv.index("--out")], "--out", str(out), *argv[argv.index("--out") + 2:]]
    done = subprocess.run([sys.executable, *argv, "--smoke"], cwd=ROOT, capture_output=True, text=True,
                          timeout=900, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(out.with_suffix(".json").read_text())
    rows = [row[key] for cells in results["tiers"].values() for row in cells.values() for key in ("batched", "naive")]
    rows += [results["soak"]] if "soak" in results else []
    assert rows and all(r["errors"] == 0 and r["lost"] == 0 for r in rows), rows


class _ScriptedReady:
    """A local HTTP server whose ``/ready`` answers, in turn, the (status, pid) pairs it is given (the last one
    again once they are used up), as the workers of a server behind one socket answer while they load."""

    def __init__(self, answers: list[tuple[int, int | None]]) -> None:
        import http.server
        import threading

        self.answers, self.asked = answers, 0
        script = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                status, pid = script.answers[min(script.asked, len(script.answers) - 1)]
                script.asked += 1
                body = json.dumps({"status": "ready", "pid": pid} if status == 200 else {"status": "loading"})
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body.encode())

            def log_message(self, *args: object) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_serving_benchmark_waits_until_every_worker_is_ready() -> None:
    """Measurements start only once each worker has answered /ready: one ready worker and another still loading
    (503) is not ready; a pid not of the server means another server holds the port; a server that never gets
    there is not ready either."""
    from benchmarks.serving import wait_until_ready

    script = _ScriptedReady([(503, None), (200, 11), (503, None), (200, 11), (200, 12)])
    try:
        assert wait_until_ready(script.port, lambda: True, lambda: {10, 11, 12}, workers=2)
        assert script.asked == 5  # not before the second worker answered
        script.answers, script.asked = [(200, 11)], 0
        assert not wait_until_ready(script.port, lambda: True, lambda: {10, 11, 12}, workers=2, timeout=1)
        assert script.asked > 2
        script.answers, script.asked = [(200, 99)], 0
        assert not wait_until_ready(script.port, lambda: True, lambda: {10, 11, 12}, workers=2)
        assert script.asked == 1
        script.answers, script.asked = [(200, 11)], 0
        assert wait_until_ready(script.port, lambda: True, lambda: {10, 11}, workers=1) and script.asked == 1
    finally:
        script.server.shutdown()


def test_serving_work_folder_of_another_body_is_refused(tmp_path: Path) -> None:
    from benchmarks.serving import build_tiers

    (tmp_path / "body.txt").write_text("some/other-body\n")
    with pytest.raises(SystemExit, match="some/other-body"):
        build_tiers(["static"], tmp_path, tmp_path, 16, body="sentence-transformers/all-MiniLM-L6-v2")
    assert (tmp_path / "body.txt").read_text() == "some/other-body\n"  # the record is left as it was


def test_work_folder_is_removed_when_its_block_ends_or_fails() -> None:
    from benchmarks.workdir import work_folder

    with work_folder("setfit_lite_test_") as folder:
        (folder / "model").mkdir()
        (folder / "model" / "weights.bin").write_bytes(b"x" * 10)
    assert not folder.exists()
    with pytest.raises(RuntimeError), work_folder("setfit_lite_test_") as failed:
        (failed / "half-written").write_text("x")
        raise RuntimeError("the benchmark failed")
    assert not failed.exists()


def test_process_folders_and_the_smoke_data_are_removed_when_the_process_exits() -> None:
    code = ("from benchmarks.workdir import process_folder\n"
            "from benchmarks.smoke import smoke_settings\n"
            "folder = process_folder('setfit_lite_test_')\n"
            "(folder / 'study.db').write_text('x')\n"
            "data = smoke_settings()['data_dir']\n"
            "assert folder.is_dir() and (data / 'sst2' / 'train.jsonl').is_file()\n"
            "print(folder); print(data)\n")
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert run.returncode == 0, run.stderr[-2000:]
    folders = [Path(line) for line in run.stdout.split("\n") if line.strip()][-2:]
    assert len(folders) == 2 and not any(f.exists() for f in folders), folders


def test_benchmarks_make_temporary_folders_only_through_workdir() -> None:
    # a bare mkdtemp is never removed: every temporary folder of a benchmark goes through benchmarks.workdir
    offenders = [f"{path.name}:{n}" for path in sorted((ROOT / "benchmarks").glob("*.py")) if path.name != "workdir.py"
                 for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if "mkdtemp(" in line]
    assert offenders == []


@pytest.mark.smoke
def test_openvino_streams_runs_in_smoke_mode(tmp_path: Path) -> None:
    pytest.importorskip("openvino")
    out = tmp_path / "streams"
    run_smoke("openvino_streams", out)
    row = json.loads(out.with_suffix(".json").read_text())["rows"][0]
    # the same graph both ways: one stream, and a stream (of one thread) per CPU; the same labels
    assert row["streams"]["one_stream"] == 1 and row["streams"]["stream_per_cpu"] == row["threads"]["stream_per_cpu"]
    assert row["agreement"] == 1.0 and set(row["texts_per_s"]) == {"one_stream", "stream_per_cpu"}


def test_inference_students_are_distilled_with_the_target_and_epochs_asked_for(
        tier_models: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import setfit_lite
    from benchmarks.inference import distil_student, main
    from benchmarks.smoke import make_sentences

    seen: list[tuple[str, tuple[int, int]]] = []
    real = setfit_lite.DistillationTrainer

    class Recording(real):
        def train(self, *args, **kwargs):
            seen.append((self.target, self.args.num_epochs))
            return super().train(*args, **kwargs)

    monkeypatch.setattr(setfit_lite, "DistillationTrainer", Recording)
    texts = make_sentences(12, seed=0)[0]  # the teacher's training texts: both labels among its predictions
    int8, fp32 = distil_student(tier_models["torch"], 1, "first", texts, tmp_path / "int8", None,
                                target="embeddings", epochs=2)
    assert seen == [("embeddings", (2, 16))] and (int8 / "model.onnx").exists() and fp32 is None
    distil_student(tier_models["torch"], 1, "first", texts, tmp_path / "int8b")
    assert seen[-1] == ("similarities", (1, 16))  # the defaults: setfit's distillation, one epoch
    with pytest.raises(SystemExit):
        main(["--student", "2", "--student-epochs", "0", "--out", str(tmp_path / "x")])
