#!/usr/bin/env bash
# Seed 2 of the ABSA benchmark (RULE.md here): setfit_lite and setfit 1.2 on both domains, side by side.
# Usage: SETFIT_PYTHON=SETFIT_VENV/bin/python bash benchmarks/results/absa_seed2/run.sh
set -euo pipefail
R=benchmarks/results/absa_seed2
N="nice -n 5 env OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false"
for d in restaurants laptops; do
    $N python -m benchmarks.absa --domains $d --seeds 2 --skip-setfit --out $R/absa_${d}_seed2 \
        > $R/absa_${d}_seed2.jsonl &
    $N python -m benchmarks.absa --domains $d --seeds 2 --skip-lite --setfit-python "$SETFIT_PYTHON" \
        --out $R/absa_${d}_seed2_setfit > $R/absa_${d}_seed2_setfit.jsonl &
done
wait
