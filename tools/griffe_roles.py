"""A griffe extension for the docs site: the Sphinx roles TorchX's docstrings use
(``:func:`build```, ``:class:`~torchx.core.Layer```) shown as code, as
Python-Markdown would otherwise print them as written (``~`` keeps the last part)."""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:func|class|meth|data|mod|attr|exc|obj):`(~?)([^`]+)`")


def _as_code(match: re.Match[str]) -> str:
    short, target = match.group(1), match.group(2)
    return f"`{target.rpartition('.')[2] if short else target}`"


class SphinxRoles(griffe.Extension):
    """Rewrites each docstring's roles when griffe loads its object."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _ROLE.sub(_as_code, obj.docstring.value)
