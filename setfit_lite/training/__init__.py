"""The parts of `setfit_lite.Trainer`, one concern each; the trainer imports them, none imports it.

- `session`: what one ``train()`` call shares (arguments, backend, model, callbacks and their state);
- `optim`: the optimizers, the LR schedule and word-embedding freezing;
- `modules`: the modules a backend wraps (their forward returns the loss);
- `loop`: THE training loop, run once per phase (body, then an end-to-end head);
- `progress`: where the loop stands, saved to a checkpoint and resumed from one;
- `signals`: SIGTERM/SIGINT stop the loop after a checkpoint;
- `interim_eval`: the eval metric during training, with a throwaway head (body) or the head being trained;
- `head_fit`: embeddings for the head (the same path as ``predict``) and fitting it;
- `head_phase`: the head's fit as callback events (epochs, early stopping, the fit's log);
- `label_policy`: what training makes of the label names (zero-shot prototypes, label anchors, the prior).
"""
