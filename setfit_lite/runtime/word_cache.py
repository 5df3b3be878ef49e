"""Token ids by the space-separated word, remembered: the tokenizer step of the static tier and of the exported
transformer tiers (`TokenizerFile`) without re-tokenising the words it has seen.

With a BERT-style ``tokenizer.json`` (a normalizer that works character by character, a pre-tokenizer that splits
on whitespace and punctuation, WordPiece or a word-level vocabulary) a space never falls inside a token and never
changes the tokens around it, so a text's ids are the concatenation of its space-separated words' ids. Words repeat
(Zipf): after a few thousand texts almost every word is known, and a text costs a split and a few dictionary
lookups instead of a pass through the tokenizer and the conversion of its encodings into Python lists. The ids are
the tokenizer's own, word for word: the tokenizer computes every word's ids the first time it is seen.

Any other tokenizer (SentencePiece, byte-level BPE, a normalizer that looks across characters, an added token with
a space in it) is run as it is (`word_cache_applies` says which).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import Any

import numpy as np

__all__ = ["MAX_CACHED_WORDS", "MAX_CACHED_WORD_LENGTH", "WordCachedTokenizer", "word_cache_applies"]

MAX_CACHED_WORDS = 1 << 17
"""Words remembered at most (about 20 MB of ordinary words); past it a new cache starts, with the words of the call
that filled it."""
MAX_CACHED_WORD_LENGTH = 64
"""Longer words (a URL, a run of CJK characters without spaces) are tokenised each time and never remembered: no
text can make an entry large, so `MAX_CACHED_WORDS` bounds the memory."""
WORDS_PER_PASS = 512
"""New words tokenised in one text (64 to 4,096 alike, 5.5x one text a word: `benchmarks.speed_defaults`)."""

# normalizers that map each character on its own (none looks at its neighbours), and pre-tokenizers that split on
# whitespace (and maybe punctuation) without adding anything at a word's start
_PER_CHARACTER_NORMALIZERS = {"BertNormalizer", "Lowercase", "StripAccents", "NFD", "NFKD", "NFC", "NFKC"}
_WHITESPACE_PRE_TOKENIZERS = {"BertPreTokenizer", "Whitespace", "WhitespaceSplit", "Punctuation", "Digits"}


def _parts(component: dict[str, Any] | None, key: str) -> list[dict[str, Any]]:
    """A ``tokenizer.json`` component as its list of parts (a ``Sequence``'s, else itself; none for null)."""
    if component is None:
        return []
    return [part for item in component.get(key, [component]) for part in _parts(item, key)] \
        if component.get("type") == "Sequence" else [component]


def word_cache_applies(tokenizer_json: dict[str, Any]) -> bool:
    """Whether a text's ids are its space-separated words' ids put end to end, for this ``tokenizer.json``
    (parsed): a WordPiece or WordLevel model, a normalizer of per-character steps, a pre-tokenizer that splits on
    whitespace, and no added token that contains a space."""
    model = tokenizer_json.get("model") or {}
    normalizers = _parts(tokenizer_json.get("normalizer"), "normalizers")
    pre_tokenizers = _parts(tokenizer_json.get("pre_tokenizer"), "pretokenizers")
    return (model.get("type") in {"WordPiece", "WordLevel"}
            and all(part.get("type") in _PER_CHARACTER_NORMALIZERS for part in normalizers)
            and bool(pre_tokenizers)
            and any(part.get("type") in {"BertPreTokenizer", "Whitespace", "WhitespaceSplit"}
                    for part in pre_tokenizers)
            and all(part.get("type") in _WHITESPACE_PRE_TOKENIZERS for part in pre_tokenizers)
            and not any(" " in token.get("content", "") for token in tokenizer_json.get("added_tokens") or []))


class WordCachedTokenizer:
    """Flat token ids of texts (no special tokens), each space-separated word tokenised once and remembered.

    Args:
        backend: A ``tokenizers.Tokenizer`` for which `word_cache_applies`, without truncation or padding.
        max_words: Words remembered at most.
    """

    def __init__(self, backend: Any, max_words: int = MAX_CACHED_WORDS) -> None:
        self.backend = backend
        self.max_words = max_words
        self._cache: dict[str, tuple[int, ...]] = {}

    def word_ids(self, words: Sequence[str]) -> list[tuple[int, ...]]:
        """Each word's ids, from the tokenizer: `WORDS_PER_PASS` words at a time joined by spaces into one text
        (one encoding costs about what one word's does), each token given to the word its last character is in
        (an added token with ``lstrip``, such as MPNet's ``<mask>``, starts at the space before its word)."""
        out: list[tuple[int, ...]] = []
        for first in range(0, len(words), WORDS_PER_PASS):
            part = words[first:first + WORDS_PER_PASS]
            sizes = np.fromiter(map(len, part), dtype=np.int64, count=len(part))
            starts = np.cumsum(sizes + 1) - sizes - 1  # each word's first character in the joined text
            encoding = self.backend.encode(" ".join(part), add_special_tokens=False)
            token_lasts = np.fromiter((max(start, end - 1) for start, end in encoding.offsets), dtype=np.int64,
                                      count=len(encoding.ids))
            owners = np.searchsorted(starts, token_lasts, side="right") - 1
            bounds = np.concatenate([[0], np.cumsum(np.bincount(owners, minlength=len(part)))]).tolist()
            ids = encoding.ids
            out.extend(tuple(ids[bounds[i]:bounds[i + 1]]) for i in range(len(part)))
        return out

    def flat_ids(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(flat ids, lengths)``: every text's ids end to end (int64) and each text's count of them, as the
        tokenizer gives them with ``add_special_tokens=False``. Thread-safe: a call that would fill the cache past
        `max_words` starts a new one with its own words (a call still reading the old one reads it whole)."""
        words = [text.split(" ") for text in texts]
        counts = np.fromiter(map(len, words), dtype=np.int64, count=len(words))
        every = list(chain.from_iterable(words))
        cache = self._cache
        unique = set(every)
        missing = list(unique.difference(cache))
        long_words: dict[str, tuple[int, ...]] = {}
        if missing:
            if len(cache) + len(missing) > self.max_words:
                # a new cache with this call's known words (entries are never removed, so this one stays whole)
                cache = self._cache = {word: cache[word] for word in unique if word in cache}
            for word, word_ids in zip(missing, self.word_ids(missing)):
                (cache if len(word) <= MAX_CACHED_WORD_LENGTH else long_words)[word] = word_ids
        if long_words:
            ids = [cache[word] if word in cache else long_words[word] for word in every]
        else:
            ids = list(map(cache.__getitem__, every))
        per_word = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        flat = np.fromiter(chain.from_iterable(ids), dtype=np.int64, count=int(per_word.sum()))
        lengths = np.zeros(len(texts), dtype=np.int64)
        # every text has at least one word ("".split(" ") == [""]), so each text's words start where the last ended
        starts = np.cumsum(counts) - counts
        if len(per_word):
            lengths[:] = np.add.reduceat(per_word, starts)
        return flat, lengths
