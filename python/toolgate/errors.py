"""The exceptions toolgate raises.

Every error the engine reports is a :class:`ToolgateError`. A policy, tag or
tool file that does not load raises :class:`LoadError`, whose
``diagnostics`` locate each problem (``file``, ``line``, ``column``,
``message``, ``help``, and ``text``: ``file:line:column: message``); an input
that the engine refuses (a wrong type, an undeclared stage, a tool that is not
in the catalog) raises :class:`InputError`, also a :class:`ValueError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Sequence

if TYPE_CHECKING:  # pragma: no cover
    from ._toolgate import Diagnostic

__all__ = ["ToolgateError", "LoadError", "InputError", "UnknownToolError"]


class ToolgateError(Exception):
    """Base class of every toolgate error."""


class LoadError(ToolgateError):
    """The policy, the tags or the tools did not load.

    ``str(error)`` lists every problem as ``file:line:column: message``, one a
    line; ``error.diagnostics`` holds them as fields.
    """

    diagnostics: "list[Diagnostic]"

    def __init__(self, message: str, diagnostics: "Sequence[Diagnostic]" = ()) -> None:
        super().__init__(message)
        self.diagnostics = list(diagnostics)


class InputError(ToolgateError, ValueError):
    """An input the engine refuses, with the JSON path of the bad value."""


class UnknownToolError(ToolgateError, KeyError):
    """A tool name that is not in the catalog (with a did-you-mean)."""

    tool: str
    suggestion: Optional[str]

    def __init__(self, message: str, tool: str = "", suggestion: Optional[str] = None) -> None:
        super().__init__(message)
        self.tool = tool
        self.suggestion = suggestion

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""
