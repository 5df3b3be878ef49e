#!/bin/bash
# usage: run.sh DOMAIN SEED...: the aspect variants of RULE.md (the marked aspect model trained again as
# "markedh", its head refitted with C 1, 0.1, 10, 100), one process, seeds in turn (one thread, niced)
cd "$(dirname "$0")/../../../.."
d=$1; shift
for s in "$@"; do
nice -n 5 env OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false python -m benchmarks.absa_choice train \
  --domain "$d" --seed "$s" \
  --aspect markedh='{"format": "marked", "head_variants": {"c1": {"C": 1}, "c01": {"C": 0.1}, "c10": {"C": 10}, "c100": {"C": 100}}}'
done
