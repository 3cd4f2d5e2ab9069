"""toolgate from Python: which tools an AI agent sees, and whether a call may run.

The engine is the Rust crate, compiled into ``toolgate._toolgate``; this
package re-exports it with its exceptions (:mod:`toolgate.errors`) and the
framework adapters (:mod:`toolgate.adapters`).

>>> from toolgate import Engine
>>> engine = Engine.load()                        # the embedded policy and tags
>>> sel = engine.select(message="which tables does the sqlite database have?")
>>> "sqlite.list_tables" in sel.active
True
>>> engine.check("shell.run_command", {"command": "rm -rf /"}).decision
'deny'
"""

from ._toolgate import (
    Diagnostic,
    Engine,
    Finding,
    Selection,
    Session,
    Term,
    ToolResult,
    Verdict,
    WatchEvent,
    __version__,
)
from .errors import InputError, LoadError, ToolgateError, UnknownToolError

__all__ = [
    "Diagnostic",
    "Engine",
    "Finding",
    "InputError",
    "LoadError",
    "Selection",
    "Session",
    "Term",
    "ToolResult",
    "ToolgateError",
    "UnknownToolError",
    "Verdict",
    "WatchEvent",
    "__version__",
]
