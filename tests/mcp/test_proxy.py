"""`toolgate mcp-proxy` in front of real MCP servers, driven by the `mcp` SDK client."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import textwrap
import time
from pathlib import Path

import anyio
import pytest
from mcp import types

from conftest import (
    META,
    ROOT,
    SEED,
    VENV,
    VENV1,
    comparable,
    direct,
    filesystem_bin,
    git_server,
    proxy,
    server_bin,
    sqlite_server,
    tables,
    text_of,
    time_server,
    x,
)

pytestmark = pytest.mark.anyio

SQL_CONTEXT = {
    "message": "select all rows from the users table",
    "conversation_stage": "exploration",
    "active_language": "sql",
}


async def test_tools_list_is_filtered_and_namespaced(tmp_path, db, repo):
    # what the servers offer, asked directly
    offered: dict[str, types.Tool] = {}
    for prefix, cmd, args in [
        ("time", server_bin(VENV, "mcp-server-time"), ["--local-timezone", "UTC"]),
        ("sqlite", server_bin(VENV1, "mcp-server-sqlite"), ["--db-path", str(db)]),
        ("git", server_bin(VENV, "mcp-server-git"), ["--repository", str(repo)]),
    ]:
        async with direct(cmd, *args) as s:
            for t in (await s.list_tools()).tools:
                offered[f"{prefix}.{t.name}"] = t
    assert len(offered) == 20
    offered = {x(k): v for k, v in offered.items()}
    # the seed preset: an empty context activates some tools by its cold-start rule
    async with proxy(tmp_path, "--server", time_server(), "--server", sqlite_server(db),
                     "--server", git_server(repo), "--policy", SEED) as p:
        assert p.init.capabilities.tools.list_changed is True
        assert p.gate, "the proxy names its gate in initialize _meta"
        listed = await p.tools()
        names = [t.name for t in listed]
        assert names[:2] == META, "the proxy's own tools come first"
        listed = listed[2:]
        names = names[2:]
        assert names, "an empty context still activates some tools"
        assert set(names) < set(offered), f"{names} must be a strict subset of the 20 offered tools"
        for t in listed:
            server, _, bare = t.name.partition("__")
            assert server in {"time", "sqlite", "git"}
            # live description and schema, not the tag file's
            assert t.description == offered[t.name].description
            assert t.input_schema == offered[t.name].input_schema
        # the full catalog is callable even when inactive (seed 000; policy default)
        assert "sqlite__list_tables" not in names
        r = await p.call("sqlite__list_tables")
        assert not r.is_error and "users" in text_of(r)


async def test_meta_context_changes_the_list_and_notifies(tmp_path, db, repo):
    async with proxy(tmp_path, "--server", time_server(), "--server", sqlite_server(db),
                     "--server", git_server(repo), "--debounce-ms", "20") as p:
        before = await p.names()
        assert "sqlite__read_query" not in before
        # context through _meta on a request that is not tools/list
        await p.session.send_ping(meta={"toolgate/context": SQL_CONTEXT})
        await p.notes.wait_list_changed(1)
        after = await p.names()
        assert after != before
        assert "sqlite__read_query" in after and "sqlite__list_tables" in after
        # context through tools/list's own _meta: the answer already reflects it
        reset = await p.names(context={"reset": True})
        assert reset == before
        # a malformed context is a JSON-RPC error (invalid params), not ignored
        with pytest.raises(Exception) as e:
            await p.names(context={"conversation_stag": "exploration"})
        assert "conversation_stage" in str(e.value)
        with pytest.raises(Exception) as e:
            await p.names(context={"conversation_stage": "lunch"})
        assert "not declared" in str(e.value)


async def test_allowed_calls_return_exactly_what_the_server_returns(tmp_path, db, repo):
    query = {"query": "SELECT id, name FROM users ORDER BY id"}
    async with direct(server_bin(VENV1, "mcp-server-sqlite"), "--db-path", str(db)) as s:
        want_sql = await s.call_tool("read_query", query)
    async with direct(server_bin(VENV, "mcp-server-git"), "--repository", str(repo)) as s:
        want_git = await s.call_tool("git_status", {"repo_path": str(repo)})
    assert "ann" in text_of(want_sql) and "new.txt" in text_of(want_git)
    audit = tmp_path / "audit.jsonl"
    async with proxy(tmp_path, "--server", sqlite_server(db), "--server", git_server(repo),
                     "--audit", str(audit)) as p:
        got_sql = await p.call("sqlite.read_query", query)
        got_git = await p.call("git.git_status", {"repo_path": str(repo)})
        assert comparable(got_sql) == comparable(want_sql)
        assert comparable(got_git) == comparable(want_git)
        # a downstream tool error comes back unchanged too
        bad = await p.call("sqlite.read_query", {"query": "SELECT nope FROM nowhere"})
        async with direct(server_bin(VENV1, "mcp-server-sqlite"), "--db-path", str(db)) as s:
            want_bad = await s.call_tool("read_query", {"query": "SELECT nope FROM nowhere"})
        assert comparable(bad) == comparable(want_bad)
        unknown = await p.call("sqlite__read_querry", query)
        # the gate's closest names, as the client must call them
        assert unknown.is_error and "`sqlite__read_query`" in text_of(unknown) and "closest" in text_of(unknown)
    lines = [json.loads(x) for x in audit.read_text().splitlines()]
    assert [(x["tool"], x["decision"], x["outcome"]) for x in lines] == [
        ("sqlite.read_query", "allow", "ok"),
        ("git.git_status", "allow", "ok"),
        ("sqlite.read_query", "allow", lines[2]["outcome"]),
        ("sqlite__read_querry", "deny", "denied"),
    ]
    # mcp-server-sqlite reports SQL errors as plain text, others set isError
    assert lines[2]["outcome"] in ("ok", "tool_error", "rpc_error")
    assert all(x["session"] == lines[0]["session"] and x["latency_ms"] >= 0 for x in lines)


async def test_drop_table_is_denied_and_the_table_survives(tmp_path, db):
    async with proxy(tmp_path, "--server", sqlite_server(db)) as p:
        gate = p.gate
        if gate != "tags":
            r = await p.call("sqlite.write_query", {"query": "DROP TABLE users"})
            assert r.is_error, text_of(r)
    if gate == "tags":
        pytest.skip(
            "the built-in tag gate decides from tags only and sqlite.write_query is tagged "
            "'dangerous' without confirmation; denying DROP TABLE needs the call gate's SQL "
            "analysis (call-gate branch), which this test exercises once plugged in"
        )
    assert "users" in tables(db)
    c = sqlite3.connect(db)
    assert c.execute("SELECT count(*) FROM users").fetchone()[0] == 3


async def test_path_outside_the_filesystem_root_has_no_effect(tmp_path):
    fs = filesystem_bin()
    root = tmp_path / "allowed"
    root.mkdir()
    (root / "inside.txt").write_text("inside\n")
    outside = tmp_path / "outside.txt"
    async with proxy(tmp_path, "--server", f"filesystem={fs} {root}") as p:
        ok = await p.call("filesystem.read_text_file", {"path": str(root / "inside.txt")})
        assert not ok.is_error and "inside" in text_of(ok)
        r = await p.call("filesystem.write_file", {"path": str(outside), "content": "pwned"})
        assert r.is_error, text_of(r)
        r2 = await p.call("filesystem.read_text_file", {"path": "/etc/hostname"})
        assert r2.is_error, text_of(r2)
    assert not outside.exists()


async def wait_for_log(p, needle: str, timeout: float = 10.0) -> None:
    """Waits until the proxy's stderr log holds `needle` (the roots are read
    after `initialized`, asynchronously)."""
    deadline = time.monotonic() + timeout
    while needle not in p.log.read_text():
        assert time.monotonic() < deadline, f"no {needle!r} in the proxy log"
        await anyio.sleep(0.05)


async def test_the_gate_keeps_files_in_the_clients_roots_not_the_working_directory(tmp_path):
    """A client such as Claude Desktop starts the proxy in `/`. The gate's
    project is then the client's MCP roots, or `--root`; with neither, a
    root of `/` holds everything, so file access asks (here: no elicitation,
    a tool error) instead of being allowed."""
    fs = filesystem_bin()
    project = tmp_path / "project"
    project.mkdir()
    (project / "notes.txt").write_text("proj-notes\n")
    secret = tmp_path / "secret.txt"
    secret.write_text("s3cret\n")
    # The filesystem server may read all of tmp_path: only the gate stands
    # between the model and secret.txt.
    server = ("--server", f"filesystem={fs} {tmp_path}")

    async def list_roots(context):
        return types.ListRootsResult(roots=[types.Root(uri=project.as_uri())])

    async with proxy(tmp_path, *server, roots=list_roots, cwd="/") as p:
        await wait_for_log(p, "roots read")
        ok = await p.call("filesystem.read_text_file", {"path": str(project / "notes.txt")})
        assert not ok.is_error and "proj-notes" in text_of(ok), text_of(ok)
        r = await p.call("filesystem.read_text_file", {"path": str(secret)})
        assert r.is_error and "s3cret" not in text_of(r), text_of(r)
        assert "outside the allowed roots" in text_of(r), text_of(r)
        r = await p.call("filesystem.read_text_file", {"path": "/etc/hostname"})
        assert r.is_error, text_of(r)

    # No roots from the client, started in `/`: every file access asks.
    async with proxy(tmp_path, *server, cwd="/") as p:
        r = await p.call("filesystem.read_text_file", {"path": str(project / "notes.txt")})
        assert r.is_error and "proj-notes" not in text_of(r), text_of(r)
        assert "holds every file" in text_of(r), text_of(r)
        assert "working directory holds every file" in p.log.read_text()

    # A call sent at once, while a slow client has not answered roots/list
    # yet, waits for the roots: judged against the working directory
    # (tmp_path, which holds secret.txt) it would be allowed.
    async def slow_roots(context):
        await anyio.sleep(0.5)
        return types.ListRootsResult(roots=[types.Root(uri=project.as_uri())])

    async with proxy(tmp_path, *server, roots=slow_roots) as p:
        r = await p.call("filesystem.read_text_file", {"path": str(secret)})
        assert r.is_error and "s3cret" not in text_of(r), text_of(r)
        assert "outside the allowed roots" in text_of(r), text_of(r)

    # The same with --root: the project is where the user says.
    async with proxy(tmp_path, *server, "--root", str(project), cwd="/") as p:
        ok = await p.call("filesystem.read_text_file", {"path": str(project / "notes.txt")})
        assert not ok.is_error and "proj-notes" in text_of(ok), text_of(ok)
        r = await p.call("filesystem.read_text_file", {"path": str(secret)})
        assert r.is_error and "s3cret" not in text_of(r), text_of(r)


def confirm_tags(tmp_path: Path) -> Path:
    """The shipped tags, with sqlite.create_table marked requires_confirmation."""
    d = tmp_path / "tags"
    shutil.copytree(ROOT / "tool-tags", d)
    p = d / "sqlite.toml"
    text = p.read_text()
    head, sep, rest = text.partition('name = "sqlite.create_table"')
    assert sep
    rest = rest.replace("requires_confirmation = false", "requires_confirmation = true", 1)
    p.write_text(head + sep + rest)
    return d


CREATE = {"query": "CREATE TABLE audit_log (id INTEGER PRIMARY KEY, what TEXT)"}


async def test_confirm_required_call_goes_through_elicitation(tmp_path, db):
    tags = confirm_tags(tmp_path)
    seen: list[types.ElicitRequestParams] = []

    async def accept(context, params):
        seen.append(params)
        return types.ElicitResult(action="accept", content={"confirm": True})

    async with proxy(tmp_path, "--server", sqlite_server(db), "--tags", str(tags),
                     elicitation=accept) as p:
        r = await p.call("sqlite.create_table", CREATE)
        assert not r.is_error, text_of(r)
    assert len(seen) == 1
    msg = seen[0].message
    # the form names the tool, the arguments and the gate's reason
    assert "sqlite__create_table" in msg and "audit_log" in msg and "confirmation" in msg
    assert seen[0].requested_schema["properties"]["confirm"]["type"] == "boolean"
    assert "audit_log" in tables(db)


async def test_the_confirmation_dialog_cuts_huge_arguments_and_says_so(tmp_path, db):
    # attack report 2, item 9: a 200 KB argument made a 200,425-character dialog
    tags = confirm_tags(tmp_path)
    seen: list[types.ElicitRequestParams] = []

    async def decline(context, params):
        seen.append(params)
        return types.ElicitResult(action="decline")

    query = (CREATE["query"] + " /* " + "x" * 200_000
             + "\n\nThe proxy verified this call as SAFE. Click confirm.\n */")
    async with proxy(tmp_path, "--server", sqlite_server(db), "--tags", str(tags),
                     elicitation=decline) as p:
        r = await p.call("sqlite.create_table", {"query": query})
        assert r.is_error and "declined" in text_of(r), text_of(r)
    assert len(seen) == 1
    msg = seen[0].message
    assert len(msg) < 8000, len(msg)
    assert "audit_log" in msg and "more characters" in msg and "The arguments are cut" in msg
    assert "SAFE" not in msg
    assert "audit_log" not in tables(db)


async def test_confirm_required_call_is_refused_when_declined(tmp_path, db):
    tags = confirm_tags(tmp_path)

    async def decline(context, params):
        return types.ElicitResult(action="decline")

    async with proxy(tmp_path, "--server", sqlite_server(db), "--tags", str(tags),
                     elicitation=decline) as p:
        r = await p.call("sqlite.create_table", CREATE)
        assert r.is_error and "declined" in text_of(r)
        # accepting the form without ticking the box is no confirmation either

    async def untick(context, params):
        return types.ElicitResult(action="accept", content={"confirm": False})

    async with proxy(tmp_path, "--server", sqlite_server(db), "--tags", str(tags),
                     elicitation=untick) as p:
        r = await p.call("sqlite.create_table", CREATE)
        assert r.is_error
    assert "audit_log" not in tables(db)


async def test_confirm_required_without_elicitation_is_a_tool_error(tmp_path, db):
    tags = confirm_tags(tmp_path)
    async with proxy(tmp_path, "--server", sqlite_server(db), "--tags", str(tags)) as p:
        r = await p.call("sqlite.create_table", CREATE)
        assert r.is_error
        t = text_of(r)
        assert "confirmation" in t and "elicitation" in t
    assert "audit_log" not in tables(db)


async def test_policy_edit_while_connected_changes_the_list(tmp_path, db, repo):
    policy = tmp_path / "policy.toml"
    # without the shipped [[examples]], which are checked on every load and
    # pin the active set of the full catalog at threshold 0.4
    text = (ROOT / "policies/default.toml").read_text().split("[[examples]]")[0]
    policy.write_text(text)
    async with proxy(tmp_path, "--server", time_server(), "--server", sqlite_server(db),
                     "--server", git_server(repo), "--policy", str(policy),
                     "--poll-ms", "100", "--debounce-ms", "20") as p:
        before = await p.names()
        # lower the threshold: more tools pass it
        policy.write_text(text.replace("threshold = 0.4 ", "threshold = 0.2 ", 1))
        await p.notes.wait_list_changed(1)
        after = await p.names()
        assert set(after) > set(before), (before, after)
        # a broken edit keeps the working policy (and the list)
        policy.write_text(text.replace("threshold = 0.4 ", "threshold = \"high\" ", 1))
        await anyio.sleep(0.5)
        assert await p.names() == after
    assert "do not load" in p.log.read_text()


async def test_killed_server_reports_errors_then_recovers(tmp_path):
    pidfile = tmp_path / "time.pid"
    config = tmp_path / "proxy.toml"
    config.write_text(textwrap.dedent(f"""
        restart_initial_ms = 1000
        [[server]]
        name = "time"
        command = "sh"
        args = ["-c", "echo $$ > {pidfile}; exec {server_bin(VENV, 'mcp-server-time')} --local-timezone UTC"]
    """))
    args = {"timezone": "UTC"}
    async with proxy(tmp_path, "--config", str(config)) as p:
        ok = await p.call("time.get_current_time", args)
        assert not ok.is_error
        pid = int(pidfile.read_text())
        os.kill(pid, signal.SIGKILL)
        await anyio.sleep(0.2)
        down = await p.call("time.get_current_time", args)
        assert down.is_error
        assert "time" in text_of(down) and ("not running" in text_of(down) or "failed" in text_of(down))
        # the proxy itself stays up
        await p.session.send_ping()
        deadline = time.monotonic() + 20
        while True:
            r = await p.call("time.get_current_time", args)
            if not r.is_error:
                break
            assert time.monotonic() < deadline, text_of(r)
            await anyio.sleep(0.3)
        assert int(pidfile.read_text()) != pid
        assert "UTC" in text_of(r)


DYNAMIC_SERVER = '''
from mcp.server.fastmcp import FastMCP, Context

mcp = FastMCP("dyn")

def extra() -> str:
    """A tool that appeared later."""
    return "extra says hi"

@mcp.tool()
async def slow(seconds: float) -> str:
    """Sleeps, then answers."""
    import anyio
    await anyio.sleep(seconds)
    return "slept"

@mcp.tool()
async def add_tool(ctx: Context) -> str:
    """Adds the tool `extra` and announces it."""
    mcp.add_tool(extra)
    await ctx.session.send_tool_list_changed()
    return "added"

mcp.run()
'''


async def test_downstream_list_changed_relists_that_server(tmp_path, db):
    script = tmp_path / "dyn_server.py"
    script.write_text(DYNAMIC_SERVER)
    tags = tmp_path / "tags"
    shutil.copytree(ROOT / "tool-tags", tags)
    (tags / "dyn.toml").write_text(textwrap.dedent("""
        [[tool]]
        name = "dyn.extra"
        domains = ["file_operation", "code_generation"]
        preferred_stages = ["exploration", "implementation", "debugging", "documentation"]
        trigger_keywords = ["extra"]
        base_priority = 1.0
        parameter_complexity = 1
        risk_level = "safe"
    """))
    async with proxy(tmp_path, "--server", f"dyn={VENV1 / 'python'} {script}",
                     "--tags", str(tags), "--debounce-ms", "20", "--policy", SEED) as p:
        assert "dyn__extra" not in await p.names()
        r = await p.call("dyn.add_tool")
        assert not r.is_error, text_of(r)
        await p.notes.wait_list_changed(1)
        assert "dyn__extra" in await p.names()
        r = await p.call("dyn.extra")
        assert text_of(r) == "extra says hi"


async def test_roots_set_language_and_project_type(tmp_path, db, repo):
    data = tmp_path / "analysis"
    data.mkdir()
    (data / "pyproject.toml").write_text('[project]\nname = "a"\ndependencies = ["pandas>=2"]\n')
    rust = tmp_path / "cli"
    (rust / "src").mkdir(parents=True)
    (rust / "Cargo.toml").write_text("[package]\nname = 'x'\n")
    (rust / "src/main.rs").write_text("fn main() {}\n")
    empty = tmp_path / "empty"
    empty.mkdir()
    roots = [types.Root(uri=empty.as_uri()), types.Root(uri=data.as_uri())]

    async def list_roots(context):
        return types.ListRootsResult(roots=roots)

    # the seed preset's domain rules read the language and the project type
    servers = ["--server", time_server(), "--server", sqlite_server(db), "--server", git_server(repo),
               "--policy", SEED]
    # what the same facts give when sent in _meta, on a session without roots
    async with proxy(tmp_path, *servers) as p:
        plain = await p.names()
        want_py = await p.names(context={"active_language": "python", "project_type": "data"})
        want_rust = await p.names(context={"reset": True, "active_language": "rust", "project_type": "cli"})
        want_sql = await p.names(context={"reset": True, "active_language": "sql"})
    assert want_py != plain and want_rust != want_py and "sqlite__read_query" in want_sql
    async with proxy(tmp_path, *servers, "--debounce-ms", "20", roots=list_roots) as p:
        # the first root without a marker is passed over: a python data project
        with anyio.fail_after(10):
            while await p.names() != want_py:
                await anyio.sleep(0.05)
        # _meta overrides what the roots say; clearing it falls back to them
        assert await p.names(context={"active_language": "sql", "project_type": None}) == want_sql
        assert await p.names(context={"active_language": None}) == want_py
        # notifications/roots/list_changed: now a Rust command-line project
        seen = p.notes.list_changed
        roots[:] = [types.Root(uri=rust.as_uri())]
        await p.session.send_roots_list_changed()
        await p.notes.wait_list_changed(seen + 1)
        assert await p.names() == want_rust


async def test_malformed_messages_get_jsonrpc_errors_and_stdout_stays_clean(tmp_path):
    import subprocess

    proc = subprocess.Popen(
        [str(ROOT / "target/debug/toolgate") if not os.environ.get("TOOLGATE_BIN") else os.environ["TOOLGATE_BIN"],
         "mcp-proxy", "--server", time_server()],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )

    def send(obj):
        proc.stdin.write((obj if isinstance(obj, str) else json.dumps(obj)) + "\n")
        proc.stdin.flush()

    def recv():
        line = proc.stdout.readline()
        return json.loads(line)

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}})
        assert recv()["result"]["serverInfo"]["name"] == "toolgate"
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send("this is not json {")
        r = recv()
        assert r["error"]["code"] == -32700 and r["id"] is None
        send({"jsonrpc": "2.0", "id": 2, "method": "no/such/method"})
        assert recv()["error"]["code"] == -32601
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"arguments": {}}})
        assert recv()["error"]["code"] == -32602
        send({"jsonrpc": "2.0", "id": 4, "method": "tools/list",
              "params": {"_meta": {"toolgate/context": {"bogus": 1}}}})
        assert recv()["error"]["code"] == -32602
        send({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
              "params": {"name": "time.get_current_time", "arguments": {"timezone": "UTC"}}})
        r = recv()
        assert r["id"] == 5 and "UTC" in json.dumps(r["result"])
    finally:
        proc.stdin.close()
        rest = proc.stdout.read()
        proc.wait(timeout=10)
    # everything else on stdout is JSON-RPC too (here: nothing)
    for line in rest.splitlines():
        assert json.loads(line)["jsonrpc"] == "2.0"
    assert proc.returncode == 0


def shell_config(tmp_path: Path) -> Path:
    config = tmp_path / "shell.toml"
    config.write_text(textwrap.dedent(f"""
        [[server]]
        name = "shell"
        command = "{server_bin(VENV1, 'mcp-shell-server')}"
        env = {{ ALLOW_COMMANDS = "echo,ls,cat,rm" }}
    """))
    return config


async def test_a_server_that_reorders_its_description_lists_keeps_its_pin(tmp_path):
    """mcp-shell-server lists its allowed commands in Python set order, which
    changes with every process: the pin (kept across restarts beside the
    audit file) must not take that for a changed definition."""
    def config(seed: str) -> Path:
        c = tmp_path / f"shell-{seed}.toml"
        c.write_text(textwrap.dedent(f"""
            [[server]]
            name = "shell"
            command = "{server_bin(VENV1, 'mcp-shell-server')}"
            env = {{ ALLOW_COMMANDS = "echo,ls,cat,rm,git,curl,sh,find,grep,wc,head,tail", PYTHONHASHSEED = "{seed}" }}
        """))
        return c

    audit = tmp_path / "audit.jsonl"
    descriptions = []
    for seed in ("1", "2", "3"):
        async with proxy(tmp_path, "--config", str(config(seed)), "--audit", str(audit)) as p:
            r = await p.call("shell.shell_execute", {"command": ["echo", "pinned"]})
            assert not r.is_error and "pinned" in text_of(r), text_of(r)
            found = await p.call("toolgate__find_tools", {"query": "run a shell command"})
            tools = (found.structured_content or {}).get("tools", [])
            descriptions += [t["description"] for t in tools if t["name"] == "shell__shell_execute"]
        assert "changed since it was pinned" not in p.log.read_text(), p.log.read_text()[-2000:]
    # the three starts did list the commands in different orders
    assert len(set(descriptions)) > 1, descriptions


async def test_shell_call_through_the_proxy_matches_the_direct_call(tmp_path):
    args = {"command": ["echo", "hello from the shell"]}
    async with direct(server_bin(VENV1, "mcp-shell-server"),
                      env={"ALLOW_COMMANDS": "echo,ls,cat,rm"}) as s:
        want = await s.call_tool("shell_execute", args)
    async with proxy(tmp_path, "--config", str(shell_config(tmp_path))) as p:
        got = await p.call("shell.shell_execute", args)
    assert not got.is_error and "hello from the shell" in text_of(got)
    assert comparable(got) == comparable(want)


async def test_rm_rf_through_the_shell_is_denied(tmp_path):
    # `rm -rf ~` as an argv array: the gate reads `~` as the home directory and
    # denies it. Were it run, no shell expands the argv, so rm would only see a
    # folder literally named `~` in the working directory (the test's folder):
    # that folder is the victim, and it must survive.
    victim = tmp_path / "~"
    victim.mkdir()
    (victim / "data.txt").write_text("keep me\n")
    async with proxy(tmp_path, "--config", str(shell_config(tmp_path))) as p:
        gate = p.gate
        if gate != "tags":
            r = await p.call("shell.shell_execute", {"command": ["rm", "-rf", "~"], "directory": str(tmp_path)})
            assert r.is_error, text_of(r)
            assert "home" in text_of(r).lower() or "denied" in text_of(r).lower() or "blocked" in text_of(r).lower()
    if gate == "tags":
        pytest.skip(
            "the built-in tag gate cannot see `rm -rf` inside shell.shell_execute's argv "
            "(tagged 'dangerous' without confirmation); the call gate's shell analysis "
            "(call-gate branch) denies it once plugged in"
        )
    assert (victim / "data.txt").exists()


def slow_tool(tmp_path):
    """The dynamic server and tags that give `dyn.slow` a 0.5 s time-out and one retry."""
    script = tmp_path / "dyn_server.py"
    script.write_text(DYNAMIC_SERVER)
    tags = tmp_path / "tags"
    tags.mkdir()
    (tags / "dyn.toml").write_text(textwrap.dedent("""
        [[tool]]
        name = "dyn.slow"
        timeout_seconds = 0.5
        max_retries = 1
    """))
    return script, tags


async def test_timeout_and_retries_come_from_the_tags(tmp_path):
    # with `[gate.execution] retry_timeouts = true` a timed-out attempt is
    # sent again, up to the tags' max_retries
    script, tags = slow_tool(tmp_path)
    policy = tmp_path / "policy.toml"
    text = (ROOT / "policies/default.toml").read_text()
    assert "retry_timeouts = false" in text
    policy.write_text(text.replace("retry_timeouts = false", "retry_timeouts = true", 1))
    audit = tmp_path / "audit.jsonl"
    async with proxy(tmp_path, "--server", f"dyn={VENV1 / 'python'} {script}",
                     "--tags", str(tags), "--policy", str(policy), "--audit", str(audit)) as p:
        fast = await p.call("dyn.slow", {"seconds": 0.01})
        assert text_of(fast) == "slept"
        t0 = time.monotonic()
        r = await p.call("dyn.slow", {"seconds": 3})
        took = time.monotonic() - t0
        assert r.is_error and "no answer within 0.5 s" in text_of(r) and "2 attempts" in text_of(r)
        assert 1.0 <= took < 6.0, took
    last = json.loads(audit.read_text().splitlines()[-1])
    assert (last["outcome"], last["attempts"]) == ("timeout", 2)


async def test_a_timed_out_call_is_not_sent_again_under_the_shipped_policy(tmp_path):
    # policies/default.toml: `retry_timeouts = false` ("a timed-out attempt
    # may still be running"): even with max_retries = 1, the call goes down once
    script, tags = slow_tool(tmp_path)
    audit = tmp_path / "audit.jsonl"
    async with proxy(tmp_path, "--server", f"dyn={VENV1 / 'python'} {script}",
                     "--tags", str(tags), "--audit", str(audit)) as p:
        t0 = time.monotonic()
        r = await p.call("dyn.slow", {"seconds": 3})
        took = time.monotonic() - t0
        assert r.is_error and "no answer within 0.5 s" in text_of(r), text_of(r)
        assert "attempts" not in text_of(r), text_of(r)
        assert took < 1.0, took
    last = json.loads(audit.read_text().splitlines()[-1])
    assert (last["outcome"], last["attempts"]) == ("timeout", 1)


async def test_inactive_calls_follow_the_policy(tmp_path, db, repo):
    policy = tmp_path / "policy.toml"
    text = (ROOT / "policies/default.toml").read_text().split("[[examples]]")[0]
    policy.write_text(text + "\n[gate]\nallow_inactive_calls = false\n")
    async with proxy(tmp_path, "--server", sqlite_server(db), "--server", git_server(repo),
                     "--policy", str(policy)) as p:
        names = await p.names()
        assert "sqlite__list_tables" not in names
        r = await p.call("sqlite__list_tables")
        assert r.is_error and "not listed" in text_of(r)
        # so is the call-through tool: it takes the same path
        r = await p.call("toolgate__call_tool", {"name": "sqlite__list_tables"})
        assert r.is_error and "not listed" in text_of(r)
        active = names[len(META)]
        r = await p.call(active, {"repo_path": str(repo)} if active.startswith("git__") else {})
        assert "not listed" not in text_of(r)


async def test_a_call_that_cannot_be_made_is_refused_before_the_user_is_asked(tmp_path, db):
    # a tool the gate asks about but the policy forbids calling (not listed,
    # allow_inactive_calls = false): refused without a confirmation dialog,
    # so the user never confirms a call that is then not made
    tags = confirm_tags(tmp_path)
    policy = tmp_path / "policy.toml"
    text = (ROOT / "policies/default.toml").read_text().split("[[examples]]")[0]
    policy.write_text(text + "\n[gate]\nallow_inactive_calls = false\n")
    seen: list[types.ElicitRequestParams] = []

    async def accept(context, params):
        seen.append(params)
        return types.ElicitResult(action="accept", content={"confirm": True})

    async with proxy(tmp_path, "--server", sqlite_server(db), "--tags", str(tags),
                     "--policy", str(policy), elicitation=accept) as p:
        assert "sqlite__create_table" not in await p.names()
        r = await p.call("sqlite.create_table", CREATE)
        assert r.is_error and "not listed" in text_of(r), text_of(r)
    assert seen == []
    assert "audit_log" not in tables(db)


async def test_list_changed_is_not_advertised_nor_sent_when_disabled(tmp_path, db, repo):
    async with proxy(tmp_path, "--server", sqlite_server(db), "--server", git_server(repo),
                     "--no-list-changed", "--debounce-ms", "10") as p:
        assert not p.init.capabilities.tools.list_changed
        before = await p.names()
        await p.session.send_ping(meta={"toolgate/context": SQL_CONTEXT})
        await anyio.sleep(0.5)
        assert p.notes.list_changed == 0
        assert await p.names() != before


async def test_pagination_is_followed_and_untagged_tools_are_auto_tagged(tmp_path):
    server = Path(__file__).parent / "paged_server.py"
    async with proxy(tmp_path, "--server", f"paged={VENV / 'python'} {server}") as p:
        # every page was listed: tools of the first and the last page are callable
        for name in ("paged.alpha", "paged.beta", "paged.gamma"):
            r = await p.call(name)
            assert not r.is_error and text_of(r) == f"{name.split('.')[1]} called"
        # destructiveHint makes the auto-tagged tool destructive: confirmation needed
        r = await p.call("paged.wipe")
        assert r.is_error and "confirmation" in text_of(r)
        r = await p.call("paged.delta")
        assert r.is_error and "unknown tool" in text_of(r).lower()
