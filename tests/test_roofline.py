"""benchmarks/roofline.py: the encoder FLOP count against hand-computed cases, and the fraction of a peak."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location(
    "roofline", Path(__file__).resolve().parent.parent / "benchmarks" / "roofline.py")
assert _SPEC is not None and _SPEC.loader is not None
roofline = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(roofline)

# hidden 4, intermediate 8, 2 layers: per token and layer 4 projections of 2*4*4 plus 2 FFN matmuls of 2*4*8 = 256;
# per padded sequence of length L and layer, scores and weighted sum 2 * 2*L*L*4 = 16*L*L


def _sequence(length: int) -> int:
    return length * 256 + 16 * length * length


@pytest.mark.parametrize("lengths, batch_size, expected", [
    ([3, 5, 2], 1, 2 * (_sequence(3) + _sequence(5) + _sequence(2))),  # no padding: 2 * 3168
    ([3, 5, 2], 2, 2 * (2 * _sequence(5) + _sequence(2))),  # batches [5, 3] (3 padded to 5) and [2]
    ([2, 3, 5], 2, 2 * (2 * _sequence(5) + _sequence(2))),  # sorted before batching: the order given is irrelevant
    ([3, 5, 2], 3, 2 * 3 * _sequence(5)),  # one batch, all padded to 5
    ([3, 5, 2], 64, 2 * 3 * _sequence(5)),
    ([], 4, 0),
])
def test_encoder_flops_hand_computed(lengths: list[int], batch_size: int, expected: int) -> None:
    assert roofline.encoder_flops(lengths, batch_size, hidden=4, layers=2, intermediate=8) == expected


def test_encoder_flops_minilm_defaults() -> None:
    # one 10-token text through MiniLM-L6: 6 * (10 * (8*384^2 + 4*384*1536) + 4*100*384)
    assert roofline.encoder_flops([10], 32) == 6 * (10 * (8 * 384 ** 2 + 4 * 384 * 1536) + 4 * 100 * 384)


def test_fraction_of_peak() -> None:
    assert roofline.fraction_of_peak(100.0, 1e9, 200.0) == pytest.approx(0.5)
    assert roofline.fraction_of_peak(0.0, 1e9, 200.0) == 0.0
