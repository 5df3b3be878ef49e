#!/usr/bin/env bash
# The cuda backend on a real GPU: install, run the CUDA-marked tests, then benchmark setfit_lite in fp32, fp16 and
# bf16 (and setfit 1.2 on the same GPU, when it installs) on SST-2 and Emotion at 8 and 16 examples per class.
#
#   scripts/gpu_check.sh [--out DIR] [--data DIR] [--seeds "0 1 2"] [--python PY] [--setfit-python PY]
#                        [--skip-setfit] [--cpu-smoke]
#
#   --out DIR            results folder (default: $OUT if set, else benchmarks/results/gpu_check_<UTC time>):
#                        environment.json, cuda_tests.{log,xml}, compare_setfit_gpu.{json,md,log}, summary.md
#   --data DIR           folder with sst2/ and emotion/ ({train,test}.jsonl); default: ../shared/data, else shared/data
#   --seeds "S ..."      seeds per task (default "0 1 2")
#   --python PY          an interpreter whose environment already has a CUDA torch and `-e .[dev]` (skips installing);
#                        default: .venv-gpu, created with torch 2.13.0 from PyPI (its Linux wheel is the CUDA build)
#   --setfit-python PY   an interpreter with setfit installed; default: .venv-gpu-setfit, created with setfit 1.2.0
#                        (skipped with a note when it does not install, e.g. without network)
#   --skip-setfit        benchmark setfit_lite's precisions only
#   --cpu-smoke          no GPU needed: checks this script end to end on the CPU in a minute or two (this repository's
#                        .venv, 1 seed, SST-2 at 8 per class, 2 training steps, 40 test sentences; the CUDA tests are
#                        collected and skipped); the figures mean nothing
#
# Exit status: 0 when everything ran and the CUDA tests passed; 3 without a GPU (and no --cpu-smoke); 4 when torch
# does not install or cannot use the GPU; 5 without the data; 1 when a test or the benchmark failed (results so far stay in --out).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

out="${OUT:-}"
data=""
seeds="0 1 2"
python=""
setfit_python=""
setfit=1
smoke=0
while [ $# -gt 0 ]; do
    case "$1" in
        --out) out="$2"; shift 2 ;;
        --data) data="$2"; shift 2 ;;
        --seeds) seeds="$2"; shift 2 ;;
        --python) python="$2"; shift 2 ;;
        --setfit-python) setfit_python="$2"; shift 2 ;;
        --skip-setfit) setfit=0; shift ;;
        --cpu-smoke) smoke=1; shift ;;
        -h | --help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "gpu_check: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done

say() { echo "gpu_check: $*" >&2; }
[ -n "$out" ] || out="$root/benchmarks/results/gpu_check_$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"

# ------------------------------------------------------------------------------------------------ a GPU?
if [ "$smoke" = 0 ]; then
    if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
        say "no NVIDIA GPU on this machine (nvidia-smi is missing or lists no GPU), so there is nothing to check."
        say "Run this script on a CUDA machine, or add --cpu-smoke to check the script itself on the CPU."
        exit 3
    fi
    nvidia-smi -L >&2
fi

# ------------------------------------------------------------------------------------------------ environment
make_venv() {  # make_venv DIR PACKAGES...: a virtual environment with torch 2.13.0 installed first, then PACKAGES
    local dir="$1"; shift
    { [ -x "$dir/bin/python" ] || python3 -m venv "$dir"; } &&
        "$dir/bin/python" -m pip install -q --upgrade pip &&
        "$dir/bin/python" -m pip install -q "torch==2.13.0" &&
        "$dir/bin/python" -m pip install -q "$@"
}
if [ -z "$python" ]; then
    if [ "$smoke" = 1 ]; then
        [ -x "$root/.venv/bin/python" ] || "$root/scripts/setup.sh"
        python="$root/.venv/bin/python"
    else
        say "installing torch 2.13.0 (CUDA build from PyPI) and setfit_lite[dev] into .venv-gpu"
        make_venv "$root/.venv-gpu" -e "${root}[dev]" || { say "installing failed (no network? pass --python)"; exit 4; }
        python="$root/.venv-gpu/bin/python"
    fi
fi
if [ "$smoke" = 0 ] && ! "$python" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    say "torch in $python cannot use the GPU (torch.cuda.is_available() is False): a CPU-only wheel, or a driver"
    say "older than the wheel's CUDA; see: $python -c 'import torch; print(torch.__version__, torch.version.cuda)'"
    exit 4
fi
"$python" - "$out/environment.json" "$smoke" <<'EOF'
import json, platform, subprocess, sys
import torch
gpus = [{"name": torch.cuda.get_device_name(i), "capability": list(torch.cuda.get_device_capability(i)),
         "memory_gib": round(torch.cuda.get_device_properties(i).total_memory / 2**30, 1)}
        for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []
commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
env = {"cpu_smoke": sys.argv[2] == "1", "torch": torch.__version__, "cuda": torch.version.cuda, "gpus": gpus,
       "bf16_supported": bool(gpus) and torch.cuda.is_bf16_supported(), "python": platform.python_version(),
       "machine": platform.platform(), "commit": commit}
open(sys.argv[1], "w").write(json.dumps(env, indent=1) + "\n")
print(json.dumps(env), file=sys.stderr)
EOF

status=0
# ------------------------------------------------------------------------------------------------ CUDA tests
say "running the CUDA-marked tests (pytest -m cuda)"
if ! "$python" -m pytest -q -p no:cacheprovider -n0 -m cuda -rs --junitxml "$out/cuda_tests.xml" tests \
        2>&1 | tee "$out/cuda_tests.log"; then
    say "CUDA tests failed: $out/cuda_tests.log"
    status=1
fi

# ------------------------------------------------------------------------------------------------ data
if [ -z "$data" ]; then
    for candidate in "$root/../shared/data" "$root/shared/data"; do
        if [ -f "$candidate/sst2/train.jsonl" ]; then data="$candidate"; break; fi
    done
fi
if [ "$smoke" = 1 ] && [ -z "$data" ]; then  # the SST-2 sample shipped in the package stands in
    data="$out/smoke_data"
    "$python" - "$data" <<'EOF'
import json, random, sys
from pathlib import Path
from setfit_lite.data.samples import load_sample
rows = list(load_sample("sst2"))
random.Random(0).shuffle(rows)
folder = Path(sys.argv[1]) / "sst2"
folder.mkdir(parents=True, exist_ok=True)
for name, part in (("train", rows[:300]), ("test", rows[300:])):
    (folder / f"{name}.jsonl").write_text("".join(json.dumps({"text": r["text"], "label": int(r["label"])}) + "\n"
                                                  for r in part))
EOF
fi
if [ "$smoke" = 1 ]; then tasks=(sst2:8); else tasks=(sst2:8 sst2:16 emotion:8 emotion:16); fi
for task in "${tasks[@]}"; do
    name="${task%%:*}"
    if [ -z "$data" ] || [ ! -f "$data/$name/train.jsonl" ] || [ ! -f "$data/$name/test.jsonl" ]; then
        say "data not found: need ${data:-../shared/data}/$name/{train,test}.jsonl; pass --data DIR"
        exit 5
    fi
done

# ------------------------------------------------------------------------------------------------ setfit
setfit_opts=(--skip-setfit)
if [ "$setfit" = 1 ] && [ "$smoke" = 0 ] && [ -z "$setfit_python" ]; then
    say "installing setfit 1.2.0 next to torch 2.13.0 into .venv-gpu-setfit (benchmarks/README.md's versions)"
    if make_venv "$root/.venv-gpu-setfit" "setfit==1.2.0" "sentence-transformers==6.2.0" "transformers==5.24.0" \
            >"$out/setfit_install.log" 2>&1; then
        setfit_python="$root/.venv-gpu-setfit/bin/python"
    else
        say "setfit did not install (see $out/setfit_install.log): benchmarking setfit_lite only"
    fi
fi
if [ "$setfit" = 1 ] && [ -n "$setfit_python" ]; then setfit_opts=(--setfit-python "$setfit_python"); fi

# ------------------------------------------------------------------------------------------------ benchmark
variants=()
if [ "$smoke" = 1 ]; then
    variants=(--variant 'fp32={"backend":"cpu","precision":"fp32","max_steps":2}')
    seeds="0"
    extra=(--test-limit 40)
else
    for precision in fp32 fp16 bf16; do
        if [ "$precision" = bf16 ] && ! "$python" -c "import sys, torch; sys.exit(0 if torch.cuda.is_bf16_supported() else 1)"; then
            say "this GPU has no bf16: skipping the bf16 runs"
            continue
        fi
        variants+=(--variant "$precision={\"backend\":\"cuda\",\"precision\":\"$precision\"}")
    done
    extra=()
fi
say "benchmark: ${tasks[*]}, seeds $seeds, $((${#variants[@]} / 2)) setfit_lite configuration(s), setfit: ${setfit_python:-no}"
# shellcheck disable=SC2086  # $seeds is a list of numbers
if ! "$python" -m benchmarks.compare_setfit --tasks "${tasks[@]}" --seeds $seeds --data-dir "$data" \
        --skip-lite-default "${variants[@]}" "${setfit_opts[@]}" "${extra[@]}" --out "$out/compare_setfit_gpu" \
        2>&1 | tee "$out/compare_setfit_gpu.log"; then
    say "the benchmark failed: $out/compare_setfit_gpu.log (rebuild partial results with compare_setfit.py --summarize)"
    status=1
fi

{
    echo "# gpu_check $(date -u +%Y-%m-%dT%H:%MZ)$([ "$smoke" = 1 ] && echo ' (CPU smoke run: figures mean nothing)')"
    echo
    echo '```json'; cat "$out/environment.json"; echo '```'
    echo
    echo "CUDA tests: $(tail -n 1 "$out/cuda_tests.log")"
    echo
    [ -f "$out/compare_setfit_gpu.md" ] && cat "$out/compare_setfit_gpu.md"
} >"$out/summary.md"
say "results in $out (summary.md); exit status $status"
exit "$status"
