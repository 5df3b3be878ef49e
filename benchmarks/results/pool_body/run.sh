#!/usr/bin/env bash
# the pool with the body round that the bf16 copy had lost (fixed 2026-12-05): forced on, body round and head
# only, on the pool choice's runs (TASK:SEED items), validation; results here
set -euo pipefail
cd "$(dirname "$0")/../../.."
bash benchmarks/results/pool_choice_chain.sh benchmarks/results/pool_body 'forced={"self_training": true}' \
    'head only={"self_training": true, "self_training_body": false}' -- "$@"
