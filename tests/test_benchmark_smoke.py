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

import pytest

from benchmarks.machine import cpu_class, cpu_info, write_result

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
