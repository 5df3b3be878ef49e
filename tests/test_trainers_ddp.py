"""A real 2-process gloo run on the CPU through CpuBackend (DDP, sharding, object collectives).

The test launches this file twice with torchrun's environment variables (RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR, MASTER_PORT); each process trains on its shard and saves its results.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import torch
from torch import nn

REPO = Path(__file__).resolve().parents[1]
WORLD_SIZE = 2
STEPS = 3
LR = 0.1


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


def worker(out_dir: Path) -> None:
    """One rank: DDP training on this rank's shard, collectives, results saved to ``out_dir``."""
    from trainers import get_backend

    backend = get_backend("cpu", num_threads=1, dist_timeout=120)
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
    backend.teardown()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(script: str, *args: str, timeout: int = 900) -> None:
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
            outputs.append(proc.communicate(timeout=timeout)[0])  # seconds normally; generous for loaded CI
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
    for rank, (proc, out) in enumerate(zip(procs, outputs)):
        assert proc.returncode == 0, f"rank {rank} failed:\n{out}"


def test_two_process_gloo_ddp(tmp_path: Path) -> None:
    launch(__file__, str(tmp_path))
    r0, r1 = (torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in range(WORLD_SIZE))
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


if __name__ == "__main__":
    worker(Path(sys.argv[1]))
