"""The proxy's discovery flows with a client we did not write: MCP Inspector
(npm `@modelcontextprotocol/inspector`, pinned by scripts/test).

One-shot flows use its CLI exactly as a user would:

    mcp-inspector --cli --config mcp.json --server tg --method tools/list
    mcp-inspector --cli --config mcp.json --server tg --method tools/call \\
        --tool-name toolgate__find_tools --tool-arg "query=which tables are in my sqlite database"

Flows that need one connection across several requests (a search, then the
list) use `mcpdo`, the Inspector package's connection CLI ("connect once, run
many commands"), on a private daemon.

Run by tests/mcp_inspector.rs (`cargo test`), which fails when the Inspector
is missing unless TOOLGATE_SKIP_INSPECTOR=1.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ROOT, VENV1, selection_policy_text, server_bin, sqlite_server, tables, time_server, toolgate_bin

SAFE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
QUESTION = "which tables are in my sqlite database"
INSPECTOR_DIR = Path(os.environ.get("TOOLGATE_INSPECTOR_DIR", ROOT / ".mcp-inspector"))
BIN = INSPECTOR_DIR / "node_modules/.bin"


def inspector(name: str) -> str:
    p = BIN / name
    if not p.exists():
        pytest.fail(f"{p} is missing: run scripts/test (npm install @modelcontextprotocol/inspector into {INSPECTOR_DIR})")
    return str(p)


def config(tmp_path: Path, *proxy_args: str) -> Path:
    """An MCP client configuration (the `mcpServers` shape) with toolgate as `tg`."""
    c = tmp_path / "mcp.json"
    c.write_text(json.dumps({"mcpServers": {"tg": {
        "command": str(toolgate_bin()),
        "args": ["mcp-proxy", *proxy_args],
        "cwd": str(tmp_path),
    }}}, indent=2))
    return c


def env(tmp_path: Path) -> dict:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {**os.environ, "HOME": str(home), "MCP_INSPECTOR_SECRET_STORE": "file",
            "NO_COLOR": "1"}


def cli(tmp_path: Path, cfg: Path, method: str, *args: str) -> dict:
    """`mcp-inspector --cli --config CFG --server tg --method METHOD ARGS...`, JSON result."""
    cmd = [inspector("mcp-inspector"), "--cli", "-q", "--config", str(cfg), "--server", "tg",
           "--method", method, "--format", "json", *args]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env(tmp_path), cwd=tmp_path)
    assert r.stdout.strip(), f"no output from {cmd}: rc={r.returncode} stderr={r.stderr[-2000:]}"
    out = json.loads(r.stdout)
    return out.get("result", out)


class Mcpdo:
    """One `mcpdo` connection named `tg`, on a private daemon."""

    def __init__(self, tmp_path: Path, cfg: Path, *connect_args: str):
        self.bin = inspector("mcpdo")
        self.env = env(tmp_path)
        self.cwd = tmp_path
        exports = subprocess.run([self.bin, "private"], capture_output=True, text=True,
                                 env=self.env, timeout=60, check=True).stdout
        for k, v in re.findall(r"export (\w+)='([^']*)'", exports):
            self.env[k] = v
        assert "MCP_INSPECTOR_DAEMON_DIR" in self.env, exports
        self.run("--config", str(cfg), "connect", "tg", *connect_args)

    def run(self, *args: str) -> dict:
        r = subprocess.run([self.bin, *args, "--format", "json"], capture_output=True, text=True,
                           env=self.env, cwd=self.cwd, timeout=120)
        assert r.returncode == 0 or r.stdout.strip(), f"mcpdo {args}: rc={r.returncode} {r.stderr[-2000:]}"
        return json.loads(r.stdout) if r.stdout.strip() else {}

    def names(self) -> list[str]:
        out = self.run("@tg", "tools/list")
        return [t["name"] for t in out.get("tools", out.get("result", {}).get("tools", []))]

    def call(self, tool: str, args: dict | None = None) -> dict:
        pairs = [f"{k}:={json.dumps(v)}" for k, v in (args or {}).items()]
        out = self.run("@tg", "tools/call", tool, *pairs)
        return out.get("result", out)

    def close(self) -> None:
        subprocess.run([self.bin, "daemon", "stop"], capture_output=True, env=self.env, timeout=60)


@pytest.fixture
def mcpdo_session():
    sessions: list[Mcpdo] = []

    def make(*a, **kw):
        s = Mcpdo(*a, **kw)
        sessions.append(s)
        return s

    yield make
    for s in sessions:
        s.close()


def text(result: dict) -> str:
    return "\n".join(c.get("text", "") for c in result.get("content", []))


def test_first_list_find_call_and_drop_table_with_the_inspector_cli(tmp_path, db):
    audit = tmp_path / "audit.jsonl"
    cfg = config(tmp_path, "--server", time_server(), "--server", sqlite_server(db), "--audit", str(audit))
    # the first tools/list is not empty, and every name is client-safe
    names = [t["name"] for t in cli(tmp_path, cfg, "tools/list")["tools"]]
    assert names[:2] == ["toolgate__find_tools", "toolgate__call_tool"], names
    assert all(SAFE.match(n) for n in names)
    # find_tools names sqlite__list_tables first
    r = cli(tmp_path, cfg, "tools/call", "--tool-name", "toolgate__find_tools", "--tool-arg", f"query={QUESTION}")
    assert not r.get("isError")
    assert r["structuredContent"]["tools"][0]["name"] == "sqlite__list_tables"
    assert text(r).splitlines()[0].startswith("sqlite__list_tables: ")
    # A new `--cli` run is a new session, whose list holds the proxy's own
    # tools only, and the Inspector refuses to call a tool it was not listed
    # (this is what made the proxy useless in real clients). The call-through
    # tool reaches it, with the real rows.
    r = cli(tmp_path, cfg, "tools/call", "--tool-name", "toolgate__call_tool",
            "--tool-args-json", json.dumps({"name": "sqlite__list_tables"}))
    assert not r.get("isError") and "users" in text(r), r
    # call_tool reaches a tool that is not listed, with the real rows
    r = cli(tmp_path, cfg, "tools/call", "--tool-name", "toolgate__call_tool", "--tool-args-json",
            json.dumps({"name": "sqlite__read_query", "arguments": {"query": "SELECT name FROM users ORDER BY id"}}))
    assert not r.get("isError") and "ann" in text(r) and "cho" in text(r), r
    # DROP TABLE through call_tool is refused, and the table is intact
    r = cli(tmp_path, cfg, "tools/call", "--tool-name", "toolgate__call_tool", "--tool-args-json",
            json.dumps({"name": "sqlite__write_query", "arguments": {"query": "DROP TABLE users"}}))
    assert r.get("isError") is True and "DROP" in text(r), r
    assert "users" in tables(db)
    outcomes = [(x["tool"], x["outcome"]) for x in map(json.loads, audit.read_text().splitlines())]
    assert ("sqlite.write_query", "denied") in outcomes and ("sqlite.read_query", "ok") in outcomes


def test_found_tools_join_the_list_of_one_connection(tmp_path, db, mcpdo_session):
    cfg = config(tmp_path, "--server", time_server(), "--server", sqlite_server(db))
    s = mcpdo_session(tmp_path, cfg)
    before = s.names()
    assert "sqlite__list_tables" not in before
    r = s.call("toolgate__find_tools", {"query": QUESTION})
    assert r["structuredContent"]["tools"][0]["name"] == "sqlite__list_tables"
    after = s.names()
    assert "sqlite__list_tables" in after and set(before) < set(after)
    r = s.call("sqlite__list_tables")
    assert "users" in text(r)


MUTATING_SERVER = (Path(__file__).parent / "test_discovery.py").read_text().split("MUTATING_SERVER = '''")[1].split("'''")[0]


def test_a_changed_definition_is_withheld_with_the_inspector(tmp_path, mcpdo_session):
    script = tmp_path / "mut_server.py"
    script.write_text(MUTATING_SERVER)
    audit = tmp_path / "audit.jsonl"
    cfg = config(tmp_path, "--server", f"mut={VENV1 / 'python'} {script}", "--audit", str(audit))
    # --elicit off: a client that cannot confirm
    s = mcpdo_session(tmp_path, cfg, "--elicit", "off")
    s.call("toolgate__find_tools", {"query": "summarise the sales report"})
    assert "mut__report" in s.names()
    assert text(s.call("toolgate__call_tool", {"name": "mut__mutate"})) == "mutated"
    deadline = time.monotonic() + 10
    while "mut__report" in s.names():
        assert time.monotonic() < deadline, "still listed after the change"
        time.sleep(0.2)
    # not listed, so only the call-through tool can try it: withheld
    r = s.call("toolgate__call_tool", {"name": "mut__report", "arguments": {"path": "q3.csv"}})
    assert r.get("isError") is True and "changed" in text(r) and "report: 3 sales" not in text(r), r
    lines = [json.loads(x) for x in audit.read_text().splitlines()]
    assert [x["tool"] for x in lines if x["outcome"] == "definition_changed"] == ["mut.report"]


def test_a_policy_edit_while_connected_changes_the_list(tmp_path, db, mcpdo_session):
    policy = tmp_path / "policy.toml"
    text_ = selection_policy_text()
    policy.write_text(text_)
    cfg = config(tmp_path, "--server", time_server(), "--server", sqlite_server(db), "--policy", str(policy))
    s = mcpdo_session(tmp_path, cfg)
    assert "time__get_current_time" not in s.names()
    policy.write_text(text_.replace("pinned = []", 'pinned = ["time.get_current_time"]', 1))
    deadline = time.monotonic() + 10
    while "time__get_current_time" not in s.names():
        assert time.monotonic() < deadline, "the edit did not reach the list"
        time.sleep(0.2)
