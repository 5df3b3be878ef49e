# A third seed for the labelling goals (RULE.md): for a chain of TASK:SEED items, the balanced sample at
# 2, 4, 8, 16 per class, then suggest and suggest+pool at 2, 4, 8, at the library's defaults. From the
# repository root: bash benchmarks/results/labelling_seed2/run.sh TASK:SEED... > LOG
# results benchmarks/results/labelling_curves_TASK_seedSEED_goal_{balanced,suggest_pool}.{json,md}; the tweets
# (TASK multilingual) with multilingual-e5-small, as multilingual_e5; CLINC150 scored on 1,500 test texts
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
for item in "${@:?TASK:SEED items}"; do
    t=${item%%:*}; seed=${item##*:}
    extra=(); name=$t; limit=500
    [ "$t" = clinc150 ] && limit=1500
    if [ "$t" = multilingual ]; then
        E5=$(.venv/bin/python -c "from setfit_lite.zoo.resolve import resolve_model_path as r
print(r('intfloat/multilingual-e5-small'))")
        extra=(--model "$E5" --tag e5); name=multilingual_e5
    fi
    L="nice -n 5 .venv/bin/python -m benchmarks.labelling_curves --data-dir ../shared/data --tasks $t --seeds $seed"
    R=benchmarks/results/labelling_curves_${name}_seed${seed}_goal
    date -u; $L --test-limit $limit --budgets 2 4 8 16 --contenders balanced "${extra[@]}" --out ${R}_balanced
    date -u; $L --test-limit $limit --budgets 2 4 8 --contenders suggest suggest+pool "${extra[@]}" \
        --out ${R}_suggest_pool
done
date -u
