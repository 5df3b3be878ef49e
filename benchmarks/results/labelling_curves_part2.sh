cd .
. .venv/bin/activate
export PYTHONPATH=$PWD HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
date -u
python -m benchmarks.labelling_curves --data-dir ../shared/data --tasks sst2 trec --seeds 0 --budgets 2 4 8 --test-limit 500 --contenders suggest suggest+pool --out benchmarks/results/labelling_curves_suggest
date -u
