"""Meta outputs answered from their formula.

torch computes ``batch_norm``, ``layer_norm``, ``scaled_dot_product_attention``,
``cat``, ``roll``, ``arange``, ``linear``, a ``reshape`` that copies and even ``add``, ``mul``,
``eq``, ``cos``, ``relu``, ``dropout``... on the meta device through its Python decompositions:
0.15 ms a call for ``x * y``, 0.3 ms for ``roll`` or a process's first copying
``reshape`` (attention's heads merged), 1 to 3 ms for a norm or an attention,
where a convolution takes 0.02 ms; and the first of them in a process imports
sympy (every ``torch._check`` does, on torch 2.13) or torch's compiler (half a
second to a second and a half). So they dominate a build's meta forward (a free
check of a digits CNN: the norms, 40% of it) and the recording of a graph
(Llama: attention and the rotary products, 75% of it). :class:`MetaFormulas`
makes their output directly for the inputs whose answer is certain, laid out
as torch's meta run lays it out: a norm's as the input's dense layout; an
attention's, a roll's, a concatenation's, a linear's and an ``arange``'s
contiguous; an elementwise op's as the operand of the output's shape whose
strides decide torch's layout rule (dense with no dim of size 1, or, alone,
exactly contiguous), or contiguous for two exactly contiguous operands
broadcast together; an activation's or a dropout's as its input's, or the
input itself where torch returns it (in place, dropout that drops nothing);
a recurrent layer's (``torch.lstm``, which torch runs step by step: 30 to 60
ms a call) contiguous in time-major order, its final states as its initial;
a reshape's as torch's ``view`` of those sizes where one exists, else contiguous.
Any other call runs as torch runs it, so its errors stay
torch's own (torchx-core's test_meta_formulas.py checks thousands of calls
against torch's meta run).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import pairwise
from typing import Any

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

__all__ = ["MetaFormulas"]


def _dense(tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` is meta and laid out as ``empty_like`` lays out its copy."""
    if not tensor.is_meta:
        return False
    if tensor.is_contiguous():
        return True
    return (tensor.dim() == 4 and tensor.is_contiguous(memory_format=torch.channels_last)) or (
        tensor.dim() == 5 and tensor.is_contiguous(memory_format=torch.channels_last_3d)
    )


def _fits(tensor: Any, dtype: torch.dtype, shape: Sequence[int]) -> bool:
    """Whether an optional parameter is absent, or a meta tensor of ``shape`` and ``dtype``."""
    return tensor is None or (
        isinstance(tensor, torch.Tensor)
        and tensor.is_meta
        and tensor.dtype == dtype
        and tuple(tensor.shape) == tuple(shape)
    )


def _batch_norm(
    input: Any,
    running_mean: Any = None,
    running_var: Any = None,
    weight: Any = None,
    bias: Any = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> torch.Tensor | None:
    if not isinstance(input, torch.Tensor) or input.dim() < 2 or not _dense(input):
        return None
    channels = (input.shape[1],)
    if not all(_fits(tensor, input.dtype, channels) for tensor in (running_mean, running_var, weight, bias)):
        return None
    if training and math.prod(input.shape) // input.shape[1] <= 1:
        return None  # torch refuses one value per channel in training
    if not training and (running_mean is None or running_var is None):
        return None
    return torch.empty_like(input)


def _layer_norm(
    input: Any, normalized_shape: Sequence[int], weight: Any = None, bias: Any = None, eps: float = 1e-5
) -> torch.Tensor | None:
    if not isinstance(input, torch.Tensor) or not input.is_meta or not input.is_contiguous():
        return None
    shape = tuple(normalized_shape) if isinstance(normalized_shape, Sequence) else (normalized_shape,)
    if not shape or tuple(input.shape[-len(shape) :]) != shape or input.dim() < len(shape):
        return None
    if not all(_fits(tensor, input.dtype, shape) for tensor in (weight, bias)):
        return None
    return torch.empty_like(input)


def _plain(*values: Any) -> bool:
    """Whether ``values`` are meta tensors that no gradient is recorded for
    (an output made here would lose its place in the autograd graph)."""
    grad = torch.is_grad_enabled()
    return all(
        isinstance(value, torch.Tensor) and value.is_meta and not (grad and value.requires_grad)
        for value in values
    )


def _orders_its_output(tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` is dense with every dim longer than 1: its strides
    then decide every comparison of torch's elementwise layout rule, so the
    output is laid out as it is."""
    expected = 1
    for size, stride in sorted(zip(tensor.shape, tensor.stride(), strict=True), key=lambda pair: pair[1]):
        if size < 2 or stride != expected:
            return False
        expected *= size
    return True


def _alone_orders_its_output(tensor: torch.Tensor) -> bool:
    """Whether ``tensor``, the one tensor of an elementwise op, has its layout
    kept: ordered by its strides alone (:func:`_orders_its_output`), or
    contiguous with the strides ``torch.empty`` gives (a size 1 included)."""
    return tensor.numel() != 0 and (_orders_its_output(tensor) or _exactly_contiguous(tensor))


def _exactly_contiguous(tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` has the strides ``torch.empty`` gives its shape (a size 1 included)."""
    return tensor.stride() == tuple(math.prod(tensor.shape[dim + 1 :]) for dim in range(tensor.dim()))


def _agrees(tensor: torch.Tensor, layout: torch.Tensor) -> bool:
    """Whether ``tensor``, broadcast to ``layout``'s shape, orders the dims it
    spans as ``layout`` does, without ties: where it comes first in an
    elementwise op, its comparisons then give ``layout``'s order."""
    offset = layout.dim() - tensor.dim()
    spanned = sorted(
        (layout.stride(offset + dim), tensor.stride(dim))
        for dim in range(tensor.dim())
        if tensor.shape[dim] != 1
    )
    return all(first < second for (_, first), (_, second) in pairwise(spanned))


def _outer(first: torch.Tensor, second: torch.Tensor) -> torch.Tensor | None:
    """A contiguous meta tensor of the shape ``first`` and ``second`` broadcast
    to, where both are exactly contiguous: torch lays out their elementwise
    output so when every dim of it is longer than 1, as
    :func:`_orders_its_output` then says. None for other operands."""
    if not (_exactly_contiguous(first) and _exactly_contiguous(second)):
        return None
    dims = max(first.dim(), second.dim())
    shape = []
    for index in range(-dims, 0):
        sizes = {tensor.shape[index] if -index <= tensor.dim() else 1 for tensor in (first, second)}
        if len(sizes) > 1 and 1 not in sizes:
            return None
        shape.append(max(sizes))
    return torch.empty(shape, device="meta")


def _broadcasts_to(tensor: torch.Tensor, shape: torch.Size) -> bool:
    trailing = shape[len(shape) - tensor.dim() :]
    return tensor.dim() <= len(shape) and all(
        size in (1, full) for size, full in zip(tensor.shape, trailing, strict=True)
    )


def _binary(kind: str) -> Callable[..., torch.Tensor | None]:
    """The formula of ``add``, ``sub`` and ``mul`` (``kind`` "arithmetic"),
    ``div`` ("divide") or a comparison ("compare") of two tensors (one of them
    of the output's shape, or both contiguous), or of a tensor and a number."""

    def formula(input: Any, other: Any, **options: Any) -> torch.Tensor | None:
        if options or not _plain(input):
            return None
        if isinstance(other, torch.Tensor) and _plain(other):
            if _broadcasts_to(other, input.shape):
                layout = input
            elif _broadcasts_to(input, other.shape) and _agrees(input, other):
                layout = other
            else:  # each has a size 1 the other broadcasts: (T, 1) * (8,)
                layout = _outer(input, other)
            if layout is None or not _orders_its_output(layout):
                return None
        elif type(other) in (int, float) and (input.dtype.is_floating_point or kind == "compare"):
            layout = input
            if not _alone_orders_its_output(input) or input.dtype.is_complex:
                return None
        else:
            return None
        dtype = torch.result_type(input, other)
        if kind == "compare":
            dtype = torch.bool
        elif dtype == torch.bool:
            return None  # sub refuses bools; add and mul are logical
        elif kind == "divide" and not (dtype.is_floating_point or dtype.is_complex):
            dtype = torch.get_default_dtype()
        return torch.empty_strided(layout.shape, layout.stride(), dtype=dtype, device="meta")

    return formula


def _unary(floating: bool) -> Callable[..., torch.Tensor | None]:
    """The formula of a function of each element of a dense tensor that keeps
    its dtype: of floats (``cos``, ``neg``...), or (not ``floating``) of bools
    and integers (``~``)."""

    def formula(input: Any, **options: Any) -> torch.Tensor | None:
        if options or not _plain(input) or not _alone_orders_its_output(input):
            return None
        inexact = input.dtype.is_floating_point or input.dtype.is_complex
        if input.dtype.is_floating_point if floating else not inexact:
            return torch.empty_strided(input.shape, input.stride(), dtype=input.dtype, device="meta")
        return None

    return formula


_each_float = _unary(True)
"""The formula of a function of each element of a float tensor (``cos``...)."""


def _activation(**valid: Callable[[Any], bool]) -> Callable[..., torch.Tensor | None]:
    """The formula of an activation of floats (``F.relu``, ``F.gelu``...) given
    options that pass their tests in ``valid``: :data:`_each_float`'s, or in
    place (``inplace=True``) the input itself."""

    def formula(input: Any, inplace: Any = False, **options: Any) -> torch.Tensor | None:
        known = all(name in valid and valid[name](value) for name, value in options.items())
        output = _each_float(input) if known and type(inplace) is bool else None
        return input if inplace and output is not None else output

    return formula


def _number(value: Any) -> bool:
    return type(value) in (int, float)


def _dropout(input: Any, p: Any = 0.5, training: Any = True, inplace: Any = False) -> torch.Tensor | None:
    """The formula of ``F.dropout``: the input itself where it drops nothing
    (eval mode, ``p=0``) or works in place, as torch returns it."""
    if not _number(p) or not 0 <= p <= 1 or type(training) is not bool or type(inplace) is not bool:
        return None
    output = _each_float(input)
    return input if output is not None and (inplace or not training or p == 0) else output


_BINARY = {
    **dict.fromkeys(("add", "sub", "mul"), "arithmetic"),
    "div": "divide",
    **dict.fromkeys(("eq", "ne", "lt", "le", "gt", "ge", "__eq__", "__ne__"), "compare"),
}
_FLOATING = ("neg", "abs", "cos", "sin", "exp", "log", "sqrt", "rsqrt", "reciprocal", "tanh", "sigmoid")
"""Functions of each element that keep a float tensor's dtype."""


def _roll(input: Any, shifts: Any, dims: Any = None) -> torch.Tensor | None:
    """The formula of a roll along one dim (rotary embeddings' ``x.roll(half, -1)``)."""
    if not _plain(input) or type(shifts) is not int or type(dims) is not int or input.dim() == 0:
        return None
    return (
        torch.empty(input.shape, dtype=input.dtype, device="meta")
        if -input.dim() <= dims < input.dim()
        else None
    )


def _cat(tensors: Any, dim: int = 0, **options: Any) -> torch.Tensor | None:
    if options or not isinstance(tensors, (list, tuple)) or not tensors or not _plain(*tensors):
        return None
    first = tensors[0]
    if type(dim) is not int or not -first.dim() <= dim < first.dim():
        return None
    dim %= first.dim()
    others = first.shape[:dim] + first.shape[dim + 1 :]
    for tensor in tensors:  # one dtype, the same other sizes, contiguous without ambiguity (no size 1)
        shape = tensor.shape
        if tensor.dtype != first.dtype or not tensor.is_contiguous() or min(shape) < 2:
            return None
        if shape[:dim] + shape[dim + 1 :] != others:
            return None
    shape = list(first.shape)
    shape[dim] = sum(tensor.shape[dim] for tensor in tensors)
    return torch.empty(shape, dtype=first.dtype, device="meta")


def _attention(
    query: Any,
    key: Any,
    value: Any,
    attn_mask: Any = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
    enable_gqa: bool = False,
) -> torch.Tensor | None:
    if not _plain(query, key, value) or not query.dtype.is_floating_point:
        return None
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4 or not query.dtype == key.dtype == value.dtype:
        return None
    (
        (batch, heads, length, width),
        (kv_batch, kv_heads, source, kv_width),
        (v_batch, v_heads, v_source, v_width),
    ) = (query.shape, key.shape, value.shape)
    if min(batch, heads, length, width, kv_heads, source, v_width) < 1 or not batch == kv_batch == v_batch:
        return None
    if (kv_heads, source, kv_width) != (v_heads, v_source, width):
        return None
    if heads != kv_heads and not (enable_gqa is True and heads % kv_heads == 0):
        return None
    if type(dropout_p) is not float or not 0.0 <= dropout_p <= 1.0 or type(is_causal) is not bool:
        return None
    if scale is not None and type(scale) is not float:
        return None
    if (
        attn_mask is not None
        and (  # a mask of keys (bool) or of scores (the query's dtype), not with is_causal
            is_causal
            or not _plain(attn_mask)
            or attn_mask.dtype not in (torch.bool, query.dtype)
            or not _broadcasts_to(attn_mask, torch.Size((batch, heads, length, source)))
        )
    ):
        return None
    return torch.empty(batch, heads, length, v_width, dtype=query.dtype, device="meta")


def _recurrent(
    input: Any,
    hx: Any,
    params: Any,
    has_biases: Any,
    num_layers: Any,
    dropout: Any,
    train: Any,
    bidirectional: Any,
    batch_first: Any,
) -> tuple[torch.Tensor, ...] | None:
    """The formula of ``torch.lstm``, ``torch.gru`` and ``torch.rnn_*`` on a padded
    batch (``hx``: the initial states, whose shapes the final ones have): torch
    runs them on meta step by step, 30 to 60 ms a call."""
    states = tuple(hx) if isinstance(hx, (tuple, list)) else (hx,)
    if not (isinstance(params, (tuple, list)) and params and _plain(input, *states, *params)):
        return None
    if type(bidirectional) is not bool or type(batch_first) is not bool or type(num_layers) is not int:
        return None
    directions, (weight_ih, weight_hh) = 2 if bidirectional else 1, params[:2]
    matrices = weight_ih.dim() == weight_hh.dim() == 2
    if input.dim() != 3 or not matrices or input.shape[2] != weight_ih.shape[1]:
        return None
    length, batch = (input.shape[1], input.shape[0]) if batch_first else (input.shape[0], input.shape[1])
    stacked = directions * num_layers
    if num_layers < 1 or len(params) % stacked or not 2 <= len(params) // stacked <= 5:
        return None  # weights, biases and projections per layer and direction
    sizes = [(stacked, batch, weight_hh.shape[1]), (stacked, batch, weight_ih.shape[0] // 4)]
    if [tuple(state.shape) for state in states] != sizes[: len(states)] or input.numel() == 0:
        return None
    if not input.dtype.is_floating_point or any(tensor.dtype != input.dtype for tensor in (*states, *params)):
        return None
    output = torch.empty(length, batch, directions * weight_hh.shape[1], dtype=input.dtype, device="meta")
    finals = (torch.empty(state.shape, dtype=input.dtype, device="meta") for state in states)
    return (output.transpose(0, 1) if batch_first else output, *finals)


def _reshape(input: Any, *shape: Any) -> torch.Tensor | None:
    """The formula of ``reshape`` of a non-empty tensor to sizes (one ``-1``
    at most): torch's view where one exists, else a contiguous copy."""
    sizes = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    if not _plain(input) or any(type(size) is not int for size in sizes):
        return None
    numel, known = input.numel(), math.prod(size for size in sizes if size != -1)
    if sizes.count(-1) == 1 and known > 0:
        sizes = tuple(numel // known if size == -1 else size for size in sizes)
    if not numel or min(sizes, default=1) < 1 or math.prod(sizes) != numel:
        return None  # torch says why
    tensor: torch.Tensor = input
    return (
        tensor.view(sizes) if _views(tensor, sizes) else torch.empty(sizes, dtype=tensor.dtype, device="meta")
    )


def _views(tensor: torch.Tensor, sizes: Sequence[int]) -> bool:
    """Whether ``tensor.view(sizes)`` exists, for positive sizes of its number
    of elements, as torch's ``computeStride`` decides: each run of dims that
    the sizes merge or split is laid out as one block (a size 1 fits anywhere)."""
    shape, stride = tensor.shape, tensor.stride()
    view_dim, block_stride, tensor_numel, view_numel = len(sizes) - 1, stride[-1] if stride else 1, 1, 1
    for dim in range(tensor.dim() - 1, -1, -1):
        tensor_numel *= shape[dim]
        if dim == 0 or (shape[dim - 1] != 1 and stride[dim - 1] != tensor_numel * block_stride):
            while view_dim >= 0 and view_numel < tensor_numel:
                view_numel *= sizes[view_dim]
                view_dim -= 1
            if view_numel != tensor_numel:
                return False
            if dim:
                block_stride, tensor_numel, view_numel = stride[dim - 1], 1, 1
    return True


def _linear(input: Any, weight: Any, bias: Any = None) -> torch.Tensor | None:
    """The formula of ``F.linear`` in one dtype (a tied head's ``F.linear(h, embedding.weight)``)."""
    if not _plain(input, weight) or input.dim() == 0 or weight.dim() != 2:
        return None
    if input.dtype != weight.dtype or input.shape[-1] != weight.shape[1]:
        return None
    if not _fits(bias, input.dtype, weight.shape[:1]):
        return None
    return torch.empty((*input.shape[:-1], weight.shape[0]), dtype=input.dtype, device="meta")


def _arange(*bounds: Any, dtype: torch.dtype | None = None, device: Any = None) -> torch.Tensor | None:
    """The formula of ``torch.arange`` of int bounds on the meta device, in
    ints or floats: ``arange(sequence)`` of a recorded length."""
    if not 1 <= len(bounds) <= 3 or any(type(bound) is not int for bound in bounds):
        return None
    if device is None or torch.device(device).type != "meta":
        return None
    if dtype is not None and not (dtype.is_floating_point or dtype in (torch.long, torch.int)):
        return None
    start, end, step = (0, bounds[0], 1) if len(bounds) == 1 else (*bounds, 1)[:3]
    if step == 0 or (end - start) * step < 0:
        return None  # torch refuses it
    return torch.empty(-((start - end) // step), dtype=dtype or torch.long, device="meta")


_FORMULAS: dict[Callable[..., Any], Callable[..., torch.Tensor | tuple[torch.Tensor, ...] | None]] = {
    torch.arange: _arange,
    F.linear: _linear,
    F.batch_norm: _batch_norm,
    F.layer_norm: _layer_norm,
    F.scaled_dot_product_attention: _attention,
    torch.cat: _cat,
    torch.roll: _roll,
    torch.Tensor.roll: _roll,
    torch.reshape: _reshape,
    torch.Tensor.reshape: _reshape,
    **{
        getattr(owner, name): _binary(kind)
        for owner in (torch, torch.Tensor)
        for name, kind in _BINARY.items()
        if hasattr(owner, name)
    },
    **{getattr(owner, name): _each_float for owner in (torch, torch.Tensor) for name in _FLOATING},
    **dict.fromkeys(
        (F.relu, torch.relu, torch.Tensor.relu, F.relu6, F.silu, F.hardswish, F.hardsigmoid, F.mish, F.selu),
        _activation(),
    ),
    F.leaky_relu: _activation(negative_slope=_number),
    F.elu: _activation(alpha=_number),
    F.gelu: _activation(approximate=lambda value: value in ("none", "tanh")),
    F.dropout: _dropout,
    **dict.fromkeys((torch.lstm, torch.gru, torch.rnn_tanh, torch.rnn_relu), _recurrent),
    **dict.fromkeys((torch.bitwise_not, torch.Tensor.bitwise_not, torch.Tensor.__invert__), _unary(False)),
}


class MetaFormulas(TorchFunctionMode):
    """Inside the block, the ops of :data:`_FORMULAS` (norms, attention,
    ``linear``, ``cat``, ``roll``, ``arange``, ``reshape``, arithmetic, comparisons,
    functions of each element, activations, dropout, recurrent layers) on
    meta tensors answer from their formula where it is certain (see the
    module's docstring); everything else runs as it would."""

    def __torch_function__(
        self, func: Any, types: Any, args: Sequence[Any] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        formula = _FORMULAS.get(func)
        try:
            output = None if formula is None else formula(*args, **kwargs)
        except (TypeError, RuntimeError):  # arguments torch refuses: torch says why
            output = None
        return func(*args, **kwargs) if output is None else output
