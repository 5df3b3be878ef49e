# A third seed for the labelling goals (RULE.md): for a chain of TASK:SEED items, the balanced sample at
# 2, 4, 8, 16 per class, then suggest and suggest+pool at 2, 4, 8, at the library's defaults. From the
# repository root: bash benchmarks/results/labelling_seed2/run.sh TASK:SEED... > LOG
# results benchmarks/results/labelling_curves_TASK_seedSEED_goal_{balanced,suggest_pool}.{json,md}; the tweets
# (TASK multilingual) with multilingual-e5-small, as multilingual_e5; CLINC150 scored on 1,500 test texts
B=benchmarks/results/labelling_curves_body_round.sh
for item in "${@:?TASK:SEED items}"; do
    NAME=goal_balanced CONTENDERS=balanced bash $B "2 4 8 16" "$item"
    NAME=goal_suggest_pool bash $B "2 4 8" "$item"
done
