"""The one nested-JSON encoder (heads' estimator parameters, checkpoints' training state): round trips, tags,
tensor names, errors, formats written before it, and no torch import."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
import torch

from setfit_lite.serialization.jsonable import decode, encode


def _round_trip(value, tensors=None, **kwargs):
    data = encode(value, tensors, **kwargs)
    text = json.dumps(data, allow_nan=False)  # standard JSON: no NaN/Infinity literals
    return decode(json.loads(text), tensors)


def test_round_trip_keeps_types() -> None:
    value = {
        "plain": [None, True, 3, "x", 2.5, [1, [2]]],
        "tuple": (1, None, ("a",)),
        "int_keys": {0: 2.0, 1: 1.0},
        "tuple_keys": {(1, 2): "pair"},
        "tag_as_key": {"__tuple__": 1},
        "floats": [math.inf, -math.inf],
        "numpy": (np.int64(4), np.float32(0.5), np.bool_(True)),
        "arrays": [np.arange(3, dtype=np.uint32), np.array([[1.5, np.nan]]), np.array(["a", "bc"])],
    }
    back = _round_trip(value)
    assert back["plain"] == value["plain"] and back["tuple"] == value["tuple"]
    assert back["int_keys"] == {0: 2.0, 1: 1.0} and back["tuple_keys"] == {(1, 2): "pair"}
    assert back["tag_as_key"] == {"__tuple__": 1} and back["floats"] == [math.inf, -math.inf]
    assert back["numpy"] == (4, 0.5, True) and type(back["numpy"][0]) is int
    for got, want in zip(back["arrays"], value["arrays"]):
        assert got.dtype == want.dtype and np.array_equal(got, want, equal_nan=want.dtype.kind == "f")
    assert math.isnan(_round_trip(math.nan))


def test_plain_json_stays_plain() -> None:
    value = {"C": 1.0, "class_weight": None, "solver": "lbfgs", "order": [3, 1]}
    assert encode(value) == value
    assert encode({0: 2.0}) == {"__items__": [[0, 2.0]]}


def test_tensors_are_split_out_under_unique_names() -> None:
    a, b, c = torch.ones(2), torch.zeros(3), torch.arange(2)
    tensors: dict = {}
    data = encode({"a.b": a, "a": {"b": b}, "c": [c]}, tensors, tensor_types=(torch.Tensor,))
    assert len(tensors) == 3 and {id(t) for t in tensors.values()} == {id(a), id(b), id(c)}
    assert tensors[".c.0"] is c
    back = decode(json.loads(json.dumps(data)), tensors)
    assert back["a.b"] is a and back["a"]["b"] is b and back["c"][0] is c
    assert encode(a, {}, tensor_types=(torch.Tensor,)) == {"__tensor__": "value"}


def test_unsupported_value_names_its_path() -> None:
    with pytest.raises(TypeError, match=r"cannot encode a value of type object at '\.f\.1' as JSON"):
        encode({"f": [1, object()]})
    with pytest.raises(TypeError, match="type Tensor"):  # a tensor without a tensors dict
        encode(torch.ones(1), tensor_types=(torch.Tensor,))
    with pytest.raises(KeyError, match="tensor 'x' is missing"):
        decode({"__tensor__": "x"}, {})


def test_reads_checkpoint_state_written_before() -> None:
    """The JSON ``checkpoint._split`` wrote before this module (every dict as ``__dict__``, NaN as a literal)."""
    old = ('{"__dict__": [["t", {"__tuple__": [1, null, "x", 2.5]}], ["rng", {"__tuple__": ["MT19937", '
           '{"__ndarray__": [0, 1, 2], "dtype": "uint32"}, 1, 0, 0.0]}], ["state", {"__dict__": [[0, {"__dict__": '
           '[["step", {"__tensor__": ".state.0.step"}], ["exp_avg", {"__tensor__": ".state.0.exp_avg"}]]}]]}], '
           '["lr", [0.1, NaN]]]}')
    tensors = {".state.0.step": torch.tensor(3.0), ".state.0.exp_avg": torch.tensor([1.0, -2.0])}
    back = decode(json.loads(old), tensors)
    assert back["t"] == (1, None, "x", 2.5) and back["rng"][0] == "MT19937"
    assert back["rng"][1].dtype == np.uint32 and back["rng"][1].tolist() == [0, 1, 2]
    assert back["state"][0]["exp_avg"] is tensors[".state.0.exp_avg"]
    assert back["lr"][0] == 0.1 and math.isnan(back["lr"][1])


def test_reads_head_params_written_before() -> None:
    """``heads._to_json`` wrote dicts with non-str keys as ``__items__`` and tuples as lists (keys back to tuples)."""
    assert decode({"__items__": [[0, 2.0], [[1, 2], 3.0]]}) == {0: 2.0, (1, 2): 3.0}


def test_imports_without_torch() -> None:
    code = "import sys; sys.modules['torch'] = None; import setfit_lite.serialization.jsonable; print('ok')"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr
