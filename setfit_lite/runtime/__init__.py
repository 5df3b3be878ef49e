"""The torch-free prediction runtimes: the `Predictor` base (chunks of a
stream, tokenisation with the ``tokenizers`` library), long-text windows, thread helpers, the signal-stack guard,
and the runtimes of exported folders: ONNX (onnxruntime, OpenVINO) and static token embeddings.

Nothing in this package imports torch, sentence-transformers or transformers (``tests/test_torch_free.py``
imports every module of it with them blocked).
"""
