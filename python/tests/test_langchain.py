"""The LangChain/LangGraph adapters against the real packages: the tools to
bind for the latest messages, and a tool gated inside a LangGraph ToolNode."""

from __future__ import annotations



from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode

from conftest import REPO
from toolgate import Engine
from toolgate.adapters.langchain import engine_for_tools, gate_tool, select_input, select_tools

ran: list[str] = []


@tool
def list_tables() -> str:
    """List all tables in the SQLite database."""
    return "users"


@tool
def read_query(query: str) -> str:
    """Execute a SELECT query on the SQLite database."""
    return "[]"


@tool
def get_weather(city: str) -> str:
    """Get the weather forecast for a city."""
    return "sunny"


@tool
def send_email(to: str, body: str) -> str:
    """Send an email message to a recipient."""
    return "sent"


@tool
def run_command(command: str) -> str:
    """Run a shell command."""
    ran.append(command)
    return "done"


TOOLS = [list_tables, read_query, get_weather, send_email]


def test_select_tools_binds_what_the_messages_need() -> None:
    # the selection policy (the MCP proxy's) is the one for auto-tagged catalogs
    engine = engine_for_tools(TOOLS, policy=str(REPO / "policies" / "selection.toml"))
    assert sorted(engine.tool_names) == sorted(t.name for t in TOOLS)
    messages = [HumanMessage("what's the weather?"),
                AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "Oslo"}, "id": "1"}]),
                ToolMessage("sunny", tool_call_id="1"),
                HumanMessage("now list the tables of the sqlite database and run a select query")]
    inputs = select_input(engine, messages)
    assert inputs["message"].startswith("now list the tables")
    assert inputs["context"]["recent_tool_calls"] == ["get_weather"]
    assert inputs["usage"] == {"call_counts": {"get_weather": 1}}
    chosen = select_tools(engine, TOOLS, messages)
    assert chosen, "nothing selected"
    assert all(t in TOOLS for t in chosen)
    names = [t.name for t in chosen]
    assert names == [n for n in engine.select(**inputs).active if n in names]
    assert "list_tables" in names and "read_query" in names
    assert "send_email" not in names
    # the session facts a caller adds are used
    with_stage = select_tools(engine, TOOLS, messages, context={"active_language": "sql"})
    assert {"list_tables", "read_query"} <= {t.name for t in with_stage}


def test_a_gated_tool_in_a_toolnode_runs_only_what_the_gate_allows() -> None:
    engine = Engine.load()
    gated = gate_tool(engine, run_command, name="shell.run_command")
    assert gated.name == "run_command" and gated.args == run_command.args
    graph = StateGraph(MessagesState)
    graph.add_node("tools", ToolNode([gated]))
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    node = graph.compile()
    ran.clear()
    calls = [{"name": "run_command", "args": {"command": "rm -rf /"}, "id": "c1"},
             {"name": "run_command", "args": {"command": "git status"}, "id": "c2"}]
    out = node.invoke({"messages": [AIMessage("", tool_calls=calls)]})
    msgs = {m.tool_call_id: m for m in out["messages"] if isinstance(m, ToolMessage)}
    assert ran == ["git status"]
    assert msgs["c2"].content == "done"
    denied = engine.check("shell.run_command", {"command": "rm -rf /"}).message
    assert denied in msgs["c1"].content
