# the head's class weights on the labelling loop's labels, validation rows (choosing the default), accuracy only:
# bash THIS_SCRIPT VARIANT > labelling_class_weight_VARIANT.log; VARIANT: auto (the default) or balanced
v=${1:?auto or balanced}
. ../../main/.venv/bin/activate
export PYTHONPATH=$PWD HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
for t in sst2 subj trec emotion; do
    date -u
    nice -n 19 python -m benchmarks.labelling_curves --data-dir ../../shared/data --tasks $t --seeds 0 \
        --split validation --test-limit 500 --budgets 2 4 8 --contenders random suggest \
        --lite-args "{\"head_class_weight\": \"$v\"}" --out benchmarks/results/labelling_class_weight_${t}_$v
done
date -u
