"""Real 2-process gloo runs on the CPU (torchrun's environment), launched once for the whole module, and the same
Trainer run as two torchrun nodes of one process each.

Each rank first trains a tiny regressor through ``CpuBackend`` directly (DDP, sharding, object collectives),
then runs the ``Trainer`` itself on the toy data in the same process group; both save their results, which
the tests compare across ranks and against one process.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
WORLD_SIZE = 2
STEPS = 3
LR = 0.1
TRAINER_ARGS = {"num_epochs": (3, 4), "body_learning_rate": 1e-2, "show_progress_bar": False, "backend": "cpu",
                "seed": 3}


class Regressor(nn.Module):
    def __init__(self, seed: int) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.linear = nn.Linear(4, 1)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return nn.functional.mse_loss(self.linear(x).squeeze(-1), y)


def _data() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return torch.randn(8, 4, generator=g), torch.randn(8, generator=g)


def backend_worker(out_dir: Path):
    """One rank: DDP training on this rank's shard, collectives; results saved to ``out_dir``."""
    from trainers import get_backend

    backend = get_backend("cpu", num_threads=1, dist_timeout=300)
    backend.setup()
    rank = backend.rank
    model = Regressor(seed=0 if rank == 0 else 100 + rank)  # DDP must broadcast rank 0's weights
    module, optimizer = backend.prepare(model, torch.optim.SGD(model.parameters(), lr=LR))
    x, y = _data()
    shard = list(backend.iter_shard(list(range(len(x)))))
    losses = [float(backend.training_step(module, optimizer, {"x": x[shard], "y": y[shard]})) for _ in range(STEPS)]
    result = {
        "rank": rank,
        "is_main": backend.is_main_process,
        "module_type": type(module).__name__,
        "state": {k: v.clone() for k, v in backend.unwrap(module).state_dict().items()},
        "gathered": backend.gather_object({"rank": rank, "shard": shard}),
        "from_0": backend.broadcast_object(f"hello from {rank}", src=0),
        "from_1": backend.broadcast_object(f"hello from {rank}", src=1),
        "losses": losses,
        "describe": backend.describe(),
    }
    backend.barrier()
    torch.save(result, out_dir / f"rank{rank}.pt")
    return backend


def train_and_report(body_path: str, out_dir: Path | None, resume: Path | None = None,
                     checkpoints: Path | None = None) -> dict:
    """Train the Trainer on the toy data; return (and on a rank, save) the body's parameters and eval results.
    Checkpoints go to ``checkpoints`` (default: ``out_dir / "ckpt"``)."""
    sys.path.insert(0, str(HERE))
    from conftest import make_sentences

    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    texts, labels = make_sentences(12, seed=0)
    eval_texts, eval_labels = make_sentences(10, seed=1)
    model = SetFitModel.from_pretrained(body_path)
    checkpoints = checkpoints or (out_dir / "ckpt" if out_dir else None)
    saving = ({"save_strategy": "steps", "save_steps": 8, "save_total_limit": None, "output_dir": str(checkpoints)}
              if out_dir and not resume else {})
    trainer = Trainer(model=model, args=TrainingArguments(**TRAINER_ARGS, **saving),
                      train_dataset={"text": texts, "label": labels})
    trainer.train(resume_from_checkpoint=resume)
    result = {
        "state": {k: v.detach().clone() for k, v in model.model_body.state_dict().items()},
        "proba": model.predict_proba(eval_texts),
        "accuracy": float(np.mean([p == y for p, y in zip(model.predict(eval_texts), eval_labels)])),
        "steps": trainer.state.global_step,
        "backend": model.training_info["backend"],
    }
    if out_dir is not None and resume is not None:
        torch.save(result, out_dir / f"resumed_rank{trainer.backend.rank}.pt")
    elif out_dir is not None:
        rank = trainer.backend.rank if trainer.backend is not None else 0
        result["saved"] = trainer.save_model(out_dir / "model")  # rank 0 only
        torch.save(result, out_dir / f"trainer_rank{rank}.pt")
    return result


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(script: str, *args: str, timeout: int = 1800) -> None:
    """Run ``script args`` as ranks 0..WORLD_SIZE-1 with torchrun's environment; fail with a rank's output."""
    port = str(_free_port())
    procs = []
    for rank in range(WORLD_SIZE):
        env = {
            **os.environ,
            "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "WORLD_SIZE": str(WORLD_SIZE),
            "LOCAL_WORLD_SIZE": str(WORLD_SIZE),
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": port,
            "OMP_NUM_THREADS": "1",
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        }
        cmd = [sys.executable, script, *args]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = []
    try:
        for proc in procs:
            outputs.append(proc.communicate(timeout=timeout)[0])  # a minute normally; generous for loaded CI
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    for rank, (proc, out) in enumerate(zip(procs, outputs)):
        assert proc.returncode == 0, f"rank {rank} failed:\n{out}"


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory, tiny_body_path: str) -> Path:
    """One 2-process launch (imports are the slow part) shared by the tests of this module."""
    out = tmp_path_factory.mktemp("ranks")
    launch(__file__, str(out), tiny_body_path)
    return out


def test_two_process_gloo_ddp(ranks: Path) -> None:
    r0, r1 = (torch.load(ranks / f"rank{r}.pt", weights_only=False) for r in range(WORLD_SIZE))
    assert (r0["is_main"], r1["is_main"]) == (True, False)
    assert r0["module_type"] == r1["module_type"] == "DistributedDataParallel"
    assert "gloo rank 1/2" in r1["describe"]

    # identical parameters on both ranks ...
    for key in r0["state"]:
        assert torch.equal(r0["state"][key], r1["state"][key]), key
    # ... equal to one process training on the full batch (gradients are averaged over ranks)
    reference = Regressor(seed=0)
    optimizer = torch.optim.SGD(reference.parameters(), lr=LR)
    x, y = _data()
    for _ in range(STEPS):
        reference(x, y).backward()
        optimizer.step()
        optimizer.zero_grad()
    for key, value in reference.state_dict().items():
        torch.testing.assert_close(r0["state"][key], value)

    expected = [{"rank": 0, "shard": [0, 2, 4, 6]}, {"rank": 1, "shard": [1, 3, 5, 7]}]
    assert r0["gathered"] == r1["gathered"] == expected
    assert r0["from_0"] == r1["from_0"] == "hello from 0"
    assert r0["from_1"] == r1["from_1"] == "hello from 1"


def test_trainer_on_two_processes(ranks: Path, tiny_body_path: str) -> None:
    from conftest import make_sentences

    from setfit_lite import SetFitModel
    from setfit_lite.training.checkpoints import latest_checkpoint, verify_checkpoint

    eval_texts = make_sentences(10, seed=1)[0]
    r0, r1 = (torch.load(ranks / f"trainer_rank{r}.pt", weights_only=False) for r in range(2))
    assert "rank 0/2" in r0["backend"] and "rank 1/2" in r1["backend"]
    for key in r0["state"]:  # every rank ends with the same model
        assert torch.equal(r0["state"][key], r1["state"][key]), key
    np.testing.assert_array_equal(r0["proba"], r1["proba"])
    assert (r0["saved"], r1["saved"]) == (True, False)  # only rank 0 writes
    checkpoint = latest_checkpoint(ranks / "ckpt")  # one checkpoint, every rank's RNG state
    assert verify_checkpoint(checkpoint)["world_size"] == 2
    assert {"rng_rank0.json", "rng_rank1.json"} <= set(json.loads((checkpoint / "manifest.json").read_text())["files"])
    for rank, full in enumerate((r0, r1)):  # resumed from step 8 on 2 processes: the same model as uninterrupted
        resumed = torch.load(ranks / f"resumed_rank{rank}.pt", weights_only=False)
        for key in full["state"]:
            assert torch.equal(resumed["state"][key], full["state"][key]), (rank, key)
        np.testing.assert_array_equal(resumed["proba"], full["proba"])
    np.testing.assert_array_equal(SetFitModel.from_pretrained(ranks / "model").predict_proba(eval_texts), r0["proba"])
    single = train_and_report(tiny_body_path, None)
    assert r0["accuracy"] >= single["accuracy"] - 0.15, (r0["accuracy"], single["accuracy"])
    assert r0["accuracy"] >= 0.8


def one_of_two_ranks(rank: int, reported: str | None = None):
    """A CPU backend on rank ``rank`` of two, its collectives answered for the other rank: what a checkpoint save
    sees on one node of two that share no filesystem (``reported``: rank 0's broadcast message, seen by rank 1)."""
    from trainers.cpu import CpuBackend

    class OneOfTwoRanks(CpuBackend):
        def gather_object(self, obj):
            self.calls.append("gather_object")
            other = {**obj, "torch": obj["torch"].clone()}
            return [obj, other] if self.rank == 0 else [other, obj]

        def broadcast_object(self, obj, src: int = 0):
            self.calls.append("broadcast_object")
            return obj if self.rank == src else reported

        def barrier(self) -> None:
            self.calls.append("barrier")

    backend = OneOfTwoRanks(precision="fp32")
    backend.rank, backend.world_size, backend.calls = rank, WORLD_SIZE, []
    return backend


def _save(backend, output_dir: Path) -> Path:
    """One checkpoint of a small body at step 3, saved as the training loop saves it."""
    from setfit_lite import TrainingArguments
    from setfit_lite.training.callbacks import CallbackHandler
    from setfit_lite.training.interim_eval import new_stopper
    from setfit_lite.training.progress import Progress, save_checkpoint
    from setfit_lite.training.session import Session

    args = TrainingArguments(output_dir=str(output_dir), save_strategy="steps", save_steps=3)
    body = Regressor(seed=0)
    model = type("Model", (), {"model_body": body})()
    session = Session(args, backend, model, CallbackHandler([], model))
    session.state.global_step = 3
    optimizer = torch.optim.SGD(body.parameters(), lr=LR)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)
    return save_checkpoint(session, optimizer, scheduler, Progress(stopper=new_stopper(args)))


def test_rank_zero_writes_every_ranks_rng_state_without_a_shared_filesystem(tmp_path: Path) -> None:
    """Each node has its own disk: rank 0 saves the whole checkpoint (every rank's RNG state gathered to it) on its
    own, and the other ranks write nothing."""
    from setfit_lite.training.checkpoints import load_checkpoint, verify_checkpoint

    rank0 = one_of_two_ranks(0)
    final = _save(rank0, tmp_path / "node0" / "out")
    assert final == tmp_path / "node0" / "out" / "checkpoint-3"
    assert verify_checkpoint(final)["world_size"] == WORLD_SIZE
    assert sorted(p.name for p in final.glob("rng_rank*.json")) == ["rng_rank0.json", "rng_rank1.json"]
    assert torch.equal(load_checkpoint(final, 1)["rng"]["torch"], torch.get_rng_state())
    assert [p.name for p in final.parent.iterdir()] == ["checkpoint-3"]  # no staging folder left
    rank1 = one_of_two_ranks(1)
    assert _save(rank1, tmp_path / "node1" / "out") == tmp_path / "node1" / "out" / "checkpoint-3"
    assert not (tmp_path / "node1").exists()  # rank 1 wrote nothing on its disk
    assert rank1.calls == ["gather_object", "broadcast_object"]


def test_a_checkpoint_rank_zero_cannot_write_fails_every_rank_and_leaves_no_staging_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import safetensors.torch

    from setfit_lite.training.checkpoints import CheckpointError

    def disk_full(*args, **kwargs) -> None:
        raise OSError("No space left on device")

    monkeypatch.setattr(safetensors.torch, "save_model", disk_full)
    out = tmp_path / "out"
    with pytest.raises(OSError, match="No space left on device"):
        _save(one_of_two_ranks(0), out)
    assert list(out.iterdir()) == []  # the staging folder is gone
    (out / "checkpoint-3").mkdir()  # a folder of the user's where the checkpoint would go
    (out / "checkpoint-3" / "notes.txt").write_text("mine")
    with pytest.raises(CheckpointError, match="is not a setfit_lite checkpoint"):
        _save(one_of_two_ranks(0), out)
    assert [p.name for p in out.iterdir()] == ["checkpoint-3"]
    assert (out / "checkpoint-3" / "notes.txt").read_text() == "mine"
    # the other rank does not wait for a checkpoint that never comes: it fails with rank 0's reason
    with pytest.raises(CheckpointError, match="rank 0 could not save checkpoint-3: OSError: No space left"):
        _save(one_of_two_ranks(1, reported="OSError: No space left on device"), tmp_path / "node1")
    assert not (tmp_path / "node1").exists()


@pytest.fixture(scope="module")
def nodes(tmp_path_factory: pytest.TempPathFactory, tiny_body_path: str) -> Path:
    """Two torchrun agents as two nodes of one process each (static rendezvous at MASTER_ADDR:MASTER_PORT, as on
    two machines), running the Trainer part of this module's worker."""
    out = tmp_path_factory.mktemp("nodes")
    port = str(_free_port())
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    agents = [subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--nnodes", "2", "--node-rank",
                                str(node), "--nproc-per-node", "1", "--master-addr", "127.0.0.1", "--master-port",
                                port, __file__, str(out), tiny_body_path, "--trainer-only"],
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
              for node in range(2)]
    try:
        outputs = [agent.communicate(timeout=1800)[0] for agent in agents]
    finally:
        for agent in agents:
            if agent.poll() is None:
                agent.kill()
    for node, (agent, output) in enumerate(zip(agents, outputs)):
        assert agent.returncode == 0, f"node {node} failed:\n{output}"
    return out


def test_trainer_on_two_nodes(nodes: Path, ranks: Path, tiny_body_path: str) -> None:
    """Two nodes of one process each train the same model as one node of two processes, and as one process."""
    from conftest import make_sentences

    from setfit_lite import SetFitModel

    n0, n1 = (torch.load(nodes / f"trainer_rank{r}.pt", weights_only=False) for r in range(2))
    launch_env = [json.loads((nodes / f"env_rank{r}.json").read_text()) for r in range(2)]
    assert [(e["RANK"], e["GROUP_RANK"], e["LOCAL_RANK"]) for e in launch_env] == [("0", "0", "0"), ("1", "1", "0")]
    assert "rank 0/2" in n0["backend"] and "rank 1/2" in n1["backend"]
    single_node = torch.load(ranks / "trainer_rank0.pt", weights_only=False)
    for key in n0["state"]:  # identical on both nodes, and to the one-node two-process run
        assert torch.equal(n0["state"][key], n1["state"][key]), key
        assert torch.equal(n0["state"][key], single_node["state"][key]), key
    np.testing.assert_array_equal(n0["proba"], n1["proba"])
    assert (n0["saved"], n1["saved"]) == (True, False)  # only global rank 0 writes
    assert n0["accuracy"] == n1["accuracy"] == single_node["accuracy"]
    # one process: each rank's batch holds its own label-anchor rows, so a data-parallel run weighs the anchor term
    # per rank and is not bit-identical to one process; on this toy task the two agree within 2 test sentences
    single = train_and_report(tiny_body_path, None)
    assert abs(n0["accuracy"] - single["accuracy"]) <= 0.1
    eval_texts = make_sentences(10, seed=1)[0]
    np.testing.assert_array_equal(SetFitModel.from_pretrained(nodes / "model").predict_proba(eval_texts), n0["proba"])
    # each node checkpointed to its own folder, as to its own disk: node 0 holds the whole checkpoint, both ranks'
    # RNG states included, and node 1 wrote nothing
    from setfit_lite.training.checkpoints import latest_checkpoint, verify_checkpoint

    checkpoint = latest_checkpoint(nodes / "node0" / "ckpt")
    assert checkpoint is not None and verify_checkpoint(checkpoint)["world_size"] == 2
    assert all(p.name.startswith("checkpoint-") for p in (nodes / "node0" / "ckpt").iterdir())  # no staging left
    assert not (nodes / "node1").exists()


if __name__ == "__main__":
    out_dir = Path(sys.argv[1])
    if sys.argv[3:] == ["--trainer-only"]:  # one node's process in test_trainer_on_two_nodes
        launch_env = {k: os.environ.get(k) for k in ("RANK", "GROUP_RANK", "LOCAL_RANK", "WORLD_SIZE")}
        (out_dir / f"env_rank{launch_env['RANK']}.json").write_text(json.dumps(launch_env))
        # checkpoints on each node's own disk (a folder of its own): no filesystem shared between the nodes
        train_and_report(sys.argv[2], out_dir, checkpoints=out_dir / f"node{launch_env['RANK']}" / "ckpt")
        sys.exit(0)
    group_owner = backend_worker(out_dir)  # the Trainer then joins the group this backend created
    train_and_report(sys.argv[2], out_dir)
    train_and_report(sys.argv[2], out_dir, resume=out_dir / "ckpt" / "checkpoint-8")  # resumed under torchrun
    group_owner.teardown()
