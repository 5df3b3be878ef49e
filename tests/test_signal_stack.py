"""OpenVINO swaps the compiling thread's alternate signal stack and, once the compiled model is freed, puts back
a stack that may be freed too: the next signal handled with Python's handler (SA_ONSTACK) then segfaulted the
process (Ctrl-C, or SIGTERM during training after an OpenVINO model was used and dropped). setfit_lite keeps the
thread's stack across OpenVINO's compile and free (``setfit_lite.runtime.signal_stack``)."""

from __future__ import annotations

import ctypes
import gc
import subprocess
import sys
import textwrap

import pytest

from setfit_lite import SetFitModel
from setfit_lite.runtime.signal_stack import _StackT, current_signal_stack, kept_signal_stack

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="sigaltstack is Linux's here")


def test_kept_signal_stack_puts_back_the_stack_a_call_replaced() -> None:
    before = current_signal_stack()
    buffer = ctypes.create_string_buffer(65536)
    with kept_signal_stack():
        libc = ctypes.CDLL(None)
        libc.sigaltstack.argtypes = [ctypes.POINTER(_StackT), ctypes.POINTER(_StackT)]
        assert libc.sigaltstack(ctypes.byref(_StackT(ctypes.addressof(buffer), 0, len(buffer))), None) == 0
        assert current_signal_stack()[0] == ctypes.addressof(buffer)
    assert current_signal_stack() == before


def _tiny_onnx(tier_models: dict) -> str:
    pytest.importorskip("openvino")
    return str(tier_models["folders"]["onnx"])


def test_openvino_models_leave_the_threads_signal_stack_as_they_found_it(tier_models: dict) -> None:
    folder = _tiny_onnx(tier_models)
    before = current_signal_stack()
    for _ in range(2):
        model = SetFitModel.from_onnx(folder, runtime="openvino")
        model.predict_proba(["a short text"])
        assert current_signal_stack() == before
        del model
        gc.collect()
        assert current_signal_stack() == before


def test_sigterm_after_openvino_models_were_freed_reaches_the_python_handler(tier_models: dict) -> None:
    """The user-facing failure, in a process of its own (it died with SIGSEGV, exit status -11, before the fix)."""
    script = textwrap.dedent("""
        import faulthandler, gc, os, signal, sys
        faulthandler.enable()
        from setfit_lite import SetFitModel
        for _ in range(2):
            model = SetFitModel.from_onnx(sys.argv[1], runtime="openvino")
            model.predict_proba(["a short text"])
            del model
            gc.collect()
        got = []
        signal.signal(signal.SIGTERM, lambda signum, frame: got.append(signum))
        os.kill(os.getpid(), signal.SIGTERM)
        print("handled", got)
    """)
    done = subprocess.run([sys.executable, "-c", script, _tiny_onnx(tier_models)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "handled [15]" in done.stdout


def test_interpreter_exit_after_openvino_models_prints_no_ignored_exception(tier_models: dict) -> None:
    """At exit, models still alive were freed by ``OpenVinoSession.__del__`` during module teardown, which found
    ``kept_signal_stack`` set to None ("Exception ignored in ... __del__ ... 'NoneType' object is not callable",
    once per model). The script clears that global itself to stand for the teardown, then exits."""
    script = textwrap.dedent("""
        import sys
        import setfit_lite.runtime.onnx
        from setfit_lite import SetFitModel
        models = [SetFitModel.from_onnx(sys.argv[1], runtime="openvino") for _ in range(2)]
        models[0].predict_proba(["a short text"])
        models.append(models)  # a cycle, as the benchmark's runners hold them: freed at exit, not before
        setfit_lite.runtime.onnx.kept_signal_stack = None  # what module teardown does to the module's globals
        print("exiting")
    """)
    done = subprocess.run([sys.executable, "-c", script, _tiny_onnx(tier_models)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "exiting" in done.stdout
    assert "Exception ignored" not in done.stderr, done.stderr[-2000:]
