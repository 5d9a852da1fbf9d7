"""Architecture search as data: search spaces written in TorchX specs.

``torchx.tune.load_space("space.yaml")`` reads a spec whose values may be search
markers (``$int``, ``$float``, ``$choice``, ``$repeat``: see :mod:`torchx.tune._space`
for the syntax); ``space.sample(trial)`` gives a plain spec for an Optuna trial and
``space.size()`` how many architectures the space holds; :func:`search` runs an
Optuna study over a space, each candidate checked for free first (:func:`check`).

Optuna and SQLAlchemy are imported with the first of the names that use them
(:func:`search`, :class:`SearchResult`, :class:`TrialTimeoutError`, :func:`save_weights`), not by ``import
torchx.tune``: the ``torchx`` command imports this package to register its commands.
"""

from typing import TYPE_CHECKING

from torchx.tune._checks import Check as Check
from torchx.tune._checks import Constraints as Constraints
from torchx.tune._checks import check as check
from torchx.tune._counting import MAX_COUNT_STEPS as MAX_COUNT_STEPS
from torchx.tune._counting import MAX_SPACE_SIZE as MAX_SPACE_SIZE
from torchx.tune._space import MAX_FLOAT_STEPS as MAX_FLOAT_STEPS
from torchx.tune._space import MAX_MARKER_INT as MAX_MARKER_INT
from torchx.tune._space import MAX_REPEAT as MAX_REPEAT
from torchx.tune._space import Parameter as Parameter
from torchx.tune._space import Space as Space
from torchx.tune._space import Trial as Trial
from torchx.tune._space import load_space as load_space
from torchx.tune._space import parse_space as parse_space
from torchx.tune._version import __version__ as __version__

if TYPE_CHECKING:
    from torchx.tune._search import SearchResult as SearchResult
    from torchx.tune._search import TrialTimeoutError as TrialTimeoutError
    from torchx.tune._search import search as search
    from torchx.tune._weights import save_weights as save_weights

__all__ = [
    "MAX_COUNT_STEPS",
    "MAX_FLOAT_STEPS",
    "MAX_MARKER_INT",
    "MAX_REPEAT",
    "MAX_SPACE_SIZE",
    "Check",
    "Constraints",
    "Parameter",
    "SearchResult",
    "Space",
    "Trial",
    "TrialTimeoutError",
    "__version__",
    "check",
    "load_space",
    "parse_space",
    "save_weights",
    "search",
]

_WITH_OPTUNA = {
    "SearchResult": "_search",
    "TrialTimeoutError": "_search",
    "search": "_search",
    "save_weights": "_weights",
}
"""The names whose modules import Optuna, by module: imported on first use."""


def __getattr__(name: str) -> object:
    module = _WITH_OPTUNA.get(name)
    if module is None:
        raise AttributeError(f"module 'torchx.tune' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"torchx.tune.{module}"), name)
    globals()[name] = value
    return value
