"""The engine's API against the CLI: `select` is `toolgate eval`, `explain`
is `toolgate explain`, errors carry file:line:column as text and as fields."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

import toolgate
from conftest import REPO, SHARED, cli_json, run_cli
from toolgate import Engine, InputError, LoadError, ToolgateError, UnknownToolError

EXAMPLES = ["sql-session.json", "debugging-session.json", "chinese-request.json"]


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine.load()


@pytest.mark.parametrize("example", EXAMPLES)
def test_select_is_toolgate_eval(engine: Engine, example: str) -> None:
    path = REPO / "examples" / example
    inputs = json.loads(path.read_text())
    sel = engine.select(**inputs)
    cli = cli_json("eval", "--input", str(path), "--format", "json")
    assert sel.to_dict() == cli
    assert sel.active == cli["active"]
    assert sel.effective_threshold == cli["effective_threshold"]
    tools = sel.tools
    assert [t.name for t in tools] == [t["name"] for t in cli["tools"]]
    for t, c in zip(tools, cli["tools"]):
        assert (t.score, t.raw_score, t.active, t.reason) == (
            c["score"], c["raw_score"], c["active"], c["reason"]
        )
        assert set(t.terms) == set(c["terms"])  # (the CLI's JSON object is key-sorted; terms keep formula order)
        for key, term in t.terms.items():
            ct = c["terms"][key]
            assert (term.term, term.value, term.weight, term.contribution) == (
                ct["term"], ct["value"], ct["weight"], ct["contribution"]
            )
        assert abs(sum(x.contribution for x in t.terms.values()) - t.raw_score) < 1e-12


def test_sql_session_selects_the_sql_tools(engine: Engine) -> None:
    inputs = json.loads((REPO / "examples" / "sql-session.json").read_text())
    sel = engine.select(**inputs)
    assert len(sel.active) == 30
    assert set(sel.active[:3]) == {"sqlite.describe_table", "sqlite.list_tables", "sqlite.read_query"}
    assert sel.cold_start and abs(sel.effective_threshold - 0.24) < 1e-12
    assert "database" in dict(sel.domain_weights)


def test_inline_tools_replace_the_catalog(engine: Engine) -> None:
    tools = [
        {"name": "a", "domains": ["database"], "trigger_keywords": ["sql"], "base_priority": 0.9, "parameter_complexity": 1},
        {"name": "b", "domains": ["network"], "base_priority": 0.1, "parameter_complexity": 5},
    ]
    sel = engine.select(tools=tools, context={"user_intent_keywords": ["sql"], "active_language": "sql"})
    assert [t.name for t in sel.tools] == ["a", "b"]
    assert sel.active == ["a"]
    # the engine's own catalog is untouched
    assert len(engine.select().tools) == len(engine.tool_names) == 71


def test_explain_is_toolgate_explain(engine: Engine) -> None:
    path = REPO / "examples" / "sql-session.json"
    inputs = json.loads(path.read_text())
    r = engine.explain("sqlite.create_table", **inputs)
    cli = cli_json("explain", "sqlite.create_table", "--input", str(path), "--format", "json")["tool"]
    assert (r.name, r.score, r.active, r.reason) == (cli["name"], cli["score"], cli["active"], cli["reason"])
    assert {k: t.contribution for k, t in r.terms.items()} == {k: t["contribution"] for k, t in cli["terms"].items()}


def test_unknown_tool_has_a_did_you_mean(engine: Engine) -> None:
    with pytest.raises(UnknownToolError) as e:
        engine.explain("sqlite.read_qery")
    assert e.value.suggestion == "sqlite.read_query"
    assert "did you mean `sqlite.read_query`" in str(e.value)
    assert isinstance(e.value, KeyError) and isinstance(e.value, ToolgateError)


def test_bad_inputs_are_input_errors_with_the_json_path(engine: Engine) -> None:
    with pytest.raises(InputError) as e:
        engine.select(context={"session_duration_seconds": "seven minutes"})
    assert str(e.value) == '`context.session_duration_seconds` must be a number, found the string "seven minutes"'
    with pytest.raises(ValueError, match=r"did you mean `conversation_stage`"):
        engine.select(context={"conversation_stag": "debugging"})
    with pytest.raises(InputError, match="conversation stage `debuging` is not declared.*did you mean `debugging`"):
        engine.select(context={"conversation_stage": "debuging"})
    with pytest.raises(InputError, match="not in the catalog"):
        engine.select(usage={"call_counts": {"no.such_tool": 1}})
    with pytest.raises(InputError, match="cannot be read as JSON"):
        engine.select(context={"active_files": [object()]})
    with pytest.raises(InputError, match="`now` must be a finite number"):
        engine.select(now=float("inf"))
    with pytest.raises(InputError, match="`now` must be a number, found the string"):
        engine.select(now="soon")
    with pytest.raises(TypeError):
        engine.select({"message": "x"})  # keyword arguments only


def test_policy_errors_carry_file_line_column(tmp_path: Path) -> None:
    text = (REPO / "policies" / "default.toml").read_text().replace("w_stage = 0.20", "w_stag = 0.05", 1)
    policy = tmp_path / "typo.toml"
    policy.write_text(text)
    with pytest.raises(LoadError) as e:
        Engine.load(policy=policy)
    d = e.value.diagnostics[0]
    assert (d.file, d.line, d.column, d.kind) == (str(policy), 31, 1, "toolgate::unknown_name")
    assert "weight `w_stag` is not used by the formula" in d.message
    assert d.help == "rename the key `w_stag` to `w_stage`"
    assert str(e.value).startswith(f"{policy}:31:1: weight `w_stag`")
    assert d.text in str(e.value)
    # the CLI reports the same place
    assert f"{policy}:31:1:" in run_cli("check", "--policy", str(policy)).stderr


def test_missing_files_are_load_errors() -> None:
    with pytest.raises(LoadError, match="cannot read"):
        Engine.load(policy="/nonexistent/policy.toml")
    with pytest.raises(LoadError, match="tool-tags directory"):
        Engine.load(tags="/nonexistent")
    with pytest.raises(TypeError):
        Engine.load(policy=42)


def test_from_mcp_tools_and_from_openai_tools() -> None:
    listing = json.loads((SHARED / "data" / "mcp-catalogs" / "sqlite.json").read_text())
    # the selection policy (the MCP proxy's) is the one for auto-tagged catalogs
    selection = REPO / "policies" / "selection.toml"
    e = Engine.from_mcp_tools({"tools": listing["tools"]}, policy=selection)
    assert sorted(e.tool_names) == sorted(t["name"] for t in listing["tools"])
    assert Engine.from_mcp_tools(listing["tools"], policy=selection).tool_names == e.tool_names
    sel = e.select(message="list the tables of the database and run a select query")
    assert "list_tables" in sel.active and "read_query" in sel.active
    openai = [
        {"type": "function", "function": {"name": t["name"], "description": t.get("description", ""), "parameters": t["inputSchema"]}}
        for t in listing["tools"]
    ]
    o = Engine.from_openai_tools(openai, policy=selection)
    assert o.tool_names == e.tool_names
    assert o.select(message="list the tables").active == e.select(message="list the tables").active
    # the imported schema is the gate's: a missing required argument is denied
    v = o.check("read_query", {})
    assert v.decision == "deny" and any(f.kind == "schema" for f in v.findings)
    with pytest.raises(LoadError):
        Engine.from_mcp_tools({"tools": [{"description": "no name"}]})
    # a captured listing's `server` namespaces its tools, as `--tools FILE` does
    cap = Engine.from_mcp_tools(listing, policy=selection)
    assert sorted(cap.tool_names) == sorted(f"sqlite.{t['name']}" for t in listing["tools"])


def test_imported_tools_select_as_toolgate_eval_tools(tmp_path: Path) -> None:
    listing = json.loads((SHARED / "data" / "mcp-catalogs" / "sqlite.json").read_text())
    f = tmp_path / "tools.json"
    f.write_text(json.dumps({"tools": listing["tools"]}))
    selection = REPO / "policies" / "selection.toml"
    msg = {"message": "list the tables of the database"}
    inp = tmp_path / "in.json"
    inp.write_text(json.dumps(msg))
    cli = cli_json("eval", "--policy", str(selection), "--tools", str(f), "--input", str(inp), "--format", "json")
    assert Engine.from_mcp_tools({"tools": listing["tools"]}, policy=selection).select(**msg).to_dict() == cli
    assert Engine.load(policy=selection, tools=f).select(**msg).to_dict() == cli


def test_check_coerces_and_explains(engine: Engine) -> None:
    v = engine.check("shell.run_command", {"command": "git status"})
    assert v.decision == "allow" and v.allowed and v.arguments == {"command": "git status"}
    v = engine.check("shell.run_command", {"command": "rm -rf /"})
    assert v.decision == "deny" and not v.allowed
    assert v.findings[0].rule_id == "shell.rm.recursive-root" and v.findings[0].path == "/command"
    assert "blocked" in v.message
    v = engine.check("no.such_tool", {})
    assert v.decision == "deny" and v.findings[0].kind == "tool"
    v = engine.check("shell.run_command", "{not json")
    assert v.decision == "deny" and v.findings[0].kind == "input"


def test_values_nested_deeper_than_any_stack_are_refused(engine: Engine) -> None:
    deep: list = []
    for _ in range(200_000):
        deep = [deep]
    with pytest.raises(InputError, match="nested more than 128 levels"):
        engine.check("shell.run_command", {"command": deep})
    with pytest.raises(InputError, match="nested more than 128 levels"):
        engine.select(context={"active_files": deep})
    # as JSON text, the gate's own limit denies it (as `toolgate guard`)
    v = engine.check("shell.run_command", "[" * 100_000 + "]" * 100_000)
    assert v.decision == "deny"


def test_check_root_and_audit(tmp_path: Path) -> None:
    audit = tmp_path / "audit.jsonl"
    e = Engine.load(audit=audit)
    project = tmp_path / "project"
    project.mkdir()
    inside = e.check("shell.run_command", {"command": "rm -r build"}, root=project, session="s1")
    outside = e.check("shell.run_command", {"command": f"rm -r {REPO}/target/none"}, root=project, session="s1")
    assert inside.decision == "allow", inside.message
    assert outside.decision != "allow"
    records = [json.loads(l) for l in audit.read_text().splitlines()]
    assert len(records) == 2
    assert all(r.get("session") == "s1" for r in records), records[0]


def test_module_is_typed_and_documented() -> None:
    pkg = Path(toolgate.__file__).parent
    assert (pkg / "py.typed").exists() and (pkg / "_toolgate.pyi").exists()
    for name in toolgate.__all__:
        obj = getattr(toolgate, name)
        if name != "__version__":
            assert obj.__doc__, name
    for m in ("load", "from_mcp_tools", "from_openai_tools", "watch", "select", "explain", "check"):
        assert getattr(Engine, m).__doc__, m
