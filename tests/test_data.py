"""Tests for setfit_lite.data: input types, validation messages, label encoding, few-shot sampling, demo data."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from datasets import Dataset, DatasetDict
from hypothesis import given, settings
from hypothesis import strategies as st

from setfit_lite.data import (
    LabeledData,
    check_trainable,
    demo_dataset,
    encode_labels,
    load_sample,
    sample_dataset,
    to_labeled_data,
    validate_texts,
)

TEXTS = ["good film", "bad film", "great plot", "awful acting"]
LABELS = [1, 0, 1, 0]


def assert_basic(ld: LabeledData, labels=LABELS) -> None:
    assert isinstance(ld, LabeledData)
    assert ld.texts == TEXTS
    assert ld.labels == labels
    assert len(ld) == 4


# ---------------------------------------------------------------------------------------------------------------
# Input types


def test_dataset_input_keeps_extra_columns():
    ds = Dataset.from_dict({"text": TEXTS, "label": LABELS, "lang": ["en", "en", "de", "de"]})
    ld = to_labeled_data(ds)
    assert_basic(ld)
    assert ld.columns == {"lang": ["en", "en", "de", "de"]}


def test_dataset_dict_single_split_is_used():
    dd = DatasetDict({"train": Dataset.from_dict({"text": TEXTS, "label": LABELS})})
    assert_basic(to_labeled_data(dd))


def test_dataset_dict_with_several_splits_asks_to_pick_one():
    ds = Dataset.from_dict({"text": TEXTS, "label": LABELS})
    with pytest.raises(ValueError, match=r"pick one split.*\['train', 'test'\]|splits \['train', 'test'\].*pick"):
        to_labeled_data(DatasetDict({"train": ds, "test": ds}))


def test_dataframe_input():
    df = pd.DataFrame({"text": TEXTS, "label": LABELS, "lang": list("aabb")})
    ld = to_labeled_data(df)
    assert_basic(ld)
    assert ld.columns == {"lang": list("aabb")}
    assert all(type(label) is int for label in ld.labels)  # numpy ints normalized


def test_list_of_dicts_input():
    rows = [{"text": t, "label": y} for t, y in zip(TEXTS, LABELS)]
    rows[0]["extra"] = "x"
    ld = to_labeled_data(rows)
    assert_basic(ld)
    assert ld.columns == {"extra": ["x", None, None, None]}


def test_dict_of_lists_input():
    assert_basic(to_labeled_data({"text": TEXTS, "label": np.array(LABELS)}))


def test_tuple_input():
    assert_basic(to_labeled_data((TEXTS, LABELS)))


def test_texts_with_labels_argument():
    assert_basic(to_labeled_data(TEXTS, LABELS))
    assert_basic(to_labeled_data(np.array(TEXTS), pd.Series(LABELS)))


def test_unlabelled_texts():
    ld = to_labeled_data(TEXTS, require_labels=False)
    assert ld.texts == TEXTS and ld.labels is None and ld.columns == {}
    with pytest.raises(ValueError, match="labels are required"):
        to_labeled_data(TEXTS)


def test_custom_text_and_label_columns():
    ld = to_labeled_data({"sentence": TEXTS, "y": LABELS}, text_column="sentence", label_column="y")
    assert_basic(ld)


def test_multi_label_inputs():
    ld = to_labeled_data(TEXTS, np.array([[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 1]]))
    assert ld.labels == [[1, 0, 1], [0, 1, 0], [1, 1, 0], [0, 0, 1]]
    assert all(type(v) is int for row in ld.labels for v in row)
    ld = to_labeled_data({"text": TEXTS, "label": [[0, 2], (1,), [], np.array([3])]})
    assert ld.labels == [[0, 2], [1], [], [3]]
    with pytest.raises(TypeError, match="row 1: label list is nested"):
        to_labeled_data(TEXTS[:2], [[0], [[1]]])


def test_zero_dim_array_label():
    assert to_labeled_data(TEXTS[:2], [np.array(1), np.array(0)]).labels == [1, 0]


def test_string_labels_kept_as_given():
    ld = to_labeled_data(TEXTS, ["pos", "neg", "pos", "neg"])
    assert ld.labels == ["pos", "neg", "pos", "neg"]


def test_csv_path(tmp_path: Path):
    path = tmp_path / "train.csv"
    # "NA" and "123" are texts, not a missing value or a number
    path.write_text('text,label,lang\ngood film,1,en\nNA,0,en\n123,1,de\n"a, b",0,de\n', encoding="utf-8")
    ld = to_labeled_data(path)
    assert ld.texts == ["good film", "NA", "123", "a, b"]
    assert ld.labels == [1, 0, 1, 0]
    assert ld.columns == {"lang": ["en", "en", "de", "de"]}
    assert to_labeled_data(str(path)).texts == ld.texts


def test_csv_with_column_mapping_keeps_numeric_texts(tmp_path: Path):
    path = tmp_path / "train.csv"
    path.write_text("sentence,sentiment\n42,pos\nfine,neg\n", encoding="utf-8")
    ld = to_labeled_data(path, column_mapping={"sentence": "text", "sentiment": "label"})
    assert ld.texts == ["42", "fine"] and ld.labels == ["pos", "neg"]


def test_csv_blank_label_is_missing(tmp_path: Path):
    path = tmp_path / "train.csv"
    path.write_text("text,label\na,1\nb,\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"row 1 \(line 3\): label is missing"):
        to_labeled_data(path)


def test_file_errors_name_the_line_of_the_row(tmp_path: Path):
    """A row named in an error about a CSV or JSON lines file comes with the file line it starts on: blank lines,
    the header and a quoted cell's line breaks counted as an editor counts them."""
    csv_file = tmp_path / "train.csv"
    csv_file.write_text('text,label\na,0\n\n"two\nlines",1\n,1\n', encoding="utf-8")
    with pytest.raises(TypeError, match=r"row 2 \(line 6\): text must be a str"):
        to_labeled_data(csv_file)
    jsonl = tmp_path / "train.jsonl"
    jsonl.write_text('{"text": "a", "label": 0}\n\n\n{"text": "b", "label": "x"}\n', encoding="utf-8")
    with pytest.raises(TypeError, match=r"row 0 \(line 1\) is int, row 1 \(line 4\) is str"):
        to_labeled_data(jsonl)
    array = tmp_path / "train.json"  # one JSON array: rows are its items, not lines
    array.write_text('[{"text": "a", "label": 0},\n {"text": " ", "label": 1}]', encoding="utf-8")
    with pytest.raises(ValueError, match=r"row 1: text is empty"):
        to_labeled_data(array)


def test_file_errors_name_the_file(tmp_path: Path):
    """Whatever is wrong with a file's content, the message names the file as well as the row."""
    path = tmp_path / "train.csv"
    path.write_text("text,label\na,1\nb,\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"train\.csv'?: row 1 \(line 3\): label is missing"):
        to_labeled_data(path)
    for name in ("latin1.csv", "latin1.jsonl"):
        (tmp_path / name).write_bytes('{"text": "caf\u00e9", "label": 1}'.encode("latin-1"))
        with pytest.raises(ValueError, match=rf"{name}.*UTF-8"):
            to_labeled_data(tmp_path / name)
    quoted = tmp_path / "quoted.json"
    quoted.write_text(json.dumps(str(path)), encoding="utf-8")  # a JSON string is data, never a path to read
    with pytest.raises(TypeError, match=r"quoted\.json'?: unsupported data type str"):
        to_labeled_data(quoted)


def test_jsonl_path(tmp_path: Path):
    path = tmp_path / "train.jsonl"
    path.write_text("\n".join(json.dumps({"text": t, "label": y}) for t, y in zip(TEXTS, LABELS)) + "\n\n")
    assert_basic(to_labeled_data(path))


def test_json_array_and_json_lines_in_json_file(tmp_path: Path):
    rows = [{"text": t, "label": y} for t, y in zip(TEXTS, LABELS)]
    array = tmp_path / "a.json"
    array.write_text(json.dumps(rows))
    assert_basic(to_labeled_data(array))
    columns = tmp_path / "c.json"
    columns.write_text(json.dumps({"text": TEXTS, "label": LABELS}))
    assert_basic(to_labeled_data(columns))
    lines = tmp_path / "l.json"
    lines.write_text("\n".join(json.dumps(r) for r in rows))
    assert_basic(to_labeled_data(lines))


def test_bad_jsonl_line_is_named(tmp_path: Path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "a", "label": 1}\n{not json\n')
    with pytest.raises(ValueError, match="line 2"):
        to_labeled_data(path)


def test_path_errors(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        to_labeled_data(tmp_path / "missing.csv")
    other = tmp_path / "data.tsv"
    other.write_text("x")
    with pytest.raises(ValueError, match="unsupported file type '.tsv'.*use .csv, .json, .jsonl or .parquet"):
        to_labeled_data(other)
    with pytest.raises(ValueError, match="pass a list of strings"):
        to_labeled_data("just one sentence")


def test_unsupported_type():
    with pytest.raises(TypeError, match="unsupported data type int"):
        to_labeled_data(3)


# ---------------------------------------------------------------------------------------------------------------
# column_mapping


def test_column_mapping_renames_source_columns():
    data = {"sentence": TEXTS, "sentiment": LABELS, "lang": list("abab")}
    ld = to_labeled_data(data, column_mapping={"sentence": "text", "sentiment": "label"})
    assert_basic(ld)
    assert ld.columns == {"lang": list("abab")}


def test_column_mapping_on_dataset():
    ds = Dataset.from_dict({"sentence": TEXTS, "label": LABELS})
    assert_basic(to_labeled_data(ds, column_mapping={"sentence": "text"}))


def test_column_mapping_missing_columns_are_named():
    with pytest.raises(ValueError, match=r"missing from the data: \['review'\]; available columns: \['sentence'"):
        to_labeled_data({"sentence": TEXTS, "label": LABELS}, column_mapping={"review": "text"})


def test_column_mapping_collision_keeps_unmapped_column_with_feat_prefix():
    data = {"text": ["raw"] * 4, "clean": TEXTS, "label": LABELS}
    ld = to_labeled_data(data, column_mapping={"clean": "text"})
    assert_basic(ld)
    assert ld.columns == {"feat_text": ["raw"] * 4}


def test_column_mapping_duplicate_targets():
    with pytest.raises(ValueError, match="several columns"):
        to_labeled_data({"a": TEXTS, "b": TEXTS, "label": LABELS}, column_mapping={"a": "text", "b": "text"})


def test_column_mapping_rejected_for_plain_texts():
    with pytest.raises(TypeError, match="column_mapping applies to tabular data"):
        to_labeled_data((TEXTS, LABELS), column_mapping={"x": "text"})


# ---------------------------------------------------------------------------------------------------------------
# Validation errors


@pytest.mark.parametrize(
    "data",
    [[], {"text": [], "label": []}, Dataset.from_dict({"text": [], "label": []}), pd.DataFrame(), ([], [])],
    ids=["list", "dict", "dataset", "dataframe", "tuple"],
)
def test_empty_dataset(data):
    with pytest.raises(ValueError, match="empty"):
        to_labeled_data(data)


def test_missing_text_column_lists_available_columns():
    with pytest.raises(ValueError, match=r"no text column 'text'; available columns: \['sentence', 'label'\]"):
        to_labeled_data({"sentence": TEXTS, "label": LABELS})


def test_missing_label_column_lists_available_columns():
    with pytest.raises(ValueError, match=r"no label column 'label'; available columns: \['text', 'lang'\]"):
        to_labeled_data({"text": TEXTS, "lang": list("abab")})
    ld = to_labeled_data({"text": TEXTS, "lang": list("abab")}, require_labels=False)
    assert ld.labels is None and ld.columns == {"lang": list("abab")}


def test_non_string_text_names_row_and_type():
    with pytest.raises(TypeError, match="row 3: text must be a str, got int"):
        to_labeled_data(["a", "b", "c", 7], [0, 1, 0, 1])
    with pytest.raises(TypeError, match="row 1: .*NoneType \\(a missing value\\)"):
        to_labeled_data([{"text": "a", "label": 0}, {"label": 1}])


def test_nan_text_in_dataframe():
    df = pd.DataFrame({"text": ["a", np.nan], "label": [0, 1]})
    with pytest.raises(TypeError, match="row 1: text .*missing"):
        to_labeled_data(df)


def test_whitespace_text_names_row():
    with pytest.raises(ValueError, match="row 2: text is empty or whitespace-only"):
        to_labeled_data(["a", "b", " \n\t", "d"], LABELS)
    with pytest.raises(ValueError, match="row 0: text is empty"):
        to_labeled_data(["", "b"], [0, 1])


def test_none_label_names_row():
    with pytest.raises(ValueError, match="row 1: label is missing"):
        to_labeled_data(TEXTS, [0, None, 1, 0])


def test_nan_label_names_row():
    df = pd.DataFrame({"text": TEXTS, "label": [0.0, 1.0, np.nan, 0.0]})
    with pytest.raises(ValueError, match="row 2: label is missing"):
        to_labeled_data(df)
    # integral floats without NaN are read as ints
    assert to_labeled_data(pd.DataFrame({"text": TEXTS, "label": [1.0, 0.0, 1.0, 0.0]})).labels == LABELS


def test_mismatched_lengths():
    with pytest.raises(ValueError, match="4 texts but 3 labels"):
        to_labeled_data(TEXTS, [0, 1, 0])
    with pytest.raises(ValueError, match="different lengths"):
        to_labeled_data({"text": TEXTS, "label": [0, 1]})


def test_mixed_label_types():
    with pytest.raises(TypeError, match="labels mix types: row 0 is int, row 2 is str"):
        to_labeled_data(TEXTS, [0, 1, "pos", 0])
    with pytest.raises(TypeError, match="labels mix types: row 0 is int, row 1 is a list"):
        to_labeled_data(TEXTS, [0, [1], 0, 1])


def test_bool_labels_are_not_ints():
    with pytest.raises(TypeError, match="row 0: label True is a bool"):
        to_labeled_data(TEXTS, [True, False, True, False])
    with pytest.raises(TypeError, match="bool"):
        to_labeled_data(TEXTS, np.array([True, False, True, False]))


def test_non_integer_float_label():
    with pytest.raises(TypeError, match="row 1: label 0.5 is a non-integer float"):
        to_labeled_data(TEXTS, [1, 0.5, 0, 1])


def test_labels_argument_conflicts():
    with pytest.raises(TypeError, match="labels= is only used with a list of texts"):
        to_labeled_data({"text": TEXTS, "label": LABELS}, LABELS)
    with pytest.raises(TypeError, match="pass the labels once"):
        to_labeled_data((TEXTS, LABELS), LABELS)


def test_dict_of_scalars_is_rejected():
    with pytest.raises(TypeError, match="single example pass a list with one dict"):
        to_labeled_data({"text": "hello", "label": 1})


def test_mixed_rows_in_list_of_dicts():
    with pytest.raises(TypeError, match="row 1: expected a dict"):
        to_labeled_data([{"text": "a", "label": 0}, "b"])


def test_validate_texts():
    assert validate_texts(np.array(["a", "b"])) == ["a", "b"]
    assert all(type(t) is str for t in validate_texts(np.array(["a", "b"])))
    assert validate_texts(t for t in ["x"]) == ["x"]
    assert validate_texts([], allow_empty=True) == []
    with pytest.raises(TypeError, match="pass a list of strings"):
        validate_texts("a single text")
    with pytest.raises(ValueError, match="empty"):
        validate_texts([])
    with pytest.raises(TypeError, match="row 1: text must be a str, got float"):
        validate_texts(["a", 1.5])


# ---------------------------------------------------------------------------------------------------------------
# encode_labels


def test_encode_str_labels_sorted():
    ids, labels, multi = encode_labels(["pos", "neg", "pos", "neutral"])
    assert labels == ["neg", "neutral", "pos"]
    assert ids.tolist() == [2, 0, 2, 1]
    assert ids.dtype == np.int64 and ids.shape == (4,) and multi is False


def test_encode_str_labels_with_known_labels():
    ids, labels, _ = encode_labels(["pos", "neg"], known_labels=["pos", "neg", "neutral"])
    assert labels == ["pos", "neg", "neutral"] and ids.tolist() == [0, 1]


def test_encode_unknown_str_labels_lists_unknown_and_known():
    with pytest.raises(ValueError, match=r"not in the known labels: \['meh', 'zzz'\]; known labels: \['neg', 'pos'\]"):
        encode_labels(["pos", "zzz", "meh", "zzz"], known_labels=["neg", "pos"])


def test_encode_int_labels_without_known_labels():
    ids, labels, _ = encode_labels([5, 2, 5, np.int32(9)])
    assert labels == [2, 5, 9] and ids.tolist() == [1, 0, 1, 2]
    assert all(type(label) is int for label in labels)


def test_encode_int_labels_with_label_names():
    ids, labels, _ = encode_labels(np.array([1, 0, 1]), known_labels=["negative", "positive"])
    assert labels == ["negative", "positive"] and ids.tolist() == [1, 0, 1]
    # ids need not all be present (e.g. eval data)
    assert encode_labels([2], known_labels=["a", "b", "c"])[0].tolist() == [2]


@pytest.mark.parametrize("bad", [2, -1])
def test_encode_int_labels_out_of_range_for_label_names(bad):
    with pytest.raises(ValueError, match=f"row 1: label id {bad} is out of range for 2 label names"):
        encode_labels([0, bad], known_labels=["negative", "positive"])


def test_encode_int_labels_with_int_known_labels():
    ids, labels, _ = encode_labels([10, 30], known_labels=[30, 10, 20])
    assert labels == [30, 10, 20] and ids.tolist() == [1, 0]
    with pytest.raises(ValueError, match=r"not in the known labels: \[40\]"):
        encode_labels([10, 40], known_labels=[10, 20])


def test_encode_str_labels_with_int_known_labels_match_by_value():
    """A JSON file's "1" is the class 1 of a model trained on a CSV file's ints; "01" or "x" is no class."""
    ids, labels, _ = encode_labels(["1", "0", "1"], known_labels=[0, 1])
    assert labels == [0, 1] and ids.tolist() == [1, 0, 1]
    for bad in ("01", " 1", "x"):
        with pytest.raises(ValueError, match=rf"not in the known labels: \[{bad!r}\]"):
            encode_labels(["0", bad], known_labels=[0, 1])


def test_known_labels_validation():
    with pytest.raises(ValueError, match="duplicates"):
        encode_labels([0], known_labels=["a", "a"])
    with pytest.raises(TypeError, match="mix int and str"):
        encode_labels([0], known_labels=["a", 1])
    with pytest.raises(ValueError, match="known_labels is empty"):
        encode_labels([0], known_labels=[])


def test_encode_multi_hot():
    ids, labels, multi = encode_labels([[1, 0, 1], [0, 0, 1]])
    assert multi is True and labels == [0, 1, 2]
    assert ids.tolist() == [[1, 0, 1], [0, 0, 1]] and ids.dtype == np.int64
    ids, labels, _ = encode_labels(np.array([[1.0, 0.0], [0.0, 1.0]]), known_labels=["a", "b"])
    assert labels == ["a", "b"] and ids.tolist() == [[1, 0], [0, 1]]
    ids, _, _ = encode_labels([[True, False], [False, False]])
    assert ids.tolist() == [[1, 0], [0, 0]]


def test_encode_multi_hot_length_must_match_known_labels():
    with pytest.raises(ValueError, match="length 3 but there are 2 known labels"):
        encode_labels([[1, 0, 1], [0, 0, 1]], known_labels=["a", "b"])


def test_encode_label_id_lists():
    ids, labels, multi = encode_labels([[0, 3], [1], []])
    assert multi is True and labels == [0, 1, 2, 3]
    assert ids.tolist() == [[1, 0, 0, 1], [0, 1, 0, 0], [0, 0, 0, 0]]
    ids, labels, _ = encode_labels([(2,), np.array([0, 2])], known_labels=["x", "y", "z", "w"])
    assert labels == ["x", "y", "z", "w"] and ids.tolist() == [[0, 0, 1, 0], [1, 0, 1, 0]]


def test_encode_label_id_list_errors():
    with pytest.raises(ValueError, match="row 1: label id 5 is out of range for 3 label names"):
        encode_labels([[0], [5]], known_labels=["a", "b", "c"])
    with pytest.raises(ValueError, match="row 0: label id -1 is negative"):
        encode_labels([[-1], [1]])
    with pytest.raises(ValueError, match="row 1: label list item is missing"):
        encode_labels([[0], [None]])
    with pytest.raises(TypeError, match="mix item types"):
        encode_labels([[0], ["a"]])


def test_encode_label_name_lists():
    ids, labels, _ = encode_labels([["sports", "politics"], ["tech"]])
    assert labels == ["politics", "sports", "tech"] and ids.tolist() == [[1, 1, 0], [0, 0, 1]]
    with pytest.raises(ValueError, match=r"not in the known labels: \['tech'\]"):
        encode_labels([["sports"], ["tech"]], known_labels=["sports", "politics"])


def test_encode_multi_label_flag_mismatch():
    with pytest.raises(ValueError, match="multi_label=True but labels are single values"):
        encode_labels([0, 1], multi_label=True)
    with pytest.raises(ValueError, match="multi_label=False but labels are lists"):
        encode_labels([[0, 1]], multi_label=False)
    assert encode_labels([0, 1], multi_label=False)[2] is False


def test_encode_labels_rejects_bad_input():
    with pytest.raises(ValueError, match="empty"):
        encode_labels([])
    with pytest.raises(TypeError, match="bool"):
        encode_labels([True, False])
    with pytest.raises(TypeError, match="labels must be a list"):
        encode_labels("pos")


_INT_LABELS = st.lists(st.integers(-5, 5), min_size=1, max_size=20)
_STR_LABELS = st.lists(st.text(alphabet="abcé ", max_size=3), min_size=1, max_size=20)


@settings(max_examples=25, deadline=None)
@given(st.one_of(_INT_LABELS, _STR_LABELS))
def test_encode_labels_round_trips(raw):
    ids, labels, multi = encode_labels(raw)
    assert not multi
    assert [labels[i] for i in ids] == raw
    assert labels == sorted(set(raw))


_NAME_ROWS = st.lists(st.lists(st.sampled_from(["sports", "politics", "tech", "art"]), max_size=3), min_size=1,
                      max_size=12).filter(lambda rows: any(rows))


@settings(max_examples=25, deadline=None)
@given(_NAME_ROWS)
def test_encode_multi_label_name_lists_round_trip(rows):
    """Lists of label names become a multi-hot matrix whose ones are exactly each row's names (duplicates once)."""
    ids, labels, multi = encode_labels(rows, multi_label=True)
    assert multi and labels == sorted({name for row in rows for name in row})
    assert ids.dtype == np.int64 and ids.shape == (len(rows), len(labels))
    assert [{labels[j] for j in np.flatnonzero(r)} for r in ids] == [set(row) for row in rows]


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 5).flatmap(lambda k: st.lists(st.lists(st.integers(0, 1), min_size=k, max_size=k),
                                                     min_size=1, max_size=8)))
def test_encode_multi_hot_vectors_are_kept(rows):
    """Equal-length 0/1 vectors (length >= 2) are multi-hot as given, whatever their values, even all zeros."""
    ids, labels, _ = encode_labels(rows)
    assert ids.tolist() == rows and labels == list(range(len(rows[0])))


def test_encode_ragged_or_single_id_lists_are_label_ids():
    """0/1 lists of different lengths, or of length 1, are lists of label ids, not multi-hot vectors."""
    ids, labels, _ = encode_labels([[0, 1], [1]])
    assert labels == [0, 1] and ids.tolist() == [[1, 1], [0, 1]]
    ids, labels, _ = encode_labels([[1], [0]])
    assert labels == [0, 1] and ids.tolist() == [[0, 1], [1, 0]]


def test_import_loads_no_heavy_library():
    """``setfit_lite.data`` is used by torch-free ONNX inference: importing it loads neither torch, scikit-learn,
    datasets nor pandas (they load when a function needs them)."""
    code = ("import sys, setfit_lite.data; "
            "print(sorted(m for m in ('torch', 'sklearn', 'datasets', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_check_trainable():
    check_trainable(np.array([0, 1, 0]), False)
    with pytest.raises(ValueError, match=r"at least 2 classes.*\['pos'\]"):
        check_trainable(np.array([1, 1, 1]), False, labels=["neg", "pos"])
    check_trainable(np.array([[1, 0], [0, 0]]), True)
    with pytest.raises(ValueError, match="no positive label"):
        check_trainable(np.zeros((3, 2), dtype=np.int64), True)
    with pytest.raises(ValueError, match="no training examples"):
        check_trainable(np.array([], dtype=np.int64), False)


# ---------------------------------------------------------------------------------------------------------------
# sample_dataset


def _imbalanced() -> Dataset:
    labels = [0] * 30 + [1] * 12 + [2] * 3
    return Dataset.from_dict({"text": [f"t{i}" for i in range(len(labels))], "label": labels})


def _setfit_reference(dataset: Dataset, label_column: str, num_samples: int, seed: int) -> Dataset:
    """setfit 1.2's sample_dataset (groupby.apply written as a loop, which pandas 3 requires)."""
    df = dataset.shuffle(seed=seed).to_pandas()
    parts = [g.sample(min(num_samples, len(g)), random_state=seed) for _, g in df.groupby(label_column)]
    df = pd.concat(parts).reset_index(drop=True)
    return Dataset.from_pandas(df, features=dataset.features).shuffle(seed=seed)


@pytest.mark.parametrize("seed", [42, 7])
def test_sample_dataset_matches_setfit(seed):
    ds = _imbalanced()
    ours = sample_dataset(ds, num_samples=8, seed=seed)
    assert isinstance(ours, Dataset)
    assert ours["text"][:] == _setfit_reference(ds, "label", 8, seed)["text"][:]


def test_sample_dataset_counts_and_determinism():
    ds = _imbalanced()
    out = sample_dataset(ds, num_samples=8)
    counts = pd.Series(out["label"][:]).value_counts().to_dict()
    assert counts == {0: 8, 1: 8, 2: 3}  # class 2 keeps the 3 rows it has
    assert len(set(out["text"][:])) == 19
    assert sample_dataset(ds, num_samples=8)["text"][:] == out["text"][:]
    assert sample_dataset(ds, num_samples=8, seed=1)["text"][:] != out["text"][:]


def test_sample_dataset_preserves_type():
    ds = _imbalanced()
    expected = sample_dataset(ds, num_samples=4, seed=3)["text"][:]
    df = sample_dataset(ds.to_pandas(), num_samples=4, seed=3)
    assert isinstance(df, pd.DataFrame) and df["text"].tolist() == expected
    assert df.index.tolist() == list(range(len(df)))
    rows = sample_dataset(ds.to_list(), num_samples=4, seed=3)
    assert isinstance(rows, list) and [r["text"] for r in rows] == expected
    columns = sample_dataset(ds.to_dict(), num_samples=4, seed=3)
    assert isinstance(columns, dict) and columns["text"] == expected


def test_sample_dataset_custom_column_and_str_labels():
    data = [{"text": f"t{i}", "y": "ab"[i % 2]} for i in range(10)]
    out = sample_dataset(data, label_column="y", num_samples=2)
    assert sorted(r["y"] for r in out) == ["a", "a", "b", "b"]


def test_sample_dataset_multi_label_lists():
    data = {"text": [f"t{i}" for i in range(6)], "label": [[0, 1], [0, 1], [0, 1], [1, 0], [1, 0], [1, 1]]}
    out = sample_dataset(data, num_samples=1)
    assert sorted(map(tuple, out["label"])) == [(0, 1), (1, 0), (1, 1)]


def test_sample_dataset_errors():
    ds = _imbalanced()
    with pytest.raises(ValueError, match=r"no label column 'y'; available columns: \['text', 'label'\]"):
        sample_dataset(ds, label_column="y")
    with pytest.raises(ValueError, match="no label column 'y'"):
        sample_dataset(ds.to_pandas(), label_column="y")
    with pytest.raises(ValueError, match="no label column 'y'"):
        sample_dataset(ds.to_list(), label_column="y")
    with pytest.raises(ValueError, match="pick one split"):
        sample_dataset(DatasetDict({"train": ds, "test": ds}))
    with pytest.raises(ValueError, match="num_samples must be a positive int"):
        sample_dataset(ds, num_samples=0)
    with pytest.raises(ValueError, match="row 1: label is missing"):
        sample_dataset({"text": ["a", "b"], "label": [0, None]})
    with pytest.raises(TypeError, match="sample_dataset takes"):
        sample_dataset(["a", "b"])


@pytest.mark.parametrize(("seed", "error"), [(-1, ValueError), (2**32, ValueError), (2**40, ValueError),
                                             (1.5, TypeError), ("1", TypeError), (True, TypeError),
                                             (np.bool_(False), TypeError)])
def test_sample_dataset_checks_the_seed_first(seed: object, error: type) -> None:
    """The seed rule of TrainingArguments and --seed (an int in [0, 2**32 - 1], not a bool) or None, checked
    before the data is looked at, with a message naming seed."""
    with pytest.raises(error, match=r"^seed must be None \(unseeded.*\) or an integer in \[0, 4294967295\]"):
        sample_dataset("not a dataset", seed=seed)


def test_sample_dataset_seed_none_draws_unseeded_as_setfit_does() -> None:
    ds = _imbalanced()
    assert len(sample_dataset(ds, num_samples=2, seed=None)) == 6
    top = 2**32 - 1  # the largest seed numpy's RandomState takes
    assert sample_dataset(ds, num_samples=2, seed=np.uint32(top))["text"][:] == \
        sample_dataset(ds, num_samples=2, seed=top)["text"][:]


# ---------------------------------------------------------------------------------------------------------------
# Demo data


def test_demo_dataset():
    ds = demo_dataset()
    assert isinstance(ds, Dataset)
    assert len(ds) == 400
    assert set(ds.column_names) == {"text", "label", "label_text"}
    labels = ds["label"][:]
    assert labels.count(0) == 200 and labels.count(1) == 200
    assert {(y, name) for y, name in zip(labels, ds["label_text"][:])} == {(0, "negative"), (1, "positive")}
    ld = to_labeled_data(ds)
    assert len(ld) == 400 and ld.columns == {"label_text": ds["label_text"][:]}
    check_trainable(encode_labels(ld.labels)[0], False)


def test_load_sample_sst2_is_the_demo_data():
    ds = load_sample("sst2")
    assert ds.to_list() == demo_dataset().to_list()
    with pytest.raises(ValueError, match=r"sample 'sst2' has no split 'train': it has no splits"):
        load_sample("sst2", split="train")


def test_load_sample_tweets_per_language_label_and_split():
    from collections import Counter

    import setfit_lite

    ds = load_sample("tweet_sentiment_multilingual")
    assert isinstance(ds, Dataset) and len(ds) == 864
    assert set(ds.column_names) == {"text", "label", "label_text", "lang", "split"}
    counts = Counter(zip(ds["lang"][:], ds["label"][:], ds["split"][:]))
    langs = ["ar", "de", "en", "es", "fr", "hi", "it", "pt"]
    assert counts == {(lang, y, split): n for lang in langs for y in (0, 1, 2)
                      for split, n in (("train", 16), ("test", 20))}
    assert {(y, name) for y, name in zip(ds["label"][:], ds["label_text"][:])} == {
        (0, "negative"), (1, "neutral"), (2, "positive")}
    train, test = load_sample("tweet_sentiment_multilingual", split="train"), load_sample(
        "tweet_sentiment_multilingual", split="test")
    assert (len(train), len(test)) == (384, 480)
    assert set(train.column_names) == {"text", "label", "label_text", "lang"}
    assert not set(train["text"][:]) & set(test["text"][:])  # no tweet in both splits
    ld = to_labeled_data(train)
    assert ld.columns["lang"].count("hi") == 48
    check_trainable(encode_labels(ld.labels)[0], False)
    assert setfit_lite.load_sample is load_sample  # exposed at the top level too
    with pytest.raises(ValueError, match=r"no split 'validation': its splits are \['test', 'train'\]"):
        load_sample("tweet_sentiment_multilingual", split="validation")
    with pytest.raises(ValueError, match=r"no shipped sample 'imdb'; available: \['sst2', "):
        load_sample("imdb")


def test_dataset_columns_are_accepted_as_lists():
    """``ds["text"]`` is a lazy Column in datasets 4+: a dict of them, or a (texts, labels) tuple of them, works."""
    ds = Dataset.from_dict({"text": ["a", "b", "c"], "label": [0, 1, 0]})
    for data in ({"text": ds["text"], "label": ds["label"]}, (ds["text"], ds["label"])):
        ld = to_labeled_data(data)
        assert ld.texts == ["a", "b", "c"] and ld.labels == [0, 1, 0]
    assert to_labeled_data(ds["text"], labels=ds["label"]).labels == [0, 1, 0]


def test_csv_cells_are_read_as_the_files_text(tmp_path: Path):
    """Every CSV cell is read as its text: "True"/"False" and "01" labels stay strings ("01" and "1" are two
    classes), a column of integers written as integers becomes ints (as JSON gives them), and one odd value keeps
    the whole column strings whatever the file's size (pandas guessed types per chunk of a large file)."""
    path = tmp_path / "train.csv"
    path.write_text("text,label,ids\na,True,1\nb,False,20\nc,True,-3\n", encoding="utf-8")
    ld = to_labeled_data(path, label_column="label")
    assert ld.labels == ["True", "False", "True"] and ld.columns == {"ids": [1, 20, -3]}
    path.write_text("text,label\na,01\nb,1\nc,02\n", encoding="utf-8")
    assert to_labeled_data(path).labels == ["01", "1", "02"]
    path.write_text("text,label\n" + "".join(f"t{i},{i % 3}\n" for i in range(300_000)) + "last,other\n",
                    encoding="utf-8")
    labels = to_labeled_data(path).labels
    assert labels[:4] == ["0", "1", "2", "0"] and labels[-1] == "other"


def test_byte_order_marks_are_not_text(tmp_path: Path):
    for name, content in (("a.jsonl", '{"text": "good", "label": 1}\n{"text": "bad", "label": 0}\n'),
                          ("a.json", '[{"text": "good", "label": 1}, {"text": "bad", "label": 0}]'),
                          ("a.csv", "text,label\ngood,1\nbad,0\n")):
        (tmp_path / name).write_text("\ufeff" + content, encoding="utf-8")
        assert to_labeled_data(tmp_path / name).texts == ["good", "bad"], name
    from setfit_lite.runtime.predictor import iter_text_file

    (tmp_path / "a.txt").write_text("\ufeffgood film\nbad\n", encoding="utf-8")
    assert list(iter_text_file(tmp_path / "a.txt")) == ["good film", "bad"]


def test_a_missing_label_is_shown_as_none_not_a_string():
    with pytest.raises(ValueError, match=r"row 1: label is missing \(None\)"):
        to_labeled_data(TEXTS, [0, None, 1, 0])


def test_texts_to_predict_leave_a_label_column_unread(tmp_path: Path):
    path = tmp_path / "pool.csv"
    path.write_text("text,label\nhello,positive\nanother one,\n", encoding="utf-8")
    ld = to_labeled_data(path, require_labels=False, read_labels=False)
    assert ld.texts == ["hello", "another one"] and ld.labels is None
    assert ld.columns["label"][0] == "positive"


def test_sample_dataset_groups_bool_labels_as_setfit_does():
    ds = Dataset.from_dict({"text": [f"t{i}" for i in range(12)], "label": [i % 3 == 0 for i in range(12)]})
    ours = sample_dataset(ds, num_samples=2, seed=5)
    assert ours["text"][:] == _setfit_reference(ds, "label", 2, 5)["text"][:]
    assert sorted(ours["label"][:]) == [False, False, True, True]


# ---------------------------------------------------------------------------------------------------------------
# Reading files: every row in its columns, every line where it is


@pytest.mark.parametrize("content", [
    "text,label\ngood film,1,\nbad film,0,\n",  # a comma ending each row
    "text,label\ngood film,positive,2021\nbad film,negative,2020\n",  # a column the header does not name
])
def test_a_csv_row_with_more_fields_than_the_header_is_refused(tmp_path: Path, content: str) -> None:
    """pandas took the extra first field of each row as an index: "text" held the labels, silently."""
    path = tmp_path / "p.csv"
    path.write_text(content, encoding="utf-8")
    for read_labels in (True, False):
        with pytest.raises(ValueError, match=r"p\.csv' line 2 has 3 fields but the header \(line 1\) has 2 "
                                             r"\(\['text', 'label'\]\): field 3 .* has no column"):
            to_labeled_data(path, require_labels=read_labels, read_labels=read_labels)
    path.write_text("text,label,year\ngood film,1\nbad film,0,2020\n", encoding="utf-8")  # fewer: the last missing
    ld = to_labeled_data(path)
    assert ld.texts == ["good film", "bad film"] and ld.labels == [1, 0] and ld.columns == {"year": [None, 2020]}


def test_int_labels_with_names_are_setfits_positions_and_a_numeric_mismatch_is_said(
        caplog: pytest.LogCaptureFixture) -> None:
    """setfit's rule: int labels with str names are class positions (star ratings "1".."5" with ids 0..4). Where
    the names are integers written as text and a position names another class than the name that writes it (a
    CSV file's 2 against a model trained on the str labels "0".."10", kept in text order), a warning says so."""
    assert encode_labels([0, 4], known_labels=["1", "2", "3", "4", "5"])[0].tolist() == [0, 4]
    assert encode_labels([[0, 1], [2]], known_labels=["1", "2", "3"])[0].tolist() == [[1, 1, 0], [0, 0, 1]]
    assert encode_labels([1, 0], known_labels=["negative", "positive"])[0].tolist() == [1, 0]
    known = sorted(str(i) for i in range(11))  # ["0", "1", "10", "2", ...]
    with caplog.at_level(logging.WARNING):
        ids, labels, _ = encode_labels([2, 0], known_labels=known)
    assert [labels[i] for i in ids] == ["10", "0"]
    assert any("2 is '10', not '2'" in m and "give them as strings" in m for m in caplog.messages)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        encode_labels([0, 1], known_labels=["0", "1", "2"])  # positions and names agree: nothing to say
    assert not caplog.messages
    assert encode_labels(["2", "10"], known_labels=list(range(11)))[0].tolist() == [2, 10]  # a str names an int


def test_a_csv_and_a_jsonl_file_of_the_same_rows_name_the_same_int_classes(tmp_path: Path) -> None:
    rows = [("good film", "2"), ("bad film", "10"), ("fine plot", "0")]
    (tmp_path / "d.csv").write_text("text,label\n" + "".join(f"{t},{y}\n" for t, y in rows), encoding="utf-8")
    (tmp_path / "d.jsonl").write_text("".join(json.dumps({"text": t, "label": y}) + "\n" for t, y in rows),
                                      encoding="utf-8")
    known = list(range(11))
    csv_ids, jsonl_ids = (encode_labels(to_labeled_data(tmp_path / name).labels, known_labels=known)[0]
                          for name in ("d.csv", "d.jsonl"))
    assert csv_ids.tolist() == jsonl_ids.tolist() == [2, 10, 0]


def test_json_lines_are_split_at_newlines_only(tmp_path: Path) -> None:
    """json.dumps(ensure_ascii=False) writes U+2028, U+2029 and U+0085 unescaped; str.splitlines split there."""
    texts = ["a\u2028line separator", "a\u2029paragraph", "next\x85line", "form\x0cfeed", "vertical\x0btab"]
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps({"text": t, "label": i % 2}, ensure_ascii=False) + "\r\n"
                            for i, t in enumerate(texts)), encoding="utf-8")
    ld = to_labeled_data(path)
    assert ld.texts == texts and ld.lines == [1, 2, 3, 4, 5]
    path.write_text(path.read_text(encoding="utf-8") + '{"text": "x\u2028y", "label": null}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"row 5 \(line 6\): label is missing"):
        to_labeled_data(path)


def test_a_csv_field_over_128_kib_is_read_and_errors_still_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "long.csv"
    long_text = "word " * 40_000  # 200 KB: over the csv module's default field limit
    path.write_text(f'text,label\n"{long_text}",1\nshort,\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"row 1 \(line 3\): label is missing"):
        to_labeled_data(path)
    path.write_text(f'text,label\n"{long_text}",1\nshort,0\n', encoding="utf-8")
    assert to_labeled_data(path).texts == [long_text, "short"]


def test_a_column_name_given_twice_is_refused(tmp_path: Path) -> None:
    """A CSV file named the second "text.1" and trained on the first; a DataFrame failed with AttributeError."""
    path = tmp_path / "dup.csv"
    path.write_text("text,text,label\nignored,good film,1\nignored,bad film,0\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"dup\.csv' line 1 \(the header\): the column 'text' appears twice "
                                         r"\(columns 1 and 2\)"):
        to_labeled_data(path)
    frame = pd.DataFrame([["a", "good film", 1], ["b", "bad film", 0]], columns=["text", "text", "label"])
    with pytest.raises(ValueError, match=r"the column 'text' appears twice \(columns 1 and 2\)"):
        to_labeled_data(frame)
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_arrays([pa.array(["a"]), pa.array(["good film"]), pa.array([1])],
                                        names=["text", "text", "label"]), tmp_path / "dup.parquet")
    with pytest.raises(ValueError, match=r"dup\.parquet'.*: the column 'text' appears twice"):
        to_labeled_data(tmp_path / "dup.parquet")
    lines = tmp_path / "dup.jsonl"  # json.loads kept the last of the two values
    lines.write_text('{"text": "a", "label": 1}\n{"text": "b", "text": "c", "label": 0}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"dup\.jsonl' line 2: the key 'text' appears twice"):
        to_labeled_data(lines)


def test_errors_name_the_right_line_or_none(tmp_path: Path) -> None:
    """A pretty-printed JSON object of columns has no line per row (it said "row 1 (line 2)" for a null on line
    9); a whitespace-only CSV line holds no row, as in a JSON lines file, and lines after it are named right
    (the line named was the one before)."""
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps({"text": ["a", "b", "c"], "label": [1, None, 0]}, indent=2), encoding="utf-8")
    with pytest.raises(ValueError, match=r"row 1: label is missing") as caught:
        to_labeled_data(pretty)
    assert "line" not in str(caught.value)
    spaces = tmp_path / "spaces.csv"
    spaces.write_text("text,label\na,1\n   \nb,\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"row 1 \(line 4\): label is missing"):
        to_labeled_data(spaces)
    one_column = tmp_path / "texts.csv"  # to predict: blank and whitespace-only lines hold no row
    for content in ("text\ngood\n  \nbad\n", "text\ngood\n\nbad\n"):
        one_column.write_text(content, encoding="utf-8")
        ld = to_labeled_data(one_column, require_labels=False)
        assert ld.texts == ["good", "bad"] and ld.lines == [2, 4]


def test_a_csv_with_malformed_quoting_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "q.csv"
    path.write_text('text,label\ngood,1\n"never closed,0\nbad,0\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"q\.csv' line 3: the row starting on this line is not valid CSV"):
        to_labeled_data(path)


def test_a_missing_column_error_says_which_parameter_column_and_columns(tmp_path):
    from setfit_lite.data.readers import MissingColumnError

    with pytest.raises(MissingColumnError) as info:
        to_labeled_data({"sentence": TEXTS, "label": LABELS})
    assert (info.value.parameter, info.value.column, info.value.columns) == ("text_column", "text",
                                                                            ["sentence", "label"])
    path = tmp_path / "d.csv"
    path.write_text("text,lang\n" + "".join(f"{t},x\n" for t in TEXTS), encoding="utf-8")
    with pytest.raises(MissingColumnError, match="d.csv") as info:  # read from a file: still one, the file named
        to_labeled_data(path)
    assert (info.value.parameter, info.value.column, info.value.columns) == ("label_column", "label",
                                                                            ["text", "lang"])
    with pytest.raises(MissingColumnError) as info:  # texts without columns
        to_labeled_data(list(TEXTS))
    assert info.value.columns is None


def test_a_label_column_that_is_the_text_column_is_said_so():
    with pytest.raises(ValueError, match=r"label_column 'text' is the text_column too") as info:
        to_labeled_data({"text": TEXTS, "y": LABELS}, label_column="text")
    assert "available" not in str(info.value)
