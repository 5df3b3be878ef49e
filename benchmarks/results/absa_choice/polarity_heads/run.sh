#!/bin/bash
# usage: run.sh DOMAIN SEED... (the polarity variants of RULE.md, one process, seeds in turn)
d=$1; shift
exec bash "$(dirname "$0")/../train_polarity.sh" "$d" "$*" \
  --polarity dhead='{"format": "window", "span_context": 8, "model": {"use_differentiable_head": true}}' \
  --polarity e2e='{"format": "window", "span_context": 8, "model": {"use_differentiable_head": true}, "args": {"end_to_end": true}}' \
  --polarity supcon='{"format": "window", "span_context": 8, "args": {"loss": "SupConLoss"}}' \
  --polarity anchorsoftmax='{"format": "window", "span_context": 8, "args": {"anchor_loss": "softmax"}}'
