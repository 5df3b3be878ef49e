"""Aspect-based sentiment analysis (setfit's SetFitABSA): ``AbsaModel``, ``AbsaTrainer``, ``AspectModel``,
``PolarityModel``. Needs spaCy and an English pipeline: ``pip install 'setfit_lite[absa]'``."""

from .aspect_extractor import AspectExtractor
from .modeling import AbsaModel, AspectModel, PolarityModel, SpanSetFitModel
from .trainer import AbsaTrainer

__all__ = ["AbsaModel", "AbsaTrainer", "AspectExtractor", "AspectModel", "PolarityModel", "SpanSetFitModel"]
