"""Counting a space's architectures without enumerating them (:meth:`Space.size`).

Samples are counted by what they give the *tied* parameters (a name on several
markers): a :class:`Tally` holds, for each combination of tied values still to be
matched against markers not yet counted, how many samples give it. It keeps few:

- a tied name whose value shapes nothing else (a number, a choice among options that
  hold no marker) is recorded as sampled, and its values multiplied in once;
- a name is summed out as soon as its last marker is counted;
- tables that share no tied name stay apart (a product), so names used in turn
  (``a b a b``) do not multiply into each other's combinations.

Names tied under independent choices can still need exponentially many combinations
(counting them is #P-hard in general), so counting is bounded: past MAX_COUNT_STEPS
steps it raises :class:`Tangled`, and the space is counted again with every tied name
held at one value (``fixed``), which gives a lower bound. Counts stop at MAX_SPACE_SIZE.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from torchx.tune._space import Parameter

MAX_SPACE_SIZE = 10**4000
"""The largest size counted exactly: counts stop there, so no product costs more than
multiplying two such numbers, and every size can be printed (Python prints 4,300 digits)."""

MAX_COUNT_STEPS = 2**21
"""Most steps (rows of tables handled, times the names in them) counting a space takes
beyond :data:`STEPS_PER_MARKER` per marker of a tied name: under a second."""

STEPS_PER_MARKER = 8
"""What each marker of a tied name may take: twice what one takes when no other tied name
is in its way, so spaces of many such markers are counted exactly."""

_Key = frozenset[tuple[str, Any]]
"""The values a sample gives the tied names it asks (a name it does not ask is absent)."""
_NONE: _Key = frozenset()
_SAMPLED = "<sampled>"
"""The value in a key of a name whose value shapes nothing: only whether it was asked matters."""


class Tangled(Exception):
    """Counting exactly would take more than its steps (see MAX_COUNT_STEPS)."""


def times(a: int, b: int) -> int:
    """``a * b``, at most MAX_SPACE_SIZE (multiplied only when the product may be smaller)."""
    if a and b and a.bit_length() + b.bit_length() > MAX_SPACE_SIZE.bit_length() + 1:
        return MAX_SPACE_SIZE
    return min(a * b, MAX_SPACE_SIZE)


def plus(a: int, b: int) -> int:
    return min(a + b, MAX_SPACE_SIZE)


def values(parameter: Parameter) -> Sequence[Any]:
    """The values of a discrete parameter that shapes a space (a choice, or the times of a repeat)."""
    if parameter.kind == "choice":
        return parameter.choices
    assert (
        isinstance(parameter.low, int) and isinstance(parameter.high, int) and isinstance(parameter.step, int)
    )
    return range(parameter.low, parameter.high + 1, parameter.step)


class _Table(NamedTuple):
    """Samples counted by the values they give ``names``: a number per key."""

    names: frozenset[str]
    rows: dict[_Key, int]


def _distinct(tables: Iterable[_Table]) -> list[_Table]:
    return list({id(table): table for table in tables}.values())


class Tally:
    """Samples counted: ``scale`` times the product of tables over disjoint names
    (``tables`` maps each name to its table)."""

    __slots__ = ("scale", "tables")

    def __init__(self, scale: int = 1, tables: dict[str, _Table] | None = None) -> None:
        self.scale = scale
        self.tables = {} if tables is None else tables

    @classmethod
    def of(cls, rows: dict[_Key, int]) -> Tally:
        names = frozenset(name for key in rows for name, _ in key)
        if not names:
            return cls(rows[_NONE])
        return cls(1, dict.fromkeys(names, _Table(names, rows)))

    def copy(self) -> Tally:
        return Tally(self.scale, dict(self.tables))

    def distinct(self) -> list[_Table]:
        return _distinct(self.tables.values())


class Counting:
    """One count of a space: which names are tied and which shape the rest (from the
    census), where each tied name was first met, and the steps taken.

    Nodes count in the order the census visited them, and every marker counted was
    visited, so a name whose markers have all been counted has ``seen == occurrences``.
    """

    def __init__(
        self,
        parameters: Mapping[str, Parameter],
        occurrences: Mapping[str, int],
        shaping: set[str],
        *,
        fixed: bool = False,
    ) -> None:
        self.parameters = parameters
        self.tied = {name: count for name, count in occurrences.items() if count > 1}
        self.shaping = shaping
        self.fixed = fixed
        self.clock = 0
        """How many markers of tied names have been counted: where a node starts."""
        self.steps = 0
        self.budget = MAX_COUNT_STEPS + STEPS_PER_MARKER * sum(self.tied.values())
        self._seen: dict[str, int] = {}
        self._first: dict[str, int] = {}
        self._finished: list[tuple[int, str]] = []
        """Names whose markers have all been counted, latest first met on top."""

    def shapes(self, name: str) -> bool:
        """Whether the value of ``name`` decides what else is sampled."""
        return name in self.shaping

    def parameter(self, name: str) -> Tally:
        """The samples of a marker of ``name`` with nothing under it."""
        if name not in self.tied:
            return Tally(self.parameters[name].size or 0)
        if name in self.shaping:
            return Tally.of(dict.fromkeys(self.branches(name).values(), 1))
        self._occur(name)
        return Tally() if self.fixed else Tally.of({frozenset({(name, _SAMPLED)}): 1})

    def branches(self, name: str) -> dict[Any, _Key]:
        """The values a marker of ``name`` that shapes what is under it is counted at,
        each with the key of its samples."""
        counted = values(self.parameters[name])
        if name not in self.tied:
            return dict.fromkeys(counted, _NONE)
        self._occur(name)
        if self.fixed:
            return {counted[0]: _NONE}
        return {value: frozenset({(name, value)}) for value in counted}

    def _occur(self, name: str) -> None:
        first = self._first.setdefault(name, self.clock)
        self.clock += 1
        seen = self._seen[name] = self._seen.get(name, 0) + 1
        if seen == self.tied[name]:
            heapq.heappush(self._finished, (-first, name))

    def join(self, a: Tally, b: Tally) -> Tally:
        """The samples of two parts sampled together (both tallies are used up)."""
        if len(a.tables) < len(b.tables):
            a, b = b, a
        a.scale = times(a.scale, b.scale)
        for table in b.distinct():
            for other in _distinct(a.tables[name] for name in table.names if name in a.tables):
                table = self._product(other, table)
            a.tables.update(dict.fromkeys(table.names, table))
        return a

    def either(self, parts: Iterable[Tally]) -> Tally:
        """The samples of any one of ``parts`` (told apart by a parameter's value)."""
        rows: dict[_Key, int] = {}
        for part in parts:
            for key, count in self._rows(part).items():
                rows[key] = plus(rows.get(key, 0), count)
        return Tally.of(rows)

    def settle(self, tally: Tally, start: int) -> Tally:
        """``tally`` with the names summed out whose markers have all been counted,
        the first at ``start`` or later (so none stands outside what ``tally`` counts)."""
        done = set()
        while self._finished and -self._finished[0][0] >= start:
            done.add(heapq.heappop(self._finished)[1])
        for table in _distinct(tally.tables[name] for name in done if name in tally.tables):
            kept = table.names - done
            rows = self._sum_out(table, done)
            for name in table.names:
                del tally.tables[name]
            if kept:
                tally.tables.update(dict.fromkeys(kept, _Table(kept, rows)))
            else:
                tally.scale = times(tally.scale, rows[_NONE])
        return tally

    def total(self, tally: Tally) -> int:
        """The number of samples in ``tally``."""
        total = tally.scale
        for table in tally.distinct():
            total = times(total, self._sum_out(table, table.names)[_NONE])
        return total

    def _sum_out(self, table: _Table, names: Iterable[str]) -> dict[_Key, int]:
        """The rows of ``table`` without ``names``: a name that shapes nothing counts its values there."""
        names = set(names)
        self._spend(len(table.rows) * len(table.names))
        rows: dict[_Key, int] = {}
        for key, count in table.rows.items():
            for name, _ in key:
                if name in names and name not in self.shaping:
                    count = times(count, self.parameters[name].size or 0)
            kept = frozenset(item for item in key if item[0] not in names)
            rows[kept] = plus(rows.get(kept, 0), count)
        return rows

    def _product(self, a: _Table, b: _Table) -> _Table:
        """The pairs of rows of ``a`` and ``b`` that agree on the names both ask, joined
        (paired through the names every row of both holds)."""
        names = a.names | b.names
        self._spend((len(a.rows) + len(b.rows)) * len(names))
        indexed = a.names & b.names
        for key in (*a.rows, *b.rows):
            indexed &= _names(key)
        by_values: dict[_Key, list[tuple[_Key, int]]] = {}
        for key, count in b.rows.items():
            by_values.setdefault(_only(key, indexed), []).append((key, count))
        rows: dict[_Key, int] = {}
        for key, count in a.rows.items():
            given = dict(key)
            pairs = by_values.get(_only(key, indexed), [])
            self._spend(len(pairs) * len(names))
            for other, other_count in pairs:
                if all(given.get(name, value) == value for name, value in other):
                    joined = key | other
                    rows[joined] = plus(rows.get(joined, 0), times(count, other_count))
        return _Table(names, rows)

    def _rows(self, tally: Tally) -> dict[_Key, int]:
        """Every row of ``tally`` in one table (its tables multiplied out)."""
        rows: dict[_Key, int] = {_NONE: tally.scale}
        names = 0
        for table in tally.distinct():
            names += len(table.names)
            self._spend(len(rows) * len(table.rows) * names)
            rows = {
                key | other: times(count, other_count)
                for key, count in rows.items()
                for other, other_count in table.rows.items()
            }
        return rows

    def _spend(self, steps: int) -> None:
        self.steps += steps
        if self.steps > self.budget:
            raise Tangled


def _names(key: _Key) -> frozenset[str]:
    return frozenset(name for name, _ in key)


def _only(key: _Key, names: frozenset[str]) -> _Key:
    return frozenset(item for item in key if item[0] in names)
