"""Programs for the graph-vs-eager differential test (``test_graph_vs_eager.py``).

A program is a small Python function ``f(x)`` (or ``f(x, y)``) over tensors of
shape ``(batch, length, width)`` whose batch and length are dynamic, written
the way models are: it slices by sizes, reshapes with sizes read off its input,
does arithmetic on sizes, compares them, loops over pieces, builds masks,
drops out, reads dtypes, and calls layers. Its layers are made outside ``f``
(``lin0 = L.Linear(8)``), so the graph recorded from ``f`` and the eager run of
``f`` call the very same modules: the Functional owns them, ``model.train()``,
``model.eval()`` and ``model.to(torch.float64)`` reach the eager run too.

``check`` runs one program both ways and holds it to the rule of
docs/torchx-functional.md ("What a recording cannot know is never a constant"):
either the recording is refused at definition with a ``TorchXError``, or the
graph gives what eager gives (same shape, dtype and values) at every size and
mode where eager runs. Anything else raises ``Mismatch``, whose message shows
the program's source and the size, mode and dtype at which it differed.

The eager reference of a program is its ``Reference`` module. It runs the
same lines as ``f`` except where ``f`` relies on a call's default mode:
``F.dropout(x, p)`` and ``F.scaled_dot_product_attention(..., dropout_p=p)``
drop in a plain function whatever the mode, so a model written with them
follows ``self.training`` the way a module's forward does (timm writes
``dropout_p=self.p if self.training else 0.0``); the graph must follow
``model.train()``/``model.eval()`` like that module or refuse the call.
"""

from __future__ import annotations

import contextlib
import hashlib
import linecache
import textwrap
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from hypothesis import strategies as st

import torchx.layers as L
from torchx.core import TorchXError

SEED = 20240601
"""The CPU generator's seed before each run, graph and eager: dropout draws the same masks.
(``torch.default_generator.manual_seed``: ``torch.manual_seed`` also walks every
accelerator backend, some hundred times slower, and these runs are on the CPU.)"""

PROBES = (61, 127)
"""The sizes the recording runs a dynamic dim at (docs/torchx-functional.md)."""


# -- programs --------------------------------------------------------------------


class Program:
    """Source text of ``f`` (as a user writes it), of its eager ``Reference``,
    and of the layers both call."""

    def __init__(
        self,
        body: Sequence[str],
        *,
        width: int,
        inputs: Sequence[str] = ("x",),
        layers: Sequence[tuple[str, str]] = (),
        reference: Sequence[str] | None = None,
    ) -> None:
        self.body = tuple(body)
        self.reference = tuple(body if reference is None else reference)
        self.width = width
        self.inputs = tuple(inputs)
        self.layers = tuple(layers)

    @classmethod
    def of(cls, body: str, *, reference: str | None = None, **kwargs: Any) -> Program:
        """A program from indented source text (a hand-written case)."""
        lines = textwrap.dedent(body).strip("\n").splitlines()
        ref = None if reference is None else textwrap.dedent(reference).strip("\n").splitlines()
        return cls(lines, reference=ref, **kwargs)

    @property
    def follows_mode(self) -> bool:
        """Whether the eager reference differs from ``f``: it follows ``self.training``."""
        return self.reference != self.body

    def source(self, with_reference: bool | None = None) -> str:
        arguments = ", ".join(self.inputs)
        lines = [f"{name} = {make}" for name, make in self.layers]
        lines += ["", "", f"def f({arguments}):", *(f"    {line}" for line in self.body)]
        if self.follows_mode if with_reference is None else with_reference:
            lines += [
                "",
                "",
                "class Reference(torch.nn.Module):  # the eager reference: f, following self.training",
                f"    def forward(self, {arguments}):",
                *(f"        {line}" for line in self.reference),
            ]
        return "\n".join(lines).strip("\n") + "\n"

    def shapes(self) -> str:
        return ", ".join(f"{name}: (None, None, {self.width})" for name in self.inputs)

    def compile(self) -> tuple[Callable[..., Any], type[torch.nn.Module]]:
        """``f`` and ``Reference``, with new layers. The source is registered
        with linecache, so tracebacks and TorchX's messages can quote its lines,
        under a name made from the source: hypothesis tells failures apart by
        where they were raised, and a replay of a program must raise in the same place."""
        source = self.source(with_reference=True)
        filename = f"<graph-vs-eager program {hashlib.sha1(source.encode()).hexdigest()[:12]}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        namespace: dict[str, Any] = {"torch": torch, "F": F, "L": L, "__name__": "program"}
        exec(compile(source, filename, "exec"), namespace)
        return namespace["f"], namespace["Reference"]

    def __repr__(self) -> str:
        return f"\n# inputs {self.shapes()}\n{self.source()}"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:  # hypothesis's falsifying example
        printer.text(repr(self))


# -- sizes and modes -------------------------------------------------------------


@dataclass(frozen=True)
class Size:
    """One run's dynamic sizes: the batch, x's length and y's length (if any)."""

    batch: int
    length: int
    other: int | None = None

    def shape(self, index: int, width: int) -> tuple[int, int, int]:
        length = self.length if index == 0 or self.other is None else self.other
        return (self.batch, length, width)


@dataclass(frozen=True)
class Mode:
    name: str
    training: bool
    float64: bool = False
    """The model after ``model.to(torch.float64)``, called on float64 inputs."""
    autocast: bool = False
    """Under ``torch.autocast("cpu", dtype=torch.bfloat16)``."""
    second_float64: bool = False
    """A float32 model whose second input is float64 (programs with two inputs)."""

    def input_dtype(self, index: int) -> torch.dtype:
        wide = self.float64 or (self.second_float64 and index == 1)
        return torch.float64 if wide else torch.float32

    def context(self) -> contextlib.AbstractContextManager[Any]:
        stack = contextlib.ExitStack()
        if not self.training:
            stack.enter_context(torch.no_grad())
        if self.autocast:
            stack.enter_context(torch.autocast("cpu", dtype=torch.bfloat16))
        return stack


MODES = {
    mode.name: mode
    for mode in (
        Mode("train", True),
        Mode("eval", False),
        Mode("train, bf16 autocast", True, autocast=True),
        Mode("eval, bf16 autocast", False, autocast=True),
        Mode("eval, float64 second input", False, second_float64=True),
        # last: the model stays float64 from here on
        Mode("train, model.to(float64)", True, float64=True),
        Mode("eval, model.to(float64)", False, float64=True),
    )
}

SMALL = st.integers(2, 5)
BETWEEN = st.integers(PROBES[0] + 1, PROBES[1] - 1)
BEYOND = st.integers(PROBES[1] + 1, 200)


@st.composite
def sizes(draw: st.DrawFn, two_inputs: bool = False) -> tuple[Size, ...]:
    """Sizes for the dynamic dims: 1, small, between the probes, beyond them,
    for the length and for the batch; a second input's length equals the
    first's or not."""

    def other(length: int, bucket: st.SearchStrategy[int]) -> int | None:
        if not two_inputs:
            return None
        return length if draw(st.booleans()) else draw(bucket)

    small, between, beyond = draw(SMALL), draw(BETWEEN), draw(BEYOND)
    return (
        Size(1, 1, 1 if two_inputs else None),
        Size(draw(st.integers(1, 3)), small, other(small, SMALL)),
        Size(draw(st.integers(2, 4)), between, between if two_inputs else None),
        Size(draw(st.integers(2, 3)), beyond, other(beyond, BEYOND)),
        Size(draw(BETWEEN | BEYOND), draw(st.integers(1, 3)), other(2, SMALL)),
    )


# -- the check -------------------------------------------------------------------


class Mismatch(AssertionError):
    """The graph differs from eager, or fails where eager runs, or the recording
    failed with something other than a TorchXError."""


@dataclass
class Outcome:
    refused: TorchXError | None = None
    compared: int = 0
    """(size, mode) pairs where graph and eager were compared."""
    eager_failed: int = 0
    """(size, mode) pairs where eager itself raised (nothing to compare)."""
    failures: list[str] = field(default_factory=list)


def check(
    program: Program, sizes: Sequence[Size], modes: Sequence[str] = tuple(MODES), *, raise_first: bool = True
) -> Outcome:
    """Record ``program`` on placeholders and run it eagerly at ``sizes`` in
    ``modes``; raise ``Mismatch`` at the first difference (or collect them all)."""
    __tracebackhide__ = True  # pytest shows the Mismatch's message, not this function
    outcome = Outcome()
    f, reference_class = program.compile()
    placeholders = [L.Placeholder((None, None, program.width), name=name) for name in program.inputs]
    try:
        outputs = f(*placeholders)
        model = L.Functional(
            inputs=placeholders if len(placeholders) > 1 else placeholders[0], outputs=outputs
        )
    except TorchXError as error:
        outcome.refused = error
        return outcome
    except TypeError as error:
        if "finfo" not in str(error):
            raise Mismatch(
                _message(program, f"the recording raised TypeError: {_first_lines(error)}", "")
            ) from error
        # torch.finfo(x.dtype) is torch's own TypeError at definition (finfo cannot
        # take a value of the graph, and torch offers no hook): refused, and documented
        outcome.refused = TorchXError(str(error))
        return outcome
    except Exception as error:
        raise Mismatch(
            _message(
                program,
                f"the recording raised {type(error).__name__}, not a TorchXError: {_first_lines(error)}",
                "a program the graph cannot follow is refused at definition with a TorchXError "
                "(ShapeError...) naming the line and the fix",
            )
        ) from error
    reference = reference_class()
    wanted = [MODES[name] for name in MODES if name in modes]
    for mode in wanted:
        if mode.second_float64 and len(program.inputs) < 2:
            continue
        if mode.float64:
            model.to(torch.float64)
        for size in sizes:
            failure = _compare(program, model, reference, mode, size, outcome)
            if failure is not None:
                if raise_first:
                    raise Mismatch(failure)
                outcome.failures.append(failure)
    if outcome.failures:
        raise Mismatch("\n\n".join(outcome.failures))
    return outcome


def _compare(
    program: Program,
    model: torch.nn.Module,
    reference: torch.nn.Module,
    mode: Mode,
    size: Size,
    outcome: Outcome,
) -> str | None:
    generator = torch.Generator().manual_seed(hash(size) % 2**31)
    inputs = [
        torch.randn(size.shape(index, program.width), generator=generator, dtype=mode.input_dtype(index))
        for index in range(len(program.inputs))
    ]
    model.train(mode.training)
    reference.train(mode.training)
    with mode.context():
        torch.default_generator.manual_seed(SEED)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                expected = reference(*[tensor.clone() for tensor in inputs])
        except Exception:  # noqa: BLE001 - whatever eager raises, there is nothing to compare
            outcome.eager_failed += 1
            return None  # eager does not run here: nothing to compare
        kept = [tensor.clone() for tensor in inputs]
        torch.default_generator.manual_seed(SEED)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                got = model(*inputs)
        except Exception as error:  # noqa: BLE001 - any error where eager runs is the failure reported
            kind = "warned" if isinstance(error, Warning) else "raised"
            return _message(
                program,
                f"the graph {kind} {type(error).__name__} at run time where eager runs: {_first_lines(error)}",
                _where(program, mode, inputs),
                f"eager:  {_describe(expected)}",
            )
    for name, tensor, copy in zip(program.inputs, inputs, kept, strict=True):
        if not torch.equal(tensor, copy):
            return _message(program, f"the graph wrote into its input {name}", _where(program, mode, inputs))
    outcome.compared += 1
    difference = _difference(got, expected)
    return None if difference is None else _message(program, difference, _where(program, mode, inputs))


def _difference(got: Any, expected: torch.Tensor) -> str | None:
    if not isinstance(got, torch.Tensor):
        return f"the graph returned {type(got).__name__}, eager {_describe(expected)}"
    shapes = f"graph:  {_describe(got)}\neager:  {_describe(expected)}"
    if got.shape != expected.shape:
        return f"the graph's shape differs from eager's\n{shapes}"
    if got.dtype != expected.dtype:
        return f"the graph's dtype differs from eager's\n{shapes}"
    # Exact: the graph runs the same torch calls on the same values in the same
    # order, so nothing here needs a tolerance (an in-place a.add_(b) for a + b
    # is the same IEEE sum, and dropout draws the same masks after the same seed).
    got, expected = got.detach(), expected.detach()
    differs = (got != expected) & ~(got.isnan() & expected.isnan())
    if not differs.any():
        return None
    first = tuple(int(i) for i in differs.nonzero()[0])
    largest = (got.double() - expected.double()).abs().nan_to_num(nan=float("inf"))[differs].max()
    return (
        f"the graph's values differ from eager's\n{shapes}\n"
        f"{int(differs.sum()):,} of {expected.numel():,} values differ; the first at {first}: "
        f"graph {got[first].item()!r}, eager {expected[first].item()!r}; the largest difference {float(largest):.3g}"
    )


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"{tuple(value.shape)} {str(value.dtype).removeprefix('torch.')}"
    return type(value).__name__


def _where(program: Program, mode: Mode, inputs: list[torch.Tensor]) -> str:
    given = ", ".join(f"{name} {_describe(t)}" for name, t in zip(program.inputs, inputs, strict=True))
    return f"at: {given}; mode: {mode.name}"


def _first_lines(error: BaseException, limit: int = 6) -> str:
    lines = str(error).strip().splitlines() or [""]
    return "\n    ".join(lines[:limit]) + ("\n    ..." if len(lines) > limit else "")


def _message(program: Program, what: str, *details: str) -> str:
    source = textwrap.indent(program.source(), "    ")
    return "\n".join([what, *details, f"program (inputs {program.shapes()}):", source])


# -- the vocabulary --------------------------------------------------------------


@dataclass
class Draft:
    """A program being drawn, and what holds of its running value ``x``."""

    draw: st.DrawFn
    width: int
    two_inputs: bool
    c: int = 0
    """x's last dim (static)."""
    nonempty: bool = True
    """x's length is at least 1 wherever the input's is."""
    input_length: bool = True
    """x's length is still the input's."""
    body: list[str] = field(default_factory=list)
    reference: list[str] = field(default_factory=list)
    layers: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.c = self.width

    def pick(self, choices: Sequence[Any]) -> Any:
        return self.draw(st.sampled_from(choices))

    def layer(self, kind: str, make: str) -> str:
        name = f"{kind}{len(self.layers)}"
        self.layers.append((name, make))
        return name

    def emit(self, code: str, reference: str | None = None) -> None:
        """Lines of ``f`` (and of the reference, where they differ)."""
        lines = textwrap.dedent(code).strip("\n").splitlines()
        self.body += lines
        self.reference += lines if reference is None else textwrap.dedent(reference).strip("\n").splitlines()

    def program(self) -> Program:
        inputs = ("x", "y") if self.two_inputs else ("x",)
        body, reference = [*self.body, "return x"], [*self.reference, "return x"]
        return Program(body, width=self.width, inputs=inputs, layers=self.layers, reference=reference)


@dataclass(frozen=True)
class Step:
    name: str
    make: Callable[[Draft], None]
    when: Callable[[Draft], bool]


STEPS: dict[str, list[Step]] = {}
"""The vocabulary, by family; within a family the simplest step first (hypothesis shrinks towards it)."""


def step(
    family: str, when: Callable[[Draft], bool] = lambda d: True
) -> Callable[[Callable[[Draft], None]], Any]:
    def register(make: Callable[[Draft], None]) -> Callable[[Draft], None]:
        STEPS.setdefault(family, []).append(Step(make.__name__.strip("_"), make, when))
        return make

    return register


def _nonempty(d: Draft) -> bool:
    return d.nonempty


def _narrow(d: Draft) -> bool:
    """x may grow twice as wide."""
    return d.c <= 8


def _even(d: Draft) -> bool:
    return d.c % 2 == 0


def _with_y(d: Draft) -> bool:
    return d.two_inputs and d.c == d.width


# slices ---------------------------------------------------------------------


@step("slices")
def _head(d: Draft) -> None:
    d.emit(f"x = x[:, :{d.pick([1, 10, 2, 70, 100])}]")
    d.input_length = False


@step("slices")
def _tail(d: Draft) -> None:
    d.emit(f"x = x[:, -{d.pick([1, 10, 3, 70, 100])}:]")
    d.input_length = False


@step("slices")
def _second_half(d: Draft) -> None:
    d.emit("x = x[:, x.shape[1] // 2 :]")
    d.input_length = False


@step("slices")
def _every_other(d: Draft) -> None:
    d.emit("x = x[:, ::2]")
    d.input_length = False


@step("slices")
def _last_by_size(d: Draft) -> None:
    d.emit("x = x[:, x.shape[1] - 1 :]")
    d.input_length = False


@step("slices")
def _from(d: Draft) -> None:
    d.emit(f"x = x[:, {d.pick([1, 70])}:]")
    d.input_length = d.nonempty = False


@step("slices", when=lambda d: d.c > 2)
def _static_dim(d: Draft) -> None:
    d.c -= 1
    d.emit(f"x = x[:, :, :{d.c}]")


# views and reshapes ---------------------------------------------------------


@step("views", when=_even)
def _view_pairs(d: Draft) -> None:
    d.emit("""
        b, t, c = x.shape
        x = x.view(b, t, c // 2, 2).flip(3).view(b, t, c)
    """)


@step("views", when=_nonempty)
def _reshape_minus_one(d: Draft) -> None:
    d.emit("x = x.reshape(x.shape[0], -1).softmax(1).reshape(x.shape)")


@step("views")
def _reshape_rows(d: Draft) -> None:
    d.emit("""
        b, t, c = x.shape
        x = x.reshape(b * t, c).cumsum(0).view(b, t, c)
    """)


@step("views", when=lambda d: d.c % 2 == 0 and d.c >= 4)
def _view_star_shape(d: Draft) -> None:
    d.emit(f"x = x.view(*x.shape[:2], {d.c // 2}, 2).mean(3)")
    d.c //= 2


@step("views", when=_nonempty)
def _flatten_view(d: Draft) -> None:
    d.emit(f"x = x.flatten(1).view(x.shape[0], -1, {d.c}).sigmoid()")


@step("views", when=_nonempty)
def _transpose_view(d: Draft) -> None:
    d.emit(f"x = x.transpose(1, 2).contiguous().view(x.shape[0], {d.c}, -1).transpose(1, 2).cumsum(1)")


# size arithmetic ------------------------------------------------------------


@step("arithmetic")
def _scale_by_length(d: Draft) -> None:
    d.emit("""
        t = x.shape[1]
        x = x * (t // 2 + 1) / (t * 2)
    """)


@step("arithmetic")
def _slice_by_arithmetic(d: Draft) -> None:
    d.emit("""
        t = x.shape[1]
        x = x[:, : t - t // 2]
    """)
    d.input_length = False


@step("arithmetic")
def _pad_by_half(d: Draft) -> None:
    d.emit("""
        b, t, c = x.shape
        x = torch.cat([x, x.new_zeros(b, t // 2, c)], 1)
    """)
    d.input_length = False


@step("arithmetic", when=_nonempty)
def _patches(d: Draft) -> None:
    d.emit("""
        t = x.shape[1]
        x = F.pad(x, (0, 0, 0, (-t) % 4))
        x = x.view(x.shape[0], x.shape[1] // 4, 4, x.shape[2]).mean(2)
    """)
    d.input_length = False


@step("arithmetic")
def _positions(d: Draft) -> None:
    d.emit("""
        t = x.shape[1]
        x = x + torch.arange(t).to(x.dtype)[:, None] / t
    """)


@step("arithmetic")
def _minus_one(d: Draft) -> None:
    d.emit("x = x * (x.shape[1] - 1) + x")


@step("arithmetic")
def _inverse_square_root(d: Draft) -> None:
    d.emit("x = x * x.shape[1] ** -0.5")


@step("arithmetic")
def _float_of_size(d: Draft) -> None:
    d.emit("x = x / float(x.shape[1])")


@step("arithmetic")
def _fill_with_size(d: Draft) -> None:
    d.emit(f"x = x + x.new_full((1, 1, {d.c}), x.shape[1])")


@step("arithmetic")
def _mean_by_hand(d: Draft) -> None:
    d.emit("x = x.sum(1, keepdim=True) / x.shape[1]")
    d.input_length = False


# size comparisons -----------------------------------------------------------


@step("comparisons")
def _if_not_one(d: Draft) -> None:
    d.emit("""
        if x.shape[1] != 1:
            x = x - x.mean(1, keepdim=True)
    """)


@step("comparisons")
def _if_one_else(d: Draft) -> None:
    d.emit("""
        if x.shape[1] == 1:
            x = x * 2
        else:
            x = x + 1
    """)


@step("comparisons")
def _if_square(d: Draft) -> None:
    d.emit("""
        if x.shape[1] == x.shape[2]:
            x = x.transpose(1, 2)
    """)


@step("comparisons")
def _comparison_as_number(d: Draft) -> None:
    d.emit("x = x * (x.shape[1] != 1) + 0.5 * x")


@step("comparisons")
def _comparison_as_training(d: Draft) -> None:
    d.emit(f"x = F.dropout(x, {d.pick([0.5, 0.1])}, training=x.shape[1] != 1)")


@step("comparisons")
def _is_causal_from_two_sizes(d: Draft) -> None:
    q, k = d.layer("lin", f"L.Linear({d.c})"), d.layer("lin", f"L.Linear({d.c})")
    d.emit(f"""
        q, k = {q}(x), {k}(x)
        x = F.scaled_dot_product_attention(q, k, x, is_causal=q.size(1) == k.size(1))
    """)


@step("comparisons")
def _if_batch_not_one(d: Draft) -> None:
    d.emit("""
        if x.shape[0] != 1:
            x = x - x.mean(0, keepdim=True)
    """)


@step("comparisons")
def _conditional_expression(d: Draft) -> None:
    d.emit("x = (x.squeeze(1) if x.shape[1] == 1 else x.mean(1))[:, None]")
    d.input_length = False


@step("comparisons")
def _truncate_if_longer(d: Draft) -> None:
    d.emit("""
        if x.shape[1] > 4:
            x = x[:, :4]
    """)
    d.input_length = False


@step("comparisons")
def _is_causal_if_longer(d: Draft) -> None:
    d.emit("x = F.scaled_dot_product_attention(x, x, x, is_causal=x.shape[1] > 1)")


# loops over pieces ----------------------------------------------------------


@step("loops", when=_nonempty)
def _recurrence(d: Draft) -> None:
    d.emit("""
        h = x[:, 0] * 0
        for p in x.unbind(1):
            h = torch.tanh(p + 0.5 * h)
        x = h[:, None]
    """)
    d.input_length = False


@step("loops", when=_nonempty)
def _recurrence_outputs(d: Draft) -> None:
    d.emit("""
        h, outs = x[:, 0] * 0, []
        for p in x.unbind(1):
            h = torch.tanh(p + 0.5 * h)
            outs.append(h)
        x = torch.stack(outs, 1)
    """)


@step("loops")
def _split_cumsum(d: Draft) -> None:
    d.emit(f"x = torch.cat([p.cumsum(1) for p in x.split({d.pick([10, 2])}, 1)], 1)")


@step("loops", when=_nonempty)
def _chunk_means(d: Draft) -> None:
    d.emit(f"x = torch.stack([p.mean(1) for p in x.chunk({d.pick([3, 2])}, 1)], 1)")
    d.input_length = False


@step("loops")
def _sum_of_pieces(d: Draft) -> None:
    d.emit(f"x = sum(p.sum(1, keepdim=True) for p in x.split({d.pick([10, 3])}, 1))")
    d.input_length = False


@step("loops", when=_nonempty)
def _reversed_pieces(d: Draft) -> None:
    d.emit("x = torch.stack(list(reversed(x.unbind(1))), 1)")


@step("loops")
def _enumerated_pieces(d: Draft) -> None:
    d.emit("x = torch.cat([p * i for i, p in enumerate(x.split(3, 1))], 1)")


@step("loops")
def _count_of_pieces(d: Draft) -> None:
    d.emit("x = x * len(x.unbind(1))")


@step("loops", when=_nonempty)
def _range_of_length(d: Draft) -> None:
    d.emit("""
        h = x[:, 0] * 0
        for i in range(x.shape[1]):
            h = h * 0.5 + x[:, i]
        x = h[:, None]
    """)
    d.input_length = False


# masks ----------------------------------------------------------------------


@step("masks")
def _causal_softmax(d: Draft) -> None:
    d.emit("""
        t = x.shape[1]
        mask = torch.ones((t, t), dtype=torch.bool).tril()
        scores = (x @ x.transpose(1, 2)).masked_fill(~mask, float("-inf"))
        x = scores.softmax(-1) @ x
    """)


@step("masks")
def _additive_bias(d: Draft) -> None:
    d.emit(f"""
        t = x.shape[1]
        bias = torch.full((t, t), float("-inf")).triu(1)
        x = (x @ x.transpose(1, 2) / {d.c} + bias).softmax(-1) @ x
    """)


@step("masks")
def _sdpa_mask(d: Draft) -> None:
    d.emit("""
        t = x.shape[1]
        x = F.scaled_dot_product_attention(x, x, x, attn_mask=torch.ones((t, t), dtype=torch.bool).tril())
    """)


@step("masks")
def _finfo_fill(d: Draft) -> None:
    d.emit("""
        t = x.shape[1]
        scores = x @ x.transpose(1, 2)
        scores = scores.masked_fill(~torch.ones((t, t), dtype=torch.bool).tril(), torch.finfo(scores.dtype).min)
        x = scores.softmax(-1) @ x
    """)


@step("masks")
def _length_mask(d: Draft) -> None:
    d.emit("""
        keep = torch.arange(x.shape[1]) < x.shape[1] - 1
        x = x.masked_fill(~keep[None, :, None], 0.0)
    """)


@step("masks")
def _eye(d: Draft) -> None:
    d.emit("x = x + torch.eye(x.shape[1])[:, :1]")


# dropout --------------------------------------------------------------------


@step("dropout")
def _dropout_layer(d: Draft) -> None:
    d.emit(f"x = {d.layer('drop', f'L.Dropout({d.pick([0.5, 0.1])})')}(x)")


@step("dropout")
def _functional_dropout(d: Draft) -> None:
    p = d.pick([0.5, 0.1])
    d.emit(f"x = F.dropout(x, {p})", reference=f"x = F.dropout(x, {p}, training=self.training)")


@step("dropout")
def _functional_dropout_given(d: Draft) -> None:
    # training=True given follows the mode like the default (torch passes its default on, so a
    # graph cannot tell the two apart); training=False never drops
    p, training = d.pick([0.5, 0.1]), d.pick([False, True])
    d.emit(
        f"x = F.dropout(x, {p}, training={training})",
        reference=f"x = F.dropout(x, {p}, training={'self.training' if training else 'False'})",
    )


@step("dropout")
def _attention_dropout(d: Draft) -> None:
    p = d.pick([0.1, 0.5])
    d.emit(
        f"x = F.scaled_dot_product_attention(x, x, x, dropout_p={p})",
        reference=f"x = F.scaled_dot_product_attention(x, x, x, dropout_p={p} if self.training else 0.0)",
    )


# dtype reads ----------------------------------------------------------------


@step("dtypes")
def _constant_to_dtype(d: Draft) -> None:
    d.emit(f"x = x + torch.full(({d.c},), 0.1).to(x.dtype)")


@step("dtypes")
def _factory_to_dtype(d: Draft) -> None:
    d.emit(f"x = x * (torch.ones((x.shape[1], {d.c})).to(x.dtype) / 3)")


@step("dtypes")
def _type_as(d: Draft) -> None:
    d.emit(f"x = x + torch.arange({d.c}).type_as(x) / 7")


@step("dtypes", when=lambda d: d.c <= 14)
def _new_zeros(d: Draft) -> None:
    d.emit("x = torch.cat([x, x.new_zeros(x.shape[0], x.shape[1], 2)], 2)")
    d.c += 2


@step("dtypes")
def _finfo(d: Draft) -> None:
    d.emit("x = x + torch.finfo(x.dtype).eps * 1000")


@step("dtypes")
def _if_dtype(d: Draft) -> None:
    d.emit("""
        if x.dtype == torch.float64:
            x = x * 2
    """)


@step("dtypes")
def _new_tensor(d: Draft) -> None:
    d.emit("x = x * x.new_tensor(0.1)")


@step("dtypes")
def _factory_with_dtype(d: Draft) -> None:
    d.emit(f"x = x + torch.full(({d.c},), 0.1, dtype=x.dtype, device=x.device)")


@step("dtypes")
def _new_ones(d: Draft) -> None:
    d.emit("x = x * x.new_ones(()) / 3")


@step("dtypes")
def _explicit_cast(d: Draft) -> None:
    d.emit("x = x.float() * 1.5")


# merges ---------------------------------------------------------------------


@step("merges")
def _cat_doubled(d: Draft) -> None:
    d.emit("x = torch.cat([x, x * 2], 1)")
    d.input_length = False


@step("merges")
def _cat_head(d: Draft) -> None:
    d.emit(f"x = torch.cat([x, x[:, :{d.pick([2, 10])}]], 1)")
    d.input_length = False


@step("merges", when=_narrow)
def _cat_flipped(d: Draft) -> None:
    d.emit("x = torch.cat([x, x.flip(1)], 2)")
    d.c *= 2


@step("merges", when=_narrow)
def _stack_flatten(d: Draft) -> None:
    d.emit("x = torch.stack([x, x.cumsum(1)], 3).flatten(2)")
    d.c *= 2


@step("merges")
def _stack_sum(d: Draft) -> None:
    d.emit("x = torch.stack([x, x.flip(1)], 1).sum(1)")


@step("merges", when=_even)
def _cat_chunks(d: Draft) -> None:
    d.emit("x = torch.cat(x.chunk(2, 2)[::-1], 2)")


# layers ---------------------------------------------------------------------


@step("layers")
def _linear(d: Draft) -> None:
    out = d.pick([8, 4, 6])
    d.emit(f"x = {d.layer('lin', f'L.Linear({out})')}(x)")
    d.c = out


@step("layers")
def _layer_norm(d: Draft) -> None:
    d.emit(f"x = {d.layer('norm', 'L.LayerNorm()')}(x)")


@step("layers")
def _activation(d: Draft) -> None:
    d.emit(f"x = {d.layer('act', d.pick(['L.GELU()', 'L.Tanh()', 'L.ReLU()']))}(x)")


@step("layers")
def _linear_relu(d: Draft) -> None:
    d.emit(f"x = torch.relu({d.layer('lin', f'L.Linear({d.c})')}(x))")


# strides --------------------------------------------------------------------


@step("strides", when=_narrow)
def _as_strided_windows(d: Draft) -> None:
    d.emit("""
        x = x.contiguous()
        b, t, c = x.shape
        x = torch.as_strided(x, (b, t - 1, 2 * c), x.stride())
    """)
    d.c *= 2
    d.input_length = d.nonempty = False


@step("strides")
def _as_strided_every_other(d: Draft) -> None:
    d.emit("""
        x = x.contiguous()
        sb, st, sc = x.stride()
        x = x.as_strided((x.shape[0], x.shape[1] // 2, x.shape[2]), (sb, 2 * st, sc))
    """)
    d.input_length = d.nonempty = False


@step("strides")
def _stride_as_number(d: Draft) -> None:
    d.emit(f"x = x * (x.contiguous().stride(0) // {d.c})")


@step("strides", when=_nonempty)
def _unfold(d: Draft) -> None:
    d.emit("x = x.unfold(1, 2, 1).mean(3)")
    d.input_length = d.nonempty = False


# residuals (eligible to run in place) --------------------------------------


@step("residuals")
def _linear_residual(d: Draft) -> None:
    d.emit(f"x = {d.layer('lin', f'L.Linear({d.c})')}(x) + x")


@step("residuals")
def _residual_first(d: Draft) -> None:
    d.emit(f"x = x + {d.layer('lin', f'L.Linear({d.c})')}(x)")


@step("residuals")
def _norm_residual(d: Draft) -> None:
    d.emit(f"x = {d.layer('norm', 'L.LayerNorm()')}(x) + x")


@step("residuals")
def _pre_norm(d: Draft) -> None:
    lin, norm = d.layer("lin", f"L.Linear({d.c})"), d.layer("norm", "L.LayerNorm()")
    d.emit(f"x = x + {lin}({norm}(x))")


@step("residuals")
def _gated(d: Draft) -> None:
    d.emit(f"x = {d.layer('lin', f'L.Linear({d.c})')}(x) * torch.sigmoid(x)")


@step("residuals")
def _augmented(d: Draft) -> None:
    d.emit(f"""
        h = {d.layer("lin", f"L.Linear({d.c})")}(x)
        h += x
        x = h
    """)


# two inputs (x and y, both (None, None, width)) ----------------------------


@step("two_inputs", when=_with_y)
def _if_same_length(d: Draft) -> None:
    d.emit("""
        if x.shape[1] == y.shape[1]:
            x = x + y
        else:
            x = x + y.mean(1, keepdim=True)
    """)


@step("two_inputs", when=lambda d: _with_y(d) and d.input_length)
def _residual_second_input(d: Draft) -> None:
    d.emit(f"x = {d.layer('lin', f'L.Linear({d.c})')}(x) + y")


@step("two_inputs", when=_with_y)
def _cross_attention(d: Draft) -> None:
    d.emit("x = F.scaled_dot_product_attention(x, y, y, is_causal=x.size(1) == y.size(1))")


@step("two_inputs", when=_with_y)
def _cat_inputs(d: Draft) -> None:
    d.emit("x = torch.cat([x, y], 1)")
    d.input_length = False


@step("two_inputs", when=lambda d: d.two_inputs)
def _slice_by_other(d: Draft) -> None:
    d.emit("x = x[:, : y.shape[1]] * y.sum()")
    d.input_length = False


@step("two_inputs", when=_with_y)
def _type_as_other(d: Draft) -> None:
    d.emit("x = x + y.type_as(x).mean(1, keepdim=True)")


FAMILIES = tuple(STEPS)


@st.composite
def programs(draw: st.DrawFn, family: str) -> Program:
    """A program of one to three steps from ``family`` (or, for ``"mixed"``,
    from any family); programs with two inputs begin with a step that reads ``y``."""
    two_inputs = family == "two_inputs" or (family == "mixed" and draw(st.integers(0, 3)) == 0)
    d = Draft(draw, width=draw(st.sampled_from([8, 4, 6])), two_inputs=two_inputs)
    if two_inputs:
        _apply(d, "two_inputs")
    families = FAMILIES if family == "mixed" else (family,)
    for _ in range(draw(st.integers(0 if two_inputs else 1, 3))):
        _apply(d, draw(st.sampled_from(families)) if len(families) > 1 else family)
    return d.program()


def _apply(d: Draft, family: str) -> None:
    candidates = [s for s in STEPS[family] if s.when(d)]
    if candidates:
        d.draw(st.sampled_from(candidates)).make(d)


def steps() -> Iterator[tuple[str, str]]:
    """(family, step name) for every step of the vocabulary."""
    for family, listed in STEPS.items():
        for s in listed:
            yield family, s.name
