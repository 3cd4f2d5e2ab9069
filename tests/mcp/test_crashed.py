"""A downstream server that crashes at start (issue 29, item 10: seen with
mcp-server-sqlite in a virtualenv whose `mcp` had been upgraded and no longer
imports): while the proxy restarts it, `toolgate__find_tools` names the server
and its last error in every answer, whether the server is down or starting
again, instead of a bare "No tool matches"."""

from __future__ import annotations

import sys
import textwrap
import time

import anyio
import pytest

from conftest import VENV, proxy, server_bin, text_of

pytestmark = pytest.mark.anyio

# It crashes after half a second (a slow import), so that each restart spends
# a while starting: find_tools meets the server both starting and down.
CRASHING = '''
import sys
import time
time.sleep(0.5)
print("Traceback (most recent call last):", file=sys.stderr)
raise ImportError("cannot import name 'FastMCP' from 'mcp.server' (simulated upgrade)")
'''


async def test_find_tools_names_a_server_that_crashes_at_start(tmp_path):
    script = tmp_path / "crashing_server.py"
    script.write_text(CRASHING)
    config = tmp_path / "proxy.toml"
    config.write_text(textwrap.dedent(f"""
        restart_initial_ms = 100
        restart_max_ms = 300
        [[server]]
        name = "time"
        command = "sh"
        args = ["-c", "exec {server_bin(VENV, 'mcp-server-time')} --local-timezone UTC"]
        [[server]]
        name = "sqlite"
        command = "{sys.executable}"
        args = ["{script}"]
    """))
    async with proxy(tmp_path, "--config", str(config)) as p:
        seen_down = seen_restarting = 0
        deadline = time.monotonic() + 5
        answers = []
        while time.monotonic() < deadline:
            r = await p.call("toolgate__find_tools", {"query": "which tables are in my sqlite database"})
            text = text_of(r)
            answers.append(text)
            # every answer names the crashed server, with why it is not up
            assert "server `sqlite`" in text, text
            assert "Not every server is up" in text, text
            if "is not running" in text:
                seen_down += 1
            if "is restarting" in text:
                seen_restarting += 1
                assert "after it failed:" in text, text
            await anyio.sleep(0.05)
        # the server that works is not named once it is up
        assert "server `time`" not in answers[-1], answers[-1]
        # the proxy went through both states of the restart loop, and each
        # answer in either state said why the server is not up
        assert seen_down > 0, answers[-1]
        assert seen_restarting > 0, answers
