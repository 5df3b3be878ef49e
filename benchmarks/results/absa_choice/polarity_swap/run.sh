#!/bin/bash
# usage: run.sh DOMAIN SEED... (the variants of RULE.md, one process, seeds in turn)
d=$1; shift
exec bash "$(dirname "$0")/../train_polarity.sh" "$d" "$*" \
  --polarity swap1='{"format": "window", "span_context": 8, "swap_aspects": 1}' \
  --polarity swap3='{"format": "window", "span_context": 8, "swap_aspects": 3}'
