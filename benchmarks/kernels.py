"""Which GEMM kernels the exported tiers run on this CPU: onnxruntime's int8 graph (its profile: the share of each
op type; with ``--perf``: the instructions ``perf`` samples in onnxruntime's library, e.g. AVX512-VNNI
``vpdpbusds`` or AMX ``tdpbusd``) and OpenVINO's (the oneDNN / MLAS primitive of every FullyConnected and MatMul
of the runtime graph, under each ``INFERENCE_PRECISION_HINT``, and what ``inference_precision="auto"`` picks).

    python -m benchmarks.kernels [--perf] [--test-limit 300]

MiniLM-L6 (``--model``) with a logistic-regression head fitted on SST-2's 8-shot training texts (the kernels do not
depend on the weights), exported fp32, int8 (dynamic) and int8-static; predicted on ``--test-limit`` SST-2 test
texts, batch 32. Writes ``--out``.json and .md.
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.compare_setfit import load_task
from benchmarks.machine import cpu_line, write_result
from benchmarks.smoke import add_smoke_option, apply_smoke
from benchmarks.workdir import work_folder

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
#: instructions that name the kernel family they come from
ISA = {"vpdpbusd": "AVX512-VNNI / AVX-VNNI int8 dot product", "vpdpbusds": "AVX512-VNNI / AVX-VNNI int8 dot product",
       "tdpbusd": "AMX-INT8 tile product", "tdpbf16ps": "AMX-BF16 tile product", "vdpbf16ps": "AVX512-BF16 dot product",
       "vpmaddubsw": "AVX2 / AVX512-BW int8 multiply-add", "vfmadd231ps": "FMA fp32", "vfmadd132ps": "FMA fp32",
       "vfmadd213ps": "FMA fp32"}


def export(model_name: str, data_dir: Path, test_limit: int | None, work: Path) -> tuple[dict[str, Path], list]:
    from setfit_lite import SetFitModel

    task = load_task(data_dir, "sst2:8", 0, test_limit=test_limit)
    names = ["negative", "positive"]
    model = SetFitModel.from_pretrained(model_name, labels=names)
    head = model.new_head(2, multi_label=False)
    head.fit(model.encode(task["texts"]), model.label_ids([names[y] for y in task["labels"]]))
    model.model_head = head
    folders = {"fp32": model.export_onnx(work / "fp32"), "int8": model.export_onnx(work / "int8", quantize="int8"),
               "int8_static": model.export_onnx(work / "int8_static", quantize="int8-static",
                                                calibration_texts=task["texts"])}
    return folders, task["test_texts"]


def ort_profile(folder: Path, texts: list[str]) -> dict[str, float]:
    """Share of onnxruntime's kernel time per op type over one pass of ``texts`` (one thread)."""
    import onnxruntime as ort

    from setfit_lite.runtime.onnx import OnnxSetFitModel

    model = OnnxSetFitModel.load(folder, num_threads=1, runtime="onnxruntime")
    options = ort.SessionOptions()
    options.enable_profiling, options.profile_file_prefix = True, str(folder / "ort_profile")
    options.intra_op_num_threads = 1
    model.session = ort.InferenceSession(str(folder / model.config["model_file"]), options,
                                         providers=["CPUExecutionProvider"])
    model.class_proba(texts, batch_size=32)
    times: collections.Counter = collections.Counter()
    for event in json.loads(Path(model.session.end_profiling()).read_text()):
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            times[event["args"]["op_name"]] += event["dur"]
    total = sum(times.values())
    return {op: round(t / total, 4) for op, t in times.most_common()}


def openvino_primitives(folders: dict[str, Path], texts: list[str]) -> dict:
    """The primitive (``primitiveType``: oneDNN brgemm / jit / MLAS, with its ISA) of every FullyConnected and
    MatMul of OpenVINO's runtime graph, after a pass of ``texts``, per graph and precision hint."""
    from setfit_lite.runtime.onnx import OnnxSetFitModel

    out = {}
    for variant in ("fp32", "int8_static"):
        for precision in ("fp32", "bf16"):
            model = OnnxSetFitModel.load(folders[variant], runtime="openvino", inference_precision=precision)
            model.class_proba(texts, batch_size=32)
            counts: collections.Counter = collections.Counter()
            for op in model.session.compiled.get_runtime_model().get_ops():
                info = op.get_rt_info()
                if "layerType" in info and info["layerType"].astype(str) in ("FullyConnected", "MatMul"):
                    counts[f"{info['layerType'].astype(str)} {info['runtimePrecision'].astype(str)} "
                           f"{info['primitiveType'].astype(str)}"] += 1
            out[f"{variant} / {precision}"] = dict(counts)
    return out


def perf_instructions(folder: Path, seconds: float) -> dict:
    """``perf record`` of a child predicting with the int8 graph for ``seconds``: the share of onnxruntime's
    samples per instruction (each sampled address disassembled with ``objdump``)."""
    import onnxruntime

    lib = next((Path(onnxruntime.__file__).parent / "capi").glob("onnxruntime_pybind11_state*.so"))
    data = folder / "perf.data"
    subprocess.run(["perf", "record", "-e", "cpu-clock", "-F", "999", "-o", str(data), sys.executable, "-m",
                    "benchmarks.kernels", "--loop", str(folder), str(seconds)], check=True, cwd=ROOT,
                   capture_output=True)
    maps = subprocess.run(["perf", "script", "-i", str(data), "--show-mmap-events"], capture_output=True,
                          text=True).stdout
    base = next(int(line.split("[")[1].split("(")[0], 16) - int(line.split("@")[1].split()[0], 16)
                for line in maps.splitlines() if "PERF_RECORD_MMAP" in line and lib.name in line and " r-xp " in line)
    ips = collections.Counter()
    for line in subprocess.run(["perf", "script", "-i", str(data), "-F", "ip,dso"], capture_output=True,
                               text=True).stdout.splitlines():
        if lib.name in line:
            ips[int(line.split()[0], 16) - base] += 1
    total, mnemonics = sum(ips.values()), collections.Counter()
    for address, n in ips.most_common(400):
        dump = subprocess.run(["objdump", "-d", f"--start-address={address:#x}", f"--stop-address={address + 16:#x}",
                               str(lib)], capture_output=True, text=True).stdout
        lines = [line.split("\t") for line in dump.splitlines() if line.strip().endswith(":") is False and "\t" in line]
        if lines and len(lines[0]) > 2:
            mnemonics[lines[0][2].split()[0]] += n
    return {"samples_in_onnxruntime": total,
            "top": {m: round(n / total, 4) for m, n in mnemonics.most_common(12)},
            "families": {ISA[m]: round(n / total, 4) for m, n in mnemonics.items() if m in ISA}}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--model", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--test-limit", type=int, default=300)
    parser.add_argument("--perf", action="store_true", help="also sample onnxruntime's int8 instructions with perf")
    parser.add_argument("--perf-seconds", type=float, default=20.0)
    parser.add_argument("--loop", nargs=2, help=argparse.SUPPRESS)  # perf's child: FOLDER SECONDS
    parser.add_argument("--out", type=Path, default=HERE / "results" / "kernels")
    add_smoke_option(parser)
    args = parser.parse_args(argv)
    if args.loop:
        from setfit_lite.runtime.onnx import OnnxSetFitModel

        model = OnnxSetFitModel.load(args.loop[0], num_threads=1, runtime="onnxruntime")
        end = time.time() + float(args.loop[1])
        texts = json.loads((Path(args.loop[0]) / "texts.json").read_text())
        while time.time() < end:
            model.class_proba(texts, batch_size=32)
        return
    apply_smoke(args, parser, "kernels")
    from setfit_lite.runtime.onnx import resolve_inference_precision

    with work_folder("kernels_") as work:  # the exported graphs: removed at the end
        folders, texts = export(args.model, args.data_dir, args.test_limit, work)
        result = {"command": "python -m benchmarks.kernels " + " ".join(argv if argv is not None else sys.argv[1:]),
                  "texts": len(texts), "openvino_auto": resolve_inference_precision("auto", "openvino"),
                  "onnxruntime_int8_profile": ort_profile(folders["int8"], texts),
                  "openvino_primitives": openvino_primitives(folders, texts)}
        if args.perf:
            (folders["int8"] / "texts.json").write_text(json.dumps(texts))
            result["onnxruntime_int8_instructions"] = perf_instructions(folders["int8"], args.perf_seconds)
    md = [f"`{result['command']}`", "", f"{len(texts)} SST-2 test texts, batch 32.", "",
          "onnxruntime int8 (dynamic), share of kernel time by op: " + ", ".join(
              f"{op} {share:.1%}" for op, share in list(result["onnxruntime_int8_profile"].items())[:6]), "",
          "| OpenVINO graph / precision | FullyConnected and MatMul primitives |", "|---|---|"]
    md += [f"| {k} | {v} |" for k, v in result["openvino_primitives"].items()]
    md += ["", f"`inference_precision=\"auto\"` chooses {result['openvino_auto']} under OpenVINO here."]
    if "onnxruntime_int8_instructions" in result:
        ins = result["onnxruntime_int8_instructions"]
        md += ["", f"perf, onnxruntime int8, {ins['samples_in_onnxruntime']} samples in onnxruntime: top "
               f"instructions {ins['top']}; kernel families {ins['families']}"]
    write_result(args.out, result, "\n".join(md))
    print("\n".join(md))
    print(cpu_line(json.loads(args.out.with_suffix(".json").read_text())["cpu"]))


if __name__ == "__main__":
    main()
