"""Issue 29, what the sixth newcomer pass found in the proxy with real
servers (closing note 36): the `era = "auto"` probe of an mcp 1.x server
(mcp-server-sqlite) no longer floods the proxy's stderr with the server's
pydantic errors (one summary line; the whole text at debug level), a
misspelt argument of a downstream tool is answered with the declared name,
and a server that crashes at start is named with its own last stderr line.
The official `mcp` SDK is the client.

Run alone: `.venv/bin/python -m pytest -q tests/mcp/test_newcomer_round9.py`."""

from __future__ import annotations

import sys
import textwrap
import time

import anyio
import pytest

from conftest import filesystem_bin, proxy, sqlite_server, text_of

pytestmark = pytest.mark.anyio

QUESTION = "which tables are in my sqlite database"
SUMMARY = "server sqlite answered the 2026-07-28 probe with errors"


async def wait_for_tool(p, name: str, query: str) -> None:
    """Searches until `name` is found (the server is up and listed)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        r = await p.call("toolgate__find_tools", {"query": query})
        if any(t["name"] == name for t in (r.structured_content or {}).get("tools", [])):
            return
        await anyio.sleep(0.1)
    raise AssertionError(f"{name} was not found: {text_of(r)}")


async def test_the_era_probe_of_an_mcp1_server_is_one_line_not_ninety(tmp_path, db):
    # item 3: at the default level, one line instead of the server's ~90
    async with proxy(tmp_path, "--server", sqlite_server(db), env={"RUST_LOG": "warn,toolgate::mcp=info"}) as p:
        await wait_for_tool(p, "sqlite__list_tables", QUESTION)
        await anyio.sleep(0.5)  # the probe's grace time
        log = p.log.read_text()
    assert log.count(SUMMARY) == 1, log
    assert "using the handshake era" in log, log
    for noise in ("pydantic", "literal_error", "Input should be", "Field required"):
        assert noise not in log, log
    # the whole text is kept at debug level
    async with proxy(tmp_path, "--server", sqlite_server(db), env={"RUST_LOG": "warn,toolgate::mcp=debug"}) as p:
        await wait_for_tool(p, "sqlite__list_tables", QUESTION)
        log = p.log.read_text()
    assert SUMMARY in log and "server/discover" in log, log
    # `--era NAME=legacy` skips the probe: nothing to summarise, no noise
    async with proxy(tmp_path, "--server", sqlite_server(db), "--era", "sqlite=legacy",
                     env={"RUST_LOG": "warn,toolgate::mcp=info"}) as p:
        await wait_for_tool(p, "sqlite__list_tables", QUESTION)
        log = p.log.read_text()
    assert SUMMARY not in log and "pydantic" not in log, log


async def test_a_misspelt_downstream_argument_is_answered_with_the_declared_name(tmp_path):
    # item 4: filesystem's read_text_file declares path, head and tail (its
    # arguments are analysed by role); `taill` gets "did you mean `tail`?"
    (tmp_path / "notes.txt").write_text("one\ntwo\nthree")
    fs = f"filesystem={filesystem_bin()} {tmp_path}"
    async with proxy(tmp_path, "--server", fs, "--root", str(tmp_path)) as p:
        await wait_for_tool(p, "filesystem__read_text_file", "read a text file")
        path = str(tmp_path / "notes.txt")
        r = await p.call("filesystem__read_text_file", {"path": path, "taill": 1})
        assert r.is_error, text_of(r)
        t = text_of(r)
        assert "`taill`" in t and "did you mean `tail`?" in t, t
        # the same through toolgate__call_tool
        r = await p.call("toolgate__call_tool", {"name": "filesystem__read_text_file",
                                                 "arguments": {"path": path, "taill": 1}})
        assert r.is_error and "did you mean `tail`?" in text_of(r), text_of(r)
        # spelt right, the call goes through
        r = await p.call("filesystem__read_text_file", {"path": path, "tail": 1})
        assert not r.is_error and "three" in text_of(r), text_of(r)


CRASHING = '''
import sys
import time
time.sleep(0.3)
print("Traceback (most recent call last):", file=sys.stderr)
print("ImportError: cannot import name 'FastMCP' from 'mcp.server' (simulated upgrade)", file=sys.stderr)
sys.exit(1)
'''


async def test_a_crashed_server_is_named_with_its_last_stderr_line(tmp_path):
    # item 5 (item 10's leftover): the server's own last words, clipped, in
    # the find_tools answer and in the log
    script = tmp_path / "crashing_server.py"
    script.write_text(CRASHING)
    config = tmp_path / "proxy.toml"
    config.write_text(textwrap.dedent(f"""
        restart_initial_ms = 100
        restart_max_ms = 300
        [[server]]
        name = "sqlite"
        command = "{sys.executable}"
        args = ["{script}"]
    """))
    async with proxy(tmp_path, "--config", str(config)) as p:
        deadline = time.monotonic() + 10
        seen = None
        while time.monotonic() < deadline and seen is None:
            r = await p.call("toolgate__find_tools", {"query": QUESTION})
            t = text_of(r)
            if "ImportError: cannot import name 'FastMCP'" in t:
                seen = t
            await anyio.sleep(0.1)
        assert seen is not None, t
        assert "server `sqlite`" in seen and "its last stderr:" in seen, seen
        log = p.log.read_text()
    down = [line for line in log.splitlines() if "server down:" in line]
    assert down and all("its last stderr:" in line and "ImportError" in line for line in down), log
