# suggest and suggest+pool on the test split after the fix of the bf16 body copy (2026-12-05: before it, the
# self-training round's body training was lost on this CPU, so the earlier suggest+pool rows are head-only
# self-training), for a chain of TASK:SEED items: from the repository root,
# bash benchmarks/results/labelling_curves_body_round.sh "BUDGETS" TASK:SEED... > LOG
# results benchmarks/results/labelling_curves_TASK_seedSEED_NAME.{json,md}, NAME from the environment
# (body_round when unset), the contenders CONTENDERS from the environment (suggest suggest+pool when unset); the
# tweets (TASK multilingual) with multilingual-e5-small, as multilingual_e5; CLINC150
# scored on 1,500 test texts, the others on 500
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
budgets=${1:?budgets}; shift
for item in "${@:?TASK:SEED items}"; do
    t=${item%%:*}; seed=${item##*:}
    extra=(); name=$t; limit=500
    [ "$t" = clinc150 ] && limit=1500
    if [ "$t" = multilingual ]; then
        E5=$(.venv/bin/python -c "from setfit_lite.zoo.resolve import resolve_model_path as r
print(r('intfloat/multilingual-e5-small'))")
        extra=(--model "$E5" --tag e5); name=multilingual_e5
    fi
    date -u
    nice -n 5 .venv/bin/python -m benchmarks.labelling_curves --data-dir ../shared/data --tasks $t --seeds $seed \
        --test-limit $limit --budgets $budgets --contenders ${CONTENDERS:-suggest suggest+pool} "${extra[@]}" \
        --out benchmarks/results/labelling_curves_${name}_seed${seed}_${NAME:-body_round}
done
date -u
