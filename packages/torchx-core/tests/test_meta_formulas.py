"""MetaFormulas: batch_norm and layer_norm on meta tensors answered from their
formula give exactly what torch's meta run gives, and torch's errors where
the formula is not certain."""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import pytest
import torch
import torch.nn.functional as F

from torchx.core._meta_formulas import MetaFormulas, _reshape


def meta(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.empty(shape, device="meta", dtype=dtype)


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


def _layouts(shape: tuple[int, ...]) -> dict[str, torch.Tensor]:
    """Meta tensors of ``shape`` laid out as graphs make them: contiguous, a
    transposed view, a permuted one, a slice (not dense), an expanded one."""
    dims = len(shape)
    layouts = {"contiguous": meta(*shape)}
    if dims >= 2:
        layouts["transposed"] = meta(*shape[:-2], shape[-1], shape[-2]).transpose(-1, -2)
        layouts["reversed"] = meta(*reversed(shape)).permute(*reversed(range(dims)))
        layouts["sliced"] = meta(*shape[:-1], shape[-1] * 2)[..., ::2]
        layouts["expanded"] = meta(*shape[:-1], 1).expand(shape)
    if dims == 4:
        layouts["channels last"] = channels_last(meta(*shape))
    return layouts


_SHAPES = ((61, 4, 7, 16), (5, 1, 3), (1, 6), (9,), ())
_OTHERS: dict[str, Callable[[torch.Tensor], object]] = {
    "the same layout": lambda x: torch.empty_like(x),
    "a contiguous tensor of its shape": lambda x: meta(*x.shape),
    "its trailing dims": lambda x: meta(*x.shape[1:]),
    "a column": lambda x: meta(*x.shape[:-1], 1) if x.dim() else meta(1),
    "a transposed column": lambda x: meta(1, *x.shape[:-1]).transpose(0, -1) if x.dim() else meta(1),
    "a row of a transposed tensor": lambda x: (
        meta(*x.shape[:0:-1]).transpose(0, -1)[None] if x.dim() > 1 else meta(1)
    ),
    "a 0-dim tensor": lambda x: meta(),
    "a longer tensor": lambda x: meta(2, *x.shape),
    "a longer column": lambda x: meta(2, *x.shape[:-1], 1) if x.dim() else meta(2, 1),
    "a tensor across its size-1 dims": lambda x: meta(*[4 if size == 1 else 1 for size in x.shape]),
    "a transposed tensor across its size-1 dims": lambda x: meta(
        *[4 if size == 1 else 1 for size in reversed(x.shape)]
    ).permute(tuple(reversed(range(x.dim())))),
    "a mismatched tensor": lambda x: meta(*x.shape[:-1], 3) if x.dim() else meta(3),
    "a half tensor": lambda x: meta(*x.shape, dtype=torch.half),
    "an int tensor": lambda x: meta(*x.shape, dtype=torch.long),
    "an int": lambda x: 3,
    "a float": lambda x: 0.5,
}
_ARITHMETIC: dict[str, Callable[..., torch.Tensor]] = {
    "x + y": lambda x, y: x + y,
    "x - y": lambda x, y: x - y,
    "x * y": lambda x, y: x * y,
    "y * x": lambda x, y: y * x,
    "y - x": lambda x, y: y - x,
    "x / y": lambda x, y: x / y,
    "x == y": lambda x, y: x == y,
    "x < y": lambda x, y: x < y,
    "torch.ne": torch.ne,
    "torch.add alpha": lambda x, y: torch.add(x, y, alpha=2),
    "torch.div floor": lambda x, y: torch.div(x, y, rounding_mode="floor"),
}


def _outcome(call: Callable[[], torch.Tensor]) -> tuple[object, ...]:
    """What ``call`` gives: its output's shape, strides, dtype and device, or its error."""
    try:
        output = call()
    except Exception as error:  # noqa: BLE001 - the error is the outcome compared
        return (type(error), str(error))
    return (output.shape, output.stride(), output.dtype, output.device)


def _arithmetic_calls() -> dict[str, Callable[[], torch.Tensor]]:
    calls = {}
    for shape in _SHAPES:
        for dtype in (torch.float32, torch.long, torch.bool):
            for layout, x in _layouts(shape).items():
                x = x.to(dtype)
                for other_name, other in _OTHERS.items():
                    for op_name, op in _ARITHMETIC.items():
                        name = f"{op_name}: {dtype} {shape} {layout}, {other_name}"
                        calls[name] = partial(op, x, other(x))
    return calls


def test_arithmetic_answers_what_the_meta_run_answers() -> None:
    """Shapes, strides and dtypes, or torch's errors, for every operand layout
    and kind a graph records (9,504 calls)."""
    differ = {}
    for name, call in _arithmetic_calls().items():
        expected = _outcome(call)
        with MetaFormulas():
            answered = _outcome(call)
        if answered != expected:
            differ[name] = (answered, expected)
    assert not differ, differ


UNARY: dict[str, Callable[[], torch.Tensor]] = {
    f"{name}: {dtype} {shape} {layout}": partial(getattr(torch, name), x.to(dtype))
    for name in ("neg", "cos", "rsqrt", "sigmoid")
    for shape in _SHAPES
    for dtype in (torch.float32, torch.half, torch.long, torch.bool)
    for layout, x in _layouts(shape).items()
}
UNARY.update(
    {
        f"~x: {dtype} {shape} {layout}": partial(torch.Tensor.__invert__, x.to(dtype))
        for shape in _SHAPES
        for dtype in (torch.bool, torch.long, torch.float32)
        for layout, x in _layouts(shape).items()
    }
)
UNARY["Tensor.cos"] = lambda: meta(3, 4).t().cos()
UNARY["-x"] = lambda: -meta(3, 4)


ATTENTION: dict[str, Callable[[], torch.Tensor]] = {
    "contiguous": lambda: F.scaled_dot_product_attention(
        meta(2, 4, 5, 16), meta(2, 4, 7, 16), meta(2, 4, 7, 8)
    ),
    "causal, transposed views": lambda: F.scaled_dot_product_attention(
        *(meta(2, 5, 4, 16).transpose(1, 2) for _ in range(3)), is_causal=True
    ),
    "grouped-query": lambda: F.scaled_dot_product_attention(
        meta(2, 4, 5, 16), meta(2, 2, 7, 16), meta(2, 2, 7, 16), enable_gqa=True, scale=0.5
    ),
    "half": lambda: F.scaled_dot_product_attention(*(meta(1, 2, 3, 8, dtype=torch.half) for _ in range(3))),
    "dropout": lambda: F.scaled_dot_product_attention(*(meta(3, 2, 3, 8) for _ in range(3)), dropout_p=0.1),
    "heads that do not group": lambda: F.scaled_dot_product_attention(
        meta(2, 4, 5, 16), meta(2, 3, 7, 16), meta(2, 3, 7, 16), enable_gqa=True
    ),
    "grouped heads without enable_gqa": lambda: F.scaled_dot_product_attention(
        meta(2, 4, 5, 16), meta(2, 2, 7, 16), meta(2, 2, 7, 16)
    ),
    "keys of another width": lambda: F.scaled_dot_product_attention(
        meta(2, 4, 5, 16), meta(2, 4, 7, 8), meta(2, 4, 7, 8)
    ),
    "values of another length": lambda: F.scaled_dot_product_attention(
        meta(2, 4, 5, 16), meta(2, 4, 7, 16), meta(2, 4, 6, 16)
    ),
    "batches that differ": lambda: F.scaled_dot_product_attention(
        meta(2, 4, 5, 16), meta(3, 4, 7, 16), meta(3, 4, 7, 16)
    ),
    "dtypes that differ": lambda: F.scaled_dot_product_attention(
        meta(2, 4, 5, 16), meta(2, 4, 7, 16, dtype=torch.half), meta(2, 4, 7, 16)
    ),
    "a mask of scores": lambda: F.scaled_dot_product_attention(
        *(meta(2, 4, 5, 16) for _ in range(3)), attn_mask=meta(5, 5)
    ),
    "a padding mask": lambda: F.scaled_dot_product_attention(
        meta(2, 4, 5, 16), meta(2, 4, 7, 16), meta(2, 4, 7, 16), attn_mask=meta(2, 1, 1, 7, dtype=torch.bool)
    ),
    "a mask of another float dtype": lambda: F.scaled_dot_product_attention(
        *(meta(2, 4, 5, 16) for _ in range(3)), attn_mask=meta(5, 5, dtype=torch.half)
    ),
    "an int mask": lambda: F.scaled_dot_product_attention(
        *(meta(2, 4, 5, 16) for _ in range(3)), attn_mask=meta(5, 5, dtype=torch.long)
    ),
    "a mask of the wrong length": lambda: F.scaled_dot_product_attention(
        *(meta(2, 4, 5, 16) for _ in range(3)), attn_mask=meta(5, 6, dtype=torch.bool)
    ),
    "a mask too long": lambda: F.scaled_dot_product_attention(
        *(meta(2, 4, 5, 16) for _ in range(3)), attn_mask=meta(3, 2, 4, 5, 5, dtype=torch.bool)
    ),
    "a mask with is_causal": lambda: F.scaled_dot_product_attention(
        *(meta(2, 4, 5, 16) for _ in range(3)), attn_mask=meta(5, 5, dtype=torch.bool), is_causal=True
    ),
    "three dims": lambda: F.scaled_dot_product_attention(*(meta(4, 5, 16) for _ in range(3))),
    "integers": lambda: F.scaled_dot_product_attention(
        *(meta(1, 2, 3, 8, dtype=torch.long) for _ in range(3))
    ),
}
ROLL: dict[str, Callable[[], torch.Tensor]] = {
    f"{layout} roll({shifts}, {dims})": lambda x=x, shifts=shifts, dims=dims: x.roll(shifts, dims)
    for layout, x in _layouts((3, 4, 6)).items()
    for shifts, dims in (
        (2, -1),
        (1, None),
        ((1, 2), (0, 2)),
        ((1, 2), None),
        ((1,), (0, 1)),
        (1, 3),
        (1, ()),
    )
}
CAT: dict[str, Callable[[], torch.Tensor]] = {
    "channels": lambda: torch.cat([meta(61, 4, 5, 5), meta(61, 8, 5, 5)], 1),
    "last dim": lambda: torch.cat((meta(3, 4), meta(3, 2), meta(3, 7)), dim=-1),
    "channels last": lambda: torch.cat([channels_last(meta(2, 4, 3, 3)), channels_last(meta(2, 4, 3, 3))], 1),
    "a transposed one": lambda: torch.cat([meta(3, 4), meta(4, 3).t()]),
    "a size 1": lambda: torch.cat([meta(3, 1), meta(3, 1)]),
    "concatenated dtypes that differ": lambda: torch.cat([meta(3, 4), meta(3, 4, dtype=torch.half)]),
    "sizes that differ": lambda: torch.cat([meta(3, 4), meta(3, 5)]),
    "dims that differ": lambda: torch.cat([meta(3, 4), meta(3, 4, 2)], 1),
    "a dim out of range": lambda: torch.cat([meta(3, 4), meta(3, 4)], 2),
    "out": lambda: torch.cat([meta(3, 4), meta(3, 4)], out=meta(6, 4)),
    "no tensors": lambda: torch.cat([]),
    "a wrong argument": lambda: torch.cat([meta(3, 4)], dimension=1),  # type: ignore[call-overload]
}
ARANGE: dict[str, Callable[[], torch.Tensor]] = {
    f"arange{bounds} {options}": lambda bounds=bounds, options=options: torch.arange(*bounds, **options)
    for bounds in (
        (61,),
        (0,),
        (0, 16, 2),
        (3, 0, -1),
        (1, 10, 4),
        (5, 0),
        (0, 5, -1),
        (0, 5, 0),
        (-3,),
        (2.5,),
    )
    for options in (
        {"device": "meta"},
        {"device": torch.device("meta"), "dtype": torch.float},
        {"device": "meta", "dtype": torch.half},
        {"device": "meta", "dtype": torch.int},
        {"device": "meta", "dtype": torch.bool},
        {"device": "meta", "requires_grad": True},
    )
}
LINEAR: dict[str, Callable[[], torch.Tensor]] = {
    f"linear {shape} {layout}, {weight_name}, {bias_name}": partial(F.linear, x, weight, bias)
    for shape in ((61, 7, 16), (5, 16), (16,), (1, 16), (61, 1, 16), (5, 15), ())
    for layout, x in _layouts(shape).items()
    for weight_name, weight in (
        ("a weight", meta(8, 16)),
        ("a transposed weight", meta(16, 8).t()),
        ("a half weight", meta(8, 16, dtype=torch.half)),
        ("a 1-d weight", meta(16)),
    )
    for bias_name, bias in (
        ("no bias", None),
        ("a bias", meta(8)),
        ("a bias of another size", meta(7)),
        ("a 0-dim bias", meta()),
    )
}
ROLL["roll of a 0-dim tensor"] = lambda: meta().roll(1)
ROLL["torch.roll"] = lambda: torch.roll(meta(5, 6).t(), 2, 0)


@pytest.mark.parametrize(
    "call",
    [*UNARY.values(), *CAT.values(), *ATTENTION.values(), *ROLL.values(), *ARANGE.values(), *LINEAR.values()],
    ids=[*UNARY, *CAT, *ATTENTION, *ROLL, *ARANGE, *LINEAR],
)
def test_other_formulas_answer_what_the_meta_run_answers(call: Callable[[], torch.Tensor]) -> None:
    expected = _outcome(call)
    with MetaFormulas():
        assert _outcome(call) == expected


def _reshapes() -> dict[str, tuple[torch.Tensor, tuple[int, ...]]]:
    """Every layout of a few shapes (attention's heads transposed before they
    merge among them, a stride-0 middle dim, a leading slice) with sizes that
    merge, split, move or add size-1 dims, with a ``-1``, and sizes that do not fit."""
    cases = {}
    for shape in ((2, 4, 7, 16), (5, 1, 3), (1, 6), (6,), ()):
        numel = math.prod(shape)
        targets = {(numel,), (-1,), (1, numel), (numel, 1), (1, -1, 1), (numel + 1,), (-1, -1), (0, -1), ()}
        if len(shape) > 1:
            targets |= {(*shape[:-2], -1), (shape[0], -1), (-1, shape[-1]), tuple(reversed(shape))}
        layouts = _layouts(shape)
        if len(shape) == 4:
            targets |= {(2, 7, 64), (2, 7, 4, 16), (8, 7, 16), (2, 4, 7, 4, 4), (2, 4, 112)}
            layouts["heads transposed"] = meta(*shape).transpose(1, 2)
            layouts["stride-0 middle dim"] = meta(2, 1, 7, 16).expand(shape)
            layouts["leading slice"] = meta(4, 4, 7, 16)[::2]
        for layout, x in layouts.items():
            for sizes in targets:
                cases[f"{shape} {layout} -> {sizes}"] = (x, sizes)
    return cases


RESHAPE_CALLS: dict[str, Callable[[torch.Tensor, tuple[int, ...]], torch.Tensor]] = {
    "x.reshape(*sizes)": lambda x, sizes: x.reshape(*sizes),
    "x.reshape(sizes)": torch.Tensor.reshape,
    "x.reshape(list)": lambda x, sizes: x.reshape(list(sizes)),
    "torch.reshape(x, torch.Size)": lambda x, sizes: torch.reshape(x, torch.Size(sizes)),
}


@pytest.mark.parametrize("reshape", RESHAPE_CALLS.values(), ids=RESHAPE_CALLS.keys())
def test_reshape_answers_what_the_meta_run_answers(reshape: Callable[..., torch.Tensor]) -> None:
    """Its output's shape, strides and dtype, and whether it is a view of the
    input (what decides where a graph may work in place), or torch's error;
    each output torch gives, the formula gives by itself (no meta run)."""

    def outcome(call: Callable[[], torch.Tensor | None]) -> tuple[object, ...]:
        output = call()
        if output is None:
            return ("no answer",)
        return (*_outcome(lambda: output), output._is_view())

    differ = {}
    for name, (x, sizes) in _reshapes().items():
        expected = _outcome(partial(reshape, x, sizes))
        if len(expected) == 2:  # torch's error: the formula leaves it to torch
            with MetaFormulas():
                answered = _outcome(partial(reshape, x, sizes))
            alone: tuple[object, ...] = expected
        else:
            expected = outcome(partial(reshape, x, sizes))
            with MetaFormulas():
                answered = outcome(partial(reshape, x, sizes))
            alone = outcome(partial(_reshape, x, *sizes))
        if not answered == alone == expected:
            differ[name] = (answered, alone, expected)
    assert not differ, differ


def test_a_tensor_that_records_gradients_runs_as_torch_runs_it() -> None:
    x = meta(3, 4).requires_grad_()
    with MetaFormulas():
        assert (x * 2).grad_fn is not None
        assert x.roll(1, 0).grad_fn is not None


ACTIVATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "F.relu": F.relu,
    "F.relu in place": partial(F.relu, inplace=True),
    "torch.relu": torch.relu,
    "Tensor.relu": torch.Tensor.relu,
    "F.relu6": F.relu6,
    "F.silu in place": partial(F.silu, inplace=True),
    "F.hardswish": F.hardswish,
    "F.hardsigmoid": F.hardsigmoid,
    "F.mish": F.mish,
    "F.selu": F.selu,
    "F.leaky_relu": partial(F.leaky_relu, negative_slope=0.2),
    "F.leaky_relu in place": partial(F.leaky_relu, negative_slope=0.2, inplace=True),
    "F.elu": partial(F.elu, alpha=0.5),
    "F.gelu": F.gelu,
    "F.gelu tanh": partial(F.gelu, approximate="tanh"),
    "F.gelu of another approximation": partial(F.gelu, approximate="erf"),
    "F.dropout": partial(F.dropout, p=0.1),
    "F.dropout in eval mode": partial(F.dropout, p=0.1, training=False),
    "F.dropout of nothing": partial(F.dropout, p=0.0),
    "F.dropout of everything": partial(F.dropout, p=1.0),
    "F.dropout in place": partial(F.dropout, p=0.3, inplace=True),
    "F.dropout of a probability above 1": partial(F.dropout, p=1.5),
    "nn.ReLU": torch.nn.ReLU(),
    "nn.LeakyReLU": torch.nn.LeakyReLU(0.1),
    "nn.Dropout": torch.nn.Dropout(0.2),
}


ACTIVATION_CALLS: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], torch.Tensor]] = {
    f"{name}: {dtype} {shape} {layout}": (activation, x.to(dtype))
    for name, activation in ACTIVATIONS.items()
    for shape in ((61, 4, 7, 16), (5, 1, 3), ())
    for dtype in (torch.float32, torch.half, torch.long)
    for layout, x in _layouts(shape).items()
}


@pytest.mark.parametrize("call", ACTIVATION_CALLS.values(), ids=ACTIVATION_CALLS.keys())
def test_activations_answer_what_the_meta_run_answers(
    call: tuple[Callable[[torch.Tensor], torch.Tensor], torch.Tensor],
) -> None:
    """Their output's shape, strides and dtype, or torch's error, and whether
    it is the input itself (in place, or dropout that drops nothing)."""
    activation, x = call

    def outcome() -> tuple[object, ...]:
        result = _outcome(lambda: activation(x))
        try:
            return (*result, activation(x) is x)
        except Exception:  # noqa: BLE001 - the error is in result already
            return result

    expected = outcome()
    with MetaFormulas():
        assert outcome() == expected


def _recurrent_outcome(call: Callable[[], tuple[torch.Tensor, object]]) -> object:
    """A recurrent module's output and final states, each's shape, strides and dtype, or its error."""
    try:
        output, state = call()
    except Exception as error:  # noqa: BLE001 - the error is the outcome compared
        return (type(error), str(error))
    states = state if isinstance(state, tuple) else (state,)
    return [(t.shape, t.stride(), t.dtype) for t in (output, *states)]  # type: ignore[union-attr]


_RECURRENT_OPTIONS: dict[str, dict[str, object]] = {
    "": {},
    "batch_first": {"batch_first": True},
    "2 layers, bidirectional": {"num_layers": 2, "bidirectional": True},
    "batch_first, bidirectional": {"batch_first": True, "bidirectional": True},
}
RECURRENT: dict[str, Callable[[], tuple[torch.Tensor, object]]] = {
    f"{kind.__name__}({name}) on {inputs}": partial(kind(8, 5, device="meta", **options), *arguments)
    for kind in (torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN)
    for name, options in _RECURRENT_OPTIONS.items()
    for inputs, arguments in {
        "a batch": (meta(4, 6, 8),),
        "one sequence": (meta(6, 8),),
        "the wrong features": (meta(4, 6, 9),),
        "no steps": (meta(0, 6, 8),),
        "half": (meta(4, 6, 8, dtype=torch.half),),
        "its states given": (
            meta(4, 6, 8),
            (meta(options.get("num_layers", 1) * (1 + options.get("bidirectional", False)), 6, 5),) * 2
            if kind is torch.nn.LSTM
            else meta(options.get("num_layers", 1) * (1 + options.get("bidirectional", False)), 6, 5),
        ),
        "states of another batch": (meta(4, 6, 8), meta(1, 5, 5)),
    }.items()
}
RECURRENT["LSTM(proj_size=3)"] = partial(torch.nn.LSTM(8, 5, proj_size=3, device="meta"), meta(4, 6, 8))
RECURRENT["LSTM(proj_size=3, bidirectional)"] = partial(
    torch.nn.LSTM(8, 5, proj_size=3, bidirectional=True, batch_first=True, device="meta"), meta(4, 6, 8)
)


@pytest.mark.parametrize("call", RECURRENT.values(), ids=RECURRENT.keys())
def test_recurrent_layers_answer_what_the_meta_run_answers(
    call: Callable[[], tuple[torch.Tensor, object]],
) -> None:
    """torch runs them on meta step by step (30 to 60 ms a call)."""
    with torch.no_grad():
        expected = _recurrent_outcome(call)
        with MetaFormulas():
            assert _recurrent_outcome(call) == expected
