#!/usr/bin/env bash
# one chain of pool_choice runs (TASK:SEED items; seed 3, the fresh draw, also runs `forced`), results here
set -euo pipefail
cd "$(dirname "$0")/../../.."
for item in "$@"; do
    variants=('default={}')
    [ "${item##*:}" = 3 ] && variants+=('forced={"self_training": true}')
    bash benchmarks/results/pool_choice_chain.sh benchmarks/results/pool_decision "${variants[@]}" -- "$item"
done
