"""Subprocess worker of tests/test_determinism.py: trains with at least 2 math threads and prints digests.

``python determinism_worker.py repeat BODY``: trains each configuration twice, one JSON line of digests per run.
``python determinism_worker.py train BODY OUT [--resume] [--slow SECONDS]``: one run checkpointing every 2 steps
into OUT (``--slow`` sleeps after each step so the test can kill it mid-run); writes OUT/result.json.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
from transformers import TrainerCallback

sys.path.insert(0, str(Path(__file__).parent))
from conftest import make_sentences  # noqa: E402

from setfit_lite import SetFitModel, Trainer, TrainingArguments  # noqa: E402

# Wide enough (batch of 32 sentences: 496 pairs x 128 dims) that torch parallelises the loss's backward.
ARGS = {"seed": 0, "sentence_batch_size": 32, "body_learning_rate": 1e-3, "min_steps_per_epoch": 4,
        "num_epochs": (3, 2), "show_progress_bar": False, "backend": "cpu"}
CONFIGS = {
    "default": {},
    "fp32": {"precision": "fp32"},
    "CoSENTLoss": {"loss": "CoSENTLoss"},
    "ContrastiveLoss": {"loss": "ContrastiveLoss"},
    "pairs": {"objective": "pairs", "num_iterations": 2, "batch_size": 32},
    "BatchHardTripletLoss": {"loss": "BatchHardTripletLoss"},
}


def digest(model: SetFitModel, texts: list[str]) -> dict[str, str]:
    body = hashlib.sha256()
    for name, tensor in sorted(model.model_body.state_dict().items()):
        body.update(name.encode() + tensor.float().numpy().tobytes())
    proba = np.ascontiguousarray(model.predict_proba(texts))
    return {"body": body.hexdigest(), "proba": hashlib.sha256(proba.tobytes()).hexdigest()}


class Slow(TrainerCallback):
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001, ANN003, ANN201
        time.sleep(self.seconds)


def train(body: str, extra: dict, out: str | None = None, resume: bool = False, slow: float = 0.0) -> Trainer:
    texts, labels = make_sentences(32, seed=0)
    saving = {"output_dir": out, "save_strategy": "steps", "save_steps": 2} if out else {}
    args = TrainingArguments(**{**ARGS, **extra, **saving})
    trainer = Trainer(model=SetFitModel.from_pretrained(body), args=args,
                      train_dataset={"text": texts, "label": labels}, callbacks=[Slow(slow)] if slow else None)
    trainer.train(resume_from_checkpoint=True if resume else None)
    return trainer


def main() -> None:
    torch.set_num_threads(max(2, torch.get_num_threads()))
    mode, body = sys.argv[1], sys.argv[2]
    texts = make_sentences(10, seed=1)[0]
    if mode == "repeat":
        for name, extra in CONFIGS.items():
            for run in range(2):
                result = digest(train(body, extra).model, texts)
                print(json.dumps({"config": name, "run": run, "threads": torch.get_num_threads(), **result}),
                      flush=True)
        return
    out = sys.argv[3]
    trainer = train(body, {}, out, resume="--resume" in sys.argv,
                    slow=float(sys.argv[sys.argv.index("--slow") + 1]) if "--slow" in sys.argv else 0.0)
    result = {"global_step": trainer.state.global_step, "threads": torch.get_num_threads(),
              **digest(trainer.model, texts)}
    Path(out, "result.json").write_text(json.dumps(result))


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
