"""Counts that grow with the dynamic dims of a summary's inputs.

A summary with a dynamic batch and sequence counts its multiply-adds and
tensor sizes on fake tensors whose dynamic dims are symbols (torch's
``ShapeEnv``, as ``torch.export`` uses): ``N`` for a dynamic dim 0 (the batch),
``T`` for every other dynamic dim (a position). Each op's count is then an
exact expression in ``N`` and ``T`` (attention's is ``c * N * T**2``), not a
fit over probe sizes, so a quadratic term is never shown as a linear one.
:class:`Scaling` is such an expression when it is a polynomial. A strided
layer rounds ``T / stride`` down, which is a polynomial where ``T`` is a
multiple of the stride: there the count is exact (``T^2/4`` for a map
strided by 2), and :attr:`Scaling.multiple` says which multiples.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, NamedTuple

__all__ = ["Scaling", "Symbols", "symbols"]


class Symbols(NamedTuple):
    """The symbols counts are written in (sympy's, made on first use: sympy is
    imported where a summary counts on symbols, not by ``import torchx``)."""

    batch: Any
    """``N``: the size of a dynamic dim 0 (the batch)."""
    position: Any
    """``T``: the size of every other dynamic dim (positions of a sequence, of a feature map)."""
    steps: Any
    """``U = T / multiple``: a count in it has no rounding left."""


@functools.cache
def symbols() -> Symbols:
    """``N``, ``T`` and ``U`` (see :class:`Symbols`)."""
    import sympy  # type: ignore[import-untyped]

    return Symbols(*(sympy.Symbol(name, positive=True, integer=True) for name in "NTU"))


_ROUNDS = 4
"""How many times nested roundings may ask for a larger multiple."""


@dataclass(frozen=True)
class Scaling:
    """``sum(coefficient * N**n * T**t)`` over ``terms``, ``N`` the batch size
    (a dynamic dim 0) and ``T`` the size of every other dynamic dim; exact
    where ``T`` is a multiple of :attr:`multiple`. Ordered by how large it is
    for large dims: the highest power of ``T`` first, then of ``N``, then
    the coefficients from the leading term down."""

    terms: tuple[tuple[int, int, int | Fraction], ...]
    """``(n, t, coefficient)``, nonzero coefficients, by increasing powers."""
    multiple: int = 1
    """Where ``T`` is a multiple of it the count is exact (1: everywhere)."""

    @classmethod
    def of(cls, expression: Any) -> Scaling | None:
        """The polynomial ``expression`` (in ``N`` and ``T``, see :func:`symbols`)
        is where ``T`` is a multiple that clears its roundings down (``floor``),
        or None where it is none (another function or symbol, a fraction of a
        count, a rounding no multiple of ``T`` clears)."""
        import sympy

        multiple = _multiple(expression)
        if multiple is None:
            return None
        batch, position, steps = symbols()
        try:
            polynomial = sympy.Poly(
                sympy.expand(expression.xreplace({position: multiple * steps})), batch, steps
            )
        except sympy.PolynomialError:
            return None
        if not all(coefficient.is_Integer for coefficient in polynomial.coeffs()):
            return None
        terms = (
            (n, t, _number(Fraction(int(coefficient), multiple**t)))
            for (n, t), coefficient in zip(polynomial.monoms(), polynomial.coeffs(), strict=True)
        )
        return cls(tuple(sorted(term for term in terms if term[2])), multiple)

    @property
    def position_degree(self) -> int:
        """The highest power of ``T``: how fast this grows with the positions."""
        return max((t for _, t, _ in self.terms), default=0)

    @property
    def batch_degree(self) -> int:
        """The highest power of ``N``."""
        return max((n for n, _, _ in self.terms), default=0)

    def at(self, batch: int, position: int) -> int:
        """The count for a batch of ``batch`` and ``position`` positions (a multiple of :attr:`multiple`)."""
        if position % self.multiple:
            raise ValueError(f"{self} is exact where T is a multiple of {self.multiple}, not at T={position}")
        return int(sum(coefficient * batch**n * position**t for n, t, coefficient in self.terms))

    def __add__(self, other: Scaling | int) -> Scaling:
        """The sum, exact where ``T`` is a multiple of both."""
        if isinstance(other, int):
            other = Scaling(((0, 0, other),) if other else ())
        sums: dict[tuple[int, int], int | Fraction] = {}
        for n, t, coefficient in (*self.terms, *other.terms):
            sums[n, t] = _number(sums.get((n, t), 0) + coefficient)
        terms = tuple(sorted((n, t, coefficient) for (n, t), coefficient in sums.items() if coefficient))
        return Scaling(terms, math.lcm(self.multiple, other.multiple))

    __radd__ = __add__

    def __lt__(self, other: Scaling) -> bool:
        """Whether ``other`` is larger for large dims (its leading term over this one's)."""
        differences = {(t, n): coefficient for n, t, coefficient in other.terms}
        for n, t, coefficient in self.terms:
            differences[t, n] = differences.get((t, n), 0) - coefficient
        leading = max((monomial for monomial, difference in differences.items() if difference), default=None)
        return leading is not None and differences[leading] > 0

    def __gt__(self, other: Scaling) -> bool:
        return other < self

    def __str__(self) -> str:
        """``1,024*N*T + 32*N*T^2``; a fraction reads ``3/8*N*T^2``."""
        return " + ".join(_term(*term) for term in self.terms) or "0"

    def to_data(self) -> dict[str, int | float]:
        """``{"N*T": 1024, "N*T^2": 32}``: each monomial's coefficient (``"1"``: a constant)."""
        return {
            _monomial(n, t) or "1": coefficient if isinstance(coefficient, int) else float(coefficient)
            for n, t, coefficient in self.terms
        }


def _multiple(expression: Any) -> int | None:
    """A multiple of ``T`` that clears every ``floor`` in ``expression`` (the
    strides it divides ``T`` by; 1 without any), or None where none does (a
    floor of the batch alone)."""
    import sympy

    _, position, steps_symbol = symbols()
    multiple = 1
    for _ in range(_ROUNDS):
        floors = sympy.expand(expression.xreplace({position: multiple * steps_symbol})).atoms(sympy.floor)
        if not floors:
            return multiple
        innermost = [floor.args[0] for floor in floors if not floor.args[0].has(sympy.floor)]
        try:
            steps = [sympy.Poly(argument, steps_symbol) for argument in innermost]
        except sympy.PolynomialError:
            return None
        denominators = {sympy.denom(coefficient) for step in steps for (k,), coefficient in step.terms() if k}
        if not all(denominator.is_Integer for denominator in denominators):
            return None
        factor = math.lcm(*map(int, denominators))
        if factor == 1:
            return None
        multiple *= factor
    return None


def _number(value: int | Fraction) -> int | Fraction:
    """``value``, an int where it is whole."""
    return int(value) if isinstance(value, int) or value.denominator == 1 else value


def _monomial(n: int, t: int) -> str:
    return "*".join(f"{name}^{power}" if power > 1 else name for name, power in (("N", n), ("T", t)) if power)


def _term(n: int, t: int, coefficient: int | Fraction) -> str:
    number = (
        f"{coefficient:,}"
        if isinstance(coefficient, int)
        else f"{coefficient.numerator:,}/{coefficient.denominator:,}"
    )
    monomial = _monomial(n, t)
    if not monomial:
        return number
    return monomial if coefficient == 1 else f"{number}*{monomial}"
