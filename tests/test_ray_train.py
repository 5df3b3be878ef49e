"""The Trainer inside Ray Train workers (``ray.train.torch.TorchTrainer``) on a local Ray cluster started here.

Two CPU workers (gloo) train the tiny model through ``setfit_lite.integrations.ray_train`` and end with the same
parameters, bit for bit, as the two-process torchrun run of tests/test_distributed.py on the same data and seed.
Only rank 0 writes the model, Ray's process group outlives the Trainer, and checkpoints reach Ray's storage.
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

ray = pytest.importorskip("ray", reason="ray is not installed: pip install 'setfit-lite[ray]'")
pytest.importorskip("ray.train.torch", reason="Ray Train is not installed: pip install 'ray[train]'")

from conftest import make_sentences  # noqa: E402
from test_distributed import TRAINER_ARGS, launch  # noqa: E402

pytestmark = pytest.mark.ray  # a Ray cluster of its own: run apart from the other tests (scripts/test.sh)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
NUM_WORKERS = 2


def ray_worker(config: dict) -> None:
    """One Ray Train worker: ``train_on_worker`` (``train_loop_per_worker``'s work), then a record of what the test
    checks."""
    import ray.train
    import torch.distributed as dist
    from safetensors.torch import save_file

    from setfit_lite.integrations.ray_train import train_on_worker
    from trainers import get_backend

    config = dict(config)
    records = Path(config.pop("record"))
    trainer = train_on_worker(config)
    context = ray.train.get_context()
    rank = context.get_world_rank()
    dist.barrier()  # Ray's group still works after the Trainer has torn its backend down
    # a group initialised by someone else, without torchrun's variables: the backend reads it from the group
    launcher_vars = {k: os.environ.pop(k) for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK") if k in os.environ}
    bare = get_backend("cpu")
    os.environ.update(launcher_vars)
    record = {
        "ray": [rank, context.get_world_size(), context.get_local_rank()],
        "backend": [trainer.backend.rank, trainer.backend.world_size, trainer.backend.local_rank],
        "describe": trainer.model.training_info["backend"],
        "writer": trainer.is_world_process_zero(),
        "group_alive": dist.is_initialized(),
        "bare_env": [bare.rank, bare.world_size, bare.dist_backend],
    }
    save_file({k: v.contiguous() for k, v in trainer.model.model_body.state_dict().items()},
              str(records / f"body_rank{rank}.safetensors"))
    (records / f"rank{rank}.json").write_text(json.dumps(record))


def _tensors(folder: Path) -> dict[str, torch.Tensor]:
    """Every tensor of every safetensors file under ``folder``, keyed by file and tensor name."""
    return {f"{path.relative_to(folder)}:{name}": tensor for path in sorted(folder.rglob("*.safetensors"))
            for name, tensor in load_file(str(path)).items()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, tiny_body_path: str) -> dict:
    """One TorchTrainer run of 2 workers on a local Ray cluster (2 CPUs) started here, and meanwhile the Trainer of
    tests/test_distributed.py on 2 processes with torchrun's environment."""
    from ray.cluster_utils import Cluster
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    out, torchrun_out = tmp_path_factory.mktemp("ray_train"), tmp_path_factory.mktemp("torchrun")
    (out / "records").mkdir()
    texts, labels = make_sentences(12, seed=0)
    config = {"model": tiny_body_path, "train_dataset": {"text": texts, "label": labels},
              "args": {**TRAINER_ARGS, "save_strategy": "steps", "save_steps": 8, "save_total_limit": None,
                       "output_dir": str(out / "ckpt")},
              "save_to": str(out / "model"), "record": str(out / "records")}
    with ThreadPoolExecutor(1) as pool:  # the torchrun processes fill the CPUs while Ray starts
        torchrun = pool.submit(launch, str(HERE / "test_distributed.py"), str(torchrun_out), tiny_body_path,
                               "--trainer-only")
        # a cluster of its own (never one already running here), which Ray Train's helpers also find (RAY_ADDRESS)
        cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": NUM_WORKERS, "object_store_memory": 80 * 2**20, "include_dashboard": False})
        env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), str(HERE), os.environ.get("PYTHONPATH")])),
               "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
               "RAY_ADDRESS": cluster.address}
        try:
            ray.init(address=cluster.address, runtime_env={"env_vars": env})
            result = TorchTrainer(ray_worker, train_loop_config=config,
                                  scaling_config=ScalingConfig(num_workers=NUM_WORKERS, use_gpu=False),
                                  run_config=RunConfig(name="setfit", storage_path=str(out / "storage"))).fit()
        finally:
            ray.shutdown()
            cluster.shutdown()
        torchrun.result()
    return {"out": out, "result": result, "torchrun": torchrun_out}


def test_ray_workers_train_bit_identical_to_torchrun(runs: dict) -> None:
    out = runs["out"]
    records = [json.loads((out / "records" / f"rank{r}.json").read_text()) for r in range(NUM_WORKERS)]
    for rank, record in enumerate(records):  # the backend took Ray's group: its rank and size
        assert record["ray"][:2] == record["backend"][:2] == [rank, NUM_WORKERS], record
        assert record["backend"][2] == record["ray"][2]
        assert f"gloo rank {rank}/{NUM_WORKERS}" in record["describe"]
    expected = _tensors(runs["torchrun"] / "model")
    assert expected and any(k.startswith("model.safetensors:") for k in expected)
    for folder in (out / "model", Path(runs["result"].checkpoint.path)):  # the saved model, Ray's copy of it
        got = _tensors(folder)
        assert got.keys() == expected.keys()
        for key, tensor in expected.items():
            assert torch.equal(got[key], tensor), key
    bodies = [load_file(str(out / "records" / f"body_rank{r}.safetensors")) for r in range(NUM_WORKERS)]
    assert bodies[0].keys() == bodies[1].keys()
    for name, tensor in bodies[0].items():  # every worker ends with the model rank 0 saved
        assert torch.equal(tensor, bodies[1][name]), name


def test_only_rank0_writes_and_ray_group_survives(runs: dict) -> None:
    from setfit_lite import SetFitModel

    out, result = runs["out"], runs["result"]
    records = [json.loads((out / "records" / f"rank{r}.json").read_text()) for r in range(NUM_WORKERS)]
    assert [r["writer"] for r in records] == [True, False]  # save_model writes on rank 0 only
    assert all(r["group_alive"] for r in records)  # the Trainer never destroyed the group Ray made
    assert [r["bare_env"] for r in records] == [[0, 2, "gloo"], [1, 2, "gloo"]]  # rank and size from the group
    texts = make_sentences(10, seed=1)[0]
    assert (SetFitModel.from_pretrained(out / "model").predict_proba(texts)
            == SetFitModel.from_pretrained(result.checkpoint.path).predict_proba(texts)).all()
    # the training checkpoint of step 8 went through ray.train.report, with the metrics logged before it
    reported = [(Path(ckpt.path), metrics) for ckpt, metrics in result.best_checkpoints]
    steps = [metrics.get("step") for _, metrics in reported]
    assert 8 in steps, reported
    step8 = reported[steps.index(8)][0]
    assert (step8 / "checkpoint.json").is_file() and (step8 / "rng_rank1.json").is_file()
    assert (out / "ckpt" / "checkpoint-8" / "checkpoint.json").is_file()  # Ray copied it; the original stays
    assert reported[-1][0].samefile(result.checkpoint.path) and reported[-1][1]["global_step"] >= 8
