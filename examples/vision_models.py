"""torchvision's classification models written with TorchX's functional API, and by hand.

Each TorchX model gives its layers torchvision's names (``name="layer1.0.conv1"``),
so its state dict has exactly torchvision's keys and a torchvision checkpoint
loads with ``load_state_dict(strict=True)``. Beside each is the same model
written in plain PyTorch, as torchvision writes it, for the tests (same
parameter count, same outputs with the same weights) and the benchmarks
(memory and time, side by side).

    python examples/vision_models.py      # parameter counts, TorchX against by hand
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

import torchx.layers as L
from torchx.functional import Functional, Placeholder


def _image(batch: int | None) -> Placeholder:
    """The input every model here is defined on: a batch of 224x224 RGB images
    (``None``: any batch size)."""
    return Placeholder((batch, 3, 224, 224), name="image")


# -- ResNet ---------------------------------------------------------------------------


def _conv_bn(x: Placeholder, name: str, bn: str, out: int, kernel: int, stride: int = 1) -> Placeholder:
    conv = L.Conv2d(out, kernel, stride=stride, padding=kernel // 2, bias=False, name=name)
    return L.BatchNorm2d(name=bn)(conv(x))


def _basic_block(x: Placeholder, name: str, width: int, stride: int) -> Placeholder:
    out = L.ReLU(inplace=True)(_conv_bn(x, f"{name}.conv1", f"{name}.bn1", width, 3, stride))
    out = _conv_bn(out, f"{name}.conv2", f"{name}.bn2", width, 3)
    return L.ReLU(inplace=True)(out + _shortcut(x, name, width, stride))


def _bottleneck(x: Placeholder, name: str, width: int, stride: int) -> Placeholder:
    out = L.ReLU(inplace=True)(_conv_bn(x, f"{name}.conv1", f"{name}.bn1", width, 1))
    out = L.ReLU(inplace=True)(_conv_bn(out, f"{name}.conv2", f"{name}.bn2", width, 3, stride))
    out = _conv_bn(out, f"{name}.conv3", f"{name}.bn3", width * 4, 1)
    return L.ReLU(inplace=True)(out + _shortcut(x, name, width * 4, stride))


def _shortcut(x: Placeholder, name: str, out: int, stride: int) -> Placeholder:
    """The block's input, or its projection when the shape changes (``downsample``)."""
    if stride == 1 and x.shape[1] == out:
        return x
    return _conv_bn(x, f"{name}.downsample.0", f"{name}.downsample.1", out, 1, stride)


def resnet(
    block: Callable[[Placeholder, str, int, int], Placeholder],
    depths: tuple[int, ...],
    classes: int = 1000,
    batch: int | None = None,
) -> Functional:
    """A ResNet of ``block``s, ``depths[i]`` of them in stage ``i + 1``."""
    x = _image(batch)
    y = L.ReLU(inplace=True)(_conv_bn(x, "conv1", "bn1", 64, 7, stride=2))
    y = L.MaxPool2d(3, stride=2, padding=1)(y)
    for stage, (depth, width) in enumerate(zip(depths, (64, 128, 256, 512), strict=True), start=1):
        for index in range(depth):
            y = block(y, f"layer{stage}.{index}", width, 2 if stage > 1 and index == 0 else 1)
    y = L.Flatten()(L.AdaptiveAvgPool2d(1)(y))
    return Functional(inputs=x, outputs=L.Linear(classes, name="fc")(y))


def resnet18(classes: int = 1000, batch: int | None = None) -> Functional:
    return resnet(_basic_block, (2, 2, 2, 2), classes, batch)


def resnet50(classes: int = 1000, batch: int | None = None) -> Functional:
    return resnet(_bottleneck, (3, 4, 6, 3), classes, batch)


# -- DenseNet -------------------------------------------------------------------------


def _norm_relu_conv(x: Placeholder, name: str, suffix: str, out: int, kernel: int) -> Placeholder:
    y = L.ReLU(inplace=True)(L.BatchNorm2d(name=f"{name}.norm{suffix}")(x))
    return L.Conv2d(out, kernel, padding=kernel // 2, bias=False, name=f"{name}.conv{suffix}")(y)


def densenet121(
    classes: int = 1000, batch: int | None = None, growth: int = 32, bottleneck: int = 4
) -> Functional:
    """DenseNet-121: four dense blocks of 6, 12, 24 and 16 layers."""
    x = _image(batch)
    y = L.Conv2d(64, 7, stride=2, padding=3, bias=False, name="features.conv0")(x)
    y = L.ReLU(inplace=True)(L.BatchNorm2d(name="features.norm0")(y))
    y = L.MaxPool2d(3, stride=2, padding=1)(y)
    for block, depth in enumerate((6, 12, 24, 16), start=1):
        features = [y]
        for index in range(1, depth + 1):
            name = f"features.denseblock{block}.denselayer{index}"
            y = _norm_relu_conv(torch.cat(features, 1), name, "1", bottleneck * growth, 1)
            features.append(_norm_relu_conv(y, name, "2", growth, 3))
        y = torch.cat(features, 1)
        if block < 4:
            y = _norm_relu_conv(y, f"features.transition{block}", "", y.shape[1] // 2, 1)
            y = L.AvgPool2d(2, stride=2)(y)
    y = L.ReLU(inplace=True)(L.BatchNorm2d(name="features.norm5")(y))
    y = L.Flatten()(L.AdaptiveAvgPool2d(1)(y))
    return Functional(inputs=x, outputs=L.Linear(classes, name="classifier")(y))


# -- MobileNetV2 ----------------------------------------------------------------------

_MOBILENET_V2 = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2), (6, 320, 1, 1))  # fmt: skip
"""(expansion, channels, blocks, first stride) of each MobileNetV2 stage."""


def _conv_bn_relu6(
    x: Placeholder, name: str, out: int, kernel: int, stride: int = 1, groups: int = 1
) -> Placeholder:
    y = L.Conv2d(
        out, kernel, stride=stride, padding=kernel // 2, groups=groups, bias=False, name=f"{name}.0"
    )(x)
    return L.ReLU6(inplace=True)(L.BatchNorm2d(name=f"{name}.1")(y))


def _inverted_residual(x: Placeholder, name: str, out: int, stride: int, expansion: int) -> Placeholder:
    hidden = x.shape[1] * expansion  # type: ignore[operator]
    y, part = x, 0
    if expansion != 1:
        y, part = _conv_bn_relu6(y, f"{name}.conv.0", hidden, 1), 1
    y = _conv_bn_relu6(y, f"{name}.conv.{part}", hidden, 3, stride, groups=hidden)
    y = L.BatchNorm2d(name=f"{name}.conv.{part + 2}")(
        L.Conv2d(out, 1, bias=False, name=f"{name}.conv.{part + 1}")(y)
    )
    return x + y if stride == 1 and x.shape[1] == out else y


def mobilenet_v2(classes: int = 1000, batch: int | None = None) -> Functional:
    x = _image(batch)
    y = _conv_bn_relu6(x, "features.0", 32, 3, stride=2)
    index = 1
    for expansion, channels, blocks, stride in _MOBILENET_V2:
        for block in range(blocks):
            y = _inverted_residual(y, f"features.{index}", channels, stride if block == 0 else 1, expansion)
            index += 1
    y = _conv_bn_relu6(y, f"features.{index}", 1280, 1)
    y = L.Dropout(0.2, name="classifier.0")(L.Flatten()(L.AdaptiveAvgPool2d(1)(y)))
    return Functional(inputs=x, outputs=L.Linear(classes, name="classifier.1")(y))


# -- MobileNetV3-Small ----------------------------------------------------------------

_MOBILENET_V3_SMALL = (
    (3, 16, 16, True, False, 2),
    (3, 72, 24, False, False, 2),
    (3, 88, 24, False, False, 1),
    (5, 96, 40, True, True, 2),
    (5, 240, 40, True, True, 1),
    (5, 240, 40, True, True, 1),
    (5, 120, 48, True, True, 1),
    (5, 144, 48, True, True, 1),
    (5, 288, 96, True, True, 2),
    (5, 576, 96, True, True, 1),
    (5, 576, 96, True, True, 1),
)
"""(kernel, expanded channels, output channels, squeeze-excitation, hard-swish
(else ReLU), stride) of each MobileNetV3-Small block: the paper's Table 2."""


def _multiple_of_8(value: float) -> int:
    """``value`` rounded to the nearest multiple of 8, at least 8 and never 10%
    below ``value``: MobileNet's rule for channel counts."""
    rounded = max(8, int(value + 4) // 8 * 8)
    return rounded + 8 if rounded < 0.9 * value else rounded


def _conv_bn_activation(
    x: Placeholder,
    name: str,
    out: int,
    kernel: int,
    stride: int = 1,
    groups: int = 1,
    activation: type[L.Hardswish] | type[L.ReLU] | None = L.Hardswish,
) -> Placeholder:
    """A convolution, a batch norm (MobileNetV3's eps and momentum) and ``activation``."""
    y = L.Conv2d(
        out, kernel, stride=stride, padding=(kernel - 1) // 2, groups=groups, bias=False, name=f"{name}.0"
    )(x)
    y = L.BatchNorm2d(eps=0.001, momentum=0.01, name=f"{name}.1")(y)
    return y if activation is None else activation(inplace=True)(y)


def _squeeze_excitation(x: Placeholder, name: str) -> Placeholder:
    """``x`` scaled per channel by a hard-sigmoid gate computed from its spatial mean."""
    channels = x.shape[1]
    squeezed = L.Conv2d(_multiple_of_8(channels // 4), 1, name=f"{name}.fc1")(L.AdaptiveAvgPool2d(1)(x))
    scale = L.Conv2d(channels, 1, name=f"{name}.fc2")(L.ReLU(inplace=True)(squeezed))
    return L.Hardsigmoid(inplace=True)(scale) * x


def _inverted_residual_v3(
    x: Placeholder,
    name: str,
    kernel: int,
    hidden: int,
    out: int,
    squeeze: bool,
    hard_swish: bool,
    stride: int,
) -> Placeholder:
    """MobileNetV3's block: expand (unless ``hidden`` is the input's width), a
    depthwise convolution, squeeze-excitation, project; a residual when the shape stays."""
    activation = L.Hardswish if hard_swish else L.ReLU
    y, part = x, 0
    if hidden != x.shape[1]:
        y, part = _conv_bn_activation(y, f"{name}.block.0", hidden, 1, activation=activation), 1
    y = _conv_bn_activation(y, f"{name}.block.{part}", hidden, kernel, stride, hidden, activation)
    if squeeze:
        y, part = _squeeze_excitation(y, f"{name}.block.{part + 1}"), part + 1
    y = _conv_bn_activation(y, f"{name}.block.{part + 1}", out, 1, activation=None)
    return x + y if stride == 1 and x.shape[1] == out else y


def mobilenet_v3_small(classes: int = 1000, batch: int | None = None) -> Functional:
    """MobileNetV3-Small: hard-swish, squeeze-excitation with a hard-sigmoid
    gate, the eleven inverted-residual blocks of the paper's Table 2."""
    x = _image(batch)
    y = _conv_bn_activation(x, "features.0", 16, 3, stride=2)
    for index, block in enumerate(_MOBILENET_V3_SMALL, start=1):
        y = _inverted_residual_v3(y, f"features.{index}", *block)
    y = _conv_bn_activation(y, f"features.{len(_MOBILENET_V3_SMALL) + 1}", 576, 1)
    y = L.Flatten()(L.AdaptiveAvgPool2d(1)(y))
    y = L.Dropout(0.2, name="classifier.2")(L.Hardswish(inplace=True)(L.Linear(1024, name="classifier.0")(y)))
    return Functional(inputs=x, outputs=L.Linear(classes, name="classifier.3")(y))


# -- Vision Transformer ---------------------------------------------------------------


def vision_transformer(
    image: int = 224,
    patch: int = 16,
    layers: int = 12,
    heads: int = 12,
    hidden: int = 768,
    mlp: int = 3072,
    classes: int = 1000,
    batch: int | None = None,
) -> Functional:
    """A Vision Transformer: patches, a learned class token and position
    embedding (``L.Parameter``: parameters of the model itself, ``class_token``
    and ``encoder.pos_embedding``, as in torchvision), pre-norm encoder blocks,
    a linear head."""
    x = Placeholder((batch, 3, image, image), name="image")
    tokens = L.Conv2d(hidden, patch, stride=patch, name="conv_proj")(x).flatten(2).transpose(1, 2)
    tokens = torch.cat([L.Parameter((1, 1, hidden), name="class_token")(tokens), tokens], dim=1)
    position = L.Parameter((1, tokens.shape[1], hidden), init="normal", name="encoder.pos_embedding")
    y = position(tokens) + tokens
    for index in range(layers):
        name = f"encoder.layers.encoder_layer_{index}"
        normed = L.LayerNorm(eps=1e-6, name=f"{name}.ln_1")(y)
        attended, _ = L.MultiheadAttention(heads, batch_first=True, name=f"{name}.self_attention")(
            normed, normed, normed, need_weights=False
        )
        y = y + attended
        h = L.GELU()(L.Linear(mlp, name=f"{name}.mlp.0")(L.LayerNorm(eps=1e-6, name=f"{name}.ln_2")(y)))
        y = y + L.Linear(hidden, name=f"{name}.mlp.3")(h)
    y = L.LayerNorm(eps=1e-6, name="encoder.ln")(y)
    return Functional(inputs=x, outputs=L.Linear(classes, name="heads.head")(y[:, 0]))


def vit_b_16(classes: int = 1000, batch: int | None = None) -> Functional:
    """ViT-B/16: 12 blocks of width 768 on 16x16 patches of a 224x224 image."""
    return vision_transformer(classes=classes, batch=batch)


# -- the same models by hand, as torchvision writes them --------------------------------


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(
        self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None
    ) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(
        self, inplanes: int, planes: int, stride: int = 1, downsample: nn.Module | None = None
    ) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * 4, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * 4)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(
        self, block: type[BasicBlock | Bottleneck], depths: tuple[int, ...], classes: int = 1000
    ) -> None:
        super().__init__()
        self.inplanes = 64
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        self.layer1 = self._make_layer(block, 64, depths[0])
        self.layer2 = self._make_layer(block, 128, depths[1], 2)
        self.layer3 = self._make_layer(block, 256, depths[2], 2)
        self.layer4 = self._make_layer(block, 512, depths[3], 2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512 * block.expansion, classes)
        for module in self.modules():  # torchvision's initialisation
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.constant_(module.weight, 1)
                nn.init.constant_(module.bias, 0)

    def _make_layer(
        self, block: type[BasicBlock | Bottleneck], planes: int, depth: int, stride: int = 1
    ) -> nn.Sequential:
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * block.expansion, 1, stride, bias=False),
                nn.BatchNorm2d(planes * block.expansion),
            )
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes) for _ in range(1, depth)]
        return nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def native_resnet18(classes: int = 1000) -> ResNet:
    return ResNet(BasicBlock, (2, 2, 2, 2), classes)


def native_resnet50(classes: int = 1000) -> ResNet:
    return ResNet(Bottleneck, (3, 4, 6, 3), classes)


class _DenseLayer(nn.Module):
    def __init__(self, inputs: int, growth: int, bottleneck: int) -> None:
        super().__init__()
        self.norm1 = nn.BatchNorm2d(inputs)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(inputs, bottleneck * growth, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(bottleneck * growth)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bottleneck * growth, growth, 3, padding=1, bias=False)

    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        out = self.conv1(self.relu1(self.norm1(torch.cat(features, 1))))
        return self.conv2(self.relu2(self.norm2(out)))


class _DenseBlock(nn.ModuleDict):
    def __init__(self, depth: int, inputs: int, growth: int, bottleneck: int) -> None:
        super().__init__()
        for index in range(depth):
            self.add_module(
                f"denselayer{index + 1}", _DenseLayer(inputs + index * growth, growth, bottleneck)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = [x]
        for layer in self.values():
            features.append(layer(features))
        return torch.cat(features, 1)


class _Transition(nn.Sequential):
    def __init__(self, inputs: int, outputs: int) -> None:
        super().__init__()
        self.norm = nn.BatchNorm2d(inputs)
        self.relu = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(inputs, outputs, 1, bias=False)
        self.pool = nn.AvgPool2d(2, 2)


class DenseNet(nn.Module):
    def __init__(
        self,
        classes: int = 1000,
        growth: int = 32,
        bottleneck: int = 4,
        depths: tuple[int, ...] = (6, 12, 24, 16),
    ) -> None:
        super().__init__()
        self.features = nn.Sequential(OrderedDict([
            ("conv0", nn.Conv2d(3, 64, 7, 2, 3, bias=False)), ("norm0", nn.BatchNorm2d(64)),
            ("relu0", nn.ReLU(inplace=True)), ("pool0", nn.MaxPool2d(3, 2, 1)),
        ]))  # fmt: skip
        channels = 64
        for index, depth in enumerate(depths, start=1):
            self.features.add_module(f"denseblock{index}", _DenseBlock(depth, channels, growth, bottleneck))
            channels += depth * growth
            if index < len(depths):
                self.features.add_module(f"transition{index}", _Transition(channels, channels // 2))
                channels //= 2
        self.features.add_module("norm5", nn.BatchNorm2d(channels))
        self.classifier = nn.Linear(channels, classes)
        for module in self.modules():  # torchvision's initialisation
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight)
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.constant_(module.weight, 1)
                nn.init.constant_(module.bias, 0)
            elif isinstance(module, nn.Linear):
                nn.init.constant_(module.bias, 0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.features(x), inplace=True)
        return self.classifier(torch.flatten(F.adaptive_avg_pool2d(out, (1, 1)), 1))


def native_densenet121(classes: int = 1000) -> DenseNet:
    return DenseNet(classes)


class ConvBNReLU6(nn.Sequential):
    def __init__(self, inputs: int, outputs: int, kernel: int = 3, stride: int = 1, groups: int = 1) -> None:
        super().__init__(
            nn.Conv2d(inputs, outputs, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
            nn.BatchNorm2d(outputs),
            nn.ReLU6(inplace=True),
        )


class InvertedResidual(nn.Module):
    def __init__(self, inputs: int, outputs: int, stride: int, expansion: int) -> None:
        super().__init__()
        hidden = inputs * expansion
        self.use_residual = stride == 1 and inputs == outputs
        layers: list[nn.Module] = [ConvBNReLU6(inputs, hidden, 1)] if expansion != 1 else []
        layers += [
            ConvBNReLU6(hidden, hidden, stride=stride, groups=hidden),
            nn.Conv2d(hidden, outputs, 1, bias=False),
            nn.BatchNorm2d(outputs),
        ]
        self.conv = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv(x) if self.use_residual else self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        features: list[nn.Module] = [ConvBNReLU6(3, 32, stride=2)]
        channels = 32
        for expansion, outputs, blocks, stride in _MOBILENET_V2:
            for block in range(blocks):
                features.append(InvertedResidual(channels, outputs, stride if block == 0 else 1, expansion))
                channels = outputs
        features.append(ConvBNReLU6(channels, 1280, 1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(1280, classes))
        for module in self.modules():  # torchvision's initialisation
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out")
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, 0, 0.01)
                nn.init.zeros_(module.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(torch.flatten(x, 1))


def native_mobilenet_v2(classes: int = 1000) -> MobileNetV2:
    return MobileNetV2(classes)


class ConvBNActivation(nn.Sequential):
    def __init__(
        self,
        inputs: int,
        outputs: int,
        kernel: int = 3,
        stride: int = 1,
        groups: int = 1,
        activation: type[nn.Module] | None = nn.Hardswish,
    ) -> None:
        layers: list[nn.Module] = [
            nn.Conv2d(inputs, outputs, kernel, stride, (kernel - 1) // 2, groups=groups, bias=False),
            nn.BatchNorm2d(outputs, eps=0.001, momentum=0.01),
        ]
        if activation is not None:
            layers.append(activation(inplace=True))
        super().__init__(*layers)


class SqueezeExcitation(nn.Module):
    def __init__(self, channels: int, squeeze: int) -> None:
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, channels, 1)
        self.activation = nn.ReLU(inplace=True)
        self.scale_activation = nn.Hardsigmoid(inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scale = self.activation(self.fc1(self.avgpool(x)))
        return self.scale_activation(self.fc2(scale)) * x


class InvertedResidualV3(nn.Module):
    def __init__(
        self,
        inputs: int,
        kernel: int,
        hidden: int,
        outputs: int,
        squeeze: bool,
        hard_swish: bool,
        stride: int,
    ) -> None:
        super().__init__()
        activation = nn.Hardswish if hard_swish else nn.ReLU
        self.use_residual = stride == 1 and inputs == outputs
        layers: list[nn.Module] = []
        if hidden != inputs:
            layers.append(ConvBNActivation(inputs, hidden, 1, activation=activation))
        layers.append(ConvBNActivation(hidden, hidden, kernel, stride, hidden, activation))
        if squeeze:
            layers.append(SqueezeExcitation(hidden, _multiple_of_8(hidden // 4)))
        layers.append(ConvBNActivation(hidden, outputs, 1, activation=None))
        self.block = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.block(x) if self.use_residual else self.block(x)


class MobileNetV3(nn.Module):
    def __init__(self, classes: int = 1000) -> None:
        super().__init__()
        features: list[nn.Module] = [ConvBNActivation(3, 16, stride=2)]
        channels = 16
        for kernel, hidden, outputs, squeeze, hard_swish, stride in _MOBILENET_V3_SMALL:
            features.append(
                InvertedResidualV3(channels, kernel, hidden, outputs, squeeze, hard_swish, stride)
            )
            channels = outputs
        features.append(ConvBNActivation(channels, 576, 1))
        self.features = nn.Sequential(*features)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(
            nn.Linear(576, 1024), nn.Hardswish(inplace=True), nn.Dropout(0.2), nn.Linear(1024, classes)
        )
        for module in self.modules():  # torchvision's initialisation
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, mode="fan_out")
                if module.bias is not None:
                    nn.init.zeros_(module.bias)
            elif isinstance(module, nn.BatchNorm2d):
                nn.init.ones_(module.weight)
                nn.init.zeros_(module.bias)
            elif isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, 0, 0.01)
                nn.init.zeros_(module.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.flatten(self.avgpool(self.features(x)), 1)
        return self.classifier(x)


def native_mobilenet_v3_small(classes: int = 1000) -> MobileNetV3:
    return MobileNetV3(classes)


class EncoderBlock(nn.Module):
    def __init__(self, heads: int, hidden: int, mlp: int) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden, eps=1e-6)
        self.self_attention = nn.MultiheadAttention(hidden, heads, batch_first=True)
        self.dropout = nn.Dropout(0.0)
        self.ln_2 = nn.LayerNorm(hidden, eps=1e-6)
        self.mlp = nn.Sequential(
            nn.Linear(hidden, mlp), nn.GELU(), nn.Dropout(0.0), nn.Linear(mlp, hidden), nn.Dropout(0.0)
        )
        for module in self.mlp:  # torchvision's initialisation
            if isinstance(module, nn.Linear):
                nn.init.xavier_uniform_(module.weight)
                nn.init.normal_(module.bias, std=1e-6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.ln_1(x)
        y, _ = self.self_attention(y, y, y, need_weights=False)
        x = x + self.dropout(y)
        return x + self.mlp(self.ln_2(x))


class Encoder(nn.Module):
    def __init__(self, length: int, layers: int, heads: int, hidden: int, mlp: int) -> None:
        super().__init__()
        self.pos_embedding = nn.Parameter(torch.empty(1, length, hidden).normal_(std=0.02))
        self.dropout = nn.Dropout(0.0)
        self.layers = nn.Sequential(
            OrderedDict(
                (f"encoder_layer_{index}", EncoderBlock(heads, hidden, mlp)) for index in range(layers)
            )
        )
        self.ln = nn.LayerNorm(hidden, eps=1e-6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(self.layers(self.dropout(x + self.pos_embedding)))


class VisionTransformer(nn.Module):
    def __init__(
        self,
        image: int = 224,
        patch: int = 16,
        layers: int = 12,
        heads: int = 12,
        hidden: int = 768,
        mlp: int = 3072,
        classes: int = 1000,
    ) -> None:
        super().__init__()
        self.conv_proj = nn.Conv2d(3, hidden, patch, stride=patch)
        self.class_token = nn.Parameter(torch.zeros(1, 1, hidden))
        self.encoder = Encoder((image // patch) ** 2 + 1, layers, heads, hidden, mlp)
        head = nn.Linear(hidden, classes)
        self.heads = nn.Sequential(OrderedDict([("head", head)]))
        # torchvision's initialisation
        nn.init.trunc_normal_(self.conv_proj.weight, std=(3 * patch * patch) ** -0.5)
        nn.init.zeros_(self.conv_proj.bias)  # type: ignore[arg-type]
        nn.init.zeros_(head.weight)
        nn.init.zeros_(head.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv_proj(x).flatten(2).permute(0, 2, 1)  # (N, patches, hidden)
        x = torch.cat([self.class_token.expand(x.shape[0], -1, -1), x], dim=1)
        return self.heads(self.encoder(x)[:, 0])


def native_vit_b_16(classes: int = 1000) -> VisionTransformer:
    return VisionTransformer(classes=classes)


MODELS: dict[str, tuple[Callable[..., Functional], Callable[[], nn.Module], int]] = {
    "resnet18": (resnet18, native_resnet18, 11_689_512),
    "resnet50": (resnet50, native_resnet50, 25_557_032),
    "densenet121": (densenet121, native_densenet121, 7_978_856),
    "mobilenet_v2": (mobilenet_v2, native_mobilenet_v2, 3_504_872),
    "mobilenet_v3_small": (mobilenet_v3_small, native_mobilenet_v3_small, 2_542_856),
    "vit_b_16": (vit_b_16, native_vit_b_16, 86_567_656),
}
"""Name: (TorchX definition, the same model by hand, torchvision's parameter count).
The convolutional models take any image size; ViT-B/16 takes 224x224 only."""


def parameter_count(model: nn.Module) -> int:
    return sum(parameter.numel() for parameter in model.parameters())


if __name__ == "__main__":
    for name, (make, native, expected) in MODELS.items():
        mine, theirs = parameter_count(make()), parameter_count(native())
        print(f"{name:<18} TorchX {mine:>11,}  by hand {theirs:>11,}  torchvision {expected:>11,}")
