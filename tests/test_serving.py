"""The prediction server (``setfit_lite.serving``, ``setfit-lite serve``) on the tiny static and ONNX tiers: answers
equal to in-process prediction (also across concurrent, batched requests), bad requests refused with JSON errors
while the server keeps serving, readiness, metrics, and a real server process stopped by SIGTERM."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from conftest import make_sentences

pytest.importorskip("fastapi", reason="the server needs the serve extra: pip install 'setfit_lite[serve]'")
pytest.importorskip("prometheus_client", reason="the server needs the serve extra: pip install 'setfit_lite[serve]'")
pytest.importorskip("onnxruntime", reason="the ONNX tier needs onnxruntime")

from fastapi.testclient import TestClient  # noqa: E402

from setfit_lite.cli import main  # noqa: E402
from setfit_lite.serving import MicroBatcher, ServeSettings, create_app  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
ROOTED_PATH = re.compile(r"(?<![\w/])/[\w.~-]")  # a rooted path (not the slash of "application/json")


@contextlib.contextmanager
def app_log() -> Iterator[list[str]]:
    """The messages (with any traceback) the serving app logs inside the block, caught on its own logger (setfit_lite's
    logger may not propagate to pytest's caplog)."""
    records: list[logging.LogRecord] = []
    handler = logging.Handler(logging.DEBUG)
    handler.emit = records.append  # type: ignore[method-assign]
    logger = logging.getLogger("setfit_lite.serving.app")
    logger.addHandler(handler)
    lines: list[str] = []
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        lines.extend(logging.Formatter().format(record) for record in records)


def assert_no_server_path(answer, *paths: Path | str) -> None:  # noqa: ANN001
    """Neither the body nor a header of ``answer`` names ``paths``, the home folder or any '/'-rooted path."""
    seen = answer.text + "\n" + "\n".join(f"{name}: {value}" for name, value in answer.headers.items())
    for path in (*map(str, paths), os.path.expanduser("~")):
        assert path not in seen, f"{path} in {seen!r}"
    assert ROOTED_PATH.search(seen) is None, seen
    assert "Traceback" not in seen and ".py" not in seen, seen


def assert_error_id(answer, log: list[str]) -> str:  # noqa: ANN001
    """The answer's ``error_id``, in its message and in exactly one line of the server's log."""
    error_id = answer.json()["error_id"]
    assert re.fullmatch(r"[0-9a-f]{12}", error_id) and f"error id {error_id}" in answer.json()["error"]
    assert len([line for line in log if f"error id {error_id}" in line]) == 1, log
    return error_id


def wait_ready(client: TestClient, timeout: float = 20.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        answer = client.get("/ready")
        if answer.status_code == 200:
            return answer.json()
        assert answer.status_code == 503 and answer.json()["status"] == "loading", answer.text
        assert time.monotonic() < deadline, "the app never became ready"
        time.sleep(0.01)


def metric(text: str, name: str) -> float:
    """The value of one sample (``name`` with its labels, as the exposition writes it) of a Prometheus page."""
    match = re.search(rf"^{re.escape(name)} (\S+)$", text, re.MULTILINE)
    assert match, f"{name} not in the metrics"
    return float(match.group(1))


def server_env() -> dict[str, str]:
    """The environment of a server process: this checkout importable, one thread per model call."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
            "OMP_NUM_THREADS": "1"}


def http_call(port: int, method: str, path: str, body: dict | None = None) -> tuple[int, str]:
    """One request on a new connection to ``127.0.0.1:port``: its status and body."""
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path, json.dumps(body) if body else None, {"content-type": "application/json"})
        answer = connection.getresponse()
        return answer.status, answer.read().decode()
    finally:
        connection.close()


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    """Polls ``condition`` until it holds, failing with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {timeout:g} s"
        time.sleep(0.02)


def start_server(folder: Path, *options: str) -> tuple[subprocess.Popen, int]:
    """``setfit-lite serve FOLDER --port 0 OPTIONS`` in a process of its own, and its port once ``/ready`` says 200
    (the caller stops it: `stop_server`)."""
    server = subprocess.Popen([sys.executable, "-m", "setfit_lite.cli", "serve", str(folder), "--port", "0", *options],
                              stderr=subprocess.PIPE, text=True, env=server_env())
    line = server.stderr.readline()
    found = re.search(r"http://127\.0\.0\.1:(\d+) ", line)
    if found is None:
        server.kill()
        line += server.stderr.read()
        server.wait()
        server.stderr.close()
        pytest.fail(f"the server did not start: {line}")
    port = int(found.group(1))

    def ready() -> bool:
        assert server.poll() is None, "the server ended before it was ready"
        try:
            return http_call(port, "GET", "/ready")[0] == 200
        except ConnectionError:
            return False

    try:
        wait_for(ready, "the server was not ready", timeout=60.0)
    except BaseException:
        stop_server(server)
        raise
    return server, port


def stop_server(server: subprocess.Popen, timeout: float = 30.0) -> int:
    """SIGTERM, and the exit status once the process has ended (killed if it has not within ``timeout``)."""
    try:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
            try:
                return server.wait(timeout)
            except subprocess.TimeoutExpired:
                server.kill()
                pytest.fail(f"the server was still running {timeout:g} s after SIGTERM")
        return server.returncode
    finally:
        server.wait()
        server.stderr.close()


def stalled_request(port: int) -> socket.socket:
    """A connection whose ``POST /predict`` sends its head and 4 of the 100 bytes it announces, then nothing more:
    returned once the server has started reading the body (its ``100 Continue`` says so)."""
    client = socket.create_connection(("127.0.0.1", port), timeout=30)
    client.sendall(b"POST /predict HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
                   b"Content-Length: 100\r\nExpect: 100-continue\r\n\r\n")
    assert client.recv(100).startswith(b"HTTP/1.1 100 "), "the server did not ask for the body"
    client.sendall(b'{"te')
    return client


def read_until_closed(client: socket.socket) -> bytes:
    """Everything the server sends on ``client`` until it closes the connection."""
    chunks = []
    while chunk := client.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


@pytest.fixture(scope="module")
def texts() -> list[str]:
    texts, _ = make_sentences(20, seed=5)
    return [" ".join([t] + ["good", "plot"] * (i % 5)) for i, t in enumerate(texts)]  # lengths vary: ONNX pads


@pytest.mark.parametrize("tier", ["static", "onnx", "openvino"])
def test_concurrent_requests_are_batched_and_answer_as_predict(tier_models: dict, texts: list[str], tier: str) -> None:
    """Requests of 1-4 texts from 8 threads at once, gathered into shared batches (max_wait_ms 30): each answer
    equals in-process predict of its texts, labels exactly and probabilities to 1e-6. OpenVINO: a batcher thread
    per stream, each with its own infer request."""
    if tier == "openvino":
        pytest.importorskip("openvino")
        from setfit_lite.runtime.onnx import OnnxSetFitModel

        folder = tier_models["folders"]["onnx"]
        model = OnnxSetFitModel.load(folder, runtime="openvino")
        settings = ServeSettings(max_batch_size=16, max_wait_ms=30.0, runtime="openvino")
    else:
        folder = tier_models["folders"][tier]
        model = tier_models[tier]
        settings = ServeSettings(max_batch_size=16, max_wait_ms=30.0)
    requests = [texts[i:i + 1 + i % 4] for i in range(0, len(texts), 3)]
    with TestClient(create_app(folder, settings)) as client:
        ready = wait_ready(client)
        assert ready["labels"] == model.labels

        def ask(batch: list[str]) -> dict:
            answer = client.post("/predict", json={"texts": batch, "probabilities": True})
            assert answer.status_code == 200, answer.text
            return answer.json()

        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(ask, requests))
        page = client.get("/metrics").text
    for batch, answer in zip(requests, answers):
        assert answer["labels"] == model.predict(batch, batch_size=64)
        assert answer["classes"] == model.labels
        np.testing.assert_allclose(answer["probabilities"], model.predict_proba(batch, batch_size=64), rtol=0,
                                   atol=1e-6)
    batches = metric(page, "setfit_lite_batch_requests_count")
    assert metric(page, "setfit_lite_batch_requests_sum") == len(requests) > batches  # some batch held several
    assert metric(page, "setfit_lite_texts_total") == sum(map(len, requests))
    assert metric(page, 'setfit_lite_requests_total{path="/predict",status="200"}') == len(requests)
    assert metric(page, "setfit_lite_queue_depth") == 0


def test_labels_only_unless_probabilities_are_asked(tier_models: dict) -> None:
    with TestClient(create_app(tier_models["static"])) as client:  # a loaded predictor, not a folder
        wait_ready(client)
        answer = client.post("/predict", json={"texts": ["a good film", "an awful plot"]}).json()
    assert answer == {"labels": tier_models["static"].predict(["a good film", "an awful plot"])}


BAD_REQUESTS = [  # (what, request keywords, status, words the error must hold)
    ("not JSON", {"content": b"{texts: [1,", "headers": {"content-type": "application/json"}}, 400, "not valid JSON"),
    ("JSON not in UTF-8", {"content": '{"texts": ["café"]}'.encode("latin-1"),
                           "headers": {"content-type": "application/json"}}, 400,
     "the body is not valid JSON: it is not UTF-8 text (invalid continuation byte at byte 15)"),
    ("not sent as JSON", {"content": b'{"texts": ["a"]}', "headers": {"content-type": "text/plain"}}, 415,
     "Content-Type: application/json"),
    ("JSON sent as text/json", {"content": b'{"texts": ["a"]}', "headers": {"content-type": "text/json"}}, 415,
     "Content-Type: application/json"),  # FastAPI parses application/json and application/*+json only
    ("JSON sent as JSON lines", {"content": b'{"texts": ["a"]}', "headers": {"content-type": "application/jsonl"}},
     415, "Content-Type: application/json"),
    ("no texts", {"json": {"probabilities": True}}, 422, "texts: Field required"),
    ("a misspelt field", {"json": {"text": ["a good film"]}}, 422, "text: Extra inputs are not permitted"),
    ("a str", {"json": {"texts": "a good film"}}, 422, "texts: Input should be a valid list"),
    ("a non-str item", {"json": {"texts": ["a good film", 3]}}, 422, "texts[1]: Input should be a valid string"),
    ("a null item", {"json": {"texts": [None]}}, 422, "texts[0]: Input should be a valid string"),
    ("an empty list", {"json": {"texts": []}}, 422, "texts: List should have at least 1 item"),
    ("a blank text", {"json": {"texts": ["good", "   "]}}, 422, "row 1: text is empty or whitespace-only"),
    ("more than max_texts", {"json": {"texts": ["good"] * 5}}, 422, "texts: List should have at most 4 items"),
    ("a text over max_text_chars", {"json": {"texts": ["good", "g" * 41]}}, 422,
     "texts[1]: String should have at most 40 characters"),
    ("probabilities not a bool", {"json": {"texts": ["good"], "probabilities": "yes"}}, 422,
     "probabilities: Input should be a valid boolean"),
    ("a list body", {"json": ["good"]}, 422, "the body: Input should be a valid dictionary"),
    ("an oversized body (Content-Length)", {"json": {"texts": ["g" * 30] * 4, "pad": "x" * 200}}, 413,
     "larger than the server's limit of 200 bytes"),
    ("an oversized body (read: chunked)", {"content": iter([b'{"texts": ["', b"g" * 300, b'"]}']),
                                           "headers": {"content-type": "application/json"}}, 413,
     "more than 200 bytes read"),
]


def test_bad_requests_get_a_json_error_and_the_server_keeps_serving(tier_models: dict) -> None:
    settings = ServeSettings(max_texts=4, max_text_chars=40, max_body_bytes=200)
    with TestClient(create_app(tier_models["folders"]["static"], settings)) as client:
        wait_ready(client)
        got = []
        for what, request, _, _ in BAD_REQUESTS:
            answer = client.post("/predict", **request)
            got.append((what, answer.status_code, answer.json()["error"]))
        good = client.post("/predict", json={"texts": ["a good film", "g" * 40, "bad", "dull"]})
        page = client.get("/metrics").text
    for (what, _, status, words), (_, got_status, error) in zip(BAD_REQUESTS, got):
        assert (got_status, words in error) == (status, True), f"{what}: {got_status} {error!r}"
    assert good.status_code == 200
    assert good.json()["labels"] == tier_models["static"].predict(["a good film", "g" * 40, "bad", "dull"])
    assert metric(page, 'setfit_lite_requests_total{path="/predict",status="413"}') == 2
    assert metric(page, 'setfit_lite_requests_total{path="/predict",status="422"}') == 11


class Gated:
    """A predictor whose first call (the warm-up) waits for ``gate``; texts holding "boom" make it raise."""

    def __init__(self, model) -> None:  # noqa: ANN001
        self.model, self.labels, self.multi_label = model, model.labels, model.multi_label
        self.gate = threading.Event()

    def class_proba(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        self.gate.wait(20)
        if any("boom" in t for t in texts):
            raise RuntimeError("the model refused a text")
        return self.model.class_proba(texts, batch_size=batch_size)

    def labels_from_proba(self, proba: np.ndarray, as_numpy: bool = False) -> list:
        return self.model.labels_from_proba(proba, as_numpy=as_numpy)


class Recording:
    """A predictor that records the ``batch_size`` of each ``class_proba`` call."""

    def __init__(self, model) -> None:  # noqa: ANN001
        self.model, self.labels, self.multi_label = model, model.labels, model.multi_label
        self.batch_sizes: list[int] = []

    def class_proba(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        self.batch_sizes.append(batch_size)
        return self.model.class_proba(texts, batch_size=batch_size)

    def labels_from_proba(self, proba: np.ndarray, as_numpy: bool = False) -> list:
        return self.model.labels_from_proba(proba, as_numpy=as_numpy)


@pytest.mark.parametrize("settings", [ServeSettings(), ServeSettings(predict_batch_size=3)])
def test_batches_run_in_passes_of_predict_batch_size(tier_models: dict, settings: ServeSettings) -> None:
    """The warm-up and every batch call class_proba with predict_batch_size (by default passes of 8 texts: a
    micro-batch sorted by length pads less in small passes), and the answers are predict's."""
    predictor = Recording(tier_models["onnx"])
    texts = ["a good film", "dull", "good plot " * 12, "bad"]
    with TestClient(create_app(predictor, settings)) as client:
        wait_ready(client)
        answer = client.post("/predict", json={"texts": texts, "probabilities": True}).json()
    assert ServeSettings().predict_batch_size == 8
    assert predictor.batch_sizes == [settings.predict_batch_size] * 2  # the warm-up, the request
    assert answer["labels"] == tier_models["onnx"].predict(texts)
    np.testing.assert_allclose(answer["probabilities"], tier_models["onnx"].predict_proba(texts), rtol=0, atol=1e-6)


def test_not_ready_until_warmed_and_a_failing_request_fails_alone(tier_models: dict) -> None:
    predictor = Gated(tier_models["static"])
    with TestClient(create_app(predictor, ServeSettings(max_wait_ms=50.0))) as client:
        assert client.get("/health").json() == {"status": "ok", "pid": os.getpid()}
        early = [client.get("/ready"), client.post("/predict", json={"texts": ["good"]})]
        predictor.gate.set()
        wait_ready(client)
        with ThreadPoolExecutor(4) as pool:  # in one batch: the bad request fails, the others are answered
            answers = list(pool.map(lambda t: client.post("/predict", json={"texts": [t]}),
                                    ["good", "boom", "awful", "fine"]))
    assert [(a.status_code, a.json()["status"]) for a in early] == [(503, "loading")] * 2
    assert [a.status_code for a in answers] == [200, 500, 200, 200]
    # the exception's text is in the server's log under the error id, not in the answer (it may name server paths)
    assert answers[1].json()["error"].startswith("prediction failed (error id ")
    assert "the model refused a text" not in answers[1].text
    assert [a.json()["labels"][0] for a in answers if a.status_code == 200] == \
        tier_models["static"].predict(["good", "awful", "fine"])


def wait_loaded(client: TestClient) -> None:
    deadline = time.monotonic() + 20
    while client.get("/ready").json()["status"] == "loading" and time.monotonic() < deadline:
        time.sleep(0.01)


def test_a_folder_that_fails_to_load_says_why(tmp_path: Path) -> None:
    """The server's log says why, under the error id /ready and /predict answer (the answers name no path)."""
    with app_log() as log, TestClient(create_app(tmp_path)) as client:  # an empty folder
        wait_loaded(client)
        ready, predict = client.get("/ready"), client.post("/predict", json={"texts": ["good"]})
        head = client.head("/ready")
    assert ready.status_code == predict.status_code == head.status_code == 503
    assert ready.json()["status"] == "failed" and predict.json()["error"].startswith("the model failed to load")
    error_id = assert_error_id(predict, log)
    assert ready.json()["error_id"] == error_id
    assert any(f"error id {error_id}" in line and f"{tmp_path} holds no model" in line for line in log), log
    # a failed load does not come back: no Retry-After promises it
    assert "retry-after" not in ready.headers and "retry-after" not in predict.headers


@pytest.mark.parametrize("folder", ["empty", "missing", "a tampered ONNX export"])
def test_a_failed_load_names_no_server_path_to_clients(tier_models: dict, tmp_path: Path, folder: str) -> None:
    """A model folder that cannot be loaded: /ready and /predict answer 503 with a generic message and an error id,
    naming neither the folder nor a file in it (the exceptions do: the server's log has them under that id)."""
    import shutil

    model_dir = tmp_path / "models" / "private-model"
    if folder == "empty":
        model_dir.mkdir(parents=True)
    elif folder == "a tampered ONNX export":
        shutil.copytree(tier_models["folders"]["onnx"], model_dir)
        (model_dir / "model.onnx").write_bytes(b"not a model")
    with app_log() as log, TestClient(create_app(model_dir)) as client:
        wait_loaded(client)
        answers = [client.get("/ready"), client.post("/predict", json={"texts": ["good"]}), client.head("/ready")]
    assert [a.status_code for a in answers] == [503] * 3
    for answer in answers[:2]:
        assert_no_server_path(answer, tmp_path, model_dir)
        assert answer.json() == {"error": f"the model failed to load (error id {answer.json()['error_id']}; the "
                                          "server's log has the details)", "error_id": answer.json()["error_id"],
                                 "status": "failed"}
    error_id = assert_error_id(answers[1], log)
    assert answers[0].json()["error_id"] == error_id
    assert any(str(model_dir) in line for line in log if f"error id {error_id}" in line), log


class Failing(Gated):
    """A predictor that loads and warms up, then fails as a broken model file would: naming the file."""

    def __init__(self, model, path: Path, where: str) -> None:  # noqa: ANN001
        super().__init__(model)
        self.gate.set()
        self.path, self.where, self.calls = path, where, 0

    def class_proba(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        self.calls += 1
        if self.where == "class_proba" and self.calls > 1:  # the first call is the warm-up
            raise FileNotFoundError(2, "No such file or directory", str(self.path))
        return super().class_proba(texts, batch_size)

    def labels_from_proba(self, proba: np.ndarray, as_numpy: bool = False) -> list:
        if self.where == "labels_from_proba":
            raise OSError(f"cannot read {self.path}")
        return super().labels_from_proba(proba, as_numpy)


@pytest.mark.parametrize("where", ["class_proba", "labels_from_proba"])
def test_a_failing_prediction_names_no_server_path_to_clients(tier_models: dict, tmp_path: Path, where: str) -> None:
    """A prediction that raises an error naming a server file (in the batcher, or after it in the route: an
    unexpected error) is a JSON 500 with a generic message and an error id; the log has the path under that id."""
    path = tmp_path / "private-model" / "model.onnx"
    with app_log() as log, TestClient(create_app(Failing(tier_models["static"], path, where)),
                                      raise_server_exceptions=False) as client:
        wait_ready(client)
        answer = client.post("/predict", json={"texts": ["good"]})
        after = client.post("/predict", json={"texts": ["bad"]})  # the server keeps serving
        page = client.get("/metrics").text
    assert answer.status_code == after.status_code == 500
    assert answer.headers["content-type"] == "application/json"
    assert_no_server_path(answer, tmp_path, path)
    error_id = assert_error_id(answer, log)
    what = "prediction failed" if where == "class_proba" else "internal server error"
    assert answer.json() == {"error": f"{what} (error id {error_id}; the server's log has the details)",
                             "error_id": error_id}
    assert any(str(path) in line for line in log if f"error id {error_id}" in line), log
    assert after.json()["error_id"] != error_id
    assert metric(page, 'setfit_lite_requests_total{path="/predict",status="500"}') == 2


def test_probes_answer_head_and_loading_says_when_to_retry(tier_models: dict) -> None:
    predictor = Gated(tier_models["static"])
    with TestClient(create_app(predictor)) as client:
        loading = client.head("/ready")
        health = client.head("/health")
        predictor.gate.set()
        wait_ready(client)
        ready = client.head("/ready")
    assert (health.status_code, loading.status_code, ready.status_code) == (200, 503, 200)
    assert loading.headers["retry-after"] == "1"


def test_a_request_larger_than_the_batch_is_one_call(tier_models: dict) -> None:
    """The settings' and the page's word: a request of more than max_batch_size texts is predicted alone, in one
    class_proba call (passes of predict_batch_size inside it)."""
    sizes: list[int] = []
    predictor = Recording(tier_models["static"])
    original = predictor.class_proba
    predictor.class_proba = lambda texts, batch_size=32: (sizes.append(len(texts)), original(texts, batch_size))[1]
    texts = ["a good film", "dull", "bad", "fine", "great"]
    with TestClient(create_app(predictor, ServeSettings(max_batch_size=2))) as client:
        wait_ready(client)
        answer = client.post("/predict", json={"texts": texts}).json()
    assert sizes == [2, 5]  # the warm-up (one full batch), the request
    assert answer["labels"] == tier_models["static"].predict(texts)


def test_batcher_limits_batches_and_close_answers_everything_queued() -> None:
    calls: list[int] = []
    started = threading.Event()

    def predict_proba(texts: list[str]) -> np.ndarray:
        calls.append(len(texts))
        started.set()
        time.sleep(0.05)
        return np.array([[float(t), 1.0] for t in texts])

    batcher = MicroBatcher(predict_proba, max_batch_size=4, max_wait_s=0.2)
    first = batcher.submit(["0"])
    started.wait(5)  # the first batch is being predicted while the others queue up
    sizes = [3, 2, 1, 9, 1]
    futures = [batcher.submit([str(k)] * size) for k, size in enumerate(sizes, 1)]
    batcher.close()
    with pytest.raises(RuntimeError, match="shutting down"):
        batcher.submit(["late"])
    assert first.result(0)[0, 0] == 0
    for k, (size, future) in enumerate(zip(sizes, futures), 1):
        assert future.result(0)[:, 0].tolist() == [float(k)] * size  # each request its own rows
    assert calls == [1, 3, 3, 9, 1]  # 3, then 2+1 (the 9 would overflow), the 9 alone, then the 1


def test_batcher_threads_run_batches_at_once_and_close_answers_everything() -> None:
    """Two batcher threads: two batches are inside predict_proba at the same time (a barrier of two lets none
    through alone), and close() answers every request queued before it."""
    barrier = threading.Barrier(2, timeout=10)

    def predict_proba(texts: list[str]) -> np.ndarray:
        barrier.wait()
        return np.array([[float(t), 1.0] for t in texts])

    batcher = MicroBatcher(predict_proba, max_batch_size=1, max_wait_s=0.0, threads=2)
    futures = [batcher.submit([str(i)]) for i in range(6)]
    batcher.close(timeout=30)
    assert [f.result(timeout=0)[0, 0] for f in futures] == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    with pytest.raises(ValueError, match="threads"):
        MicroBatcher(predict_proba, max_batch_size=1, max_wait_s=0.0, threads=0)


def test_batcher_threads_answer_every_burst_without_later_traffic() -> None:
    """Two batcher threads, each gathering with a timed wait, and bursts of requests with a pause after each: every
    request of a burst is answered before the next burst is sent (none waits for later traffic to wake a thread).
    On Python 3.10-3.12 a ``queue.SimpleQueue`` shared by two threads, one in a timed ``get``, lost wake-ups: a
    thread's 2 ms wait lasted until the next ``put``, and a burst's last requests waited for the next request
    (seen in a served benchmark as a request answered after the client's 120 s limit). ``queue.Queue`` does not."""
    rng = np.random.default_rng(0)

    def predict_proba(texts: list[str]) -> np.ndarray:
        time.sleep(float(rng.random()) * 0.001)
        return np.array([[float(t), 1.0] for t in texts])

    batcher = MicroBatcher(predict_proba, max_batch_size=20, max_wait_s=0.002, threads=2)
    try:
        deadline = time.monotonic() + 8.0
        bursts = 0
        while time.monotonic() < deadline:
            futures = []
            for i in range(int(rng.integers(1, 41))):
                futures.append(batcher.submit([str(i)]))
                if rng.random() < 0.3:
                    time.sleep(float(rng.random()) * 0.0005)
            for i, future in enumerate(futures):
                assert future.result(timeout=2.0)[0, 0] == i, f"burst {bursts}: request {i} not answered"
            bursts += 1
    finally:
        batcher.close(timeout=5)
    assert bursts > 100


def test_settings_are_checked(capsys: pytest.CaptureFixture) -> None:
    for bad, error in (({"max_batch_size": 0}, ValueError), ({"max_wait_ms": -1}, ValueError),
                       ({"port": 70000}, ValueError), ({"workers": 1.5}, TypeError), ({"host": ""}, ValueError),
                       ({"max_body_bytes": 10}, ValueError), ({"max_texts": True}, TypeError)):
        with pytest.raises(error, match=f"ServeSettings {next(iter(bad))} must be"):
            ServeSettings(**bad)
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", "model", "--max-text-chars", "0"])
    assert exit_info.value.code == 2
    assert "--max-text-chars: must be a positive integer" in capsys.readouterr().err


def test_the_start_line_brackets_an_ipv6_address() -> None:
    from setfit_lite.cli.commands.serve import server_url

    assert server_url("::1", 8000) == "http://[::1]:8000"
    assert server_url("127.0.0.1", 0) == "http://127.0.0.1:0"


def test_cli_refuses_a_folder_without_a_model_before_listening(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["serve", str(tmp_path)]) == 2
    assert "holds no model" in capsys.readouterr().err


def test_sigterm_answers_every_accepted_request_and_exits_0(tier_models: dict) -> None:
    """A real server process on the static folder: 6 requests wait in one batch (max_wait_ms 2500) when SIGTERM
    comes; new connections are then refused, the 6 are answered, and the process exits 0 without importing torch."""
    server, port = start_server(tier_models["folders"]["static"], "--max-wait-ms", "2500", "--max-batch-size", "100")
    try:
        maps = Path(f"/proc/{server.pid}/maps")
        if maps.is_file():
            assert "libtorch" not in maps.read_text(), "serving a static folder loaded torch"
        batches = [["a good film"], ["an awful plot", "great"], ["dull"], ["fine", "bad", "good"], ["sad"], ["ok"]]
        with ThreadPoolExecutor(len(batches)) as pool:
            pending = [pool.submit(http_call, port, "POST", "/predict", {"texts": t}) for t in batches]
            wait_for(lambda: metric(http_call(port, "GET", "/metrics")[1], "setfit_lite_queue_depth") == len(batches),
                     "the requests did not reach the batcher")
            server.send_signal(signal.SIGTERM)
            refused_by = time.monotonic() + 2.0  # within the batch's 2.5 s of gathering
            while True:  # the listening socket closes: a new connection is refused
                try:
                    http_call(port, "GET", "/health")
                except ConnectionError:
                    break
                assert time.monotonic() < refused_by, "new connections were still accepted 2 s after SIGTERM"
                time.sleep(0.02)
            answers = [p.result(timeout=30) for p in pending]
        server.wait(timeout=30)
    finally:
        rc = stop_server(server)
    model = tier_models["static"]
    assert [a[0] for a in answers] == [200] * len(batches)
    assert [json.loads(a[1])["labels"] for a in answers] == [model.predict(t) for t in batches]
    assert rc == 0


def test_workers_share_their_metrics_and_stop_on_sigterm(tier_models: dict) -> None:
    """``--workers 2`` on the static folder: /health requests on fresh connections reach both worker processes (the
    pid each answer names), and every scrape of /metrics, whichever worker answers it, counts all of them (and the
    predictions of both); SIGTERM to the parent stops both and exits 0."""
    folder = tier_models["folders"]["static"]
    env = server_env()
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    server = subprocess.Popen([sys.executable, "-m", "setfit_lite.cli", "serve", str(folder), "--port", "0",
                               "--workers", "2", "--max-wait-ms", "0"], stderr=subprocess.PIPE, text=True, env=env)

    def call(method: str, path: str, body: dict | None = None) -> tuple[int, str]:
        return http_call(port, method, path, body)  # a new connection each time

    try:
        port = int(re.search(r"http://127\.0\.0\.1:(\d+) ", server.stderr.readline()).group(1))
        deadline = time.monotonic() + 60
        ready: set[int] = set()
        while len(ready) < 2:  # both workers loaded and warmed
            try:
                status, body = call("GET", "/ready")
            except ConnectionError:
                status = 0
            if status == 200:
                ready.add(json.loads(body)["pid"])
            assert time.monotonic() < deadline and server.poll() is None, "the workers never became ready"
        pids: dict[int, int] = {}
        while len(pids) < 2 or sum(pids.values()) < 20:
            status, body = call("GET", "/health")
            assert status == 200
            pid = json.loads(body)["pid"]
            pids[pid] = pids.get(pid, 0) + 1
            assert sum(pids.values()) < 2000, f"one worker answered every request: {pids}"
        predicted = [call("POST", "/predict", {"texts": ["a good film", "dull"]}) for _ in range(12)]
        assert [p[0] for p in predicted] == [200] * 12
        scrapes = [call("GET", "/metrics")[1] for _ in range(6)]
        server.send_signal(signal.SIGTERM)
        rc = server.wait(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
        server.stderr.close()
    for page in scrapes:
        assert metric(page, 'setfit_lite_requests_total{path="/health",status="200"}') == sum(pids.values())
        assert metric(page, 'setfit_lite_requests_total{path="/predict",status="200"}') == 12
        assert metric(page, "setfit_lite_texts_total") >= 24
    assert rc == 0


@pytest.mark.ray
@pytest.mark.slow
def test_ray_serve_replicas_on_two_nodes_lose_no_retried_request_when_one_is_killed(
        tier_models: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two replicas of the static folder, one on each node of a local 2-node cluster; clients that retry on a
    connection error or a 5xx send 120 requests (each waits 200 ms in its replica's batcher, so the killed replica
    holds some) while the replica of one node is killed with SIGKILL: every request is answered, as in-process
    predict answers it, and Ray Serve starts a new replica. (Ray Serve's proxy itself resends most requests of a
    dead replica; the client's retries cover the rest.)"""
    ray = pytest.importorskip("ray", reason="the Ray Serve test needs pip install 'ray[serve]'")
    serve = pytest.importorskip("ray.serve", reason="the Ray Serve test needs pip install 'ray[serve]'")
    requests = pytest.importorskip("requests")
    from ray.cluster_utils import Cluster

    from setfit_lite.serving import ray_serve_app

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "object_store_memory": 80 * 2**20})
    try:
        cluster.add_node(num_cpus=1, object_store_memory=80 * 2**20)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False)
        with socket.socket() as probe:  # a free port for Ray Serve's proxy
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        serve.start(http_options={"host": "127.0.0.1", "port": port}, proxy_location="HeadOnly")
        app = ray_serve_app(tier_models["folders"]["static"], ServeSettings(max_wait_ms=200.0), name="SetFit",
                            num_replicas=2, ray_actor_options={"num_cpus": 0.5}, max_replicas_per_node=1,
                            health_check_period_s=1.0)
        serve.run(app, name="setfit", route_prefix="/")
        url = f"http://127.0.0.1:{port}/predict"
        texts, _ = make_sentences(60, seed=9)
        retries = [0]
        lock = threading.Lock()

        def ask(text: str) -> str:
            for _ in range(200):
                try:
                    answer = requests.post(url, json={"texts": [text]}, timeout=30)
                    if answer.status_code == 200:
                        return answer.json()["labels"][0]
                    assert answer.status_code >= 500, answer.text  # a 4xx would be this test's mistake
                except requests.ConnectionError:
                    pass
                with lock:
                    retries[0] += 1
                time.sleep(0.05)
            raise AssertionError(f"no answer for {text!r}")

        def replica_pids() -> list[int]:
            names = [a["name"] for a in ray.util.list_named_actors(all_namespaces=True)
                     if a["namespace"] == "serve" and a["name"].startswith("SERVE_REPLICA::setfit#SetFit#")]
            actors = [ray.get_actor(name, namespace="serve") for name in names]
            return ray.get([a.__ray_call__.remote(lambda replica: os.getpid()) for a in actors], timeout=30)

        pids = replica_pids()
        assert len(pids) == 2, pids
        with ThreadPoolExecutor(6) as pool:
            pending = [pool.submit(ask, t) for t in texts]
            while sum(p.done() for p in pending) < 20:  # both replicas are answering
                time.sleep(0.01)
            os.kill(pids[0], signal.SIGKILL)
            killed_after = sum(p.done() for p in pending)
            labels = [p.result(timeout=120) for p in pending]
        deadline = time.monotonic() + 30
        while True:  # a new replica takes the killed one's place
            live = serve.status().applications["setfit"].deployments["SetFit"].replica_states.get("RUNNING", 0)
            if live == 2:
                break
            assert time.monotonic() < deadline, serve.status()
            time.sleep(0.2)
        print(f"killed replica pid {pids[0]} of {pids} after {killed_after} answers; {len(texts)} requests answered, "
              f"{retries[0]} client retries")
        assert labels == tier_models["static"].predict(texts)
        assert killed_after < len(texts), "every request was answered before the kill: it tested nothing"
        assert pids[0] not in replica_pids(), "the killed replica is still listed"
    finally:
        serve.shutdown()
        ray.shutdown()
        cluster.shutdown()


def test_a_request_is_counted_before_its_answer_leaves() -> None:
    """The last body message is handed on only after the request is counted: a client that has its answer and
    scrapes at once (another worker may answer the scrape) never misses it. A request that fails before a complete
    answer is counted once, as a 500."""
    import asyncio

    from setfit_lite.serving.metrics import MetricsMiddleware, ServingMetrics

    metrics = ServingMetrics()
    counted_at_send: list[float] = []

    def requests_of(status: str) -> float:  # 0 before the first count (no sample yet)
        name = f'setfit_lite_requests_total{{path="/health",status="{status}"}}'
        page = metrics.exposition().decode()
        return metric(page, name) if name in page else 0.0

    async def app(scope, receive, send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{", "more_body": True})
        await send({"type": "http.response.body", "body": b"}"})

    async def send(message: dict) -> None:
        if message["type"] == "http.response.body":
            counted_at_send.append(requests_of("200"))

    async def broken(scope, receive, send) -> None:
        raise RuntimeError("no answer")

    scope = {"type": "http", "path": "/health"}
    asyncio.run(MetricsMiddleware(app, metrics)(scope, None, send))
    assert counted_at_send == [0.0, 1.0]  # counted before the last part, once
    assert requests_of("200") == 1.0
    with pytest.raises(RuntimeError):
        asyncio.run(MetricsMiddleware(broken, metrics)(scope, None, send))
    assert requests_of("500") == 1.0 and requests_of("200") == 1.0


def test_a_client_that_hangs_up_mid_upload_is_not_a_server_error() -> None:
    """The body limit stops reading at the client's disconnect and sends nothing: counted as 499 (the client
    closed the request, nginx's code), not as a 500 that would page someone."""
    import asyncio

    from setfit_lite.serving.limits import BodyLimitMiddleware
    from setfit_lite.serving.metrics import MetricsMiddleware, ServingMetrics

    metrics = ServingMetrics()
    messages = iter([{"type": "http.request", "body": b'{"te', "more_body": True}, {"type": "http.disconnect"}])

    async def receive() -> dict:
        return next(messages)

    async def send(message: dict) -> None:
        raise AssertionError(f"nothing is sent to a client that left: {message}")

    async def app(scope, receive, send) -> None:
        await receive()  # the endpoint reads the body: the limit's replay meets the disconnect

    scope = {"type": "http", "path": "/predict", "method": "POST", "headers": []}
    asyncio.run(MetricsMiddleware(BodyLimitMiddleware(app, 1000), metrics)(scope, receive, send))
    page = metrics.exposition().decode()
    assert metric(page, 'setfit_lite_requests_total{path="/predict",status="499"}') == 1
    assert 'status="500"' not in page


def test_the_queue_depth_counts_a_request_before_a_batcher_can_take_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gauge goes up before the request is queued: a batcher thread that takes it at once (and counts it down)
    never leaves the gauge below 0."""
    import queue
    import types

    from setfit_lite.serving import batcher as batcher_module
    from setfit_lite.serving.metrics import ServingMetrics

    metrics = ServingMetrics()
    seen_at_put: list[float] = []

    class Watched(queue.Queue):
        def put(self, item, block=True, timeout=None) -> None:  # noqa: ANN001
            seen_at_put.append(metrics.queue_depth._value.get())
            super().put(item, block, timeout)

    monkeypatch.setattr(batcher_module, "queue", types.SimpleNamespace(Queue=Watched, Empty=queue.Empty))
    batcher = MicroBatcher(lambda texts: np.ones((len(texts), 2)), 4, 0.0, metrics=metrics)
    try:
        assert batcher.submit(["a"]).result(timeout=10).shape == (1, 2)
    finally:
        batcher.close(timeout=10)
    assert seen_at_put[0] == 1.0  # the request's put (then the stop mark's)
    assert metrics.queue_depth._value.get() == 0.0


def test_a_multi_output_model_is_served_as_it_predicts(tiny_body_path: str) -> None:
    """A torch model whose head is scikit-learn's MultiOutputClassifier gives setfit's `(n, L, 2)` predict_proba:
    the server read those pairs as labels (every text's answer a list of pairs); it serves `(n, L)` probabilities
    and `predict`'s multi-hot rows."""
    from setfit_lite import SetFitModel, Trainer, TrainingArguments

    texts, labels = make_sentences(8, seed=0)
    hot = [[1, 0] if y == "positive" else [0, 1] for y in labels]
    hot[0] = [1, 1]
    model = SetFitModel.from_pretrained(tiny_body_path, labels=["pos", "neg"], multi_target_strategy="multi-output")
    Trainer(model, TrainingArguments(max_steps=2, num_epochs=(1, 1), show_progress_bar=False),
            train_dataset={"text": texts, "label": hot}).train()
    assert model.predict_proba(texts[:2], as_numpy=True).shape == (2, 2, 2)
    with TestClient(create_app(model, ServeSettings())) as client:
        wait_ready(client)
        answer = client.post("/predict", json={"texts": texts[:4], "probabilities": True}).json()
    assert answer["labels"] == model.predict(texts[:4]).tolist()
    np.testing.assert_allclose(answer["probabilities"], model.class_proba(texts[:4]), rtol=0, atol=1e-6)


def test_a_stalled_body_is_answered_408_and_its_connection_closed(tier_models: dict) -> None:
    """A client that sends part of a body and then nothing holds neither the body's buffer nor a connection for
    ever: after --read-timeout-s it gets 408 naming the option, the connection is closed, and the 408 is counted."""
    server, port = start_server(tier_models["folders"]["static"], "--read-timeout-s", "1")
    try:
        with stalled_request(port) as client:
            answer = read_until_closed(client)
        page = http_call(port, "GET", "/metrics")[1]
    finally:
        rc = stop_server(server)
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    assert b"nothing came for 1 s (read_timeout_s)" in answer
    assert metric(page, 'setfit_lite_requests_total{path="/predict",status="408"}') == 1
    assert rc == 0


def test_sigterm_ends_within_the_shutdown_timeout_while_a_body_stalls(tier_models: dict) -> None:
    """A client stalls in the middle of its body (read timeout 120 s) when SIGTERM comes: the server does not wait
    for it past --shutdown-timeout-s (1 s), and exits 0."""
    server, port = start_server(tier_models["folders"]["static"], "--read-timeout-s", "120",
                                "--shutdown-timeout-s", "1")
    with stalled_request(port):
        rc = stop_server(server, timeout=30.0)  # fails unless the process ends well before the read timeout
    assert rc == 0


def test_a_second_server_on_a_port_in_use_is_refused(tier_models: dict, capsys: pytest.CaptureFixture) -> None:
    """The socket listens as soon as it is bound (before any worker starts): a second `listen` on its port fails
    with "address already in use" (two bound sockets with SO_REUSEADDR, neither listening, would share it), and so
    does `setfit-lite serve` there, with exit status 2."""
    from setfit_lite.serving.server import listen

    with listen("127.0.0.1", 0) as first:
        port = first.getsockname()[1]
        with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{port}: Address already in use"):
            listen("127.0.0.1", port).close()
        assert main(["serve", str(tier_models["folders"]["static"]), "--port", str(port), "--workers", "2"]) == 2
    assert "Address already in use" in capsys.readouterr().err


def test_the_queue_depth_forgets_a_killed_worker(tier_models: dict, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Multiprocess mode: a worker killed with SIGKILL leaves its live gauge file (gauge_livesum_PID.db); a scrape
    drops it, so the queue depth is the sum over the running workers, while the counters of the killed one still
    count. A new worker drops the gauge file an earlier process of its pid left (pids are reused)."""
    from setfit_lite.serving.metrics import ServingMetrics
    from setfit_lite.serving.server import ENV_MODEL, ENV_SETTINGS, app_from_environment

    script = ("import sys, time; from prometheus_client import Counter, Gauge; "
              "Gauge('setfit_lite_queue_depth', 'waiting', multiprocess_mode='livesum').inc(int(sys.argv[1])); "
              "Counter('setfit_lite_texts', 'texts').inc(5); print('written', flush=True); time.sleep(120)")
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    workers = [subprocess.Popen([sys.executable, "-c", script, str(depth)], stdout=subprocess.PIPE, text=True,
                                env=env) for depth in (3, 2)]
    try:
        assert [w.stdout.readline() for w in workers] == ["written\n"] * 2
        workers[0].kill()
        workers[0].wait(timeout=30)  # ended and reaped: its pid runs nothing
        monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
        scraped = ServingMetrics().exposition().decode()
        # a file left under this process's pid by an earlier process (a copy of the running worker's)
        (tmp_path / f"gauge_livesum_{os.getpid()}.db").write_bytes(
            (tmp_path / f"gauge_livesum_{workers[1].pid}.db").read_bytes())
        monkeypatch.setenv(ENV_MODEL, str(tier_models["folders"]["static"]))
        monkeypatch.setenv(ENV_SETTINGS, ServeSettings().to_json())
        app_from_environment()
        after_start = ServingMetrics().exposition().decode()
    finally:
        for worker in workers:
            worker.kill()
            worker.wait()
            worker.stdout.close()
    assert metric(scraped, "setfit_lite_queue_depth") == 2  # the running worker's only
    assert metric(scraped, "setfit_lite_texts_total") == 10  # counters of the killed one still count
    assert not (tmp_path / f"gauge_livesum_{workers[0].pid}.db").exists()
    assert (tmp_path / f"counter_{workers[0].pid}.db").exists()
    assert metric(after_start, "setfit_lite_queue_depth") == 2


def test_a_client_that_hangs_up_while_its_request_waits_is_dropped_and_counted_499(tier_models: dict) -> None:
    """A request waits in a batch being gathered (max_wait_ms 5000) when its client hangs up: it is counted 499 at
    once, leaves the batch (its text is never predicted), and the server answers the next request."""
    server, port = start_server(tier_models["folders"]["static"], "--max-wait-ms", "5000", "--max-batch-size", "100")

    def predict_statuses() -> dict[str, float]:
        page = http_call(port, "GET", "/metrics")[1]
        return {m.group(1): float(m.group(2)) for m in
                re.finditer(r'^setfit_lite_requests_total\{path="/predict",status="(\d+)"\} (\S+)$', page, re.M)}

    try:
        body = json.dumps({"texts": ["a good film"]}).encode()
        with socket.create_connection(("127.0.0.1", port), timeout=30) as client:
            client.sendall(b"POST /predict HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
                           b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            wait_for(lambda: metric(http_call(port, "GET", "/metrics")[1], "setfit_lite_queue_depth") == 1,
                     "the request did not reach the batcher")
        wait_for(lambda: bool(predict_statuses()), "the request that hung up was not counted")
        hung_up = predict_statuses()
        status, answer = http_call(port, "POST", "/predict", {"texts": ["dull"]})
        page = http_call(port, "GET", "/metrics")[1]
    finally:
        rc = stop_server(server)
    assert hung_up == {"499": 1.0}
    assert status == 200 and json.loads(answer)["labels"] == tier_models["static"].predict(["dull"])
    assert metric(page, "setfit_lite_texts_total") == 1  # "dull" only
    assert metric(page, "setfit_lite_batch_requests_sum") == 1
    assert metric(page, "setfit_lite_queue_depth") == 0
    assert rc == 0


def test_the_routes_are_the_pages_and_metrics_answer_head(tier_models: dict) -> None:
    """The routes docs/serving.md lists, no others: FastAPI's /redoc is off; /metrics answers HEAD as /health and
    /ready do (probes and scrapers send it)."""
    with TestClient(create_app(tier_models["folders"]["static"])) as client:
        wait_ready(client)
        redoc, head = client.get("/redoc"), client.head("/metrics")
        docs = client.get("/docs")
    assert redoc.status_code == 404
    assert (head.status_code, head.content) == (200, b"")
    assert head.headers["content-type"].startswith("text/plain")
    assert docs.status_code == 200
