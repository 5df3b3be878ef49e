"""Shared fixtures: a tiny BERT sentence-transformer built in the test session (no downloads)."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# prediction in fp32 whatever the CPU, so that comparisons between tiers do not depend on the machine; the tests of
# bf16 prediction (test_inference_precision.py) remove it
os.environ.setdefault("SETFIT_LITE_INFERENCE_PRECISION", "fp32")

POSITIVE = ["good", "great", "wonderful", "excellent", "lovely", "superb", "brilliant", "fine", "nice", "happy"]
NEGATIVE = ["bad", "awful", "terrible", "horrible", "dull", "boring", "poor", "sad", "ugly", "weak"]
FILLER = ["the", "movie", "film", "was", "a", "really", "quite", "story", "plot", "acting", "very", "so"]


def make_sentences(n_per_class: int = 12, seed: int = 0) -> tuple[list[str], list[str]]:
    """Toy sentiment sentences: positive/negative words among filler words."""
    rng = random.Random(seed)
    texts, labels = [], []
    for label, words in (("positive", POSITIVE), ("negative", NEGATIVE)):
        for _ in range(n_per_class):
            sent = rng.sample(FILLER, 4) + [rng.choice(words), rng.choice(words)]
            rng.shuffle(sent)
            texts.append(" ".join(sent))
            labels.append(label)
    return texts, labels


def build_tiny_body(path: Path, vocab_words: list[str] | None = None, hidden_size: int = 32,
                    num_layers: int = 2) -> Path:
    """A BERT (2 layers, 32-dim by default) with a word-level tokenizer, saved as a sentence-transformers folder."""
    import torch
    from sentence_transformers import SentenceTransformer, models
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordLevel
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    words = vocab_words or sorted(set(POSITIVE + NEGATIVE + FILLER))
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {w: i for i, w in enumerate(specials + words)}
    tok = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]", model_max_length=64)
    hf_dir = path / "hf"
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=hidden_size, num_hidden_layers=num_layers,
                        num_attention_heads=2, intermediate_size=2 * hidden_size, max_position_embeddings=64)
    BertModel(config).save_pretrained(hf_dir)
    fast.save_pretrained(hf_dir)
    transformer = models.Transformer(str(hf_dir), max_seq_length=64)
    pooling = models.Pooling(hidden_size, pooling_mode="mean")
    st_dir = path / "st"
    SentenceTransformer(modules=[transformer, pooling], device="cpu").save(str(st_dir))
    return st_dir


@pytest.fixture(scope="session")
def tiny_body_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(build_tiny_body(tmp_path_factory.mktemp("tiny_body")))


@pytest.fixture()
def toy_data() -> dict[str, list[str]]:
    texts, labels = make_sentences(12, seed=0)
    return {"text": texts, "label": labels}


@pytest.fixture()
def toy_eval() -> dict[str, list[str]]:
    texts, labels = make_sentences(10, seed=1)
    return {"text": texts, "label": labels}


@pytest.fixture(scope="session")
def tier_models(tiny_body_path: str, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One fitted model of each prediction tier on the tiny body: ``torch`` (logistic-regression head),
    ``torch-differentiable`` (a torch head with dropout), ``onnx`` and ``static`` (both exported from ``torch``)."""
    from setfit_lite import SetFitModel

    texts, labels = make_sentences(12, seed=0)
    models = {}
    for name, options in (("torch", {}), ("torch-differentiable", {"use_differentiable_head": True,
                                                                   "head_params": {"dropout": 0.5}})):
        model = SetFitModel.from_pretrained(tiny_body_path, labels=["positive", "negative"], **options)
        head = model.new_head(2, multi_label=False)
        head.fit(model.encode(texts), model.label_ids(labels))
        model.model_head = head
        models[name] = model
    folder = tmp_path_factory.mktemp("tiers")
    models["onnx"] = SetFitModel.from_onnx(models["torch"].export_onnx(folder / "onnx"))
    models["static"] = SetFitModel.from_static(models["torch"].export_static(
        folder / "static", texts, labels, pca_dims=16, dtype="float32", refine_epochs=0))
    models["folders"] = {"onnx": folder / "onnx", "static": folder / "static"}  # to load them again
    return models
