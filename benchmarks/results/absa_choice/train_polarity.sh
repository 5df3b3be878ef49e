#!/bin/bash
# usage: train_polarity.sh DOMAIN "SEED..." --polarity NAME=JSON ...: benchmarks.absa_choice train of the given
# polarity variants on the dev split, one process, the seeds in turn (one thread, niced: accuracy runs)
cd "$(dirname "$0")/../../.."
d=$1; seeds=$2; shift 2
for s in $seeds; do
nice -n 5 env OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false python -m benchmarks.absa_choice train \
  --domain "$d" --seed "$s" "$@"
done
