"""toolgate for the OpenAI Agents SDK (``openai-agents``).

:func:`tool_filter` returns the callable that ``MCPServerStdio(...,
tool_filter=...)`` (any ``MCPServer``) accepts: the SDK calls it once per tool
of each ``list_tools`` request, and it answers from one
:meth:`toolgate.Engine.select` per request (the selection is computed for the
first tool of a request and reused while the session input is unchanged).

:func:`tool_guardrail` returns a ``ToolInputGuardrail`` for function tools
(``@function_tool(tool_input_guardrails=[...])``): each call is checked by
:meth:`toolgate.Engine.check`; ``allow`` lets it run, ``ask`` and ``deny``
reject it with the gate's message to the model (or raise, with
``on_reject="raise_exception"``). The SDK gives a guardrail no way to change
the arguments, so the coerced arguments of an ``allow`` are in the output
info only.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Literal, Mapping, Optional

from agents import ToolGuardrailFunctionOutput, ToolInputGuardrail, ToolInputGuardrailData
from agents.mcp import ToolFilterContext

from .. import Engine, Selection

__all__ = ["tool_filter", "tool_guardrail", "session_from_context"]

#: The keyword arguments of :meth:`toolgate.Engine.select`.
SELECT_KEYS = ("context", "message", "usage", "tools", "now")


def session_from_context(ctx: ToolFilterContext) -> dict[str, Any]:
    """The default session input: the run context's ``context`` object when it
    is a mapping (its ``context``, ``message``, ``usage``, ``now`` keys), or
    its ``toolgate`` attribute when that is one; else nothing (an empty
    session)."""
    user = getattr(ctx.run_context, "context", None)
    if not isinstance(user, Mapping):
        user = getattr(user, "toolgate", None)
    if not isinstance(user, Mapping):
        return {}
    return {k: user[k] for k in SELECT_KEYS if k in user and user[k] is not None}


def _catalog_name(engine: Engine, server: str, tool: str) -> Optional[str]:
    names = set(engine.tool_names)
    for name in (f"{server}.{tool}", tool):
        if name in names:
            return name
    return None


def tool_filter(
    engine: Engine,
    session: Callable[[ToolFilterContext], Mapping[str, Any]] = session_from_context,
    *,
    unknown: Literal["hide", "show"] = "hide",
) -> Callable[[ToolFilterContext, Any], bool]:
    """A dynamic ``tool_filter`` for the SDK's MCP servers.

    ``session(ctx)`` gives the select input of a request (default
    :func:`session_from_context`). A server's tool ``t`` is looked up in the
    engine's catalog as ``SERVER.t`` (the server's ``name``), then as ``t``;
    a tool the catalog lacks is hidden (``unknown="hide"``) or shown."""
    last: dict[str, Any] = {"key": None, "active": frozenset()}

    def selection(ctx: ToolFilterContext) -> frozenset[str]:
        inputs = dict(session(ctx))
        key = (id(ctx.run_context), json.dumps(inputs, sort_keys=True, default=str), engine.version)
        if last["key"] != key:
            sel: Selection = engine.select(**inputs)
            last["key"], last["active"] = key, frozenset(sel.active)
        return last["active"]

    def filter_tool(ctx: ToolFilterContext, tool: Any) -> bool:
        name = _catalog_name(engine, ctx.server_name, tool.name)
        if name is None:
            return unknown == "show"
        return name in selection(ctx)

    return filter_tool


def tool_guardrail(
    engine: Engine,
    *,
    tool_name: Optional[Callable[[str], str]] = None,
    session: Optional[Callable[[ToolInputGuardrailData], Optional[str]]] = None,
    on_reject: Literal["reject_content", "raise_exception"] = "reject_content",
    name: str = "toolgate",
) -> ToolInputGuardrail[Any]:
    """A tool input guardrail that runs :meth:`toolgate.Engine.check` on each
    call: ``tool_name`` maps the SDK's tool name to the catalog's (default: as
    is), ``session`` gives the audit session id of a call."""

    def check(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        called = data.context.tool_name
        catalog = tool_name(called) if tool_name else called
        args = data.context.tool_arguments or "{}"
        verdict = engine.check(catalog, args, session=session(data) if session else None)
        info = verdict.to_dict()
        if verdict.decision == "allow":
            return ToolGuardrailFunctionOutput.allow(output_info=info)
        if on_reject == "raise_exception":
            return ToolGuardrailFunctionOutput.raise_exception(output_info=info)
        return ToolGuardrailFunctionOutput.reject_content(verdict.message, output_info=info)

    return ToolInputGuardrail(guardrail_function=check, name=name)
