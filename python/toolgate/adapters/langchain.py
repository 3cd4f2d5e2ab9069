"""toolgate for LangChain and LangGraph (``langchain-core``, ``langgraph``).

:func:`engine_for_tools` builds an engine over LangChain tools (through their
OpenAI form); :func:`select_tools` returns, for the latest messages, the tools
to bind (``model.bind_tools(select_tools(engine, tools, state["messages"]))``);
:func:`gate_tool` wraps a tool so that each invocation first goes through
:meth:`toolgate.Engine.check`: ``allow`` runs it with the coerced arguments,
``ask`` and ``deny`` return the gate's message to the model as the tool's
result (a ``ToolException``, handled), so a LangGraph ``ToolNode`` answers
with it.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import BaseTool, StructuredTool, ToolException
from langchain_core.utils.function_calling import convert_to_openai_tool

from .. import Engine, Selection

__all__ = ["engine_for_tools", "select_input", "select_tools", "gate_tool"]


def engine_for_tools(tools: Sequence[BaseTool], *, policy: Optional[str] = None) -> Engine:
    """An engine whose catalog is these tools (auto-tagged by the policy's
    ``[auto_tags]`` from their names, descriptions and schemas)."""
    return Engine.from_openai_tools([convert_to_openai_tool(t) for t in tools], policy=policy)


def _text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return " ".join(
        part if isinstance(part, str) else str(part.get("text", ""))
        for part in content
        if isinstance(part, (str, dict))
    )


def select_input(
    engine: Engine, messages: Sequence[BaseMessage], *, window: int = 5
) -> dict[str, Any]:
    """The select input of a conversation: ``message`` is the latest human
    message; ``context.recent_tool_calls`` the last ``window`` tool calls of
    the AI messages (catalog tools only, oldest first) and
    ``usage.call_counts`` their counts."""
    known = set(engine.tool_names)
    message = next((_text(m) for m in reversed(messages) if isinstance(m, HumanMessage)), None)
    calls = [
        c["name"]
        for m in messages
        if isinstance(m, AIMessage)
        for c in m.tool_calls
        if c.get("name") in known
    ]
    counts: dict[str, int] = {}
    for c in calls:
        counts[c] = counts.get(c, 0) + 1
    out: dict[str, Any] = {"context": {"recent_tool_calls": calls[-window:] if window else []}}
    if message is not None:
        out["message"] = message
    if counts:
        out["usage"] = {"call_counts": counts}
    return out


def select_tools(
    engine: Engine,
    tools: Sequence[BaseTool],
    messages: Sequence[BaseMessage],
    *,
    context: Optional[Mapping[str, Any]] = None,
    window: int = 5,
) -> list[BaseTool]:
    """The tools to bind for these messages: those of ``tools`` that the
    engine's selection makes active, in the selection's order (best first).
    ``context`` adds session facts (``conversation_stage``,
    ``active_language``, ...) to what the messages give."""
    inputs = select_input(engine, messages, window=window)
    if context:
        inputs["context"] = {**dict(context), **inputs["context"]}
    sel: Selection = engine.select(**inputs)
    by_name = {t.name: t for t in tools}
    return [by_name[n] for n in sel.active if n in by_name]


def gate_tool(engine: Engine, tool: BaseTool, *, name: Optional[str] = None) -> BaseTool:
    """``tool`` behind the call gate: the same name, description and argument
    schema; each call is checked as the catalog's ``name`` (default: the
    tool's name) first."""
    catalog = name or tool.name

    def verdict_args(kwargs: dict[str, Any]) -> dict[str, Any]:
        verdict = engine.check(catalog, kwargs)
        if verdict.decision != "allow":
            raise ToolException(verdict.message)
        return verdict.arguments

    def run(**kwargs: Any) -> Any:
        return tool.invoke(verdict_args(kwargs))

    async def arun(**kwargs: Any) -> Any:
        return await tool.ainvoke(verdict_args(kwargs))

    return StructuredTool.from_function(
        func=run,
        coroutine=arun,
        name=tool.name,
        description=tool.description,
        args_schema=tool.args_schema,
        handle_tool_error=True,
    )
