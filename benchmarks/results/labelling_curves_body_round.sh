# suggest and suggest+pool on the test split after the fix of the bf16 body copy (2026-12-05: before it, the
# self-training round's body training was lost on this CPU, so the earlier suggest+pool rows are head-only
# self-training), for a chain of TASK:SEED items: from the repository root,
# bash benchmarks/results/labelling_curves_body_round.sh "BUDGETS" TASK:SEED... > LOG
# results benchmarks/results/labelling_curves_TASK_seedSEED_body_round.{json,md}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
budgets=${1:?budgets}; shift
for item in "${@:?TASK:SEED items}"; do
    t=${item%%:*}; seed=${item##*:}
    date -u
    nice -n 5 .venv/bin/python -m benchmarks.labelling_curves --data-dir ../shared/data --tasks $t --seeds $seed \
        --test-limit 500 --budgets $budgets --contenders suggest suggest+pool \
        --out benchmarks/results/labelling_curves_${t}_seed${seed}_body_round
done
date -u
