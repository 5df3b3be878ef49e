#!/bin/bash
# usage: run.sh DOMAIN SEED... (the variants of RULE.md, one process, seeds in turn)
d=$1; shift
exec bash "$(dirname "$0")/../train_polarity.sh" "$d" "$*" \
  --polarity w8blend='{"format": "window", "span_context": 8, "blends": [1.0, 0.85, 0.7, 0.5]}'
