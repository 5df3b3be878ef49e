"""The ``setfit-lite`` command line: train, evaluate (saved and exported models), convert, interrupt and resume,
and quiet output (nothing from dependencies, no ``\\r`` progress bars when stderr is not a terminal)."""

from __future__ import annotations

import json
import logging
import os
import shlex
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import joblib
import numpy as np
import pytest
from conftest import make_sentences

from setfit_lite import SetFitModel, Trainer, TrainingArguments
from setfit_lite.cli import main
from setfit_lite.serialization import find_pickle_files

REPO = Path(__file__).resolve().parents[1]


def _write_jsonl(path: Path, n_per_class: int, seed: int) -> Path:
    texts, labels = make_sentences(n_per_class, seed=seed)
    path.write_text("".join(json.dumps({"text": t, "label": y, "source": "ab"[i % 2]}) + "\n"
                            for i, (t, y) in enumerate(zip(texts, labels))))
    return path


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("cli_data")
    return _write_jsonl(folder / "train.jsonl", 12, 0), _write_jsonl(folder / "eval.jsonl", 8, 1)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory, tiny_body_path: str, data: tuple[Path, Path]) -> Path:
    """A model trained by ``setfit-lite train`` (in this process)."""
    out = tmp_path_factory.mktemp("cli_model") / "model"
    assert main(["train", str(data[0]), "--model", tiny_body_path, "--output-dir", str(out), "--max-steps", "8"]) == 0
    return out


def _env() -> dict[str, str]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    return env


def _cli(*args: str, **kwargs) -> subprocess.Popen:
    """``setfit-lite ARGS`` in a child process, stdout and stderr to pipes (not a terminal)."""
    return subprocess.Popen([sys.executable, "-m", "setfit_lite.cli", *args], cwd=REPO, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kwargs)


def test_a_reader_that_closes_the_pipe_ends_predict_quietly(tmp_path: Path, trained: Path) -> None:
    """``setfit-lite predict MODEL FILE | head -1``: the reader leaves after one line; the command stops with the
    status of a SIGPIPE (141) and writes nothing on stderr (not "error: Broken pipe" and status 2)."""
    texts = tmp_path / "many.txt"
    texts.write_text("".join(f"a good and great film number {i}\n" for i in range(3000)))
    proc = _cli("predict", str(trained), str(texts))
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # the reader leaves
    err = proc.stderr.read()
    assert proc.wait(timeout=300) == 141, err
    assert json.loads(first)["label"] in ("negative", "positive") and err == ""


# ---- train / evaluate ---------------------------------------------------------------------------------------


def test_train_then_evaluate(trained: Path, data: tuple[Path, Path], capsys: pytest.CaptureFixture) -> None:
    model = SetFitModel.from_pretrained(trained)
    assert model.labels == ["negative", "positive"]
    assert model.training_info["training_args"]["max_steps"] == 8
    for metric in ("accuracy", "f1"):
        assert main(["evaluate", str(trained), str(data[1]), "--metric", metric]) == 0
        result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        assert list(result) == [metric, "calibration"] and 0.0 <= result[metric] <= 1.0
        assert set(result["calibration"]) == {"expected_calibration_error", "brier_score"}


def test_train_with_calibration_saves_the_cross_fitted_temperature(tmp_path: Path, tiny_body_path: str,
                                                                  data: tuple[Path, Path]) -> None:
    out = tmp_path / "model"
    assert main(["train", str(data[0]), "--model", tiny_body_path, "--output-dir", str(out), "--max-steps", "8",
                 "--calibration", "temperature"]) == 0
    model = SetFitModel.from_pretrained(out)
    info = model.training_info["calibration"]
    assert "cross-fitting" in info["method"] and model.calibration_temperature == info["temperature"] != 1.0


def test_evaluate_an_exported_folder(tmp_path: Path, trained: Path, data: tuple[Path, Path],
                                     capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("onnxruntime")
    exported = tmp_path / "onnx"
    assert main(["export", str(trained), str(exported)]) == 0
    capsys.readouterr()
    assert main(["evaluate", str(trained), str(data[1]), "--group-by", "source"]) == 0
    saved = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert main(["evaluate", str(exported), str(data[1]), "--group-by", "source"]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)  # stdout is one JSON object, nothing else
    assert captured.err.strip().splitlines()[0].split() == ["source", "n", "accuracy"]  # the table, on stderr
    assert result["accuracy"] == pytest.approx(saved["accuracy"]) and set(result["groups"]) == {"a", "b"}


def test_export_student_distils_a_smaller_body_and_exports_it(tmp_path: Path, trained: Path,
                                                              data: tuple[Path, Path],
                                                              capsys: pytest.CaptureFixture) -> None:
    pytest.importorskip("onnxruntime")
    teacher = tmp_path / "teacher"
    assert main(["export", str(trained), str(teacher)]) == 0
    student = tmp_path / "student"
    capsys.readouterr()
    assert main(["export", str(trained), str(student), "--student", "1", "--student-epochs", "2",
                 "--data", str(data[0]), "--unlabeled-data", str(data[1])]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    texts = len(data[0].read_text().splitlines()) + len(data[1].read_text().splitlines())
    assert result["student"] == {"layers": 1, "epochs": 2, "texts": texts, "layers_kept": [0]}
    assert (student / "model.onnx").stat().st_size < (teacher / "model.onnx").stat().st_size  # one layer of two
    model = SetFitModel.from_onnx(student)
    assert set(model.predict(["a fine film", "a dull film"])) <= set(SetFitModel.from_pretrained(trained).labels)


@pytest.mark.parametrize(("extra", "message"), [
    (["--static", "--data", "DATA"], "does not combine with --static"),
    ([], "needs texts to distil on"),
    (["--data", "DATA", "--student", "9"], "num_layers"),
    (["--unlabeled-data", "DATA", "--quantize", "int8-static"], "needs --data"),
])
def test_export_student_refuses_bad_requests_before_writing(tmp_path: Path, trained: Path,
                                                            data: tuple[Path, Path], extra: list[str],
                                                            message: str, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "student"
    args = ["export", str(trained), str(out), "--student", "1",
            *[str(data[0]) if a == "DATA" else a for a in extra]]
    assert main(args) == 2
    assert message in capsys.readouterr().err and not out.exists()


def test_export_student_epochs_needs_student(tmp_path: Path, trained: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["export", str(trained), str(tmp_path / "x"), "--student-epochs", "3"]) == 2
    assert "only with --student" in capsys.readouterr().err and not (tmp_path / "x").exists()


def test_train_refuses_a_fresh_run_over_earlier_checkpoints(tmp_path: Path, tiny_body_path: str,
                                                            data: tuple[Path, Path],
                                                            capsys: pytest.CaptureFixture) -> None:
    args = ["train", str(data[0]), "--model", tiny_body_path, "--output-dir", str(tmp_path / "m"), "--save-steps", "2",
            "--max-steps", "4"]
    assert main(args) == 0
    capsys.readouterr()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "checkpoint-4 is a checkpoint of an earlier run: add --resume" in err
    assert main(["train", "--resume", *args[1:]]) == 0  # resuming at the last step fits the head only


@pytest.mark.parametrize("command", ["train", "export", "export-static"])
def test_writers_refuse_a_users_model_named_file_before_any_work(command: str, tmp_path: Path, tiny_body_path: str,
                                                                 trained: Path, data: tuple[Path, Path],
                                                                 capsys: pytest.CaptureFixture,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """An output folder holding the user's own README.md (no setfit_lite manifest lists it): the save at the end
    would refuse to replace it, so the command refuses at once, before a model is loaded, and the folder stays."""
    out = tmp_path / "mine"
    out.mkdir()
    (out / "README.md").write_text("my notes on this folder")
    loaded = []
    monkeypatch.setattr(SetFitModel, "from_pretrained", classmethod(lambda cls, *a, **k: loaded.append(a)))
    args = {"train": ["train", str(data[0]), "--model", tiny_body_path, "--output-dir", str(out)],
            "export": ["export", str(trained), str(out)],
            "export-static": ["export", str(trained), str(out), "--static", "--data", str(data[0])]}[command]
    assert main(args) == 2
    assert "README.md, which setfit_lite did not write" in capsys.readouterr().err
    assert loaded == [] and sorted(p.name for p in out.iterdir()) == ["README.md"]
    assert (out / "README.md").read_text() == "my notes on this folder"


def test_save_steps_must_be_positive(tiny_body_path: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        main(["train", "x.jsonl", "--save-steps", "0"])
    assert "--save-steps: must be a positive integer, got 0" in capsys.readouterr().err


def test_backend_and_precision_choices_are_the_trainers_names(capsys: pytest.CaptureFixture) -> None:
    from setfit_lite.cli import build_parser

    parse = build_parser().parse_args
    assert parse(["train", "x.jsonl", "--backend", "CPU"]).backend == "cpu"
    assert parse(["train", "x.jsonl"]).backend == "auto"
    assert parse(["train", "x.jsonl", "--precision", "bf16"]).precision == "bf16"
    with pytest.raises(SystemExit):
        main(["train", "x.jsonl", "--backend", "tpu"])
    err = capsys.readouterr().err
    assert "--backend: invalid choice: 'tpu' (choose from 'auto', 'cpu', 'cuda', 'hpu', 'ipu')" in err
    with pytest.raises(SystemExit):
        main(["train", "x.jsonl", "--precision", "fp8"])
    assert "(choose from 'auto', 'fp32', 'bf16', 'fp16')" in capsys.readouterr().err


# ---- interrupt and resume -----------------------------------------------------------------------------------


def _interrupt_after_first_checkpoint(proc: subprocess.Popen, checkpoints: Path, sig: int) -> tuple[int, str]:
    deadline = time.monotonic() + 120
    while not list(checkpoints.glob("checkpoint-*/checkpoint.json")):
        assert proc.poll() is None, f"training ended before its first checkpoint: {proc.communicate()}"
        assert time.monotonic() < deadline, "no checkpoint after 120 s"
        time.sleep(0.005)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    return proc.returncode, err


def test_sigterm_checkpoints_and_resume_completes(tmp_path: Path, tiny_body_path: str,
                                                  data: tuple[Path, Path]) -> None:
    out = tmp_path / "model"
    args = ["train", str(data[0]), "--model", tiny_body_path, "--output-dir", str(out), "--save-steps", "1",
            "--max-steps", "60", "--num-epochs", "100"]
    code, err = _interrupt_after_first_checkpoint(_cli(*args), out / "checkpoints", signal.SIGTERM)
    assert code == 143, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    line = err.strip()
    assert line.startswith("setfit-lite train: interrupted by SIGTERM; checkpoint saved in ")
    saved = Path(line.split("checkpoint saved in ")[1].split(";")[0])
    assert saved.parent == out / "checkpoints" and (saved / "checkpoint.json").is_file()
    command = shlex.split(line.split("resume with: ")[1])
    assert command == ["setfit-lite", *args, "--resume"]

    resumed = _cli(*command[1:])
    stdout, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    assert json.loads(stdout)["saved_to"] == str(out)
    model = SetFitModel.from_pretrained(out)
    assert model.training_info["training_args"]["max_steps"] == 60
    assert model.predict(["good great film", "bad awful film"]) == ["positive", "negative"]


def test_sigint_checkpoints_and_exits_130(tmp_path: Path, tiny_body_path: str, data: tuple[Path, Path]) -> None:
    out = tmp_path / "model"
    code, err = _interrupt_after_first_checkpoint(
        _cli("train", str(data[0]), "--model", tiny_body_path, "--output-dir", str(out), "--save-steps", "1",
             "--max-steps", "60", "--num-epochs", "100"), out / "checkpoints", signal.SIGINT)
    assert code == 130, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("setfit-lite train: interrupted by SIGINT; checkpoint saved in ") and "--resume" in err


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_interrupt_without_saving_says_nothing_was_saved(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                         tiny_body_path: str, data: tuple[Path, Path],
                                                         capsys: pytest.CaptureFixture, sig: int, code: int) -> None:
    def interrupted_train(self, *args, **kwargs):
        os.kill(os.getpid(), sig)
        time.sleep(5)  # the handler raises before this ends
        raise AssertionError("signal not delivered")

    monkeypatch.setattr(Trainer, "train", interrupted_train)
    previous = signal.getsignal(signal.SIGTERM)
    assert main(["train", str(data[0]), "--model", tiny_body_path, "--output-dir", str(tmp_path / "m")]) == code
    err = capsys.readouterr().err
    assert err == (f"setfit-lite train: interrupted by {signal.Signals(sig).name}; nothing was saved "
                   "(train with --save-steps N to checkpoint)\n")
    assert signal.getsignal(signal.SIGTERM) is previous  # main restores the handlers it replaced
    assert not (tmp_path / "m").exists()


# ---- convert ------------------------------------------------------------------------------------------------


def _setfit_folder(folder: Path, body_path: str) -> tuple[Path, object]:
    """A folder as setfit's save_pretrained writes it: body, joblib-pickled head, config_setfit.json."""
    from sentence_transformers import SentenceTransformer
    from sklearn.linear_model import LogisticRegression

    texts, labels = make_sentences(8, seed=0)
    body = SentenceTransformer(body_path, device="cpu")
    head = LogisticRegression().fit(body.encode(texts), [int(y == "positive") for y in labels])
    body.save(str(folder))
    joblib.dump(head, folder / "model_head.pkl")
    (folder / "config_setfit.json").write_text(json.dumps({"normalize_embeddings": False,
                                                           "labels": ["negative", "positive"]}))
    return folder, head


def test_convert_a_setfit_folder(tmp_path: Path, tiny_body_path: str, capsys: pytest.CaptureFixture) -> None:
    source, head = _setfit_folder(tmp_path / "setfit", tiny_body_path)
    out = tmp_path / "converted"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["convert", str(source), str(out)]) == 0
    captured = capsys.readouterr()
    assert "warning: trusting the pickle file(s) model_head.pkl" in captured.err
    assert not [w for w in caught if "unpickling" in str(w.message)]  # said once, not again by the library
    assert json.loads(captured.out) == {"converted_to": str(out), "labels": ["negative", "positive"]}
    assert find_pickle_files(out) == []
    model = SetFitModel.from_pretrained(out)  # no allow_pickle needed any more
    texts = ["great wonderful film", "awful dull movie", "the plot"]
    expected = head.predict_proba(model.model_body.encode(texts))
    np.testing.assert_allclose(model.predict_proba(texts), expected, rtol=1e-5, atol=1e-6)


def test_convert_refuses_a_file_and_its_own_folder(tmp_path: Path, tiny_body_path: str,
                                                   capsys: pytest.CaptureFixture) -> None:
    source, _ = _setfit_folder(tmp_path / "setfit", tiny_body_path)
    target = tmp_path / "notes.txt"
    target.write_text("keep me")
    assert main(["convert", str(source), str(target)]) == 2
    assert f"{target} exists and is not a folder" in capsys.readouterr().err
    assert target.read_text() == "keep me"
    assert main(["convert", str(source), str(source)]) == 2
    assert f"the output {source} is the input {source}" in capsys.readouterr().err
    assert not (source / "config_setfit_lite.json").exists()


# ---- quiet by default ---------------------------------------------------------------------------------------


def _no_logging_configured(monkeypatch: pytest.MonkeyPatch) -> logging.Logger:
    """The root logger as in a script that configures no logging (pytest's capturing handlers off)."""
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])
    return root


def test_int8_export_prints_nothing(tmp_path: Path, trained: Path, capfd: pytest.CaptureFixture,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("onnxruntime")
    model = SetFitModel.from_pretrained(trained)
    root = _no_logging_configured(monkeypatch)
    capfd.readouterr()
    model.export_onnx(tmp_path / "int8", quantize="int8")
    assert capfd.readouterr() == ("", "")  # not onnxruntime's "Please consider to run pre-processing"
    assert root.handlers == []  # its logging.warning left no stderr handler (basicConfig)


def test_from_pretrained_and_save_pretrained_print_nothing(tmp_path: Path, trained: Path,
                                                           capfd: pytest.CaptureFixture,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """No "Loading weights" or "Writing model shards" bar from transformers."""
    _no_logging_configured(monkeypatch)
    capfd.readouterr()
    model = SetFitModel.from_pretrained(trained)
    model.save_pretrained(tmp_path / "saved")
    assert capfd.readouterr() == ("", "")


def test_training_bar_follows_the_terminal(toy_data: dict, tiny_body_path: str,
                                           capfd: pytest.CaptureFixture) -> None:
    """Even with show_progress_bar=True, no bar is drawn when stderr is not a terminal (a log file)."""
    model = SetFitModel.from_pretrained(tiny_body_path)
    capfd.readouterr()
    Trainer(model=model, train_dataset=toy_data, args=TrainingArguments(max_steps=3, show_progress_bar=True)).train()
    model.predict_proba(["good film"] * 10_000, batch_size=256)  # large enough for the automatic encoding bar
    assert "\r" not in capfd.readouterr().err


def test_cli_train_in_a_log_file_has_no_carriage_returns(tmp_path: Path, tiny_body_path: str,
                                                         data: tuple[Path, Path]) -> None:
    """With stderr to a pipe (a log file), train prints its result and nothing else: no ``\r`` progress bars."""
    proc = _cli("train", str(data[0]), "--model", tiny_body_path, "--output-dir", str(tmp_path / "m"),
                "--max-steps", "3")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert err == "" and "\r" not in out
    assert json.loads(out)["saved_to"] == str(tmp_path / "m")


def test_verbose_logs_training(tmp_path: Path, tiny_body_path: str, data: tuple[Path, Path],
                               capsys: pytest.CaptureFixture) -> None:
    assert main(["train", str(data[0]), "--model", tiny_body_path, "--output-dir", str(tmp_path / "m"),
                 "--max-steps", "3", "--verbose"]) == 0
    assert "setfit-lite: INFO: training on " in capsys.readouterr().err
    assert main(["--quiet", "train", str(data[0]), "--model", tiny_body_path, "--output-dir",
                 str(tmp_path / "m2"), "--max-steps", "3"]) == 0
    assert capsys.readouterr().err == ""


def test_eval_data_columns_never_replace_the_chosen_text_and_label(tmp_path: Path) -> None:
    """--label-column label_text on a file that also has a "label" column (and --text-column sentence beside a
    "text" column): the chosen columns are scored, the leftover ones stay extra columns."""
    import argparse

    from setfit_lite.cli.training import train_eval_rows

    rows = [{"sentence": "great film", "text": "junk", "label": 1, "label_text": "positive"},
            {"sentence": "awful plot", "text": "junk", "label": 0, "label_text": "negative"}]
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    ns = argparse.Namespace(data=str(path), eval_data=str(path), text_column="sentence", label_column="label_text",
                            shots=None, seed=0)
    train, evaluation = train_eval_rows(ns)
    assert [r["label"] for r in train] == ["positive", "negative"]
    assert evaluation is not None
    assert evaluation["text"] == ["great film", "awful plot"] and evaluation["label"] == ["positive", "negative"]


def _forbid(monkeypatch: pytest.MonkeyPatch, message: str, *targets: tuple[object, str]) -> None:
    """Each ``(owner, name)`` of ``targets`` replaced by a function failing the test with ``message``."""
    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError(message)

    for owner, name in targets:
        monkeypatch.setattr(owner, name, never)


def test_export_and_evaluate_check_their_inputs_before_the_model_loads(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        capsys: pytest.CaptureFixture) -> None:
    from setfit_lite import modeling
    from setfit_lite.cli import main

    _forbid(monkeypatch, "the model loaded before the check", (modeling.SetFitModel, "from_pretrained"),
            (modeling, "load_model_folder"))
    data = tmp_path / "d.csv"
    data.write_text("text,label\ngood,1\nbad,0\n", encoding="utf-8")
    model = str(tmp_path / "m")
    cases = [
        (["export", model, str(tmp_path / "o1"), "--static"], "export --static needs --data"),
        (["export", model, str(tmp_path / "o2"), "--static", "--data", str(tmp_path / "no.csv")], "no such file"),
        (["export", model, str(tmp_path / "o3"), "--pca-dims", "8"], "--pca-dims: not read by this export"),
        (["export", model, str(tmp_path / "o4"), "--quantize", "int8", "--data", str(data)],
         "--data: not read by this export"),
        (["export", model, str(tmp_path / "o5"), "--static", "--data", str(data), "--opset", "18"],
         "--opset: not read by this export"),
        (["evaluate", model, str(data), "--group-by", "lang"], "--group-by 'lang' is not a column"),
        (["evaluate", model, str(tmp_path / "no.csv")], "no such file"),
    ]
    for argv, words in cases:
        assert main(argv) == 2, argv
        assert words in capsys.readouterr().err, argv


def test_seed_beyond_numpy_is_an_argparse_error_naming_seed(capsys: pytest.CaptureFixture) -> None:
    """--seed takes TrainingArguments' rule, numpy's range: a larger seed is refused while parsing, naming
    --seed, before any data is sampled."""
    with pytest.raises(SystemExit):
        main(["train", "no.jsonl", "--model", "no/model", "--shots", "2", "--seed", str(2**40)])
    assert "argument --seed: must be an integer in [0, 4294967295]" in capsys.readouterr().err


def test_search_output_under_a_file_is_refused_before_anything_is_read(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture) -> None:
    """search's --output shares suggest's check of a new file: the folder it goes in must be one."""
    afile = tmp_path / "afile"
    afile.write_text("x\n")
    out = afile / "best.json"
    argv = ["search", str(tmp_path / "no.jsonl"), "--model", "no/model", "--eval-data", str(tmp_path / "no.jsonl"),
            "--output", str(out)]
    assert main(argv) == 2
    assert f"cannot write {out}: {afile} above it exists and is not a folder" in capsys.readouterr().err


def test_evaluate_refuses_a_metric_evaluate_cannot_load_before_reading_anything(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """evaluate --metric f2 predicted the whole file before evaluate.load failed on the name: the metric is loaded
    first (the Trainer's check), before the data is read or the model loads."""
    import setfit_lite.data
    from setfit_lite import modeling

    _forbid(monkeypatch, "read before the metric was checked", (setfit_lite.data, "to_labeled_data"),
            (modeling, "load_model_folder"))
    data = tmp_path / "d.csv"
    data.write_text("text,label\ngood,1\nbad,0\n", encoding="utf-8")
    assert main(["evaluate", str(tmp_path / "m"), str(data), "--metric", "f2"]) == 2
    assert "unknown metric 'f2': setfit_lite computes accuracy" in capsys.readouterr().err


def test_train_and_the_trainer_refuse_an_output_dir_under_a_file_alike(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """--output-dir and TrainingArguments.output_dir (with checkpoints on) go through one check, before the model
    loads: the same words for a folder that cannot be created."""
    afile = tmp_path / "afile"
    afile.write_text("x\n")
    monkeypatch.setattr(SetFitModel, "from_pretrained", lambda *args, **kwargs: pytest.fail("the model loaded"))
    assert main(["train", str(tmp_path / "no.jsonl"), "--model", "no/model", "--output-dir", str(afile / "m")]) == 2
    assert f"--output-dir {afile / 'm'}: cannot write there: {afile} above it exists and is not a folder" \
        in capsys.readouterr().err
    from setfit_lite.config.rules import check_writable_folder  # the Trainer's check of output_dir

    with pytest.raises(FileExistsError, match="output_dir .*: cannot write there: .* above it exists and is not a "
                                              "folder"):
        check_writable_folder("output_dir", afile / "m")


def _predicted(capsys: pytest.CaptureFixture) -> list[dict]:
    """The rows `predict` printed: JSON lines, split at \\n only (a text may hold U+2028 unescaped)."""
    return [json.loads(line) for line in capsys.readouterr().out.split("\n") if line]


def test_predict_output_says_which_input_line_each_text_is_on(trained: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture) -> None:
    """Blank lines of a text file or stdin hold no text: each output row names its input line, so the output lines
    up with the input. Lines end at \\n, \\r\\n or a bare \\r (an old Mac file was one text) and nowhere else."""
    import io

    raw = "good film\n\n   \nbad film\r\nfine plot\rlast one\u2028still\x0cthe last\n".encode()
    expected = [(1, "good film"), (4, "bad film"), (5, "fine plot"), (6, "last one\u2028still\x0cthe last")]
    (tmp_path / "texts.txt").write_bytes(raw)
    assert main(["predict", str(trained), str(tmp_path / "texts.txt")]) == 0
    assert [(row["line"], row["text"]) for row in _predicted(capsys)] == expected
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8"))
    assert main(["predict", str(trained), "-"]) == 0
    assert [(row["line"], row["text"]) for row in _predicted(capsys)] == expected
    table = tmp_path / "texts.csv"  # a CSV row's line: the header, blank lines and line breaks in cells counted
    table.write_text('text,label\ngood film,a\n\n"two\nlines",b\nbad film,\n', encoding="utf-8")
    assert main(["predict", str(trained), str(table)]) == 0
    assert [(row["line"], row["text"]) for row in _predicted(capsys)] == [(2, "good film"), (4, "two\nlines"),
                                                                          (6, "bad film")]
    array = tmp_path / "texts.json"  # rows that are not lines: no line, every row in order
    array.write_text(json.dumps([{"text": "good film"}, {"text": "bad film"}], indent=2), encoding="utf-8")
    assert main(["predict", str(trained), str(array)]) == 0
    assert [set(row) for row in _predicted(capsys)] == [{"text", "label"}] * 2


def test_predict_refuses_rows_it_would_misread_naming_the_input_and_line(trained: Path, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch,
                                                                         capsys: pytest.CaptureFixture) -> None:
    """A comma ending each CSV row predicted the labels ("1", "0") as the texts; a blank JSON text on stdin was
    "row 3"."""
    import io

    cases = [("trail.csv", "text,label\ngood film,1,\nbad film,0,\n", "trail.csv' line 2 has 3 fields")]
    for name, content, message in cases:
        (tmp_path / name).write_text(content, encoding="utf-8")
        assert main(["predict", str(trained), str(tmp_path / name)]) == 2, name
        captured = capsys.readouterr()
        assert message in captured.err and captured.out == "", captured
    stdin = b'good film\n\n{"text": "   "}\n'
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8"))
    assert main(["predict", str(trained), "-"]) == 2
    assert "<stdin> line 3: 'text' is empty or whitespace-only" in capsys.readouterr().err


def test_labelled_data_from_stdin_is_refused_in_the_command_lines_words(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        capsys: pytest.CaptureFixture) -> None:
    """``evaluate MODEL -`` said "got a str that is not a path to a .csv/.json/.jsonl/.parquet file: '-'; to pass
    texts, pass a list of strings" (the Python API's advice): stdin, and a path that is no file, are named by the
    argument that gave them, before any model loads."""
    import io

    from setfit_lite import modeling

    _forbid(monkeypatch, "the model loaded before the check", (modeling.SetFitModel, "from_pretrained"),
            (modeling, "load_model_folder"))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b'{"text": "good film", "label": 1}\n')))
    data = tmp_path / "d.csv"
    data.write_text("text,label\ngood,1\nbad,0\n", encoding="utf-8")
    stdin = "-: labelled data is read from a .csv, .json, .jsonl or .parquet file, not from stdin"
    cases = [
        (["evaluate", str(tmp_path / "m"), "-"], f"data {stdin}"),
        (["evaluate", str(tmp_path / "m"), str(tmp_path / "nosuch")], f"data {tmp_path / 'nosuch'}: no such file"),
        (["train", "-", "--model", "no/model", "--output-dir", str(tmp_path / "o1")], f"data {stdin}"),
        (["train", str(data), "--eval-data", "-", "--model", "no/model", "--output-dir", str(tmp_path / "o2")],
         f"--eval-data {stdin}"),
        (["search", str(data), "--eval-data", "-", "--model", "no/model"], f"--eval-data {stdin}"),
    ]
    for argv, words in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert words in err and "pass a list of strings" not in err, (argv, err)


def test_a_missing_column_names_its_option_and_every_column_of_the_data(trained: Path, tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture) -> None:
    """``--label-column nope`` said "no label column 'nope'; available columns: ['label']; set text_column=/
    label_column= ...": the columns less the text column, and the Python API's parameters. Every command that reads
    a column names the option, the column and every column the file has."""
    data = tmp_path / "d.csv"
    data.write_text("text,label,source\ngood film,positive,a\nbad film,negative,b\n", encoding="utf-8")
    texts = tmp_path / "texts.json"  # a JSON array of texts: no rows, so no label column
    texts.write_text('["good film", "bad film"]', encoding="utf-8")
    model, train = str(trained), ["--model", "no/model", "--output-dir", str(tmp_path / "o")]
    columns = f"is not a column of {data}; its columns: ['text', 'label', 'source']"
    cases = [
        (["evaluate", model, str(data), "--label-column", "nope"], f"--label-column 'nope' {columns}"),
        (["evaluate", model, str(data), "--text-column", "nope"], f"--text-column 'nope' {columns}"),
        (["evaluate", model, str(texts)], f"--label-column 'label': {texts} holds texts without labels"),
        (["evaluate", model, str(data), "--label-column", "text"], "--label-column 'text' is the --text-column too"),
        (["train", str(data), *train, "--label-column", "nope"], f"--label-column 'nope' {columns}"),
        (["train", str(data), *train, "--text-column", "nope"], f"--text-column 'nope' {columns}"),
        (["train", str(data), "--eval-data", str(tmp_path / "t.csv"), *train],
         f"--label-column 'label' is not a column of {tmp_path / 't.csv'}; its columns: ['text', 'source']"),
        (["search", str(data), "--eval-data", str(data), "--model", "no/model", "--label-column", "nope"],
         f"--label-column 'nope' {columns}"),
        (["suggest", model, str(data), "--k", "1", "--output", str(tmp_path / "s.jsonl"), "--text-column", "nope"],
         f"--text-column 'nope' {columns}"),
        (["predict", model, str(data), "--text-column", "nope"], f"--text-column 'nope' {columns}"),
        (["predict", model, str(data), "--ray", "--output", str(tmp_path / "p"), "--text-column", "nope"],
         f"--text-column 'nope' {columns}"),
        (["predict", model, str(data), "--ray", "--output", str(tmp_path / "p"), "--id-column", "nope"],
         f"--id-column 'nope' {columns}"),
        (["export", model, str(tmp_path / "e1"), "--static", "--data", str(data), "--text-column", "nope"],
         f"--text-column 'nope' {columns}"),
        # a label column named and absent was ignored (the model labelled the texts); the default's may be absent
        (["export", model, str(tmp_path / "e2"), "--static", "--data", str(data), "--label-column", "nope"],
         f"--label-column 'nope' {columns}"),
        (["export", model, str(tmp_path / "e3"), "--static", "--data", str(tmp_path / "t.csv"), "--label-column",
          "label"], f"--label-column 'label' is not a column of {tmp_path / 't.csv'}"),  # named, though the default
    ]
    (tmp_path / "t.csv").write_text("text,source\ngood film,a\nbad film,b\n", encoding="utf-8")
    for argv, words in cases:
        assert main(argv) == 2, argv
        captured = capsys.readouterr()
        assert words in captured.err and "_column=" not in captured.err and captured.out == "", (argv, captured)
    assert not (tmp_path / "e2").exists() and not (tmp_path / "e3").exists()
