"""A downstream server slower to start than rmcp's `server/discover` probe
timeout (10 s, `era = "auto"`, the default): rmcp falls back to `initialize`
and the server then answers the abandoned probe first (src/mcp/probe.rs).

- A handshake-era server (mcp 1.x) answers the probe with an error: the
  proxy drops that late answer and the `initialize` that follows succeeds on
  the first start. Before, the start failed with "conflict initialized
  response id" or an uncorrelated error, and every restart failed the same
  way (seen under load: a Python server importing its SDK on a busy 2-core
  machine).
- A 2026-07-28 server (mcp 2.x) answers it with a result and then refuses
  the `initialize`: the proxy remembers that the server answers
  `server/discover`, and its next start probes without rmcp's timeout, so
  one restart puts it right."""

from __future__ import annotations

import textwrap
import time

import anyio
import pytest

from conftest import VENV, VENV1, proxy, server_bin, text_of

pytestmark = pytest.mark.anyio

SLOW = 11  # seconds without reading: past rmcp's 10 s probe timeout


def config_for(tmp_path, name: str, command: str):
    config = tmp_path / "proxy.toml"
    config.write_text(textwrap.dedent(f"""
        startup_timeout_ms = 60000
        restart_initial_ms = 100
        [[server]]
        name = "{name}"
        command = "sh"
        args = ["-c", "sleep {SLOW}; exec {command}"]
    """))
    return config


async def wait_for(p, tool: str, query: str, limit: float) -> float:
    """Seconds until `toolgate__find_tools` finds `tool` for `query`."""
    started = time.monotonic()
    with anyio.fail_after(limit):
        while True:
            r = await p.call("toolgate__find_tools", {"query": query})
            found = (r.structured_content or {}).get("tools", [])
            if tool in [t["name"] for t in found]:
                return time.monotonic() - started
            await anyio.sleep(0.2)


async def test_a_slow_handshake_era_server_starts_on_its_first_start(tmp_path):
    db = tmp_path / "t.db"
    config = config_for(tmp_path, "sqlite", f"{server_bin(VENV1, 'mcp-server-sqlite')} --db-path {db}")
    async with proxy(tmp_path, "--config", str(config)) as p:
        await wait_for(p, "sqlite__list_tables", "list the tables in my sqlite database", 40)
        r = await p.call("toolgate__call_tool", {"name": "sqlite__list_tables", "arguments": {}})
        assert not r.is_error, text_of(r)
        log = p.log.read_text()
        assert "dropped a late answer to an abandoned server/discover probe" in log, log[-3000:]
        # up on its first start: no failed start, no restart
        assert "server down" not in log, log[-3000:]


async def test_a_slow_modern_server_is_up_after_one_restart(tmp_path):
    config = config_for(tmp_path, "time", f"{server_bin(VENV, 'mcp-server-time')} --local-timezone UTC")
    async with proxy(tmp_path, "--config", str(config)) as p:
        await wait_for(p, "time__get_current_time", "what is the current time in UTC", 50)
        r = await p.call("toolgate__call_tool",
                         {"name": "time__get_current_time", "arguments": {"timezone": "UTC"}})
        assert not r.is_error and "UTC" in text_of(r), text_of(r)
        log = p.log.read_text()
        # the refused initialize cost one restart, no more
        assert log.count("server down") == 1, log[-3000:]
