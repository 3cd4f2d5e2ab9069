"""The thread settings toolgate gives its own candle at start
(`embed::set_thread_env`: RAYON_NUM_THREADS, CANDLE_NUM_THREADS) are not
passed on to the downstream servers it starts; a value the user set is, like
the rest of the proxy's environment."""

from __future__ import annotations

import textwrap

import anyio
import pytest

from conftest import VENV, proxy, server_bin

pytestmark = pytest.mark.anyio


async def child_env(tmp_path, env: dict) -> dict:
    out = tmp_path / "env.txt"
    config = tmp_path / "proxy.toml"
    config.write_text(textwrap.dedent(f"""
        [[server]]
        name = "time"
        command = "sh"
        args = ["-c", "env > {out}; exec {server_bin(VENV, 'mcp-server-time')} --local-timezone UTC"]
    """))
    async with proxy(tmp_path, "--config", str(config), env=env):
        with anyio.fail_after(30):
            while not out.exists() or not out.read_text():
                await anyio.sleep(0.1)
    return dict(line.split("=", 1) for line in out.read_text().splitlines() if "=" in line)


async def test_the_proxys_own_thread_settings_stay_with_the_proxy(tmp_path):
    env = await child_env(tmp_path, {"TOOLGATE_TEST_MARK": "passed-on"})
    assert env.get("TOOLGATE_TEST_MARK") == "passed-on", env
    assert "CANDLE_NUM_THREADS" not in env and "RAYON_NUM_THREADS" not in env, env


async def test_thread_settings_the_user_gave_are_passed_on(tmp_path):
    env = await child_env(tmp_path, {"CANDLE_NUM_THREADS": "3"})
    assert env.get("CANDLE_NUM_THREADS") == "3", env
