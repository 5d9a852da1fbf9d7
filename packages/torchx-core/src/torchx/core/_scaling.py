"""Counts that grow with the dynamic dims of a summary's inputs.

A summary with a dynamic batch and sequence counts its multiply-adds and
tensor sizes on fake tensors whose dynamic dims are symbols (torch's
``ShapeEnv``, as ``torch.export`` uses): ``N`` for a dynamic dim 0 (the batch),
``T`` for every other dynamic dim (a position). Each op's count is then an
exact expression in ``N`` and ``T`` (attention's is ``c * N * T**2``), not a
fit over probe sizes, so a quadratic term is never shown as a linear one.
:class:`Scaling` is such an expression when it is a polynomial.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sympy  # type: ignore[import-untyped]

__all__ = ["BATCH", "POSITION", "Scaling"]

BATCH = sympy.Symbol("N", positive=True, integer=True)
"""The size of a dynamic dim 0 (the batch)."""
POSITION = sympy.Symbol("T", positive=True, integer=True)
"""The size of every other dynamic dim (positions of a sequence, of a feature map)."""


@dataclass(frozen=True)
class Scaling:
    """``sum(coefficient * N**n * T**t)`` over ``terms``, ``N`` the batch size
    (a dynamic dim 0) and ``T`` the size of every other dynamic dim."""

    terms: tuple[tuple[int, int, int], ...]
    """``(n, t, coefficient)``, nonzero coefficients, by increasing powers."""

    @classmethod
    def of(cls, expression: Any) -> Scaling | None:
        """The polynomial ``expression`` (in :data:`BATCH` and :data:`POSITION`,
        integer coefficients), or None where it is not one (a floor division of
        a strided dim, another symbol)."""
        try:
            polynomial = sympy.Poly(sympy.expand(expression), BATCH, POSITION)
        except sympy.PolynomialError:
            return None
        if not all(coefficient.is_Integer for coefficient in polynomial.coeffs()):
            return None
        terms = (
            (n, t, int(coefficient))
            for (n, t), coefficient in zip(polynomial.monoms(), polynomial.coeffs(), strict=True)
        )
        return cls(tuple(sorted(term for term in terms if term[2])))

    @property
    def position_degree(self) -> int:
        """The highest power of ``T``: how fast this grows with the positions."""
        return max((t for _, t, _ in self.terms), default=0)

    @property
    def batch_degree(self) -> int:
        """The highest power of ``N``."""
        return max((n for n, _, _ in self.terms), default=0)

    def at(self, batch: int, position: int) -> int:
        """The count for a batch of ``batch`` and ``position`` positions."""
        return sum(coefficient * batch**n * position**t for n, t, coefficient in self.terms)

    def __str__(self) -> str:
        """``1,024*N*T + 32*N*T^2``."""
        return " + ".join(_term(*term) for term in self.terms) or "0"

    def to_data(self) -> dict[str, int]:
        """``{"N*T": 1024, "N*T^2": 32}``: each monomial's coefficient (``"1"``: a constant)."""
        return {_monomial(n, t) or "1": coefficient for n, t, coefficient in self.terms}


def _monomial(n: int, t: int) -> str:
    return "*".join(f"{name}^{power}" if power > 1 else name for name, power in (("N", n), ("T", t)) if power)


def _term(n: int, t: int, coefficient: int) -> str:
    monomial = _monomial(n, t)
    if not monomial:
        return f"{coefficient:,}"
    return monomial if coefficient == 1 else f"{coefficient:,}*{monomial}"
