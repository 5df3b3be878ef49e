"""Trust rules (issue 37), one table per class: each row is a hostile input that the one mechanism behind the rule
must handle (a foreign manifest or a symlink never deletes or writes a user's file, every config field is checked
against its graph, every parameter goes through the rule table before any work, ...)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import make_sentences

from setfit_lite.serialization import MANIFEST_NAME, MODEL_FILE_NAMES

# ------------------------------------------------------------------- 1. only setfit_lite's manifest owns files


def _foreign_manifest(folder: Path, *names: str) -> dict[str, bytes]:
    """``folder`` holding the user's files ``names`` and a ``manifest.json`` (not setfit_lite's) listing them."""
    folder.mkdir(parents=True, exist_ok=True)
    contents = {}
    for name in names:
        data = f"{name}: the user's data\n".encode()
        (folder / name).write_bytes(data)
        contents[name] = data
    (folder / MANIFEST_NAME).write_text(json.dumps({n: hashlib.sha256(d).hexdigest() for n, d in contents.items()}))
    return contents


def _save(model: Any, folder: Path) -> None:
    model.save_pretrained(folder)


def _export(model: Any, folder: Path) -> None:
    model.export_onnx(folder)


@pytest.mark.parametrize("writer", [_save, _export], ids=["save_pretrained", "export_onnx"])
def test_foreign_manifest_owns_nothing(writer: Any, tier_models: dict, tmp_path: Path) -> None:
    """A folder whose manifest.json setfit_lite did not write: saving into it would replace that manifest, the
    user's file, so it is refused before anything is written; none of the files it lists is touched."""
    folder = tmp_path / "mine"
    _foreign_manifest(folder, "survey.csv", "notes.txt")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    with pytest.raises(FileExistsError, match=f"{MANIFEST_NAME}, which setfit_lite did not write"):
        writer(tier_models["torch"], folder)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


@pytest.mark.parametrize("writer", [_save, _export], ids=["save_pretrained", "export_onnx"])
def test_a_users_file_of_a_name_the_model_writes_is_never_replaced(writer: Any, tier_models: dict,
                                                                   tmp_path: Path) -> None:
    """A folder (no manifest) holding the user's own file of a name the writer writes (README.md, config.json or
    tokenizer_config.json): the write would replace it, so it is refused, naming the file, before anything is
    written; beside files of other names the model is written and they stay."""
    writer(tier_models["torch"], tmp_path / "probe")
    written = {p.name for p in (tmp_path / "probe").iterdir() if p.is_file()}
    name = next(n for n in ("README.md", "config.json", "tokenizer_config.json") if n in written)
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / name).write_text("the user's own\n")
    (folder / "notes.txt").write_text("mine\n")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    with pytest.raises(FileExistsError, match=f"{name}, which setfit_lite did not write"):
        writer(tier_models["torch"], folder)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    (folder / name).unlink()
    writer(tier_models["torch"], folder)
    assert (folder / "notes.txt").read_text() == "mine\n" and (folder / name).read_text() != "the user's own\n"


def test_every_writer_stays_within_the_model_file_names(tier_models: dict, tmp_path: Path) -> None:
    """`check_can_update` (the commands' check before a long job) looks for the files of `MODEL_FILE_NAMES` and, in
    sub-folders, `model_file_paths`: every file a save or an export writes must be one of them, or a user's file
    of that name would be found only at the end."""
    from setfit_lite.serialization import model_file_paths

    model = tier_models["torch"]
    model.save_pretrained(tmp_path / "saved")
    model.export_onnx(tmp_path / "onnx")
    model.export_onnx(tmp_path / "int8", quantize="int8")
    model.export_static(tmp_path / "static", make_sentences(12, seed=0)[0])
    for folder in ("saved", "onnx", "int8", "static"):
        names = {p.name for p in (tmp_path / folder).iterdir() if p.is_file()}
        assert names <= MODEL_FILE_NAMES, (folder, names - MODEL_FILE_NAMES)
        paths = {p.relative_to(tmp_path / folder).as_posix() for p in (tmp_path / folder).rglob("*") if p.is_file()}
        unseen = paths - set(model_file_paths(tmp_path / folder))
        assert not unseen, (folder, unseen)


def _files(root: Path) -> dict[str, bytes | str]:
    """Every path under ``root``: a file's bytes, a link's target, or "dir"."""
    return {p.relative_to(root).as_posix(): str(p.readlink()) if p.is_symlink() else p.read_bytes() if p.is_file()
            else "dir" for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize("where", ["head/head_config.json", "1_Pooling/config.json", "head-link"])
def test_check_can_update_sees_every_path_a_save_writes(where: str, tier_models: dict, tmp_path: Path) -> None:
    """`check_can_update` (the check before a long job, and before the first of an ABSA model's two saves) refuses
    what the save refuses in sub-folders too: a user's file where the save writes the head's or a body module's
    file, a head folder that is a symbolic link; so does the save, and nothing is written."""
    from setfit_lite.serialization import check_can_update

    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine\n")
    if where == "head-link":
        (tmp_path / "other").mkdir()
        (folder / "head").symlink_to(tmp_path / "other", target_is_directory=True)
        match = "head is a symbolic link"
    else:
        (folder / where).parent.mkdir()
        (folder / where).write_text("the user's own\n")
        match = f"it holds {where}, which setfit_lite did not write"
    before = _files(tmp_path)
    for check in (check_can_update, tier_models["torch"].save_pretrained):
        with pytest.raises(FileExistsError, match=match):
            check(folder)
        assert _files(tmp_path) == before


def _link_head(tmp_path: Path, model: Any) -> tuple[Path, Path]:
    other, mine = tmp_path / "other", tmp_path / "mine"
    model.save_pretrained(other)
    model.save_pretrained(mine)
    for p in (mine / "head").iterdir():
        p.unlink()
    (mine / "head").rmdir()
    (mine / "head").symlink_to(other / "head", target_is_directory=True)
    return other, mine


def _link_body_module(tmp_path: Path, model: Any) -> tuple[Path, Path]:
    other, mine = tmp_path / "other", tmp_path / "mine"
    model.save_pretrained(other)
    mine.mkdir()
    (mine / "1_Pooling").symlink_to(other / "1_Pooling", target_is_directory=True)
    return other, mine


@pytest.mark.parametrize("layout", [_link_head, _link_body_module], ids=["head-linked", "body-module-linked"])
def test_no_save_through_a_symlinked_folder(layout: Any, tier_models: dict, tmp_path: Path) -> None:
    """A sub-folder of the target that is a symlink (to another model's folder) is refused; the other is intact."""
    model = tier_models["torch"]
    other, mine = layout(tmp_path, model)
    before = {p.relative_to(other): p.read_bytes() for p in sorted(other.rglob("*")) if p.is_file()}
    with pytest.raises(FileExistsError, match="symbolic link"):
        model.save_pretrained(mine)
    assert {p.relative_to(other): p.read_bytes() for p in sorted(other.rglob("*")) if p.is_file()} == before


@pytest.mark.parametrize("manifest", ["foreign", "none"])
def test_checkpoints_prune_only_their_own(manifest: str, tmp_path: Path) -> None:
    """Checkpoint pruning removes only folders with setfit_lite's manifest: a look-alike stays."""
    from setfit_lite.training.checkpoints import _prune

    for step in (1, 2, 3):
        folder = tmp_path / f"checkpoint-{step}"
        folder.mkdir()
        (folder / "checkpoint.json").write_text("{}")
        if manifest == "foreign":
            _foreign_manifest(folder, "results.csv")
    _prune(tmp_path, 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-1", "checkpoint-2", "checkpoint-3"]


@pytest.mark.parametrize("writer", [_save, _export], ids=["save_pretrained", "export_onnx"])
def test_a_listed_file_changed_since_is_the_users(writer: Any, tier_models: dict, tmp_path: Path) -> None:
    """A file setfit_lite's manifest lists but whose digest no longer matches (a model card edited by hand) is the
    user's: writing again is refused, naming it, before anything is written (and by `check_can_update`, the
    commands' check before a long job); the same folder unedited is written again."""
    from setfit_lite.serialization import check_can_update

    folder = tmp_path / "model"
    writer(tier_models["torch"], folder)
    writer(tier_models["torch"], folder)  # unedited: written again
    written = {p.name for p in folder.iterdir() if p.is_file()}
    name = next(n for n in ("README.md", "tokenizer_config.json") if n in written)
    (folder / name).write_text((folder / name).read_text() + "\n")
    before = {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}
    with pytest.raises(FileExistsError, match=f"it holds {name}, which changed since setfit_lite wrote"):
        check_can_update(folder)
    with pytest.raises(FileExistsError, match=f"it holds {name}, which changed since setfit_lite wrote"):
        writer(tier_models["torch"], folder)
    assert {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()} == before
    assert not [p.name for p in folder.iterdir() if p.name.startswith(".")]


# ------------------------------------------------------------------- 2. every config field checked against the graph


@pytest.fixture(scope="module")
def multi_label_onnx(tiny_body_path: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An ONNX export of a multi-label (one-vs-rest, independent sigmoids) model on the tiny body."""
    from setfit_lite import SetFitModel
    from tests.conftest import make_sentences

    texts, labels = make_sentences(12, seed=0)
    model = SetFitModel.from_pretrained(tiny_body_path, labels=["positive", "negative"],
                                        multi_target_strategy="one-vs-rest")
    head = model.new_head(2, multi_label=True)
    head.fit(model.encode(texts), np.asarray([[1, 0] if lab == "positive" else [0, 1] for lab in labels]))
    model.model_head = head
    return model.export_onnx(tmp_path_factory.mktemp("multi") / "onnx")


@pytest.mark.parametrize(("source", "edit", "field"), [
    ("single", {"max_seq_length": 2048}, "max_seq_length"),  # the tiny graph has 64 positions
    ("single", {"max_seq_length": None}, "max_seq_length"),
    ("single", {"multi_label": True}, "multi_label"),  # a softmax graph read as multi-hot
    ("multi", {"multi_label": False}, "multi_label"),  # sigmoid rows read as one label each
    ("single", {"labels": ["a", "b", "c"]}, "labels"),  # three labels on a two-column graph
], ids=["max_seq_length-2048", "max_seq_length-null", "multi_label-on-softmax", "single-label-on-sigmoid",
        "labels-width"])
def test_onnx_config_checked_against_graph(source: str, edit: dict, field: str, tier_models: dict,
                                           multi_label_onnx: Path, tmp_path: Path) -> None:
    """An edited config that its graph cannot honour is refused at load, naming the field (not at predict)."""
    import shutil

    from setfit_lite.runtime.onnx import ONNX_CONFIG_NAME, OnnxSetFitModel
    from setfit_lite.serialization import ModelFormatError, write_manifest

    folder = tmp_path / "edited"
    shutil.copytree(tier_models["folders"]["onnx"] if source == "single" else multi_label_onnx, folder)
    config = json.loads((folder / ONNX_CONFIG_NAME).read_text())
    config.update(edit)
    (folder / ONNX_CONFIG_NAME).write_text(json.dumps(config))
    write_manifest(folder)  # the files agree with the manifest: only the graph check can tell
    with pytest.raises(ModelFormatError, match=field):
        OnnxSetFitModel.load(folder)


# ------------------------------------------------------------ 3. every parameter checked by its rule before any work


@pytest.mark.parametrize(("name", "value", "error"), [
    ("max_length", -5, ValueError),
    ("max_length", "128", TypeError),
    ("max_length", 1, ValueError),
    ("multi_target_strategy", "bogus", ValueError),
    ("head_params", "C=1", TypeError),
    ("use_differentiable_head", "yes", TypeError),
    ("normalize_embeddings", 1, TypeError),
    ("device", 0, TypeError),
    ("trust_remote_code", "no", TypeError),
    ("allow_pickle", None, TypeError),
    ("chunk_overlap", -1, ValueError),
    ("long_text", "split", ValueError),
])
def test_from_pretrained_checks_every_parameter_first(name: str, value: Any, error: type, tmp_path: Path) -> None:
    """Each bad value is refused by its rule, naming the parameter, before the model is even looked for."""
    from setfit_lite import SetFitModel

    with pytest.raises(error, match=name):
        SetFitModel.from_pretrained(str(tmp_path / "no-such-model"), **{name: value})


def test_from_pretrained_caps_max_length_at_the_body(tiny_body_path: str) -> None:
    """A max_length beyond what the body reads is capped there, as the Trainer caps it (the tiny body reads 64)."""
    from setfit_lite import SetFitModel

    assert SetFitModel.from_pretrained(tiny_body_path, max_length=100_000).model_body.max_seq_length == 64


@pytest.mark.parametrize(("options", "match"), [
    (["--num-cpus", "0"], "num-cpus"),
    (["--concurrency", "0"], "concurrency"),
    (["--num-cpus", "nan"], "num-cpus"),
    (["--output", "EXISTING"], "exists"),
    (["--output", "MODEL/scores"], "inside"),
], ids=["num-cpus-0", "concurrency-0", "num-cpus-nan", "output-exists", "output-in-model"])
def test_predict_ray_checks_before_ray_starts(options: list[str], match: str, tier_models: dict, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """predict --ray: bad numbers and output paths are errors (exit 2) before Ray is started."""
    import ray

    from setfit_lite.cli import main

    def no_ray(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("Ray was started before the options were checked")

    monkeypatch.setattr(ray, "init", no_ray)
    model = tier_models["folders"]["static"]
    data = tmp_path / "texts.txt"
    data.write_text("good film\nbad film\n")
    (tmp_path / "existing").mkdir()
    swap = {"EXISTING": str(tmp_path / "existing"), "MODEL/scores": str(model / "scores")}
    options = [swap.get(o, o) for o in options]
    if "--output" not in options:
        options += ["--output", str(tmp_path / "scores")]
    try:
        code = main(["predict", str(model), str(data), "--ray", *options])
    except SystemExit as exit_:  # argparse's error for an option's value
        code = exit_.code
    assert code == 2
    assert match in capsys.readouterr().err


# -------------------------------------------------------------- 4. a Ray address is probed, with a time limit, first


def _refused_port() -> int:
    """A local TCP port that refuses connections (bound, then closed)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("given", ["cli-option", "cli-RAY_ADDRESS", "score_dataset-RAY_ADDRESS", "cli-record",
                                   "score_dataset-record"])
def test_refused_ray_address_fails_fast(given: str, tier_models: dict, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """An address that refuses connections (the option, RAY_ADDRESS, or, given neither, Ray's record of the last
    cluster started here, which a dead cluster leaves behind) ends within seconds with an error naming it, before
    ray.init (which would wait minutes there); no cluster is needed."""
    import time

    import ray

    from setfit_lite.cli import main
    from setfit_lite.integrations.ray_data import score_dataset

    def no_ray(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("ray.init was called with an address nobody answers at")

    monkeypatch.setattr(ray, "init", no_ray)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    address = f"127.0.0.1:{_refused_port()}"
    if given.endswith("RAY_ADDRESS"):
        monkeypatch.setenv("RAY_ADDRESS", address)
    elif given.endswith("record"):
        import ray._private.utils

        monkeypatch.delenv("RAY_ADDRESS", raising=False)
        monkeypatch.setattr(ray._private.utils, "read_ray_address", lambda temp_dir=None: address)
    model, data, out = tier_models["folders"]["static"], tmp_path / "texts.txt", tmp_path / "scores"
    data.write_text("good film\n")
    started = time.perf_counter()
    if given.startswith("cli"):
        code = main(["predict", str(model), str(data), "--output", str(out), "--ray",
                     *([address] if given == "cli-option" else [])])
        assert code == 2
        message = capsys.readouterr().err
    else:
        with pytest.raises(ConnectionError) as error:
            score_dataset(model, data, out)
        message = str(error.value)
    assert time.perf_counter() - started < 10
    assert address in message and "no Ray cluster answers" in message
    assert ("Ray's record" in message) == given.endswith("record")
    assert not out.exists()


@pytest.mark.parametrize(("address", "error"), [("localhost:notaport", ValueError), ("bare-host", ValueError)])
def test_ray_address_of_no_known_form(address: str, error: type) -> None:
    from setfit_lite.integrations.ray_data import check_ray_address

    with pytest.raises(error, match="not host:port"):
        check_ray_address(address)


# ------------------------------- 5. the pool is compared by normalised text, and checked before training

_VARIANTS = {
    "same": lambda t: t,
    "added-space": lambda t: " " + t.replace(" ", "  ") + " ",
    "other-case": lambda t: t.upper(),
    "full-width": lambda t: "".join(chr(ord(c) + 0xFEE0) if "a" <= c <= "z" else c for c in t),  # NFKC: the same
}


@pytest.mark.parametrize("variant", list(_VARIANTS))
def test_pool_sharing_eval_texts_refused(variant: str, tiny_body_path: str, toy_data: dict, toy_eval: dict) -> None:
    """A pool holding the eval texts, however spaced, cased or Unicode-formed, is refused (never pseudo-labelled
    and then scored on)."""
    from setfit_lite import SetFitModel, Trainer

    pool = [_VARIANTS[variant](t) for t in toy_eval["text"]]
    with pytest.raises(ValueError, match="shares"):
        Trainer(model=SetFitModel.from_pretrained(tiny_body_path), train_dataset=toy_data, eval_dataset=toy_eval,
                unlabeled_dataset=pool)


@pytest.mark.parametrize("variant", list(_VARIANTS))
def test_pool_of_training_texts_refused_before_training(variant: str, tiny_body_path: str, toy_data: dict,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A pool that is the training texts (in any spacing, case or Unicode form) leaves nothing to self-train on:
    refused when train() starts, before the body or the head is trained."""
    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    def trained(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("training started before the pool was checked")

    trainer = Trainer(model=SetFitModel.from_pretrained(tiny_body_path), train_dataset=toy_data,
                      args=TrainingArguments(self_training_rounds=1, max_steps=1, save_strategy="no"),
                      unlabeled_dataset=[_VARIANTS[variant](t) for t in toy_data["text"]])
    monkeypatch.setattr(trainer, "train_embeddings", trained)
    monkeypatch.setattr(trainer, "train_classifier", trained)
    with pytest.raises(ValueError, match="no text left"):
        trainer.train()


def test_text_key_keeps_different_texts_apart() -> None:
    from setfit_lite.data.checks import text_key

    assert text_key(" Good\tFILM ") == text_key("good film") == text_key("ｇｏｏｄ film")
    assert text_key("good film") != text_key("goodfilm")


# ------------------------------------------------------------ 6. a shrunk student keeps every setting of its teacher


@pytest.mark.parametrize(("name", "value"), [
    ("long_text", "truncate"), ("chunk_overlap", 3), ("chunk_pooling", "max"), ("prompt", "review: "),
    ("normalize_embeddings", True), ("multi_target_strategy", "one-vs-rest"),
])
def test_shrink_body_keeps_every_setting(name: str, value: Any, tiny_body_path: str) -> None:
    """shrink_body carries each setting save/load keeps; keeping every layer, the student embeds as the teacher."""
    from setfit_lite import SetFitModel
    from setfit_lite.distillation import shrink_body

    teacher = SetFitModel.from_pretrained(tiny_body_path, labels=["a", "b"], **{name: value})
    student = shrink_body(teacher, 2)  # all of the tiny body's layers
    kept = ("chunking", "prompt", "normalize_embeddings", "multi_target_strategy", "labels", "head_params")
    assert [getattr(student, k) for k in kept] == [getattr(teacher, k) for k in kept]
    long = ["good film " * 40, "bad"]  # longer than the 64 tokens the body reads
    np.testing.assert_allclose(student.encode(long), teacher.encode(long), atol=1e-5)


# ------------------------------------------------------------------------------------------- 7. the smaller ones


@pytest.mark.parametrize("tier", ["torch", "onnx", "static"])
def test_predict_proba_as_numpy_on_every_tier(tier: str, tier_models: dict) -> None:
    proba = tier_models[tier].predict_proba(["good film", "bad film"], as_numpy=True)
    assert isinstance(proba, np.ndarray) and proba.shape == (2, 2)


@pytest.mark.parametrize("threshold", [1.5, -1, float("nan"), "0.5"])
def test_coverage_accuracy_thresholds_checked(threshold: Any) -> None:
    from setfit_lite.metrics import coverage_accuracy

    with pytest.raises((TypeError, ValueError), match="threshold"):
        coverage_accuracy(np.asarray([[0.9, 0.1]]), [0], [0.5, threshold])


def test_class_without_example_warns(tiny_body_path: str, toy_data: dict) -> None:
    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    model = SetFitModel.from_pretrained(tiny_body_path, labels=["positive", "negative", "neutral"])
    trainer = Trainer(model=model, train_dataset=toy_data,
                      args=TrainingArguments(max_steps=1, save_strategy="no", batch_size=8))
    with pytest.warns(UserWarning, match="neutral"):
        trainer.train()


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_non_utf8_error_names_the_line(suffix: str, tmp_path: Path) -> None:
    from setfit_lite.data import to_labeled_data

    path = tmp_path / f"data{suffix}"
    rows = [b'{"text": "good", "label": 1}', b'{"text": "caf\xe9", "label": 0}'] if suffix == ".jsonl" \
        else [b"text,label", b"good,1", b"caf\xe9,0"]
    path.write_bytes(b"\n".join(rows) + b"\n")
    with pytest.raises(ValueError, match=f"line {len(rows)}"):
        to_labeled_data(path)


@pytest.mark.parametrize("where", ["api", "cli"])
def test_output_dir_that_is_a_file_refused_before_training(where: str, tmp_path: Path, tiny_body_path: str,
                                                           capsys: pytest.CaptureFixture) -> None:
    from setfit_lite import TrainingArguments
    from setfit_lite.cli import main

    file = tmp_path / "model.txt"
    file.write_text("the user's file")
    if where == "api":
        with pytest.raises(ValueError, match="not a folder"):
            TrainingArguments(output_dir=str(file))
    else:
        data = tmp_path / "train.jsonl"
        data.write_text("".join(json.dumps({"text": t, "label": i % 2}) + "\n" for i, t in enumerate(["a", "b"] * 4)))
        assert main(["train", str(data), "--model", tiny_body_path, "--output-dir", str(file)]) == 2
        assert "not a folder" in capsys.readouterr().err
    assert file.read_text() == "the user's file"


@pytest.mark.parametrize("change", ["other-texts", "other-labels"])
def test_resume_with_other_data_refused(change: str, tiny_body_path: str, toy_data: dict, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A checkpoint records the digest of its training data: resuming it on other texts or labels is refused
    before training."""
    from setfit_lite.checkpoint_files import CheckpointError

    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    args = TrainingArguments(output_dir=str(tmp_path), max_steps=2, save_strategy="steps", save_steps=2,
                             batch_size=8)
    Trainer(model=SetFitModel.from_pretrained(tiny_body_path), args=args, train_dataset=toy_data).train()
    other = dict(toy_data)
    if change == "other-texts":
        other["text"] = [t + " film" for t in toy_data["text"]]
    else:
        other["label"] = list(reversed(toy_data["label"]))
    trainer = Trainer(model=SetFitModel.from_pretrained(tiny_body_path), args=args, train_dataset=other)

    def trained(*a: Any, **k: Any) -> None:
        raise AssertionError("training started before the data was checked")

    monkeypatch.setattr(trainer, "train_embeddings", trained)
    with pytest.raises(CheckpointError, match="other data"):
        trainer.train(resume_from_checkpoint=True)


# ------------------------------------------------------------------ 8. loading never runs code from the folder


def _evil_module(folder: Path) -> None:
    """A module of the folder's own Python file put first in its modules.json (what sentence-transformers 5 imports
    from a local folder without asking)."""
    (folder / "evil.py").write_text("import pathlib\npathlib.Path(__file__).with_name('RAN').write_text('ran')\n"
                                    "class Evil:\n    pass\n")
    modules = json.loads((folder / "modules.json").read_text())
    (folder / "modules.json").write_text(json.dumps([{"idx": 0, "name": "evil", "path": "", "type": "evil.Evil"},
                                                     *modules]))


def _auto_map(folder: Path, sub: str = "") -> None:
    config = json.loads((folder / sub / "config.json").read_text()) if (folder / sub / "config.json").is_file() \
        else {}
    config["auto_map"] = {"AutoModel": "modeling_evil.EvilModel"}
    (folder / sub / "config.json").write_text(json.dumps(config))


def _auto_map_in_a_module(folder: Path) -> None:
    _auto_map(folder, "1_Pooling")


@pytest.mark.parametrize(("plant", "file", "match"), [
    (_evil_module, "modules.json", "names module type 'evil.Evil', which is not a class of the sentence_transformers"),
    (_auto_map, "config.json", "has an auto_map .*AutoModel"),
    (_auto_map_in_a_module, "1_Pooling/config.json", "has an auto_map .*AutoModel"),
], ids=["module-type", "auto-map", "auto-map-of-a-module"])
@pytest.mark.parametrize("kind", ["body", "saved"])
def test_a_folder_naming_code_is_refused_before_it_is_read(plant: Any, file: str, match: str, kind: str,
                                                           tier_models: dict, tiny_body_path: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder whose modules.json names a class outside sentence-transformers, or whose config.json has an
    auto_map, is refused (a ValueError naming the file) before sentence-transformers is asked to load it: only
    sentence-transformers 6 refuses such a class itself (5 imports it from a local folder's Python file)."""
    import shutil

    import sentence_transformers

    from setfit_lite import SetFitModel

    folder = tmp_path / "model"
    if kind == "body":
        shutil.copytree(tiny_body_path, folder)
    else:
        tier_models["torch"].save_pretrained(folder)
    plant(folder)

    def loaded(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("sentence-transformers was asked to load a folder that names code to run")

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", loaded)
    with pytest.raises(ValueError, match=match) as refused:
        SetFitModel.from_pretrained(folder)
    assert str(folder / file) in str(refused.value) and "trust_remote_code=True" in str(refused.value)
    assert not (folder / "RAN").exists()


def test_trust_remote_code_leaves_the_folder_to_sentence_transformers(tiny_body_path: str, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """With trust_remote_code=True the folder is not refused: sentence-transformers loads it, told to trust it."""
    import shutil

    import sentence_transformers

    from setfit_lite import SetFitModel

    folder = tmp_path / "model"
    shutil.copytree(tiny_body_path, folder)
    _evil_module(folder)
    _auto_map(folder)
    asked = []

    def loaded(*args: Any, **kwargs: Any) -> None:
        asked.append(kwargs["trust_remote_code"])
        raise RuntimeError("loaded")

    monkeypatch.setattr(sentence_transformers, "SentenceTransformer", loaded)
    with pytest.raises(RuntimeError, match="loaded"):
        SetFitModel.from_pretrained(folder, trust_remote_code=True)
    assert asked == [True]


@pytest.mark.parametrize(("kind", "refused"), [
    ("sentence_transformers.models.Transformer", False),  # the names sentence-transformers 2 to 5 write
    ("sentence_transformers.base.modules.transformer.Transformer", False),
    ("sentence_transformers_plus.Transformer", True),  # another package, whatever its name starts with
    ("modeling_custom.Transformer", True),
    (None, True),
])
def test_module_types_of_the_sentence_transformers_package_only(kind: Any, refused: bool, tmp_path: Path) -> None:
    from setfit_lite.serialization import refuse_remote_code

    (tmp_path / "modules.json").write_text(json.dumps([{"idx": 0, "name": "0", "path": "", "type": kind}]))
    if refused:
        with pytest.raises(ValueError, match=r"modules\.json names module type"):
            refuse_remote_code(tmp_path)
    else:
        refuse_remote_code(tmp_path)
    refuse_remote_code(tmp_path, trust_remote_code=True)
    (tmp_path / "modules.json").write_text(json.dumps({"type": "evil.Evil"}))
    with pytest.raises(ValueError, match=r"modules\.json must hold a list of modules"):
        refuse_remote_code(tmp_path)


def test_a_saved_model_missing_its_config_is_refused_not_loaded_as_a_body(tiny_body_path: str, toy_data: dict,
                                                                           tmp_path: Path) -> None:
    """Without config_setfit_lite.json (and its manifest) a saved folder still holds a body: it loaded as a bare
    body, its trained head silently ignored."""
    from setfit_lite import SetFitModel, Trainer, TrainingArguments
    from setfit_lite.modeling import CONFIG_NAME

    model = SetFitModel.from_pretrained(tiny_body_path)
    Trainer(model, TrainingArguments(max_steps=2, num_epochs=(1, 1), show_progress_bar=False),
            train_dataset=toy_data).train()
    model.save_pretrained(tmp_path / "saved")
    (tmp_path / "saved" / CONFIG_NAME).unlink()
    (tmp_path / "saved" / "manifest.json").unlink()
    with pytest.raises(ValueError, match="holds a setfit_lite head .* but no config_setfit_lite.json"):
        SetFitModel.from_pretrained(tmp_path / "saved")
