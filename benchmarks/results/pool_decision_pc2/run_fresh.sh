#!/usr/bin/env bash
# Study 4's fresh draw (RULE.md here, the addendum): 2 labels per class, seeds 3-5, validation. From the
# repository root: bash benchmarks/results/pool_decision_pc2/run_fresh.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
S=benchmarks/results/pool_decision_pc2/fresh
C=benchmarks/results/pool_choice_chain.sh
both=('default={}' 'forced={"self_training": true}')
mkdir -p $S
PER_CLASS=2 bash $C $S "${both[@]}" -- multilingual:3 multilingual:4 multilingual:5 &
PER_CLASS=2 bash $C $S "${both[@]}" -- sst2:3 subj:3 trec:3 sst5:3 emotion:3 sst2:4 subj:4 trec:4 sst5:4 &
PER_CLASS=2 bash $C $S "${both[@]}" -- emotion:4 sst2:5 subj:5 trec:5 sst5:5 emotion:5 &
wait
python -m benchmarks.pool_choice --merge $S/*_seed*.json --rules --fresh-seeds 3 4 5 --out $S/rules_pc2_fresh
