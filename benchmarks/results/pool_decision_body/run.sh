#!/usr/bin/env bash
# Study 3 (RULE.md here): the pool decision with the body round, at 4 and 8 labels per class, validation.
# The chains as run (side by side), then the two tables, from the repository root:
# bash benchmarks/results/pool_decision_body/run.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
S=benchmarks/results/pool_decision_body
C=benchmarks/results/pool_choice_chain.sh
both=('default={}' 'forced={"self_training": true}')
PER_CLASS=4 bash $C $S/pc4 "${both[@]}" -- trec:0 sst5:0 emotion:0 trec:1 sst5:1 emotion:1 &
PER_CLASS=4 bash $C $S/pc4 "${both[@]}" -- sst2:0 subj:0 sst2:1 subj:1 multilingual:0 multilingual:1 &
# the nine runs of ../pool_body/ (their forced rows are there), then the tweets seed 0
PER_CLASS=8 bash $C $S/pc8 'default={}' -- sst2:0 subj:0 trec:0 emotion:0 sst2:1 subj:1 trec:1 emotion:1 sst5:0 &
PER_CLASS=8 bash $C $S/pc8 "${both[@]}" -- multilingual:0 &
wait
python -m benchmarks.pool_choice --merge $S/pc4/*_seed*.json --rules --fresh-seeds --out $S/rules_pc4
python -m benchmarks.pool_choice --merge benchmarks/results/pool_body/*_seed*.json $S/pc8/*_seed*.json --rules \
    --fresh-seeds --out $S/rules_pc8
