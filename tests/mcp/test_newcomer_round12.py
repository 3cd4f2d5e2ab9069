"""Issue 29, the last stop's leftover 10: on SIGTERM (or SIGINT) the proxy
stops its downstream servers and exits 0, and a server that the same
signal reached (it was sent to the process group, as a terminal's Ctrl-C,
systemd or a supervisor does) is not reported as a crash: no "server down"
line, no "restarting", no stale stderr blamed, nothing started again. Over
Streamable HTTP (`--listen`) and on stdio, with a real server
(mcp-server-time).

Run alone: `.venv/bin/python -m pytest -q tests/mcp/test_newcomer_round12.py`."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import time_server, toolgate_bin


def start(tmp_path: Path, *args: str) -> tuple[subprocess.Popen, Path]:
    """`toolgate mcp-proxy --server time=… ARGS` in a process group of its
    own (the servers it starts join it), its stderr in a file; returns once
    the server is up."""
    log = tmp_path / f"proxy-{len(list(tmp_path.iterdir()))}.log"
    err = open(log, "w")
    proc = subprocess.Popen(
        [str(toolgate_bin()), "mcp-proxy", "--server", time_server(), *args],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err, cwd=tmp_path,
        env={**os.environ, "RUST_LOG": "warn,toolgate::mcp=info"},
        start_new_session=True,
    )
    err.close()
    deadline = time.monotonic() + 30
    while "server up server=time" not in log.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"the proxy did not start the time server:\n{log.read_text()[-3000:]}")
        time.sleep(0.05)
    return proc, log


def stop(proc: subprocess.Popen, log: Path, whole_group: bool) -> tuple[int, float, str]:
    """Sends SIGTERM (to the proxy, or to its whole process group); returns
    the exit code, the seconds it took and the log."""
    t0 = time.monotonic()
    if whole_group:
        os.killpg(proc.pid, signal.SIGTERM)
    else:
        proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"the proxy did not exit within 10 s of SIGTERM:\n{log.read_text()[-3000:]}")
    took = time.monotonic() - t0
    # a restarted server would log its start after the proxy's exit: wait a little
    time.sleep(0.3)
    return code, took, log.read_text()


def assert_a_quiet_stop(code: int, took: float, log: str) -> None:
    assert code == 0, f"exit {code}:\n{log}"
    assert took < 5, f"{took:.1f} s:\n{log}"
    for crash in ("server down", "restarting", "its last stderr", "WARN", "ERROR"):
        assert crash not in log, f"{crash!r} in the log of a stop:\n{log}"
    assert log.count("server up server=time") == 1, log


@pytest.mark.parametrize("whole_group", [True, False], ids=["group", "proxy"])
def test_sigterm_over_http_stops_the_servers_quietly_and_exits_0(tmp_path, whole_group):
    proc, log = start(tmp_path, "--listen", "127.0.0.1:0")
    code, took, text = stop(proc, log, whole_group)
    assert_a_quiet_stop(code, took, text)
    assert "shutting down: finishing the calls in flight" in text, text


@pytest.mark.parametrize("whole_group", [True, False], ids=["group", "proxy"])
def test_sigterm_on_stdio_stops_the_servers_quietly_and_exits_0(tmp_path, whole_group):
    proc, log = start(tmp_path)
    code, took, text = stop(proc, log, whole_group)
    assert_a_quiet_stop(code, took, text)
    assert "stopping on a signal" in text, text
