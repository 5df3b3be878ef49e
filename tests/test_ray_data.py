"""Corpus scoring on Ray Data (``setfit_lite.integrations.ray_data``) on a real local Ray cluster: a head and a
second node started by the test, one CPU each. Outputs are compared with single-process prediction; one test kills the
worker process of a scoring actor mid-job and checks that every row is still written exactly once."""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import make_sentences

ray = pytest.importorskip("ray", reason="ray is not installed: the Ray Data tests need pip install 'setfit_lite[ray]'")
pytest.importorskip("ray.data", reason="ray is installed without Ray Data: pip install 'ray[data]'")
pytest.importorskip("onnxruntime", reason="the ONNX tier needs onnxruntime")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from setfit_lite.cli import main  # noqa: E402
from setfit_lite.cli.inputs import load_model  # noqa: E402
from setfit_lite.integrations.ray_data import BatchScorer, read_texts, score_dataset  # noqa: E402

pytestmark = pytest.mark.ray  # a Ray cluster of its own: run apart from the other tests (scripts/test.sh)

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("torch", "transformers", "sentence_transformers")
N_ROWS = 300


class Probe(BatchScorer):
    """The scorer, also reporting its process id and which heavy modules its process has imported."""

    def __call__(self, batch):  # noqa: ANN001, ANN204 - Ray's batch
        table = super().__call__(batch)
        loaded = ",".join(name for name in HEAVY if name in sys.modules)
        return table.append_column("heavy", pa.array([loaded] * table.num_rows)).append_column(
            "pid", pa.array([os.getpid()] * table.num_rows))


ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers cannot import this test module


@pytest.fixture(scope="module")
def cluster():
    """A head and a second node on this machine (one CPU and 80 MB of object store each), and a driver on it."""
    from ray.cluster_utils import Cluster

    saved = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), saved]))  # workers import this checkout
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": 80 * 2**20})
    cluster.add_node(num_cpus=1, object_store_memory=80 * 2**20)
    cluster.wait_for_nodes()
    ray.init(address=cluster.address, log_to_driver=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        yield cluster
    finally:
        ray.shutdown()
        cluster.shutdown()
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Texts of many lengths (ONNX batches then need padding) with ids, as a JSONL file and as Parquet files of
    50 rows each."""
    texts, _ = make_sentences(N_ROWS // 2, seed=3)
    texts = [" ".join([t] + ["good", "movie"] * (i % 9)) for i, t in enumerate(texts)]
    ids = [10_000 + 7 * i for i in range(len(texts))]
    folder = tmp_path_factory.mktemp("corpus")
    with open(folder / "texts.jsonl", "w", encoding="utf-8") as handle:
        handle.writelines(json.dumps({"id": i, "text": t}) + "\n" for i, t in zip(ids, texts))
    (folder / "parquet").mkdir()
    for part, start in enumerate(range(0, len(texts), 50)):
        pq.write_table(pa.table({"id": ids[start:start + 50], "text": texts[start:start + 50]}),
                       folder / "parquet" / f"part-{part:02d}.parquet")
    return {"texts": texts, "ids": ids, "jsonl": folder / "texts.jsonl", "parquet": folder / "parquet"}


@pytest.fixture(scope="module")
def folders(tier_models: dict, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    torch_folder = tmp_path_factory.mktemp("torch_tier") / "model"
    tier_models["torch"].save_pretrained(torch_folder)
    return {**tier_models["folders"], "torch": torch_folder}


def read_output(folder: Path, key: str) -> dict[str, np.ndarray]:
    table = pq.read_table(folder).sort_by(key)
    return {name: table.column(name).to_numpy(zero_copy_only=False) for name in table.column_names}


def stacked(column: np.ndarray) -> np.ndarray:
    return np.stack(list(column)).astype(np.float32)


def test_static_tier_bit_identical_without_torch(cluster, folders, corpus, tmp_path) -> None:
    out = tmp_path / "scores.parquet"
    result = score_dataset(folders["static"], corpus["jsonl"], out, id_column="id", proba=True, batch_size=32,
                           scorer=Probe)
    model = load_model(str(folders["static"]))
    got = read_output(out, "id")
    assert result["rows"] == N_ROWS and result["tier"] == "static"
    assert got["id"].tolist() == corpus["ids"]  # every id once
    assert got["label"].tolist() == model.predict(corpus["texts"])
    assert np.array_equal(stacked(got["proba"]), model.predict_proba(corpus["texts"]))  # bit for bit
    assert set(got["heavy"]) == {""}, f"a static actor imported {set(got['heavy'])}"


def test_onnx_tier_bit_identical_without_torch(cluster, folders, corpus, tmp_path) -> None:
    """ONNX probabilities depend in their last bit on the padding of the batch a text is in (single-process
    predict gives other bits at another batch_size too): batches of one input file each are compared with
    single-process predict of each file, bit for bit; labels are compared whole."""
    out = tmp_path / "scores.parquet"
    score_dataset(folders["onnx"], corpus["parquet"], out, id_column="id", proba=True, batch_size=50,
                  model_batch_size=16, scorer=Probe)
    model = load_model(str(folders["onnx"]))
    got = read_output(out, "id")
    texts = corpus["texts"]
    expected = np.concatenate([model.predict_proba(texts[i:i + 50], batch_size=16) for i in range(0, N_ROWS, 50)])
    assert got["id"].tolist() == corpus["ids"]
    assert got["label"].tolist() == model.predict(texts)
    assert np.array_equal(stacked(got["proba"]), expected)
    assert set(got["heavy"]) == {""}, f"an ONNX actor imported {set(got['heavy'])}"


@pytest.mark.slow
def test_torch_tier_within_tolerance(cluster, folders, corpus, tmp_path) -> None:
    out = tmp_path / "scores.parquet"
    score_dataset(folders["torch"], corpus["jsonl"], out, id_column="id", proba=True, batch_size=100)
    model = load_model(str(folders["torch"]))
    got = read_output(out, "id")
    assert got["id"].tolist() == corpus["ids"]
    assert got["label"].tolist() == model.predict(corpus["texts"])
    np.testing.assert_allclose(stacked(got["proba"]), model.predict_proba(corpus["texts"]), rtol=0, atol=1e-6)


def test_killed_actor_every_row_exactly_once(cluster, folders, corpus, tmp_path) -> None:
    """kill -9 of the only scoring actor's worker process after its first batch: Ray restarts the actor and runs
    the lost batch again; the output still has each row once (row index added, as the input has no ids)."""
    pid_file = tmp_path / "pids"

    class Slow(Probe):  # a batch takes 0.2 s, so the job is still running when the actor is killed
        def __call__(self, batch):  # noqa: ANN001, ANN204
            with open(pid_file, "a") as handle:
                handle.write(f"{os.getpid()}\n")
            time.sleep(0.2)
            return super().__call__(batch)

    out = tmp_path / "scores.parquet"
    outcome: dict = {}

    def job() -> None:
        try:
            outcome["result"] = score_dataset(folders["static"], corpus["parquet"], out, proba=True, batch_size=10,
                                              concurrency=1, max_retries=2, scorer=Slow)
        except BaseException as err:  # reported by the assertion below
            outcome["error"] = err

    thread = threading.Thread(target=job)
    thread.start()
    deadline = time.monotonic() + 120
    while not (pid_file.is_file() and pid_file.read_text().strip()) and thread.is_alive():
        assert time.monotonic() < deadline, "the scoring actor never started a batch"
        time.sleep(0.05)
    killed = int(pid_file.read_text().split()[0])
    os.kill(killed, signal.SIGKILL)
    thread.join(timeout=300)
    assert "error" not in outcome, outcome.get("error")
    got = read_output(out, "row")
    pids = pid_file.read_text().split()
    print(f"killed actor pid {killed} after its first batch; batches run {len(pids)} (input {N_ROWS // 10} "
          f"batches); output rows {len(got['row'])}, distinct row ids {len(set(got['row'].tolist()))}, input rows "
          f"{N_ROWS}")
    assert any(int(pid) != killed for pid in pids), "the actor was not restarted"
    assert got["row"].tolist() == list(range(N_ROWS))  # every row exactly once
    model = load_model(str(folders["static"]))
    assert np.array_equal(stacked(got["proba"]), model.predict_proba(corpus["texts"]))  # and in input order
    assert not list(tmp_path.glob(".scores.parquet.partial-*")), "the staging folder was left behind"


def test_cli_predict_ray(cluster, folders, corpus, tmp_path, capsys) -> None:
    out = tmp_path / "cli.parquet"
    code = main(["predict", str(folders["static"]), str(corpus["jsonl"]), "--ray", cluster.address,
                 "--output", str(out), "--id-column", "id", "--proba"])
    assert code == 0, capsys.readouterr().err
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["rows"] == N_ROWS and Path(summary["output"]) == out
    got = read_output(out, "id")
    assert got["id"].tolist() == corpus["ids"]
    assert got["label"].tolist() == load_model(str(folders["static"])).predict(corpus["texts"])
    # an existing output is refused, untouched
    assert main(["predict", str(folders["static"]), str(corpus["jsonl"]), "--ray", "--output", str(out)]) == 2
    assert "exists" in capsys.readouterr().err
    assert pq.read_table(out).num_rows == N_ROWS


def test_pool_taking_every_cpu_refused(cluster, folders, corpus, tmp_path) -> None:
    """Two one-CPU actors on the two-CPU cluster would leave the read and write tasks no CPU: the job would hang."""
    with pytest.raises(ValueError, match="would hang"):
        score_dataset(folders["static"], corpus["jsonl"], tmp_path / "scores.parquet", concurrency=2, num_cpus=1)
    assert not list(tmp_path.iterdir())


def test_inputs_refused_before_any_work(tmp_path) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    (tmp_path / "b.csv").write_text("text\nx\n")
    with pytest.raises(ValueError, match="files of one kind"):
        read_texts([tmp_path / "a.txt", tmp_path / "b.csv"])
    with pytest.raises(ValueError, match="cannot tell how to read"):
        read_texts(tmp_path / "model.bin")
    existing = tmp_path / "scores.parquet"
    existing.mkdir()
    with pytest.raises(FileExistsError):
        score_dataset(tmp_path, tmp_path / "b.csv", existing)


def test_an_input_of_an_unknown_kind_is_refused_before_ray_starts(tmp_path, monkeypatch) -> None:
    from setfit_lite.integrations import ray_data

    monkeypatch.setattr(ray_data, "connect_ray", lambda *a, **k: pytest.fail("Ray started before the check"))
    (tmp_path / "model").mkdir()
    (tmp_path / "c.tsv").write_text("text\tlabel\nx\t1\n")
    with pytest.raises(ValueError, match=r"cannot tell how to read .*c\.tsv"):
        score_dataset(tmp_path / "model", tmp_path / "c.tsv", tmp_path / "scores.parquet")
    (tmp_path / "d.csv").write_text("sentence,id\nx,1\n")
    with pytest.raises(ValueError, match=r"d\.csv has no column 'text' \(columns: \['sentence', 'id'\]\)"):
        score_dataset(tmp_path / "model", tmp_path / "d.csv", tmp_path / "scores.parquet")
    (tmp_path / "e.jsonl").write_text('{"text": "x", "id": 1}\n')
    with pytest.raises(ValueError, match=r"e\.jsonl has no column 'key'.*pass id_column="):
        score_dataset(tmp_path / "model", tmp_path / "e.jsonl", tmp_path / "scores.parquet", id_column="key")
    pq.write_table(pa.table({"body": ["x"]}), tmp_path / "f.parquet")
    with pytest.raises(ValueError, match=r"f\.parquet has no column 'text'"):
        score_dataset(tmp_path / "model", tmp_path / "f.parquet", tmp_path / "scores.parquet")


def test_files_are_read_as_predict_reads_them(cluster, folders, tmp_path) -> None:
    """A folder's text files give the lines `setfit-lite predict` gives (split at newlines only, a byte-order mark
    dropped; Ray's read_text also split at form feeds and kept the mark), its sub-folders are not read (the check
    saw only the top level), and a CSV text column of numbers or "NA" stays text."""
    from setfit_lite.cli.inputs import read_texts as predict_texts

    corpus = tmp_path / "corpus"
    (corpus / "old").mkdir(parents=True)
    (corpus / "a.txt").write_bytes("\ufeffa good film\r\nform\x0cfeed and\u2028separator\n\nbad plot\n".encode())
    (corpus / "old" / "b.txt").write_text("never read\n", encoding="utf-8")
    out = tmp_path / "txt.parquet"
    score_dataset(folders["static"], corpus, out)
    model = load_model(str(folders["static"]))
    expected = list(predict_texts(str(corpus / "a.txt"), "text"))
    assert expected == ["a good film", "form\x0cfeed and\u2028separator", "bad plot"]
    got = read_output(out, "row")
    assert got["label"].tolist() == model.predict(expected)
    table = tmp_path / "numbers.csv"
    table.write_text("text\n2024\nNA\na good film\n", encoding="utf-8")
    out = tmp_path / "csv.parquet"
    score_dataset(folders["static"], table, out)
    assert read_output(out, "row")["label"].tolist() == model.predict(["2024", "NA", "a good film"])
