# several tasks' labelling curves, one after the other: bash THIS_SCRIPT "TASK:WHAT ..." > LOG
# (each item as labelling_curves_task.sh TASK WHAT runs it)
for item in ${1:?TASK:WHAT list}; do
    bash benchmarks/results/labelling_curves_task.sh "${item%%:*}" "${item##*:}"
done
