"""The benchmarks' smoke mode: what ``--smoke`` runs on, so that every README benchmark command can be run as written
in a fresh clone (and in the test suite) in seconds; it checks that a command runs, not what it measures.

`smoke_settings` writes a data folder of synthetic texts under every task name the benchmarks read (each with its
task's number of classes; aspect-labelled sentences under the ABSA domains) and builds a tiny BERT body in code
(`build_tiny_body`, the one the tests use too);
`apply_smoke` points a script's parsed options at them: one seed, two tasks, a few test texts, two training steps,
results in a temporary folder, and the peers (setfit, FastFit, small-text) left out with a printed line.

Example:
    >>> texts, labels = make_sentences(2, seed=0)
    >>> len(texts), sorted(set(labels))
    (4, ['negative', 'positive'])
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
from pathlib import Path

from benchmarks.workdir import process_folder

POSITIVE = ["good", "great", "wonderful", "excellent", "lovely", "superb", "brilliant", "fine", "nice", "happy"]
NEGATIVE = ["bad", "awful", "terrible", "horrible", "dull", "boring", "poor", "sad", "ugly", "weak"]
FILLER = ["the", "movie", "film", "was", "a", "really", "quite", "story", "plot", "acting", "very", "so"]

#: the tasks of the smoke data folder and their number of classes (those the benchmarks read)
SMOKE_TASKS = {"sst2": 2, "sst5": 5, "emotion": 6, "trec": 6, "subj": 2, "tweet_sentiment_multilingual": 3,
               "bbc_news": 5, "clinc150": 8}
#: the ABSA domains of the smoke data folder (``<domain>/{train,test}_sentences.jsonl``, as benchmarks.absa reads)
SMOKE_ABSA_DOMAINS = ("restaurants", "laptops")
ASPECT_NOUNS = ["food", "service", "staff", "pizza", "screen", "battery", "keyboard", "price"]
#: options naming a peer's Python, and the peer (skipped in smoke mode)
PEER_OPTIONS = {"setfit_python": "setfit 1.2", "fastfit_python": "FastFit", "smalltext_python": "small-text"}
PEER_CONTENDERS = ("setfit", "fastfit", "smalltext")
#: the environment variable that hands the smoke mode's TrainingArguments to the benchmarks' worker processes
SMOKE_ARGS_ENV = "SETFIT_LITE_SMOKE_TRAIN_ARGS"


def make_sentences(n_per_class: int = 12, seed: int = 0) -> tuple[list[str], list[str]]:
    """Toy sentiment sentences: positive/negative words among filler words.

    Args:
        n_per_class: Sentences per class.
        seed: The random seed.

    Returns:
        ``(texts, labels)``, labels `"positive"` / `"negative"`.
    """
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
                    num_layers: int = 2, max_length: int = 64) -> Path:
    """A BERT (2 layers, 32-dim by default) with a word-level tokenizer, saved as a sentence-transformers folder.

    Args:
        path: The folder to build in (its ``st`` subfolder is the model).
        vocab_words: The tokenizer's words (default: the words of `make_sentences`).
        hidden_size: The hidden size.
        num_layers: The transformer layers.
        max_length: The position embeddings and the model's maximum sequence length.

    Returns:
        The sentence-transformers folder.
    """
    import torch
    from sentence_transformers import SentenceTransformer, models
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordLevel
    from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

    words = vocab_words or sorted(set(POSITIVE + NEGATIVE + FILLER))
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab = {w: i for i, w in enumerate(specials + [w for w in words if w not in specials])}
    tok = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]", model_max_length=max_length)
    hf_dir = path / "hf"
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(vocab), hidden_size=hidden_size, num_hidden_layers=num_layers,
                        num_attention_heads=2, intermediate_size=2 * hidden_size, max_position_embeddings=max_length)
    BertModel(config).save_pretrained(hf_dir)
    fast.save_pretrained(hf_dir)
    transformer = models.Transformer(str(hf_dir), max_seq_length=max_length)
    pooling = models.Pooling(hidden_size, pooling_mode="mean")
    st_dir = path / "st"
    SentenceTransformer(modules=[transformer, pooling], device="cpu").save(str(st_dir))
    return st_dir


def _smoke_rows(task: str, classes: int, split: str) -> list[dict]:
    """Synthetic rows of one split: class c's texts carry the words ``topicC`` among filler words."""
    rng = random.Random(f"{task}/{split}")
    per_class = {"train": 36, "validation": 6, "test": 6}[split]
    rows = []
    for i in range(per_class):
        for label in range(classes):
            words = rng.sample(FILLER, 5) + [f"topic{label}", rng.choice(POSITIVE if label % 2 else NEGATIVE)]
            rng.shuffle(words)
            row = {"text": " ".join(words) + f" number{i}", "label": label, "label_text": f"class {label}",
                   "lang": "en"}
            if task == "trec":  # TREC's fine labels (many_classes.py: trec_fine)
                row["fine_label_text"] = f"fine{label}:{i % 2}"
            rows.append(row)
    if task == "tweet_sentiment_multilingual":  # scored on the languages other than English
        rows += [{**r, "lang": "de"} for r in rows]
    return rows


def _smoke_absa_sentences(domain: str, split: str) -> list[dict]:
    """Synthetic aspect-labelled sentences of one split ("On our visit the food was good and the staff was awful":
    "visit" is a candidate that is no aspect); a few of the test sentences have no aspect."""
    rng = random.Random(f"{domain}/{split}")
    sentences = []
    for i in range(16 if split == "train" else 12):
        nouns = rng.sample(ASPECT_NOUNS, 2)
        labels = [rng.choice(["positive", "negative"]) for _ in nouns]
        words = [rng.choice(POSITIVE if label == "positive" else NEGATIVE) for label in labels]
        if split == "test" and i % 4 == 3:  # no aspect: its false positives count
            sentences.append({"id": f"{split}{i}", "text": f"it was {words[0]}.", "aspects": []})
            continue
        text = f"On our visit the {nouns[0]} was {words[0]} and the {nouns[1]} was {words[1]}."  # visit: no aspect
        sentences.append({"id": f"{split}{i}", "text": text,
                          "aspects": [{"span": n, "label": label, "ordinal": 0} for n, label in zip(nouns, labels)]})
    return sentences


@functools.cache
def smoke_settings() -> dict:
    """What ``--smoke`` runs on, made once per process.

    Returns:
        ``model`` (a tiny body built here), ``data_dir`` (synthetic train/validation/test splits under every name
        of `SMOKE_TASKS`, train/test sentences under `SMOKE_ABSA_DOMAINS`), ``test_limit``, ``train_args`` (two
        steps) and ``out_dir`` (for the results); all in one temporary folder, removed when the process exits.
    """
    root = process_folder("setfit_lite_smoke_")  # removed when the process ends
    words: set[str] = set()
    for task, classes in SMOKE_TASKS.items():
        (root / task).mkdir()
        for split in ("train", "validation", "test"):
            rows = _smoke_rows(task, classes, split)
            words.update(w for r in rows for w in r["text"].split())
            (root / task / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows),
                                                        encoding="utf-8")
    for domain in SMOKE_ABSA_DOMAINS:
        (root / domain).mkdir()
        for split in ("train", "test"):
            sentences = _smoke_absa_sentences(domain, split)
            words.update(w.strip(".").lower() for s in sentences for w in s["text"].split())
            (root / domain / f"{split}_sentences.jsonl").write_text(
                "".join(json.dumps(s) + "\n" for s in sentences), encoding="utf-8")
    words.update("sadness joy love anger fear surprise class this sentence is".split())  # zero_shot.py's labels
    body = build_tiny_body(root / "body", sorted(words), num_layers=4, max_length=512)  # --student 3 keeps 3
    return {"model": str(body), "data_dir": root, "test_limit": 12, "train_args": {"max_steps": 2},
            "out_dir": root / "results"}


def smoke_train_args() -> dict:
    """The TrainingArguments the smoke mode adds to every setfit_lite run of a worker process (none outside it)."""
    return json.loads(os.environ.get(SMOKE_ARGS_ENV) or "{}")


def add_smoke_option(parser: argparse.ArgumentParser) -> None:
    """Add ``--smoke`` to a benchmark's parser."""
    parser.add_argument("--smoke", action="store_true",
                        help="check that the command runs: a tiny body built in code, a few synthetic texts, one "
                             "seed, two training steps, peers skipped, results in a temporary folder")


def apply_smoke(ns: argparse.Namespace, parser: argparse.ArgumentParser, name: str) -> argparse.Namespace:
    """Point a benchmark's parsed options at `smoke_settings` (where ``ns.smoke`` is set; else nothing changes):
    the data folder, the body, one seed, the test and validation limits, two training steps (``lite_args``,
    ``train_args``), no peers (printed), and ``out`` in the temporary folder unless the command gave one.

    Args:
        ns: The parsed options.
        parser: Their parser (for the default of ``--out``).
        name: The results' file name in the temporary folder.

    Returns:
        ``ns``.
    """
    if not getattr(ns, "smoke", False):
        return ns
    smoke = smoke_settings()
    for attr in ("data_dir", "data"):
        if hasattr(ns, attr):
            setattr(ns, attr, smoke["data_dir"])
    if hasattr(ns, "model"):
        ns.model = smoke["model"]
    for attr in ("test_limit", "val_limit"):
        if hasattr(ns, attr):
            setattr(ns, attr, smoke["test_limit"])
    if getattr(ns, "seeds", None):
        ns.seeds = ns.seeds[:1]
    if getattr(ns, "tasks", None):  # two of the tasks: a command's path, in seconds
        ns.tasks = ns.tasks[:2]
    for attr, peer in PEER_OPTIONS.items():
        if hasattr(ns, attr):
            print(f"smoke: {peer} skipped (--smoke runs setfit_lite only)", flush=True)
            setattr(ns, attr, None)
    if hasattr(ns, "skip_setfit"):
        ns.skip_setfit = True
    if hasattr(ns, "contenders"):
        ns.contenders = [c for c in ns.contenders if c not in PEER_CONTENDERS]
    if hasattr(ns, "lite_args"):
        given = json.loads(ns.lite_args) if isinstance(ns.lite_args, str) else ns.lite_args
        merged = {**given, **smoke["train_args"]}
        ns.lite_args = json.dumps(merged) if isinstance(ns.lite_args, str) else merged
    ns.train_args = dict(smoke["train_args"])
    os.environ[SMOKE_ARGS_ENV] = json.dumps(smoke["train_args"])  # for the workers this process starts
    if hasattr(ns, "out") and ns.out == parser.get_default("out"):
        ns.out = smoke["out_dir"] / name
    return ns
