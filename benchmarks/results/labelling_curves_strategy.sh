# suggest and suggest+pool at 2, 4, 8 per class on the test split, one strategy after the cold start, for a chain
# of TASK:SEED items (accuracy only): from the repository root,
# bash benchmarks/results/labelling_curves_strategy.sh STRATEGY TASK:SEED... > LOG
# results benchmarks/results/labelling_curves_TASK_seedSEED_suggest_pool_STRATEGY.{json,md}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
strategy=${1:?strategy}; shift
for item in "${@:?TASK:SEED items}"; do
    t=${item%%:*}; seed=${item##*:}
    date -u
    nice -n 5 .venv/bin/python -m benchmarks.labelling_curves --data-dir ../shared/data --tasks $t --seeds $seed \
        --test-limit 500 --budgets 2 4 8 --contenders suggest suggest+pool --strategy $strategy \
        --out benchmarks/results/labelling_curves_${t}_seed${seed}_suggest_pool_${strategy}
done
date -u
