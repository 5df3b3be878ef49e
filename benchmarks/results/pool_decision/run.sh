#!/usr/bin/env bash
# one chain of pool_choice runs (TASK:SEED items; seed 3 also runs `forced`, the fresh draw), results here
set -euo pipefail
cd "$(dirname "$0")/../../.."
R=benchmarks/results/pool_decision
N="nice -n 5 env OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false"
for item in "$@"; do
    task=${item%%:*}; seed=${item##*:}
    extra=(); name=$task
    if [ "$task" = multilingual ]; then
        E5=$(python -c "from setfit_lite.zoo.resolve import resolve_model_path as r
print(r('intfloat/multilingual-e5-small'))")
        extra=(--model "$E5" --tag e5); name=multilingual_e5
    fi
    variants=('default={}')
    [ "$seed" = 3 ] && variants+=('forced={"self_training": true}')
    $N python -m benchmarks.pool_choice --data-dir ../shared/data --tasks "$task" --seeds "$seed" \
        --test-limit 500 "${extra[@]}" --variants "${variants[@]}" --out "$R/${name}_seed$seed"
done
