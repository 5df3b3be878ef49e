# suggest and suggest+pool on one task (sst5, emotion, subj): bash THIS_SCRIPT TASK > labelling_curves_TASK_pool.log
t=${1:?task}
. ../../main/.venv/bin/activate
export PYTHONPATH=$PWD HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
A="--data-dir ../../shared/data --tasks $t --seeds 0 --test-limit 500"
date -u
python -m benchmarks.labelling_curves $A --budgets 2 4 8 --contenders suggest suggest+pool --out benchmarks/results/labelling_curves_${t}_suggest_pool
date -u
