"""Torch's messages raised while a dynamic dim is probed show that dim as None."""

from __future__ import annotations

import pytest

from torchx.core._errors import probe_sizes_shown_as_none
from torchx.core._shapes import DYNAMIC_PROBES

PROBE = DYNAMIC_PROBES[0]


@pytest.mark.parametrize(
    ("message", "shown"),
    [
        (f"mat1 and mat2 shapes cannot be multiplied ({PROBE}x12 and 5x5)", "(Nonex12 and 5x5)"),
        (f"Expected size {PROBE} but got size 5 for tensor", "Expected size None but got size 5"),
        (
            f"kernel ({PROBE} x {PROBE}) on input of size {PROBE + 1}",
            f"kernel ({PROBE} x {PROBE}) on input of size {PROBE + 1}",
        ),
        (f"index {PROBE} is out of bounds for [3, 5]", f"index {PROBE} is out of bounds for [3, 5]"),
    ],
    ids=["matrices", "sizes-in-words", "other-numbers-stay", "not-a-dim-stays"],
)
def test_only_the_places_torch_prints_dims_change(message: str, shown: str) -> None:
    assert shown in probe_sizes_shown_as_none(message, PROBE)
