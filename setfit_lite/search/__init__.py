"""Hyperparameter search for `setfit_lite.Trainer` with Optuna (SigOpt-style spaces translated to Optuna).

One module per stage, imports pointing down (none imports the trainer; the trainer imports them):

- `spaces`: SigOpt-style spaces parsed and checked, Optuna distributions sampled;
- `routing`: which receiver (training arguments, head, ``model_init``) takes each
  parameter;
- `values`: the type each value takes at its receiver, checked before the first trial;
- `seeding`: the generators seeded before a model is built;
- `storages`: Optuna storages (database URL, SQLite or journal path) opened and checked;
- `study`: trials run on the trainer in an Optuna study (or SigOpt's offline driver);
- `pruning`: the callback that reports evaluations during training to Optuna.

Importing the package needs neither torch nor the trainer (see `study`).
"""

from __future__ import annotations

from .routing import (
    MODEL_INIT_PREFIX,
    apply_head_params,
    apply_hyperparameters,
    build_model,
    head_param_names,
    split_hyperparameters,
)
from .spaces import DEFAULT_HP_SPACE, default_hp_space, load_space, sigopt_to_optuna, suggest_hyperparameters
from .storages import open_storage
from .study import (
    DEFAULT_DIRECTION,
    DEFAULT_N_TRIALS,
    BestRun,
    NoCompletedTrialError,
    create_study,
    default_compute_objective,
    run_hyperparameter_search,
)

__all__ = [
    "DEFAULT_DIRECTION",
    "DEFAULT_HP_SPACE",
    "DEFAULT_N_TRIALS",
    "MODEL_INIT_PREFIX",
    "BestRun",
    "NoCompletedTrialError",
    "apply_head_params",
    "apply_hyperparameters",
    "build_model",
    "create_study",
    "default_compute_objective",
    "default_hp_space",
    "head_param_names",
    "load_space",
    "open_storage",
    "run_hyperparameter_search",
    "sigopt_to_optuna",
    "split_hyperparameters",
    "suggest_hyperparameters",
]
