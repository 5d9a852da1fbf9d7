"""One table of dtype names, for specs and the command line."""

from __future__ import annotations

import pytest
import torch

from torchx.core._dtypes import DTYPES, dtype_name, dtype_named


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.bfloat16, torch.int64, torch.bool, torch.complex64], ids=str
)
def test_every_name_written_reads_back(dtype: torch.dtype) -> None:
    assert dtype_named(dtype_name(dtype)) is dtype
    assert dtype_named(f"torch.{dtype_name(dtype)}") is dtype


def test_aliases_read_and_the_canonical_name_is_written() -> None:
    assert dtype_named("float") is torch.float32 and dtype_named("long") is torch.int64
    assert dtype_name(torch.float) == "float32" and dtype_name(torch.half) == "float16"


def test_what_is_not_a_dtype_name_reads_as_none() -> None:
    assert dtype_named("float33") is None and dtype_named("Tensor") is None
    assert dtype_named(32) is None and dtype_named(None) is None
    assert all(isinstance(value, torch.dtype) for value in DTYPES.values())


def test_every_torch_dtype_is_named_and_read_back_by_its_name() -> None:
    dtypes = {value for value in vars(torch).values() if isinstance(value, torch.dtype)}
    assert len(dtypes) > 12
    for dtype in dtypes:
        assert dtype_named(dtype_name(dtype)) is dtype
