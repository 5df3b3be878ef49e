"""Same seed, same model, with the default number of math threads (at least 2), also across kill -9 and resume.

The suite pins one OpenMP thread (scripts/test.sh); these tests run their training in subprocesses without that
pin, where a non-deterministic parallel kernel (e.g. the backward of advanced indexing) would show.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from setfit_lite.training.checkpoints import latest_checkpoint

WORKER = Path(__file__).parent / "determinism_worker.py"


@pytest.fixture(scope="module")
def wide_body_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    from conftest import build_tiny_body

    return str(build_tiny_body(tmp_path_factory.mktemp("wide_body"), hidden_size=128))


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    return {**env, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def _worker(*args: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(WORKER), *args], env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, **kwargs)


def _finish(proc: subprocess.Popen, timeout: float = 300) -> str:
    out, _ = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, out
    return out


def test_same_seed_gives_the_same_model_with_several_threads(wide_body_path: str) -> None:
    lines = [json.loads(line) for line in _finish(_worker("repeat", wide_body_path)).splitlines()
             if line.startswith("{")]
    runs: dict[str, list[dict]] = {}
    for line in lines:
        runs.setdefault(line["config"], []).append(line)
    assert len(runs) == 6 and all(len(r) == 2 for r in runs.values()), lines
    assert all(line["threads"] >= 2 for line in lines)
    differ = [name for name, (a, b) in runs.items() if (a["body"], a["proba"]) != (b["body"], b["proba"])]
    assert not differ, f"same seed, different model for: {differ}"


def test_kill_9_and_resume_ends_with_the_uninterrupted_model(wide_body_path: str, tmp_path: Path) -> None:
    reference = _worker("train", wide_body_path, str(tmp_path / "reference"))
    killed = _worker("train", wide_body_path, str(tmp_path / "killed"), "--slow", "0.5")
    try:
        deadline = time.monotonic() + 240
        while (latest_checkpoint(tmp_path / "killed") or Path("checkpoint-0")).name in ("checkpoint-0",
                                                                                      "checkpoint-2"):
            assert killed.poll() is None, killed.communicate()[0]
            assert time.monotonic() < deadline, "no checkpoint appeared"
            time.sleep(0.1)
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=30)
    finally:
        killed.kill()
    assert killed.returncode == -signal.SIGKILL
    assert not (tmp_path / "killed" / "result.json").exists()  # it really stopped mid-run
    _finish(reference)
    _finish(_worker("train", wide_body_path, str(tmp_path / "killed"), "--resume"))
    expected = json.loads((tmp_path / "reference" / "result.json").read_text())
    resumed = json.loads((tmp_path / "killed" / "result.json").read_text())
    assert resumed["threads"] >= 2
    assert resumed == expected
