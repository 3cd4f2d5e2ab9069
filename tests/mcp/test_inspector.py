"""The proxy's discovery flows with a client we did not write: MCP Inspector
(npm `@modelcontextprotocol/inspector`, pinned by scripts/test).

One-shot flows use its CLI exactly as a user would:

    mcp-inspector --cli --config mcp.json --server tg --method tools/list
    mcp-inspector --cli --config mcp.json --server tg --method tools/call \\
        --tool-name toolgate__find_tools --tool-arg "query=which tables are in my sqlite database"

Flows that need one connection across several requests (a search, then the
list) use `mcpdo`, the Inspector package's connection CLI ("connect once, run
many commands"), on a private daemon.

Both protocol eras: the server entry's `"protocolEra"` in mcp.json (an
Inspector field, next to `command`/`args`: `"legacy"`, its default, the
initialize handshake; `"modern"`, pinned to 2026-07-28, stateless, per-request
`_meta`; `"auto"`) picks the one the Inspector speaks. The flows that matter
run in both: the first `tools/list` is not empty; a `toolgate__find_tools`
search, then a call of a found tool with the real rows of mcp-server-sqlite;
`DROP TABLE` refused and the table intact. In the modern era there is no
session: the search answers with a session handle (`structuredContent.session`,
the same in `_meta["toolgate/session"]`), which the Inspector passes back as
request `_meta` (`--metadata toolgate/session=HANDLE`, applied to the
`tools/list` it makes before a call too) or as the `session` argument of
`toolgate__call_tool`. Every `--cli` run starts a proxy of its own, as
replicas behind a load balancer: they share the key that signs handles
(`--state-key-env`).

Run by tests/mcp_inspector.rs (`cargo test`), which fails when the Inspector
is missing unless TOOLGATE_SKIP_INSPECTOR=1.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import shlex
import time
from pathlib import Path

import pytest

from conftest import ROOT, VENV1, selection_policy_text, server_bin, sqlite_server, tables, time_server, toolgate_bin

SAFE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
QUESTION = "which tables are in my sqlite database"
META = ["toolgate__find_tools", "toolgate__call_tool"]
ROWS_QUERY = "SELECT name FROM users ORDER BY id"

# The protocol eras of an mcp.json server entry's "protocolEra" (the Inspector
# speaks 2026-07-28 for "modern"), and what the proxy adds in the modern era.
ERAS = ["legacy", "modern"]
SESSION_META = "toolgate/session"
# the proxies the `--cli` runs start share this key (>= 32 bytes), so that a
# handle one signed is good at the next
STATE_KEY_ENV = "TOOLGATE_INSPECTOR_STATE_KEY"
STATE_KEY = "toolgate-inspector-test-state-key-0123456789"
INSPECTOR_DIR = Path(os.environ.get("TOOLGATE_INSPECTOR_DIR", ROOT / ".mcp-inspector"))
BIN = INSPECTOR_DIR / "node_modules/.bin"


def inspector(name: str) -> str:
    p = BIN / name
    if not p.exists():
        pytest.fail(f"{p} is missing: run scripts/test (npm install @modelcontextprotocol/inspector into {INSPECTOR_DIR})")
    return str(p)


def config(tmp_path: Path, *proxy_args: str, era: str = "legacy") -> Path:
    """An MCP client configuration (the `mcpServers` shape) with toolgate as
    `tg`, spoken to in `era` (the entry's `protocolEra`)."""
    entry: dict = {
        "command": str(toolgate_bin()),
        "args": ["mcp-proxy", *proxy_args],
        "cwd": str(tmp_path),
        "protocolEra": era,
    }
    if era == "modern":
        entry["args"] += ["--state-key-env", STATE_KEY_ENV]
        entry["env"] = {STATE_KEY_ENV: STATE_KEY}
    c = tmp_path / f"mcp-{era}.json"
    c.write_text(json.dumps({"mcpServers": {"tg": entry}}, indent=2))
    return c


def env(tmp_path: Path) -> dict:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {**os.environ, "HOME": str(home), "MCP_INSPECTOR_SECRET_STORE": "file",
            "NO_COLOR": "1"}


def cli(tmp_path: Path, cfg: Path, method: str, *args: str, handle: str | None = None) -> dict:
    """`mcp-inspector --cli --config CFG --server tg --method METHOD ARGS...`,
    JSON result; with `handle`, `--metadata toolgate/session=HANDLE` (request
    `_meta` of every request the run makes)."""
    cmd = [inspector("mcp-inspector"), "--cli", "-q", "--config", str(cfg), "--server", "tg",
           "--method", method, "--format", "json", *args]
    if handle is not None:
        cmd += ["--metadata", f"{SESSION_META}={handle}"]
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

    @staticmethod
    def _meta(meta: dict | None) -> list[str]:
        return ["--metadata", *(f"{k}={v}" for k, v in meta.items())] if meta else []

    def names(self, meta: dict | None = None) -> list[str]:
        out = self.run("@tg", "tools/list", *self._meta(meta))
        return [t["name"] for t in out.get("tools", out.get("result", {}).get("tools", []))]

    def call(self, tool: str, args: dict | None = None, meta: dict | None = None) -> dict:
        pairs = [f"{k}:={json.dumps(v)}" for k, v in (args or {}).items()]
        out = self.run("@tg", "tools/call", tool, *pairs, *self._meta(meta))
        return out.get("result", out)

    def era(self) -> str:
        """The protocol era the connection negotiated (`connections/list`)."""
        conns = self.run("connections/list").get("connections", [])
        return next(c.get("protocolEra", "") for c in conns if c.get("name") == "tg")

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


def session_of(found: dict) -> str:
    """The session handle of a modern find_tools answer: in
    `structuredContent.session`, the same in `_meta["toolgate/session"]`, and
    in the text, for the model to pass back."""
    handle = (found.get("structuredContent") or {}).get("session")
    assert isinstance(handle, str) and handle, f"no session handle in the search's answer: {found}"
    assert (found.get("_meta") or {}).get(SESSION_META) == handle, found.get("_meta")
    assert handle in text(found), f"the text does not give the model the handle: {text(found)}"
    return handle


def updated(result: dict) -> str:
    """The updated handle a forwarded call's result carries in `_meta`."""
    new = (result.get("_meta") or {}).get(SESSION_META)
    assert isinstance(new, str) and new, f"no updated session handle in the result's _meta: {result}"
    return new


def tampered(handle: str) -> str:
    """`handle` with one character in its middle changed."""
    i = len(handle) // 2
    while not handle[i].isalnum():
        i += 1
    return handle[:i] + ("B" if handle[i] == "A" else "A") + handle[i + 1:]


def audit_lines(audit: Path) -> list[dict]:
    return [json.loads(x) for x in audit.read_text().splitlines() if x.strip()] if audit.exists() else []


@pytest.mark.parametrize("era", ERAS)
def test_first_list_find_call_and_drop_table_with_the_inspector_cli(tmp_path, db, era):
    audit = tmp_path / "audit.jsonl"
    cfg = config(tmp_path, "--server", time_server(), "--server", sqlite_server(db), "--audit", str(audit),
                 era=era)
    # the first tools/list is not empty, and every name is client-safe
    names = [t["name"] for t in cli(tmp_path, cfg, "tools/list")["tools"]]
    assert names[:2] == META, names
    assert all(SAFE.match(n) for n in names)
    # find_tools names sqlite__list_tables first
    r = cli(tmp_path, cfg, "tools/call", "--tool-name", "toolgate__find_tools", "--tool-arg", f"query={QUESTION}")
    assert not r.get("isError"), r
    assert r["structuredContent"]["tools"][0]["name"] == "sqlite__list_tables"
    assert text(r).splitlines()[0].startswith("sqlite__list_tables: ")
    if era == "legacy":
        # the handshake era keeps what a search found in the session
        assert "session" not in r["structuredContent"], r["structuredContent"]
        # A new `--cli` run is a new session, whose list holds the proxy's own
        # tools only, and the Inspector refuses to call a tool it was not listed
        # (this is what made the proxy useless in real clients). The call-through
        # tool reaches it, with the real rows.
        r = cli(tmp_path, cfg, "tools/call", "--tool-name", "toolgate__call_tool",
                "--tool-args-json", json.dumps({"name": "sqlite__list_tables"}))
        assert not r.get("isError") and "users" in text(r), r
        # call_tool reaches a tool that is not listed, with the real rows
        r = cli(tmp_path, cfg, "tools/call", "--tool-name", "toolgate__call_tool", "--tool-args-json",
                json.dumps({"name": "sqlite__read_query", "arguments": {"query": ROWS_QUERY}}))
        assert not r.get("isError") and "ann" in text(r) and "cho" in text(r), r
    else:
        # no session: the search's answer is a handle, and what it found comes
        # back with the handle, to another proxy process (the next `--cli` run)
        handle = session_of(r)
        names = [t["name"] for t in cli(tmp_path, cfg, "tools/list", handle=handle)["tools"]]
        assert names[:2] == META and "sqlite__list_tables" in names, names
        # so the Inspector, which lists before it calls, calls the found tool by
        # its name, with the real rows, and gets the updated handle back
        r = cli(tmp_path, cfg, "tools/call", "--tool-name", "sqlite__list_tables", handle=handle)
        assert not r.get("isError") and "users" in text(r), r
        handle = updated(r)
        # the handle as toolgate__call_tool's `session` argument: the real rows
        r = cli(tmp_path, cfg, "tools/call", "--tool-name", "toolgate__call_tool", "--tool-args-json",
                json.dumps({"name": "sqlite__read_query", "arguments": {"query": ROWS_QUERY}, "session": handle}))
        assert not r.get("isError") and "ann" in text(r) and "cho" in text(r), r
        # a handle changed on the way is refused, nothing runs
        r = cli(tmp_path, cfg, "tools/call", "--tool-name", "toolgate__call_tool", "--tool-args-json",
                json.dumps({"name": "sqlite__read_query", "arguments": {"query": ROWS_QUERY},
                            "session": tampered(handle)}))
        assert r.get("isError") is True and "session handle is not valid" in text(r), r
        assert "ann" not in text(r)
    # DROP TABLE through call_tool is refused, and the table is intact
    r = cli(tmp_path, cfg, "tools/call", "--tool-name", "toolgate__call_tool", "--tool-args-json",
            json.dumps({"name": "sqlite__write_query", "arguments": {"query": "DROP TABLE users"}}))
    assert r.get("isError") is True and "DROP" in text(r), r
    assert "users" in tables(db)
    lines = audit_lines(audit)
    outcomes = [(x["tool"], x["outcome"]) for x in lines]
    assert ("sqlite.write_query", "denied") in outcomes and ("sqlite.read_query", "ok") in outcomes, outcomes
    if era == "modern":
        # the calls that passed the handle back are audited under the search's session
        sessions = {x["tool"]: x["session"] for x in lines if x["outcome"] == "ok"}
        assert sessions.get("sqlite.list_tables") == sessions.get("sqlite.read_query") \
            == sessions.get("toolgate__find_tools"), lines


@pytest.mark.parametrize("era", ERAS)
def test_found_tools_join_the_list_of_one_connection(tmp_path, db, mcpdo_session, era):
    cfg = config(tmp_path, "--server", time_server(), "--server", sqlite_server(db), era=era)
    s = mcpdo_session(tmp_path, cfg)
    assert s.era() == era
    before = s.names()
    assert before[:2] == META and "sqlite__list_tables" not in before, before
    r = s.call("toolgate__find_tools", {"query": QUESTION})
    assert r["structuredContent"]["tools"][0]["name"] == "sqlite__list_tables"
    # legacy: the connection's session remembers; modern: the handle does, sent
    # back as request _meta
    meta = {SESSION_META: session_of(r)} if era == "modern" else None
    after = s.names(meta)
    assert "sqlite__list_tables" in after and set(before) < set(after), after
    r = s.call("sqlite__list_tables", meta=meta)
    assert not r.get("isError") and "users" in text(r), r
    if meta:
        meta = {SESSION_META: updated(r)}
    # the real rows, and DROP TABLE refused with the table intact
    r = s.call("toolgate__call_tool", {"name": "sqlite__read_query", "arguments": {"query": ROWS_QUERY}}, meta=meta)
    assert not r.get("isError") and "ann" in text(r) and "cho" in text(r), r
    r = s.call("toolgate__call_tool", {"name": "sqlite__write_query", "arguments": {"query": "DROP TABLE users"}},
               meta=meta)
    assert r.get("isError") is True and "DROP" in text(r), r
    assert "users" in tables(db)


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


@pytest.mark.parametrize("era", ERAS)
def test_a_policy_edit_while_connected_changes_the_list(tmp_path, db, mcpdo_session, era):
    policy = tmp_path / "policy.toml"
    text_ = selection_policy_text()
    policy.write_text(text_)
    cfg = config(tmp_path, "--server", time_server(), "--server", sqlite_server(db), "--policy", str(policy),
                 era=era)
    s = mcpdo_session(tmp_path, cfg)
    assert "time__get_current_time" not in s.names()
    policy.write_text(text_.replace("pinned = []", 'pinned = ["time.get_current_time"]', 1))
    deadline = time.monotonic() + 10
    while "time__get_current_time" not in s.names():
        assert time.monotonic() < deadline, "the edit did not reach the list"
        time.sleep(0.2)


def readme_inspector_block() -> list[tuple[list[str], list[str]]]:
    """The README's MCP Inspector example: each `$ npx ...inspector... ARGS`
    command (continued lines joined) with the lines shown after it."""
    text = (ROOT / "README.md").read_text()
    start = text.index("$ npx @modelcontextprotocol/inspector@")
    block = text[start:text.index("```", start)].rstrip("\n").splitlines()
    runs: list[tuple[list[str], list[str]]] = []
    i = 0
    while i < len(block):
        assert block[i].startswith("$ "), block[i]
        cmd = block[i][2:]
        i += 1
        while cmd.endswith("\\"):
            cmd = cmd[:-1] + " " + block[i].strip()
            i += 1
        shown = []
        while i < len(block) and not block[i].startswith("$ "):
            shown.append(block[i])
            i += 1
        runs.append((shlex.split(cmd), shown))
    return runs


def shows(expected: list[str], actual: list[str]) -> bool:
    """Whether `actual` is what `expected` shows, by README's rule (the one
    tests/readme.rs applies): a line `...` stands for any number of lines, a
    line ending in `...` for any line that starts with what comes before;
    trailing spaces do not count."""
    if not expected:
        return all(not a.strip() for a in actual)
    e, rest = expected[0].rstrip(), expected[1:]
    if e.strip() == "...":
        return any(shows(rest, actual[k:]) for k in range(len(actual) + 1))
    if not actual:
        return not e and shows(rest, actual)
    a = actual[0].rstrip()
    ok = a.startswith(e[:-3]) if e.endswith("...") else a == e
    return ok and shows(rest, actual[1:])


def test_shows_follows_the_readme_rule():
    a = ["one", "two", "three", "four"]
    assert shows(["one", "...", "four"], a)
    assert shows(["one", "tw...", "..."], a)
    assert not shows(["one", "three", "..."], a)
    assert not shows(["one", "x...", "..."], a)


def test_the_readme_inspector_example_shows_what_the_inspector_prints(tmp_path, db):
    # Issue 29 item 9: README's Inspector output cannot go stale. Its commands
    # are run as written (the pinned Inspector of scripts/test for `npx
    # @modelcontextprotocol/inspector@VERSION`, `mcp.json` holding `tg` with
    # the sqlite and time servers), and what they print (JSON) must be what
    # README shows, clipped by README's `...` rule (`shows`).
    runs = readme_inspector_block()
    assert len(runs) == 2, runs
    pinned = json.loads((INSPECTOR_DIR / "node_modules/@modelcontextprotocol/inspector/package.json").read_text())
    cfg = config(tmp_path, "--server", time_server(), "--server", sqlite_server(db))
    (tmp_path / "mcp.json").write_text(cfg.read_text())
    for argv, shown in runs:
        assert argv[:2] == ["npx", f"@modelcontextprotocol/inspector@{pinned['version']}"], argv
        cmd = [inspector("mcp-inspector"), *argv[2:]]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=env(tmp_path), cwd=tmp_path)
        # JSON, as README says
        json.loads(r.stdout)
        printed = r.stdout.splitlines()
        assert shows(shown, printed), "\n".join(["README shows:", *shown, "", "the Inspector prints:", *printed])
