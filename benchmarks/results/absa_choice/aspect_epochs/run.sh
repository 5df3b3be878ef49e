#!/bin/bash
# usage: run.sh DOMAIN EPOCHS SEED...: the marked aspect model with EPOCHS body epochs ("markedh_epEPOCHS"), one
# process, seeds in turn (one thread, niced)
cd "$(dirname "$0")/../../../.."
d=$1; e=$2; shift 2
for s in "$@"; do
nice -n 5 env OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false python -m benchmarks.absa_choice train \
  --domain "$d" --seed "$s" --aspect "markedh_ep$e={\"format\": \"marked\", \"args\": {\"num_epochs\": [$e, 16]}}"
done
