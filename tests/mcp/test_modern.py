"""`toolgate mcp-proxy` in the modern, stateless era (protocol revision
2026-07-28), driven by the official SDK's high-level client
(`mcp.client.client.Client`, mcp 2.x) over stdio and over Streamable HTTP,
with real servers downstream (mcp-server-sqlite, mcp-server-time, and
tests/mcp/modern_server.py, an SDK 2.x server that serves only 2026-07-28).

Each scenario runs with `mode="2026-07-28"` (the SDK adopts the version
without a probe), `mode="auto"` (the SDK probes `server/discover`, falls back
to `initialize`) and, for comparison, `mode="legacy"` (the `initialize`
handshake); an `auto` client must end up modern (test_discover...), the others
follow the era the client negotiated.

What the modern era must do (the design):
- no per-connection state: what the engine learns travels in a signed session
  handle: `structuredContent.session` of toolgate__find_tools, a last text line
  `session: <handle>`, and `_meta["toolgate/session"]` of every forwarded result;
  it comes back as the `session` argument of the proxy's tools or as a request's
  `_meta["toolgate/session"]`;
- confirmations by MRTR (SEP-2322): an `InputRequiredResult` with
  `inputRequests.toolgate_confirm` (a form elicitation, `confirm: boolean`) and a
  sealed `requestState`, bound to the tool, the exact arguments and an expiry;
- a changed or foreign handle: a tool error; a changed, foreign, expired or
  replayed requestState: a JSON-RPC error (-32602); never a run;
- a downstream server's own InputRequiredResult is passed through and the retry
  routed back to it with its own requestState.

Run alone: `.venv/bin/python -m pytest tests/mcp/test_modern.py -q -p no:cacheprovider`
(TOOLGATE_BIN names the binary; default target/debug/toolgate).
"""

from __future__ import annotations

import itertools
import shutil
import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest
from mcp import StdioServerParameters, types
from mcp.client.client import Client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from conftest import (
    CONFIRM_KEY,
    ROOT,
    META,
    MODERN,
    SESSION_META,
    modern_server,
    modern_tags,
    read_jsonl,
    sqlite_server,
    tables,
    tamper,
    text_of,
    time_server,
    toolgate_bin,
)
from test_http import http_proxy

pytestmark = pytest.mark.anyio

QUESTION = "which tables are in my sqlite database"
TIME_QUESTION = "what time is it now in Tokyo, convert the timezone"
ROWS = {"query": "SELECT id, name FROM users ORDER BY id"}
# The shipped policy's SQL gate asks about a rename ([gate.sql.alter_operations]
# / "ALTER TABLE t RENAME TO u" in tests/gate_sql.rs): an `ask` verdict with no
# tag changed. mcp-server-sqlite's write_query runs it (and commits).
RENAME = {"query": "ALTER TABLE users RENAME TO customers"}
RENAME_AGAIN = {"query": "ALTER TABLE customers RENAME TO clients"}
OTHER_RENAME = {"query": "ALTER TABLE users RENAME TO hacked"}
HANDLE_INVALID = "session handle is not valid"

TRANSPORTS = ["stdio", "http"]
MODES = [MODERN, "auto", "legacy"]

_count = itertools.count()


async def refused_retry(p, name: str, args: dict, state: str | None, responses=None, meta: dict | None = None) -> str:
    """A retry whose requestState does not verify (changed, another key, other
    arguments, expired, used already): a JSON-RPC invalid-params error
    (-32602), as the revision's MRTR error handling asks, never a run."""
    with pytest.raises(MCPError) as e:
        await p.retry(name, args, state, responses, meta=meta)
    assert e.value.code == -32602, e.value
    return e.value.message


def yes() -> dict[str, types.ElicitResult]:
    return {CONFIRM_KEY: types.ElicitResult(action="accept", content={"confirm": True})}


class ModernProxy:
    """A connected high-level SDK client to a running proxy."""

    def __init__(self, client: Client, log: Path, http=None, seen: list | None = None):
        self.client = client
        self.log = log
        self.http = http          # test_http.HttpProxy over HTTP, else None
        self.seen = seen if seen is not None else []   # (Mcp-Method, X-Upstream, status) per HTTP response

    @property
    def session(self):
        return self.client.session

    @property
    def modern(self) -> bool:
        return self.client.protocol_version == MODERN

    async def call(self, name: str, args: dict | None = None, **kw: Any) -> types.CallToolResult:
        return await self.client.call_tool(name, args or {}, **kw)

    async def names(self, meta: dict | None = None) -> list[str]:
        r = await self.client.list_tools(meta=meta, cache_mode="refresh")
        return [t.name for t in r.tools]

    async def round1(self, name: str, args: dict, meta: dict | None = None):
        """The first round of a call, by hand: an InputRequiredResult or a result."""
        return await self.session.call_tool(name, args, meta=meta, allow_input_required=True)

    async def retry(self, name: str, args: dict, state: str | None, responses=None, meta: dict | None = None):
        """A retry, by hand: the same call with `inputResponses` and the echoed `requestState`."""
        return await self.session.call_tool(name, args, meta=meta, allow_input_required=True,
                                            input_responses=responses, request_state=state)


def recording_http_client(seen: list) -> httpx.AsyncClient:
    """An httpx client (the SDK's timeouts) that records, per response, the
    request's `Mcp-Method` header, the response's `X-Upstream` (set by the
    nginx of test_replicas.py) and the status."""

    async def on_response(response: httpx.Response) -> None:
        seen.append((response.request.headers.get("mcp-method"), response.headers.get("x-upstream"),
                     response.status_code))

    return httpx.AsyncClient(timeout=httpx.Timeout(30, read=300), event_hooks={"response": [on_response]})


@asynccontextmanager
async def client_at(url: str, *, mode: str, elicitation=None, seen: list | None = None):
    """A high-level SDK client over Streamable HTTP at `url` (no client-side
    response cache: lists are the server's answer every time)."""
    seen = seen if seen is not None else []
    async with recording_http_client(seen) as hc:
        kw: dict[str, Any] = {"mode": mode, "cache": None, "read_timeout_seconds": 60}
        if elicitation is not None:
            kw["elicitation_callback"] = elicitation
        async with Client(streamable_http_client(url, http_client=hc), **kw) as c:
            yield ModernProxy(c, Path(os.devnull), seen=seen)


@asynccontextmanager
async def modern_proxy(tmp_path: Path, transport: str, *args: str, mode: str = MODERN, elicitation=None,
                       env: dict | None = None):
    """Starts `toolgate mcp-proxy ARGS...` (over stdio, or with `--listen
    127.0.0.1:0` over HTTP) and yields a ModernProxy whose client speaks `mode`."""
    if transport == "http":
        async with http_proxy(tmp_path, *args, env=env) as hp:
            async with client_at(hp.url, mode=mode, elicitation=elicitation) as p:
                p.log, p.http = hp.log, hp
                yield p
        return
    log = tmp_path / f"modern-proxy-{next(_count)}.log"
    params = StdioServerParameters(
        command=str(toolgate_bin()),
        args=["mcp-proxy", *args],
        env={"RUST_LOG": os.environ.get("RUST_LOG", "warn,toolgate::mcp=debug"), **(env or {})},
        cwd=str(tmp_path),
    )
    kw: dict[str, Any] = {"mode": mode, "cache": None, "read_timeout_seconds": 60}
    if elicitation is not None:
        kw["elicitation_callback"] = elicitation
    with open(log, "w") as errlog:
        try:
            async with Client(stdio_client(params, errlog=errlog), **kw) as c:
                yield ModernProxy(c, log)
        except BaseException:
            errlog.flush()
            print(f"--- proxy stderr ({log}) ---\n{log.read_text()[-6000:]}", file=sys.stderr)
            raise


def rows_in(r: types.CallToolResult) -> bool:
    t = text_of(r)
    return all(n in t for n in ("ann", "bob", "cho"))


def handle_of(r: types.CallToolResult) -> str:
    h = (r.meta or {}).get(SESSION_META)
    assert isinstance(h, str) and h, f"no _meta[{SESSION_META!r}] on the result: {r.meta}"
    return h


def assert_complete(r: types.Result) -> None:
    """resultType "complete" on the wire (the SDK defaults it when absent, so
    look at the fields the server actually sent)."""
    assert r.result_type == "complete", r
    assert "result_type" in r.model_fields_set, f"no resultType on the wire: {r}"


def writes_ok(audit: Path) -> int:
    return sum(1 for x in read_jsonl(audit) if x["tool"] == "sqlite.write_query" and x["outcome"] == "ok")


# --- discovery, the first list, resultType ----------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("mode", MODES)
async def test_discover_and_the_first_list(tmp_path, db, transport, mode):
    async with modern_proxy(tmp_path, transport, "--server", time_server(), "--server", sqlite_server(db),
                            mode=mode) as p:
        if mode == "auto":
            # the SDK probed server/discover and adopted it: the proxy is modern
            assert p.client.protocol_version == MODERN, (
                f"mode=auto negotiated {p.client.protocol_version}: server/discover was not answered")
            d = p.session.discover_result
            assert d is not None and MODERN in d.supported_versions, d
            assert d.capabilities.tools is not None, d
        if mode == "legacy":
            assert p.client.protocol_version != MODERN and p.session.initialize_result is not None
        if mode != "legacy":
            assert p.modern
            # server/discover answered at 2026-07-28, raw (mode=2026-07-28 never sends one itself)
            raw = await p.session.send_discover(MODERN)
            assert MODERN in raw["supportedVersions"], raw
            assert raw.get("resultType") == "complete", raw
            assert "ttlMs" in raw and raw.get("cacheScope") in ("public", "private"), raw
            assert "tools" in raw["capabilities"], raw
        listed = await p.client.list_tools(cache_mode="refresh")
        names = [t.name for t in listed.tools]
        # never empty: the proxy's own tools first (the shipped selection policy
        # activates nothing else without context: pinned = [], min_active = 0)
        assert names and names[:2] == META, names
        if p.modern:
            assert_complete(listed)
            # cache hints on the wire (SEP-2549). A bare list is the same for every
            # caller (the lead's reading: public, a few seconds); one that depends
            # on the request's own context or handle is the caller's alone: private.
            # (The design said `cacheScope: "private"` for every modern tools/list.)
            assert {"cache_scope", "ttl_ms"} <= listed.model_fields_set, listed
            if listed.cache_scope == "public":
                assert listed.ttl_ms <= 60_000, listed
            ctx = await p.client.list_tools(meta={"toolgate/context": {"message": QUESTION}})
            assert ctx.cache_scope == "private" and "cache_scope" in ctx.model_fields_set, ctx
            # toolgate__call_tool and toolgate__find_tools take the handle
            schemas = {t.name: t.input_schema for t in listed.tools}
            for meta_tool in META:
                assert schemas[meta_tool]["properties"]["session"]["type"] == "string", schemas[meta_tool]
                assert "session" not in schemas[meta_tool].get("required", [])
        r = await p.call("toolgate__find_tools", {"query": QUESTION})
        assert not r.is_error, text_of(r)
        if p.modern:
            assert_complete(r)


# --- find_tools, then a call, with and without the handle ---------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("mode", MODES)
async def test_find_tools_then_call_the_found_tool(tmp_path, db, transport, mode):
    audit = tmp_path / "audit.jsonl"
    async with modern_proxy(tmp_path, transport, "--server", time_server(), "--server", sqlite_server(db),
                            "--audit", str(audit), mode=mode) as p:
        plain = await p.names()
        assert "sqlite__list_tables" not in plain
        r = await p.call("toolgate__find_tools", {"query": QUESTION})
        assert not r.is_error, text_of(r)
        found = [t["name"] for t in r.structured_content["tools"]]
        assert found and found[0] == "sqlite__list_tables", found
        if not p.modern:
            # the legacy era keeps the found set in the session
            rows = await p.call("sqlite__read_query", ROWS)
            assert not rows.is_error and rows_in(rows), text_of(rows)
            r = await p.call("toolgate__call_tool", {"name": "sqlite__list_tables", "arguments": {}})
            assert "users" in text_of(r)
            return
        # the handle: in structuredContent, on the last text line, in the result's _meta
        h = r.structured_content.get("session")
        assert isinstance(h, str) and h, r.structured_content
        # ... the text's last line hands it to the model (the design: `session: <handle>`)
        assert h in text_of(r).splitlines()[-1], text_of(r)
        assert handle_of(r) == h
        # no session: a plain tools/list does not know what was found ...
        assert "sqlite__list_tables" not in await p.names()
        # ... a tools/list with the handle does, privately; the same request gives the same list
        listed = await p.client.list_tools(meta={SESSION_META: h})
        assert listed.cache_scope == "private", listed
        with_h = [t.name for t in listed.tools]
        assert with_h[:2] == META and "sqlite__list_tables" in with_h, with_h
        assert set(plain) <= set(with_h)
        assert await p.names(meta={SESSION_META: h}) == with_h
        # a direct tools/call of a found tool, the handle in _meta: real rows
        rows = await p.call("sqlite__read_query", ROWS, meta={SESSION_META: h})
        assert not rows.is_error and rows_in(rows), text_of(rows)
        assert_complete(rows)
        h2 = handle_of(rows)
        # through toolgate__call_tool, the handle as its `session` argument
        r = await p.call("toolgate__call_tool", {"name": "sqlite__list_tables", "arguments": {}, "session": h2})
        assert not r.is_error and "users" in text_of(r), text_of(r)
        h3 = handle_of(r)
        assert "sqlite__list_tables" in await p.names(meta={SESSION_META: h3})
        # a second search with the handle: as in a legacy session, the new
        # question's tools take the list (and the audit session goes on)
        r = await p.call("toolgate__find_tools", {"query": TIME_QUESTION, "session": h3})
        assert not r.is_error, text_of(r)
        assert "time__get_current_time" in [t["name"] for t in r.structured_content["tools"]], text_of(r)
        now = await p.names(meta={SESSION_META: r.structured_content["session"]})
        assert "time__get_current_time" in now, now
    # one audit session across the requests that carried the handle
    lines = [x for x in read_jsonl(audit) if x["outcome"] == "ok"]
    assert len({x["session"] for x in lines}) == 1, lines


# --- DROP TABLE -------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("mode", MODES)
async def test_drop_table_is_refused_and_the_table_survives(tmp_path, db, transport, mode):
    audit = tmp_path / "audit.jsonl"
    async with modern_proxy(tmp_path, transport, "--server", sqlite_server(db), "--audit", str(audit),
                            mode=mode) as p:
        r = await p.call("sqlite__write_query", {"query": "DROP TABLE users"})
        assert r.is_error and "DROP" in text_of(r), text_of(r)
        r = await p.call("toolgate__call_tool",
                         {"name": "sqlite__write_query", "arguments": {"query": "DROP TABLE users"}})
        assert r.is_error and "DROP" in text_of(r), text_of(r)
    assert "users" in tables(db)
    assert [(x["decision"], x["outcome"]) for x in read_jsonl(audit)] == [("deny", "denied")] * 2


# --- an `ask` verdict: confirmed, declined ------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("mode", MODES)
async def test_an_ask_verdict_confirmed_then_one_declined(tmp_path, db, transport, mode):
    audit = tmp_path / "audit.jsonl"
    seen: list[tuple[Any, types.ElicitRequestParams]] = []
    answers = [types.ElicitResult(action="accept", content={"confirm": True}),
               types.ElicitResult(action="decline"),
               types.ElicitResult(action="accept", content={"confirm": False})]

    async def user(context, params):
        seen.append((context.request_id, params))
        return answers[len(seen) - 1]

    async with modern_proxy(tmp_path, transport, "--server", sqlite_server(db), "--audit", str(audit),
                            mode=mode, elicitation=user) as p:
        r = await p.call("sqlite__write_query", RENAME)
        assert not r.is_error, text_of(r)
        assert tables(db) == {"customers"}
        r = await p.call("sqlite__write_query", RENAME_AGAIN)
        assert r.is_error and "declined" in text_of(r), text_of(r)
        # accepting the form without ticking the box is no confirmation either
        r = await p.call("toolgate__call_tool", {"name": "sqlite__write_query", "arguments": RENAME_AGAIN})
        assert r.is_error, text_of(r)
        modern = p.modern
    assert tables(db) == {"customers"}
    assert len(seen) == 3
    for request_id, params in seen:
        if modern:
            # asked through MRTR: the SDK's driver names the input request by its key
            assert request_id == CONFIRM_KEY, request_id
        else:
            assert isinstance(request_id, int), request_id   # a JSON-RPC elicitation/create
        assert "sqlite__write_query" in params.message
        assert params.requested_schema["properties"]["confirm"]["type"] == "boolean"
        assert params.requested_schema["required"] == ["confirm"]
    assert "customers" in seen[0][1].message and "clients" in seen[1][1].message
    lines = [x for x in read_jsonl(audit) if x["tool"] == "sqlite.write_query"]
    done = [(x["decision"], x["confirmed"], x["outcome"]) for x in lines if x["outcome"] != "input_required"]
    assert done == [("ask", True, "ok"), ("ask", False, "declined"), ("ask", False, "declined")], lines
    if modern:
        assert sum(x["outcome"] == "input_required" for x in lines) == 3, lines


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("mode", MODES)
async def test_an_ask_verdict_for_a_client_that_cannot_ask_is_a_tool_error(tmp_path, db, transport, mode):
    async with modern_proxy(tmp_path, transport, "--server", sqlite_server(db), mode=mode) as p:
        r = await p.round1("sqlite__write_query", RENAME)
        assert isinstance(r, types.CallToolResult) and r.is_error, r
        assert "confirmation" in text_of(r) and "elicitation" in text_of(r), text_of(r)
    assert tables(db) == {"users"}


# --- MRTR by hand: the requestState --------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_tampered_or_rebound_request_state_is_refused_and_nothing_runs(tmp_path, db, transport):
    audit = tmp_path / "audit.jsonl"

    async def never(context, params):  # the rounds are driven by hand
        raise AssertionError("the SDK's driver must not run here")

    async with modern_proxy(tmp_path, transport, "--server", sqlite_server(db), "--audit", str(audit),
                            mode=MODERN, elicitation=never) as p:
        first = await p.round1("sqlite__write_query", RENAME)
        assert isinstance(first, types.InputRequiredResult), first
        assert first.result_type == "input_required"
        assert set(first.input_requests or {}) == {CONFIRM_KEY}, first.input_requests
        ask = first.input_requests[CONFIRM_KEY]
        assert isinstance(ask, types.ElicitRequest) and ask.method == "elicitation/create", ask
        assert ask.params.mode == "form"
        assert "sqlite__write_query" in ask.params.message and "customers" in ask.params.message
        schema = ask.params.requested_schema
        assert schema["properties"]["confirm"]["type"] == "boolean" and schema["required"] == ["confirm"]
        state = first.request_state
        assert isinstance(state, str) and state

        # one character changed
        await refused_retry(p, "sqlite__write_query", RENAME, tamper(state), yes())
        # the state of one call, the arguments of another
        await refused_retry(p, "sqlite__write_query", OTHER_RENAME, state, yes())
        # ... the same, through toolgate__call_tool
        await refused_retry(p, "toolgate__call_tool", {"name": "sqlite__write_query", "arguments": OTHER_RENAME},
                            state, yes())
        # an answer without any requestState confirms nothing: asked again, or refused
        r = await p.retry("sqlite__write_query", RENAME, None, yes())
        assert isinstance(r, types.InputRequiredResult) or r.is_error, r
        assert tables(db) == {"users"}, "a refused retry ran the call"
        assert writes_ok(audit) == 0

        # the genuine retry (from a fresh first round) runs, once
        first = await p.round1("sqlite__write_query", RENAME)
        assert isinstance(first, types.InputRequiredResult), first
        r = await p.retry("sqlite__write_query", RENAME, first.request_state, yes())
        assert isinstance(r, types.CallToolResult) and not r.is_error, text_of(r)
        assert_complete(r)
        assert tables(db) == {"customers"}
        # replayed after it was used (same replica): refused, not run again
        await refused_retry(p, "sqlite__write_query", RENAME, first.request_state, yes())
    assert writes_ok(audit) == 1
    refused = [x for x in read_jsonl(audit) if x["outcome"] == "state_refused"]
    assert len(refused) >= 4, read_jsonl(audit)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_expired_request_state_is_refused(tmp_path, db, transport):
    async def never(context, params):
        raise AssertionError("the SDK's driver must not run here")

    # `confirm_ttl_ms` (the requestState's expiry; default 300 s) in the proxy's configuration
    config = tmp_path / "proxy.toml"
    config.write_text("confirm_ttl_ms = 1000\n")
    async with modern_proxy(tmp_path, transport, "--config", str(config), "--server", sqlite_server(db),
                            mode=MODERN, elicitation=never) as p:
        first = await p.round1("sqlite__write_query", RENAME)
        assert isinstance(first, types.InputRequiredResult), first
        await anyio.sleep(2.0)
        await refused_retry(p, "sqlite__write_query", RENAME, first.request_state, yes())
    assert tables(db) == {"users"}


# --- a handle or a requestState from a proxy with another key ------------------


def key_args(tmp_path: Path, key: str, tag: str) -> tuple[list[str], dict]:
    """Arguments and environment for a proxy whose state key is `key`, by the
    mechanism test_replicas.py names (STATE_KEY_VIA)."""
    from test_replicas import state_key

    return state_key(tmp_path, key, tag)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_handle_or_request_state_from_a_proxy_with_another_key_is_refused(tmp_path, db, transport):
    # over stdio each proxy draws its own random key; over HTTP two explicit ones
    a_args: list[str] = []
    b_args: list[str] = []
    a_env: dict = {}
    b_env: dict = {}
    if transport == "http":
        a_args, a_env = key_args(tmp_path, "a" * 40, "a")
        b_args, b_env = key_args(tmp_path, "b" * 40, "b")
    audit_b = tmp_path / "audit-b.jsonl"
    servers = ["--server", sqlite_server(db)]

    async def never(context, params):
        raise AssertionError("the SDK's driver must not run here")

    async with modern_proxy(tmp_path, transport, *a_args, *servers, mode=MODERN, env=a_env,
                            elicitation=never) as a:
        r = await a.call("toolgate__find_tools", {"query": QUESTION})
        h = r.structured_content["session"]
        first = await a.round1("sqlite__write_query", RENAME)
        assert isinstance(first, types.InputRequiredResult), first
        # a changed handle, on the proxy that issued it
        bad = await a.call("sqlite__read_query", ROWS, meta={SESSION_META: tamper(h)})
        assert bad.is_error and HANDLE_INVALID in text_of(bad) and not rows_in(bad), text_of(bad)
        # the genuine one works there
        ok = await a.call("sqlite__read_query", ROWS, meta={SESSION_META: h})
        assert not ok.is_error and rows_in(ok), text_of(ok)
    async with modern_proxy(tmp_path, transport, *b_args, *servers, "--audit", str(audit_b), mode=MODERN,
                            env=b_env, elicitation=never) as b:
        r = await b.call("sqlite__read_query", ROWS, meta={SESSION_META: h})
        assert r.is_error and HANDLE_INVALID in text_of(r) and not rows_in(r), text_of(r)
        # the refusal says what to do (search again without the handle)
        assert "again without" in text_of(r), text_of(r)
        r = await b.call("toolgate__call_tool", {"name": "sqlite__read_query", "arguments": ROWS, "session": h})
        assert r.is_error and HANDLE_INVALID in text_of(r) and not rows_in(r), text_of(r)
        r = await b.call("toolgate__find_tools", {"query": QUESTION, "session": h})
        assert r.is_error and HANDLE_INVALID in text_of(r), text_of(r)
        # a's confirmation, answered at b
        await refused_retry(b, "sqlite__write_query", RENAME, first.request_state, yes())
    assert tables(db) == {"users"}
    lines = read_jsonl(audit_b)
    assert lines and all(x["outcome"] == "state_refused" for x in lines), lines


# --- a downstream server's own InputRequiredResult -----------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("mode", MODES)
async def test_a_downstream_input_required_result_is_passed_through_and_the_retry_routed_back(
        tmp_path, transport, mode):
    log = tmp_path / "modern-server.jsonl"
    asked: list[tuple[Any, str]] = []
    answer = {"approve": True}

    async def user(context, params):
        asked.append((context.request_id, params.message))
        return types.ElicitResult(action="accept", content=dict(answer))

    async with modern_proxy(tmp_path, transport, "--server", modern_server(log),
                            "--tags", str(modern_tags(tmp_path)), mode=mode, elicitation=user) as p:
        r = await p.call("modern__lookup_order", {"order_id": "7"})
        assert not r.is_error and text_of(r) == "order 7: shipped (modern)", text_of(r)
        if not p.modern:
            # a legacy client reaches the modern server's ordinary tool (the proxy speaks 2026-07-28 down)
            assert all(x.get("protocolVersion") == MODERN for x in read_jsonl(log) if "method" in x)
            return
        # the SDK's driver answers the server's own question and retries
        r = await p.call("modern__refund_order", {"order_id": "42"})
        assert not r.is_error and text_of(r) == "order 42: refunded (modern)", text_of(r)
        assert asked == [("approve", "modern: refund order 42?")], asked

        # by hand: the downstream's question comes up under its own key
        first = await p.round1("modern__refund_order", {"order_id": "43"})
        assert isinstance(first, types.InputRequiredResult), first
        assert set(first.input_requests or {}) == {"approve"}, first.input_requests
        assert first.input_requests["approve"].params.message == "modern: refund order 43?"
        assert first.request_state
        up = {"approve": types.ElicitResult(action="accept", content={"approve": True})}
        # the proxy's seal around the downstream's state: changed, refused before it goes down
        await refused_retry(p, "modern__refund_order", {"order_id": "43"}, tamper(first.request_state), up)
        # other arguments: refused
        await refused_retry(p, "modern__refund_order", {"order_id": "44"}, first.request_state, up)
        # the user says no: the downstream decides, with its own state back
        no = {"approve": types.ElicitResult(action="accept", content={"approve": False})}
        r = await p.retry("modern__refund_order", {"order_id": "43"}, first.request_state, no)
        assert isinstance(r, types.CallToolResult) and not r.is_error, r
        assert text_of(r) == "order 43: refund not approved (modern)", text_of(r)

    entries = read_jsonl(log)
    requests = [x for x in entries if "method" in x]
    assert requests and all(x["protocolVersion"] == MODERN for x in requests), requests
    assert not any(x["method"] == "initialize" for x in requests)
    calls = [(x["name"], x["arguments"], x["inputResponses"], x["requestState"])
             for x in requests if x["method"] == "tools/call"]
    assert ("refund_order", {"order_id": "42"}, [], False) in calls
    # the retry went to the server under its own tool name, with its own state back
    assert ("refund_order", {"order_id": "42"}, ["approve"], True) in calls
    assert ("refund_order", {"order_id": "43"}, ["approve"], True) in calls
    # the refused retries never reached it
    assert not any(c[1] == {"order_id": "44"} for c in calls), calls
    assert sum(1 for c in calls if c[1] == {"order_id": "43"} and c[3]) == 1, calls
    events = [x["event"] for x in entries if "event" in x]
    assert events.count("refunded") == 1 and events.count("refund_declined") == 1, events


# --- the SDK itself, without the proxy: the fixture server behaves as the tests assume --


async def test_the_modern_fixture_server_serves_only_2026_07_28(tmp_path):
    log = tmp_path / "modern-server.jsonl"
    from conftest import MODERN_SERVER, VENV

    params = StdioServerParameters(command=str(VENV / "python"), args=[str(MODERN_SERVER)],
                                   env={"MODERN_SERVER_LOG": str(log)})
    asked = []

    async def user(context, params):
        asked.append(context.request_id)
        return types.ElicitResult(action="accept", content={"approve": True})

    with open(tmp_path / "modern-server.err", "w") as err:
        async with Client(stdio_client(params, errlog=err), mode="auto", elicitation_callback=user) as c:
            assert c.protocol_version == MODERN
            r = await c.call_tool("refund_order", {"order_id": "1"})
            assert r.content[0].text == "order 1: refunded (modern)" and asked == ["approve"]
            first = await c.session.call_tool("refund_order", {"order_id": "2"}, allow_input_required=True)
            assert isinstance(first, types.InputRequiredResult)
            with pytest.raises(MCPError):   # the SDK's own boundary: a JSON-RPC error
                await c.session.call_tool("refund_order", {"order_id": "2"}, allow_input_required=True,
                                          input_responses={"approve": types.ElicitResult(
                                              action="accept", content={"approve": True})},
                                          request_state=tamper(first.request_state))
        with pytest.raises(BaseException):
            async with Client(stdio_client(params, errlog=err), mode="legacy"):
                pass
    assert any(x.get("method") == "initialize" for x in read_jsonl(log))


# --- a changed tool definition, confirmed by MRTR -------------------------------

MUT_TAGS = '''
[[tool]]
name = "mut.report"
description = "Summarise the sales report at a path"
domains = ["data_analysis"]
risk_level = "safe"
requires_confirmation = {confirm}
base_priority = 0.5
parameter_complexity = 1
'''


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("confirm_too", [False, True])
async def test_a_changed_definition_is_confirmed_by_mrtr_then_called(tmp_path, transport, confirm_too):
    """A downstream tool whose description changed is withheld; a modern
    client confirms it through an InputRequiredResult and the retry runs it.
    When the tool also needs the gate's confirmation, the user is asked twice
    (the definition, then the call) and the second retry runs it: the trust
    given in the first round is carried by the requestState (over HTTP no
    session keeps it), never asked for again in a loop."""
    from test_discovery import MUTATING_SERVER
    from conftest import VENV1

    script = tmp_path / "mut_server.py"
    script.write_text(MUTATING_SERVER)
    tags = tmp_path / "tags"
    shutil.copytree(ROOT / "tool-tags", tags)
    (tags / "mut.toml").write_text(MUT_TAGS.format(confirm="true" if confirm_too else "false"))
    audit = tmp_path / "audit.jsonl"
    asked: list[str] = []

    async def user(context, params):
        asked.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True})

    async with modern_proxy(tmp_path, transport, "--server", f"mut={VENV1 / 'python'} {script}",
                            "--tags", str(tags), "--audit", str(audit), "--debounce-ms", "20",
                            mode=MODERN, elicitation=user) as p:
        if confirm_too:
            first = await p.round1("mut__report", {"path": "q3.csv"})
            assert isinstance(first, types.InputRequiredResult), first
        assert text_of(await p.call("mut__report", {"path": "q3.csv"})) == "report: 3 sales"
        n = len(asked)
        assert text_of(await p.call("mut__mutate")) == "mutated"
        # the proxy re-lists on the server's list_changed: wait until it withholds
        for _ in range(100):
            r = await p.round1("mut__report", {"path": "q3.csv"})
            if isinstance(r, types.InputRequiredResult) and "changed" in r.input_requests[CONFIRM_KEY].params.message:
                break
            await anyio.sleep(0.05)
        else:
            raise AssertionError("the changed definition was never withheld")
        # the SDK's driver answers every round: the definition, then (when
        # the tool needs it) the call
        r = await p.call("mut__report", {"path": "q3.csv"})
        assert not r.is_error and text_of(r) == "report: 3 sales", text_of(r)
        rounds = asked[n:]
        assert "changed" in rounds[0], rounds
        assert len(rounds) == (2 if confirm_too else 1), rounds
        if confirm_too:
            assert "wants to call `mut__report`" in rounds[1], rounds
    lines = read_jsonl(audit)
    accepted = [x for x in lines if x["outcome"] == "definition_accepted"]
    assert len(accepted) == 1, lines
