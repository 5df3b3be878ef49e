"""``SetFitHead`` (also ``TorchHead``): a differentiable head (optional hidden layer, then linear logits), saved as
safetensors. It takes setfit's ``SetFitHead`` arguments too."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ..runtime.predictor import predict_ids
from ..serialization import load_tensors, save_json, save_tensors
from ..serialization.validate import check_float_dtype, check_shape, check_temperature, temperature_field
from .common import (
    FORMAT_VERSION,
    HEAD_CONFIG_NAME,
    HEAD_SKOPS_NAME,
    HEAD_WEIGHTS_NAME,
    corrupt_head_error,
    read_head_config,
)
from .validation import as_features, check_class_weight, check_head_param, check_labels, class_weight_vector

logger = logging.getLogger(__name__)


def settle_eval(*modules: Any) -> None:
    """Switch each torch module among ``modules`` (others are skipped) to eval mode if any part of it is in
    training mode. Prediction's one change of state, in the safe direction and never undone: a model in eval mode
    (as it is whenever it is not being trained) is only read, so threads can share it."""
    for module in modules:
        if isinstance(module, nn.Module) and any(sub.training for sub in module.modules()):
            module.eval()


def _one_of(name: str, value: Any, alias: str, alias_value: Any, default: Any) -> Any:
    """``value`` or its setfit alias (they must agree when both are given), else ``default``."""
    if value is not None and alias_value is not None and value != alias_value:
        raise ValueError(f"{name}={value!r} and {alias}={alias_value!r} disagree; give one of them")
    return value if value is not None else alias_value if alias_value is not None else default


class EpochHook(Protocol):
    """What `SetFitHead.fit` calls around each epoch (the trainer turns these into callback events)."""

    def epoch_begin(self, epoch: int) -> None:
        """Before epoch ``epoch`` (0-based)."""

    def epoch_end(self, epoch: int, loss: float) -> bool:
        """After epoch ``epoch`` with its mean batch loss; True stops the fit there."""


class SetFitHead(nn.Module):
    """A differentiable head: an optional hidden layer (ReLU), then a linear layer with one logit per class.

    Single-label heads take a softmax over K outputs (K=2 for binary, so columns always match labels); multi-label
    heads independent sigmoids. Differences from setfit's `SetFitHead`: `in_features` is required (no lazy
    layer); called on a tensor it returns the logits (setfit: `(logits, probs)`; on a dict both add `"logits"` and
    `"probs"`); `predict` and `predict_proba` return numpy arrays. `SetFitModel(use_differentiable_head=True)`
    builds one at training time with `head_params` as its arguments.

    Args:
        in_features: The embedding dimension.
        num_classes: The classes K; None for setfit's `out_features`, else 2.
        multi_label: Whether labels are multi-hot (independent sigmoids); None for setfit's `multitarget`, else
            False.
        hidden_size: The width of a hidden layer; None for none.
        dropout: The dropout before the (hidden and) linear layer.
        out_features: setfit's name of `num_classes` (1 becomes 2, as in setfit).
        multitarget: setfit's name of `multi_label`.
        temperature: Logits are divided by it (> 0).
        eps: setfit's; accepted and unused.
        bias: Whether the layers have biases.
        device: The device the head is created on; None for the CPU.
        class_weight: Single-label only: weighs each example's cross-entropy by its class, as scikit-learn's:
            None, `"balanced"` (`n / (K * count)`, from the labels it is trained on), one weight per class or a
            `{class id: weight}` dict. Saved in the config; it only changes training.

    Raises:
        ValueError: `num_classes` and `out_features` (or `multi_label` and `multitarget`) that disagree, values out
            of range, or `class_weight` on a multi-label head.
    """

    def __init__(
        self,
        in_features: int,
        num_classes: int | None = None,
        multi_label: bool | None = None,
        hidden_size: int | None = None,
        dropout: float = 0.0,
        *,
        out_features: int | None = None,
        multitarget: bool | None = None,
        temperature: float = 1.0,
        eps: float = 1e-5,
        bias: bool = True,
        device: str | torch.device | None = None,
        class_weight: str | Sequence[float] | Mapping[int, float] | None = None,
    ) -> None:
        super().__init__()
        num_classes = _one_of("num_classes", num_classes, "out_features", out_features, 2)
        multi_label = _one_of("multi_label", multi_label, "multitarget", multitarget, False)
        in_features, num_classes, hidden_size, dropout, temperature = (
            check_head_param(name, value) for name, value in (
                ("in_features", in_features), ("num_classes", num_classes), ("hidden_size", hidden_size),
                ("dropout", dropout), ("temperature", temperature)))
        if int(num_classes) == 1 and not multi_label:
            logger.warning("Change `out_features` from 1 to 2 since we use `CrossEntropyLoss` for binary "
                           "classification.")
            num_classes = 2
        in_features, num_classes = int(in_features), int(num_classes)
        self.class_weight = check_class_weight(class_weight, num_classes)
        if self.class_weight is not None and multi_label:
            raise ValueError("class_weight applies to single-label heads; a multi-label head's sigmoids are "
                             "trained per label")
        self._loss_weight: torch.Tensor | None = None  # class_weight as a vector, set by fit_class_weight
        hidden_size = int(hidden_size) if hidden_size else None
        self.in_features, self.num_classes, self.multi_label = in_features, num_classes, bool(multi_label)
        self.hidden_size, self.dropout_p = hidden_size, float(dropout)
        self.temperature, self.eps, self.bias = float(temperature), eps, bool(bias)
        self.dropout = nn.Dropout(self.dropout_p)
        self.hidden = nn.Linear(in_features, hidden_size, bias=self.bias) if hidden_size else None
        self.linear = nn.Linear(hidden_size or in_features, num_classes, bias=self.bias)
        self.apply(self._init_weights)
        self.fitted = False  # set by fit/load (and by the trainer after end-to-end training)
        # fitted after training (TrainingArguments.calibration), applied by the model's predict_proba
        self.calibration_temperature = 1.0
        if device is not None:
            self.to(device)

    # setfit's names
    @property
    def out_features(self) -> int:
        return self.num_classes

    @property
    def multitarget(self) -> bool:
        return self.multi_label

    @property
    def device(self) -> torch.device:
        return self._param().device

    def get_loss_fn(self) -> nn.Module:
        """setfit's: the loss module `loss` computes (BCE with logits multi-label, else cross-entropy)."""
        return nn.BCEWithLogitsLoss() if self.multi_label else nn.CrossEntropyLoss()

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):  # as setfit's SetFitHead
            nn.init.xavier_uniform_(module.weight)
            if module.bias is not None:
                nn.init.constant_(module.bias, 1e-2)

    def extra_repr(self) -> str:
        return f"multi_label={self.multi_label}"

    def forward(self, embeddings: torch.Tensor | Mapping[str, torch.Tensor]
                ) -> torch.Tensor | Mapping[str, torch.Tensor]:
        """Logits (n, K) from embeddings (n, in_features); for setfit's dict with ``sentence_embedding``, the dict
        with ``"logits"`` and ``"probs"`` added."""
        x = embeddings["sentence_embedding"] if isinstance(embeddings, Mapping) else embeddings
        if x.shape[-1] != self.in_features:
            raise ValueError(f"expected embeddings with {self.in_features} features, got shape {tuple(x.shape)}")
        x = self.dropout(x)
        if self.hidden is not None:
            x = self.dropout(torch.relu(self.hidden(x)))
        logits = self.linear(x)
        if self.temperature != 1.0:
            logits = logits / self.temperature
        if isinstance(embeddings, Mapping):
            probs = torch.sigmoid(logits) if self.multi_label else torch.softmax(logits, dim=-1)
            return {**embeddings, "logits": logits, "probs": probs}
        return logits

    def _param(self) -> torch.Tensor:
        return self.linear.weight

    def _as_input(self, X: Any) -> torch.Tensor:
        p = self._param()
        t = X.detach() if isinstance(X, torch.Tensor) else torch.as_tensor(as_features(X))
        if t.ndim != 2:
            raise ValueError(f"embeddings must be 2-D (n_samples, n_features), got shape {tuple(t.shape)}")
        return t.to(device=p.device, dtype=p.dtype)

    def loss(self, logits: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Cross-entropy on class ids (single-label) or BCE-with-logits on multi-hot targets (multi-label)."""
        if self.multi_label:
            if y.shape != logits.shape:
                raise ValueError(
                    f"multi-hot targets of shape {tuple(y.shape)} do not match logits {tuple(logits.shape)}"
                )
            return F.binary_cross_entropy_with_logits(logits, y.to(logits.dtype))
        if y.ndim != 1 or y.shape[0] != logits.shape[0]:
            raise ValueError(f"class-id targets must have shape ({logits.shape[0]},), got {tuple(y.shape)}")
        if self._loss_weight is None:
            return F.cross_entropy(logits, y.long())
        # each example's loss times its class's weight, averaged over the examples (scikit-learn's sample
        # weighting); cross_entropy's own weighted mean divides by the weights and undoes it in one-class batches
        weight = self._loss_weight.to(device=logits.device, dtype=logits.dtype)
        return F.cross_entropy(logits, y.long(), weight=weight, reduction="none").mean()

    def fit_class_weight(self, y: np.ndarray | torch.Tensor) -> None:
        """Resolve ``class_weight`` against the training class ids ``y`` for `loss` (``fit`` calls it;
        end-to-end training calls it before its loop)."""
        if isinstance(y, torch.Tensor):
            y = y.detach().cpu().numpy()
        weights = class_weight_vector(self.class_weight, np.asarray(y), self.num_classes)
        self._loss_weight = None if weights is None else torch.as_tensor(weights, dtype=torch.float32)

    def predict_proba(self, X: np.ndarray | torch.Tensor) -> np.ndarray:
        """The class probabilities of embeddings, in eval mode.

        Args:
            X: Embeddings `(n, in_features)`, a numpy array or a tensor.

        Returns:
            Softmax (multi-label: sigmoid) probabilities as a numpy array `(n, K)`.
        """
        settle_eval(self)
        with torch.inference_mode():
            logits = self(self._as_input(X))
            probs = torch.sigmoid(logits) if self.multi_label else torch.softmax(logits, dim=-1)
        if probs.dtype not in (torch.float32, torch.float64):
            probs = probs.float()
        return probs.cpu().numpy()

    def predict(self, X: np.ndarray | torch.Tensor) -> np.ndarray:
        """The predicted classes of embeddings.

        Args:
            X: Embeddings `(n, in_features)`, a numpy array or a tensor.

        Returns:
            Class ids `(n,)`, or multi-hot rows `(n, K)` (threshold 0.5), int64.
        """
        return predict_ids(self.predict_proba(X), self.multi_label)

    def fit(
        self,
        X: np.ndarray | torch.Tensor,
        y: np.ndarray | torch.Tensor,
        epochs: int = 16,
        lr: float = 1e-2,
        batch_size: int = 2,
        weight_decay: float = 0.01,
        seed: int | None = None,
        hook: EpochHook | None = None,
    ) -> SetFitHead:
        """Train on fixed embeddings with AdamW; the head is left in eval mode, also when fitting raises.

        The defaults follow setfit's head phase (epochs, batch size, learning rate, `l2_weight`).

        Args:
            X: Embeddings `(n, in_features)`.
            y: Class ids `(n,)`, or multi-hot rows `(n, K)`.
            epochs: The passes over the data.
            lr: The learning rate.
            batch_size: The rows of a step.
            weight_decay: AdamW's weight decay.
            seed: The seed of the shuffling; None for the global generator.
            hook: Told of each epoch's beginning and end (with its mean loss); it may stop the fit after an epoch.

        Returns:
            This head, fitted.

        Raises:
            ValueError: Negative `epochs`, `batch_size` below 1, no rows, or labels that do not fit the head.
        """
        if epochs < 0 or batch_size < 1:
            raise ValueError(f"need epochs >= 0 and batch_size >= 1, got {epochs} and {batch_size}")
        X_t = self._as_input(X)
        if X_t.shape[0] == 0:
            raise ValueError("cannot fit on zero samples")
        y_np = check_labels(y, self.num_classes, self.multi_label, X_t.shape[0])
        y_t = torch.as_tensor(y_np, device=X_t.device)
        self.fit_class_weight(y_np)
        device = X_t.device
        # seeding restores the CPU generator (randperm) afterwards, whatever the device: the trainer fits heads on
        # the host; a head its user placed on an accelerator is seeded there too, that generator is not restored
        fork = torch.random.fork_rng(devices=[])
        with fork if seed is not None else contextlib.nullcontext():
            if seed is not None:
                torch.manual_seed(seed)
            optimizer = torch.optim.AdamW(self.parameters(), lr=lr, weight_decay=weight_decay)
            try:
                for epoch in range(epochs):
                    if hook is not None:
                        hook.epoch_begin(epoch)
                    self.train()  # again each epoch: a hook that predicted left the head in eval mode
                    order = torch.randperm(X_t.shape[0]).to(device)
                    total, batches = 0.0, 0
                    for start in range(0, X_t.shape[0], batch_size):
                        idx = order[start : start + batch_size]
                        optimizer.zero_grad(set_to_none=True)
                        loss = self.loss(self(X_t[idx]), y_t[idx])
                        loss.backward()
                        optimizer.step()
                        if hook is not None:  # reading the loss waits for the device: only when reported
                            total, batches = total + float(loss.detach()), batches + 1
                    if hook is not None and hook.epoch_end(epoch, total / batches):
                        break
            finally:
                self.eval()
        self.fitted = True
        return self

    def config(self) -> dict[str, Any]:
        """The JSON config written by ``save``."""
        return {
            "type": "torch",
            "format_version": FORMAT_VERSION,
            "in_features": self.in_features,
            "num_classes": self.num_classes,
            "multi_label": self.multi_label,
            "hidden_size": self.hidden_size,
            "dropout": self.dropout_p,
            # setfit's options, written only when set (so heads without them save unchanged)
            **({"temperature": self.temperature} if self.temperature != 1.0 else {}),
            **({"bias": False} if not self.bias else {}),
            **temperature_field(self.calibration_temperature),
            **({"class_weight": self.class_weight} if self.class_weight is not None else {}),
        }

    def save(self, folder: str | Path) -> None:
        """Write ``head.safetensors`` (state dict) and ``head_config.json``."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        save_tensors(folder / HEAD_WEIGHTS_NAME, self.state_dict())
        save_json(folder / HEAD_CONFIG_NAME, self.config())
        (folder / HEAD_SKOPS_NAME).unlink(missing_ok=True)

    @classmethod
    def load(cls, folder: str | Path, *, device: str | torch.device | None = None) -> SetFitHead:
        """Load a saved head (in eval mode), checking tensor names and shapes against the config."""
        folder = Path(folder)
        config_path, cfg = read_head_config(folder, "torch")
        path = folder / HEAD_WEIGHTS_NAME
        try:
            head = cls(
                in_features=cfg["in_features"],
                num_classes=cfg["num_classes"],
                multi_label=cfg["multi_label"],
                hidden_size=cfg.get("hidden_size"),
                dropout=cfg.get("dropout", 0.0),
                temperature=cfg.get("temperature", 1.0),
                bias=cfg.get("bias", True),
                class_weight=cfg.get("class_weight"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"head config file {config_path} is invalid: {exc}") from exc
        tensors = load_tensors(path)
        expected = head.state_dict()
        if set(tensors) != set(expected):
            raise corrupt_head_error(path, f"has tensors {sorted(tensors)}, expected {sorted(expected)}")
        for name, value in expected.items():
            check_float_dtype(path, name, tensors[name].dtype)
            check_shape(path, name, tensors[name].shape, value.shape,
                        f"{HEAD_CONFIG_NAME}'s in_features, num_classes and hidden_size")
        dtypes = {t.dtype for t in tensors.values()}
        if len(dtypes) == 1 and next(iter(dtypes)).is_floating_point:
            head = head.to(next(iter(dtypes)))
        head.load_state_dict(tensors)
        head.fitted = True
        head.calibration_temperature = check_temperature(cfg, config_path)
        if device is not None:
            head = head.to(device)
        return head.eval()


TorchHead = SetFitHead  # setfit_lite's earlier name
