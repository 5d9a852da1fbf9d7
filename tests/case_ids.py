"""Test ids that name a case by its value, for ``parametrize(..., ids=case_id)``.

pytest names a value it cannot print (a tuple, a tensor, an exception) by the
argument and the case's index (``shape0``, ``error1``), an id that changes when
a case is added above it. ``case_id`` names those values by what they are; a
case whose values say nothing short (a lambda, a dict) gets
``pytest.param(..., id=...)`` instead. ``tests/test_test_ids.py`` keeps every
suite free of position-based ids.

Every test folder can import this module: the root pyproject puts ``tests`` on
``sys.path`` for all suites.
"""

from __future__ import annotations

import torch


def case_id(value: object) -> str | None:
    """A short id for ``value``, or None to leave it to pytest (strings,
    numbers, None, bools, enums, classes and named functions it names itself).

    ``(2, 4)`` -> ``(2,4)``, ``[0, 3]`` -> ``[0,3]``, ``torch.float64`` ->
    ``float64``, ``torch.device("cuda", 2)`` -> ``device(cuda:2)`` (not the
    string ``cuda:2``), ``torch.tensor([5, 2])`` -> ``tensor[5,2]``,
    ``OSError(28, "...")`` -> ``OSError``.
    """
    if isinstance(value, tuple | list) and all(_plain(item) for item in value):
        return repr(value).replace(" ", "")
    if isinstance(value, torch.dtype):
        return str(value).removeprefix("torch.")
    if isinstance(value, torch.device):
        return f"device({value})"
    if isinstance(value, torch.Tensor):
        return "tensor" + repr(value.tolist()).replace(" ", "")
    if isinstance(value, BaseException):
        return type(value).__name__
    return None


def _plain(value: object) -> bool:
    return (
        value is None
        or isinstance(value, int | float | str)
        or (isinstance(value, tuple | list) and all(_plain(item) for item in value))
    )
