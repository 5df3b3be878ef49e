"""A CSV file whose every label cell is a JSON list (multi-label labels) is refused, naming the file and the first
such row: a CSV cell is read as text, and each distinct list would otherwise train as one single-label class."""

from __future__ import annotations

from pathlib import Path

import pytest

from setfit_lite.cli import main
from setfit_lite.data import to_labeled_data

LIST_ROWS = ['good plot,"[1, 0, 1]"', 'bad film,"[0, 1, 0]"', 'good bad,"[1, 1, 0]"', 'the plot,"[0, 0, 1]"']


def write_csv(path: Path, rows: list[str], header: str = "text,label") -> Path:
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    return path


def test_reader_refuses_json_list_labels(tmp_path):
    path = write_csv(tmp_path / "ml.csv", ["", *LIST_ROWS * 2])  # a blank line: row 0 starts on line 3
    with pytest.raises(ValueError) as info:
        to_labeled_data(path)
    message = str(info.value)
    assert repr(str(path)) in message and "row 0 (line 3)" in message and "'[1, 0, 1]'" in message
    assert "read as text" in message and "JSON lines" in message and "Parquet" in message


@pytest.mark.parametrize("cells", [['"[""pos"", ""plot""]"', '"[""neg""]"', "[]"], ['" [1, 0] "', '"[0, 1]"']])
def test_reader_refuses_lists_of_names_and_padded_lists(tmp_path, cells):
    path = write_csv(tmp_path / "ml.csv", [f"text {i},{cell}" for i, cell in enumerate(cells)])
    with pytest.raises(ValueError, match=r"row 0 \(line 2\).*read as text"):
        to_labeled_data(path)


def test_reader_refuses_through_a_column_mapping(tmp_path):
    path = write_csv(tmp_path / "ml.csv", LIST_ROWS, header="sentence,tags")
    with pytest.raises(ValueError, match="column 'tags'"):
        to_labeled_data(path, column_mapping={"sentence": "text", "tags": "label"})


@pytest.mark.parametrize("cells, expected", [
    (["[draft]", "[final]"], ["[draft]", "[final]"]),  # bracketed text, not JSON
    (["[1, 0]", "pos"], ["[1, 0]", "pos"]),  # not every label a list: strings, as before
    (["[1.5]", "[true]"], ["[1.5]", "[true]"]),  # lists of neither ints nor strs
    (["1", "2"], [1, 2]),
])
def test_other_csv_labels_read_as_before(tmp_path, cells, expected):
    path = write_csv(tmp_path / "data.csv", [f'text {i},"{cell}"' for i, cell in enumerate(cells)])
    assert to_labeled_data(path).labels == expected


def test_texts_to_predict_ignore_the_label_column(tmp_path):
    path = write_csv(tmp_path / "ml.csv", LIST_ROWS)
    assert to_labeled_data(path, require_labels=False, read_labels=False).texts[0] == "good plot"


def test_cli_train_refuses_before_writing(tmp_path, tiny_body_path, capsys):
    path = write_csv(tmp_path / "ml.csv", LIST_ROWS * 4)
    out = tmp_path / "model"
    status = main(["train", str(path), "--model", tiny_body_path, "--max-steps", "2", "--output-dir", str(out)])
    assert status != 0
    err = capsys.readouterr().err
    assert "row 0 (line 2)" in err and "read as text" in err and str(path) in err
    assert not out.exists()
