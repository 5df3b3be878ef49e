cd .
. .venv/bin/activate
export PYTHONPATH=$PWD HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false OMP_NUM_THREADS=1
date -u
python -m benchmarks.unlabeled --choose-default --tasks sst5 sst2 --seeds 0 --test-limit 300 --data-dir ../shared/data --out benchmarks/results/unlabeled_validation_pool
date -u
