"""The parts of :class:`setfit_lite.Trainer`, one concern each; the trainer imports them, none imports it.

- :mod:`.session`: what one ``train()`` call shares (arguments, backend, model, callbacks and their state);
- :mod:`.optim`: the optimizers, the LR schedule and word-embedding freezing;
- :mod:`.modules`: the modules a backend wraps (their forward returns the loss);
- :mod:`.loop`: THE training loop, run once per phase (body, then an end-to-end head);
- :mod:`.progress`: where the loop stands, saved to a checkpoint and resumed from one;
- :mod:`.signals`: SIGTERM/SIGINT stop the loop after a checkpoint;
- :mod:`.interim_eval`: the eval metric during training, with a throwaway head (body) or the head being trained;
- :mod:`.head_fit`: embeddings for the head (the same path as ``predict``) and fitting it;
- :mod:`.head_phase`: the head's fit as callback events (epochs, early stopping, the fit's log);
- :mod:`.label_policy`: what training makes of the label names (zero-shot prototypes, label anchors, the prior).
"""
