"""SetFitModel: a sentence-transformers body and a light head; predict, predict_proba, encode, save, load.

torch, sentence-transformers and the heads are imported where a model first needs them (every model with a body
has them loaded), so that importing this module, and ``SetFitModel.from_onnx``, run without torch.
"""

from __future__ import annotations

import copy
import logging
import os
import threading
import weakref
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from .config.params import PRECISION_ENV, check_param, check_params
from .data import check_label_names, relabelled, validate_texts
from .logging import tqdm_disable
from .model_card import SetFitModelCardData, card_data_config, card_data_from_config
from .runtime.chunking import DEFAULT_CHUNKING, Chunking, affixes, first_window, pool, split_windows
from .runtime.predictor import Predictor, length_sorted_batches, tokenize_texts
from .serialization import (
    MANIFEST_NAME,
    atomic_update_directory,
    check_can_update,
    check_output_path,
    load_json,
    read_consistently,
    recover_interrupted_save,
    refuse_pickles,
    refuse_remote_code,
    save_json,
    verify_manifest,
)
from .serialization.validate import (
    ModelFormatError,
    check_count,
    check_labels,
    check_type,
    check_version,
    same_labels,
)
from .verbosity import quiet_dependencies
from .version import __version__
from .zoo import canonical_model_name, resolve_model_path

if TYPE_CHECKING:
    import torch
    from sentence_transformers import SentenceTransformer

logger = logging.getLogger(__name__)

CONFIG_NAME = "config_setfit_lite.json"
HEAD_DIR = "head"
CONFIG_VERSION = 1
# setfit's name for the saved head's file; here the head is a folder of safetensors + JSON (or skops) files, and
# this is the file that holds its weights (setfit's is the pickle model_head.pkl, refused unless allow_pickle)
MODEL_HEAD_NAME = f"{HEAD_DIR}/head.safetensors"
# setfit's config file: written beside ours with setfit's keys, so that setfit finds the labels and normalisation
SETFIT_CONFIG_NAME = "config_setfit.json"
_BF16_LOCK = threading.Lock()  # threads predicting at once build one bf16 copy of a body


class SetFitModel(Predictor):
    """A few-shot text classifier: a Sentence Transformer body, then a head on its embeddings.

    Build one with [`from_pretrained`][setfit_lite.modeling.SetFitModel.from_pretrained] and train it with a
    [`Trainer`][setfit_lite.trainer.Trainer]. `predict` and `predict_proba` return what setfit's do: a list of
    labels when the labels are names (strings), otherwise a tensor of label values or class ids (a numpy array with
    `as_numpy=True`).

    Threads: the model is in eval mode whenever it is not being trained, and prediction only reads it, so threads
    may share one model and call `predict` or `predict_proba` at once, each getting the sequential result bit for
    bit. A body or head switched to training mode (`.train()`) is switched back to eval by the next prediction.

    Args:
        model_body: The Sentence Transformer that embeds the texts.
        model_head: A fitted head, or what to build at training time, once the number of classes is known: None
            (a logistic regression) or a scikit-learn classifier instance.
        labels: The classes, as `predict` returns them; `predict_proba`'s columns follow their order. None takes
            them from the training data.
        multi_target_strategy: For multi-label data with a scikit-learn head: `"one-vs-rest"`,
            `"multi-output"` or `"classifier-chain"` (scikit-learn's wrappers).
        use_differentiable_head: Whether to build a torch head
            ([`SetFitHead`][setfit_lite.heads.torch_head.SetFitHead]) instead of a scikit-learn one.
        head_params: Keyword arguments of the head built at training time (the estimator's or `SetFitHead`'s).
        normalize_embeddings: Whether embeddings are L2-normalised before the head.
        prompt: A text put before every text the body encodes; None for the body's default prompt, if any.
        source: Where the body came from (a hub name or folder), recorded in the model card.
        long_text: How a text longer than the body's window is read: `"chunk"` splits it into windows sharing
            `chunk_overlap` tokens and pools their embeddings with `chunk_pooling` wherever the model embeds texts
            (head fitting, evaluation, `encode`, prediction, export); `"truncate"` reads the first window. The
            body's contrastive training reads each text's first window. None for the default (see
            [Long texts](long-text.md)).
        chunk_overlap: The tokens consecutive windows share with `long_text="chunk"`; None for the default.
        chunk_pooling: How window embeddings are pooled: `"mean"`, `"max"` or `"weighted"`; None for the default.
        inference_precision: The precision the body embeds texts in for prediction and for the head's features:
            `"auto"` (bf16 where the device computes bf16 natively: CPUs with AMX or AVX512-BF16, GPUs with bf16;
            fp32 elsewhere), `"fp32"` or `"bf16"`. The head runs in fp32. Saved with the model; the environment
            variable `SETFIT_LITE_INFERENCE_PRECISION=fp32` makes `"auto"` mean fp32 in a process.

    Attributes:
        model_body: The Sentence Transformer.
        model_head: The fitted head (None before training).
        labels: The classes, in `predict_proba`'s column order.
        training_info: What training decided and measured (label anchors, zero-shot, calibration, class weights,
            self-training, evaluation results), saved with the model and written into its model card.
        source_folder: The folder `from_pretrained` read (None for a model built in memory); saving never writes
            over it.

    Raises:
        TypeError: `labels` that are not a list of str or int names.
        ValueError: `labels` with duplicates, or an unknown precision or long-text setting.

    Example:
        ```python
        from setfit_lite import SetFitModel, Trainer, TrainingArguments

        model = SetFitModel.from_pretrained("sentence-transformers/all-MiniLM-L6-v2")
        train = {"text": ["a great film", "loved it", "dull and long", "a waste of time"],
                 "label": ["positive", "positive", "negative", "negative"]}
        Trainer(model=model, args=TrainingArguments(num_epochs=1), train_dataset=train).train()
        print(model.predict(["what a wonderful story"]))   # ['positive']
        ```
    """

    setfit_return_types = True

    def __init__(self, model_body: SentenceTransformer, model_head: Any = None, labels: Sequence | None = None,
                 multi_target_strategy: str | None = None, use_differentiable_head: bool = False,
                 head_params: dict[str, Any] | None = None, normalize_embeddings: bool = False,
                 prompt: str | None = None, source: str | None = None, long_text: str | None = None,
                 chunk_overlap: int | None = None, chunk_pooling: str | None = None,
                 inference_precision: str = "auto") -> None:
        self.model_body = model_body
        self.inference_precision = inference_precision
        self.head_spec: Any = None
        self.model_head = model_head
        self.labels = labels
        self.multi_target_strategy = multi_target_strategy
        self.use_differentiable_head = use_differentiable_head
        self.head_params = dict(head_params or {})
        self.normalize_embeddings = normalize_embeddings
        self.prompt = prompt if prompt is not None else default_prompt(model_body)
        self.chunking = Chunking.from_config(DEFAULT_CHUNKING.to_config(), {
            "long_text": long_text, "chunk_overlap": chunk_overlap, "chunk_pooling": chunk_pooling})
        self.source = source
        self.source_folder: Path | None = None  # the folder from_pretrained read: writers never write over it
        self.training_info: dict[str, Any] = {}
        self.model_card_data: SetFitModelCardData | None = None  # what the user states for the model card
        self.settle_eval()

    # ---- construction -------------------------------------------------------------------------
    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: str | os.PathLike, labels: Sequence | None = None,
                        multi_target_strategy: str | None = None, use_differentiable_head: bool | None = None,
                        head_params: dict[str, Any] | None = None, normalize_embeddings: bool | None = None,
                        device: str | None = None, trust_remote_code: bool = False, allow_pickle: bool = False,
                        prompt: str | None = None, max_length: int | None = None, long_text: str | None = None,
                        chunk_overlap: int | None = None, chunk_pooling: str | None = None,
                        inference_precision: str | None = None,
                        model_card_data: SetFitModelCardData | None = None, **kwargs: Any) -> SetFitModel:
        """Load a body to train, or a saved model: setfit_lite's, or setfit's (its pickled head needs `allow_pickle`).

        For a saved model, the head settings (`multi_target_strategy`, `use_differentiable_head`, `head_params`,
        `normalize_embeddings`) default to the saved values; a different value is refused when the model has a
        fitted head (it could not apply to it) and replaces the saved value otherwise. A setfit folder
        (`model_head.pkl`, `config_setfit.json`) loads completely, its head converted to a pickle-free one, so
        `save_pretrained` then writes setfit_lite's format. A hub name resolves to one of the models known offline,
        the local Hugging Face cache, or (unless huggingface_hub is offline, `HF_HUB_OFFLINE=1`) a download from
        the Hub without pickled weights ([models without the Hub](../offline-models.md)). No code from the folder
        runs unless `trust_remote_code=True`: a `modules.json` naming a module class outside sentence-transformers,
        or a `config.json` with an `auto_map`, is refused before the body is loaded, whichever sentence-transformers
        is installed. A local folder is read whole while no save changes it (`read_consistently`): a load that
        overlaps a save into the folder gives the previous model or the new one, never a mix.

        Args:
            pretrained_model_name_or_path: A Sentence Transformers hub name or a local folder: a body, a saved
                setfit_lite model or a setfit model.
            labels: The classes (see the class); for a saved model they must equal the saved ones.
            multi_target_strategy: As in the class; None for the saved value.
            use_differentiable_head: As in the class; None for the saved value (False for a body).
            head_params: As in the class; None for the saved value.
            normalize_embeddings: As in the class; None for the saved value (False for a body).
            device: The device the body is loaded on (`"cpu"`, `"cuda"`, ...); None for the CPU.
            trust_remote_code: Whether code from the folder may run (a body with custom modules, a config with an
                `auto_map`); never otherwise: such a folder is refused.
            allow_pickle: Whether pickled files (a setfit head's `model_head.pkl`) may be read; they are refused
                otherwise, before anything is loaded.
            prompt: As in the class; None for the saved value or the body's default.
            max_length: The most tokens of a text, at most the body's own limit; None for the body's.
            long_text: As in the class; None for the saved value (a saved model that records none, or a setfit
                folder: truncation).
            chunk_overlap: As in the class; None for the saved value.
            chunk_pooling: As in the class; None for the saved value.
            inference_precision: As in the class; None for the saved value (`"auto"` when none is saved).
            model_card_data: What the model card states (language, license, ids; see `SetFitModelCardData`), kept
                as `model_card_data` and written by `save_pretrained` and `create_model_card`; None for what a saved
                model records (`save_pretrained` saves it), or none.
            **kwargs: Refused: an unknown argument is a `TypeError`.

        Returns:
            The model, in eval mode; `source_folder` records the folder it was read from.

        Raises:
            TypeError: An unknown argument, or an argument of the wrong type.
            ValueError: `labels` that differ from the saved ones, a head setting that contradicts the saved head,
                a pickled file without `allow_pickle=True`, a folder that names code to run (a module type outside
                sentence-transformers in `modules.json`, an `auto_map` in `config.json`) without
                `trust_remote_code=True`, or a folder whose files disagree with each other.
            OSError: The name is neither a folder nor a model available offline (`ModelNotFoundError`).

        Example:
            ```python
            from setfit_lite import SetFitModel

            model = SetFitModel.from_pretrained("sentence-transformers/all-MiniLM-L6-v2",
                                                labels=["negative", "positive"])
            ```
        """
        from sentence_transformers import SentenceTransformer

        from .heads import load_head
        from .heads.setfit_format import is_setfit_folder, load_setfit_folder

        if kwargs:
            raise TypeError(f"from_pretrained got unknown argument(s): {', '.join(sorted(kwargs))}")
        if model_card_data is not None and not isinstance(model_card_data, SetFitModelCardData):
            raise TypeError("model_card_data must be a SetFitModelCardData (from setfit_lite import "
                            f"SetFitModelCardData), got {type(model_card_data).__name__}")
        check_params({"multi_target_strategy": multi_target_strategy, "use_differentiable_head":
                      use_differentiable_head, "head_params": head_params, "normalize_embeddings":
                      normalize_embeddings, "device": device, "trust_remote_code": trust_remote_code,
                      "allow_pickle": allow_pickle, "prompt": prompt, "max_length": max_length})
        check_params({name: value for name, value in {"long_text": long_text, "chunk_overlap": chunk_overlap,
                                                      "chunk_pooling": chunk_pooling}.items() if value is not None})
        labels = check_label_names(labels) if labels is not None else None
        path = resolve_model_path(str(pretrained_model_name_or_path))
        folder = Path(path)

        def load() -> SetFitModel:
            """The model, read from ``folder`` (run again where a save changed it meanwhile)."""
            refuse_pickles(path, allow_pickle=allow_pickle)
            _check_model_folder(folder)
            refuse_remote_code(folder, trust_remote_code=trust_remote_code)  # whatever sentence-transformers does
            given = {"multi_target_strategy": multi_target_strategy,
                     "use_differentiable_head": use_differentiable_head, "head_params": head_params,
                     "normalize_embeddings": normalize_embeddings}
            config_path = folder / CONFIG_NAME
            from_setfit, saved_card = False, None
            if config_path.exists():
                saved = _read_config(folder)
                head = load_head(folder / HEAD_DIR) if (folder / HEAD_DIR).exists() else None
                _check_head_against_config(folder, saved, head)
                saved_card = card_data_from_config(saved.get("model_card_data"), config_path)
                saved["labels"] = relabelled(labels, saved.get("labels"), config_path)
                where = folder
            elif from_setfit := is_setfit_folder(folder):
                saved = load_setfit_folder(folder, labels, allow_pickle=allow_pickle)
                head, where = saved.pop("head"), folder
                saved["source"] = _body_source(pretrained_model_name_or_path)
            else:
                saved, head, where = {"labels": labels, "source": _body_source(pretrained_model_name_or_path),
                                      **DEFAULT_CHUNKING.to_config()}, None, None
            settings = _settings(saved, given, head, where)
            chunking = Chunking.from_config(saved, {"long_text": long_text, "chunk_overlap": chunk_overlap,
                                                    "chunk_pooling": chunk_pooling})
            with quiet_dependencies():
                body = SentenceTransformer(path, device=device or "cpu", trust_remote_code=trust_remote_code,
                                           local_files_only=True)
            if max_length is not None:
                body.max_seq_length = capped_max_length(body, int(max_length))
            # setfit's folder: the prompt setfit encoded with (none unless the body names a default)
            given_prompt = setfit_prompt(body) if prompt is None and from_setfit else prompt
            model = cls(body, model_head=head, labels=saved["labels"], **settings,
                        prompt=given_prompt if given_prompt is not None else saved.get("prompt"),
                        source=saved.get("source"), **chunking.to_config(),
                        inference_precision=inference_precision or _saved_precision(saved, folder))
            if head is not None and _head_in_features(head) is not None:
                check_count(_head_file(folder), "in_features" if model.has_differentiable_head else "n_features_in",
                            _head_in_features(head), model.embedding_dim, "the body's embedding dimension")
            model.training_info = saved.get("training_info", {})
            model.model_card_data = model_card_data if model_card_data is not None else saved_card
            model.source_folder = Path(os.path.realpath(folder))
            return model

        if Path(os.fspath(pretrained_model_name_or_path)).expanduser().is_dir():  # a folder a save may change
            return read_consistently(folder, load)
        recover_interrupted_save(folder)  # a cache folder of the Hub or of an offline package: no save's
        return load()

    @property
    def inference_precision(self) -> str:
        """The precision the body embeds texts in: `"auto"`, `"fp32"` or `"bf16"` (see the class); settable."""
        return self._inference_precision

    @inference_precision.setter
    def inference_precision(self, value: str) -> None:
        self._inference_precision = check_param("inference_precision", value)

    def embedding_precision(self) -> str:
        """The precision ("fp32" or "bf16") the body embeds texts in now, on its device: ``inference_precision``
        resolved by ``trainers.registry.prediction_precision`` (asked once per setting and device); "auto" is first
        replaced by the ``SETFIT_LITE_INFERENCE_PRECISION`` environment variable where it is set."""
        requested = self._inference_precision
        if requested == "auto":  # the environment may pin what "auto" means (the test suite pins fp32)
            requested = check_param("inference_precision", os.environ.get(PRECISION_ENV, "auto"))
        key = (requested, str(self.device))
        cached = getattr(self, "_resolved_precision", None)
        if cached is None or cached[0] != key:
            from trainers.registry import prediction_precision

            cached = self._resolved_precision = (key, prediction_precision(self.device, requested))
        return cached[1]

    def __getstate__(self) -> dict[str, Any]:
        """The model's attributes without its bf16 prediction copy (`_bf16_body` makes it again when needed): it
        holds a weak reference, which does not pickle, and a model must pickle (Ray returns, process pools)."""
        state = self.__dict__.copy()
        state.pop("_bf16_cache", None)
        return state

    def _bf16_body(self) -> Any:
        """The body with bf16 weights that bf16 prediction runs (`bf16_copy`, kept until the body changes;
        it holds half the body's memory again)."""
        with _BF16_LOCK:
            self._bf16_cache = bf16_copy(self.model_body, getattr(self, "_bf16_cache", None))
            return self._bf16_cache[1]

    # ---- labels and heads ---------------------------------------------------------------------
    @property
    def id2label(self) -> dict[int, Any]:
        """setfit's mapping from class ids to ``labels`` (empty without labels)."""
        return dict(enumerate(self.labels or []))

    @property
    def label2id(self) -> dict[Any, int]:
        """setfit's mapping from ``labels`` to class ids (empty without labels)."""
        return {label: index for index, label in enumerate(self.labels or [])}

    @property
    def multi_label(self) -> bool:
        """Whether the fitted head is multi-label (False before training)."""
        return bool(self.model_head is not None and self.model_head.multi_label)

    @property
    def calibration_temperature(self) -> float:  # type: ignore[override]
        """The head's calibration temperature (1.0: none), which ``predict_proba`` applies; see
        ``TrainingArguments.calibration``."""
        return float(getattr(self.model_head, "calibration_temperature", 1.0))

    def freeze(self, component: Literal["body", "head"] | None = None) -> None:
        """setfit's: stop training the body or a differentiable head (`requires_grad=False`).

        The trainer's own switch is `TrainingArguments(body_learning_rate=0)`.

        Args:
            component: `"body"`, `"head"`, or None for both.

        Raises:
            ValueError: Another `component`.
        """
        self._set_trainable(component, False)

    def unfreeze(self, component: Literal["body", "head"] | None = None,
                 keep_body_frozen: bool | None = None) -> None:
        """setfit's: train the body or a differentiable head again.

        Args:
            component: `"body"`, `"head"`, or None for both.
            keep_body_frozen: setfit's deprecated form of `component="head"` (a `DeprecationWarning`).

        Raises:
            ValueError: Another `component`.
        """
        if keep_body_frozen is not None:
            import warnings

            warnings.warn("`keep_body_frozen` is deprecated and will be removed in v2.0.0 of SetFit. "
                          'Please either pass "head", "body" or no arguments to unfreeze both.', DeprecationWarning,
                          stacklevel=2)
            if keep_body_frozen and not component:
                component = "head"
        self._set_trainable(component, True)

    def _set_trainable(self, component: str | None, trainable: bool) -> None:
        if component not in (None, "body", "head"):
            raise ValueError(f"component must be 'body', 'head' or None (both), got {component!r}")
        modules = [self.model_body] if component in (None, "body") else []
        if component in (None, "head") and self.has_differentiable_head and self.model_head is not None:
            modules.append(self.model_head)
        for module in modules:
            for param in module.parameters():
                param.requires_grad = trainable

    @property
    def labels(self) -> list | None:
        """The class names, in the head's class order (None before training without `labels=`)."""
        return self._labels

    @labels.setter
    def labels(self, labels: Sequence | None) -> None:
        """Names checked as `labels=` is (a list of distinct ints or non-blank strs); their count against a fitted
        head is checked where the model predicts or is saved."""
        self._labels = check_label_names(labels) if labels is not None else None

    @property
    def model_head(self) -> Any:
        """The fitted head (None before training)."""
        return self._model_head

    @model_head.setter
    def model_head(self, head: Any) -> None:
        """A fitted head replaces the model's; an unfitted one (a scikit-learn estimator, as setfit users assign
        it) is what the next training fits, and the model has no fitted head until then."""
        if head is None or _is_fitted_head(head):
            self._model_head = head
            return
        _check_head_has_probabilities(head)
        self.head_spec = head
        self._model_head = None

    def new_head(self, num_classes: int, multi_label: bool) -> Any:
        """An unfitted head for ``num_classes`` classes, as configured at construction (``class_weight_given``:
        whether ``head_params`` named its class weight, even None, which training then keeps)."""
        from .heads import build_head

        head = build_head(self.head_spec, num_classes=num_classes, multi_label=multi_label,
                          multi_target_strategy=self.multi_target_strategy,
                          in_features=self.embedding_dim, use_differentiable_head=self.use_differentiable_head,
                          **self.head_params)
        head.class_weight_given = "class_weight" in self.head_params
        return head

    def with_body(self, model_body: SentenceTransformer) -> SetFitModel:
        """An untrained model with this one's settings (head, labels, prompt, long-text reading) and ``model_body``."""
        return SetFitModel(model_body, self.head_spec, **self.settings())

    def settings(self) -> dict[str, Any]:
        """The settings a model keeps whatever its body: labels, head settings, prompt, long-text reading, source.
        ``save_pretrained`` records them (`config`), ``from_pretrained`` restores them, and a model with
        another body (`with_body`, ``distillation.shrink_body``) is built with them."""
        return {"labels": self.labels, "multi_target_strategy": self.multi_target_strategy,
                "use_differentiable_head": self.use_differentiable_head, "head_params": dict(self.head_params),
                "normalize_embeddings": self.normalize_embeddings, "prompt": self.prompt,
                **self.chunking.to_config(), "inference_precision": self.inference_precision, "source": self.source}

    @property
    def embedding_dim(self) -> int:
        body = self.model_body
        getter = getattr(body, "get_embedding_dimension", None) or body.get_sentence_embedding_dimension
        return int(getter())

    @property
    def has_differentiable_head(self) -> bool:
        import torch

        head = self.model_head
        return isinstance(head, torch.nn.Module) or (head is None and self.use_differentiable_head)

    def settle_eval(self) -> None:
        """Switch the body and a torch head to eval mode where any part of them is in training mode (the state of
        a model that is not being trained; the trainer calls this when training ends)."""
        from .heads.torch_head import settle_eval

        settle_eval(self.model_body, self.model_head)

    # ---- encoding -----------------------------------------------------------------------------
    def tokenize(self, texts: list[str]) -> list[list[int]]:
        """Token ids (unpadded) of prompted texts: truncated to the body's max length, or whole when long texts
        are chunked (``embed_tokens`` then splits them into windows)."""
        return tokenize_texts(self.model_body.tokenizer, texts, self.prompt, self.model_body.max_seq_length,
                              truncate=not self.chunking.enabled)

    def affixes(self) -> tuple[list[int], list[int]]:
        """The ids before (special tokens, prompt) and after a tokenised text's own tokens, which every window
        of a chunked text repeats."""
        tokenizer = self.model_body.tokenizer
        return affixes(lambda texts, special: tokenizer(texts, add_special_tokens=special)["input_ids"],
                       self.prompt)

    def collate(self, token_ids: Sequence[list[int]]) -> dict[str, torch.Tensor]:
        """Pad a batch of token id lists into body features; a row longer than the body's max length is cut to its
        first window (the body's contrastive training reads a chunked text's first window)."""
        limit = self.model_body.max_seq_length
        if limit is not None and any(len(ids) > limit for ids in token_ids):
            suffix = self.affixes()[1]
            token_ids = [first_window(ids, limit, suffix) for ids in token_ids]
        batch = self.model_body.tokenizer.pad({"input_ids": list(token_ids)}, return_tensors="pt")
        return {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}

    def embed_tokens(self, token_ids: Sequence[list[int]], batch_size: int | None = None,
                     show_progress_bar: bool | None = None) -> np.ndarray:
        """Embeddings of pre-tokenised texts (an fp32 array; computed in `embedding_precision`), batched by
        length (``batch_size`` texts a pass; None for `default_batch_size`), returned in input order: the one path
        used by head fitting, evaluation and prediction. A text longer than the body's max length is embedded as
        its windows, pooled (``long_text="chunk"``). Reads the body only (a body in training mode is first switched
        to eval, see the class's note on threads)."""
        if batch_size is None:
            batch_size = self.default_batch_size()
        limit, chunking = self.model_body.max_seq_length, self.chunking
        if not chunking.enabled or limit is None:
            return self._embed_windows(token_ids, batch_size, show_progress_bar)
        prefix, suffix = self.affixes()
        windows = split_windows(token_ids, limit, chunking.chunk_overlap, prefix, suffix)
        embeddings = self._embed_windows(windows.token_ids, batch_size, show_progress_bar)
        return pool(embeddings, windows, chunking.chunk_pooling, normalize=self.normalize_embeddings)

    def _embed_windows(self, token_ids: Sequence[list[int]], batch_size: int, show_progress_bar: bool | None
                       ) -> np.ndarray:
        import torch
        from tqdm.auto import tqdm

        from .heads.torch_head import settle_eval

        batch_size = check_param("batch_size", batch_size)
        body = self.model_body
        device = body.device
        out = np.empty((len(token_ids), self.embedding_dim), dtype=np.float32)
        settle_eval(body)
        batches = length_sorted_batches(token_ids, batch_size)
        bar = tqdm(batches, desc="Encoding", disable=_bar_disable(show_progress_bar, len(token_ids)))
        if self.embedding_precision() == "bf16":
            body = self._bf16_body()
        with torch.inference_mode():
            for idx in bar:
                features = {k: v.to(device) for k, v in self.collate([token_ids[i] for i in idx]).items()}
                emb = body(features)["sentence_embedding"]
                if self.normalize_embeddings:
                    emb = torch.nn.functional.normalize(emb, dim=-1)
                out[idx] = emb.float().cpu().numpy()
        return out

    def encode(self, inputs: Sequence[str], batch_size: int | None = None,
               show_progress_bar: bool | None = None) -> np.ndarray:
        """The sentence embeddings of texts, as the head sees them (prompt, precision, long-text pooling).

        Args:
            inputs: The texts.
            batch_size: The texts encoded at once; None for `default_batch_size`.
            show_progress_bar: Whether to show a progress bar; None follows the library's setting.

        Returns:
            A float32 array `(n, embedding_dim)`.

        Raises:
            TypeError: The inputs are not texts.
        """
        texts = validate_texts(inputs)
        return self.embed_tokens(self.tokenize(texts), batch_size=batch_size, show_progress_bar=show_progress_bar)

    def default_batch_size(self) -> int:
        """The texts encoded at once when `predict`, `predict_proba` or `encode` gets no ``batch_size``: 64 where
        the body runs bf16 on a CPU with AMX tiles (1.18x the speed of 32 there, on validation texts), else 32
        (`trainers.registry.prediction_batch_size`)."""
        key = (self.embedding_precision(), str(self.device))
        cached = getattr(self, "_default_batch", None)
        if cached is None or cached[0] != key:  # asked once per precision and device (the rule reads /proc/cpuinfo)
            from trainers.registry import prediction_batch_size

            cached = self._default_batch = (key, prediction_batch_size(self.device, key[0]))
        return cached[1]

    # ---- prediction ---------------------------------------------------------------------------
    def _check_fitted(self) -> None:
        if self.model_head is None or self.labels is None:
            raise ValueError("this SetFitModel has no fitted head yet: train it with Trainer(...).train() "
                             "or load a trained model")
        classes = getattr(self.model_head, "num_classes", None)
        if classes is not None and classes != len(self.labels):
            raise ValueError(f"model.labels names {len(self.labels)} classes but the head predicts {classes}: "
                             f"give {classes} names, in the head's class order")

    def predict_proba(self, inputs: str | Iterable[str], batch_size: int | None = None, as_numpy: bool = False,
                      show_progress_bar: bool | None = None) -> np.ndarray | torch.Tensor:
        """The class probabilities of texts, columns in `labels` order, as setfit returns them.

        Args:
            inputs: One text (a `str`), an iterable of texts (streamed) or a text file (`os.PathLike`).
            batch_size: The texts encoded at once; None for `default_batch_size`.
            as_numpy: Whether to return a numpy array rather than setfit's tensor.
            show_progress_bar: Whether to show a progress bar; None follows the library's setting.

        Returns:
            A tensor (numpy with `as_numpy`) `(n, len(labels))`, one row for one text. With a scikit-learn head
            of `multi_target_strategy="multi-output"` each label has its two columns `[P(0), P(1)]`, shape
            `(n, L, 2)`, as scikit-learn's `MultiOutputClassifier` gives them (a torch head: `(n, L)`, as in
            setfit); `class_proba` gives the `(n, L)` numpy form for every head.

        Raises:
            TypeError: The inputs are not texts.
            ValueError: The model has no fitted head.
        """
        proba = self.class_proba(inputs, batch_size=batch_size, show_progress_bar=show_progress_bar)
        if self._answers_per_label():
            proba = np.stack([1.0 - proba, proba], axis=-1)
        return proba if as_numpy else _as_tensor(proba)

    def _answers_per_label(self) -> bool:
        """Whether the head answers each label apart, `[P(0), P(1)]` (scikit-learn's `MultiOutputClassifier`), as
        setfit's `predict_proba` shows it: the fitted head decides, not the setting (a torch head never does)."""
        from .heads import SklearnHead

        head = self.model_head
        return self.multi_label and isinstance(head, SklearnHead) and head.multi_target_strategy == "multi-output"

    def _array_output(self, array: np.ndarray, as_numpy: bool) -> np.ndarray | torch.Tensor:
        return array if as_numpy else _as_tensor(array)

    def _proba_chunk(self, texts: list[str], batch_size: int, show_progress_bar: bool | None) -> np.ndarray:
        embeddings = self.embed_tokens(self.tokenize(texts), batch_size, show_progress_bar)
        return np.asarray(self.model_head.predict_proba(embeddings), dtype=np.float32)

    # ---- ONNX ---------------------------------------------------------------------------------
    def export_onnx(self, path: str | os.PathLike, quantize: str | None = None, opset: int = 17,
                    calibration_texts: Sequence[str] | None = None) -> Path:
        """Export the model to one ONNX graph (token ids to probabilities) and its tokenizer, for prediction without
        torch; see [`export_onnx`][setfit_lite.exporting.onnx.export_onnx].

        Args:
            path: The folder to write (a new one, or one setfit_lite exported to).
            quantize: None (fp32), `"int8"` (dynamic quantisation) or `"int8-static"` (calibrated on
                `calibration_texts`).
            opset: The ONNX opset, in the range the installed torch's exporter writes (7 to 20 with torch 2.13).
            calibration_texts: The texts `"int8-static"` calibrates on.

        Returns:
            The folder written; load it with [`from_onnx`][setfit_lite.modeling.SetFitModel.from_onnx].
        """
        from .exporting.onnx import export_onnx

        return export_onnx(self, path, quantize=quantize, opset=opset, calibration_texts=calibration_texts)

    @staticmethod
    def from_onnx(path: str | os.PathLike, num_threads: int | None = None, runtime: str = "auto",
                  inference_precision: str = "auto", openvino_streams: int | None = None) -> Any:
        """Load a folder written by `export_onnx` (onnxruntime or OpenVINO; no torch).

        Args:
            path: The exported folder.
            num_threads: The threads a prediction uses; None for the CPUs this process may use.
            runtime: `"auto"` (OpenVINO for an fp32 graph on a CPU with AMX when it is installed, else
                onnxruntime; `OnnxSetFitModel.load`), `"onnxruntime"` or `"openvino"`.
            inference_precision: `"auto"` (OpenVINO: bf16 where the CPU computes bf16 natively, fp32 otherwise;
                onnxruntime: fp32), `"fp32"` or `"bf16"` (OpenVINO only); see `OnnxSetFitModel.load`.
            openvino_streams: OpenVINO's batches at once; None for one per thread, 1 for the lowest latency of one
                text (`OnnxSetFitModel.load`).

        Returns:
            An [`OnnxSetFitModel`][setfit_lite.runtime.onnx.OnnxSetFitModel].
        """
        from .runtime.onnx import OnnxSetFitModel

        return OnnxSetFitModel.load(path, num_threads=num_threads, runtime=runtime,
                                    inference_precision=inference_precision, openvino_streams=openvino_streams)

    # ---- static tier --------------------------------------------------------------------------
    def export_static(self, path: str | os.PathLike, texts: Iterable[str], labels: Iterable | None = None,
                      unlabeled_texts: Iterable[str] = (), **options: Any) -> Path:
        """Distil the body into static token embeddings (model2vec's format) with a head refitted on them.

        Args:
            path: The folder to write.
            texts: The texts the head is refitted on (a list, or any iterable of texts in order).
            labels: Their labels, in the same order; None for this model's predictions.
            unlabeled_texts: More texts, labelled by this model's predictions.
            **options: The options of [`export_static`][setfit_lite.exporting.static.export_static].

        Returns:
            The folder written; load it with [`from_static`][setfit_lite.modeling.SetFitModel.from_static].
        """
        from .exporting.static import export_static

        return export_static(self, path, texts, labels=labels, unlabeled_texts=unlabeled_texts, **options)

    @staticmethod
    def from_static(path: str | os.PathLike, num_threads: int | None = None) -> Any:
        """Load a folder written by `export_static` (numpy and tokenizers; no torch).

        Args:
            path: The exported folder.
            num_threads: The threads a prediction uses; None for the CPUs this process may use.

        Returns:
            A [`StaticSetFitModel`][setfit_lite.runtime.static.StaticSetFitModel].
        """
        from .runtime.static import StaticSetFitModel

        return StaticSetFitModel.load(path, num_threads=num_threads)

    # ---- saving -------------------------------------------------------------------------------
    def push_to_hub(self, *args: Any, **kwargs: Any) -> None:
        """setfit's upload to the Hugging Face Hub: not available here; save the model with
        `save_pretrained(path)` and upload the folder.

        Raises:
            RuntimeError: Always.
        """
        raise RuntimeError("push_to_hub is not available: this environment has no hub access. "
                           "Use model.save_pretrained(path) and upload the folder yourself.")

    def save_pretrained(self, save_directory: str | os.PathLike, model_card: str | None = None) -> None:
        """Save the model: the body in sentence-transformers' format, the head as safetensors and JSON (no pickle),
        a config, a model card and a manifest.

        A new folder appears complete or not at all. In an existing folder only the model's own files are
        written: same-named files are replaced and the files of a model saved there before (those its
        `manifest.json` lists) that this model does not write are removed; anything else is left alone. A file of
        that model changed since (a model card edited by hand) is yours: it is never replaced (`FileExistsError`).
        A process killed mid-save leaves the previous model or the new one, never a mix. `model_card_data` is
        saved in the config, so the model loaded again writes the same card.

        Args:
            save_directory: The folder to write.
            model_card: The model card's Markdown (a `str`); None for one generated from the model and its training.

        Raises:
            TypeError: `model_card` is neither a `str` nor None, checked before anything is written.
            FileExistsError: The path, or the nearest existing path above it, is not a folder, or the folder holds
                a file the save would replace that setfit_lite did not write or that changed since it wrote it (such
                as a `README.md` edited by hand), checked before anything is written.
            ValueError: The folder is, contains or lies inside the one this model was loaded from
                (`source_folder`), checked before anything is written; saving again into the folder of a model
                setfit_lite saved is allowed (only that model's files are replaced). A body or a setfit folder is
                never saved over.

        Example:
            ```python
            model.save_pretrained("my-model")
            model = SetFitModel.from_pretrained("my-model")
            ```
        """
        from .model_card import render_model_card

        if model_card is not None and not isinstance(model_card, str):
            raise TypeError(f"model_card must be the card's Markdown as a str, or None for a generated card; got "
                            f"{type(model_card).__name__}")
        source = self.source_folder
        check_output_path(save_directory, source, allow_same=source is not None and _is_saved_model(source),
                          suffix="saved")
        if self.model_head is not None:  # names the head's classes: a folder that would not load is not written
            self._check_fitted()
        check_can_update(save_directory)  # a file where a folder goes, or a file of the user's: before the save
        with atomic_update_directory(save_directory) as tmp:
            with quiet_dependencies():
                self.model_body.save(str(tmp))
            if self.model_head is not None:
                self.model_head.save(tmp / HEAD_DIR)
            save_json(tmp / CONFIG_NAME, self.config())
            save_json(tmp / SETFIT_CONFIG_NAME, self.setfit_config())
            (tmp / "README.md").write_text(model_card or render_model_card(self), encoding="utf-8")

    def create_model_card(self, path: str | os.PathLike, model_name: str | None = None) -> None:
        """Write the model card (README.md, as `save_pretrained` writes it) into a folder, as setfit's method does.

        Args:
            path: The folder; made if missing.
            model_name: The card's title when `model_card_data` names none.

        Raises:
            FileExistsError: `path` is a file, or `path/README.md` exists (it is never written over).

        Example:
            ```python
            model.create_model_card("card", model_name="my-model")  # writes card/README.md
            ```
        """
        from .model_card import write_model_card

        write_model_card(self, path, model_name)

    def setfit_config(self) -> dict[str, Any]:
        """What ``config_setfit.json`` holds: setfit's keys (a subclass adds its own, as setfit's span models do)."""
        return {"normalize_embeddings": self.normalize_embeddings, "labels": self.labels}

    def config(self) -> dict[str, Any]:
        return {
            "config_version": CONFIG_VERSION,
            "setfit_lite_version": __version__,
            **self.settings(),
            "use_differentiable_head": self.has_differentiable_head,
            "training_info": self.training_info,
            "model_card_data": card_data_config(self.model_card_data),  # the card's fields, restored on load
        }

    def to(self, device: str | torch.device) -> SetFitModel:
        """Move the body and a torch head to a device.

        Args:
            device: The device, such as `"cpu"` or `"cuda"`.

        Returns:
            This model.
        """
        import torch

        self.model_body.to(device)
        if isinstance(self.model_head, torch.nn.Module):
            self.model_head.to(device)
        return self

    @property
    def device(self) -> torch.device:
        """The body's device."""
        return self.model_body.device


def setfit_prompt(body: SentenceTransformer) -> str:
    """The prompt setfit's (sentence-transformers') ``encode`` applies: the body's default prompt, if it names one;
    a model trained by setfit was trained and is scored with it (`default_prompt` would add E5's ``query``)."""
    prompts = getattr(body, "prompts", None) or {}
    name = getattr(body, "default_prompt_name", None)
    return prompts.get(name, "") if name else ""


def default_prompt(body: SentenceTransformer) -> str:
    """The prompt the body's config asks for: its default prompt, else its ``query`` prompt (E5), else none."""
    prompts = getattr(body, "prompts", None) or {}
    name = getattr(body, "default_prompt_name", None)
    if name and name in prompts:
        return prompts[name]
    return prompts.get("query", "")


def capped_max_length(body: SentenceTransformer, max_length: int) -> int:
    """``max_length`` (checked by its rule), capped at the longest input ``body`` reads (its tokenizer's
    ``model_max_length``; at most 100,000): the one cap ``from_pretrained(max_length=)`` and the Trainer's
    ``max_length`` apply. A cap is logged."""
    limit = int(min(getattr(body.tokenizer, "model_max_length", 512) or 512, 100_000))
    if max_length > limit:
        logger.warning("max_length=%d is more than the body reads (%d tokens): using %d", max_length, limit, limit)
    return min(max_length, limit)


def _is_fitted_head(head: Any) -> bool:
    return head is not None and hasattr(head, "save") and getattr(head, "fitted", False)


def _check_head_has_probabilities(head: Any) -> None:
    """ValueError for a scikit-learn estimator without ``predict_proba`` (LinearSVC, SVC without probabilities,
    RidgeClassifier), before any training: every prediction goes through class probabilities."""
    from sklearn.base import BaseEstimator

    estimator = getattr(head, "estimator", head)
    if not isinstance(estimator, BaseEstimator):  # None, a name, a torch head
        return
    if not hasattr(estimator, "predict_proba"):
        name = type(estimator).__name__
        raise ValueError(f"model_head={name}(...) has no predict_proba: setfit_lite predicts through class "
                         "probabilities (predict, calibration, abstaining, the exported tiers); pass a classifier "
                         f"that gives them, e.g. CalibratedClassifierCV({name}()) or SVC(probability=True)")


def _body_source(name: str | os.PathLike) -> str:
    """What a model records as the body's source for ``from_pretrained(name)`` (the model card's `base_model` when it
    is a Hub id), decided when the body is loaded: a local folder as an absolute path (so that it never reads as a
    Hub id, whatever the current folder when the card is written), a known offline model by its canonical name
    (``all-minilm-l6-v2``: ``sentence-transformers/all-MiniLM-L6-v2``), any other name as given."""
    local = Path(name).expanduser()
    if local.is_dir():
        return os.path.abspath(local)
    return canonical_model_name(str(name)) or str(name)


_SETTING_DEFAULTS: dict[str, Any] = {"multi_target_strategy": None, "use_differentiable_head": False,
                                     "head_params": {}, "normalize_embeddings": False}


def _is_saved_model(folder: Path) -> bool:
    """Whether ``folder`` holds a model that setfit_lite saved (so every file of it is listed in its manifest)."""
    return (folder / CONFIG_NAME).is_file() and (folder / MANIFEST_NAME).is_file()


def load_model_folder(model_dir: str | os.PathLike, runtime: str = "auto") -> Any:
    """Load any model folder: a saved `SetFitModel`, or, without importing torch, an exported one.

    Args:
        model_dir: A folder written by `save_pretrained`, `export_onnx` or `export_static` (or `setfit-lite export`).
        runtime: The runtime of an ONNX folder: `"auto"`, `"onnxruntime"` or `"openvino"`.

    Returns:
        A [`SetFitModel`][setfit_lite.modeling.SetFitModel],
        [`OnnxSetFitModel`][setfit_lite.runtime.onnx.OnnxSetFitModel] or
        [`StaticSetFitModel`][setfit_lite.runtime.static.StaticSetFitModel]; each predicts with the same methods.
    """
    recover_interrupted_save(model_dir)  # a re-export killed after its commit point may still show the old kind
    kind = exported_format(model_dir)
    if kind == "onnx":
        return SetFitModel.from_onnx(model_dir, runtime=runtime)
    if kind == "static":
        return SetFitModel.from_static(model_dir)
    return SetFitModel.from_pretrained(model_dir)


def exported_format(folder: str | os.PathLike) -> Literal["onnx", "static"] | None:
    """Which exported format a folder holds, read from its config file's name (nothing heavy is imported).

    Args:
        folder: The folder.

    Returns:
        `"onnx"` or `"static"` for a folder written by `export_onnx` or `export_static`, else None.
    """
    from .runtime.onnx import ONNX_CONFIG_NAME
    from .runtime.static import STATIC_CONFIG_NAME

    if (Path(folder) / ONNX_CONFIG_NAME).is_file():
        return "onnx"
    if (Path(folder) / STATIC_CONFIG_NAME).is_file():
        return "static"
    return None


def _check_model_folder(folder: Path) -> None:
    """ValueError for folders ``from_pretrained`` cannot load, saying why: ONNX and static exports, folders with no
    model."""
    kind = exported_format(folder)
    if kind is not None:
        raise ValueError(f"{folder} is a folder exported with export_{kind}, not a saved model: load it with "
                         f"SetFitModel.from_{kind}({str(folder)!r})")
    if not any((folder / name).is_file() for name in (CONFIG_NAME, "modules.json", "config.json")):
        raise ValueError(f"{folder} holds no model: it has no {CONFIG_NAME} (a setfit_lite model), no modules.json "
                         "(a sentence-transformers model) and no config.json (a transformers model)")
    from .heads import HEAD_CONFIG_NAME

    if not (folder / CONFIG_NAME).is_file() and (folder / HEAD_DIR / HEAD_CONFIG_NAME).is_file():
        raise ValueError(f"{folder} holds a setfit_lite head ({HEAD_DIR}/) but no {CONFIG_NAME}: a saved model "
                         "missing its config (deleted or not copied); it would load as a bare body, its trained "
                         "head ignored. Save the model again, or copy the whole folder")


def _read_config(folder: Path) -> dict[str, Any]:
    """The config of a saved setfit_lite model, after checking every file against the manifest."""
    config_path = folder / CONFIG_NAME
    config = load_json(config_path, what="setfit_lite model config")
    if not isinstance(config, dict):
        raise ValueError(f"setfit_lite model config file {config_path} must hold a JSON object")
    verify_manifest(folder)
    check_version(config, "config_version", CONFIG_VERSION, config_path)
    check_labels(config, "labels", config_path, optional=True)
    check_type(config, "use_differentiable_head", config_path, bool, optional=True)
    setfit_path = folder / SETFIT_CONFIG_NAME
    if setfit_path.is_file():  # setfit's copy of the labels, for setfit's readers: the same list or none
        setfit_config = load_json(setfit_path, what="setfit config")
        same_labels(setfit_path, "labels", check_labels(setfit_config, "labels", setfit_path, optional=True),
                    config.get("labels"), f"{CONFIG_NAME}'s labels")
    return config


def _check_head_against_config(folder: Path, config: dict[str, Any], head: Any) -> None:
    """A saved head must have one output per saved label and be the kind ``use_differentiable_head`` says."""
    import torch

    from .heads import HEAD_CONFIG_NAME

    if head is None:
        return
    config_path, head_config = folder / CONFIG_NAME, f"{HEAD_DIR}/{HEAD_CONFIG_NAME}"
    if config.get("labels") is not None:
        check_count(config_path, "labels", len(config["labels"]), head.num_classes, f"{head_config}'s num_classes")
    differentiable = isinstance(head, torch.nn.Module)
    if config.get("use_differentiable_head") not in (None, differentiable):
        raise ModelFormatError(config_path, "use_differentiable_head",
                               f"is {config['use_differentiable_head']} but {head_config} holds a "
                               f"{'torch' if differentiable else 'scikit-learn'} head: the folder's files do not "
                               "match")


def _head_file(folder: Path) -> Path:
    """The file that says what a loaded head takes: setfit_lite's head config, or setfit's pickled head."""
    from .heads import HEAD_CONFIG_NAME
    from .heads.setfit_format import SETFIT_HEAD_NAME

    ours = folder / HEAD_DIR / HEAD_CONFIG_NAME
    return ours if ours.is_file() else folder / SETFIT_HEAD_NAME


def _settings(saved: dict[str, Any], given: dict[str, Any], head: Any, where: Path | None) -> dict[str, Any]:
    """The head settings of a loaded model: the saved ones, replaced by the given ones (not None).

    A given value that differs from the saved one is refused when there is a fitted head: it could not apply.
    """
    from .heads import SklearnHead

    out = {}
    for name, default in _SETTING_DEFAULTS.items():
        value = saved.get(name)
        value = default if value is None else value
        wanted = given[name]
        accepted = [value]
        if name == "multi_target_strategy" and isinstance(head, SklearnHead):
            accepted.append(head.multi_target_strategy)  # None in the config means the head's default wrapper
        if wanted is not None and wanted not in accepted:
            if head is not None:
                shown = accepted[-1] if value is None else value
                raise ValueError(f"{name}={wanted!r} conflicts with the model saved in {where}, which has "
                                 f"{name}={shown!r} and a fitted head it cannot change; omit {name} or pass "
                                 f"{shown!r}")
            value = wanted
        out[name] = value
    return out


#: the values per parameter tensor that `weights_key` sums (spread over the whole tensor)
KEY_SAMPLES = 1024


def weights_key(body: Any) -> tuple:
    """What tells whether ``body``'s weights changed since a copy was made of them: per parameter its device, storage,
    version counter and the sum of `KEY_SAMPLES` values spread over it. The version counter alone misses torch's
    fused AdamW (which setfit_lite's CPU and CUDA training use): it updates weights in place without counting a
    version, so a copy keyed on versions outlived the training it predated. Any dense update (every AdamW step, with
    its weight decay) moves the sampled sums; one device sync, about a millisecond for MiniLM-L6 on CPU."""
    import torch

    params = list(body.parameters())
    with torch.no_grad():
        sums = torch.stack([p.detach().reshape(-1)[::max(1, p.numel() // KEY_SAMPLES)].sum(dtype=torch.float32)
                            for p in params]).tolist() if params else []
    return tuple((str(p.device), p.data_ptr(), p._version) for p in params), tuple(sums)


def bf16_copy(body: Any, cached: tuple[Any, Any] | None) -> tuple[Any, Any]:
    """``(key, copy)``: a copy of ``body`` with its weights in bf16, ``cached`` when that was made from the body as
    it is now (same object and `weights_key`: an optimizer step, fused or not, ``load_state_dict`` or a move to
    another device changes it).

    Weights in bf16 rather than autocast: measured side by side (``python -m benchmarks.precision modes``, MiniLM-L6,
    SST-2 test, batch 64, 2 threads, AVX512-BF16 without AMX) 1.22x fp32 against autocast's 0.98x, cosine to fp32
    >= 0.9998; on an AMX Xeon a user's run gave 3.25x against 2.55x."""
    import torch

    key = weights_key(body)
    if cached is not None and cached[0][0]() is body and cached[0][1] == key:
        return cached
    return (weakref.ref(body), key), copy.deepcopy(body).to(torch.bfloat16).eval()


def _saved_precision(saved: dict[str, Any], folder: Path) -> str:
    """A saved model's ``inference_precision`` ("auto" when it records none), checked."""
    value = saved.get("inference_precision", "auto")
    try:
        return check_param("inference_precision", value)
    except (TypeError, ValueError) as error:
        raise ModelFormatError(folder / CONFIG_NAME, "inference_precision", str(error)) from None


def _head_in_features(head: Any) -> int | None:
    """The embedding size a fitted head takes (None if it does not say)."""
    features = getattr(head, "in_features", None) or getattr(getattr(head, "estimator", None), "n_features_in_", None)
    return int(features) if features is not None else None


def _as_tensor(array: np.ndarray) -> torch.Tensor:
    import torch

    return torch.as_tensor(array)


def _bar_disable(flag: bool | None, n: int) -> bool | None:
    """tqdm's ``disable=`` for encoding ``n`` texts: a bar when asked (``flag``), or by default for 10,000 or more."""
    return tqdm_disable(flag if flag is not None else n >= 10_000)

