"""Scoring a corpus on a Ray cluster with Ray Data: ``pip install "setfit_lite[ray]"``.

`score_dataset` reads the texts (a ``ray.data.Dataset``, or Parquet, JSONL/JSON, CSV or text files read with
``ray.data.read_*``), runs `BatchScorer` through ``Dataset.map_batches`` on a pool of actors, each loading a
saved model folder once (a ``SetFitModel``, or an ONNX or static export, which never import torch), and writes
the id of each row, its label and, on request, its probabilities with ``Dataset.write_parquet``.

Exactly once, one output row per input row, also when a worker process dies mid-job:

* the actors are created with ``max_restarts`` and ``max_task_retries`` (Ray restarts a dead actor and runs its
  unfinished batches again) and the read and write tasks with ``max_retries``: all set explicitly, finite, from
  ``max_retries``, so a batch that kills its worker every time ends the job instead of looping;
* a write task names its file from the write's id and the task's index, so a retried write replaces its own file
  instead of adding a second one;
* the files are written into a new sibling folder that is renamed to ``output`` only once the job has finished
  and its row count equals the input's: ``output`` is complete or absent, never partial.

A row needs an id to be joined back to its text: give the input's ``id_column``, or let `score_dataset` add
a row index (``index_column``): the row's position in the input, counted in the input's order (files in name
order, rows in file order). Adding it materialises the texts in Ray's object store first (spilled to disk when
larger than memory); a corpus of billions of rows should carry its own id column.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..runtime.predictor import labels_from_proba

__all__ = ["RAY_PROBE_SECONDS", "TIER_DEFAULTS", "BatchScorer", "check_ray_address", "check_score_request",
           "connect_ray", "read_texts", "recorded_ray_address", "score_dataset"]

RAY_PROBE_SECONDS = 5.0  # how long a cluster's address may take to accept a connection before Ray is started

TIER_DEFAULTS: dict[str, dict[str, int]] = {
    "static": {"batch_size": 8192, "model_batch_size": 1024},
    "onnx": {"batch_size": 1024, "model_batch_size": 64},
    "torch": {"batch_size": 512, "model_batch_size": 32},
}
"""`score_dataset`'s default rows per actor call and texts per model batch, by tier: the static tier is cheap per
text (large batches amortise the call), the transformer tiers are dominated by the model."""
# suffix: (reader, its arguments); read tasks keep Ray Data's retries (a read can be repeated safely)
READERS: dict[str, tuple[str, dict[str, Any]]] = {
    ".parquet": ("read_parquet", {}), ".jsonl": ("read_json", {"lines": True}), ".json": ("read_json", {}),
    # text files as bytes, split into lines as `setfit-lite predict` splits them (`_text_lines`): Ray's read_text
    # also splits at form feeds and Unicode line separators, and keeps a byte-order mark
    ".csv": ("read_csv", {}), ".txt": ("read_binary_files", {"include_paths": True})}


def require_ray() -> Any:
    try:
        import ray
        import ray.data  # noqa: F401
    except ImportError as err:
        raise ImportError('scoring on Ray needs Ray Data: pip install "setfit_lite[ray]"') from err
    return ray


def recorded_ray_address() -> str | None:
    """The cluster ``ray.init()`` joins when given no address and no ``RAY_ADDRESS``: Ray's record of the last
    cluster started on this machine (``ray start --head`` and Ray's test clusters write it; ``ray stop`` removes it),
    None when there is none or this Ray keeps it elsewhere."""
    try:
        from ray._private.utils import read_ray_address
        return read_ray_address() or None
    except (ImportError, AttributeError, OSError):
        return None


def check_ray_address(address: str | None = None, timeout: float = RAY_PROBE_SECONDS) -> None:
    """ConnectionError within ``timeout`` seconds when the cluster ``ray.init`` would connect to accepts no
    connection: ``ray.init`` itself would wait minutes there. That cluster is ``address``, else ``RAY_ADDRESS``, else
    (no address, or ``"auto"``) the one Ray's record names (`recorded_ray_address`: a cluster that has since died
    leaves its record behind); ``"local"`` and no address with no record start a local cluster and are not probed.
    ValueError for an address of no known form."""
    given = address or os.environ.get("RAY_ADDRESS") or ""
    if given == "local":
        return
    if given in ("", "auto"):
        recorded = recorded_ray_address()
        if recorded is None:
            return
        given, where = recorded, (f"{recorded!r} (Ray's record of the cluster last started on this machine, which "
                                  "ray.init joins when given no address)")
        advice = "`ray stop` removes the record, or pass the address 'local' to start a local cluster"
    else:
        where = f"{given!r}" + ("" if address else " (from RAY_ADDRESS)")
        advice = "start one there (`ray start --head`), pass its address, or give none to start a local one"
    host, sep, port = given.split("://", 1)[-1].rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"Ray address {where} is not host:port, ray://host:port, 'auto' or 'local'")
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout):
            pass
    except OSError as error:
        raise ConnectionError(f"no Ray cluster answers at {where} within {timeout:g} s ({error}): {advice}") from None


def connect_ray(address: str | None = None, **init_args: Any) -> Any:
    """Connect to a Ray cluster (nothing when Ray is already initialised), checking first that the address answers.

    Args:
        address: The cluster's address; None: ``RAY_ADDRESS``, else the cluster Ray's record names
            (`recorded_ray_address`), else a new local one.
        **init_args: Keyword arguments of `ray.init`.

    Returns:
        The `ray` module, connected.

    Raises:
        ImportError: Ray is not installed.
        ConnectionError: No cluster answers at the address within a few seconds.
    """
    ray = require_ray()
    if not ray.is_initialized():
        check_ray_address(address)
        ray.init(address=address or None, **init_args)
    return ray


def check_score_request(model_dir: str | os.PathLike, data: Any, output: str | os.PathLike, *,
                        concurrency: int | tuple[int, int] | None = None, num_cpus: float = 1.0,
                        max_retries: int = 3, batch_size: int | None = None,
                        model_batch_size: int | None = None, text_column: str | None = None,
                        id_column: str | None = None) -> list[Any]:
    """What `score_dataset` checks before Ray starts: its numbers by their rules (``setfit_lite.config.params``),
    the model folder and the input files exist and are of one kind Ray reads, the first file has ``text_column``
    and ``id_column`` (when given), and ``output`` is new and neither holds nor lies in what is read. Returns the
    input paths (empty for a ``ray.data.Dataset``)."""
    from ..config.params import check_param, check_params
    from ..serialization import check_output_path

    check_params({"concurrency": concurrency, "num_cpus": num_cpus, "max_retries": max_retries})
    for value in (batch_size, model_batch_size):
        if value is not None:
            check_param("batch_size", value)
    out = Path(output)
    if os.path.lexists(out):
        raise FileExistsError(f"{out} exists: give a new path for the scores (nothing is overwritten)")
    if not Path(model_dir).is_dir():
        raise FileNotFoundError(f"model folder {model_dir} does not exist")
    inputs = [] if hasattr(data, "map_batches") else ([data] if isinstance(data, (str, os.PathLike)) else list(data))
    missing = [str(item) for item in inputs if not os.path.exists(item)]
    if missing:
        raise FileNotFoundError(f"input {', '.join(missing)} does not exist")
    if inputs:  # files of one kind Ray can read, with the columns asked for: refused here, not after Ray starts
        files, suffix = input_files(inputs)
        columns = _columns_of(files[0], suffix)
        for option, column in (("text_column", text_column), ("id_column", id_column)):
            if column is not None and columns is not None and column not in columns:
                raise ValueError(f"{files[0]} has no column {column!r} (columns: {columns}); pass {option}=")
    check_output_path(out, model_dir, *inputs, suffix="scores")
    return inputs


def model_tier(model_dir: str | os.PathLike) -> str:
    """``"static"``, ``"onnx"`` or ``"torch"``: the prediction tier of a saved model folder."""
    from ..modeling import exported_format

    return exported_format(model_dir) or "torch"


class BatchScorer:
    """The callable class `map_batches` runs in `score_dataset`: it loads the model once per actor, then maps a
    batch (a `pyarrow.Table` with `text_column` and `id_column`) to a table of `id_column`, `label` and, with
    `proba`, `proba` (a fixed-size list of float32, columns in the model's `labels` order). A subclass may add
    columns.

    Args:
        model_dir: A saved or exported model folder.
        text_column: The batch's text column.
        id_column: The batch's id column, copied to the output.
        proba: Whether to add the probabilities.
        model_batch_size: The texts of one model batch.
        runtime: The runtime of an ONNX folder: `"auto"`, `"onnxruntime"` or `"openvino"`.
    """

    def __init__(self, model_dir: str, text_column: str, id_column: str, proba: bool = False,
                 model_batch_size: int = 64, runtime: str = "auto") -> None:
        from ..modeling import load_model_folder

        # Ray sets OMP_NUM_THREADS to the actor's num_cpus: the tiers take their thread count from it
        self.model = load_model_folder(model_dir, runtime)
        self.text_column, self.id_column, self.proba = text_column, id_column, proba
        self.model_batch_size = model_batch_size

    def __call__(self, batch: Any) -> Any:
        import pyarrow as pa

        texts = batch.column(self.text_column).to_pylist()
        proba = np.asarray(self.model.class_proba(texts, batch_size=self.model_batch_size), dtype=np.float32)
        labels = labels_from_proba(proba, self.model.labels, self.model.multi_label, as_numpy=True,
                                    rule=self.model.multi_label_threshold_rule)
        if self.model.multi_label:  # multi-hot rows, as predict gives them
            label_column: Any = pa.FixedSizeListArray.from_arrays(pa.array(labels.ravel()), labels.shape[1])
        else:
            label_column = pa.array(labels.tolist())
        columns = {self.id_column: batch.column(self.id_column), "label": label_column}
        if self.proba:
            columns["proba"] = pa.FixedSizeListArray.from_arrays(pa.array(proba.ravel()), proba.shape[1])
        return pa.table(columns)


def input_files(paths: str | os.PathLike | Sequence[str | os.PathLike]) -> tuple[list[Path], str]:
    """The files `read_texts` reads (a folder's own files, not hidden ones nor its sub-folders') and their one
    suffix; ValueError for no paths, or files of several or unknown kinds (checked before Ray starts)."""
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not items:
        raise ValueError("no input paths given")
    files: list[Path] = []  # the files checked are the files read (Ray would read a folder's sub-folders too)
    for item in map(Path, items):
        files += sorted(p for p in item.iterdir() if p.is_file() and not p.name.startswith((".", "_"))) \
            if item.is_dir() else [item]
    suffixes = {p.suffix.lower() for p in files}
    if len(suffixes) != 1 or (suffix := suffixes.pop()) not in READERS:
        raise ValueError(f"cannot tell how to read {[str(i) for i in items]}: give files of one kind, "
                         f"{', '.join(READERS)} (found {sorted(suffixes) or 'no files'})")
    return files, suffix


def _columns_of(path: Path, suffix: str) -> list[str] | None:
    """The column names of an input file, read from its head (None where they cannot be told cheaply)."""
    import csv
    import json

    if suffix == ".txt":
        return ["text"]
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        return list(pq.read_schema(path).names)
    with open(path, encoding="utf-8-sig", newline="") as handle:
        if suffix == ".csv":
            return next(csv.reader(handle), [])
        if suffix == ".jsonl":
            line = next((line for line in handle if line.strip()), "")
            try:
                row = json.loads(line) if line else {}
            except json.JSONDecodeError:
                return None  # Ray's reader reports it
            return list(row) if isinstance(row, dict) else None
    return None  # a .json file: read whole by Ray


def _text_lines(row: dict[str, Any]) -> list[dict[str, str]]:
    """A text file's non-blank lines as rows of ``text``, split as `setfit-lite predict` reads a text file (at
    ``\\n`` only, ``\\r`` and a leading byte-order mark dropped; an invalid UTF-8 line names the file and line)."""
    import io

    from ..runtime.predictor import text_lines

    return [{"text": line} for line in text_lines(io.BytesIO(row["bytes"]), str(row["path"]))]


def read_texts(paths: str | os.PathLike | Sequence[str | os.PathLike], text_column: str | None = None,
               **read_args: Any) -> Any:
    """Read Parquet, JSONL/JSON, CSV or text files (one text per line, column `text`) as a `ray.data.Dataset`,
    with the `ray.data.read_*` function their suffix names; a folder is read by the suffix of its files (its own
    files, not its sub-folders', nor hidden ones).

    Args:
        paths: A file or folder, or several.
        text_column: A CSV file's text column, read as strings whatever its cells look like (`2024`, `NA`).
        **read_args: Keyword arguments of the `ray.data.read_*` function.

    Returns:
        The `ray.data.Dataset`.

    Raises:
        ValueError: No paths, or files of several or unknown kinds.
    """
    ray = require_ray()
    files, suffix = input_files(paths)
    name, defaults = READERS[suffix]
    if suffix == ".csv" and text_column is not None and "convert_options" not in read_args:
        import pyarrow as pa
        import pyarrow.csv as pa_csv

        defaults = {**defaults, "convert_options": pa_csv.ConvertOptions(column_types={text_column: pa.string()})}
    dataset = getattr(ray.data, name)([str(f) for f in files], **{**defaults, **read_args})
    return dataset.flat_map(_text_lines) if suffix == ".txt" else dataset


def _with_row_index(dataset: Any, column: str, max_retries: int) -> tuple[Any, int]:
    """``dataset`` with ``column`` = the row's position in it, counted in the dataset's order, and its row count.

    The dataset is materialised in order (``preserve_order``); a task per block adds its rows' positions."""
    ray = require_ray()
    from ray.data.block import BlockAccessor

    dataset.context.execution_options.preserve_order = True
    materialized = dataset.materialize()

    @ray.remote(max_retries=max_retries)
    def add_index(block: Any, start: int) -> Any:
        import pyarrow as pa

        table = BlockAccessor.for_block(block).to_arrow()
        return table.append_column(column, pa.array(np.arange(start, start + table.num_rows, dtype=np.int64)))

    refs, start = [], 0
    for bundle in materialized.iter_internal_ref_bundles():
        for entry in bundle.blocks:  # a BlockEntry, or a (ref, metadata) pair in older Ray
            ref, metadata = (entry.ref, entry.metadata) if hasattr(entry, "ref") else entry
            refs.append(add_index.remote(ref, start))
            start += metadata.num_rows
    return ray.data.from_arrow_refs(refs), start


def score_dataset(model_dir: str | os.PathLike, data: Any, output: str | os.PathLike, *,
                  text_column: str = "text", id_column: str | None = None, index_column: str = "row",
                  proba: bool = False, batch_size: int | None = None, model_batch_size: int | None = None,
                  concurrency: int | tuple[int, int] | None = None, num_cpus: float = 1.0,
                  max_retries: int = 3, runtime: str = "auto", verify: bool = True,
                  scorer: type[BatchScorer] = BatchScorer) -> dict[str, Any]:
    """Score every text of a corpus with a saved model on the connected Ray cluster (one is started locally when
    Ray is not initialised) and write a folder of Parquet files with one row per input row.

    The arguments are checked before Ray starts. Output columns: the id, `label` (multi-label: a multi-hot list)
    and, with `proba`, `proba` (in the model's `labels` order).

    Args:
        model_dir: A saved or exported model folder (the torch, ONNX or static tier).
        data: A `ray.data.Dataset`, or paths [`read_texts`][setfit_lite.integrations.ray_data.read_texts] reads.
        output: The folder to write; it must not exist yet.
        text_column: The input's text column.
        id_column: The input's id column, copied to the output; None numbers the rows in `index_column`.
        index_column: The column holding each row's position in the input, without `id_column`.
        proba: Whether to write the probabilities.
        batch_size: The rows of one actor call (Ray's); None for the tier's default (`TIER_DEFAULTS`).
        model_batch_size: The texts of one model batch inside it; None for the tier's default.
        concurrency: The actors (Ray's: a number, or `(min, max)` to autoscale); None for
            `(1, cluster CPUs / num_cpus)`.
        num_cpus: The CPUs of an actor, the threads its model uses.
        max_retries: The restarts of a dead actor, and the retries of its batch and of a read or write task.
        runtime: The runtime of an ONNX folder: `"auto"`, `"onnxruntime"` or `"openvino"`.
        verify: Whether to compare the output's row count (from the Parquet metadata) with the input's before
            publishing it (with an `id_column`, counting the input is a second read of it, free for Parquet).
        scorer: The callable class the actors run ([`BatchScorer`][setfit_lite.integrations.ray_data.BatchScorer]
            or a subclass adding columns).

    Returns:
        `{"output", "rows", "files", "tier", "seconds"}`.

    Raises:
        FileExistsError: `output` exists.
        FileNotFoundError: The model folder or an input does not exist.
        ValueError: A number out of range, or an `output` inside what is read.

    Example:
        ```python
        from setfit_lite.integrations.ray_data import score_dataset

        summary = score_dataset("my-model-static", "corpus/", "scores/", proba=True)
        print(summary["rows"], summary["files"])
        ```
    """
    started = time.perf_counter()
    out = Path(output)
    check_score_request(model_dir, data, output, concurrency=concurrency, num_cpus=num_cpus,
                        max_retries=max_retries, batch_size=batch_size, model_batch_size=model_batch_size,
                        text_column=text_column, id_column=id_column)
    tier = model_tier(model_dir)
    defaults = TIER_DEFAULTS[tier]
    ray = connect_ray()
    cpus = ray.cluster_resources().get("CPU", 1)
    if concurrency is None:
        concurrency = (1, max(1, int(cpus // num_cpus)))  # Ray Data scales the pool within, leaving CPUs to I/O
    elif not isinstance(concurrency, (tuple, list)) and concurrency * num_cpus >= cpus:
        raise ValueError(f"{concurrency} actors x {num_cpus} CPUs take all {cpus:g} CPUs of the cluster: the read "
                         "and write tasks could never run and the job would hang; use fewer actors, a smaller "
                         "num_cpus, or concurrency=(min, max) to let Ray Data size the pool")
    dataset = data if hasattr(data, "map_batches") else read_texts(data, text_column=text_column)
    columns = dataset.columns()
    if text_column not in columns:
        raise ValueError(f"the input has no column {text_column!r} (columns: {columns}); pass text_column=")
    if id_column is not None and id_column not in columns:
        raise ValueError(f"the input has no column {id_column!r} (columns: {columns}); pass id_column=")
    dataset = dataset.select_columns([text_column] if id_column is None else [id_column, text_column])
    expected = None
    if id_column is None:
        if index_column == text_column:
            raise ValueError(f"index_column {index_column!r} is the text column: pick another name")
        dataset, expected = _with_row_index(dataset, index_column, max_retries)
    sizes = {"size": concurrency} if isinstance(concurrency, int) else dict(zip(("min_size", "max_size"), concurrency))
    scored = dataset.map_batches(
        scorer, batch_format="pyarrow", batch_size=batch_size or defaults["batch_size"],
        fn_constructor_kwargs={"model_dir": str(Path(model_dir).resolve()), "text_column": text_column,
                               "id_column": id_column or index_column, "proba": proba, "runtime": runtime,
                               "model_batch_size": model_batch_size or defaults["model_batch_size"]},
        compute=ray.data.ActorPoolStrategy(**sizes), num_cpus=num_cpus,
        max_restarts=max_retries, max_task_retries=max_retries)
    staging = out.with_name(f".{out.name}.partial-{uuid.uuid4().hex[:12]}")
    try:
        scored.write_parquet(str(staging.resolve()), ray_remote_args={"max_retries": max_retries})
        rows, files = _parquet_rows(staging)
        if verify:
            expected = dataset.count() if expected is None else expected
            if rows != expected:
                raise RuntimeError(f"wrote {rows} rows for {expected} input rows: the output was not published")
        os.rename(staging, out)
    except BaseException:
        _remove_staging(staging)
        raise
    return {"output": str(out), "rows": rows, "files": files, "tier": tier,
            "seconds": round(time.perf_counter() - started, 3)}


def _parquet_rows(folder: Path) -> tuple[int, int]:
    """Rows (from the files' metadata) and Parquet files in ``folder``."""
    import pyarrow.parquet as pq

    files = sorted(folder.glob("*.parquet"))
    return sum(pq.ParquetFile(f).metadata.num_rows for f in files), len(files)


def _remove_staging(folder: Path) -> None:
    """Remove the staging folder this module created (its Parquet files only, then the folder)."""
    if not folder.is_dir():
        return
    for file in folder.glob("*.parquet"):
        file.unlink()
    try:
        folder.rmdir()
    except OSError:  # something else was put there: left alone
        pass
