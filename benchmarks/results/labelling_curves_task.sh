# one task's labelling curves, accuracy only (nice -n 19): bash THIS_SCRIPT TASK WHAT > labelling_curves_TASK_WHAT.log
# WHAT: balanced (the balanced sample at 2, 4, 8 and 16 per class), pool (suggest and suggest+pool at 2, 4, 8) or
# random (2, 4, 8)
t=${1:?task} what=${2:?balanced, pool or random}
. ../../main/.venv/bin/activate
export PYTHONPATH=$PWD HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
L="nice -n 19 python -m benchmarks.labelling_curves --data-dir ../../shared/data --tasks $t --seeds 0 --test-limit 500"
R=benchmarks/results/labelling_curves_$t
date -u
if [ "$what" = pool ]; then
    $L --budgets 2 4 8 --contenders suggest suggest+pool --out ${R}_suggest_pool
elif [ "$what" = random ]; then
    $L --budgets 2 4 8 --contenders random --out ${R}_random
else
    $L --budgets 2 4 8 --contenders balanced --out ${R}_balanced
    date -u
    $L --budgets 16 --contenders balanced --out ${R}_balanced16
fi
date -u
