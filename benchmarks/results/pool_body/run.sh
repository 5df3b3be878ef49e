#!/usr/bin/env bash
# the pool with the body round that the bf16 copy had lost (fixed 2026-12-05): forced on, body round and head
# only, on the pool choice's runs (TASK:SEED items), validation; results here
set -euo pipefail
cd "$(dirname "$0")/../../.."
R=benchmarks/results/pool_body
N="nice -n 5 env OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false"
for item in "$@"; do
    task=${item%%:*}; seed=${item##*:}
    extra=(); name=$task
    if [ "$task" = multilingual ]; then
        E5=$(python -c "from setfit_lite.zoo.resolve import resolve_model_path as r
print(r('intfloat/multilingual-e5-small'))")
        extra=(--model "$E5" --tag e5); name=multilingual_e5
    fi
    $N python -m benchmarks.pool_choice --data-dir ../shared/data --tasks "$task" --seeds "$seed" \
        --test-limit 500 "${extra[@]}" --variants 'forced={"self_training": true}' \
        'head only={"self_training": true, "self_training_body": false}' --out "$R/${name}_seed$seed"
done
