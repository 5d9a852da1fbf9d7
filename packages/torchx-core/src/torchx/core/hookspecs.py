"""Hook specifications: the extension points a TorchX plugin may implement.

A plugin is a module (or object) with functions decorated by ``hookimpl`` whose
names match the specs below. Plugins are found through the ``torchx.plugins``
entry-point group; TorchX's own distributions register that way too.

Hooks run at discovery and build time only, never in a built model's forward.
Specs only grow: new arguments may be added, none is ever renamed. An
implementation takes any subset of its spec's arguments, by name, and is
called with just those, so one written before an argument was added keeps
working. Each plugin's implementation is called on its own (a plugin that
fails is reported and the others go on), so hook wrappers
(``hookimpl(wrapper=True)``, ``hookwrapper=True``) are refused.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    import torch
    from torch import nn

    from torchx.core._commands import CommandRegistry
    from torchx.core._placement import Placement
    from torchx.core._registry import LayerRegistry, MigrationRegistry

__all__ = ["hookimpl", "hookspec"]

PROJECT_NAME = "torchx"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


# -- discovery --------------------------------------------------------------


@hookspec
def torchx_register_layers(registry: LayerRegistry) -> None:
    """Add layer classes, their aliases and façade names to the registry.

    Called once per plugin, the first time the registry is needed (a spec is
    loaded, or a name missing from ``torchx.layers`` is looked up).

    :param registry: the registry to add to; see
        :meth:`~torchx.core.LayerRegistry.register` and
        :meth:`~torchx.core.LayerRegistry.export`.
    """


@hookspec
def torchx_register_migrations(migrations: MigrationRegistry) -> None:
    """Add the spec migrations of this plugin's own layer types.

    Called once per plugin, after every plugin registered its layers. A
    layer whose ``spec_version`` is N needs a migration from each version
    below N that specs may have been written at.

    :param migrations: the registry to add to; see
        :meth:`~torchx.core.MigrationRegistry.add`.
    """


# -- shape inference --------------------------------------------------------


@hookspec(firstresult=True)
def torchx_infer_output(module: nn.Module, inputs: tuple[torch.Tensor, ...]) -> Any | None:
    """Compute ``module``'s output for meta-device ``inputs`` without running it.

    Consulted only when running ``module`` on meta tensors fails because one
    of its ops has no meta kernel; before TorchX falls back to a real CPU run.

    :param module: the module whose output is wanted (its parameters may live
        on any device).
    :param inputs: the positional inputs, as tensors on the meta device.
    :return: the output as meta tensors (any nesting of tuples, lists and
        dicts), or ``None`` when this plugin does not handle ``module``.

    Stops at the first non-None result.
    """


# -- devices ------------------------------------------------------------------


@hookspec(firstresult=True)
def torchx_resolve_device(device_id: object) -> Placement | None:
    """Resolve ``device_id`` (what the user passed to ``torchx.device_scope``).

    Called once per distinct id (results are cached), the first time a scope
    with that id is made. Backends registered later are asked first, so a
    plugin can take over ids that torchx-device also accepts.

    :param device_id: the id as given: an int, a string, a list of ints, a
        ``torch.device``, or anything a backend chooses to accept.
    :return: the validated :class:`~torchx.core.Placement`, or
        ``None`` when this backend does not handle ids of this form. Raise
        :class:`~torchx.core.DeviceError` for an id of this backend's
        form that is malformed, and
        :class:`~torchx.core.DeviceUnavailableError` for a device that
        is not present (``fallback=`` applies to that one only).

    Stops at the first non-None result.
    """


# -- model files ----------------------------------------------------------------


@hookspec(firstresult=True)
def torchx_read_model(path: str) -> nn.Module | None:
    """Read a model file of a format this plugin knows (torchx-keras reads ``.keras``).

    Asked by the command line wherever it takes a spec (``torchx summary
    model.keras``), for a file that is neither a spec nor a TorchX checkpoint.

    :param path: the file, as the user gave it.
    :return: the model (a TorchX layer, built or not), or ``None`` when this plugin does not read files like
        ``path``. Raise :class:`~torchx.core.TorchXError` (a
        :class:`~torchx.core.SpecError`) for a file of this plugin's format
        that is wrong: that is the answer, and no other plugin is asked.

    Stops at the first non-None result.
    """


# -- the command line ---------------------------------------------------------


@hookspec
def torchx_register_commands(commands: CommandRegistry) -> None:
    """Add subcommands to the ``torchx`` command line.

    Called once per plugin, the first time the command line starts.

    :param commands: the registry to add to; see
        :meth:`~torchx.core.CommandRegistry.add`.
    """
