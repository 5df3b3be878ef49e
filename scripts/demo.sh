#!/usr/bin/env bash
# Set up (if needed) and run the demo: 8 examples per class of the shipped SST-2 sample, no network.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/setfit-lite ] || ./scripts/setup.sh
. .venv/bin/activate
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
exec setfit-lite demo "$@"
