# CLINC150 (150 classes) labelling curves on the test split, seed SEED: balanced at 2, 4, 8, 16 per class, suggest
# and suggest+pool at 2, 4, 8, random picks at 2, 4, 8; 1,500 test texts. From the repository root,
# bash benchmarks/results/labelling_curves_clinc150.sh SEED > LOG; results
# benchmarks/results/labelling_curves_clinc150_seedSEED_{balanced,suggest_pool,random}.{json,md}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
seed=${1:?seed}
L="nice -n 5 .venv/bin/python -m benchmarks.labelling_curves --data-dir ../shared/data --tasks clinc150"
A="--seeds $seed --test-limit 1500"
R=benchmarks/results/labelling_curves_clinc150_seed$seed
date -u
$L $A --budgets 2 4 8 16 --contenders balanced --out ${R}_balanced
date -u
$L $A --budgets 2 4 8 --contenders suggest suggest+pool --out ${R}_suggest_pool
date -u
$L $A --budgets 2 4 8 --contenders random --out ${R}_random
date -u
