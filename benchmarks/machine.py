"""The machine a benchmark ran on.

`cpu_info` is what every result file records as ``"cpu"``: the CPU's model name, the flags that decide
which kernels run (AVX2, AVX-512, VNNI, BF16, AMX) and the class the prediction-tier pages state figures by.
The smoke mode's settings are in `benchmarks.smoke`.

Example:
    >>> info = cpu_info()
    >>> sorted(info) == ["class", "cpus", "flags", "model_name"]
    True
"""

from __future__ import annotations

import json
import os
import platform
import re
import site
import sys
from pathlib import Path

from trainers.cpu import CPUINFO_PATH, parse_cpuinfo_flags

#: the flags that decide the GEMM kernels of torch, onnxruntime and OpenVINO, in the order a result lists them
FLAGS_OF_INTEREST = ("avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "avx_vnni", "avx512_bf16", "avx512_fp16",
                     "amx_tile", "amx_bf16", "amx_int8")


def cpu_class(flags: frozenset[str] | set[str]) -> str:
    """The class of CPU a figure belongs to: AMX, AVX512-BF16 without AMX, AVX-512, AVX2, or other."""
    if "amx_bf16" in flags:
        return "AMX (AMX-BF16/INT8)"
    if "avx512_bf16" in flags:
        return "AVX512-BF16, no AMX"
    if "avx512f" in flags:
        return "AVX-512, no BF16"
    return "AVX2" if "avx2" in flags else "other"


def cpu_info(cpuinfo: str | None = None) -> dict:
    """The CPU of this machine: ``model_name``, ``flags`` (those of `FLAGS_OF_INTEREST` it has), ``class``
    (`cpu_class`) and ``cpus`` (the CPUs this process may use).

    Args:
        cpuinfo: ``/proc/cpuinfo`` text to read instead of the file (tests).

    Returns:
        A JSON-ready dict.
    """
    if cpuinfo is None:
        try:
            cpuinfo = CPUINFO_PATH.read_text(errors="replace")
        except OSError:
            cpuinfo = ""
    flags = parse_cpuinfo_flags(cpuinfo)
    name = next((line.partition(":")[2].strip() for line in cpuinfo.splitlines()
                 if line.lower().startswith("model name")), "") or platform.processor() or platform.machine()
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"model_name": name, "flags": [f for f in FLAGS_OF_INTEREST if f in flags], "class": cpu_class(flags),
            "cpus": cpus}


def cpu_line(info: dict) -> str:
    """One line for a result page: ``CPU: name (class; flags), N CPUs``."""
    return f"CPU: {info['model_name']} ({info['class']}; {' '.join(info['flags']) or 'none'}), {info['cpus']} CPUs"


def shown_paths(text: str) -> str:
    """``text`` with this machine's folders written as a reader's: the repository as ``.``, its sibling data
    folder as ``../shared``, this environment's packages as ``VENV/site-packages``, the home folder (a model
    cache) as ``~``, another environment's python
    (a peer's, ``/any/where/smalltext/bin/python``) as ``SMALLTEXT_VENV/bin/python`` (a result file names no
    machine path)."""
    root = Path(__file__).resolve().parent.parent
    places = [(p, "VENV/site-packages") for p in site.getsitepackages() if p]
    shared = root.parent / "shared"
    places += [(str(shared), "../shared"), (str(shared.resolve()), "../shared"), (str(root), "."),
               (sys.prefix, "VENV"), (f"{Path.home()}/", "~/")]
    for path, shown in sorted(places, key=lambda place: -len(place[0])):
        text = text.replace(path, shown)
    return re.sub(r"(?<![\w.~])/[^\s\"'`]*?/([^/\s\"'`]+)/bin/(python[0-9.]*)",
                  lambda m: f"{re.sub(r'[^A-Za-z0-9]', '_', m[1]).upper()}_VENV/bin/{m[2]}", text)


def write_result(out: Path, data: dict, markdown: str) -> None:
    """Write a benchmark's ``out``.json (``data`` with ``"cpu"``: `cpu_info` of this machine, unless ``data``
    already records the machine it was measured on) and ``out``.md (``markdown`` and the CPU line), machine
    paths written as `shown_paths` writes them: the one writer of every script's results.

    Args:
        out: the path without suffix (``--out``).
        data: the JSON-ready results.
        markdown: the page text.
    """
    record = {**data, "cpu": data.get("cpu") or cpu_info()}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(shown_paths(json.dumps(record, indent=1)) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(shown_paths(markdown.rstrip("\n")) + f"\n\n{cpu_line(record['cpu'])}\n",
                                      encoding="utf-8")
