"""Training checkpoints that resume to the same model: atomic, checked, pickle-free.

A checkpoint is a folder ``checkpoint-<step>`` in ``args.output_dir`` holding the body's weights, the optimizer,
LR scheduler and gradient-scaler states, the sampler position, the trainer state and the RNG states of every rank
(python, numpy, torch, and the device's through the backend). Tensors go to safetensors and everything else to
JSON; ``checkpoint.json`` says what it holds and ``manifest.json`` (the one manifest format of
`setfit_lite.serialization`) the SHA-256 of every file. It is assembled in a temporary folder and renamed
into place, so a process killed mid-write leaves no folder that `latest_checkpoint` would pick.

``checkpoint.json`` records the order of writing (``write_order``: one more than the highest of the checkpoints in
``output_dir`` when it was written). The latest checkpoint is the one written last, not the one of the highest
step: a run resumed from an earlier checkpoint writes steps that the abandoned run had written beyond it, and its
checkpoints, not the abandoned run's, are the ones to resume. Checkpoints written before ``write_order`` existed
count as written before the others, in the order of their steps.

``save_total_limit`` keeps the checkpoints written last (the one just written always among them), and removes of
the others only the files their manifest lists unchanged: a file of the user's, added or edited, stays with its
folder. A run that saves checkpoints into an ``output_dir`` holding those of an earlier run it does not resume is
refused before it trains (`check_new_run`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import re
import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load_file, save_file

from ..serialization import jsonable, load_json, owned_files, owns_folder, save_json, verify_manifest, write_manifest
from ..serialization.manifest import MANIFEST_NAME
from ..serialization.update import _stale_files
from ..serialization.validate import ModelFormatError, check_count, check_type, check_version

logger = logging.getLogger(__name__)

PREFIX = "checkpoint-"
MANIFEST = "checkpoint.json"
FORMAT_VERSION = 2  # 2: integrity in manifest.json (serialization's format); 1 listed file digests in checkpoint.json


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
    """The inverse of `_split` (also reads the older nested-dict checkpoint form)."""
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


def rng_state(device_state: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """This process's python, numpy and torch (CPU) generator states, with ``device_state``: the device's, from
    ``Backend.rng_state()`` (e.g. ``{"cuda": ...}`` or ``{"hpu": ...}``)."""
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state(),
            **(device_state or {})}


def set_rng_state(state: Mapping[str, Any]) -> None:
    """Restore the python, numpy and torch (CPU) states of `rng_state`; the device's entries are restored by
    the backend (``Backend.set_rng_state(state)``)."""
    version, internal, gauss = state["python"]
    random.setstate((version, tuple(internal), gauss))
    np.random.set_state(tuple(state["numpy"]))
    torch.set_rng_state(state["torch"])


# ---- files --------------------------------------------------------------------------------------------------


def _step_of(path: Path) -> int | None:
    match = re.fullmatch(rf"{PREFIX}(\d+)", path.name)
    return int(match.group(1)) if match else None


def staging_dir(output_dir: str | os.PathLike, step: int) -> Path:
    """The temporary folder in which the checkpoint of ``step`` is assembled (shared by all ranks)."""
    return Path(output_dir) / f".tmp-{PREFIX}{step}"


def write_rank_state(folder: Path, rank: int, device_state: Mapping[str, Any] | None = None, *,
                     state: Mapping[str, Any] | None = None) -> None:
    """The RNG states of rank ``rank``: ``state`` (one `rng_state` gathered from that rank), or this process's
    with its device's ``device_state``."""
    folder.mkdir(parents=True, exist_ok=True)
    _write_state(folder, f"rng_rank{rank}", rng_state(device_state) if state is None else state)


def finalize_checkpoint(folder: Path, *, step: int, body: torch.nn.Module, states: dict[str, Any],
                        world_size: int, save_total_limit: int | None,
                        rng_states: Sequence[Mapping[str, Any]] | None = None) -> Path:
    """Write the shared states, ``rng_states`` (every rank's `rng_state`, in rank order; None: the ranks wrote
    theirs with `write_rank_state`), ``checkpoint.json`` and the manifest into ``folder``, rename it into place,
    and keep the ``save_total_limit`` checkpoints written last, this one among them (`_prune`). On any failure
    before the rename the staging ``folder`` is removed: nothing is left half-written."""
    final = folder.parent / f"{PREFIX}{step}"
    try:
        _assemble(folder, final, step=step, body=body, states=states, world_size=world_size, rng_states=rng_states)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)  # our staging folder; the user's paths are left alone
        raise
    _prune(final, save_total_limit)
    logger.info("saved checkpoint %s", final)
    return final


def _assemble(folder: Path, final: Path, *, step: int, body: torch.nn.Module, states: dict[str, Any],
              world_size: int, rng_states: Sequence[Mapping[str, Any]] | None) -> None:
    """`finalize_checkpoint`'s writing, up to the rename of ``folder`` to ``final``."""
    from safetensors.torch import save_model

    if (final.exists() or final.is_symlink()) and not _is_checkpoint(final):
        raise CheckpointError(f"{final} exists and is not a setfit_lite checkpoint (no {MANIFEST} and manifest "
                              "setfit_lite wrote, or a symlink): refusing to replace it; move it away or choose "
                              "another output_dir")
    if final.exists() and (users := _users_files(final, _listed_files(final)[1])):
        raise CheckpointError(f"{final} holds {users}: refusing to replace the checkpoint; move them away")
    if rng_states is not None:
        if len(rng_states) != world_size:
            raise CheckpointError(f"checkpoint {folder}: {len(rng_states)} RNG states for {world_size} process(es)")
        for rank, state in enumerate(rng_states):
            write_rank_state(folder, rank, state=state)
    save_model(body, str(folder / "body.safetensors"))
    written = sorted(name for name, state in states.items() if state is not None)
    for name in written:
        _write_state(folder, name, states[name])
    missing = [f"rng_rank{r}.json" for r in range(world_size) if not (folder / f"rng_rank{r}.json").is_file()]
    if missing:
        raise CheckpointError(f"checkpoint {folder}: missing {missing}")
    write_order = 1 + max((_write_order(p) or 0 for p in _checkpoints_in(final.parent)), default=0)
    save_json(folder / MANIFEST, {"format_version": FORMAT_VERSION, "step": step, "world_size": world_size,
                                  "states": written, "write_order": write_order})
    write_manifest(folder)  # the SHA-256 of every file, checkpoint.json included
    if final.exists():  # an earlier checkpoint of this step (checked above), e.g. re-saved after a resume
        _remove_checkpoint(final)
    os.replace(folder, final)


def _is_checkpoint(folder: Path) -> bool:
    """Whether ``folder`` is a checkpoint setfit_lite wrote, which it may replace or prune: a real folder with
    ``checkpoint.json`` and setfit_lite's own manifest (`owns_folder`)."""
    return (folder / MANIFEST).is_file() and owns_folder(folder)


def _foreign_files(folder: Path) -> list[str]:
    """The files of a checkpoint folder that its manifest does not list (the user's), as relative paths."""
    owned = {*owned_files(folder), MANIFEST_NAME}
    return sorted(rel for path in folder.rglob("*") if path.is_file() or path.is_symlink()
                  if (rel := path.relative_to(folder).as_posix()) not in owned)


def _listed_files(folder: Path) -> tuple[list[str], list[str]]:
    """The files a checkpoint folder's manifest lists that are present, as relative paths: ``(unchanged,
    changed)`` since setfit_lite wrote them (`_stale_files` compares their digests). The changed ones are the
    user's now."""
    unchanged = _stale_files(folder, set())
    kept = set(unchanged)
    return unchanged, sorted(rel for rel in owned_files(folder) if (folder / rel).is_file() and rel not in kept)


def _users_files(folder: Path, changed: list[str]) -> str:
    """The files of a checkpoint folder that are the user's, in words (empty if none): those its manifest does not
    list (`_foreign_files`), and ``changed``, those it lists that changed since setfit_lite wrote them."""
    foreign = _foreign_files(folder)
    return " and ".join([*([f"{_shown(foreign)}, which setfit_lite did not write"] if foreign else []),
                         *([f"{_shown(changed)}, which changed since setfit_lite wrote them"] if changed else [])])


def _shown(names: list[str]) -> str:
    """At most five file names, then how many more."""
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def _remove_checkpoint(folder: Path) -> bool:
    """Remove the files setfit_lite wrote in a checkpoint folder that are unchanged since (`_listed_files`), then
    the folder if nothing else is left; a file of the user's (one the manifest does not list, or one changed since
    it was written) keeps it, with a warning naming the files. Returns whether the folder is gone."""
    unchanged, changed = _listed_files(folder)
    users = _users_files(folder, changed)  # before the manifest that tells them apart goes
    for rel in unchanged:
        (folder / rel).unlink(missing_ok=True)
    (folder / MANIFEST_NAME).unlink(missing_ok=True)
    for sub in sorted((p for p in folder.rglob("*") if p.is_dir() and not p.is_symlink()), reverse=True):
        with contextlib.suppress(OSError):
            sub.rmdir()  # only an empty folder goes
    with contextlib.suppress(OSError):
        folder.rmdir()
    if folder.exists():
        logger.warning("kept %s: it holds %s", folder, users or "what setfit_lite could not remove")
        return False
    return True


def _checkpoints_in(output_dir: Path) -> list[Path]:
    """The checkpoint folders setfit_lite wrote in ``output_dir`` (`_is_checkpoint`: complete or not), by step."""
    if not output_dir.is_dir():
        return []
    return sorted((p for p in output_dir.iterdir() if _step_of(p) is not None and _is_checkpoint(p)), key=_step_of)


def _write_order(folder: Path) -> int | None:
    """The ``write_order`` a checkpoint's ``checkpoint.json`` records (a positive int); 0 when it records none
    (written before the field existed); None when there is no readable ``checkpoint.json`` or its ``write_order``
    is not a positive int (a folder `verify_checkpoint` refuses)."""
    try:
        info = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict):
        return None
    order = info.get("write_order")
    if order is None:
        return 0
    return order if type(order) is int and order > 0 else None


def _written_at(folder: Path) -> tuple[int, int, int]:
    """When a checkpoint was written (its ``write_order``, then its manifest's modification time for those
    written before that field existed, then its step): the order of pruning."""
    return _write_order(folder) or 0, (folder / MANIFEST_NAME).stat().st_mtime_ns, _step_of(folder) or 0


def _prune(newest: Path, limit: int | None) -> None:
    """Keep the ``limit`` checkpoints of ``newest``'s folder written last, ``newest`` (the one just written) always
    among them, and remove the others (`_remove_checkpoint`). The order is that of writing, not of steps: a
    checkpoint of a higher step written before (beyond the step a run resumed from) goes first."""
    if not limit or limit < 1:
        return
    others = sorted((p for p in _checkpoints_in(newest.parent) if p != newest), key=_written_at)
    for old in others[:max(len(others) - (limit - 1), 0)]:
        _remove_checkpoint(old)  # the files it wrote, unchanged: a file of the user's inside stays, with its folder


def check_new_run(output_dir: str | os.PathLike, resume_from_checkpoint: Any) -> None:
    """CheckpointError, before any training, when a run that saves checkpoints into ``output_dir`` would mix them
    with those of an earlier run that it does not continue: ``output_dir`` holds checkpoints setfit_lite wrote, and
    ``resume_from_checkpoint`` is None or False (a new run) or a checkpoint outside ``output_dir`` (another run).
    ``save_total_limit`` would count them with the new run's, and ``resume_from_checkpoint=True`` would pick one of
    the earlier run's as long as the new run has saved none.

    Args:
        output_dir: The folder the run saves its checkpoints in.
        resume_from_checkpoint: As `Trainer.train` takes it.

    Raises:
        CheckpointError: ``output_dir`` holds checkpoints of another run (named, with what to do).
    """
    folder = Path(output_dir)
    if resume_from_checkpoint and not isinstance(resume_from_checkpoint, (str, os.PathLike)):
        return  # True: the latest checkpoint of output_dir; anything else `resolve_checkpoint` refuses
    resumed = Path(resume_from_checkpoint) if resume_from_checkpoint else None
    if resumed is not None and resumed.resolve().is_relative_to(folder.resolve()):
        return
    earlier = _checkpoints_in(folder)
    if not earlier:
        return
    names = _shown([p.name for p in earlier])
    if resumed is None:
        raise CheckpointError(f"output_dir {folder} holds checkpoints of an earlier run ({names}): a new run's "
                              "checkpoints would be mixed with them. Continue that run with "
                              "train(resume_from_checkpoint=True), or train into another (or an empty) output_dir "
                              "(nothing was trained)")
    raise CheckpointError(f"output_dir {folder} holds checkpoints ({names}), but the checkpoint resumed, {resumed}, "
                          "is not one of them: the resumed run's checkpoints would be mixed with those of another "
                          "run. Resume from one of them, or train into another (or an empty) output_dir (nothing "
                          "was trained)")


def verify_checkpoint(path: str | os.PathLike) -> dict[str, Any]:
    """What a complete, unmodified checkpoint holds (its ``checkpoint.json``: ``step``, ``world_size``, the
    ``states`` saved and, when it records it, the ``write_order``); `CheckpointError` naming the problem otherwise."""
    folder = Path(path)
    info_path = folder / MANIFEST
    if not info_path.is_file():
        raise CheckpointError(f"{folder} is not a complete checkpoint: no {MANIFEST} (interrupted while saving?)")
    try:
        info = load_json(info_path, what="checkpoint")
    except ValueError as err:
        raise CheckpointError(str(err)) from None
    try:
        check_version(info, "format_version", FORMAT_VERSION, info_path, oldest=FORMAT_VERSION,
                      older=" (written by an older setfit_lite: resume it with that version)")
    except ModelFormatError as err:
        raise CheckpointError(str(err)) from None
    try:
        verify_manifest(folder)
    except ValueError as err:
        raise CheckpointError(f"checkpoint {folder} is incomplete or modified: {err}") from None
    try:
        _check_info(folder, info)
    except ModelFormatError as err:
        raise CheckpointError(str(err)) from None
    return info


def _check_info(folder: Path, info: dict[str, Any]) -> None:
    """``checkpoint.json`` against the folder: ``step`` (the folder's name), ``write_order`` (a positive int,
    when recorded), ``world_size`` (one RNG state per rank) and ``states`` (each one's file present)."""
    info_path = folder / MANIFEST
    step = check_type(info, "step", info_path, int, what="an int")
    if _step_of(folder) is not None:
        check_count(info_path, "step", step, _step_of(folder), f"the folder name {folder.name!r}")
    order = info.get("write_order")
    if order is not None and (type(order) is not int or order < 1):
        raise ModelFormatError(info_path, "write_order", f"is {order!r}, not a positive int")
    world_size = check_type(info, "world_size", info_path, int, what="a positive int")
    ranks = sorted(int(p.name[len("rng_rank"):-len(".json")]) for p in folder.glob("rng_rank*.json")
                   if p.name[len("rng_rank"):-len(".json")].isdigit())
    if world_size < 1 or ranks != list(range(world_size)):
        raise ModelFormatError(info_path, "world_size", f"is {world_size!r} but the folder holds the RNG states of "
                                                        f"ranks {ranks}: the files do not match")
    states = check_type(info, "states", info_path, list, what="a list of state names")
    missing = [name for name in states if not isinstance(name, str) or not (folder / f"{name}.json").is_file()]
    if missing:
        raise ModelFormatError(info_path, "states", f"lists {missing}, which the folder has no file for")


def load_body_state(body: torch.nn.Module, tensors: Mapping[str, torch.Tensor], path: Path) -> None:
    """Load a checkpoint's body tensors into ``body``: the same tensor names (``position_ids`` buffers may be
    absent) and shapes, or a CheckpointError naming the file and the tensor."""
    expected = body.state_dict()
    file = path / "body.safetensors"
    unexpected = sorted(set(tensors) - set(expected))
    missing = [k for k in expected if k not in tensors and not k.endswith("position_ids")]
    if unexpected or missing:
        raise CheckpointError(f"{file} does not fit this model's body (missing {missing[:3]}, unexpected "
                              f"{unexpected[:3]})")
    for name, tensor in tensors.items():
        if tuple(tensor.shape) != tuple(expected[name].shape):
            raise CheckpointError(f"{file}: {name} has shape {tuple(tensor.shape)}, but this model's body has "
                                  f"{tuple(expected[name].shape)}: the checkpoint is of another model")
    body.load_state_dict(tensors, strict=False)


def latest_checkpoint(output_dir: str | os.PathLike) -> Path | None:
    """The complete, verified checkpoint in ``output_dir`` written last; broken ones are skipped with a warning.

    The order is that of writing (``write_order`` in ``checkpoint.json``), not of steps: after a run resumed from
    an earlier checkpoint, a checkpoint of a higher step that the abandoned run wrote is not the latest. Checkpoints
    that record no ``write_order`` (an older setfit_lite's) count as written before the others, by step. Folders whose
    order cannot be read (no readable ``checkpoint.json``) are tried first: each is skipped, with its warning.
    """
    folder = Path(output_dir)
    if not folder.is_dir():
        return None

    def written_last_first(path: Path) -> tuple[bool, int, int]:
        order = _write_order(path)
        return order is None, order or 0, _step_of(path) or 0

    candidates = sorted((p for p in folder.iterdir() if p.is_dir() and _step_of(p) is not None),
                        key=written_last_first, reverse=True)
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
    info = verify_checkpoint(path)
    out: dict[str, Any] = {"info": info, "body": load_file(str(path / "body.safetensors"))}
    for name in info["states"]:
        out[name] = _read_state(path, name)
    rng_name = f"rng_rank{rank}"
    if rank >= info["world_size"] or not (path / f"{rng_name}.json").is_file():
        raise CheckpointError(f"checkpoint {path} was written by {info['world_size']} process(es); "
                              f"it has no RNG state for rank {rank}")
    out["rng"] = _read_state(path, rng_name)
    return out


def data_digest(texts: list[str], labels: list[Any]) -> str:
    """The sha256 of the training texts and labels, in order: what a checkpoint records of the data it trained on."""
    import hashlib

    return hashlib.sha256(json.dumps([texts, labels], default=str, ensure_ascii=False).encode()).hexdigest()


def check_resume_data(path: Path, digest: str) -> None:
    """CheckpointError, before any training, when the checkpoint ``path`` was written training on other data than
    ``digest`` (`data_digest`) describes; checkpoints that record no digest are not checked."""
    saved = _read_state(path, "trainer_state").get("data_digest")
    if saved is not None and saved != digest:
        raise CheckpointError(f"checkpoint {path} was written training on other data (texts or labels differ): "
                              "resume it with the same training data, or start a new run in another output_dir")


def new_staging_dir(output_dir: str | os.PathLike, step: int) -> Path:
    """A fresh staging folder for ``step`` (a leftover from a killed run is removed first)."""
    folder = staging_dir(output_dir, step)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder


__all__ = ["CheckpointError", "latest_checkpoint", "load_checkpoint", "resolve_checkpoint", "verify_checkpoint"]
