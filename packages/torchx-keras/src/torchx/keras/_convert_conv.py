"""Converters of Keras's image layers: convolutions, pools, padding, resizing and the norms.

They run channels-first (the Keras tensor is permuted once, where it first
needs it), with kernels moved to torch's layout. Keras's ``same`` padding is
TensorFlow's: the extra row or column goes at the end, which torch's
symmetric padding cannot say, so an uneven ``same`` becomes a ``ZeroPad``
before the layer (its sizes read off the input, known at conversion).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from torch import nn

import torchx.layers as L
from torchx.keras._convert_core import activate
from torchx.keras._frozen_batch_norm import FrozenBatchNorm
from torchx.keras._layer import KerasLayer, assign, converts
from torchx.keras._values import PendingPadding, Value

if TYPE_CHECKING:
    from torchx.keras._model import GraphBuilder

__all__: list[str] = []


def _spatial_rank(layer: KerasLayer) -> int:
    """The ``N`` of ``...ND...`` in the class name (``DepthwiseConv2D`` -> 2)."""
    return int(re.search(r"(\d)D", layer.class_name).group(1))  # type: ignore[union-attr]


def _same_padding(
    layer: KerasLayer,
    value: Value,
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    dilation: tuple[int, ...],
) -> list[tuple[int, int]]:
    """TensorFlow's ``same`` padding per spatial dim: (before, after), the extra at the end."""
    sizes = value.keras_shape[1:-1]
    pads = []
    for size, k, s, d in zip(sizes, kernel, strides, dilation, strict=True):
        extent = (k - 1) * d + 1
        if s == 1:
            total = extent - 1
        elif size is None:
            raise layer.error(
                "padding='same' with strides > 1 needs the input's spatial size, and the model's input has it "
                "dynamic (None): give the Input a fixed size"
            )
        else:
            total = max((math.ceil(size / s) - 1) * s + extent - size, 0)
        pads.append((total // 2, total - total // 2))
    return pads


def _padded(
    layer: KerasLayer, value: Value, pads: list[tuple[int, int]], fill: float = 0.0
) -> tuple[Value, tuple[int, ...]]:
    """``value`` with ``pads`` applied: symmetric ones are returned for the layer to take, uneven ones padded here."""
    if all(before == after for before, after in pads):
        return value, tuple(before for before, _ in pads)
    flat, rank = _torch_pads(pads), len(pads)
    make = lambda: getattr(L, f"ConstantPad{rank}d")(flat, fill, name=layer.part_name("pad"))  # noqa: E731
    return value.with_tensor(layer.apply(make, value.tensor, part="pad")), (0,) * rank


def _torch_pads(pads: list[tuple[int, int]]) -> tuple[int, ...]:
    """(before, after) per spatial dim, first dim first -> torch's pad order: last dim first, flat."""
    return tuple(size for before, after in reversed(pads) for size in (before, after))


def _torch_kernel(kernel: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Keras ``(*spatial, in, out)`` -> torch ``(out, in, *spatial)``."""
    rank = kernel.ndim - 2
    return kernel.transpose(rank + 1, rank, *range(rank))


def _window(layer: KerasLayer) -> tuple[int, tuple[int, ...], tuple[int, ...], tuple[int, ...], bool]:
    """A convolution's spatial rank, kernel size, strides, dilation and whether it has a bias."""
    rank = _spatial_rank(layer)
    kernel, strides = layer.ints("kernel_size", rank), layer.ints("strides", rank, 1)
    return rank, kernel, strides, layer.ints("dilation_rate", rank, 1), bool(layer.get("use_bias", True))


def _kernel_loader(
    layer: KerasLayer, use_bias: bool, to_torch: Callable[[np.ndarray[Any, Any]], np.ndarray[Any, Any]]
) -> Callable[[nn.Module], None]:
    """Loads the Keras kernel (moved to torch's layout by ``to_torch``) and bias into a built module."""

    def load(module: nn.Module) -> None:
        arrays = layer.arrays(2 if use_bias else 1)
        assign(layer, module, weight=to_torch(arrays[0]))
        if use_bias:
            assign(layer, module, bias=arrays[1])

    return load


def _conv_padding(layer: KerasLayer, value: Value, kernel: tuple[int, ...], strides: tuple[int, ...],
                  dilation: tuple[int, ...]) -> tuple[Value, tuple[int, ...]]:  # fmt: skip
    padding = layer.require("padding", ("valid", "same", "causal"))
    rank = len(kernel)
    if padding == "valid":
        pending = value.padding
        if (
            value.placeholder is None
            and pending is not None
            and pending.symmetric is not None
            and layer.calls == 1
        ):
            return pending.source, pending.symmetric  # a ZeroPadding before: the convolution's own padding
        return value, (0,) * rank
    if padding == "causal":
        return _padded(layer, value, [((k - 1) * d, 0) for k, d in zip(kernel, dilation, strict=True)])
    return _padded(layer, value, _same_padding(layer, value, kernel, strides, dilation))


@converts(
    "Conv1D",
    "Conv2D",
    "Conv3D",
    becomes="Conv1d/2d/3d (an uneven 'same' or 'causal' padding: ConstantPad before)",
)
def conv(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> Value:
    rank, kernel, strides, dilation, use_bias = _window(layer)
    groups = layer.integer("groups", 1)
    value, padding = _conv_padding(layer, graph.layouts.axis_first(inputs[0]), kernel, strides, dilation)
    load = _kernel_loader(layer, use_bias, _torch_kernel)
    make = lambda: getattr(L, f"Conv{rank}d")(  # noqa: E731
        layer.integer("filters"), kernel, stride=strides, padding=padding, dilation=dilation, groups=groups,
        bias=use_bias, name=layer.module_name,
    )  # fmt: skip
    out = value.with_tensor(layer.apply(make, value.tensor, load=load))
    return activate(layer, out, layer.get("activation"))


@converts(
    "Conv1DTranspose",
    "Conv2DTranspose",
    "Conv3DTranspose",
    becomes="ConvTranspose1d/2d/3d (a larger crop at the end: sliced after)",
)
def conv_transpose(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> Value:
    rank, kernel, strides, dilation, use_bias = _window(layer)
    padding_kind = layer.require("padding", ("valid", "same"))
    output_padding = layer.get("output_padding")
    requested = None if output_padding is None else layer.ints("output_padding", rank, minimum=0)
    padding, extra, trim = [], [], []
    for index, (k, s, d) in enumerate(zip(kernel, strides, dilation, strict=True)):
        crop_before, crop_after = _transpose_crops(
            (k - 1) * d + 1, s, padding_kind, None if requested is None else requested[index]
        )
        if crop_before < 0 or crop_after <= crop_before - max(s, d):
            raise layer.error(
                f"kernel_size={k}, strides={s}, padding={padding_kind!r}, output_padding={output_padding} crops "
                f"({crop_before}, {crop_after}) from the transposed convolution's ends, which torch's "
                "ConvTranspose cannot (it adds less than max(stride, dilation) at the end)"
            )
        # torch crops `padding` from both ends, less `output_padding` at the end; a larger end crop is sliced after.
        padding.append(crop_before)
        extra.append(max(crop_before - crop_after, 0))
        trim.append(max(crop_after - crop_before, 0))
    value = graph.layouts.axis_first(inputs[0])
    load = _kernel_loader(layer, use_bias, lambda kernel: kernel.transpose(rank + 1, rank, *range(rank)))
    make = lambda: getattr(L, f"ConvTranspose{rank}d")(  # noqa: E731
        layer.integer("filters"), kernel, stride=strides, padding=tuple(padding), output_padding=tuple(extra),
        dilation=dilation, bias=use_bias, name=layer.module_name,
    )  # fmt: skip
    out = layer.apply(make, value.tensor, load=load)
    if any(trim):
        out = out[(slice(None), slice(None), *(slice(0, -t if t else None) for t in trim))]
    return activate(layer, value.with_tensor(out), layer.get("activation"))


def _transpose_crops(extent: int, stride: int, padding: str, output_padding: int | None) -> tuple[int, int]:
    """What Keras (as TensorFlow and JAX define it) crops from the full transposed output's two ends."""
    if padding == "valid":
        added = max(extent, stride) - extent if output_padding is None else output_padding
        return 0, -added
    pad_len = stride + extent - 2 if output_padding is None else extent + extent % 2 - 2 + output_padding
    left = min(pad_len // 2 + pad_len % 2, extent - 1)
    return extent - 1 - left, extent - 1 - (pad_len - left)


@converts("DepthwiseConv1D", "DepthwiseConv2D", becomes="Conv1d/2d with groups = in_channels")
def depthwise(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> Value:
    rank, kernel, strides, dilation, use_bias = _window(layer)
    multiplier = layer.integer("depth_multiplier", 1)
    value, padding = _conv_padding(layer, graph.layouts.axis_first(inputs[0]), kernel, strides, dilation)
    channels = int(value.keras_shape[-1] or 0)
    load = _kernel_loader(layer, use_bias, _depthwise_kernel)
    make = lambda: getattr(L, f"Conv{rank}d")(  # noqa: E731
        channels * multiplier, kernel, stride=strides, padding=padding, dilation=dilation, groups=channels,
        bias=use_bias, name=layer.module_name,
    )  # fmt: skip
    out = value.with_tensor(layer.apply(make, value.tensor, load=load))
    return activate(layer, out, layer.get("activation"))


def _depthwise_kernel(kernel: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Keras ``(*spatial, in, multiplier)`` -> torch ``(in * multiplier, 1, *spatial)``."""
    rank = kernel.ndim - 2
    moved = kernel.transpose(rank, rank + 1, *range(rank))
    return moved.reshape(-1, 1, *kernel.shape[:rank])


@converts(
    "SeparableConv1D", "SeparableConv2D", becomes="a depthwise Conv1d/2d, then a 1x1 Conv1d/2d (two layers)"
)
def separable(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> Value:
    rank, kernel, strides, dilation, use_bias = _window(layer)
    multiplier = layer.integer("depth_multiplier", 1)
    value, padding = _conv_padding(layer, graph.layouts.axis_first(inputs[0]), kernel, strides, dilation)
    channels = int(value.keras_shape[-1] or 0)
    conv_class = getattr(L, f"Conv{rank}d")

    def load_depthwise(module: nn.Module) -> None:
        assign(layer, module, weight=_depthwise_kernel(layer.arrays(3 if use_bias else 2)[0]))

    def load_pointwise(module: nn.Module) -> None:
        arrays = layer.arrays(3 if use_bias else 2)
        assign(layer, module, weight=_torch_kernel(arrays[1]))
        if use_bias:
            assign(layer, module, bias=arrays[2])

    depth = layer.apply(
        lambda: conv_class(channels * multiplier, kernel, stride=strides, padding=padding, dilation=dilation,
                           groups=channels, bias=False, name=layer.part_name("depthwise")),
        value.tensor, load=load_depthwise, part="depthwise",
    )  # fmt: skip
    out = layer.apply(
        lambda: conv_class(layer.integer("filters"), 1, bias=use_bias, name=layer.part_name("pointwise")),
        depth, load=load_pointwise, part="pointwise",
    )  # fmt: skip
    return activate(layer, value.with_tensor(out), layer.get("activation"))


@converts(
    "MaxPooling1D", "MaxPooling2D", "MaxPooling3D", "AveragePooling1D", "AveragePooling2D", "AveragePooling3D",
    becomes="MaxPool/AvgPool 1d/2d/3d ('same': padded as TensorFlow pads, the average over real values only)",
)  # fmt: skip
def pool(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> Value:
    rank = _spatial_rank(layer)
    size = layer.ints("pool_size", rank)
    strides = layer.ints("strides", rank) if layer.get("strides") is not None else size
    value = graph.layouts.axis_first(inputs[0])
    is_max = layer.class_name.startswith("Max")
    padding: tuple[int, ...] = (0,) * rank
    ceil_mode, drop_first = False, [False] * rank
    if layer.require("padding", ("valid", "same")) == "same":
        pads = _same_padding(layer, value, size, strides, (1,) * rank)
        if is_max:
            # -inf, as TensorFlow pads: every float dtype holds it (float32's lowest overflows float16)
            value, padding = _padded(layer, value, pads, fill=-math.inf)
        else:
            padding, ceil_mode, drop_first = _uneven_average(pads, strides)
    name = layer.module_name
    if is_max:
        make = lambda: getattr(L, f"MaxPool{rank}d")(size, strides, padding, name=name)  # noqa: E731
    else:
        make = lambda: getattr(L, f"AvgPool{rank}d")(  # noqa: E731
            size, strides, padding, ceil_mode=ceil_mode, count_include_pad=False, name=name
        )
    out = layer.apply(make, value.tensor)
    if any(drop_first):
        out = out[(slice(None), slice(None), *(slice(1 if drop else 0, None) for drop in drop_first))]
    return value.with_tensor(out)


def _uneven_average(
    pads: list[tuple[int, int]], strides: tuple[int, ...]
) -> tuple[tuple[int, ...], bool, list[bool]]:
    """An average over the real values of TensorFlow's ``same`` windows, as torch's AvgPool can take it.

    The extra padded row goes at the end. With a stride > 1, pad the smaller amount and let ``ceil_mode``
    add the last window (torch averages it over the real values only); with stride 1, pad the larger
    amount on both sides and drop the first output, whose window starts one too early.
    Returns the padding, ``ceil_mode`` and, per dim, whether its first output is dropped.
    """
    uneven = [before != after for before, after in pads]
    drop_first = [odd and stride == 1 for odd, stride in zip(uneven, strides, strict=True)]
    padding = tuple(after if drop else before for (before, after), drop in zip(pads, drop_first, strict=True))
    return padding, any(uneven), drop_first


@converts(
    "GlobalAveragePooling1D", "GlobalAveragePooling2D", "GlobalAveragePooling3D",
    "GlobalMaxPooling1D", "GlobalMaxPooling2D", "GlobalMaxPooling3D",
    becomes="mean / amax over the spatial dims (keepdims kept)",
)  # fmt: skip
def global_pool(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> Value:
    value = graph.layouts.axis_first(inputs[0])
    keepdims = bool(layer.get("keepdims", False))
    dims = tuple(range(2, value.rank))
    reduce = "mean" if "Average" in layer.class_name else "amax"
    out = getattr(value.tensor, reduce)(dim=dims, keepdim=keepdims)
    return Value(out, value.order) if keepdims else Value(out, (0, 1))


@converts("ZeroPadding1D", "ZeroPadding2D", "ZeroPadding3D", becomes="ZeroPad1d/2d/3d")
def zero_padding(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> Value:
    rank = _spatial_rank(layer)
    pads = _pairs(layer, "padding", rank)
    value = graph.layouts.axis_first(inputs[0])
    flat = _torch_pads(pads)
    make = lambda: getattr(L, f"ZeroPad{rank}d")(flat, name=layer.module_name)  # noqa: E731
    # Pending: a valid convolution reading it takes the padding itself (as torch code would write it).
    pending = PendingPadding(value, tuple(pads), lambda: layer.apply(make, value.tensor))
    return Value(None, value.order, padding=pending)


@converts("Cropping1D", "Cropping2D", "Cropping3D", becomes="slicing")
def cropping(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> Value:
    rank = _spatial_rank(layer)
    crops = _pairs(layer, "cropping", rank)
    value = graph.layouts.axis_first(inputs[0])
    for size, (before, after) in zip(value.keras_shape[1:-1], crops, strict=True):
        if size is not None and before + after >= size:
            raise layer.error(
                f"cropping={layer.get('cropping')!r} crops {before} + {after} from a dim of size {size}: "
                "nothing would be left"
            )
    index = (slice(None), slice(None), *(slice(before, -after if after else None) for before, after in crops))
    return value.with_tensor(value.tensor[index])


def _pairs(layer: KerasLayer, key: str, rank: int) -> list[tuple[int, int]]:
    """Keras padding or cropping: an int, one per dim, or (before, after) per dim; none negative."""
    value = layer.get(key)
    pairs: list[Any] = []
    if isinstance(value, int):
        pairs = [(value, value)] * rank
    elif isinstance(value, list) and len(value) == 2 and rank == 1 and all(isinstance(v, int) for v in value):
        pairs = [tuple(value)]
    elif isinstance(value, list) and len(value) == rank:
        pairs = [(v, v) if isinstance(v, int) else v for v in value]
    if pairs and all(
        isinstance(pair, (list, tuple)) and len(pair) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in pair)
        for pair in pairs
    ):  # fmt: skip
        return [(int(pair[0]), int(pair[1])) for pair in pairs]
    raise layer.error(f"{key}={value!r} is not {rank} (before, after) pair(s) of sizes >= 0")


@converts("UpSampling1D", "UpSampling2D", "UpSampling3D", becomes="Upsample (nearest or bilinear)")
def upsampling(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> Value:
    rank = _spatial_rank(layer)
    size = layer.ints("size", rank, 2)
    bilinear = rank == 2 and layer.require("interpolation", ("nearest", "bilinear")) == "bilinear"
    mode: Literal["nearest", "bilinear"] = "bilinear" if bilinear else "nearest"
    value = graph.layouts.axis_first(inputs[0])
    factors = tuple(float(factor) for factor in size)
    make = lambda: L.Upsample(scale_factor=factors, mode=mode, name=layer.module_name)  # noqa: E731
    return value.with_tensor(layer.apply(make, value.tensor))


@converts(
    "BatchNormalization",
    becomes="BatchNorm1d/2d/3d (momentum = 1 - Keras's momentum); trainable=False: FrozenBatchNorm (its "
    "moving statistics in training too)",
)
def batch_norm(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> Value:
    axis = layer.get("axis", -1)
    if isinstance(axis, list) and len(axis) != 1:
        raise layer.error(f"axis={axis!r}: normalizing over several axes is not supported")
    axis = layer.axis(inputs[0].rank)
    center, scale = bool(layer.get("center", True)), bool(layer.get("scale", True))
    if center != scale:
        raise layer.error(
            f"center={center} with scale={scale} has no torch equivalent (affine is both or neither)"
        )
    if layer.get("renorm"):
        raise layer.error("renorm=True is not supported")
    value = graph.layouts.axis_first(inputs[0], axis)
    if not 2 <= value.rank <= 5:
        raise layer.error(f"normalizes a rank-{value.rank} input: torch's BatchNorm takes ranks 2 to 5")
    dims = max(value.rank - 2, 1)
    momentum = round(1.0 - float(layer.get("momentum", 0.99)), 12)

    def load(module: nn.Module) -> None:
        arrays = layer.arrays(4 if scale else 2)
        if scale:
            assign(layer, module, weight=arrays[0], bias=arrays[1])
        assign(layer, module, running_mean=arrays[-2], running_var=arrays[-1])

    eps = float(layer.get("epsilon", 1e-3))
    if layer.trainable:
        make = lambda: getattr(L, f"BatchNorm{dims}d")(  # noqa: E731
            eps=eps, momentum=momentum, affine=scale, name=layer.module_name
        )
    else:  # Keras normalizes a frozen BatchNormalization with its moving statistics, in training too
        make = lambda: FrozenBatchNorm(eps=eps, affine=scale, name=layer.module_name)  # noqa: E731
    return value.with_tensor(layer.apply(make, value.tensor, load=load))


@converts("LayerNormalization", "RMSNormalization", becomes="LayerNorm / RMSNorm over the trailing axes")
def layer_norm(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> Value:
    value = graph.layouts.keras(inputs[0])
    axes = layer.get("axis", -1)
    axes = sorted(a % value.rank for a in (axes if isinstance(axes, list) else [axes]))
    if axes != list(range(value.rank - len(axes), value.rank)):
        raise layer.error(
            f"axis={layer.get('axis')!r}: only the trailing axes can be normalized (torch's LayerNorm)"
        )
    shape = tuple(int(value.keras_shape[a] or 0) for a in axes)
    rms = layer.class_name == "RMSNormalization"
    center, scale = not rms and bool(layer.get("center", True)), rms or bool(layer.get("scale", True))
    eps = float(layer.get("epsilon", 1e-6 if rms else 1e-3))
    if center and not scale:
        raise layer.error(
            "center=True with scale=False has no torch equivalent (LayerNorm's bias needs its weight)"
        )
    if layer.get("rms_scaling"):
        raise layer.error(
            "rms_scaling=True divides by the variance (not the root mean square, as Keras's deprecation says), "
            "which no torch layer does: use keras.layers.RMSNormalization"
        )

    def load(module: nn.Module) -> None:
        arrays = layer.arrays(int(center) + int(scale))
        if scale:
            assign(layer, module, weight=arrays[0].reshape(shape))
        if center:
            assign(layer, module, bias=arrays[-1].reshape(shape))

    options: dict[str, Any] = {"normalized_shape": shape, "eps": eps, "name": layer.module_name}
    if not rms:
        options["elementwise_affine"] = scale
        if center != scale:
            options["bias"] = center
    norm_class = L.RMSNorm if rms else L.LayerNorm
    make = lambda: norm_class(**options)  # noqa: E731
    return value.with_tensor(layer.apply(make, value.tensor, load=load))


@converts("GroupNormalization", becomes="GroupNorm (channels first)")
def group_norm(layer: KerasLayer, inputs: list[Value], graph: GraphBuilder) -> Value:
    axis = layer.axis(inputs[0].rank)
    value = graph.layouts.axis_first(inputs[0], axis)
    groups = layer.integer("groups", 32)
    center, scale = bool(layer.get("center", True)), bool(layer.get("scale", True))
    if center != scale:
        raise layer.error(
            f"center={center} with scale={scale} has no torch equivalent (affine is both or neither)"
        )

    def load(module: nn.Module) -> None:
        if scale:
            gamma, beta = layer.arrays(2)
            assign(layer, module, weight=gamma, bias=beta)

    eps = float(layer.get("epsilon", 1e-3))
    make = lambda: L.GroupNorm(groups, eps=eps, affine=scale, name=layer.module_name)  # noqa: E731
    return value.with_tensor(layer.apply(make, value.tensor, load=load))
