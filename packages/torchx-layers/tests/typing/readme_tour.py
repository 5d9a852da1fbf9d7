"""Every Python example of the README, as a ``mypy --strict`` user writes it.

One function per README block, its code as the README has it, and the calls
its prose shows beside it. Only what strict mode asks of the user's own code is
added: annotations on the functions and classes the user writes; the names an
earlier block made come in as arguments. ``assert_type`` pins what the façade returns (``L.Placeholder(...)``
is a ``Placeholder``, ``x * 2 + x`` too). Checked by ``tox -e typecheck``;
never run.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from typing import ClassVar, assert_type

import torch
import torch.nn.functional as F
from torch import nn

import torchx
import torchx.functional
import torchx.layers as L
import torchx.nn as nnx
from torchx.core import Layer, model_graph
from torchx.device import destroy_distributed
from torchx.functional import Functional, Placeholder, SymbolicShape
from torchx.plugin import FromInput, FromState, Graph, LayerRegistry, LeafLayer, PositiveInt, hookimpl
from torchx.rnn import LSTM, GetRNNState, TimeDistributed


def headline() -> L.Sequential:
    model = L.Sequential(
        L.Conv2d(20, kernel_size=5, stride=2, padding=1),
        L.ReLU(),
        L.Conv2d(30, kernel_size=7),  # in_channels=20, read off the input
        L.BatchNorm2d(),  # num_features=30
        L.ReLU(),
        L.Conv2d(40, kernel_size=3),
        L.BatchNorm2d(),
        L.ReLU(),
        L.Flatten(),
        L.Linear(80),  # in_features=1960, computed for you
        L.ReLU(),
        L.Linear(10),
    )
    y = model(torch.randn(8, 3, 32, 32))
    print(y.size())  # torch.Size([8, 10])
    return model


def one_layer() -> None:
    layer = L.Linear(20)  # out_features only
    assert_type(layer, L.Linear)  # what an editor shows, and checks the call against
    print(layer)  # Linear(out_features=20, not built)
    optimizer = torch.optim.Adam(layer.parameters())  # weight and bias, not yet initialised
    y = layer(torch.zeros(16, 10))  # built here: in_features=10
    print(y.size())  # torch.Size([16, 20])
    print(layer)  # Linear(in_features=10, out_features=20, bias=True)
    # mypy cannot know that a layer's class becomes torch's on its first input
    assert type(layer) is torch.nn.Linear and torchx.native_module(layer) is layer  # type: ignore[comparison-overlap]
    print(optimizer)


def arguments() -> None:
    # what is new is positional, everything else keyword-only; ported numbers become checks
    print(L.Conv2d(20, 5), L.LSTM(64), L.Conv2d(20, kernel_size=5, stride=2, padding=1))
    print(L.BatchNorm2d(), L.Conv2d(8, 3), L.Linear(20, in_features=10))
    print(L.LeakyReLU(0.2), L.MaxPool2d(3, 2))  # layers that infer nothing keep torch's signature
    model = L.Sequential(OrderedDict([("fc", L.Linear(8)), ("act", nn.ReLU())]))
    model.append(L.Linear(2))
    model.insert(0, L.Flatten())
    first: nn.Module = model[0]
    rest = model[1:]  # an L.Sequential, typed as torch types nn.Sequential's slices (Module)
    print(first, rest, L.Sequential(model, L.Sequential(L.Dropout(0.5))))


def build_first(model: L.Sequential) -> L.Sequential:
    model = torchx.build(model, (None, 3, 32, 32))  # None: a dynamic (batch) dim
    optimizer = torch.optim.Adam(model.parameters())
    torchx.infer_shapes(model, (None, 3, 32, 32))  # (None, 10)
    meta = torchx.build(L.Sequential(L.Linear(10**5)), (None, 10**5), device="meta")
    print(optimizer, meta)
    return model


def specs(model: Layer, weights: dict[str, torch.Tensor]) -> None:
    spec = model.to_spec()  # {"format_version": 1, "type": "Sequential", "layers": [...]}
    again = L.Layer.from_spec(spec)
    torchx.save_spec(model, "model.yaml")
    model = torchx.load_spec("model.yaml")
    model.load_state_dict(weights)  # loading a state dict builds too
    print(again)


def graphs() -> Functional:
    xp_input = L.Placeholder((8, 3, 32, 32))  # dim 0 is the batch: any size runs
    xp = L.Conv2d(10, kernel_size=5, stride=2)(xp_input)
    branch1 = L.Conv2d(30, kernel_size=7, padding=2)(xp)
    branch2 = L.Conv2d(30, kernel_size=5, padding=1)(xp)
    xp = branch1 * branch2
    xp = xp.flatten()  # keeps the batch dim: (8, 4320)
    xp = L.Linear(80)(xp)
    xp = L.Linear(10)(xp)
    model = L.Functional(inputs=xp_input, outputs=xp)
    print(model(torch.randn(8, 3, 32, 32)).size())  # torch.Size([8, 10])
    print(model.code)  # the generated forward
    print(model.summary())  # shapes and parameter counts
    assert_type(xp_input, Placeholder)
    assert_type(model, Functional)
    return model


def graph_details(inner: Functional) -> None:
    # operators, indexing and tensor methods on placeholders are recorded, and typed
    x = L.Placeholder((None, 16), name="x")
    assert_type(x * 2 + x, Placeholder)
    assert_type(x[:, 0], Placeholder)
    assert_type(1 - x / 2, Placeholder)
    assert_type(-x, Placeholder)
    assert_type(x @ L.Placeholder((16, 4)), Placeholder)
    assert_type(x > 0, Placeholder)
    assert_type(x == 0, Placeholder)
    assert_type(x.shape, SymbolicShape)
    flexible = x.view(x.shape[0], -1)  # keeps the batch flexible
    centred = x - x.mean(0)
    hidden = L.Linear(16)(x)  # a module call is typed Any (as torch types it), so torch functions take it
    relu = F.relu(hidden, inplace=True)  # records the out-of-place call
    a, b = L.Placeholder((None, 8), name="a"), L.Placeholder((None, 8), name="b")
    # torch's functions are typed for tensors, and a Placeholder is not one: mypy and pyright refuse it there
    joined = torch.cat([a, b], dim=1)  # type: ignore[list-item]  # pyright: ignore[reportArgumentType]
    conv = L.Conv2d(64, 3, name="layer1.0.conv1")  # the submodule of that name
    token = L.Parameter((1, 1, 768))(L.Placeholder((None, 4, 768)))  # a learned class token
    block = L.Sequential(L.Linear(16), L.ReLU())
    checkpointed = L.Checkpoint(block)(x)
    plain = torchx.functional.accept_placeholders(nn.Linear(16, 4))
    multi = L.Functional(
        inputs={"a": a, "b": b}, outputs={"sum": L.Add()([a, b]), "both": L.Concat()([a, b])}
    )
    nested = L.Sequential(inner, L.Linear(2))
    graph = L.Model(inputs=[x], outputs=[flexible, centred, relu, joined, checkpointed, plain(x)])
    with torchx.device_scope("meta"):  # a graph defined without allocating its weights
        shadow = L.Functional(inputs=x, outputs=L.Linear(10**6)(x))
    print(conv, token, multi(a=torch.zeros(2, 8), b=torch.zeros(2, 8)), nested, graph.to_spec(), shadow)
    assert_type(L.Input((None, 3)), Placeholder)


def sequences() -> None:
    frames = torch.randn(4, 16, 3, 16, 16)  # (batch, time, channels, H, W)
    model = L.Sequential(
        L.TimeDistributed(L.Conv2d(8, 3), L.ReLU(), L.Flatten(), L.Linear(32)),
        L.LSTM(64, bidirectional=True, return_sequences=False),  # input_size=32 inferred
        L.Linear(10),
    )
    print(model(frames).shape)  # torch.Size([4, 10])
    assert_type(L.LSTM(64), LSTM)
    assert_type(L.TimeDistributed(L.Linear(8)), TimeDistributed)
    assert_type(L.GetRNNState("c"), GetRNNState)


def sequence_details(x: torch.Tensor, hx: torch.Tensor, lengths: torch.Tensor) -> None:
    rnn = L.GRU(32, return_state=True, batch_first=False)
    output, state = rnn(x, hx)
    print(output, state, L.LSTM(16)(x, lengths=lengths), L.TimeDistributed(L.Linear(4))(x, lengths=lengths))
    chain = L.Sequential(L.LSTM(16, return_state=True), L.GetRNNState("concat"))
    heads = L.Sequential(L.RNN(8), L.GetRNNOutput(), L.Linear(2))
    cells = [L.RNNCell(8), L.LSTMCell(8), L.GRUCell(8)]
    print(chain, heads, cells)


class MyModel(nnx.Module):  # use it exactly like nn.Module
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(10, 20)
        self.fc2 = nn.Linear(20, 30)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.fc2(self.fc1(x))  # torch types a module call as Any
        return out


def devices() -> None:
    import torchx as tx

    model = MyModel()  # on the CPU
    with tx.device_scope(3):  # GPU 3; also "cuda:3", "gpu:3", torch.device("cuda", 3)
        x = torch.zeros((4, 10))  # created on GPU 3
        y = model(x)  # the model moves itself to GPU 3, once
    for device_id in (-1, "cpu", "cuda:3", "gpu:3", "cuda", torch.device("cuda", 3), [0, 3, 5], "cuda:all"):
        with tx.device_scope(device_id, fallback="cpu"):
            print(tx.current_scope())
    with tx.device_scope(0, dtype=torch.bfloat16) as scope:
        print(scope.device, y, torch.empty(0).new_ones(3))


def helpers() -> None:
    model = torchx.build(L.Sequential(L.Linear(64), L.ReLU(), L.Linear(2)), (None, 8))
    model(torch.randn(16, 8)).square().mean().backward()
    target = model.clone().freeze()  # a deep copy that takes no gradients
    target.soft_update(model, tau=0.005)  # target = 0.995 * target + 0.005 * model, one fused op
    model.clip_grad_norm(1.0)  # whole-model norm; returns it
    model.clip_grad_value(0.5)
    print(model.num_parameters(trainable_only=True), model.device, model.dtype)  # 706 cpu torch.float32
    model.save("model.pt")  # state dict, plus the spec for TorchX layers
    model.load("model.pt")  # torch.load(weights_only=True); checks everything first
    nnx.freeze(model[0])  # a built leaf layer is its plain torch module


def weights(model: nn.Module, source: nn.Module) -> None:
    model.load_state_dict(torchx.load_model("model.safetensors").state_dict())
    report = torchx.load_weights(model, source)
    print(report)
    parallel = torchx.DataParallel(model)
    distributed = torchx.DistributedDataParallel(model, inputs=[(None, 8)])
    print(parallel, distributed)


def ddp(batches: Iterable[tuple[torch.Tensor, torch.Tensor]]) -> None:
    with torchx.device_scope("ddp"):  # joins the torchrun job; tensors on this process's device
        model = torchx.build(L.Sequential(L.Linear(64), L.ReLU(), L.Linear(1)), (None, 8))
        optimizer = torch.optim.Adam(model.parameters())
        for x, y in batches:
            loss = (model(x) - y).pow(2).mean()  # model runs through DistributedDataParallel
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()  # pyright: ignore[reportUnknownMemberType]  # torch's Adam.step is unannotated
    destroy_distributed()


def command_line_in_python(model: nn.Module, shape: tuple[int | None, ...]) -> None:
    print(torchx.summarize(model, shape))
    graph: Graph = model_graph(model, shape)
    graph.render("model.svg")


class LearnedSwish(nn.Module):  # a plain torch module
    def __init__(
        self, features: int, device: torch.device | None = None, dtype: torch.dtype | None = None
    ) -> None:
        super().__init__()
        self.beta = nn.Parameter(torch.ones(features, device=device, dtype=dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(self.beta * x)


class Swish(LeafLayer):  # its TorchX layer
    native_class = LearnedSwish
    inferred_arguments: ClassVar = {"features": FromInput(dim=-1, state=FromState("beta", 0))}

    def __init__(self, *, features: PositiveInt | None = None) -> None:
        super().__init__(features=features)


@hookimpl
def torchx_register_layers(registry: LayerRegistry) -> None:
    registry.register(Swish)


def third_party() -> None:
    # then ``L.Swish()`` works; mypy knows the façade's own names only (L.Swish is an
    # ``object`` to it), so typed code imports a plugin's class from its package
    assert_type(L.Swish, object)
    print(Swish()(torch.zeros(2, 4)), {"type": "Swish"})
