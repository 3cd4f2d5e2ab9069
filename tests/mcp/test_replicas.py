"""Two `toolgate mcp-proxy --listen` replicas behind a real load balancer.

Debian's nginx (started by the test, on loopback, from a configuration in the
test's folder) balances two proxy processes round-robin; they share one
configuration file and one state key. A modern client (the official SDK's
`Client`, protocol revision 2026-07-28, no sessions) then:
- finds a tool on one replica and calls it on the other (the session handle);
- starts a confirmation on one and completes it on the other (the requestState);
- presents a handle / requestState signed by a third replica with ANOTHER key,
  which both refuse.
Every response carries nginx's `X-Upstream` (`add_header X-Upstream
$upstream_addr always`), which the client records, so the tests check that the
two requests of a scenario really went to different replicas (and nginx's
access log and the replicas' audit files agree).

nginx is required: without it these tests FAIL saying how to install it
(`scripts/test` installs it with apt-get when missing), unless skipped on
purpose with TOOLGATE_SKIP_NGINX=1. TOOLGATE_NGINX names another binary.

The harness itself (nginx, SSE through it, the alternation, the SDK's MRTR
across replicas) is checked without toolgate by
`test_the_harness_balances_sdk_replicas_round_robin`, with two replicas of
tests/mcp/modern_server.py (the SDK's own server, sharing its state key).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from mcp import types
from mcp.shared.exceptions import MCPError

from conftest import (
    MODERN,
    MODERN_SERVER,
    SESSION_META,
    VENV,
    VENV1,
    read_jsonl,
    server_bin,
    tables,
    text_of,
)
from test_http import HttpProxy, free_port, http_proxy
from test_modern import (
    refused_retry,
    HANDLE_INVALID,
    QUESTION,
    RENAME,
    RENAME_AGAIN,
    ROWS,
    ModernProxy,
    client_at,
    handle_of,
    rows_in,
    yes,
)

pytestmark = pytest.mark.anyio

# How the replicas get their shared state key (the design offers both; the
# lead's configuration reads a top-level `state_key_env`):
#   "config"       `state_key_env = "VAR"` at the top of the proxy's configuration file
#   "http-config"  `state_key_env = "VAR"` under `[http]`
#   "cli"          `--state-key-env VAR` on the command line
# In every case the environment variable VAR holds the key (>= 32 bytes).
STATE_KEY_VIA = "config"
STATE_KEY_VAR = "TOOLGATE_STATE_KEY"

SHARED_KEY = "k" * 24 + "-shared-state-key-0123456789"
OTHER_KEY = "o" * 24 + "-another-state-key-987654321"

# A whole scenario, proxies and nginx included, ends within this.
SCENARIO_SECONDS = 120


def state_key(tmp_path: Path, key: str, tag: str) -> tuple[list[str], dict]:
    """(extra mcp-proxy arguments, environment) that give a proxy the state
    key `key` by STATE_KEY_VIA, for a proxy with no other configuration file."""
    env = {STATE_KEY_VAR: key}
    if STATE_KEY_VIA == "cli":
        return ["--state-key-env", STATE_KEY_VAR], env
    config = tmp_path / f"state-key-{tag}.toml"
    config.write_text(state_key_toml())
    return ["--config", str(config)], env


def state_key_toml() -> str:
    line = f'state_key_env = "{STATE_KEY_VAR}"\n'
    if STATE_KEY_VIA == "config":
        return line
    if STATE_KEY_VIA == "http-config":
        return "[http]\n" + line
    assert STATE_KEY_VIA == "cli", STATE_KEY_VIA
    return ""


def shared_config(tmp_path: Path, db: Path) -> Path:
    """The one configuration file of every replica: the servers (sqlite on
    the test's database, time) and, by STATE_KEY_VIA, the key's variable."""
    sqlite = server_bin(VENV1, "mcp-server-sqlite")
    time_ = server_bin(VENV, "mcp-server-time")
    p = tmp_path / "replicas.toml"
    p.write_text(state_key_toml() + textwrap.dedent(f"""
        [[server]]
        name = "sqlite"
        command = "{sqlite}"
        args = ["--db-path", "{db}"]

        [[server]]
        name = "time"
        command = "{time_}"
        args = ["--local-timezone", "UTC"]
    """))
    return p


# --- nginx ------------------------------------------------------------------


def nginx_bin() -> str:
    if os.environ.get("TOOLGATE_NGINX"):
        return os.environ["TOOLGATE_NGINX"]
    found = shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(p, os.X_OK)), None)
    if found:
        return found
    if os.environ.get("TOOLGATE_SKIP_NGINX") == "1":
        msg = "skipped on purpose (TOOLGATE_SKIP_NGINX=1): the replica tests behind nginx did not run"
        print(msg, file=sys.stderr)
        pytest.skip(msg)
    pytest.fail(
        "nginx is missing: the replica tests put two proxies behind a real nginx. Run scripts/test "
        "(as root on Debian it installs the `nginx` package with apt-get when missing), or "
        "`sudo apt-get install -y nginx` (Debian/Ubuntu; `nginx-light` is a transitional name for it), "
        "or name a binary with TOOLGATE_NGINX; skip these tests on purpose with TOOLGATE_SKIP_NGINX=1"
    )


NGINX_CONF = """\
# written by tests/mcp/test_replicas.py: round robin over the replicas, on loopback only
worker_processes 1;
{user}
pid {d}/nginx.pid;
error_log {d}/error.log info;
events {{ worker_connections 256; }}
http {{
    log_format upstreams '$request_method $http_mcp_method $upstream_addr $status';
    access_log {d}/access.log upstreams;
    client_body_temp_path {d}/tmp/body;
    proxy_temp_path {d}/tmp/proxy;
    fastcgi_temp_path {d}/tmp/fastcgi;
    uwsgi_temp_path {d}/tmp/uwsgi;
    scgi_temp_path {d}/tmp/scgi;
    upstream replicas {{
        zone replicas 64k;
{servers}
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://replicas;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            # the proxies check Host (DNS rebinding): pass the client's, 127.0.0.1:{port}
            proxy_set_header Host $http_host;
            # SSE: no buffering, long reads
            proxy_buffering off;
            proxy_cache off;
            proxy_read_timeout 120s;
            # one try per request: a refused request must not be retried on the other replica
            proxy_next_upstream off;
            add_header X-Upstream $upstream_addr always;
        }}
    }}
}}
"""


@dataclass
class Nginx:
    url: str
    dir: Path
    proc: subprocess.Popen

    def access(self) -> list[tuple[str, str, str, str]]:
        p = self.dir / "access.log"
        return [tuple(line.split()) for line in p.read_text().splitlines()] if p.exists() else []


@asynccontextmanager
async def nginx(tmp_path: Path, upstreams: list[str], path: str = "/mcp"):
    """Starts nginx on 127.0.0.1:<free port>, round robin over `upstreams`
    (host:port, loopback); yields an Nginx whose url ends in `path`."""
    binary = nginx_bin()
    d = tmp_path / "nginx"
    (d / "tmp").mkdir(parents=True, exist_ok=True)
    for u in upstreams:
        assert u.startswith("127.0.0.1:"), f"loopback only: {u}"
    for attempt in range(3):
        port = free_port()
        conf = d / "nginx.conf"
        conf.write_text(NGINX_CONF.format(
            d=d, port=port,
            # a root master's workers would run as nobody, who cannot enter the test's folder
            user="user root;" if os.geteuid() == 0 else "",
            servers="\n".join(f"        server {u};" for u in upstreams)))
        proc = subprocess.Popen([binary, "-p", str(d), "-c", str(conf), "-e", str(d / "error.log"),
                                 "-g", "daemon off;"], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=open(d / "stderr.log", "a"))
        up = False
        with anyio.fail_after(15):
            while proc.poll() is None:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                        up = True
                        break
                except OSError:
                    await anyio.sleep(0.05)
        if up:
            break
        err = (d / "error.log").read_text()[-2000:] if (d / "error.log").exists() else ""
        if "Address already in use" not in err or attempt == 2:
            pytest.fail(f"nginx did not start:\n{err}\n{(d / 'stderr.log').read_text()[-2000:]}")
    try:
        yield Nginx(f"http://127.0.0.1:{port}{path}", d, proc)
    except BaseException:
        print(f"--- nginx error.log ---\n{(d / 'error.log').read_text()[-4000:]}", file=sys.stderr)
        print(f"--- nginx access.log ---\n{(d / 'access.log').read_text()[-4000:]}", file=sys.stderr)
        raise
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


def host_port(url: str) -> str:
    return url.split("//", 1)[1].split("/", 1)[0]


# --- the replicas ------------------------------------------------------------


@dataclass
class Replicas:
    lb: Nginx
    proxies: list[HttpProxy]
    audits: list[Path]
    config: Path

    @property
    def url(self) -> str:
        return self.lb.url

    def which(self, upstream: str | None) -> int:
        """The index of the replica at `upstream` (nginx's $upstream_addr)."""
        addrs = [host_port(p.url) for p in self.proxies]
        assert upstream in addrs, f"{upstream} is none of {addrs}"
        return addrs.index(upstream)


@asynccontextmanager
async def replica(tmp_path: Path, config: Path, key: str, audit: Path):
    args = ["--config", str(config), "--audit", str(audit)]
    if STATE_KEY_VIA == "cli":
        args += ["--state-key-env", STATE_KEY_VAR]
    async with http_proxy(tmp_path, *args, env={STATE_KEY_VAR: key}) as hp:
        yield hp


@asynccontextmanager
async def replicas(tmp_path: Path, db: Path):
    """Two replicas (one configuration file, one key) behind nginx."""
    config = shared_config(tmp_path, db)
    audits = [tmp_path / "audit-0.jsonl", tmp_path / "audit-1.jsonl"]
    async with replica(tmp_path, config, SHARED_KEY, audits[0]) as r0, \
            replica(tmp_path, config, SHARED_KEY, audits[1]) as r1:
        async with nginx(tmp_path, [host_port(r0.url), host_port(r1.url)], path="/mcp") as lb:
            yield Replicas(lb, [r0, r1], audits, config)


def calls_in(seen: list, since: int) -> list[str | None]:
    """The upstreams of the tools/call requests recorded after index `since`."""
    return [up for method, up, _ in seen[since:] if method == "tools/call"]


async def next_request_avoids(p: ModernProxy, upstream: str) -> None:
    """Round robin over two with one client: the next request goes to the
    replica that did not serve the last one. Sends at most two spacer
    tools/list so that the next request goes to the replica other than
    `upstream` (the tests then check where it went)."""
    for _ in range(2):
        if p.seen and p.seen[-1][1] == upstream:
            return
        await p.names()
    raise AssertionError(f"the balancer does not alternate: {p.seen}")


def assert_alternates(seen: list) -> None:
    ups = [up for _, up, _ in seen]
    assert len(set(ups)) == 2, f"not balanced over two replicas: {ups}"
    assert all(a != b for a, b in zip(ups, ups[1:])), f"not round robin: {ups}"


# --- the harness, with the SDK's own server ------------------------------------


@asynccontextmanager
async def sdk_replica(tmp_path: Path, name: str, key: str, log: Path):
    port = free_port()
    err = open(tmp_path / f"{name}.err", "w")
    proc = subprocess.Popen(
        [str(VENV / "python"), str(MODERN_SERVER), "--http", str(port)],
        env={**os.environ, "MODERN_SERVER_KEY": key, "MODERN_SERVER_NAME": name, "MODERN_SERVER_LOG": str(log)},
        stdin=subprocess.DEVNULL, stdout=err, stderr=err)
    try:
        with anyio.fail_after(30):
            while True:
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                        break
                except OSError:
                    assert proc.poll() is None, (tmp_path / f"{name}.err").read_text()
                    await anyio.sleep(0.05)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        err.close()


async def test_the_harness_balances_sdk_replicas_round_robin(tmp_path):
    """nginx in front of two replicas of the SDK's own modern server (shared
    requestState key): requests alternate, SSE and JSON answers pass, and the
    SDK's MRTR driver asks on one replica and completes on the other; state
    from a server with another key is refused. No toolgate involved: when
    this fails, the harness is broken, not the proxy."""
    log = tmp_path / "sdk-replicas.jsonl"
    key = "s" * 40

    async def user(context, params):
        return types.ElicitResult(action="accept", content={"approve": True})

    with anyio.fail_after(SCENARIO_SECONDS):
        async with sdk_replica(tmp_path, "r0", key, log) as a, sdk_replica(tmp_path, "r1", key, log) as b, \
                sdk_replica(tmp_path, "other", "x" * 40, log) as other:
            async with nginx(tmp_path, [a, b]) as lb:
                async with client_at(lb.url, mode="auto", elicitation=user) as p:
                    assert p.client.protocol_version == MODERN
                    answers = [text_of(await p.call("lookup_order", {"order_id": str(i)})) for i in range(4)]
                    served = {a.split("(")[1].rstrip(")") for a in answers}
                    assert served == {"r0", "r1"}, answers
                    start = len(p.seen)
                    r = await p.call("refund_order", {"order_id": "9"})
                    assert text_of(r).startswith("order 9: refunded"), text_of(r)
                    rounds = calls_in(p.seen, start)
                    assert len(rounds) == 2 and rounds[0] != rounds[1], p.seen
                    assert_alternates(p.seen)
                    events = {x["event"]: x["replica"] for x in read_jsonl(log) if x.get("order_id") == "9"}
                    assert events["ask"] != events["refunded"], events
                    first = await p.session.call_tool("refund_order", {"order_id": "10"}, allow_input_required=True)
                    assert isinstance(first, types.InputRequiredResult)
                async with client_at(f"http://{other}/mcp", mode=MODERN) as q:
                    foreign = await q.session.call_tool("refund_order", {"order_id": "10"},
                                                        allow_input_required=True)
                    assert isinstance(foreign, types.InputRequiredResult)
                async with client_at(lb.url, mode=MODERN) as p:
                    up = {"approve": types.ElicitResult(action="accept", content={"approve": True})}
                    for _ in range(2):   # refused by both replicas
                        with pytest.raises(MCPError):
                            await p.session.call_tool("refund_order", {"order_id": "10"}, allow_input_required=True,
                                                      input_responses=up, request_state=foreign.request_state)
                    assert {u for _, u, _ in p.seen} == {a, b}
                    # nginx's own log names both replicas
                    assert {x[2] for x in lb.access()} == {a, b}, lb.access()
    assert not any(x.get("event") == "refunded" and x.get("order_id") == "10" for x in read_jsonl(log))


# --- toolgate replicas ----------------------------------------------------------


async def test_a_tool_found_on_one_replica_is_called_on_the_other(tmp_path, db):
    with anyio.fail_after(SCENARIO_SECONDS):
        async with replicas(tmp_path, db) as rs:
            async with client_at(rs.url, mode=MODERN) as p:
                start = len(p.seen)
                r = await p.call("toolgate__find_tools", {"query": QUESTION})
                assert not r.is_error, text_of(r)
                assert r.structured_content["tools"][0]["name"] == "sqlite__list_tables", text_of(r)
                h = r.structured_content["session"]
                (found_on,) = calls_in(p.seen, start)

                await next_request_avoids(p, found_on)
                start = len(p.seen)
                rows = await p.call("sqlite__read_query", ROWS, meta={SESSION_META: h})
                assert not rows.is_error and rows_in(rows), text_of(rows)
                (called_on,) = calls_in(p.seen, start)
                assert called_on != found_on, p.seen

                # through toolgate__call_tool with the handle as argument, on the replica that did not answer last
                h2 = handle_of(rows)
                await next_request_avoids(p, called_on)
                start = len(p.seen)
                r = await p.call("toolgate__call_tool",
                                 {"name": "sqlite__list_tables", "arguments": {}, "session": h2})
                assert not r.is_error and "users" in text_of(r), text_of(r)
                (third,) = calls_in(p.seen, start)
                assert third != called_on

                # the same tools/list request gives the same list, whichever replica answers
                start = len(p.seen)
                lists = [await p.names(meta={SESSION_META: h}) for _ in range(2)]
                assert "sqlite__list_tables" in lists[0] and lists[0] == lists[1], lists
                assert len({u for m, u, _ in p.seen[start:] if m == "tools/list"}) == 2, p.seen
                assert_alternates(p.seen)
    # each replica audited part of the one session (the handle carries its id)
    ok = [[x for x in read_jsonl(a) if x["outcome"] == "ok"] for a in rs.audits]
    assert ok[0] and ok[1], ok
    assert len({x["session"] for x in ok[0] + ok[1]}) == 1, ok
    assert {x[2] for x in rs.lb.access()} == {host_port(x.url) for x in rs.proxies}


async def test_a_confirmation_started_on_one_replica_is_completed_on_the_other(tmp_path, db):
    asked = []

    async def user(context, params):
        asked.append(context.request_id)
        return types.ElicitResult(action="accept", content={"confirm": True})

    with anyio.fail_after(SCENARIO_SECONDS):
        async with replicas(tmp_path, db) as rs:
            async with client_at(rs.url, mode=MODERN, elicitation=user) as p:
                # by hand
                start = len(p.seen)
                first = await p.round1("sqlite__write_query", RENAME)
                assert isinstance(first, types.InputRequiredResult), first
                (asked_on,) = calls_in(p.seen, start)
                await next_request_avoids(p, asked_on)
                start = len(p.seen)
                r = await p.retry("sqlite__write_query", RENAME, first.request_state, yes())
                assert isinstance(r, types.CallToolResult) and not r.is_error, r
                (done_on,) = calls_in(p.seen, start)
                assert done_on != asked_on, p.seen
                assert tables(db) == {"customers"}
                # replayed on the replica that ran it: refused
                await next_request_avoids(p, asked_on)
                start = len(p.seen)
                await refused_retry(p, "sqlite__write_query", RENAME, first.request_state, yes())
                assert calls_in(p.seen, start) == [done_on], p.seen

                # by the SDK's driver: its two rounds alternate too
                start = len(p.seen)
                r = await p.call("sqlite__write_query", RENAME_AGAIN)
                assert not r.is_error, text_of(r)
                rounds = calls_in(p.seen, start)
                assert len(rounds) == 2 and rounds[0] != rounds[1], p.seen
                assert tables(db) == {"clients"}
                assert asked == ["toolgate_confirm"]
                assert_alternates(p.seen)
    lines = [read_jsonl(a) for a in rs.audits]
    ran = [(i, x["outcome"]) for i, ls in enumerate(lines) for x in ls if x["tool"] == "sqlite.write_query"]
    assert sum(o == "ok" for _, o in ran) == 2, ran
    assert sum(o == "state_refused" for _, o in ran) == 1, ran
    # both replicas took part in the first confirmation
    assert all(any(x["tool"] == "sqlite.write_query" for x in ls) for ls in lines), ran


async def test_state_signed_by_a_replica_with_another_key_is_refused(tmp_path, db):
    async def never(context, params):
        raise AssertionError("the rounds are driven by hand")

    with anyio.fail_after(SCENARIO_SECONDS):
        async with replicas(tmp_path, db) as rs:
            stranger_audit = tmp_path / "audit-stranger.jsonl"
            # a third replica: the same configuration, another key
            async with replica(tmp_path, rs.config, OTHER_KEY, stranger_audit) as stranger:
                async with client_at(stranger.url, mode=MODERN, elicitation=never) as q:
                    r = await q.call("toolgate__find_tools", {"query": QUESTION})
                    foreign_handle = r.structured_content["session"]
                    foreign = await q.round1("sqlite__write_query", RENAME)
                    assert isinstance(foreign, types.InputRequiredResult), foreign
                    async with client_at(rs.url, mode=MODERN, elicitation=never) as p:
                        r = await p.call("toolgate__find_tools", {"query": QUESTION})
                        ours = r.structured_content["session"]
                        first = await p.round1("sqlite__write_query", RENAME)
                        assert isinstance(first, types.InputRequiredResult), first
                        start = len(p.seen)
                        for _ in range(2):   # once at each replica
                            r = await p.call("sqlite__read_query", ROWS, meta={SESSION_META: foreign_handle})
                            assert r.is_error and HANDLE_INVALID in text_of(r) and not rows_in(r), text_of(r)
                            r = await p.call("toolgate__call_tool", {"name": "sqlite__read_query",
                                                                     "arguments": ROWS, "session": foreign_handle})
                            assert r.is_error and HANDLE_INVALID in text_of(r) and not rows_in(r), text_of(r)
                            await refused_retry(p, "sqlite__write_query", RENAME, foreign.request_state, yes())
                        assert len(set(calls_in(p.seen, start))) == 2, p.seen
                    # and the other way round: the pair's handle and state at the stranger
                    r = await q.call("sqlite__read_query", ROWS, meta={SESSION_META: ours})
                    assert r.is_error and HANDLE_INVALID in text_of(r) and not rows_in(r), text_of(r)
                    await refused_retry(q, "sqlite__write_query", RENAME, first.request_state, yes())
    assert tables(db) == {"users"}
    for audit in [*rs.audits, stranger_audit]:
        assert not any(x["tool"] == "sqlite.write_query" and x["outcome"] == "ok" for x in read_jsonl(audit))
    for audit in rs.audits:   # each replica refused (and audited) what it was shown
        assert any(x["outcome"] == "state_refused" for x in read_jsonl(audit)), read_jsonl(audit)
