"""`text_key` drops the invisible characters a BERT-style tokenizer deletes (Unicode format and control characters:
a BOM, a zero-width space, a soft hyphen, a word joiner, direction marks, NUL), so the pool/eval check, the pool's
dedup and the trainer's evaluate check see a text with them as the text the model reads."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import make_sentences

from setfit_lite import SetFitModel, Trainer, TrainingArguments
from setfit_lite.data.checks import text_key
from setfit_lite.training.self_training import check_disjoint, pool_without

INVISIBLE = ["\ufeff", "\u200b", "\u00ad", "\u2060", "\u200e", "\u200f", "\x00"]


@pytest.mark.parametrize("mark", INVISIBLE)
def test_a_text_with_an_invisible_character_has_the_key_of_the_text_without_it(mark: str) -> None:
    assert text_key(mark + "good film") == text_key("good film" + mark) == "good film"
    assert text_key("good " + mark + "film") == text_key("good film")
    assert text_key("good" + mark + "film") == text_key("goodfilm")  # deleted, not a space: as the tokenizer
    assert text_key(mark) == ""


def test_whitespace_and_visible_text_keep_their_meaning() -> None:
    assert text_key("good\tfilm\n") == text_key("good\x1c film\r\n") == "good film"  # control whitespace collapses
    assert text_key("Ｇood\u00a0FILM") == "good film"
    assert text_key("cafe\u200b\u0301") == text_key("café")  # removed before NFKC composes
    assert text_key("good film") != text_key("good films")


def test_the_model_reads_them_as_one_text(tiny_body_path: str) -> None:
    model = SetFitModel.from_pretrained(tiny_body_path)
    texts = ["good film"] + [mark + "good film" for mark in INVISIBLE]
    embeddings = model.encode(texts)
    assert np.abs(embeddings - embeddings[0]).max() < 1e-5
    assert len({text_key(t) for t in texts}) == 1


def test_the_pool_and_eval_check_and_the_pool_dedup_see_invisible_characters(tiny_body_path: str) -> None:
    texts, labels = make_sentences(12, seed=0)
    pool = ["\ufeff" + texts[0], texts[1] + "\u200b", texts[2].replace(" ", " \u00ad", 1)]
    with pytest.raises(ValueError, match="shares 3 text"):
        check_disjoint(pool, texts[:4], "the eval dataset")
    assert pool_without(pool + ["a new \u2060text"], texts) == ["a new \u2060text"]
    with pytest.raises(ValueError, match="no text left"):
        pool_without(pool, texts)
    with pytest.raises(ValueError, match="shares 3 text"):
        Trainer(SetFitModel.from_pretrained(tiny_body_path),
                TrainingArguments(max_steps=2, backend="cpu", show_progress_bar=False),
                train_dataset={"text": texts[4:], "label": labels[4:]},
                eval_dataset={"text": texts[:4], "label": labels[:4]}, unlabeled_dataset=pool)
