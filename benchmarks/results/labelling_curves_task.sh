# One task's labelling curves on the test split, seed SEED: balanced at 2, 4, 8, 16 per class, suggest and
# suggest+pool at 2, 4, 8, random picks at 2, 4, 8, each with the labelling_curves options ARGS (the task and
# more). From the repository root, bash benchmarks/results/labelling_curves_task.sh NAME SEED ARGS... > LOG;
# results benchmarks/results/labelling_curves_NAME_seedSEED_{balanced,suggest_pool,random}.{json,md}. E.g.
#   bash benchmarks/results/labelling_curves_task.sh clinc150 0 --tasks clinc150 --test-limit 1500
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
name=${1:?name}; seed=${2:?seed}; shift 2
L="nice -n 5 .venv/bin/python -m benchmarks.labelling_curves --data-dir ../shared/data --seeds $seed"
R=benchmarks/results/labelling_curves_${name}_seed$seed
date -u
$L "$@" --budgets 2 4 8 16 --contenders balanced --out ${R}_balanced
date -u
$L "$@" --budgets 2 4 8 --contenders suggest suggest+pool --out ${R}_suggest_pool
date -u
$L "$@" --budgets 2 4 8 --contenders random --out ${R}_random
date -u
