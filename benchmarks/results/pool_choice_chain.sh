#!/usr/bin/env bash
# A chain of benchmarks.pool_choice runs on the validation split, one per TASK:SEED item (the tweets with
# multilingual-e5-small), each process on one thread: from the repository root,
# bash benchmarks/results/pool_choice_chain.sh OUT_DIR 'NAME=JSON'... -- TASK:SEED...
# (PER_CLASS=N in the environment: N labels per class, 8 when unset)
# results OUT_DIR/TASK_seedSEED.{json,md} (the tweets: multilingual_e5_seedSEED)
set -euo pipefail
out=${1:?out dir}; shift
variants=()
while [ "${1:?'NAME=JSON'... -- TASK:SEED...}" != -- ]; do variants+=("$1"); shift; done
shift
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
        --test-limit 500 --per-class "${PER_CLASS:-8}" "${extra[@]}" --variants "${variants[@]}" \
        --out "$out/${name}_seed$seed"
done
