"""Classification heads on sentence embeddings: a wrapped sklearn estimator and a differentiable torch head.

Heads are trained on class ids ``0..K-1``: single-label ``y`` has shape (n,) of ints, multi-label ``y`` is
multi-hot of shape (n, K). ``predict_proba`` always returns (n, K) with columns in class-id order; a class
absent from the training data gets a column of zeros (single-label). Multi-label columns are independent
per-label probabilities.

Heads are saved as ``head_config.json`` plus ``head.safetensors`` (LogisticRegression and its multi-target
wrappers, torch heads) or ``head.skops`` (any other sklearn estimator, when ``skops`` is installed). Never pickle.

Modules: ``validation`` (inputs), ``params`` (estimator parameters as JSON, scikit-learn version check),
``linear`` (the LogisticRegression family as arrays: save/load and ONNX constants), ``sklearn_head``,
``torch_head``, ``factory`` (``build_head``, ``load_head``).
"""

from .common import FORMAT_VERSION, HEAD_CONFIG_NAME, HEAD_SKOPS_NAME, HEAD_WEIGHTS_NAME, MULTI_TARGET_STRATEGIES
from .factory import SKLEARN_HEAD_NAMES, TORCH_HEAD_NAMES, build_head, load_head
from .sklearn_head import SklearnHead
from .torch_head import SetFitHead, TorchHead

__all__ = [
    "FORMAT_VERSION",
    "HEAD_CONFIG_NAME",
    "HEAD_SKOPS_NAME",
    "HEAD_WEIGHTS_NAME",
    "MULTI_TARGET_STRATEGIES",
    "SKLEARN_HEAD_NAMES",
    "TORCH_HEAD_NAMES",
    "SetFitHead",
    "SklearnHead",
    "TorchHead",
    "build_head",
    "load_head",
]
