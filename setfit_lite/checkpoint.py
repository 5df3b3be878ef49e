"""Training checkpoints that resume to the same model: atomic, checked, pickle-free.

A checkpoint is a folder ``checkpoint-<step>`` in ``args.output_dir`` holding the body's weights, the optimizer,
LR scheduler and gradient-scaler states, the sampler position, the trainer state and the RNG states of every rank
(python, numpy, torch). Tensors go to safetensors and everything else to JSON; ``checkpoint.json``, written last
with the size and SHA-256 of every file, marks it complete. It is assembled in a temporary folder and renamed
into place, so a process killed mid-write leaves no folder that :func:`latest_checkpoint` would pick.
"""

from __future__ import annotations

import json
import logging
import os
import random
import re
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from . import jsonable
from .serialization import sha256_file

logger = logging.getLogger(__name__)

PREFIX = "checkpoint-"
MANIFEST = "checkpoint.json"
FORMAT_VERSION = 1


class CheckpointError(ValueError):
    """A checkpoint folder that is incomplete, tampered with, or does not fit the model being trained."""


# ---- nested state <-> (JSON, tensors) ------------------------------------------------------------------------


def _split(obj: Any, prefix: str, tensors: dict[str, torch.Tensor]) -> Any:
    """``obj`` as JSON-serialisable data, every tensor moved (detached, on the CPU) into ``tensors``."""
    before = set(tensors)
    try:
        data = jsonable.encode(obj, tensors, tensor_types=(torch.Tensor,), name=prefix)
    except TypeError as exc:
        raise TypeError(f"cannot checkpoint the training state: {exc}") from exc
    for name in tensors.keys() - before:
        tensors[name] = tensors[name].detach().cpu().contiguous().clone()
    return data


def _join(obj: Any, tensors: dict[str, torch.Tensor]) -> Any:
    """The inverse of :func:`_split` (also reads checkpoints written before ``setfit_lite.jsonable``)."""
    return jsonable.decode(obj, tensors)


def _write_state(folder: Path, name: str, state: Any) -> None:
    tensors: dict[str, torch.Tensor] = {}
    data = _split(state, "", tensors)
    (folder / f"{name}.json").write_text(json.dumps(data), encoding="utf-8")
    if tensors:
        save_file(tensors, str(folder / f"{name}.safetensors"))


def _read_state(folder: Path, name: str) -> Any:
    data = json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))
    tensor_file = folder / f"{name}.safetensors"
    return _join(data, load_file(str(tensor_file)) if tensor_file.exists() else {})


# ---- RNG ----------------------------------------------------------------------------------------------------


def rng_state() -> dict[str, Any]:
    """The python, numpy and torch (CPU and CUDA) generator states of this process."""
    state: dict[str, Any] = {"python": random.getstate(), "numpy": np.random.get_state(),
                             "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    np.random.set_state(tuple(state["numpy"]))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


# ---- files --------------------------------------------------------------------------------------------------


def _step_of(path: Path) -> int | None:
    match = re.fullmatch(rf"{PREFIX}(\d+)", path.name)
    return int(match.group(1)) if match else None


def staging_dir(output_dir: str | os.PathLike, step: int) -> Path:
    """The temporary folder in which the checkpoint of ``step`` is assembled (shared by all ranks)."""
    return Path(output_dir) / f".tmp-{PREFIX}{step}"


def write_rank_state(folder: Path, rank: int) -> None:
    """This rank's RNG states (every rank writes its own)."""
    folder.mkdir(parents=True, exist_ok=True)
    _write_state(folder, f"rng_rank{rank}", rng_state())


def finalize_checkpoint(folder: Path, *, step: int, body: torch.nn.Module, states: dict[str, Any],
                        world_size: int, save_total_limit: int | None) -> Path:
    """Write the shared states and the manifest into ``folder``, rename it into place, prune old checkpoints."""
    from safetensors.torch import save_model

    save_model(body, str(folder / "body.safetensors"))
    for name, state in states.items():
        if state is not None:
            _write_state(folder, name, state)
    files = {p.name: {"bytes": p.stat().st_size, "sha256": sha256_file(p)} for p in sorted(folder.iterdir())}
    missing = [f"rng_rank{r}.json" for r in range(world_size) if f"rng_rank{r}.json" not in files]
    if missing:
        raise CheckpointError(f"checkpoint {folder}: missing {missing}")
    manifest = {"format_version": FORMAT_VERSION, "step": step, "world_size": world_size, "files": files}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    final = folder.parent / f"{PREFIX}{step}"
    if final.exists():
        shutil.rmtree(final)
    os.replace(folder, final)
    _prune(final.parent, save_total_limit)
    logger.info("saved checkpoint %s", final)
    return final


def _prune(output_dir: Path, limit: int | None) -> None:
    if not limit or limit < 1:
        return
    complete = sorted((p for p in output_dir.iterdir() if _step_of(p) is not None and (p / MANIFEST).exists()),
                      key=_step_of)
    for old in complete[:-limit]:
        shutil.rmtree(old, ignore_errors=True)


def verify_checkpoint(path: str | os.PathLike) -> dict[str, Any]:
    """The manifest of a complete, unmodified checkpoint; :class:`CheckpointError` naming the problem otherwise."""
    folder = Path(path)
    manifest_path = folder / MANIFEST
    if not manifest_path.is_file():
        raise CheckpointError(f"{folder} is not a complete checkpoint: no {MANIFEST} (interrupted while saving?)")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise CheckpointError(f"{manifest_path} is not valid JSON: {err}") from None
    if manifest.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(f"{manifest_path}: format_version {manifest.get('format_version')!r}, "
                              f"this version reads {FORMAT_VERSION}")
    for name, meta in manifest["files"].items():
        file = folder / name
        if not file.is_file():
            raise CheckpointError(f"checkpoint {folder}: file {name} is missing")
        if file.stat().st_size != meta["bytes"] or sha256_file(file) != meta["sha256"]:
            raise CheckpointError(f"checkpoint {folder}: file {name} is truncated or modified")
    return manifest


def latest_checkpoint(output_dir: str | os.PathLike) -> Path | None:
    """The newest complete, verified checkpoint in ``output_dir``; broken ones are skipped with a warning."""
    folder = Path(output_dir)
    if not folder.is_dir():
        return None
    candidates = sorted((p for p in folder.iterdir() if p.is_dir() and _step_of(p) is not None),
                        key=_step_of, reverse=True)
    for candidate in candidates:
        try:
            verify_checkpoint(candidate)
            return candidate
        except CheckpointError as err:
            logger.warning("skipping checkpoint: %s", err)
    return None


def resolve_checkpoint(resume_from_checkpoint: bool | str | os.PathLike, output_dir: str) -> Path:
    """The folder ``trainer.train(resume_from_checkpoint=...)`` resumes from (``True``: the latest valid one)."""
    if resume_from_checkpoint is True:
        found = latest_checkpoint(output_dir)
        if found is None:
            raise CheckpointError(f"resume_from_checkpoint=True but {output_dir!r} holds no complete checkpoint")
        return found
    if not isinstance(resume_from_checkpoint, (str, os.PathLike)):
        raise TypeError(f"resume_from_checkpoint must be True or a path, got {resume_from_checkpoint!r}")
    path = Path(resume_from_checkpoint)
    verify_checkpoint(path)
    return path


def load_checkpoint(path: Path, rank: int) -> dict[str, Any]:
    """Everything in a verified checkpoint: ``body`` tensors, the named states and this rank's RNG state."""
    manifest = verify_checkpoint(path)
    out: dict[str, Any] = {"manifest": manifest, "body": load_file(str(path / "body.safetensors"))}
    for name in manifest["files"]:
        stem = name.removesuffix(".json")
        if name.endswith(".json") and name != MANIFEST and not stem.startswith("rng_rank"):
            out[stem] = _read_state(path, stem)
    rng_name = f"rng_rank{rank}"
    if f"{rng_name}.json" not in manifest["files"]:
        raise CheckpointError(f"checkpoint {path} was written by {manifest['world_size']} process(es); "
                              f"it has no RNG state for rank {rank}")
    out["rng"] = _read_state(path, rng_name)
    return out


def new_staging_dir(output_dir: str | os.PathLike, step: int) -> Path:
    """A fresh staging folder for ``step`` (a leftover from a killed run is removed first)."""
    folder = staging_dir(output_dir, step)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder


__all__ = ["CheckpointError", "latest_checkpoint", "load_checkpoint", "resolve_checkpoint", "verify_checkpoint"]
