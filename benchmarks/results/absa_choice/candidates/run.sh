# one domain and seed: python -m benchmarks.absa_choice train with the three candidate rules (see RULE.md)
d=$1; s=$2
nice -n 5 env OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false python -m benchmarks.absa_choice train \
    --domain $d --seed $s --out benchmarks/results/absa_choice/candidates \
    --dev-candidates nouns nouns+adjectives nouns+adjectives+parts \
    --polarity window8='{"format": "window", "span_context": 8}' \
    --aspect adjectives='{"format": "marked", "candidates": "nouns+adjectives"}' \
    --aspect parts='{"format": "marked", "candidates": "nouns+adjectives+parts"}' \
    --aspect nouns='{"format": "marked", "candidates": "nouns"}'
