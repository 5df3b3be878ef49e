# small-text + setfit 1.2 at 2, 4, 8 per class on the test split, for a chain of TASK:SEED items: from the
# repository root, SMALLTEXT_PYTHON=SMALLTEXT_VENV/bin/python bash benchmarks/results/labelling_curves_smalltext.sh
# TASK:SEED... > LOG; results benchmarks/results/labelling_curves_TASK_seedSEED_smalltext.{json,md}
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
for item in "${@:?TASK:SEED items}"; do
    t=${item%%:*}; seed=${item##*:}
    date -u
    nice -n 5 .venv/bin/python -m benchmarks.labelling_curves --data-dir ../shared/data --tasks $t --seeds $seed \
        --test-limit 500 --budgets 2 4 8 --contenders smalltext --smalltext-python "${SMALLTEXT_PYTHON:?}" \
        --out benchmarks/results/labelling_curves_${t}_seed${seed}_smalltext
done
date -u
