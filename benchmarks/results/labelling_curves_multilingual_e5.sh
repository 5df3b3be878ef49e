# The multilingual tweets (trained on English, scored on the 7 other languages) with multilingual-e5-small as the
# body, rows named multilingual+e5, seed SEED: balanced at 2, 4, 8, 16 per class, suggest and suggest+pool at 2, 4,
# 8, random picks at 2, 4, 8. From the repository root, bash benchmarks/results/labelling_curves_multilingual_e5.sh
# SEED > LOG; results benchmarks/results/labelling_curves_multilingual_e5_seedSEED_{balanced,suggest_pool,random}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
seed=${1:?seed}
E5=$(.venv/bin/python -c "from setfit_lite.zoo.resolve import resolve_model_path as r
print(r('intfloat/multilingual-e5-small'))")
L="nice -n 5 .venv/bin/python -m benchmarks.labelling_curves --data-dir ../shared/data --tasks multilingual"
A="--seeds $seed --test-limit 500 --model $E5 --tag e5"
R=benchmarks/results/labelling_curves_multilingual_e5_seed$seed
date -u
$L $A --budgets 2 4 8 16 --contenders balanced --out ${R}_balanced
date -u
$L $A --budgets 2 4 8 --contenders suggest suggest+pool --out ${R}_suggest_pool
date -u
$L $A --budgets 2 4 8 --contenders random --out ${R}_random
date -u
