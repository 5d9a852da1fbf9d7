"""Typical examples of the docs/ pages, as a user of ``mypy --strict`` or of
pyright (basic or strict: what VS Code's Pylance runs) writes them.

One function per example, its code as the page has it; only what strict mode
asks of the user's own code is added (annotations on the user's functions and
classes; a check that an Optional result is there), and ``assert_type`` pins
what an editor shows for TorchX's calls: ``L.Linear(20)`` is a ``Linear``, a
spec reads back as a ``Layer``. Where a page's code cannot be typed as it is,
its function says why. Checked by ``tox -e typecheck``; never run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, assert_type

import optuna
import torch
import torch.nn.functional as F
from torch import nn

import torchx
import torchx.layers as L
import torchx.nn as nnx
import torchx.tune
from torchx.core import Layer, MigrationRegistry, from_spec, rename_argument
from torchx.device import parse
from torchx.functional import Functional, Placeholder
from torchx.plugin import Container, FromInput, FromState, LeafLayer, PositiveInt, hookimpl, is_symbolic
from torchx.tune import Constraints


class Dense(LeafLayer):  # torchx-core.md: a leaf layer, declared as a plugin would
    native_class = nn.Linear
    inferred_arguments: ClassVar = {"in_features": FromInput(dim=-1, state=FromState("weight", 1))}

    def __init__(self, out_features: PositiveInt, *, in_features: PositiveInt | None = None) -> None:
        super().__init__(out_features=out_features, in_features=in_features)


class Residual(Container):  # torchx-core.md: a container
    def __init__(self, *layers: nn.Module, name: str | None = None) -> None:
        super().__init__(name=name)
        self.body = nn.Sequential(*layers)

    def forward(self, x: Any) -> Any:
        if type(x) is not torch.Tensor and is_symbolic(x):
            return x.__torchx_call__(self, (x,), {})  # inside a Functional graph: one node
        return x + self.body(x)

    def spec_layers(self) -> list[nn.Module]:
        return list(self.body)


def core() -> None:
    layer = Dense(4)
    assert_type(layer, Dense)
    print([name for name, _ in layer.named_parameters()])  # ['weight', 'bias'], pending
    layer = torchx.build(layer, (None, 3))  # built without a forward
    print(torchx.infer_shapes(Dense(4), (None, 3)))  # (None, 4)
    again = Dense(4)
    again.load_state_dict(layer.state_dict())  # builds from the shapes: in_features=3
    target = nnx.freeze(nnx.clone(layer))
    nnx.soft_update(target, layer, tau=0.01)
    block = Residual(Dense(3), nn.ReLU())
    block(torch.zeros(2, 3))
    print(block.is_built, type(block.body[0]).__name__)  # True Linear


def layers() -> None:
    model = L.Sequential(L.Conv2d(16, 3, padding=1), L.BatchNorm2d(), L.ReLU(), L.Flatten(), L.Linear(10))
    assert_type(L.Conv2d(16, 3, padding=1), L.Conv2d)
    assert_type(L.Linear(10), L.Linear)
    print(model(torch.zeros(2, 3, 8, 8)).shape)  # torch.Size([2, 10])
    spec = model.to_spec()  # the arguments you wrote, as data
    assert L.Layer.from_spec(spec).to_spec() == spec
    x = L.Placeholder((None, 96, 56, 56))
    branch = L.Conv2d(96, 7, padding=3, groups=96)(x)
    branch = L.LayerNorm2d()(branch)
    branch = branch * L.Parameter((96, 1, 1), init="constant", value=1e-6, name="gamma")(branch)
    block = L.Functional(x, x + L.DropPath(0.1)(branch))
    print(block.to_spec()["modules"]["drop_path"])  # {'type': 'DropPath', 'args': {'p': 0.1}}


def rnn() -> None:
    model = L.Sequential(
        L.TimeDistributed(L.Linear(32), L.ReLU()), L.GRU(64, return_sequences=False), L.Linear(5)
    )
    x = torch.randn(4, 12, 10)  # (batch, time, features)
    print(model(x).shape)  # torch.Size([4, 5])
    lengths = torch.tensor([12, 7, 3, 12])
    lstm = L.LSTM(8)
    print(lstm(x, lengths=lengths)[2, 3:].abs().sum().item())  # 0.0: padded steps are zeros


def device() -> None:
    print(parse(-1), parse("cpu"))  # cpu cpu
    with torchx.device_scope("cpu", dtype=torch.float64):
        print(torch.zeros(2).dtype)  # torch.float64
    try:
        torchx.device_scope("gpu:x")
    except torchx.DeviceError as error:
        print(error)


def functional() -> None:
    image, meta = L.Placeholder((None, 3, 16, 16), name="image"), L.Placeholder((None, 4), name="meta")
    features = L.Flatten()(L.ReLU()(L.Conv2d(8, 3)(image)))
    shared = L.Linear(16)
    joined = torch.cat([shared(L.Linear(16)(features)), shared(L.Linear(16)(meta))], dim=1)
    model = L.Functional(inputs={"image": image, "meta": meta}, outputs={"logits": L.Linear(3)(joined)})
    out = model(image=torch.randn(5, 3, 16, 16), meta=torch.randn(5, 4))
    print(out["logits"].shape, model.code)  # torch.Size([5, 3]), the generated forward


def dynamic_dims() -> None:
    ids = L.Placeholder((None, L.Dim("T", max=64)), dtype=torch.long, name="ids")
    b, t = ids.shape
    positions = L.Parameter((64, 32), name="positions")(ids)  # a table of 64 rows
    h = L.Embedding(100, 32)(ids) + positions[:t]
    q = L.Linear(32)(h).view(b, t, 4, 8).transpose(1, 2)
    y = F.scaled_dot_product_attention(q, q, q, is_causal=True).transpose(1, 2).reshape(b, t, 32)
    gpt = L.Functional(inputs=ids, outputs=y)
    assert_type(gpt, Functional)
    exported = torch.export.export(gpt, (torch.randint(0, 100, (2, 7)),), dynamic_shapes=gpt.dynamic_shapes())
    print(exported.module()(torch.randint(0, 100, (3, 64))).shape)  # torch.Size([3, 64, 32])


def conv_bn(x: Placeholder, name: str, bn: str, out: int, kernel: int, stride: int = 1) -> Placeholder:
    # a layer's call is typed Any (as torch types a module's), so it is declared here
    conv = L.Conv2d(out, kernel, stride=stride, padding=kernel // 2, bias=False, name=name)
    y: Placeholder = L.BatchNorm2d(name=bn)(conv(x))
    return y


def resnet_stem() -> Functional:
    image = L.Placeholder((None, 3, 224, 224), name="image")
    y: Placeholder = L.MaxPool2d(3, stride=2, padding=1)(
        L.ReLU(inplace=True)(conv_bn(image, "conv1", "bn1", 64, 7, 2))
    )
    logits = L.Linear(1000, name="fc")(L.Flatten()(L.AdaptiveAvgPool2d(1)(y)))
    return L.Functional(inputs=image, outputs=logits)


def tune(values: dict[str, Any]) -> None:
    Path("space.yaml").write_text(
        "type: Sequential\nlayers: [{type: Linear, args: {out_features: {$choice: [8, 16]}}}]\n"
    )
    space = torchx.tune.load_space("space.yaml")  # validated and bounded as strictly as a spec
    print(space.size(), [parameter.name for parameter in space.parameters])
    spec = space.sample(optuna.trial.FixedTrial(values))  # a plain spec: no "$" left
    model = torchx.build(torchx.core.from_spec(spec), (None, 1, 8, 8))
    assert_type(model, Layer)
    print(torchx.tune.check(spec, (None, 1, 8, 8), Constraints(max_params=100_000)))
    try:
        torchx.load_spec("space.yaml")
    except torchx.core.SpecError as error:
        print(error)


def tune_search(space: torchx.tune.Space, objective: Callable[[Any, optuna.Trial], float]) -> None:
    # the page passes the same arguments twice as **run, a dict whose values
    # mypy and pyright see only as object: typed code writes them out
    result = torchx.tune.search(
        space,
        objective,
        n_trials=4,
        input=(None, 1, 8, 8),
        storage="sqlite:///study.db",
        study="demo",
        constraints=Constraints(max_params=100_000),
        sampler=optuna.samplers.TPESampler(seed=0),
    )
    best = result.best_trial  # an Optuna FrozenTrial; None while no trial is COMPLETE
    assert best is not None and result.best_spec is not None
    # an index read off user_attrs (Any) picks no overload of list's [], so it is made an int
    trained = result.study.trials[int(best.user_attrs.get("reused_from", best.number))]
    reloaded = torchx.load_model(trained.user_attrs["weights"])  # the spec and weights of the checkpoint
    again = torchx.build(torchx.core.from_spec(result.best_spec), (None, 1, 8, 8))
    assert torchx.to_spec(reloaded) == torchx.to_spec(again)


def weights(vision_spec: dict[str, Any]) -> None:
    spec = vision_spec  # torchx.to_spec(resnet18()), of the page's examples/vision_models.py
    spec["modules"]["fc"]["args"]["out_features"] = 10
    model = torchx.build(from_spec(spec), (None, 1, 224, 224))
    assert_type(model, Layer)
    try:
        torchx.load_weights(model, "resnet18.pth")
    except torchx.WeightMismatchError as error:
        assert not error.report.applied
    report = torchx.load_weights(model, "resnet18.pth", adapt=("stem", "head"))
    assert report.ok and [entry.target for entry in report.fresh] == ["fc.weight", "fc.bias"]
    small = torchx.build(L.Sequential(L.Conv2d(8, 3), L.ReLU(), L.Flatten(), L.Linear(10)), (None, 3, 16, 16))
    assert_type(small, L.Sequential)
    small.save("small.safetensors")
    again = torchx.load_model("small.safetensors")  # no code of yours needed
    image = torch.randn(2, 3, 16, 16)
    assert torch.equal(again(image), small(image))


class Projection(LeafLayer):  # weights.md: a layer whose arguments were renamed
    native_class = nn.Linear
    inferred_arguments: ClassVar = {"in_features": FromInput(dim=-1)}
    spec_version = 3

    def __init__(self, out_features: int, *, bias: bool = True) -> None:
        super().__init__(out_features=out_features, bias=bias)


class ProjectionPlugin:  # registered through the torchx.plugins entry point, as any plugin
    @hookimpl
    def torchx_register_migrations(self, migrations: MigrationRegistry) -> None:
        migrations.add("Projection", 1, rename_argument("units", "width"))
        migrations.add("Projection", 2, rename_argument("width", "out_features"))
