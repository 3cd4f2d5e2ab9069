"""`toolgate mcp-proxy` over Streamable HTTP, both ways.

Toward servers: a remote server (`[[server]] url`, a bearer token from an
environment variable in `headers`) started by the test with the `mcp` SDK's
Streamable HTTP server behind a token check. Toward clients: `--listen`,
with several `mcp` SDK clients (`streamable_http_client`) at once, each
session with its own context, list and audit session id; the bearer-token
check, the Origin check, the call limits and the graceful shutdown.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import textwrap
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

from test_discovery import MUTATING_SERVER
from conftest import (
    SEED,
    VENV1,
    Notes,
    Proxy,
    proxy,
    server_bin,
    sqlite_server,
    text_of,
    time_server,
    toolgate_bin,
)

pytestmark = pytest.mark.anyio

_count = itertools.count()

# A remote MCP server: the SDK's FastMCP over Streamable HTTP, behind a
# bearer-token check; every request's verdict is appended to a log file.
REMOTE_SERVER = '''
import os, sys
import anyio, uvicorn
from mcp.server.fastmcp import FastMCP, Context

mcp = FastMCP("remote")

@mcp.tool()
def lookup_order(order_id: str) -> str:
    """Look up a customer order by its id and return its shipping status."""
    return f"order {order_id}: shipped"

@mcp.tool()
async def add_refund_tool(ctx: Context) -> str:
    """Adds the refund tool and announces it with tools/list_changed."""
    def refund_order(order_id: str) -> str:
        """Refund a customer order by its id."""
        return f"order {order_id}: refunded"
    mcp.add_tool(refund_order)
    await ctx.session.send_tool_list_changed()
    return "added"

app = mcp.streamable_http_app()
TOKEN = os.environ.get("REMOTE_TOKEN")
LOG = open(sys.argv[2], "a")

async def guarded(scope, receive, send):
    if scope["type"] == "http" and TOKEN is not None:
        auth = dict(scope["headers"]).get(b"authorization", b"").decode()
        ok = auth == f"Bearer {TOKEN}"
        LOG.write(("ok" if ok else "rejected") + "\\n")
        LOG.flush()
        if not ok:
            await send({"type": "http.response.start", "status": 401,
                        "headers": [(b"content-type", b"text/plain")]})
            await send({"type": "http.response.body", "body": b"unauthorized"})
            return
    await app(scope, receive, send)

uvicorn.run(guarded, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning")
'''

# A local server whose tool sleeps on demand (limits, shutdown).
SLOW_SERVER = '''
import anyio
from mcp.server.fastmcp import FastMCP, Context

mcp = FastMCP("slow")

@mcp.tool()
async def steps(n: int, tag: str, ctx: Context) -> str:
    """Work through n steps, reporting progress after each."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"{tag} step {i}")
        await anyio.sleep(0.05)
    return f"done {tag}"

@mcp.tool()
async def burst(n: int, ctx: Context) -> str:
    """Report n progress steps back to back, then answer at once."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n)
    return f"burst {n}"

@mcp.tool()
async def sleep(seconds: float, tag: str = "") -> str:
    """Sleep for a number of seconds, then answer with the tag."""
    await anyio.sleep(seconds)
    return f"slept {seconds} {tag}"

mcp.run()
'''


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def slow_server(tmp_path: Path) -> str:
    script = tmp_path / "slow_server.py"
    script.write_text(SLOW_SERVER)
    return f"slow={VENV1 / 'python'} {script}"


@asynccontextmanager
async def remote_server(tmp_path: Path, token: str | None, port: int | None = None):
    """Starts REMOTE_SERVER on a free port; yields (url, verdict log)."""
    script = tmp_path / "remote_server.py"
    script.write_text(REMOTE_SERVER)
    port = port or free_port()
    verdicts = tmp_path / "remote-verdicts.log"
    env = {**os.environ}
    env.pop("REMOTE_TOKEN", None)
    if token is not None:
        env["REMOTE_TOKEN"] = token
    p = subprocess.Popen([str(VENV1 / "python"), str(script), str(port), str(verdicts)],
                         env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with anyio.fail_after(30):
            while True:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                        break
                except OSError:
                    assert p.poll() is None, "the remote server exited"
                    await anyio.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp", verdicts
    finally:
        p.terminate()
        p.wait(10)


class HttpProxy:
    def __init__(self, url: str, proc: subprocess.Popen, log: Path):
        self.url = url
        self.proc = proc
        self.log = log


@asynccontextmanager
async def http_proxy(tmp_path: Path, *args: str, env: dict | None = None):
    """Starts `toolgate mcp-proxy --listen 127.0.0.1:0 ARGS...`; yields an HttpProxy."""
    log = tmp_path / f"http-proxy-{next(_count)}.log"
    errlog = open(log, "w")
    proc = subprocess.Popen(
        [str(toolgate_bin()), "mcp-proxy", "--listen", "127.0.0.1:0", *args],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errlog, cwd=tmp_path,
        env={**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn,toolgate::mcp=debug"),
             **(env or {})},
    )
    try:
        with anyio.fail_after(30):
            while True:
                m = re.search(r"serving MCP \(Streamable HTTP\) at (http://\S+)", log.read_text())
                if m:
                    break
                assert proc.poll() is None, f"the proxy exited:\n{log.read_text()[-3000:]}"
                await anyio.sleep(0.05)
        yield HttpProxy(m.group(1), proc, log)
    except BaseException:
        print(f"--- proxy stderr ({log}) ---\n{log.read_text()[-6000:]}", file=sys.stderr)
        raise
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
        errlog.close()


@asynccontextmanager
async def http_client(url: str, headers: dict | None = None, server_gone_at_exit: bool = False,
                      elicitation=None):
    """An `mcp` SDK client session over Streamable HTTP. With
    `server_gone_at_exit`, errors of the SDK's own closing requests (the
    server has stopped) are ignored once the body has finished."""
    notes = Notes()
    body_done = False
    try:
        async with create_mcp_http_client(headers=headers) as http:
            async with streamable_http_client(url, http_client=http) as (r, w):
                kwargs = {"message_handler": notes.handler}
                if elicitation is not None:
                    kwargs["elicitation_callback"] = elicitation
                async with ClientSession(r, w, **kwargs) as s:
                    init = await s.initialize()
                    yield Proxy(s, notes, init, Path(os.devnull))
                    body_done = True
    except BaseException:
        if not (server_gone_at_exit and body_done):
            raise


def session_of(p: Proxy) -> str:
    return (p.init.meta or {})["toolgate/proxy"]["session"]


def audit_lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


# --- downstream over HTTP ------------------------------------------------


async def test_remote_server_with_a_token_from_the_environment(tmp_path):
    token = "tok-" + secrets.token_hex(16)
    audit = tmp_path / "audit.jsonl"
    async with remote_server(tmp_path, token) as (url, verdicts):
        config = tmp_path / "proxy.toml"
        config.write_text(textwrap.dedent(f"""
            audit = "audit.jsonl"
            restart_initial_ms = 200
            restart_max_ms = 1000
            [[server]]
            name = "remote"
            url = "{url}"
            headers = {{ Authorization = "Bearer ${{REMOTE_TOKEN}}", "X-Client" = "toolgate-test" }}
        """))
        env = {"REMOTE_TOKEN": token, "RUST_LOG": "trace"}
        async with proxy(tmp_path, "--config", str(config), "--debounce-ms", "20", env=env) as p:
            r = await p.call("toolgate__find_tools", {"query": "look up a customer order shipping status"})
            assert [t["name"] for t in r.structured_content["tools"]][:1] == ["remote__lookup_order"], text_of(r)
            r = await p.call("remote__lookup_order", {"order_id": "42"})
            assert not r.is_error and text_of(r) == "order 42: shipped"
            # the remote server's tools/list_changed reaches the catalog
            r = await p.call("toolgate__call_tool", {"name": "remote__add_refund_tool", "arguments": {}})
            assert text_of(r) == "added", text_of(r)
            with anyio.fail_after(15):
                while True:
                    r = await p.call("toolgate__call_tool",
                                     {"name": "remote__refund_order", "arguments": {"order_id": "7"}})
                    if not r.is_error:
                        break
                    await anyio.sleep(0.2)
            assert text_of(r) == "order 7: refunded"
            log = p.log
        seen = verdicts.read_text().split()
        assert seen and set(seen) == {"ok"}, "every request carried the token"
    # the token is in no log line (at trace level) and in no audit record
    assert "remote.lookup_order" in audit.read_text()
    for f in (log, audit):
        assert token not in f.read_text(), f"the token leaked into {f.name}"
    assert "StreamableHttpClientWorker" in log.read_text(), "the log is at trace level, HTTP client included"


async def test_remote_server_with_a_wrong_token_is_reported_not_leaked(tmp_path):
    token = "tok-" + secrets.token_hex(16)
    wrong = "bad-" + secrets.token_hex(16)
    async with remote_server(tmp_path, token) as (url, verdicts):
        config = tmp_path / "proxy.toml"
        config.write_text(textwrap.dedent(f"""
            startup_timeout_ms = 5000
            [[server]]
            name = "remote"
            url = "{url}"
            headers = {{ Authorization = "Bearer ${{REMOTE_TOKEN}}" }}
        """))
        async with proxy(tmp_path, "--config", str(config), env={"REMOTE_TOKEN": wrong, "RUST_LOG": "trace"}) as p:
            r = await p.call("remote__lookup_order", {"order_id": "42"})
            assert r.is_error and "remote" in text_of(r), text_of(r)
            assert wrong not in text_of(r)
            log = p.log
        assert "rejected" in verdicts.read_text()
    assert wrong not in log.read_text()


async def test_missing_token_variable_stops_the_proxy_with_its_name(tmp_path):
    config = tmp_path / "proxy.toml"
    config.write_text(textwrap.dedent("""
        [[server]]
        name = "remote"
        url = "http://127.0.0.1:9/mcp"
        headers = { Authorization = "Bearer ${TOOLGATE_TEST_NO_SUCH_VAR}" }
    """))
    env = {k: v for k, v in os.environ.items() if k != "TOOLGATE_TEST_NO_SUCH_VAR"}
    r = subprocess.run([str(toolgate_bin()), "mcp-proxy", "--config", str(config)],
                       env=env, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert r.returncode == 2, r.stderr
    assert "TOOLGATE_TEST_NO_SUCH_VAR" in r.stderr and "not set" in r.stderr


async def test_remote_server_restarted_is_reconnected(tmp_path):
    port = free_port()
    config = tmp_path / "proxy.toml"
    config.write_text(textwrap.dedent(f"""
        restart_initial_ms = 200
        restart_max_ms = 500
        [[server]]
        name = "remote"
        url = "http://127.0.0.1:{port}/mcp"
    """))

    async def until(p, ok: bool, order: str):
        with anyio.fail_after(20):
            while True:
                r = await p.call("remote__lookup_order", {"order_id": order})
                if r.is_error != ok:
                    return r
                await anyio.sleep(0.3)

    # the server is not there when the proxy starts: calls fail, the proxy stays up
    async with proxy(tmp_path, "--config", str(config)) as p:
        r = await p.call("remote__lookup_order", {"order_id": "1"})
        assert r.is_error and "remote" in text_of(r), text_of(r)
        async with remote_server(tmp_path, None, port):
            r = await until(p, True, "2")
            assert text_of(r) == "order 2: shipped"
        # it goes away: calls fail with an error
        r = await until(p, False, "3")
        assert "remote" in text_of(r)
        # it comes back: the proxy reconnects (a new MCP session)
        async with remote_server(tmp_path, None, port):
            r = await until(p, True, "4")
            assert text_of(r) == "order 4: shipped"


# --- upstream over HTTP --------------------------------------------------

SQL_CONTEXT = {"message": "select all rows from the users table", "conversation_stage": "exploration",
               "active_language": "sql"}
TIME_CONTEXT = {"message": "what time is it now in Tokyo, convert the timezone"}


async def test_two_http_clients_with_different_contexts(tmp_path, db):
    audit = tmp_path / "audit.jsonl"
    async with http_proxy(tmp_path, "--server", time_server(), "--server", sqlite_server(db),
                          "--audit", str(audit)) as hp:
        async with http_client(hp.url) as a, http_client(hp.url) as b:
            assert session_of(a) != session_of(b)
            # both sessions, at the same time, with their own contexts
            la, lb = {}, {}

            async def list_a():
                la["n"] = await a.names(SQL_CONTEXT)

            async def list_b():
                lb["n"] = await b.names(TIME_CONTEXT)

            async with anyio.create_task_group() as tg:
                tg.start_soon(list_a)
                tg.start_soon(list_b)
            assert "sqlite__read_query" in la["n"] and "time__get_current_time" not in la["n"], la
            assert "time__get_current_time" in lb["n"] and "sqlite__read_query" not in lb["n"], lb
            # each keeps its own context: a plain tools/list gives the same lists
            assert await a.names() == la["n"]
            assert await b.names() == lb["n"]
            # a search in one session joins that session's list only
            r = await b.call("toolgate__find_tools", {"query": "which tables are in my sqlite database"})
            assert "sqlite__list_tables" in [t["name"] for t in r.structured_content["tools"]]
            assert "sqlite__list_tables" in await b.names()
            assert await a.names() == la["n"]
            # calls are audited under each session's id
            ra = await a.call("sqlite__read_query", {"query": "SELECT name FROM users"})
            rb = await b.call("time__get_current_time", {"timezone": "Asia/Tokyo"})
            assert "ann" in text_of(ra) and "Asia/Tokyo" in text_of(rb)
            sa, sb = session_of(a), session_of(b)
    lines = audit_lines(audit)
    by_tool = {x["tool"]: x["session"] for x in lines if x["outcome"] == "ok"}
    assert by_tool["sqlite.read_query"] == sa and by_tool["time.get_current_time"] == sb
    assert by_tool["toolgate__find_tools"] == sb


async def test_bearer_token_check(tmp_path):
    token = "ptok-" + secrets.token_hex(16)
    async with http_proxy(tmp_path, "--server", time_server(), "--bearer-token-env", "PROXY_TOKEN",
                          env={"PROXY_TOKEN": token}) as hp:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}}
        h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        async with httpx.AsyncClient() as c:
            r = await c.post(hp.url, json=init, headers=h)
            assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
            r = await c.post(hp.url, json=init, headers={**h, "Authorization": "Bearer wrong"})
            assert r.status_code == 401
            r = await c.post(hp.url, json=init, headers={**h, "Authorization": f"Bearer {token}x"})
            assert r.status_code == 401
            r = await c.get(hp.url, headers={"Accept": "text/event-stream"})
            assert r.status_code == 401
        async with http_client(hp.url, headers={"Authorization": f"Bearer {token}"}) as p:
            r = await p.call("time__get_current_time", {"timezone": "UTC"})
            assert not r.is_error and "UTC" in text_of(r)
        with pytest.raises(BaseException):
            async with http_client(hp.url):
                pass
    assert token not in hp.log.read_text()


async def test_origin_and_host_checks(tmp_path):
    async with http_proxy(tmp_path, "--server", time_server()) as hp:
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"}}}
        h = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        port = hp.url.split(":")[2].split("/")[0]
        async with httpx.AsyncClient() as c:
            for origin, want in [("http://evil.example", 403), ("https://localhost.evil.example", 403),
                                 ("null", 403), ("http://localhost:6274", 200),
                                 (f"http://127.0.0.1:{port}", 200), (None, 200)]:
                hh = {**h, **({"Origin": origin} if origin else {})}
                r = await c.post(hp.url, json=init, headers=hh)
                assert r.status_code == want, (origin, r.status_code, r.text)
                if want == 403:
                    # refused before its body is read: the connection is not reused
                    assert r.headers.get("connection") == "close", r.headers
            # DNS rebinding: a name that resolves to 127.0.0.1 but is not ours
            r = await c.post(hp.url, json=init, headers={**h, "Host": f"attacker.example:{port}"})
            assert r.status_code == 403


async def test_call_limits_per_session_and_global(tmp_path):
    audit = tmp_path / "audit.jsonl"
    config = tmp_path / "limits.toml"
    config.write_text("max_concurrent_calls = 2\nmax_concurrent_calls_per_session = 1\ncall_queue_ms = 0\n")
    async with http_proxy(tmp_path, "--config", str(config), "--server", slow_server(tmp_path),
                          "--audit", str(audit)) as hp:
        async with http_client(hp.url) as a, http_client(hp.url) as b, http_client(hp.url) as c:
            for p in (a, b, c):
                await p.tools()  # the SDK lists before its first call; not during the test
            results: dict[str, types.CallToolResult] = {}

            async def call(p: Proxy, key: str, seconds: float):
                results[key] = await p.call("slow__sleep", {"seconds": seconds, "tag": key})

            async with anyio.create_task_group() as tg:
                tg.start_soon(call, a, "a1", 3)
                await anyio.sleep(0.8)
                tg.start_soon(call, a, "a2", 0.1)   # the session's one slot is taken
                tg.start_soon(call, b, "b1", 3)
                await anyio.sleep(0.8)
                tg.start_soon(call, c, "c1", 0.1)   # both global slots are taken
            assert text_of(results["a1"]) == "slept 3.0 a1" and not results["a1"].is_error
            assert text_of(results["b1"]) == "slept 3.0 b1"
            assert results["a2"].is_error and "this session" in text_of(results["a2"])
            assert results["c1"].is_error and "limit of 2 calls" in text_of(results["c1"])
            # free again
            r = await c.call("slow__sleep", {"seconds": 0, "tag": "c2"})
            assert text_of(r) == "slept 0.0 c2"
    limited = [x for x in audit_lines(audit) if x["outcome"] == "limited"]
    assert len(limited) == 2 and {x["session"] for x in limited} == {session_of(a), session_of(c)}


async def test_calls_wait_for_a_slot_within_the_queue_time(tmp_path):
    config = tmp_path / "limits.toml"
    config.write_text("max_concurrent_calls_per_session = 1\ncall_queue_ms = 10000\n")
    async with http_proxy(tmp_path, "--config", str(config), "--server", slow_server(tmp_path)) as hp:
        async with http_client(hp.url) as a:
            await a.tools()
            results = {}

            async def call(key: str):
                results[key] = await a.call("slow__sleep", {"seconds": 0.5, "tag": key})

            async with anyio.create_task_group() as tg:
                for k in ("x", "y", "z"):
                    tg.start_soon(call, k)
            assert sorted(text_of(r) for r in results.values()) == [
                "slept 0.5 x", "slept 0.5 y", "slept 0.5 z"]


async def test_graceful_shutdown_finishes_calls_in_flight(tmp_path):
    audit = tmp_path / "audit.jsonl"
    async with http_proxy(tmp_path, "--server", slow_server(tmp_path), "--audit", str(audit)) as hp:
        async with (http_client(hp.url, server_gone_at_exit=True) as a,
                    http_client(hp.url, server_gone_at_exit=True) as b):
            await a.tools()
            r = await b.call("slow__sleep", {"seconds": 0, "tag": "warm"})
            assert not r.is_error
            results = {}
            long_done = False

            async def long_call():
                results["long"] = await a.call("slow__sleep", {"seconds": 2, "tag": "inflight"})
                print("long", results["long"], file=sys.stderr)

            async with anyio.create_task_group() as tg:
                tg.start_soon(long_call)
                await anyio.sleep(0.5)
                hp.proc.send_signal(signal.SIGTERM)
                print("sigterm sent", file=sys.stderr)
                await anyio.sleep(0.3)
                # a new call on an open session is refused, with a reason
                r = await b.call("slow__sleep", {"seconds": 0, "tag": "late"})
                print("late", r, file=sys.stderr)
                assert r.is_error and "shutting down" in text_of(r)
                # a new session is refused
                async with httpx.AsyncClient() as c:
                    try:
                        resp = await c.post(hp.url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                                          "params": {"protocolVersion": "2025-06-18",
                                                                     "capabilities": {},
                                                                     "clientInfo": {"name": "t", "version": "0"}}},
                                            headers={"Accept": "application/json, text/event-stream"})
                        assert resp.status_code == 503
                    except httpx.TransportError:
                        pass  # already closed: refused as well
            assert not results["long"].is_error and text_of(results["long"]) == "slept 2.0 inflight"
            long_done = True
        assert long_done
        with anyio.fail_after(15):
            while hp.proc.poll() is None:
                await anyio.sleep(0.1)
        assert hp.proc.returncode == 0, hp.log.read_text()[-3000:]
    outcomes = [(x["tool"], x["outcome"]) for x in audit_lines(audit)]
    assert ("slow.sleep", "ok") in outcomes and ("slow__sleep", "limited") in outcomes


async def test_progress_of_a_call_reaches_the_session_that_made_it(tmp_path):
    async with http_proxy(tmp_path, "--server", slow_server(tmp_path)) as hp:
        async with http_client(hp.url) as a, http_client(hp.url) as b:
            seen: dict[str, list] = {"a": [], "b": []}

            def on_progress(key):
                async def cb(progress, total, message):
                    seen[key].append((progress, total, message))
                return cb

            results = {}

            async def call(p, key, n):
                results[key] = await p.session.call_tool(
                    "slow__steps", {"n": n, "tag": key}, progress_callback=on_progress(key))

            async with anyio.create_task_group() as tg:
                tg.start_soon(call, a, "a", 3)
                tg.start_soon(call, b, "b", 4)
            assert text_of(results["a"]) == "done a" and text_of(results["b"]) == "done b"
            # each session gets its own call's progress only, increasing, up
            # to the end, in order
            for key, n in (("a", 3), ("b", 4)):
                got = seen[key]
                assert got and got[-1] == (n, n, f"{key} step {n}"), seen
                assert all(t == n and m == f"{key} step {int(p)}" for p, t, m in got), seen
                assert [p for p, _, _ in got] == sorted({p for p, _, _ in got}), seen
            # through the call-through tool too
            seen["a"].clear()
            r = await a.session.call_tool("toolgate__call_tool",
                                          {"name": "slow__steps", "arguments": {"n": 2, "tag": "c"}},
                                          progress_callback=on_progress("a"))
            assert text_of(r) == "done c" and seen["a"][-1] == (2, 2, "c step 2"), seen


async def test_a_burst_of_progress_reaches_the_client_whole_and_in_order_before_the_answer(tmp_path):
    # the server sends its notifications and its answer back to back: every
    # one is relayed and none overtakes another (the proxy sends them before
    # the answer; the SDK's callbacks may run just after call_tool returns)
    async with http_proxy(tmp_path, "--server", slow_server(tmp_path)) as hp:
        async with http_client(hp.url) as a:
            for n in (3, 40):
                for _ in range(5):
                    seen = []

                    async def cb(progress, total, message):
                        seen.append(progress)

                    r = await a.session.call_tool("slow__burst", {"n": n}, progress_callback=cb)
                    assert text_of(r) == f"burst {n}"
                    # the SDK runs each progress callback as a task of its
                    # own (jsonrpc_dispatcher `_spawn`), in receive order, so
                    # call_tool can return before they ran: give them a turn
                    with anyio.move_on_after(2):
                        while len(seen) < n:
                            await anyio.sleep(0.01)
                    assert seen == list(range(1, n + 1)), seen


async def test_a_changed_definition_confirmed_in_one_session_stays_withheld_in_the_others(tmp_path):
    script = tmp_path / "mut_server.py"
    script.write_text(MUTATING_SERVER)
    audit = tmp_path / "audit.jsonl"
    asked = []

    async def accept(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True})

    async with http_proxy(tmp_path, "--server", f"mut={VENV1 / 'python'} {script}",
                          "--audit", str(audit), "--debounce-ms", "20") as hp:
        async with http_client(hp.url, elicitation=accept) as a, http_client(hp.url) as b:
            for p in (a, b):
                r = await p.call("toolgate__find_tools", {"query": "summarise the sales report"})
                assert "mut__report" in [t["name"] for t in r.structured_content["tools"]]
            assert text_of(await a.call("toolgate__call_tool", {"name": "mut__mutate", "arguments": {}})) == "mutated"
            with anyio.fail_after(15):
                while "mut__report" in await b.names():
                    await anyio.sleep(0.1)
            # the user of session a confirms the new definition: a may call it ...
            r = await a.call("mut__report", {"path": "q3.csv"})
            assert not r.is_error and text_of(r) == "report: 3 sales", text_of(r)
            assert len(asked) == 1 and "id_rsa" in asked[0]
            assert "mut__report" in await a.names()
            # ... session b did not: it stays withheld there
            assert "mut__report" not in await b.names()
            r = await b.call("mut__report", {"path": "q3.csv"})
            assert r.is_error and "withheld" in text_of(r) and "report: 3 sales" not in text_of(r)
            sa = session_of(a)
    pins = json.loads((tmp_path / "audit.pins.json").read_text())
    assert "id_rsa" not in pins["tools"]["mut.report"]["description"], "the pin keeps the first definition"
    accepted = [x for x in audit_lines(audit) if x["outcome"] == "definition_accepted"]
    assert len(accepted) == 1 and accepted[0]["session"] == sa and "this session only" in accepted[0]["detail"]
