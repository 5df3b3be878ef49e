# several tasks' labelling curves in one process chain, accuracy only (nice -n 19):
# bash THIS_SCRIPT "TASK:WHAT ..." > LOG; WHAT: pool (suggest and suggest+pool at 2, 4, 8) or random (2, 4, 8)
. ../../main/.venv/bin/activate
export PYTHONPATH=$PWD HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
for item in ${1:?TASK:WHAT list}; do
    t=${item%%:*} what=${item##*:}
    L="nice -n 19 python -m benchmarks.labelling_curves --data-dir ../../shared/data --tasks $t --seeds 0 --test-limit 500"
    R=benchmarks/results/labelling_curves_$t
    date -u
    if [ "$what" = pool ]; then
        $L --budgets 2 4 8 --contenders suggest suggest+pool --out ${R}_suggest_pool
    else
        $L --budgets 2 4 8 --contenders random --out ${R}_random
    fi
done
date -u
