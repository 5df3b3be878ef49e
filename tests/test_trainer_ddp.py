"""The Trainer itself on 2 processes (gloo, torchrun's environment): same model on every rank, as good as 1 process."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
ARGS = {"num_epochs": (3, 4), "body_learning_rate": 1e-2, "show_progress_bar": False, "backend": "cpu", "seed": 3}


def train_and_report(body_path: str, out_dir: Path | None) -> dict:
    """Train on the toy data; return (and on a rank, save) the body's parameters and eval probabilities."""
    sys.path.insert(0, str(HERE))
    from conftest import make_sentences

    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    texts, labels = make_sentences(12, seed=0)
    eval_texts, eval_labels = make_sentences(10, seed=1)
    model = SetFitModel.from_pretrained(body_path)
    trainer = Trainer(model=model, args=TrainingArguments(**ARGS), train_dataset={"text": texts, "label": labels})
    trainer.train()
    result = {
        "state": {k: v.detach().clone() for k, v in model.model_body.state_dict().items()},
        "proba": model.predict_proba(eval_texts),
        "accuracy": float(np.mean([p == y for p, y in zip(model.predict(eval_texts), eval_labels)])),
        "steps": trainer.state.global_step,
        "backend": model.training_info["backend"],
    }
    if out_dir is not None:
        rank = trainer.backend.rank if trainer.backend is not None else 0
        torch.save(result, out_dir / f"trainer_rank{rank}.pt")
    return result


def test_trainer_on_two_processes(tmp_path: Path, tiny_body_path: str) -> None:
    from test_trainers_ddp import launch

    launch(__file__, tiny_body_path, str(tmp_path))
    r0, r1 = (torch.load(tmp_path / f"trainer_rank{r}.pt", weights_only=False) for r in range(2))
    assert "rank 0/2" in r0["backend"] and "rank 1/2" in r1["backend"]
    for key in r0["state"]:  # every rank ends with the same model
        assert torch.equal(r0["state"][key], r1["state"][key]), key
    np.testing.assert_array_equal(r0["proba"], r1["proba"])
    single = train_and_report(tiny_body_path, None)
    assert r0["accuracy"] >= single["accuracy"] - 0.15, (r0["accuracy"], single["accuracy"])
    assert r0["accuracy"] >= 0.8


if __name__ == "__main__":
    train_and_report(sys.argv[1], Path(sys.argv[2]))
