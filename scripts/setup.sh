#!/usr/bin/env bash
# Create .venv and install setfit_lite with its test extras. torch first: 2.13.0 is the CPU build on this
# machine's disk; any other torch requirement could pull a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then python3 -m venv .venv; fi
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q "torch==2.13.0"
python -m pip install -q -e ".[dev]"
