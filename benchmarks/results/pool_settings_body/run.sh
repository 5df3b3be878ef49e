#!/usr/bin/env bash
# Study 5 (RULE.md here): the pool's settings with the body round, 8 labels per class, validation. The chains as
# run (side by side), then the table, from the repository root: bash benchmarks/results/pool_settings_body/run.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
S=benchmarks/results/pool_settings_body
C=benchmarks/results/pool_choice_chain.sh
v=('forced={"self_training": true}' 'cap 8={"self_training": true, "pseudo_labels_per_class": 8}'
   'cap 2={"self_training": true, "pseudo_labels_per_class": 2}'
   '2 rounds={"self_training": true, "self_training_rounds": 2}'
   'threshold 0={"self_training": true, "pseudo_label_threshold": 0.0}')
PER_CLASS=8 bash $C $S "${v[@]}" -- sst2:0 subj:0 trec:0 emotion:0 sst5:0 multilingual:0 &
PER_CLASS=8 bash $C $S "${v[@]}" -- sst2:1 subj:1 trec:1 emotion:1 sst5:1 &
wait
python -m benchmarks.pool_choice --merge $S/*_seed*.json --out $S/settings
