"""Atomic writes, JSON/safetensors helpers, pickle refusal and integrity manifests."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from setfit_lite.serialization import (
    atomic_directory,
    atomic_write_bytes,
    atomic_write_text,
    find_pickle_files,
    load_json,
    load_tensors,
    refuse_pickles,
    save_json,
    save_tensors,
    sha256_file,
    verify_manifest,
    write_manifest,
)


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


# ------------------------------------------------------------------------------------------ atomic writes


def test_atomic_directory_creates_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "model"
    with atomic_directory(target) as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".") and tmp.is_dir()
        assert not target.exists()
        (tmp / "a.txt").write_text("one")
    assert (target / "a.txt").read_text() == "one"

    with atomic_directory(target) as tmp:
        (tmp / "b.txt").write_text("two")
    assert sorted(p.name for p in target.iterdir()) == ["b.txt"]
    assert _leftovers(tmp_path) == []


def test_atomic_directory_keeps_old_target_on_error(tmp_path: Path) -> None:
    target = tmp_path / "model"
    target.mkdir()
    (target / "keep.txt").write_text("old")
    with pytest.raises(RuntimeError, match="boom"):
        with atomic_directory(target) as tmp:
            (tmp / "partial.txt").write_text("half")
            raise RuntimeError("boom")
    assert sorted(p.name for p in target.iterdir()) == ["keep.txt"]
    assert (target / "keep.txt").read_text() == "old"
    assert _leftovers(tmp_path) == []


def test_atomic_directory_error_without_previous_target(tmp_path: Path) -> None:
    with pytest.raises(KeyError):
        with atomic_directory(tmp_path / "sub" / "model"):
            raise KeyError("x")
    assert list((tmp_path / "sub").iterdir()) == []


def test_atomic_write_text_and_bytes(tmp_path: Path) -> None:
    path = tmp_path / "f.txt"
    atomic_write_text(path, "héllo")
    atomic_write_text(path, "second")
    assert path.read_text(encoding="utf-8") == "second"
    atomic_write_bytes(tmp_path / "b.bin", b"\x00\x01")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    assert _leftovers(tmp_path) == []


# ------------------------------------------------------------------------------------------------- JSON


def test_save_json_sorted_indented(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    save_json(path, {"b": 1, "a": [1, 2], "é": "ü"})
    text = path.read_text(encoding="utf-8")
    assert text == json.dumps({"a": [1, 2], "b": 1, "é": "ü"}, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    assert load_json(path, what="test config") == {"a": [1, 2], "b": 1, "é": "ü"}


def test_load_json_errors_name_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    with pytest.raises(ValueError, match=r"head config file .*missing\.json is missing"):
        load_json(missing, what="head config")
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.json is not valid JSON"):
        load_json(bad, what="model config")


# ---------------------------------------------------------------------------------------------- tensors


def test_tensors_round_trip(tmp_path: Path) -> None:
    weight = torch.randn(3, 4)
    tensors = {
        "np64": np.arange(6, dtype=np.float64).reshape(2, 3),
        "ints": np.array([0, 2, 5], dtype=np.int64),
        "torch": weight,
        "tied": weight,  # shares memory with "torch": must still save
        "view": weight[1],
    }
    path = tmp_path / "t.safetensors"
    save_tensors(path, tensors)
    loaded = load_tensors(path)
    assert set(loaded) == set(tensors)
    assert loaded["np64"].dtype == torch.float64 and np.array_equal(loaded["np64"].numpy(), tensors["np64"])
    assert loaded["ints"].dtype == torch.int64
    assert torch.equal(loaded["tied"], weight) and torch.equal(loaded["view"], weight[1])


def test_save_tensors_rejects_objects(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="'bad'"):
        save_tensors(tmp_path / "t.safetensors", {"bad": np.array([object()])})


def test_load_tensors_truncated_or_corrupt(tmp_path: Path) -> None:
    path = tmp_path / "head.safetensors"
    save_tensors(path, {"w": np.ones((16, 16))})
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 100])
    with pytest.raises(ValueError, match=r"head\.safetensors is truncated or corrupt"):
        load_tensors(path)
    path.write_bytes(b"\xff" * 8 + data[8:])  # header length field garbled
    with pytest.raises(ValueError, match=r"head\.safetensors"):
        load_tensors(path)
    path.write_bytes(data[:8] + b"{not json" + data[17:])
    with pytest.raises(ValueError, match=r"head\.safetensors"):
        load_tensors(path)
    with pytest.raises(ValueError, match=r"nothing\.safetensors is missing"):
        load_tensors(tmp_path / "nothing.safetensors")


# ---------------------------------------------------------------------------------------------- pickles


def _torch_style_bin(path: Path) -> None:
    """A zip archive laid out like torch.save output (archive/data.pkl), written without pickle."""
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
        zf.writestr("archive/version", b"3\n")


def test_find_and_refuse_pickles(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    for name in ("a.pkl", "b.pickle", "c.joblib", "d.pt", "sub/e.pth"):
        (tmp_path / name).write_bytes(b"anything")
    _torch_style_bin(tmp_path / "pytorch_model.bin")
    (tmp_path / "legacy.bin").write_bytes(b"\x80\x04\x95\x00")  # raw pickle, protocol 4
    (tmp_path / "vectors.bin").write_bytes(b"\x00\x01raw floats")  # not a pickle
    save_tensors(tmp_path / "model.safetensors", {"w": np.zeros(2)})
    (tmp_path / "config.json").write_text("{}")

    found = [p.relative_to(tmp_path).as_posix() for p in find_pickle_files(tmp_path)]
    assert found == ["a.pkl", "b.pickle", "c.joblib", "d.pt", "legacy.bin", "pytorch_model.bin", "sub/e.pth"]

    with pytest.raises(ValueError, match="allow_pickle=True") as err:
        refuse_pickles(tmp_path)
    assert "pytorch_model.bin" in str(err.value) and "sub/e.pth" in str(err.value)
    assert len(refuse_pickles(tmp_path, allow_pickle=True)) == 7


def test_refuse_pickles_clean_folder(tmp_path: Path) -> None:
    save_json(tmp_path / "config.json", {})
    assert refuse_pickles(tmp_path) == []
    assert find_pickle_files(tmp_path / "absent") == []


# --------------------------------------------------------------------------------------------- manifest


def _model_folder(root: Path) -> Path:
    (root / "head").mkdir(parents=True)
    save_tensors(root / "head" / "head.safetensors", {"w": np.arange(64, dtype=np.float32)})
    save_json(root / "config.json", {"labels": ["a", "b"]})
    return root


def test_sha256_file(tmp_path: Path) -> None:
    path = tmp_path / "x"
    path.write_bytes(b"abc" * 1000)
    assert sha256_file(path, chunk_size=7) == hashlib.sha256(b"abc" * 1000).hexdigest()


def test_manifest_round_trip_and_tampering(tmp_path: Path) -> None:
    folder = _model_folder(tmp_path / "m")
    entries = write_manifest(folder)
    assert sorted(entries) == ["config.json", "head/head.safetensors"]
    verify_manifest(folder)
    (folder / "extra.txt").write_text("not listed")  # extra files are ignored
    verify_manifest(folder)

    weights = folder / "head" / "head.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF  # tensor bytes changed: the header still parses, only the manifest notices
    weights.write_bytes(bytes(data))
    load_tensors(weights)
    with pytest.raises(ValueError, match=r"changed \(truncated or tampered\): head/head\.safetensors"):
        verify_manifest(folder)

    weights.write_bytes(bytes(data[:-10]))
    (folder / "config.json").unlink()
    with pytest.raises(ValueError, match=r"missing: config\.json.*head/head\.safetensors"):
        verify_manifest(folder)


def test_manifest_follows_symlinked_files(tmp_path: Path) -> None:
    blobs = tmp_path / "blobs"  # hub-cache layout: snapshot files are symlinks to blobs elsewhere
    blobs.mkdir()
    (blobs / "abc123").write_text('{"x": 1}')
    folder = tmp_path / "snapshot"
    folder.mkdir()
    (folder / "config.json").symlink_to(blobs / "abc123")
    write_manifest(folder)
    verify_manifest(folder)
    (blobs / "abc123").write_text('{"x": 2}')
    with pytest.raises(ValueError, match="config.json"):
        verify_manifest(folder)


def test_manifest_invalid(tmp_path: Path) -> None:
    folder = _model_folder(tmp_path / "m")
    with pytest.raises(ValueError, match=r"manifest file .*manifest\.json is missing"):
        verify_manifest(folder)
    for bad in ("../outside", "/etc/passwd", "head/../../x"):
        save_json(folder / "manifest.json", {bad: "00"})
        with pytest.raises(ValueError, match="outside the folder"):
            verify_manifest(folder)
    save_json(folder / "manifest.json", ["not", "a", "mapping"])
    with pytest.raises(ValueError, match="must map"):
        verify_manifest(folder)
