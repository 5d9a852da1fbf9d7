"""``torchx``: build the parser from every plugin's commands, run one, map errors to exit codes."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import NoReturn

from torchx.cli._errors import USAGE, UsageError, described, one_line
from torchx.core import __version__
from torchx.core._commands import CommandRegistry
from torchx.core._errors import TorchXError
from torchx.core._plugins import current_plugins

__all__ = ["main"]

_MODEL_IS_WRONG = 1
_CLOSED_PIPE = 141
"""What a shell reports for a program that a closed pipe ended (128 + SIGPIPE)."""


class _Parser(argparse.ArgumentParser):
    """Reports bad arguments in one line, as every other error (argparse's own
    adds the usage, wrapped over several)."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _parser(commands: CommandRegistry) -> argparse.ArgumentParser:
    parser = _Parser(
        prog="torchx", description="TorchX: models from specs, with every inferable shape inferred."
    )
    parser.add_argument("--version", action="version", version=f"torchx {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks instead of one-line errors")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for command in commands:
        sub = subparsers.add_parser(command.name, help=command.help, description=command.help)
        sub.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
        command.configure(sub)
        sub.set_defaults(run=command.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``torchx`` with ``argv`` (default: the process's); returns the exit status."""
    try:
        try:
            return _main(argv)
        finally:
            if sys.stdout is not None:
                sys.stdout.flush()  # here, where a closed pipe can still be handled
    except BrokenPipeError:  # `torchx ... | head`, and head has quit: stop quietly
        _silence_stdout()
        return _CLOSED_PIPE


def _silence_stdout() -> None:
    """Point standard output at devnull, so that nothing written to the closed pipe,
    not even at interpreter exit, raises again (as Python's signal docs advise)."""
    try:
        stdout = sys.stdout.fileno()
    except (OSError, ValueError, AttributeError):  # not a real file (a test's capture): nothing to do
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, stdout)
    finally:
        os.close(devnull)


def _main(argv: Sequence[str] | None) -> int:
    commands = CommandRegistry()
    current_plugins().register_commands(commands)
    options = _parser(commands).parse_args(argv)
    try:
        with warnings.catch_warnings():
            if not options.debug:  # shown, once each, as one line: never raised as errors
                warnings.simplefilter("default")
                warnings.showwarning = _one_line_warning(options.command)
            status: int = options.run(options)
        return status
    except BrokenPipeError:  # `torchx ... | head`: main stops quietly
        raise
    except Exception as error:
        if options.debug:
            raise
        if isinstance(error, UsageError):
            print(f"torchx {options.command}: error: {one_line(str(error))}", file=sys.stderr)
            return USAGE
        if isinstance(error, TorchXError):
            print(f"torchx {options.command}: {described(error)}", file=sys.stderr)
            return _MODEL_IS_WRONG
        if isinstance(error, OSError):  # a file or device met on its way (its own inputs are checked first)
            print(f"torchx {options.command}: error: {_os_error(error)}", file=sys.stderr)
            return USAGE
        print(  # no traceback, never silent: its type and message
            f"torchx {options.command}: {described(error)} "
            "(an error TorchX did not expect: torchx --debug shows its traceback)",
            file=sys.stderr,
        )
        return _MODEL_IS_WRONG


def _os_error(error: OSError) -> str:
    """An OSError as its file and the system's words: ``model.yaml: Permission denied``."""
    reason = error.strerror or one_line(str(error)) or type(error).__name__
    return reason if error.filename is None else f"{error.filename}: {reason}"


def _one_line_warning(command: str) -> Callable[..., None]:
    """Warnings as the errors are shown: one line, without the source line."""

    def show(message: Warning | str, category: type[Warning], *args: object, **kwargs: object) -> None:
        print(f"torchx {command}: {category.__name__}: {message}", file=sys.stderr)

    return show


if __name__ == "__main__":
    sys.exit(main())
