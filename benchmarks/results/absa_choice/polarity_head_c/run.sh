#!/bin/bash
# usage: run.sh DOMAIN SEED... (the polarity variants of RULE.md, one process, seeds in turn)
d=$1; shift
exec bash "$(dirname "$0")/../train_polarity.sh" "$d" "$*" \
  --polarity c10='{"format": "window", "span_context": 8, "model": {"head_params": {"C": 10}}}' \
  --polarity c01='{"format": "window", "span_context": 8, "model": {"head_params": {"C": 0.1}}}'
