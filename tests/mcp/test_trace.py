"""OpenTelemetry traces of the proxy (src/mcp/trace.rs).

A real client (the official `mcp` SDK) calls a tool through the proxy with a
W3C `traceparent` in the request's `_meta` (SEP-414); the downstream server
(the `mcp` SDK's FastMCP, written below) answers with the `_meta` it
received. The proxy exports its spans as OTLP over HTTP/protobuf to the
endpoint of `OTEL_EXPORTER_OTLP_ENDPOINT`.

No OpenTelemetry Collector is installable from PyPI, npm or Debian (the
collector is a Go program; Debian packages only its Go sources), so the
receiver is a loopback HTTP server in this file that takes `POST
/v1/traces` as a collector's OTLP/HTTP receiver does and decodes each body
with the official `opentelemetry-proto` package (generated from the OTLP
.proto files): a body that is not an `ExportTraceServiceRequest` fails the
test.

Checked: the span tree request -> gate -> downstream, whose trace id is the
client's; the request span's parent is the client's span; the downstream
server got the downstream span's `traceparent` in `_meta`; the audit record
carries the trace id. Without an endpoint no span is sent, and the client's
`traceparent` still reaches the server and the audit.
"""

from __future__ import annotations

import json
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import anyio
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from conftest import VENV1, proxy, read_jsonl, text_of

pytestmark = pytest.mark.anyio

# A downstream server whose one tool answers with the `_meta` of its request.
SERVER = '''
import json
from mcp.server.fastmcp import Context, FastMCP

mcp = FastMCP("trace")


@mcp.tool()
def echo_meta(ctx: Context) -> str:
    """Return the _meta of this request."""
    meta = ctx.request_context.meta
    return json.dumps(meta.model_dump(by_alias=True, exclude_none=True) if meta else {})


mcp.run()
'''


class Receiver:
    """An OTLP/HTTP trace receiver on loopback: decoded spans, by trace id."""

    def __init__(self) -> None:
        self.spans: list[tuple[dict, Span]] = []  # (resource attributes, span)
        self.requests = 0
        spans, me = self.spans, self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                assert self.path == "/v1/traces", self.path
                assert self.headers.get("Content-Type") == "application/x-protobuf", self.headers
                req = ExportTraceServiceRequest()
                req.ParseFromString(body)
                me.requests += 1
                for rs in req.resource_spans:
                    res = {a.key: a.value.string_value for a in rs.resource.attributes}
                    for ss in rs.scope_spans:
                        for s in ss.spans:
                            spans.append((res, s))
                out = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def of_trace(self, trace_id: str) -> list[Span]:
        return [s for _, s in self.spans if s.trace_id.hex() == trace_id]

    def close(self) -> None:
        self.server.shutdown()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


def trace_server(tmp_path: Path) -> str:
    script = tmp_path / "trace_server.py"
    script.write_text(SERVER)
    return f"trace={VENV1 / 'python'} {script}"


def attrs(span: Span) -> dict:
    return {a.key: a.value.string_value for a in span.attributes}


async def spans_of(receiver: Receiver, trace_id: str, n: int) -> list[Span]:
    with anyio.fail_after(15):
        while len(found := receiver.of_trace(trace_id)) < n:
            await anyio.sleep(0.05)
    return found


async def test_a_call_makes_a_span_tree_under_the_clients_traceparent(tmp_path, receiver):
    trace_id, client_span = secrets.token_hex(16), secrets.token_hex(8)
    audit = tmp_path / "audit.jsonl"
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    async with proxy(tmp_path, "--server", trace_server(tmp_path), "--audit", str(audit), env=env) as p:
        r = await p.session.call_tool("trace__echo_meta", {},
                                      meta={"traceparent": f"00-{trace_id}-{client_span}-01",
                                            "tracestate": "congo=t61rcWkgMzE"})
        assert not r.is_error, r
        got = json.loads(text_of(r))
        spans = await spans_of(receiver, trace_id, 3)
        # a second call, without a traceparent: a trace of its own, rooted at the proxy
        r2 = await p.session.call_tool("trace__echo_meta", {})
        assert not r2.is_error
        got2 = json.loads(text_of(r2))

    by_name = {s.name: s for s in spans}
    assert set(by_name) == {"tools/call trace__echo_meta", "toolgate.gate", "tools/call echo_meta"}, by_name
    req, gate, down = (by_name["tools/call trace__echo_meta"], by_name["toolgate.gate"],
                       by_name["tools/call echo_meta"])
    # request -> gate, request -> downstream; the request continues the client's span
    assert req.parent_span_id.hex() == client_span
    assert req.kind == Span.SPAN_KIND_SERVER
    assert gate.parent_span_id == req.span_id and gate.kind == Span.SPAN_KIND_INTERNAL
    assert down.parent_span_id == req.span_id and down.kind == Span.SPAN_KIND_CLIENT
    assert attrs(req)["mcp.method.name"] == "tools/call"
    assert attrs(req)["gen_ai.tool.name"] == "trace__echo_meta"
    assert attrs(gate)["toolgate.decision"] == "allow"
    assert attrs(down)["toolgate.server"] == "trace"
    assert req.start_time_unix_nano <= gate.start_time_unix_nano <= down.start_time_unix_nano
    assert down.end_time_unix_nano <= req.end_time_unix_nano
    res = [r for r, s in receiver.spans if s.trace_id.hex() == trace_id][0]
    assert res.get("service.name") == "toolgate", res

    # the downstream server received the downstream span's traceparent in _meta
    assert got["traceparent"] == f"00-{trace_id}-{down.span_id.hex()}-01", got
    assert got.get("tracestate") == "congo=t61rcWkgMzE", got

    # ... and the second call's trace starts at the proxy
    tp2 = got2["traceparent"].split("-")
    assert tp2[1] != trace_id
    own = await spans_of(receiver, tp2[1], 3)
    root = [s for s in own if s.name == "tools/call trace__echo_meta"][0]
    assert root.parent_span_id == b"", "no client trace: the request span is a root"

    # the audit records carry the trace ids
    recs = [x for x in read_jsonl(audit) if x["tool"] == "trace.echo_meta"]
    assert [x.get("trace_id") for x in recs] == [trace_id, tp2[1]], recs


async def test_without_an_endpoint_no_span_is_sent_and_the_traceparent_is_passed_on(tmp_path, receiver):
    trace_id, client_span = secrets.token_hex(16), secrets.token_hex(8)
    tp = f"00-{trace_id}-{client_span}-01"
    audit = tmp_path / "audit.jsonl"
    async with proxy(tmp_path, "--server", trace_server(tmp_path), "--audit", str(audit)) as p:
        r = await p.session.call_tool("trace__echo_meta", {}, meta={"traceparent": tp})
        assert not r.is_error, r
        got = json.loads(text_of(r))
        r = await p.session.call_tool("trace__echo_meta", {})
        assert "traceparent" not in json.loads(text_of(r)), "no trace: nothing invented"
    assert got["traceparent"] == tp, got
    recs = [x for x in read_jsonl(audit) if x["tool"] == "trace.echo_meta"]
    assert recs[0].get("trace_id") == trace_id and "trace_id" not in recs[1], recs
    assert receiver.requests == 0


async def test_over_http_the_traceparent_header_is_continued(tmp_path, receiver):
    from test_http import http_client, http_proxy

    trace_id, client_span = secrets.token_hex(16), secrets.token_hex(8)
    audit = tmp_path / "audit.jsonl"
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    async with http_proxy(tmp_path, "--server", trace_server(tmp_path), "--audit", str(audit), env=env) as hp:
        async with http_client(hp.url, headers={"traceparent": f"00-{trace_id}-{client_span}-01"}) as p:
            r = await p.call("trace__echo_meta", {})
            assert not r.is_error, r
            got = json.loads(text_of(r))
            spans = await spans_of(receiver, trace_id, 3)
    req = [s for s in spans if s.name == "tools/call trace__echo_meta"][0]
    down = [s for s in spans if s.name == "tools/call echo_meta"][0]
    assert req.parent_span_id.hex() == client_span
    assert got["traceparent"] == f"00-{trace_id}-{down.span_id.hex()}-01", got
    recs = [x for x in read_jsonl(audit) if x["tool"] == "trace.echo_meta"]
    assert recs and recs[0].get("trace_id") == trace_id, recs


def test_a_bad_endpoint_stops_the_proxy_with_a_clear_error(tmp_path):
    import os
    import subprocess

    from conftest import toolgate_bin

    out = subprocess.run([str(toolgate_bin()), "mcp-proxy", "--server", trace_server(tmp_path)],
                         capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                         env={**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": "::not a url"})
    assert out.returncode == 1, out
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" in out.stderr and "panicked" not in out.stderr, out.stderr


async def test_every_client_request_is_a_server_span_under_its_traceparent(tmp_path, receiver):
    """resources/read, prompts/get and the other requests the proxy serves
    each make one server span (OpenTelemetry's MCP conventions: named
    `{mcp.method.name} {target}`, the target the prompt's name; a resource's
    URI an attribute, not in the name) that continues the client's
    `traceparent` from `_meta`. The servers are real (the SDK's FastMCP
    servers of test_surfaces.py, with resources and prompts)."""
    from mcp import types

    from test_surfaces import servers

    args, _ = servers(tmp_path)
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "100"}

    def tp() -> tuple[str, str, dict]:
        t, s = secrets.token_hex(16), secrets.token_hex(8)
        return t, s, {"traceparent": f"00-{t}-{s}-01"}

    async with proxy(tmp_path, *args, env=env) as p:
        read_trace, read_parent, meta = tp()
        r = await p.session.read_resource("memo://a/readme", meta=meta)
        assert r.contents[0].text == "readme of a", r
        get_trace, get_parent, meta = tp()
        g = await p.session.get_prompt("b__only_b", meta=meta)
        assert "only b" in g.messages[0].content.text, g
        list_trace, list_parent, meta = tp()
        await p.session.list_prompts(params=types.PaginatedRequestParams(_meta=meta))
        ping_trace, ping_parent, meta = tp()
        await p.session.send_ping(meta=meta)
        bad_trace, bad_parent, meta = tp()
        with pytest.raises(Exception):
            await p.session.read_resource("memo://nobody/readme", meta=meta)
        read = (await spans_of(receiver, read_trace, 1))[0]
        get = (await spans_of(receiver, get_trace, 1))[0]
        listed = (await spans_of(receiver, list_trace, 1))[0]
        ping = (await spans_of(receiver, ping_trace, 1))[0]
        bad = (await spans_of(receiver, bad_trace, 1))[0]
        # a request without a traceparent makes a root span of its own
        await p.session.list_resources()
        with anyio.fail_after(15):
            while not [s for _, s in receiver.spans if s.name == "resources/list"]:
                await anyio.sleep(0.05)
        # initialize (the legacy handshake) was served too, as a root
        with anyio.fail_after(15):
            while not [s for _, s in receiver.spans if s.name == "initialize"]:
                await anyio.sleep(0.05)

    for span, name, method, parent in [(read, "resources/read", "resources/read", read_parent),
                                       (get, "prompts/get b__only_b", "prompts/get", get_parent),
                                       (listed, "prompts/list", "prompts/list", list_parent),
                                       (ping, "ping", "ping", ping_parent)]:
        assert span.name == name, span
        assert span.kind == Span.SPAN_KIND_SERVER, span
        assert span.parent_span_id.hex() == parent, span
        assert attrs(span)["mcp.method.name"] == method, attrs(span)
        assert attrs(span)["mcp.session.id"], attrs(span)
        assert span.status.code != span.status.STATUS_CODE_ERROR, span
    assert attrs(read)["mcp.resource.uri"] == "memo://a/readme", attrs(read)
    assert attrs(get)["gen_ai.prompt.name"] == "b__only_b", attrs(get)
    assert bad.name == "resources/read" and bad.parent_span_id.hex() == bad_parent
    assert bad.status.code == bad.status.STATUS_CODE_ERROR, bad
    assert attrs(bad)["rpc.response.status_code"], attrs(bad)
    root = [s for _, s in receiver.spans if s.name == "resources/list"][0]
    assert root.parent_span_id == b"" and root.kind == Span.SPAN_KIND_SERVER
    init = [s for _, s in receiver.spans if s.name == "initialize"][0]
    assert attrs(init)["mcp.method.name"] == "initialize"


async def test_a_modern_clients_server_discover_is_a_span(tmp_path, receiver):
    """A 2026-07-28 client (the SDK in mode "auto") opens with
    server/discover: a server span of its own, as is its first tools/list."""
    from conftest import time_server
    from test_modern import modern_proxy

    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    async with modern_proxy(tmp_path, "stdio", "--server", time_server(), mode="auto", env=env) as p:
        assert p.modern
        await p.client.list_tools(cache_mode="refresh")
        with anyio.fail_after(15):
            while not {"server/discover", "tools/list"} <= {s.name for _, s in receiver.spans}:
                await anyio.sleep(0.05)
    discover = [s for _, s in receiver.spans if s.name == "server/discover"][0]
    assert discover.kind == Span.SPAN_KIND_SERVER
    assert attrs(discover)["mcp.method.name"] == "server/discover"
    assert not [s for _, s in receiver.spans if s.name == "initialize"], "a modern client never initializes"
