"""setfit_lite: few-shot text classification with Sentence Transformers, setfit's API, faster and safer."""

__version__ = "0.1.0"

from .data import sample_dataset  # noqa: E402
from .modeling import SetFitModel  # noqa: E402
from .trainer import Trainer  # noqa: E402
from .training_args import TrainingArguments  # noqa: E402

__all__ = ["SetFitModel", "Trainer", "TrainingArguments", "sample_dataset", "__version__"]
