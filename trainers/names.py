"""The names of the backends, the precisions and torchrun's environment variables.

This module imports nothing (no torch): ``TrainingArguments`` and the CLI check names against it before any
backend is built, and the backends use the same names.
"""

from __future__ import annotations

#: backend name -> what it runs on (`trainers.registry` maps each name to its class)
BACKENDS: dict[str, str] = {"cpu": "CPU", "cuda": "NVIDIA/AMD GPU", "hpu": "Intel Gaudi", "ipu": "Graphcore IPU"}
NAMES = ("auto", *BACKENDS)
"""What `backend=` accepts: `"auto"` (hpu, else cuda, else cpu) or a backend name."""

PRECISIONS = ("fp32", "bf16", "fp16")
AUTO_PRECISION = "auto"  # each backend's choice: see ``Backend.auto_precision``
PRECISION_NAMES = (AUTO_PRECISION, *PRECISIONS)
"""What `precision=` accepts: `"auto"` (each backend's choice) or a precision."""

#: the variables torchrun sets for each process that the backends read (``trainers.distributed.detect_env``)
TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")
