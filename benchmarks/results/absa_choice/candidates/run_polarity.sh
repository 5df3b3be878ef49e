# one domain and seed: the polarity model trained two and four epochs (see RULE.md), in the same folder
d=$1; s=$2
nice -n 5 env OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false python -m benchmarks.absa_choice train \
    --domain $d --seed $s --out benchmarks/results/absa_choice/candidates \
    --dev-candidates nouns nouns+adjectives nouns+adjectives+parts \
    --polarity window8ep2='{"format": "window", "span_context": 8, "args": {"num_epochs": [2, 16]}}' \
    --polarity window8ep4='{"format": "window", "span_context": 8, "args": {"num_epochs": [4, 16]}}'
