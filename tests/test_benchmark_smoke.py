"""The benchmarks' shared helpers (the CPU every result file records) and the README's benchmark commands run as
written in their ``--smoke`` mode (a few shipped texts, two training steps: that they run, not what they measure).

The smoke runs train and export MiniLM, so they take minutes of CPU: they run with ``SETFIT_LITE_BENCH_SMOKE=1``."""

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


def readme_commands(module: str) -> list[str]:
    """The README's ``python -m benchmarks.<module>`` commands (its table writes them as ``<module>.py ...``)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return sorted({f"python -m benchmarks.{module} {m}" for m in re.findall(rf"`{module}\.py ([^`]*)`", text)})


@pytest.mark.smoke
@pytest.mark.skipif(os.environ.get("SETFIT_LITE_BENCH_SMOKE") != "1", reason="set SETFIT_LITE_BENCH_SMOKE=1")
@pytest.mark.parametrize("command", readme_commands("inference"))
def test_readme_benchmark_command_runs_in_smoke_mode(command: str) -> None:
    argv = shlex.split(command)
    done = subprocess.run([sys.executable, *argv[1:], "--smoke"], cwd=ROOT, capture_output=True, text=True,
                          timeout=3600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Exception ignored" not in done.stderr, done.stderr[-3000:]
    assert "CPU: " in done.stdout or "static" in done.stdout


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
