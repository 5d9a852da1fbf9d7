"""CLI commands as plugin data: ``torchx <name> ...`` subcommands, from any plugin.

A plugin adds a command in its ``torchx_register_commands`` hook::

    @hookimpl
    def torchx_register_commands(commands: CommandRegistry) -> None:
        commands.add("hello", "say hello", configure=add_arguments, run=hello)

``configure`` adds the command's arguments to its ``argparse`` parser;
``run`` receives the parsed namespace and returns the exit status.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from torchx.core._registry import RegistryConflict, registering_plugin

__all__ = ["Command", "CommandRegistry"]


@dataclass(frozen=True)
class Command:
    """One subcommand: its name, one line of help, and how to set it up and run it."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    plugin: str


class CommandRegistry:
    """The subcommands of ``torchx``, in registration order; names are unique."""

    def __init__(self) -> None:
        self._commands: dict[str, Command] = {}
        self.conflicts: list[RegistryConflict] = []

    def add(
        self,
        name: str,
        help: str,
        *,
        configure: Callable[[argparse.ArgumentParser], None],
        run: Callable[[argparse.Namespace], int],
    ) -> None:
        """Add ``torchx <name>``; a name already taken is not replaced (a plugin warning)."""
        plugin = registering_plugin()
        owner = self._commands.get(name)
        if owner is not None:
            self.conflicts.append(RegistryConflict(name, owner.plugin, plugin))
            return
        self._commands[name] = Command(name, help, configure, run, plugin)

    def __iter__(self) -> Iterator[Command]:
        return iter(self._commands.values())

    def get(self, name: str) -> Command | None:
        return self._commands.get(name)
