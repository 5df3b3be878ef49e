# one seed's labelling curves on the test split, task after task (accuracy only): from the repository root,
# bash benchmarks/results/labelling_curves_seed.sh SEED TASK... > LOG
# per task: suggest and suggest+pool at 2, 4, 8 per class, then the balanced sample at 2, 4, 8 and 16; results
# benchmarks/results/labelling_curves_TASK_seedSEED_{suggest_pool,balanced}.{json,md}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
seed=${1:?seed}; shift
for t in "${@:?tasks}"; do
    R=benchmarks/results/labelling_curves_${t}_seed${seed}
    L="nice -n 5 .venv/bin/python -m benchmarks.labelling_curves --data-dir ../shared/data --tasks $t --seeds $seed"
    date -u; $L --test-limit 500 --budgets 2 4 8 --contenders suggest suggest+pool --out ${R}_suggest_pool
    date -u; $L --test-limit 500 --budgets 2 4 8 16 --contenders balanced --out ${R}_balanced
done
date -u
