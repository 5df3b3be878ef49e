. ../../main/.venv/bin/activate
export PYTHONPATH=$PWD HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
A="--data-dir ../../shared/data --tasks sst5 --seeds 0 --test-limit 500"
date -u
python -m benchmarks.labelling_curves $A --budgets 2 4 8 --contenders balanced --out benchmarks/results/labelling_curves_sst5_balanced
date -u
python -m benchmarks.labelling_curves $A --budgets 16 --contenders balanced --out benchmarks/results/labelling_curves_sst5_balanced16
date -u
python -m benchmarks.labelling_curves $A --budgets 2 4 8 --contenders suggest suggest+pool --out benchmarks/results/labelling_curves_sst5_suggest
date -u
python -m benchmarks.labelling_curves $A --budgets 2 4 8 --contenders random --out benchmarks/results/labelling_curves_sst5_random
date -u
