#!/bin/bash
# usage: run.sh DOMAIN SEED... (the polarity variants of RULE.md, one process, seeds in turn)
cd "$(dirname "$0")/../../../.."
d=$1; shift
for s in "$@"; do
nice -n 5 env OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false python -m benchmarks.absa_choice train \
  --domain $d --seed $s \
  --polarity c10='{"format": "window", "span_context": 8, "model": {"head_params": {"C": 10}}}' \
  --polarity c01='{"format": "window", "span_context": 8, "model": {"head_params": {"C": 0.1}}}'
done
