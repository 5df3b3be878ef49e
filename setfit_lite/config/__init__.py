"""The configuration vocabulary, torch-free: the rule engine, the rules of every parameter (the training
arguments' and the others'), the losses by family and the sampling policy (objectives, pair strategies, steps per
epoch)."""
