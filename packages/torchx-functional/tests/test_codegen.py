"""The generated forward: values released after their last use, layers in place only where safe."""

from __future__ import annotations

import operator
import re
import weakref
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import torchx.layers as L
from torchx.core import ShapeError, TorchXError
from torchx.functional import Functional, Placeholder, accept_placeholders


class Watch(nn.Module):
    """At each call, counts how many of the tensors it was given before are still alive."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[weakref.ref[torch.Tensor]] = []
        self.alive_at_call: list[int] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.alive_at_call.append(sum(ref() is not None for ref in self.seen))
        self.seen.append(weakref.ref(x))
        return x * 2


def test_intermediates_die_after_their_last_use() -> None:
    watch = accept_placeholders(Watch())
    x = Placeholder((None, 16))
    y = x + 0
    for _ in range(6):
        y = watch(y) + 1
    model = Functional(inputs=x, outputs=y)
    assert isinstance(watch, Watch)
    watch.alive_at_call.clear()
    watch.seen.clear()
    model(torch.randn(2, 16))
    assert watch.alive_at_call == [0] * 6  # every earlier input to watch was freed before this call
    assert "watch = self.watch(add);  del add" in model.code


def test_released_values_read_on_one_line_and_outputs_and_inputs_are_kept() -> None:
    x = Placeholder((None, 4), name="x")
    a = L.Linear(4)(x)
    b = F.relu(a)
    c = a * b
    model = Functional(inputs=x, outputs=[c, b])
    lines = [line.strip() for line in model.code.splitlines()]
    assert "mul = linear * relu;  del linear" in lines  # relu is an output: kept
    assert not any(re.search(r";  del (.*, )?x(,|$)", line) for line in lines)  # an input: the caller's


def test_torch_fx_and_script_give_the_same_results_as_the_released_forward() -> None:
    x = Placeholder((None, 3, 8, 8))
    y = L.Conv2d(4, 3)(x)
    z = L.ReLU(inplace=True)(L.BatchNorm2d()(y)) + y
    model = Functional(inputs=x, outputs=L.Flatten()(z)).eval()
    data = torch.randn(2, 3, 8, 8)
    expected = model(data)
    assert torch.equal(torch.fx.symbolic_trace(model)(data), expected)
    assert torch.equal(torch.jit.script(model)(data), expected)


def reference_relu_residual(h: torch.Tensor) -> torch.Tensor:
    return torch.relu(h) + h


def test_an_in_place_layer_whose_input_is_read_again_runs_on_a_copy() -> None:
    x = Placeholder((None, 4))
    h = L.Linear(4)(x)
    model = Functional(inputs=x, outputs=L.ReLU(inplace=True)(h) + h)
    data = torch.randn(8, 4)
    with torch.no_grad():
        h_value = model.linear(data)
        assert torch.equal(model(data), reference_relu_residual(h_value))
    assert "relu = self.relu(linear.clone())" in model.code


def test_an_in_place_layer_after_conv_and_norm_runs_in_place_as_hand_written() -> None:
    x = Placeholder((None, 3, 8, 8))
    y = L.ReLU(inplace=True)(L.BatchNorm2d()(L.Conv2d(4, 3)(x)))
    model = Functional(inputs=x, outputs=y)
    assert "relu = self.relu(batch_norm2d);  del batch_norm2d" in model.code
    native = nn.Sequential(model.conv2d, model.batch_norm2d, nn.ReLU())
    data = torch.randn(2, 3, 8, 8)
    assert torch.equal(model(data), native(data))


@pytest.mark.parametrize(
    ("make", "source"),
    [
        pytest.param(lambda x, h: h.view(-1, 2, 2).flatten(1), "h", id="a view of a value read again"),
        pytest.param(lambda x, h: L.Identity()(h), "h", id="a layer that returns its input"),
        pytest.param(lambda x, h: L.Dropout(0.5)(h), "h", id="dropout, which returns its input in eval mode"),
        pytest.param(lambda x, h: x, "x", id="the caller's input"),
    ],
)
def test_in_place_on_memory_shared_with_a_live_value_runs_on_a_copy(make: Any, source: str) -> None:
    x = Placeholder((None, 4))
    h = L.Linear(4)(x)
    model = Functional(inputs=x, outputs=[L.ReLU(inplace=True)(make(x, h)), h, x + 0]).eval()
    data = torch.randn(8, 4)
    kept = data.clone()
    with torch.no_grad():
        relu, h_value, x_value = model(data)
        assert torch.equal(h_value, model.linear(kept))
    assert torch.equal(relu, torch.relu(h_value if source == "h" else kept))
    assert torch.equal(data, kept) and torch.equal(x_value, kept)
    assert ".clone())" in model.code


def test_an_in_place_flag_on_a_function_is_recorded_out_of_place() -> None:
    x = Placeholder((None, 4))
    h = L.Linear(4)(x)
    model = Functional(inputs=x, outputs=[F.relu(h, inplace=True), F.dropout(h, 0.0, inplace=True), h])
    assert "F.relu(linear)" in model.code
    data = torch.randn(8, 4)
    with torch.no_grad():
        relu, dropped, h_value = model(data)
    assert torch.equal(relu, torch.relu(h_value)) and torch.equal(dropped, h_value)
    plain = Functional(inputs=x, outputs=F.relu(x, inplace=True))
    kept = data.clone()
    plain(data)
    assert torch.equal(data, kept)


def test_training_step_with_an_in_place_layer_matches_the_plain_run() -> None:
    torch.manual_seed(0)
    x = Placeholder((None, 3, 8, 8))
    y = L.Conv2d(4, 3)(x)
    out = L.Linear(2)(L.Flatten()(L.ReLU(inplace=True)(L.BatchNorm2d()(y)) + y))
    model = Functional(inputs=x, outputs=out)
    twin = Functional(inputs=x, outputs=out)  # the same layers
    data = torch.randn(4, 3, 8, 8)
    model(data).sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]  # type: ignore[union-attr]
    model.zero_grad()
    conv, norm, linear = twin.conv2d, twin.batch_norm2d, twin.linear
    conv_out = conv(data)
    expected = linear(torch.flatten(torch.relu(norm(conv_out)) + conv_out, 1))
    expected.sum().backward()
    assert all(torch.allclose(g, p.grad) for g, p in zip(grads, model.parameters(), strict=True))  # type: ignore[arg-type]


def test_a_residual_sum_is_computed_into_the_norm_output_as_hand_written() -> None:
    x = Placeholder((None, 4, 6, 6))
    out = L.BatchNorm2d()(L.Conv2d(4, 3, padding=1)(x))
    model = Functional(inputs=x, outputs=L.ReLU(inplace=True)(out + x))
    assert (
        "add = batch_norm2d.add_(x) if batch_norm2d.dtype is x.dtype and batch_norm2d.shape == x.shape else batch_norm2d + x;  del batch_norm2d"
        in model.code
    )
    data = torch.randn(3, 4, 6, 6, requires_grad=True)
    result = model(data)
    conv, norm = model.conv2d, model.batch_norm2d
    expected = torch.relu(norm(conv(data)) + data)
    assert torch.equal(result, expected)
    (grad,) = torch.autograd.grad(result.sum(), data)
    (expected_grad,) = torch.autograd.grad(expected.sum(), data)
    assert torch.equal(grad, expected_grad)


@pytest.mark.parametrize("into_second", [False, True], ids=["into the first operand", "into the second"])
def test_a_residual_sum_under_autocast_has_the_eager_dtype_and_values(into_second: bool) -> None:
    torch.manual_seed(0)
    x = Placeholder((None, 16))
    h = L.Linear(16)(x)
    model = Functional(inputs=x, outputs=x + h if into_second else h + x)
    written = "x + linear" if into_second else "linear + x"
    assert (
        f"add = linear.add_(x) if linear.dtype is x.dtype and linear.shape == x.shape else {written}"
        in model.code
    )
    data = torch.randn(4, 16)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        result = model(data)  # the linear output is bfloat16, the input float32
        linear = model.linear(data)
        expected = data + linear if into_second else linear + data
    assert result.dtype == expected.dtype == torch.float32
    assert torch.equal(result, expected)


@pytest.mark.parametrize("operation", [operator.add, operator.sub])
def test_a_residual_sum_with_an_input_of_another_dtype_has_the_eager_dtype(operation: Any) -> None:
    x, y = Placeholder((None, 16), name="x"), Placeholder((None, 16), name="y")
    model = Functional(inputs=[x, y], outputs=operation(L.Linear(16)(x), y))
    assert "linear.dtype is y.dtype" in model.code
    data, other = torch.randn(4, 16), torch.randn(4, 16, dtype=torch.float64)
    with torch.no_grad():
        result, expected = model(data, other), operation(model.linear(data), other)
    assert result.dtype == expected.dtype == torch.float64
    assert torch.equal(result, expected)


def test_a_sum_with_a_number_runs_as_written_for_an_integer_input() -> None:
    x = Placeholder((None, 4))
    model = Functional(inputs=x, outputs=x * x + 0.5)
    assert "add = mul + 0.5" in model.code
    data = torch.arange(8).view(2, 4)  # a floating placeholder takes integers: mul is int64
    assert torch.equal(model(data), data * data + 0.5)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda x, h: (h + x, h * 2), id="the operand is read again"),
        pytest.param(lambda x, h: (torch.sigmoid(h) + x,), id="its producer's backward reads it (sigmoid)"),
        pytest.param(lambda x, h: (h[:, :1] + x,), id="it is a view"),
        pytest.param(lambda x, h: (L.Linear(1)(h) + x,), id="the sum broadcasts it"),
        pytest.param(
            lambda x, h: (x + x.sum(dim=1, keepdim=True).expand(-1, 4),), id="it is the caller's input"
        ),
    ],
)
def test_a_sum_stays_out_of_place_where_overwriting_could_be_seen(make: Any) -> None:
    x = Placeholder((None, 4))
    h = L.Linear(4)(x)
    outputs = make(x, h)
    model = Functional(inputs=x, outputs=list(outputs))
    assert ".add_(" not in model.code
    data = torch.randn(5, 4, requires_grad=True)
    results = model(data)
    sum(result.sum() for result in results).backward()  # autograd finds nothing overwritten


class Counting(nn.Module):
    """A block that counts its forward runs."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(8, 8)
        self.runs = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.runs += 1
        return torch.tanh(self.linear(x))


def test_a_checkpointed_block_runs_again_in_backward_with_the_same_results() -> None:
    torch.manual_seed(0)
    block = Counting()
    x = Placeholder((None, 8))
    model = Functional(x, L.Linear(2)(L.Checkpoint(accept_placeholders(block))(L.Linear(8)(x))))
    assert "self.checkpoint(linear)" in model.code
    plain = Functional(x, L.Linear(2)(accept_placeholders(block)(L.Linear(8)(x))))
    plain.load_state_dict(
        {key.replace("checkpoint.0.", "counting."): value for key, value in model.state_dict().items()}
    )
    data = torch.randn(4, 8)
    block.runs = 0
    model(data).sum().backward()
    assert block.runs == 2  # the forward, and again in backward
    grads = {name: parameter.grad.clone() for name, parameter in model.named_parameters()}  # type: ignore[union-attr]
    model.zero_grad(set_to_none=True)  # the block is shared by both models
    block.runs = 0
    plain(data).sum().backward()
    assert block.runs == 1
    for name, parameter in plain.named_parameters():
        assert torch.allclose(grads[name.replace("counting.", "checkpoint.0.")], parameter.grad)  # type: ignore[arg-type]
    with torch.no_grad():
        block.runs = 0
        assert torch.equal(model(data), plain(data)) and block.runs == 2


def test_torchs_checkpoint_on_placeholders_is_refused_naming_the_fix() -> None:
    from torch.utils.checkpoint import checkpoint

    x = Placeholder((None, 8))
    with pytest.raises(TorchXError, match=r"inside torch.utils.checkpoint.checkpoint.*L.Checkpoint\(block\)"):
        checkpoint(L.Linear(8), x, use_reentrant=False)


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda h: torch.sigmoid(h), id="its producer's backward reads it (sigmoid)"),
        pytest.param(lambda h: h, id="a product read it before and keeps it for its backward"),
    ],
)
def test_an_in_place_layer_never_overwrites_what_a_backward_reads(make: Any) -> None:
    x = Placeholder((None, 4))
    h = L.Linear(4)(x)
    shared = make(h)
    product = shared * L.Linear(4)(x)  # mul keeps ``shared`` for its backward
    model = Functional(x, L.ReLU(inplace=True)(shared) + product)
    assert ".clone())" in model.code
    data = torch.randn(3, 4, requires_grad=True)
    model(data).sum().backward()  # nothing a backward needs was overwritten
    assert data.grad is not None


# -- one namespace for the code's locals and globals -------------------------------


def global_reads(function: Any) -> set[str]:
    """The names ``function``'s code reads as globals (or builtins)."""
    import dis

    return {
        instruction.argval
        for instruction in dis.get_instructions(function)
        if instruction.opname in ("LOAD_GLOBAL", "LOAD_NAME")
    }


def rich_model(name: str) -> Functional:
    """A model whose code uses each kind of name: an input called ``name`` (in
    a dict: ``type(...) is dict``), a layer reached by ``getattr``, a float
    written ``float('inf')``, a constant in the globals (a complex number) and
    torch functions."""
    x = Placeholder((None, 3), name=name)
    y = L.Linear(3, name="block.0")(x).clamp(max=float("inf")) * (1 + 2j)
    return Functional(inputs={name: x}, outputs=torch.cat([y, y], dim=1))


def expected_of(model: Functional, t: torch.Tensor) -> torch.Tensor:
    y = model.get_submodule("block.0")(t) * (1 + 2j)
    return torch.cat([y, y], dim=1)


def test_an_input_named_like_a_constant_keeps_its_own_value() -> None:
    x = Placeholder((None, 3), name="_constant_0")
    model = Functional(inputs=x, outputs=x * (1 + 2j))  # the complex number is a global of the code
    assert "mul = _constant_0 * _constant_0_1" in model.code
    t = torch.full((2, 3), 3.0)
    assert torch.equal(model(t), t * (1 + 2j))
    assert torch.equal(model(_constant_0=t), t * (1 + 2j))


def test_an_input_named_like_a_builtin_the_code_calls_keeps_its_own_value() -> None:
    x = Placeholder((None, 3), name="getattr")
    model = Functional(inputs=x, outputs=L.Linear(3, name="block.0")(x))
    assert "def forward(self, getattr_1=_MISSING, /, *_extra, **_keywords):" in model.code
    assert "block_0 = getattr(self.block, '0')(getattr_1)" in model.code
    t = torch.randn(2, 3)
    assert torch.equal(model(t), model.get_submodule("block.0")(t))
    assert torch.equal(model(getattr=t), model.get_submodule("block.0")(t))
    assert torch.equal(torch.jit.script(model)(t), model(t))


NAMES_OF_THE_CODE = [
    "self", "error", "_keywords", "torch", "F", "operator", "builtins", "type", "dict", "float", "slice",
    "getattr", "Exception", "Tensor", "_MISSING", "_Tensor", "_find_symbolic", "_prepared_inputs", "_recorded",
    "_check_inputs", "_explain", "_constant_0", "_constant_1", "block", "linear", "mul",
]  # fmt: skip


@pytest.mark.parametrize("name", NAMES_OF_THE_CODE)
def test_an_input_named_like_any_name_of_the_code_keeps_its_own_value(name: str) -> None:
    model = rich_model(name)
    t = torch.randn(2, 3)
    expected = expected_of(model, t)
    assert torch.equal(model(t), expected)
    assert torch.equal(model({name: t}), expected)
    if name != "self":  # nn.Module.__call__ takes self
        assert torch.equal(model(**{name: t}), expected)
    with pytest.raises(TypeError, match="missing inputs"):
        model()
    with pytest.raises(ShapeError, match=f"input {name!r}: expected shape"):  # explained in `except`
        model(torch.randn(2, 4))


def test_every_global_the_forward_reads_is_one_the_generator_put_there() -> None:
    """Nothing reaches the code from ``builtins`` or from another module's
    globals: an input or variable could not hide it, and no name the code
    uses is missing from the namespace."""
    from torchx.functional._codegen import compile_forward, generate_scriptable

    for name in ("x", "getattr", "_constant_0"):
        model = rich_model(name)
        forward = model.__dict__["forward"].__func__
        assert global_reads(forward) <= set(forward.__globals__) - {"__builtins__"}, model.code
        assert {"getattr", "float", "type", "Exception"} <= global_reads(forward)  # all kinds used
        source, namespace = generate_scriptable(model._torchx_program)
        scriptable = compile_forward(source, dict(namespace))
        assert global_reads(scriptable) <= set(namespace), source


def test_a_program_not_named_from_the_code_namespace_is_refused() -> None:
    from torchx.functional._codegen import generate_scriptable
    from torchx.functional._program import Namespace, trace

    x = Placeholder((None, 3), name="torch")
    program = trace(x, x + 1, Namespace(), Functional.reserved_names())
    with pytest.raises(TorchXError, match=r"not named from code_namespace\(\) \(self, error, "):
        generate_scriptable(program)


def test_the_forward_for_meta_inputs_has_the_plain_forwards_lines_with_layers_asked() -> None:
    """Its failures are read off the plain forward's lines (``_explain``)."""
    from torchx.functional._codegen import MetaHelpers, generate
    from torchx.functional._functional import _HELPERS

    x = Placeholder((None, 3, 4))
    y = torch.cat([L.Parameter((1, 1, 4), name="token")(x), L.ReLU(inplace=True)(L.Linear(4)(x))], dim=1)
    model = Functional(inputs=x, outputs=y + x.sum(dim=1, keepdim=True))
    source, _ = generate(model._torchx_program, _HELPERS, MetaHelpers(lambda *args: None, lambda t: t))
    lines, plain = source.splitlines(), model.code.splitlines()
    assert len(lines) == len(plain) and [line.split(" = ")[0] for line in lines] == [
        line.split(" = ")[0] for line in plain
    ]
    changed = [line.strip() for line, before in zip(lines, plain, strict=True) if line != before]
    assert changed == [
        "token = _meta_tensor(self.token).expand(x.shape[0], -1, -1)",
        "linear = _meta_call(self.linear, x)",
        "relu = _meta_call(self.relu, linear);  del linear",
    ]
