"""MetaFormulas: batch_norm and layer_norm on meta tensors answered from their
formula give exactly what torch's meta run gives, and torch's errors where
the formula is not certain."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F

from torchx.core._meta_formulas import MetaFormulas


def meta(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.empty(*shape, device="meta", dtype=dtype)


def channels_last(tensor: torch.Tensor) -> torch.Tensor:
    return tensor.to(memory_format=torch.channels_last)


CALLS: dict[str, Callable[[], torch.Tensor]] = {
    "batch_norm 2d training": lambda: F.batch_norm(
        meta(61, 64, 8, 8), meta(64), meta(64), meta(64), meta(64), True
    ),
    "batch_norm 2d eval": lambda: F.batch_norm(
        meta(61, 64, 8, 8), meta(64), meta(64), meta(64), meta(64), False
    ),
    "batch_norm channels last": lambda: F.batch_norm(
        channels_last(meta(5, 6, 4, 4)), meta(6), meta(6), None, None, True
    ),
    "batch_norm 1d": lambda: F.batch_norm(meta(61, 64), meta(64), meta(64), meta(64), meta(64), True),
    "batch_norm 1d on sequences": lambda: F.batch_norm(meta(61, 64, 7), meta(64), meta(64), None, None, True),
    "batch_norm 3d": lambda: F.batch_norm(meta(2, 4, 3, 5, 6), meta(4), meta(4), meta(4), meta(4), False),
    "batch_norm half": lambda: F.batch_norm(
        meta(2, 4, 3, 3, dtype=torch.half),
        meta(4, dtype=torch.half),
        meta(4, dtype=torch.half),
        None,
        None,
        True,
    ),
    "batch_norm without statistics": lambda: F.batch_norm(meta(3, 4, 5), None, None, meta(4), meta(4), True),
    "batch_norm transposed input": lambda: F.batch_norm(
        meta(4, 8, 6).transpose(0, 2), meta(8), meta(8), None, None, True
    ),
    "layer_norm": lambda: F.layer_norm(meta(61, 10, 32), (32,), meta(32), meta(32)),
    "layer_norm over two dims": lambda: F.layer_norm(meta(61, 10, 32), (10, 32)),
    "layer_norm of a transposed input": lambda: F.layer_norm(meta(10, 61, 32).transpose(0, 1), (32,)),
}


@pytest.mark.parametrize("call", CALLS.values(), ids=CALLS.keys())
def test_a_formula_gives_what_the_meta_run_gives(call: Callable[[], torch.Tensor]) -> None:
    expected = call()
    with MetaFormulas():
        answered = call()
    assert (answered.shape, answered.stride(), answered.dtype, answered.device) == (
        expected.shape,
        expected.stride(),
        expected.dtype,
        expected.device,
    )


REFUSED: dict[str, Callable[[], torch.Tensor]] = {
    "statistics of another size": lambda: F.batch_norm(
        meta(61, 64, 8, 8), meta(63), meta(63), None, None, True
    ),
    "one value per channel in training": lambda: F.batch_norm(
        meta(1, 64), meta(64), meta(64), None, None, True
    ),
    "eval without statistics": lambda: F.batch_norm(meta(3, 4), None, None, None, None, False),
    "normalized shape not the input's": lambda: F.layer_norm(meta(61, 10, 32), (31,)),
    "a weight of another size": lambda: F.layer_norm(meta(61, 10, 32), (32,), meta(31)),
}


@pytest.mark.parametrize("call", REFUSED.values(), ids=REFUSED.keys())
def test_a_call_the_formula_is_not_certain_of_raises_torchs_own_error(
    call: Callable[[], torch.Tensor],
) -> None:
    with pytest.raises(Exception) as plain:
        call()
    with pytest.raises(type(plain.value)) as answered, MetaFormulas():
        call()
    assert str(answered.value) == str(plain.value)


def test_tensors_off_the_meta_device_run_as_torch_runs_them() -> None:
    x = torch.randn(4, 3, 5)
    with MetaFormulas():
        normalised = F.layer_norm(x, (5,))
    assert torch.equal(normalised, F.layer_norm(x, (5,)))
