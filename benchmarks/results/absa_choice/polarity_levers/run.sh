#!/bin/bash
# usage: run.sh DOMAIN SEED... (the polarity variants of RULE.md, one process, seeds in turn)
d=$1; shift
exec bash "$(dirname "$0")/../train_polarity.sh" "$d" "$*" \
  --polarity w8ref='{"format": "window", "span_context": 8}' \
  --polarity pairs='{"format": "window", "span_context": 8, "args": {"objective": "pairs"}}' \
  --polarity lr5e5='{"format": "window", "span_context": 8, "args": {"body_learning_rate": 5e-5}}' \
  --polarity lr2e4='{"format": "window", "span_context": 8, "args": {"body_learning_rate": 2e-4}}' \
  --polarity aug='{"format": "window", "span_context": 8, "train_contexts": [5, 12]}' \
  --polarity augtta='{"format": "window", "span_context": 8, "train_contexts": [5, 12], "predict_contexts": [5, 8, 12]}'
