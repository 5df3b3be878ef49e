"""The machine a benchmark ran on, and the settings of the benchmarks' smoke mode.

`cpu_info` is what every result file records as ``"cpu"``: the CPU's model name, the flags that decide
which kernels run (AVX2, AVX-512, VNNI, BF16, AMX) and the class the prediction-tier pages state figures by.
`smoke_settings` is what ``--smoke`` runs on: the offline MiniLM, a data folder of a few shipped SST-2
sentences under every task name, two training steps; it checks that a command runs, not what it measures.

Example:
    >>> info = cpu_info()
    >>> sorted(info) == ["class", "cpus", "flags", "model_name"]
    True
"""

from __future__ import annotations

import functools
import json
import os
import platform
import tempfile
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


@functools.cache
def smoke_settings() -> dict:
    """What ``--smoke`` runs on: ``model`` (the offline MiniLM), ``data_dir`` (a folder written here with 24
    shipped SST-2 sentences per split under every task name), ``test_limit``, ``train_args`` (two steps) and
    ``out_dir`` (a temporary folder for the results)."""
    from importlib import resources

    from setfit_lite.data.samples import SAMPLES

    root = Path(tempfile.mkdtemp(prefix="setfit_lite_smoke_"))
    sample = resources.files("setfit_lite").joinpath("resources", SAMPLES["sst2"]).read_text(encoding="utf-8")
    rows = [json.loads(line) for line in sample.splitlines() if line.strip()]
    by_label = {label: [r for r in rows if r["label"] == label] for label in (0, 1)}
    mixed = [r for pair in zip(by_label[0], by_label[1]) for r in pair]
    splits = {"train": mixed[:24], "validation": mixed[24:36], "test": mixed[36:48]}
    for task in ("sst2", "sst5", "emotion", "trec", "subj", "tweet_sentiment_multilingual"):
        (root / task).mkdir()
        for split, part in splits.items():
            lines = [json.dumps({**r, "label_text": ("negative", "positive")[r["label"]], "lang": "en"})
                     for r in part]
            if task == "tweet_sentiment_multilingual":  # scored on the languages other than English
                lines += [json.dumps({**r, "label_text": ("negative", "positive")[r["label"]], "lang": "de"})
                          for r in part]
            (root / task / f"{split}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"model": "sentence-transformers/all-MiniLM-L6-v2", "data_dir": root, "test_limit": 12,
            "train_args": {"max_steps": 2}, "out_dir": root / "results"}


def write_result(out: Path, data: dict, markdown: str) -> None:
    """Write a benchmark's ``out``.json (``data`` with ``"cpu"``: `cpu_info` of this machine, unless ``data``
    already records the machine it was measured on) and ``out``.md (``markdown`` and the CPU line): the one writer
    of every script's results.

    Args:
        out: the path without suffix (``--out``).
        data: the JSON-ready results.
        markdown: the page text.
    """
    record = {**data, "cpu": data.get("cpu") or cpu_info()}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown.rstrip("\n") + f"\n\n{cpu_line(record['cpu'])}\n", encoding="utf-8")
