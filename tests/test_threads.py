"""One model shared by threads: a model is in eval mode whenever it is not being trained, prediction mutates no
shared state, and concurrent ``predict_proba`` calls equal the sequential result bit for bit on every tier."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch
from conftest import make_sentences

from setfit_lite import SetFitModel, Trainer, TrainingArguments

FAST = {"num_epochs": (1, 2), "max_steps": 4, "show_progress_bar": False, "backend": "cpu", "seed": 3}
# texts of many lengths: several length-sorted batches of different shapes per call
TEXTS = [" ".join(["good film", "bad plot"][i % 2] for _ in range(1 + i % 7)) + f" story {i}" for i in range(37)]
THREADS, REPEATS = 4, 3


def _in_eval_mode(*modules: torch.nn.Module) -> bool:
    return not any(sub.training for module in modules for sub in module.modules())


def _modules(model: SetFitModel) -> list[torch.nn.Module]:
    head = model.model_head
    return [model.model_body, *([head] if isinstance(head, torch.nn.Module) else [])]


@pytest.mark.parametrize("tier", ["torch", "torch-differentiable", "onnx", "static"])
def test_threads_sharing_one_model_get_the_sequential_result_bit_for_bit(tier_models: dict, tier: str) -> None:
    """4 threads x 3 calls on ONE model, started together; the body and the torch head have dropout, so a module
    switched to training mode by another thread would change the numbers."""
    model = tier_models[tier]

    def proba() -> np.ndarray:
        return np.asarray(model.predict_proba(TEXTS, batch_size=4))

    expected = proba()
    labels = model.predict(TEXTS, batch_size=4)
    start = threading.Barrier(THREADS)

    def work() -> list[tuple[np.ndarray, list]]:
        start.wait()
        return [(proba(), model.predict(TEXTS, batch_size=4)) for _ in range(REPEATS)]

    with ThreadPoolExecutor(THREADS) as pool:
        results = [r for future in [pool.submit(work) for _ in range(THREADS)] for r in future.result()]
    assert len(results) == THREADS * REPEATS
    for got, got_labels in results:
        assert got.shape == expected.shape and np.array_equal(got, expected)
        assert got_labels == labels
    assert np.array_equal(proba(), expected)


@pytest.mark.parametrize("tier", ["torch", "torch-differentiable"])
def test_prediction_switches_no_module_mode(tier_models: dict, tier: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A model in eval mode predicts without calling ``train()``/``eval()`` on any module (shared state)."""
    model = tier_models[tier]
    assert _in_eval_mode(*_modules(model))
    calls: list[str] = []
    original = torch.nn.Module.train

    def recording_train(self: torch.nn.Module, mode: bool = True) -> torch.nn.Module:
        calls.append(type(self).__name__)
        return original(self, mode)

    monkeypatch.setattr(torch.nn.Module, "train", recording_train)
    model.predict_proba(TEXTS[:5])
    model.predict(TEXTS[:5])
    model.encode(TEXTS[:5])
    model.model_head.predict_proba(model.encode(TEXTS[:2]))
    assert calls == []


def test_a_model_in_training_mode_predicts_with_eval_semantics_and_stays_in_eval(tier_models: dict) -> None:
    """The documented rule: ``predict`` on modules a user switched to training mode switches them to eval (the safe
    direction, never back), so its result is the eval result."""
    model = tier_models["torch-differentiable"]
    expected = np.asarray(model.predict_proba(TEXTS))
    for module in _modules(model):
        module.train()
    try:
        assert np.array_equal(np.asarray(model.predict_proba(TEXTS)), expected)
        assert _in_eval_mode(*_modules(model))
    finally:
        for module in _modules(model):
            module.eval()


@pytest.mark.parametrize("options", [{}, {"use_differentiable_head": True, "head_params": {"dropout": 0.5}}],
                         ids=["lr", "differentiable"])
def test_loaded_and_constructed_models_are_in_eval_mode(tiny_body_path: str, tmp_path, options: dict) -> None:
    from sentence_transformers import SentenceTransformer

    model = SetFitModel.from_pretrained(tiny_body_path, labels=["positive", "negative"], **options)
    assert _in_eval_mode(model.model_body)
    body = SentenceTransformer(tiny_body_path, device="cpu")
    body.train()
    assert _in_eval_mode(SetFitModel(body).model_body)
    texts, labels = make_sentences(4, seed=0)
    head = model.new_head(2, multi_label=False)
    head.fit(model.encode(texts), model.label_ids(labels))
    model.model_head = head
    assert _in_eval_mode(*_modules(model))  # a fitted torch head is left in eval mode
    model.save_pretrained(tmp_path / "saved")
    assert _in_eval_mode(*_modules(SetFitModel.from_pretrained(tmp_path / "saved")))


class _Boom(RuntimeError):
    pass


class _RaiseAtStep:
    def on_step_end(self, args, state, control, **kwargs) -> None:
        if state.global_step == 2:
            raise _Boom("stopped by a callback")


class _PredictEachStep:
    """A callback that embeds texts as ``predict`` does, with the model being trained (its body switches to eval
    there)."""

    def on_step_end(self, args, state, control, model=None, **kwargs) -> None:
        model.encode(["good film"])


DIFFERENTIABLE = {"use_differentiable_head": True, "head_params": {"dropout": 0.5}}


@pytest.mark.parametrize(("options", "end_to_end"), [
    pytest.param({}, False, id="lr"),
    pytest.param(DIFFERENTIABLE, False, id="differentiable"),
    pytest.param(DIFFERENTIABLE, True, id="differentiable-end-to-end"),
])
def test_training_leaves_the_model_in_eval_mode_also_when_it_raises(tiny_body_path: str, toy_data: dict,
                                                                    options: dict, end_to_end: bool) -> None:
    args = TrainingArguments(**FAST, end_to_end=end_to_end)
    model = SetFitModel.from_pretrained(tiny_body_path, **options)
    training_forwards: list[bool] = []  # the body's mode in each forward that builds a graph (a training step)
    model.model_body.register_forward_pre_hook(
        lambda module, inputs: training_forwards.append(module.training) if torch.is_grad_enabled() else None)
    Trainer(model=model, args=args, train_dataset=toy_data, callbacks=[_PredictEachStep()]).train()
    assert training_forwards and all(training_forwards)  # predicting between steps does not turn dropout off
    assert _in_eval_mode(*_modules(model))

    model = SetFitModel.from_pretrained(tiny_body_path, **options)
    with pytest.raises(_Boom):
        Trainer(model=model, args=args, train_dataset=toy_data, callbacks=[_RaiseAtStep()]).train()
    assert _in_eval_mode(*_modules(model))


def test_a_tokenizer_shared_by_threads_asking_different_lengths_truncates_each_call_right(tiny_body_path: str
                                                                                         ) -> None:
    """A fast tokenizer keeps its truncation in shared state that a call asking another length changes; calls
    through ``tokenize_texts`` take turns, so each gets its own length (without turns, hundreds got another's)."""
    from transformers import AutoTokenizer

    from setfit_lite.runtime.predictor import tokenize_texts

    tokenizer = AutoTokenizer.from_pretrained(tiny_body_path)
    texts = ["good film " * 20] * 32
    start = threading.Barrier(THREADS)

    def lengths(max_length: int) -> set[int]:
        start.wait()
        return {len(ids) for _ in range(100) for ids in tokenize_texts(tokenizer, texts, None, max_length)}

    with ThreadPoolExecutor(THREADS) as pool:
        assert list(pool.map(lengths, [5, 9, 13, 17])) == [{5}, {9}, {13}, {17}]


MANY = [f"{'good film ' * (1 + i % 5)}{'bad plot ' * (i % 3)}story {i}" for i in range(1100)]


@pytest.mark.parametrize("tier", ["onnx", "static"])
def test_exported_tiers_give_the_same_numbers_with_any_thread_count(tier_models: dict, tier: str) -> None:
    """The exported tiers split a call into pieces run on ``num_threads`` threads (batches for ONNX, slices of
    texts for the static table); each text's probabilities do not depend on the split, and numpy's BLAS thread
    setting is the same after a call as before."""
    from threadpoolctl import threadpool_info

    load = SetFitModel.from_onnx if tier == "onnx" else SetFitModel.from_static
    blas_before = [pool["num_threads"] for pool in threadpool_info()]
    models = [load(tier_models["folders"][tier], num_threads=n) for n in (1, 2, 3)]
    assert [m.num_workers if tier == "onnx" else m.num_threads for m in models] == [1, 2, 3]
    results = [np.asarray(m.predict_proba(MANY, batch_size=16)) for m in models]
    assert all(np.array_equal(results[0], r) for r in results[1:])
    assert np.array_equal(results[0], np.asarray(tier_models[tier].predict_proba(MANY, batch_size=16)))
    assert [pool["num_threads"] for pool in threadpool_info()] == blas_before


def test_openvino_model_shared_by_threads_gets_the_sequential_result(tier_models: dict) -> None:
    """OpenVINO's infer request is not thread-safe: each calling thread gets its own."""
    pytest.importorskip("openvino")
    model = SetFitModel.from_onnx(tier_models["folders"]["onnx"], runtime="openvino")
    expected = np.asarray(model.predict_proba(TEXTS, batch_size=4))
    start = threading.Barrier(THREADS)

    def work() -> list[np.ndarray]:
        start.wait()
        return [np.asarray(model.predict_proba(TEXTS, batch_size=4)) for _ in range(REPEATS)]

    with ThreadPoolExecutor(THREADS) as pool:
        results = [r for future in [pool.submit(work) for _ in range(THREADS)] for r in future.result()]
    assert all(np.array_equal(r, expected) for r in results)


@pytest.mark.parametrize(("omp", "expected"), [("3", 3), ("1", 1), (None, "cpus"), ("0", "cpus"), ("x", "cpus")])
def test_default_workers_follow_omp_num_threads_else_the_cpus(omp: str | None, expected,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    from setfit_lite.runtime.threads import default_workers

    if omp is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", omp)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert default_workers() == (cpus if expected == "cpus" else expected)


def test_blas_is_single_threaded_while_any_piece_runs_and_restored_after() -> None:
    """Nested and concurrent holders: one BLAS thread until the last leaves, then the setting from before."""
    from threadpoolctl import threadpool_info, threadpool_limits

    from setfit_lite.runtime.threads import run_pieces, single_threaded_blas

    def blas_threads() -> list[int]:
        return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]

    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        with single_threaded_blas():
            seen = run_pieces(lambda _: blas_threads(), list(range(6)), workers=3)
            assert blas_threads() == [1] * len(before)
        assert all(s == [1] * len(before) for s in seen)
        assert blas_threads() == before


def test_openvino_runs_a_stream_per_thread_unless_told(tier_models: dict) -> None:
    """OpenVINO runs as many batches at once as onnxruntime (a stream of one thread each); openvino_streams=1 runs
    one batch at a time on all the threads; the labels are the same either way."""
    pytest.importorskip("openvino")
    folder = tier_models["folders"]["onnx"]
    per_thread = SetFitModel.from_onnx(folder, runtime="openvino", num_threads=2)
    one = SetFitModel.from_onnx(folder, runtime="openvino", num_threads=2, openvino_streams=1)
    for model, streams in ((per_thread, 2), (one, 1)):
        compiled = model.session.compiled
        assert model.num_workers == streams and int(compiled.get_property("NUM_STREAMS")) == streams
        assert int(compiled.get_property("INFERENCE_NUM_THREADS")) == 2
    proba = [np.asarray(m.predict_proba(MANY, batch_size=8)) for m in (per_thread, one)]
    np.testing.assert_allclose(proba[0], proba[1], atol=1e-4)
    assert np.array_equal(proba[0].argmax(axis=1), proba[1].argmax(axis=1))


def test_openvino_streams_are_checked_before_any_file_is_read(tmp_path) -> None:
    missing = tmp_path / "no-such-folder"
    with pytest.raises(ValueError, match="openvino_streams=3 is more than the 2 threads"):
        SetFitModel.from_onnx(missing, runtime="openvino", num_threads=2, openvino_streams=3)
    with pytest.raises(ValueError, match="openvino_streams"):
        SetFitModel.from_onnx(missing, runtime="openvino", openvino_streams=0)
