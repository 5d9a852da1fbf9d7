"""Search spaces: TorchX specs whose values may be search markers.

A marker is an object with one key starting with ``$``, beside its options:

- ``{"$int": [low, high]}``, with ``"step": n`` or ``"log": true``: an integer
  (Optuna's ``suggest_int``);
- ``{"$float": [low, high]}``, with ``"step": x`` or ``"log": true``: a number
  (``suggest_float``);
- ``{"$choice": [a, b, ...]}``: one of the options, which may be layers, lists of
  layers (spliced into a ``"layers"`` list, ``[]`` being "no layer") and may hold
  markers (a conditional space); when every option is a scalar Optuna samples the
  value, else the option's index;
- ``{"$repeat": {"times": t, "layers": [...], "shared": false}}``, an item of a
  ``"layers"`` list: the block repeated ``t`` times (an integer, or an ``$int`` or
  ``$choice`` marker: searchable depth); each repetition samples its own markers
  unless ``"shared": true``.

``"name"`` on an ``$int``, ``$float`` or ``$choice`` makes every marker of that name one
parameter (their declarations must be equal). An unnamed marker is named by its
place in the document (``layers[3].args.out_features``); in the ``k``-th repetition of
an unshared ``$repeat`` at ``layers[2]`` its name holds the repetition
(``layers[2].$repeat[k].layers[0].args.out_features``). Names depend on the document
only, so they are the same in every run and every process.

Every layer entry a sample may hold is read when the space is, as a spec's entry is
(its type, keys, argument names and plain values; see :mod:`._entries`), so a space
naming an unknown type is refused when read, not when a trial samples it.

Reading a space never runs code and is bounded as a spec is: the file by
:func:`torchx.plugin.read_spec_file`, and every sample holds at most
:data:`~torchx.plugin.MAX_LAYERS` layers and :data:`~torchx.plugin.MAX_SPEC_VALUES`
values (repeats and choices expanded), so a repeat of 10**9 is refused when read.
Numbers are bounded for Optuna, which samples in float64: an ``$int``'s integers by
:data:`MAX_MARKER_INT`, a ``$float``'s span by the largest float64 and its steps by
:data:`MAX_FLOAT_STEPS`.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import math
import sys
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from torchx.core import SpecError
from torchx.plugin import MAX_DEPTH, MAX_LAYERS, MAX_SPEC_VALUES, read_spec_file, short_repr
from torchx.tune._counting import MAX_SPACE_SIZE, Counting, Tally, Tangled
from torchx.tune._entries import check_entry, is_marker

__all__ = [
    "MAX_FLOAT_STEPS",
    "MAX_MARKER_INT",
    "MAX_REPEAT",
    "Parameter",
    "Space",
    "Trial",
    "load_space",
    "parse_space",
]

MAX_REPEAT = 1000
"""Most repetitions a ``$repeat`` may make."""

MAX_MARKER_INT = 2**53
"""Largest magnitude of an ``$int``'s low, high and step: Optuna samples integers
through float64, which holds every integer up to 2**53 (past it, its random sampler
merges neighbouring values and TPE fails)."""

MAX_FLOAT_STEPS = 2**53
"""Most steps a ``$float`` with a ``step`` may span: Optuna counts them in float64
(and checks them in 28-digit decimals, which fail past 10**28)."""

MAX_NESTING = 4 * MAX_DEPTH
"""Deepest nesting of values a space may have (a layer level of a spec takes a few, a choice two:
compiling it takes twice the stack)."""

_OPTIONS = {
    "$int": ("step", "log", "name"),
    "$float": ("step", "log", "name"),
    "$choice": ("name",),
    "$repeat": (),
}
"""The markers, and the keys each takes beside its own."""
_REPEAT_KEYS = ("times", "layers", "shared")
_SCALARS = (str, int, float, bool, type(None))

_VALUE, _LAYERS, _ITEM, _ROOT = "value", "layers", "item", "root"
"""What stands at a place: any value, a list of layers (the value of ``"layers"``),
an item of such a list (a layer, a list of layers spliced, a ``$repeat``), the document."""


class Trial(Protocol):
    """What a space samples with: ``optuna.trial.Trial``, ``optuna.trial.FixedTrial``,
    or any object with these three methods."""

    def suggest_int(self, name: str, low: int, high: int, *, step: int = 1, log: bool = False) -> int: ...

    def suggest_float(
        self, name: str, low: float, high: float, *, step: float | None = None, log: bool = False
    ) -> float: ...

    def suggest_categorical(self, name: str, choices: Sequence[Any]) -> Any: ...


@dataclass(frozen=True)
class Parameter:
    """One parameter of a space, as Optuna samples it.

    ``kind`` is ``"int"``, ``"float"`` or ``"choice"``. A choice samples ``choices``:
    the ``options`` themselves when all are scalars, else their indices. ``where`` is
    the place of its first marker in the document.
    """

    name: str
    kind: str
    low: int | float | None = None
    high: int | float | None = None
    step: int | float | None = None
    log: bool = False
    choices: tuple[Any, ...] = ()
    options: tuple[Any, ...] = ()
    where: str = field(default="$", compare=False)

    @cached_property
    def size(self) -> int | None:
        """How many values it takes; None when continuous (a ``$float`` without a step)."""
        if self.kind == "choice":
            return len(self.choices)
        if self.step is None:
            return None
        assert self.low is not None and self.high is not None
        if isinstance(self.step, int) and isinstance(self.low, int) and isinstance(self.high, int):
            return (self.high - self.low) // self.step + 1
        return int(_steps(self.low, self.high, self.step)) + 1

    def describe(self) -> str:
        """The declaration, as messages show it: ``$int [8, 64] step 8``."""
        if self.kind == "choice":
            return f"$choice of {len(self.choices)} options {short_repr(list(self.options))}"
        step = self.step if self.kind == "float" or self.step != 1 else None
        shown = f" step {step}" if step is not None else ""
        return f"${self.kind} [{self.low}, {self.high}]{shown}" + (" log" if self.log else "")


class _Census:
    """The parameters of a space, found by walking it with every repetition expanded."""

    def __init__(self) -> None:
        self.parameters: dict[str, Parameter] = {}
        self.occurrences: dict[str, int] = {}
        self.shaping: set[str] = set()
        """Names whose value decides what else is sampled: choices among options that
        hold markers, and the times of repeats of such blocks."""

    def add(self, parameter: Parameter, *, shaping: bool = False) -> None:
        name = parameter.name
        first = self.parameters.setdefault(name, parameter)
        if first != parameter:
            raise SpecError(
                parameter.where,
                f"the parameter {name!r} is a {parameter.describe()} here but a {first.describe()} at "
                f"{first.where}; markers of one name are one parameter: declare it the same in both "
                "places, or give them different names",
            )
        self.occurrences[name] = self.occurrences.get(name, 0) + 1
        if shaping:
            self.shaping.add(name)

    def counting(self, *, fixed: bool) -> Counting:
        return Counting(self.parameters, self.occurrences, self.shaping, fixed=fixed)


def _name(pieces: tuple[str, ...], repetitions: tuple[int, ...] = ()) -> str:
    """The name of the marker at ``pieces`` (its place, split where an unshared repeat
    numbers its repetitions) in those ``repetitions``: ``layers[2].$repeat[1].layers[0]``;
    with none given, its place as written."""
    if not repetitions:
        text = "".join(pieces)
    else:
        text = pieces[0] + "".join(
            f"[{rep}]{piece}" for rep, piece in zip(repetitions, pieces[1:], strict=True)
        )
    return text[2:] if text.startswith("$.") else text


class _Node:
    """A compiled part of a space. ``work`` is its size with every option and repetition
    expanded, ``layers`` the most layers one sample of it holds."""

    splices = False
    """Whether a list it gives is spliced into the ``"layers"`` list it stands in."""
    work = 1
    layers = 0
    plain = False
    """Whether it holds no marker (so it is the same node wherever it stands)."""

    def sample(self, trial: Trial, repetitions: tuple[int, ...]) -> Any:
        raise NotImplementedError

    def visit(self, census: _Census, repetitions: tuple[int, ...]) -> None:
        """Add the parameters under it to ``census``."""

    def count(self, counting: Counting, repetitions: tuple[int, ...]) -> Tally:
        """Its samples, counted by what they give the tied names (see :mod:`._counting`)."""
        return Tally()


@dataclass(frozen=True)
class _Constant(_Node):
    value: Any  # a scalar
    plain = True

    def sample(self, trial: Trial, repetitions: tuple[int, ...]) -> Any:
        return self.value


@dataclass(frozen=True)
class _Object(_Node):
    items: tuple[tuple[Any, _Node], ...]
    work: int
    layers: int
    plain: bool

    def sample(self, trial: Trial, repetitions: tuple[int, ...]) -> Any:
        return {key: node.sample(trial, repetitions) for key, node in self.items}

    def visit(self, census: _Census, repetitions: tuple[int, ...]) -> None:
        for _, node in self.items:
            node.visit(census, repetitions)

    def count(self, counting: Counting, repetitions: tuple[int, ...]) -> Tally:
        return _count_together(counting, [node for _, node in self.items], repetitions)


@dataclass(frozen=True)
class _List(_Node):
    items: tuple[_Node, ...]
    work: int
    layers: int
    plain: bool

    def sample(self, trial: Trial, repetitions: tuple[int, ...]) -> Any:
        sampled: list[Any] = []
        for node in self.items:
            value = node.sample(trial, repetitions)
            if node.splices and isinstance(value, list):
                sampled += value
            else:
                sampled.append(value)
        return sampled

    def visit(self, census: _Census, repetitions: tuple[int, ...]) -> None:
        for node in self.items:
            node.visit(census, repetitions)

    def count(self, counting: Counting, repetitions: tuple[int, ...]) -> Tally:
        return _count_together(counting, self.items, repetitions)


@dataclass(frozen=True)
class _Marker(_Node):
    """An ``$int``, ``$float`` or ``$choice``: one parameter."""

    declared: Parameter  # named by its given name, or by its place with no repetitions
    pieces: tuple[str, ...] | None  # its place, split at unshared repeats; None when named

    def name(self, repetitions: tuple[int, ...]) -> str:
        return self.declared.name if self.pieces is None else _name(self.pieces, repetitions)

    def parameter(self, repetitions: tuple[int, ...]) -> Parameter:
        if self.pieces is None:
            return self.declared
        return dataclasses.replace(self.declared, name=self.name(repetitions))

    def sample(self, trial: Trial, repetitions: tuple[int, ...]) -> Any:
        p = self.parameter(repetitions)
        if p.kind == "int":
            assert isinstance(p.low, int) and isinstance(p.high, int) and isinstance(p.step, int)
            return trial.suggest_int(p.name, p.low, p.high, step=p.step, log=p.log)
        assert p.low is not None and p.high is not None
        return trial.suggest_float(p.name, p.low, p.high, step=p.step, log=p.log)

    def visit(self, census: _Census, repetitions: tuple[int, ...]) -> None:
        census.add(self.parameter(repetitions))

    def count(self, counting: Counting, repetitions: tuple[int, ...]) -> Tally:
        return counting.parameter(self.name(repetitions))


@dataclass(frozen=True)
class _Choice(_Marker):
    nodes: tuple[_Node, ...]
    scalars: bool  # the options are the values sampled (else their indices are)
    splices: bool
    work: int
    layers: int

    def sample(self, trial: Trial, repetitions: tuple[int, ...]) -> Any:
        p = self.parameter(repetitions)
        chosen = trial.suggest_categorical(p.name, p.choices)
        return chosen if self.scalars else self.nodes[chosen].sample(trial, repetitions)

    def visit(self, census: _Census, repetitions: tuple[int, ...]) -> None:
        census.add(self.parameter(repetitions), shaping=not all(node.plain for node in self.nodes))
        for node in self.nodes:
            node.visit(census, repetitions)

    def count(self, counting: Counting, repetitions: tuple[int, ...]) -> Tally:
        name = self.name(repetitions)
        if not counting.shapes(name):
            return counting.parameter(name)
        start = counting.clock
        branches = counting.branches(name)
        options = [node.count(counting, repetitions) for node in self.nodes]  # all: their markers are met
        tally = counting.either(
            counting.join(Tally.of({branches[value]: 1}), option)
            for value, option in zip(self.declared.choices, options, strict=True)
            if value in branches
        )
        return counting.settle(tally, start)


@dataclass(frozen=True)
class _Repeat(_Node):
    times: _Node  # a _Constant or a _Marker of integers
    block: _List
    shared: bool
    most: int  # the most repetitions
    work: int
    layers: int
    splices = True

    def sample(self, trial: Trial, repetitions: tuple[int, ...]) -> Any:
        sampled: list[Any] = []
        for k in range(self.times.sample(trial, repetitions)):
            sampled += self.block.sample(trial, repetitions if self.shared else (*repetitions, k))
        return sampled

    def visit(self, census: _Census, repetitions: tuple[int, ...]) -> None:
        if isinstance(self.times, _Marker):
            census.add(self.times.parameter(repetitions), shaping=not self.block.plain)
        for k in range(1 if self.shared else self.most):
            self.block.visit(census, repetitions if self.shared else (*repetitions, k))

    def count(self, counting: Counting, repetitions: tuple[int, ...]) -> Tally:
        start = counting.clock
        if isinstance(self.times, _Marker):
            name = self.times.name(repetitions)
            if not counting.shapes(name):
                return counting.parameter(name)
            branches = counting.branches(name)
        else:
            branches = {self.most: frozenset()}
        tally = counting.either(
            counting.join(Tally.of({branches[t]: 1}), made)
            for t, made in self._prefixes(counting, repetitions, branches)
        )
        return counting.settle(tally, start)

    def _prefixes(
        self, counting: Counting, repetitions: tuple[int, ...], wanted: Collection[int]
    ) -> Iterator[tuple[int, Tally]]:
        """The samples of the first ``t`` repetitions, for each ``t`` in ``wanted``."""
        # a shared block is counted even when it is never repeated, so that its markers are met
        shared = self.block.count(counting, repetitions) if self.shared else None
        made = Tally()
        for t in range(max(wanted) + 1):
            if t and shared is None:
                made = counting.join(made, self.block.count(counting, (*repetitions, t - 1)))
            elif t == 1 and shared is not None:
                made = counting.join(made, shared)
            if t in wanted:
                yield t, made.copy()


def _count_together(counting: Counting, nodes: Sequence[_Node], repetitions: tuple[int, ...]) -> Tally:
    """The samples of ``nodes`` sampled together."""
    start = counting.clock
    tally = Tally()
    for node in nodes:
        tally = counting.settle(counting.join(tally, node.count(counting, repetitions)), start)
    return tally


class _Size(NamedTuple):
    number: int
    exact: bool
    """Else ``number`` is a lower bound."""
    steps: int
    """The steps the exact count took (see :data:`~torchx.tune.MAX_COUNT_STEPS`)."""


class Space:
    """A search space: a spec with markers, validated (see :func:`parse_space`).

    ``sample(trial)`` gives a plain spec; ``parameters`` lists what a trial may sample,
    ``size()`` how many architectures the space holds. A space is immutable.
    """

    __slots__ = ("_census", "_parameters", "_root", "_size", "_spec")

    def __init__(self, spec: Mapping[str, Any], root: _Node, census: _Census) -> None:
        self._spec = copy.deepcopy(dict(spec))
        self._root = root
        self._parameters = tuple(census.parameters.values())
        self._census = census
        self._size: list[_Size | None] = []

    @property
    def spec(self) -> dict[str, Any]:
        """The space as written (a copy)."""
        return copy.deepcopy(self._spec)

    @property
    def parameters(self) -> tuple[Parameter, ...]:
        """Every parameter a sample may hold, in the order of the document (those of
        every possible repetition of an unshared ``$repeat`` included)."""
        return self._parameters

    def sample(self, trial: Trial) -> dict[str, Any]:
        """A plain spec (no marker left, sharing nothing with the space or with other
        samples), each marker's value asked of ``trial`` under the marker's name."""
        sampled: dict[str, Any] = self._root.sample(trial, ())
        return sampled

    def size(self) -> int | None:
        """How many architectures the space holds: the number of different sets of
        values a sample may ask (a choice counts the architectures of each option, a
        repetition those of its block, a name once). Two sets of values may still give
        one spec, when the options of a choice overlap.

        None when a ``$float`` without a ``step`` makes it continuous, or when it is not
        counted exactly: past :data:`~torchx.tune.MAX_SPACE_SIZE` (10**4000), or
        names tied under so many independent choices that counting would take more than
        :data:`~torchx.tune.MAX_COUNT_STEPS` steps; ``repr`` then shows a lower bound.
        """
        size = self._counted()
        return size.number if size is not None and size.exact else None

    def _counted(self) -> _Size | None:
        """The number of architectures, exact or a lower bound; None when continuous."""
        if not self._size:
            self._size.append(None if any(p.size is None for p in self._parameters) else self._count())
        return self._size[0]

    def _count(self) -> _Size:
        counting = self._census.counting(fixed=False)
        try:
            total = counting.total(self._root.count(counting, ()))
            return _Size(total, total < MAX_SPACE_SIZE, counting.steps)
        except Tangled:  # every tied name held at its first value: the samples that give those
            fixed = self._census.counting(fixed=True)
            return _Size(fixed.total(self._root.count(fixed, ())), False, counting.steps)

    def __repr__(self) -> str:
        size = self._counted()
        if size is None:
            shown = "continuous"
        elif size.exact:
            shown = f"{size.number:,} architectures"
        elif size.number < MAX_SPACE_SIZE:
            shown = f"at least {size.number:,} architectures"
        else:
            shown = f"at least 10**{round(math.log10(MAX_SPACE_SIZE))} architectures"
        return f"Space({len(self._parameters)} parameters, {shown})"


def load_space(path: str | Path) -> Space:
    """Read and validate the search space in a ``.json``/``.yaml`` file, bounded as a spec file is.

    :raises SpecError: the file is not a valid space (the error names the place).
    """
    return parse_space(read_spec_file(path))


def parse_space(data: Mapping[str, Any]) -> Space:
    """Validate a search space given as data (a spec whose values may be markers).

    Every layer entry a sample may hold (in every option of every choice, every block
    of every repeat) is read as :func:`torchx.core.from_spec` reads one, but for the
    values of its markers: its type, keys, argument names and plain values (see
    :mod:`torchx.tune._entries`).

    :raises SpecError: a bad marker (an unknown ``$`` key, an empty choice, bounds out of
        order or not numbers, a step or log that cannot be, a ``$repeat`` outside a
        ``"layers"`` list or too long, one name for two different markers), or a layer
        entry a spec could not hold (an unknown type, naming the closest; an argument
        its class does not take), named by its place.
    """
    root = _Compiler().compile(data, ("$",), _ROOT, 0)
    census = _Census()
    root.visit(census, ())
    return Space(data, root, census)


def _kind(value: Any) -> str:
    return "null" if value is None else f"{type(value).__name__} {short_repr(value)}"


def _closest(key: Any, known: Sequence[str]) -> str:
    """`` (did you mean '$int'?)`` for a misspelt ``key``, if one of ``known`` is close."""
    close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _option_role(role: str, option: Any) -> str:
    """What an option of a choice standing as ``role`` is: a list in a ``"layers"``
    list is a list of layers (spliced), anything else stands where the choice does."""
    return _LAYERS if role == _ITEM and isinstance(option, (list, tuple)) else role


def _child(pieces: tuple[str, ...], key: Any) -> tuple[str, ...]:
    """``pieces`` extended to the child ``key`` (an index, or a key of an object)."""
    if isinstance(key, int):
        step = f"[{key}]"
    elif isinstance(key, str) and len(key) <= 60:
        step = f".{key}"
    else:
        step = f"[{short_repr(key)}]"
    return (*pieces[:-1], pieces[-1] + step)


def _numeric(value: Any, integer: bool) -> bool:
    """Whether ``value`` is an integer (``integer``), or else a finite float64 (or an int within one)."""
    if isinstance(value, bool):
        return False
    if integer:
        return isinstance(value, int)
    return isinstance(value, (int, float)) and abs(value) <= sys.float_info.max  # NaN compares false


def _check_int(value: int, where: str, what: str) -> None:
    if abs(value) > MAX_MARKER_INT:
        raise SpecError(
            where,
            f"{what} {_kind(value)} is past 2**53 ({MAX_MARKER_INT:,}): Optuna samples integers through "
            "float64, which cannot tell larger ones apart",
        )


def _bounds(bounds: Any, integer: bool, where: str) -> tuple[Any, Any]:
    """The ``[low, high]`` of an ``$int`` (``integer``) or ``$float`` marker, checked: floats for a ``$float``."""
    expected = "integers" if integer else "numbers"
    if not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
        raise SpecError(where, f"expected [low, high] ({expected}), got {_kind(bounds)}")
    for label, bound in zip(("low", "high"), bounds, strict=True):
        if not _numeric(bound, integer):
            kind = "an integer" if integer else "a finite number"
            raise SpecError(where, f"{label} must be {kind}, got {_kind(bound)}")
        if integer:
            _check_int(bound, where, label)
    low, high = bounds if integer else (float(bounds[0]), float(bounds[1]))
    if low > high:
        raise SpecError(
            where, f"low {bounds[0]} is greater than high {bounds[1]}: write [{bounds[1]}, {bounds[0]}]"
        )
    if not integer and not math.isfinite(high - low):
        raise SpecError(
            where,
            f"[{bounds[0]}, {bounds[1]}] is wider than the largest float64 ({sys.float_info.max:.6g}), "
            "which Optuna's samplers cannot draw from: narrow it",
        )
    return low, high


def _exact(value: int | float) -> Fraction:
    """``value`` as written: a float by its shortest decimal form, as Optuna reads a step."""
    return Fraction(value) if isinstance(value, int) else Fraction(str(value))


def _steps(low: int | float, high: int | float, step: int | float) -> Fraction:
    """How many steps of ``step`` go from ``low`` to ``high``, exactly."""
    return (_exact(high) - _exact(low)) / _exact(step)


def _check_steps(
    bounds: Sequence[Any], low: int | float, high: int | float, step: int | float, where: str
) -> None:
    """Refuse a step that does not divide ``[low, high]``, or (a float's) that makes more than MAX_FLOAT_STEPS."""
    steps = _steps(low, high, step)
    if isinstance(step, float) and steps > MAX_FLOAT_STEPS:
        raise SpecError(
            where,
            f"[{bounds[0]}, {bounds[1]}] is more than 2**53 ({MAX_FLOAT_STEPS:,}) steps of {step}, which Optuna "
            "counts in float64: take a larger step, or none",
        )
    if steps.denominator != 1:
        end = _exact(low) + math.floor(steps) * _exact(step)
        ends = [
            str(int(value) if isinstance(step, int) else float(value))
            for value in (end, end + _exact(step))
            if abs(value) <= sys.float_info.max
        ]
        raise SpecError(
            where,
            f"[{bounds[0]}, {bounds[1]}] is not a whole number of steps of {step}: end it at {' or '.join(ends)}",
        )


class _Compiler:
    """Turns space data into nodes, checking every marker."""

    def __init__(self) -> None:
        self.plain: dict[int, _Node] = {}
        """The node of each object and list without markers, by ``id``: a part used in
        several places (a YAML alias) is compiled once. The data outlives the compiler."""
        self.entries: set[int] = set()
        """The ``id`` of each layer entry read (see :meth:`entry`)."""

    def compile(self, data: Any, pieces: tuple[str, ...], role: str, depth: int) -> _Node:
        where = "".join(pieces)
        if depth > MAX_NESTING:
            raise SpecError(where, f"the space nests deeper than {MAX_NESTING} levels")
        done = self.plain.get(id(data))
        if done is not None:
            if role in (_ROOT, _ITEM) and isinstance(done, _Object):
                self.entry(data, done, where, role)
            return self.bounded(done, where)
        if isinstance(data, Mapping):
            markers = sorted(str(key) for key in data if isinstance(key, str) and key.startswith("$"))
            if markers:
                return self.marker(data, markers, pieces, role, depth)
            items = tuple(
                (
                    key,
                    self.compile(
                        value, _child(pieces, key), _LAYERS if key == "layers" else _VALUE, depth + 1
                    ),
                )
                for key, value in data.items()
            )
            work = 1 + len(items) + sum(node.work for _, node in items)
            layers = int("type" in data) + sum(node.layers for _, node in items)
            plain = all(node.plain for _, node in items)
            node = _Object(items, work, layers, plain)
            self.bounded(node, where)
            if role in (_ROOT, _ITEM):
                self.entry(data, node, where, role)
            return self.kept(data, node)
        if role == _ROOT:
            raise SpecError(
                where, f"a space is a spec object with a 'type' (or a $choice of them), got {_kind(data)}"
            )
        if role == _ITEM:  # as a spec reader says it
            raise SpecError(where, f"expected a layer object with a 'type', got {_kind(data)}")
        if isinstance(data, (list, tuple)):
            role = _ITEM if role == _LAYERS else _VALUE
            nodes = tuple(
                self.compile(item, _child(pieces, i), role, depth + 1) for i, item in enumerate(data)
            )
            work = 1 + sum(node.work for node in nodes)
            plain = all(node.plain for node in nodes)
            return self.kept(
                data, self.bounded(_List(nodes, work, sum(node.layers for node in nodes), plain), where)
            )
        return _Constant(data)

    def entry(self, data: Mapping[str, Any], node: _Object, where: str, role: str) -> None:
        """Read the layer entry ``data`` (compiled to ``node``) as a spec reader would,
        but for its markers (see :mod:`._entries`); each entry once."""
        if id(data) in self.entries:
            return
        self.entries.add(id(data))
        args, layers = dict(node.items).get("args"), data.get("layers")
        listed = isinstance(layers, (list, tuple))  # its items are entries, each read where it stands
        spliced = is_marker(layers) or (isinstance(layers, (list, tuple)) and any(map(is_marker, layers)))
        marked: set[str] | None = None
        if spliced or not (args is None or args.plain):
            marked = set()
            if isinstance(args, _Object):
                marked = {name for name, value in args.items if not value.plain}
        apart = ("type", "args", "layers") if listed or is_marker(layers) else ("type", "args")
        rest = all(value.plain for key, value in node.items if key not in apart)
        check_entry(data, where, marked, rest, root=role == _ROOT)

    def kept(self, data: Any, node: _Node) -> _Node:
        if node.plain:
            self.plain[id(data)] = node
        return node

    def bounded(self, node: _Node, where: str) -> _Node:
        """``node``, if a sample of it stays within a spec's bounds."""
        if node.work > MAX_SPEC_VALUES:
            raise SpecError(
                where,
                f"the space expands to more than {MAX_SPEC_VALUES:,} values here (every option of a choice, "
                "every repetition and every use of a shared part counted); a spec holds at most that many: "
                "write a smaller space",
            )
        if node.layers > MAX_LAYERS:
            raise SpecError(
                where,
                f"a sample can hold {node.layers:,} layers here; a spec holds at most {MAX_LAYERS:,}: "
                "repeat fewer times",
            )
        return node

    def marker(
        self, data: Mapping[str, Any], markers: list[str], pieces: tuple[str, ...], role: str, depth: int
    ) -> _Node:
        where = "".join(pieces)
        if len(markers) > 1:
            raise SpecError(where, f"an object holds one marker, got {', '.join(markers)}: nest them instead")
        (marker,) = markers
        if marker not in _OPTIONS:
            raise SpecError(
                where,
                f"unknown marker {marker!r}{_closest(marker, list(_OPTIONS))}; the markers are "
                "$int, $float, $choice and $repeat",
            )
        for key in data:
            if key != marker and key not in _OPTIONS[marker]:
                takes = ", ".join(repr(option) for option in _OPTIONS[marker])
                fix = (
                    f"it takes {takes} beside it"
                    if takes
                    else "its options go inside it: 'times', 'layers', 'shared'"
                )
                raise SpecError(
                    f"{where}.{key}",
                    f"unknown key of a {marker} marker{_closest(key, _OPTIONS[marker])}; {fix}",
                )
        name = data.get("name")
        if name is not None and (not isinstance(name, str) or not name):
            raise SpecError(
                f"{where}.name", f"expected the name of the parameter (a non-empty string), got {_kind(name)}"
            )
        if marker == "$repeat":
            return self.repeat(data[marker], pieces, role, depth)
        if marker == "$choice":
            return self.choice(data, pieces, role, depth)
        if role != _VALUE:
            what = "the spec" if role == _ROOT else "a layer (or a list of layers)"
            raise SpecError(where, f"a {marker} marker gives a number, but {what} stands here")
        return self.number(data, marker, pieces)

    def number(self, data: Mapping[str, Any], marker: str, pieces: tuple[str, ...]) -> _Marker:
        where = "".join(pieces)
        integer = marker == "$int"
        low, high = _bounds(data[marker], integer, f"{where}.{marker}")
        log = data.get("log", False)
        if not isinstance(log, bool):
            raise SpecError(f"{where}.log", f"expected true or false, got {_kind(log)}")
        if log and low <= 0:
            raise SpecError(f"{where}.log", f"a log scale needs low > 0, got low {data[marker][0]}")
        step = data.get("step", 1 if integer else None)
        if "step" in data:
            if not _numeric(step, integer) or step <= 0:
                kind = "a positive integer" if integer else "a positive number"
                raise SpecError(f"{where}.step", f"expected {kind}, got {_kind(step)}")
            if integer:
                _check_int(step, f"{where}.step", "step")
            if log:
                raise SpecError(
                    f"{where}.step",
                    "a step and a log scale cannot go together (Optuna samples one or the other)",
                )
            step = step if integer else float(step)
            _check_steps(data[marker], low, high, step, f"{where}.step")
        declared = Parameter(
            name=data.get("name") or _name(pieces),
            kind="int" if integer else "float",
            low=low,
            high=high,
            step=step,
            log=log,
            where=where,
        )
        return _Marker(declared, None if "name" in data else pieces)

    def choice(self, data: Mapping[str, Any], pieces: tuple[str, ...], role: str, depth: int) -> _Choice:
        where = "".join(pieces)
        options = data["$choice"]
        if not isinstance(options, (list, tuple)):
            raise SpecError(f"{where}.$choice", f"expected a list of options, got {_kind(options)}")
        if not options:
            raise SpecError(f"{where}.$choice", "an empty choice: list at least one option")
        scalars = all(isinstance(option, _SCALARS) for option in options)
        if scalars:
            seen: dict[Any, int] = {}
            for i, option in enumerate(options):
                first = seen.setdefault(option, i)
                if first != i:
                    raise SpecError(
                        f"{where}.$choice[{i}]",
                        f"{_kind(option)} equals option [{first}] ({_kind(options[first])}) as Optuna compares "
                        "choices (==): list each value once",
                    )
        choice_pieces = (*pieces[:-1], pieces[-1] + ".$choice")
        nodes = tuple(
            self.compile(option, _child(choice_pieces, i), _option_role(role, option), depth + 2)
            for i, option in enumerate(options)
        )
        declared = Parameter(
            name=data.get("name") or _name(pieces),
            kind="choice",
            choices=tuple(options) if scalars else tuple(range(len(options))),
            options=tuple(copy.deepcopy(list(options))),
            where=where,
        )
        work = 1 + sum(node.work for node in nodes)
        layers = max(node.layers for node in nodes)
        node = _Choice(
            declared, None if "name" in data else pieces, nodes, scalars, role == _ITEM, work, layers
        )
        self.bounded(node, where)
        return node

    def repeat(self, body: Any, pieces: tuple[str, ...], role: str, depth: int) -> _Repeat:
        where = "".join(pieces) + ".$repeat"
        if role != _ITEM:
            raise SpecError(
                "".join(pieces),
                "a $repeat repeats layers, so it stands as an item of a 'layers' list "
                "(layers: [..., {$repeat: {times: 2, layers: [...]}}])",
            )
        if not isinstance(body, Mapping):
            raise SpecError(where, f"expected an object with 'times' and 'layers', got {_kind(body)}")
        for key in body:
            if key not in _REPEAT_KEYS:
                raise SpecError(
                    f"{where}.{key}",
                    f"unknown key{_closest(key, _REPEAT_KEYS)}; a $repeat takes 'times', 'layers' and 'shared'",
                )
        for key in ("times", "layers"):
            if key not in body:
                raise SpecError(
                    f"{where}.{key}", "missing: a $repeat takes 'times' (how many) and 'layers' (the block)"
                )
        shared = body.get("shared", False)
        if not isinstance(shared, bool):
            raise SpecError(f"{where}.shared", f"expected true or false, got {_kind(shared)}")
        block = body["layers"]
        if not isinstance(block, (list, tuple)) or not block:
            raise SpecError(f"{where}.layers", f"expected a non-empty list of layers, got {_kind(block)}")
        times, most = self.times(body["times"], (*pieces[:-1], pieces[-1] + ".$repeat.times"), depth)
        if shared:
            block_pieces = (*pieces[:-1], pieces[-1] + ".$repeat.layers")
        else:
            block_pieces = (*pieces[:-1], pieces[-1] + ".$repeat", ".layers")
        compiled = self.compile(block, block_pieces, _LAYERS, depth + 2)
        assert isinstance(compiled, _List)
        node = _Repeat(
            times, compiled, shared, most, times.work + most * compiled.work, most * compiled.layers
        )
        self.bounded(node, "".join(pieces))
        return node

    def times(self, data: Any, pieces: tuple[str, ...], depth: int) -> tuple[_Node, int]:
        """The times of a repeat, and the most it can be."""
        where = "".join(pieces)
        expected = f"expected a number of repetitions (0 to {MAX_REPEAT:,}) or an $int or $choice of them"
        if isinstance(data, int) and not isinstance(data, bool):
            node: _Node = _Constant(data)
            values: Sequence[Any] = (data,)
        elif isinstance(data, Mapping) and ("$int" in data or "$choice" in data):
            node = self.compile(data, pieces, _VALUE, depth)
            assert isinstance(node, _Marker)
            parameter = node.declared
            if parameter.kind == "choice" and not all(
                isinstance(option, int) and not isinstance(option, bool) for option in parameter.options
            ):
                raise SpecError(f"{where}.$choice", f"{expected}, got {short_repr(list(parameter.options))}")
            values = parameter.options if parameter.kind == "choice" else (parameter.low, parameter.high)
        else:
            raise SpecError(where, f"{expected}, got {_kind(data)}")
        low, high = min(values), max(values)
        if low < 0:
            raise SpecError(where, f"a block repeats 0 times or more, got {low:,}")
        if high > MAX_REPEAT:
            raise SpecError(
                where, f"a $repeat of up to {high:,} times; it repeats at most {MAX_REPEAT:,} times"
            )
        return node, high
