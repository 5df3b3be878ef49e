#!/usr/bin/env bash
# Study 4 (RULE.md here): the pool decision at 2 labels per class, validation. The chains as run (side by side),
# then the table, from the repository root: bash benchmarks/results/pool_decision_pc2/run.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
S=benchmarks/results/pool_decision_pc2
C=benchmarks/results/pool_choice_chain.sh
both=('default={}' 'forced={"self_training": true}')
PER_CLASS=2 bash $C $S "${both[@]}" -- multilingual:0 multilingual:1 multilingual:2 &
PER_CLASS=2 bash $C $S "${both[@]}" -- sst2:0 subj:0 trec:0 sst5:0 emotion:0 sst2:1 subj:1 trec:1 sst5:1 &
PER_CLASS=2 bash $C $S "${both[@]}" -- emotion:1 sst2:2 subj:2 trec:2 sst5:2 emotion:2 &
wait
python -m benchmarks.pool_choice --merge $S/*_seed*.json --rules --fresh-seeds --out $S/rules_pc2
