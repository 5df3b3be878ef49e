#!/usr/bin/env bash
# RULE.md here: the kNN vote against label spreading, pool forced on, 8 labels per class, validation. The chains as
# run (side by side), then the table, from the repository root: bash benchmarks/results/pool_spread/run.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
S=benchmarks/results/pool_spread
C=benchmarks/results/pool_choice_chain.sh
v=('forced={"self_training": true}' 'spread={"self_training": true, "pseudo_label_method": "spread"}')
PER_CLASS=8 bash $C $S "${v[@]}" -- sst2:0 subj:0 trec:0 emotion:0 sst5:0 multilingual:0 &
PER_CLASS=8 bash $C $S "${v[@]}" -- sst2:1 subj:1 trec:1 emotion:1 sst5:1 &
wait
python -m benchmarks.pool_choice --merge $S/*_seed*.json --out $S/settings
