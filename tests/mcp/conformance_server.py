"""The MCP conformance suite's fixture server, for both protocol eras, on
Streamable HTTP, with the `mcp` 2.x SDK (`MCPServer`, from `.venv`).

    .venv/bin/python tests/mcp/conformance_server.py --port PORT

serves `http://127.0.0.1:PORT/mcp`: the tools, resources, resource template,
prompts and completions the server scenarios of
`@modelcontextprotocol/conformance` (0.2.x) name (`test_simple_text`,
`test://static-text`, `test_prompt_with_arguments`, ...), for

- 2025-11-25 and older clients (initialize handshake, sessions): logging,
  resource subscriptions, sampling and elicitation as server-to-client
  requests in the middle of a call;
- 2026-07-28 clients (stateless, per-request `_meta`, `server/discover`):
  the multi-round-trip `InputRequiredResult` tools and prompt (SEP-2322),
  caching hints (SEP-2549), the diagnostic tools of `server-stateless`
  (`test_missing_capability`, `test_logging_tool`,
  `test_streaming_elicitation`, `test_trigger_tool_change`,
  `test_trigger_prompt_change`).

tests/mcp_conformance.rs runs the suite against it alone and through
`toolgate mcp-proxy --listen` in front of it, and compares. It is what the
suite's own reference fixture does (examples/servers in the conformance
repository), written for this SDK; tests/mcp/conformance_tools.py is the
older stdio one (`mcp<2`).
"""

from __future__ import annotations

import argparse
import base64
import json
import struct
import zlib
from typing import Any

import anyio
from mcp.server.caching import CacheHint
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import (
    CallToolResult,
    Completion,
    EmptyResult,
    InputRequiredResult,
    SetLevelRequestParams,
    SubscribeRequestParams,
    UnsubscribeRequestParams,
)


def _png() -> bytes:
    """A 1x1 red PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
            + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b""))


PNG = base64.b64encode(_png()).decode()
# a RIFF/WAVE header with no samples
WAV = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
MODERN = "2026-07-28"

# every cacheable result carries ttlMs and cacheScope (SEP-2549)
HINT = CacheHint(ttl_ms=0, scope="private")
mcp = MCPServer(
    "toolgate-conformance-fixture",
    version="1.0.0",
    cache_hints={m: HINT for m in ("tools/list", "prompts/list", "resources/list",
                                    "resources/templates/list", "resources/read")},
)


def result(*content: dict[str, Any], is_error: bool = False) -> CallToolResult:
    return CallToolResult.model_validate({"content": list(content), "isError": is_error})


def text(t: str) -> CallToolResult:
    return result({"type": "text", "text": t})


def input_required(requests: dict[str, dict[str, Any]], state: str | None = None) -> InputRequiredResult:
    """An InputRequiredResult; the SDK seals `state` (HMAC) on the way out."""
    body: dict[str, Any] = {"resultType": "input_required", "inputRequests": requests}
    if state is not None:
        body["requestState"] = state
    return InputRequiredResult.model_validate(body)


def elicit(message: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"method": "elicitation/create", "params": {
        "mode": "form", "message": message,
        "requestedSchema": {"type": "object", "properties": properties, "required": required}}}


def sample(prompt: str, max_tokens: int) -> dict[str, Any]:
    return {"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": max_tokens}}


ROOTS = {"method": "roots/list", "params": {}}


def responses(ctx: Context) -> dict[str, Any]:
    """The retry's inputResponses, as plain JSON (key -> response)."""
    out: dict[str, Any] = {}
    for k, v in (ctx.input_responses or {}).items():
        out[k] = v.model_dump(mode="json", by_alias=True, exclude_none=True) if hasattr(v, "model_dump") else v
    return out


def accepted(ctx: Context, key: str) -> dict[str, Any] | None:
    """The content of an accepted elicitation answer under `key`, else None."""
    r = responses(ctx).get(key)
    if isinstance(r, dict) and r.get("action") == "accept" and isinstance(r.get("content"), dict):
        return r["content"]
    return None


def modern(ctx: Context) -> bool:
    return ctx.protocol_version == MODERN


# ---- content ----------------------------------------------------------------

@mcp.tool(description="Returns a simple text response.")
def test_simple_text() -> CallToolResult:
    return text("This is a simple text response for testing.")


@mcp.tool(description="Returns a 1x1 PNG image.")
def test_image_content() -> CallToolResult:
    return result({"type": "image", "data": PNG, "mimeType": "image/png"})


@mcp.tool(description="Returns a tiny WAV file.")
def test_audio_content() -> CallToolResult:
    return result({"type": "audio", "data": WAV, "mimeType": "audio/wav"})


@mcp.tool(description="Returns an embedded text resource.")
def test_embedded_resource() -> CallToolResult:
    return result({"type": "resource", "resource": {
        "uri": "test://embedded-resource", "mimeType": "text/plain",
        "text": "This is an embedded resource content."}})


@mcp.tool(description="Returns text, an image and an embedded resource.")
def test_multiple_content_types() -> CallToolResult:
    return result(
        {"type": "text", "text": "Multiple content types test:"},
        {"type": "image", "data": PNG, "mimeType": "image/png"},
        {"type": "resource", "resource": {
            "uri": "test://mixed-content-resource", "mimeType": "application/json",
            "text": json.dumps({"test": "data", "value": 123})}},
    )


@mcp.tool(description="Always fails (a tool error, isError: true).")
def test_error_handling() -> CallToolResult:
    return result({"type": "text", "text": "This tool intentionally returns an error for testing"}, is_error=True)


@mcp.tool(description="Reports progress 0, 50 and 100 of 100.")
async def test_tool_with_progress(ctx: Context) -> CallToolResult:
    for p in (0, 50, 100):
        await ctx.report_progress(p, 100, f"Completed step {p} of 100")
        if p < 100:
            await anyio.sleep(0.05)
    return text("Progress test completed")


@mcp.tool(description="Sends three log messages while it runs.")
async def test_tool_with_logging(ctx: Context) -> CallToolResult:
    for i, m in enumerate(("Tool execution started", "Tool processing data", "Tool execution completed")):
        if i:
            await anyio.sleep(0.05)
        await ctx.info(m)
    return text("Tool with logging executed successfully")


@mcp.tool(description="Sends a log message (only when the request asked for a log level).")
async def test_logging_tool(ctx: Context) -> CallToolResult:
    await ctx.info("Logging tool ran")
    return text("Logging tool complete")


# ---- sampling and elicitation: a request mid-call (legacy), InputRequiredResult (modern)

@mcp.tool(description="Asks the client's LLM (sampling/createMessage).")
async def test_sampling(prompt: str, ctx: Context) -> CallToolResult | InputRequiredResult:
    if modern(ctx):
        r = responses(ctx).get("sampling")
        if not isinstance(r, dict):
            return input_required({"sampling": sample(prompt, 100)})
        return text(f"LLM response: {(r.get('content') or {}).get('text', 'No response')}")
    from mcp.types import SamplingMessage, TextContent
    res = await ctx.session.create_message(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
        max_tokens=100, related_request_id=ctx.request_id)
    t = getattr(res.content, "text", None) or "No response"
    return text(f"LLM response: {t}")


async def _elicit(ctx: Context, key: str, message: str, schema: dict[str, Any], prefix: str):
    if modern(ctx):
        r = responses(ctx).get(key)
        if not isinstance(r, dict):
            return input_required({key: {"method": "elicitation/create", "params": {
                "mode": "form", "message": message, "requestedSchema": schema}}})
        action, content = r.get("action"), r.get("content") or {}
    else:
        r = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
        action, content = r.action, r.content or {}
    return text(f"{prefix}: action={action}, content={json.dumps(content)}")


@mcp.tool(description="Asks the user (elicitation/create).")
async def test_elicitation(message: str, ctx: Context) -> CallToolResult | InputRequiredResult:
    return await _elicit(ctx, "response", message, {
        "type": "object",
        "properties": {"username": {"type": "string", "description": "User's response"},
                       "email": {"type": "string", "description": "User's email address"}},
        "required": ["username", "email"]}, "User response")


@mcp.tool(description="Elicitation with defaults for every primitive type (SEP-1034).")
async def test_elicitation_sep1034_defaults(ctx: Context) -> CallToolResult | InputRequiredResult:
    return await _elicit(ctx, "defaults", "Please review and update the form fields with defaults", {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {"type": "string", "description": "User status",
                       "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "description": "Verification status", "default": True},
        },
        "required": []}, "Elicitation completed")


@mcp.tool(description="Elicitation with the five enum schema variants (SEP-1330).")
async def test_elicitation_sep1330_enums(ctx: Context) -> CallToolResult | InputRequiredResult:
    return await _elicit(ctx, "enums", "Please select options from the enum fields", {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "description": "Select one option",
                               "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "description": "Select one option with titles", "oneOf": [
                {"const": "value1", "title": "First Option"}, {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"}]},
            "legacyEnum": {"type": "string", "description": "Select one option (legacy)",
                           "enum": ["opt1", "opt2", "opt3"],
                           "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "description": "Select multiple options", "minItems": 1,
                              "maxItems": 3, "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "description": "Select multiple options with titles",
                            "minItems": 1, "maxItems": 3, "items": {"anyOf": [
                                {"const": "value1", "title": "First Choice"},
                                {"const": "value2", "title": "Second Choice"},
                                {"const": "value3", "title": "Third Choice"}]}},
        },
        "required": []}, "Elicitation completed")


# ---- 2026-07-28: multi-round trips (SEP-2322) ------------------------------

NAME = elicit("What is your name?", {"name": {"type": "string"}}, ["name"])


@mcp.tool(description="MRTR: asks the user's name (user_name), then greets.")
def test_input_required_result_elicitation(ctx: Context) -> CallToolResult | InputRequiredResult:
    content = accepted(ctx, "user_name")
    if content is None or not isinstance(content.get("name"), str):
        return input_required({"user_name": NAME})
    return text(f"Hello, {content['name']}!")


@mcp.tool(description="MRTR: asks the client's LLM, then answers with its text.")
def test_input_required_result_sampling(ctx: Context) -> CallToolResult | InputRequiredResult:
    r = responses(ctx).get("capital_question")
    if not isinstance(r, dict):
        return input_required({"capital_question": sample("What is the capital of France?", 100)})
    return text(f"Sampling result: {(r.get('content') or {}).get('text', '')}")


@mcp.tool(description="MRTR: asks the client's roots, then lists them.")
def test_input_required_result_list_roots(ctx: Context) -> CallToolResult | InputRequiredResult:
    r = responses(ctx).get("client_roots")
    if not isinstance(r, dict) or not isinstance(r.get("roots"), list):
        return input_required({"client_roots": ROOTS})
    return text("Roots: " + ", ".join(x.get("uri", "") for x in r["roots"]))


@mcp.tool(description="MRTR: round-trips a requestState and checks it.")
def test_input_required_result_request_state(ctx: Context) -> CallToolResult | InputRequiredResult:
    ok = accepted(ctx, "confirm")
    if ok is None or ctx.request_state != "request-state-round-1":
        return input_required({"confirm": elicit("Please confirm", {"ok": {"type": "boolean"}}, ["ok"])},
                              "request-state-round-1")
    return text(f"state-ok: confirmed={ok.get('ok')}")


@mcp.tool(description="MRTR: three input requests (elicitation, sampling, roots) at once.")
def test_input_required_result_multiple_inputs(ctx: Context) -> CallToolResult | InputRequiredResult:
    r = responses(ctx)
    if not all(k in r for k in ("user_name", "greeting", "client_roots")) or ctx.request_state != "multi":
        return input_required({"user_name": NAME, "greeting": sample("Generate a greeting", 50),
                               "client_roots": ROOTS}, "multi")
    return text("All inputs received")


@mcp.tool(description="MRTR: two rounds of questions, then the answer.")
def test_input_required_result_multi_round(ctx: Context) -> CallToolResult | InputRequiredResult:
    state = ctx.request_state
    if state is None or not state.startswith("round"):
        return input_required({"step1": elicit("Step 1: What is your name?", {"name": {"type": "string"}},
                                               ["name"])}, "round1")
    if state == "round1":
        name = (accepted(ctx, "step1") or {}).get("name")
        if not isinstance(name, str):
            return input_required({"step1": elicit("Step 1: What is your name?", {"name": {"type": "string"}},
                                                   ["name"])}, "round1")
        return input_required({"step2": elicit("Step 2: What is your favorite color?",
                                               {"color": {"type": "string"}}, ["color"])},
                              "round2:" + json.dumps({"name": name}))
    color = (accepted(ctx, "step2") or {}).get("color")
    name = json.loads(state.split(":", 1)[1])["name"] if ":" in state else "?"
    if not isinstance(color, str):
        return input_required({"step2": elicit("Step 2: What is your favorite color?",
                                               {"color": {"type": "string"}}, ["color"])}, state)
    return text(f"{name} likes {color}")


@mcp.tool(description="MRTR: a sealed requestState; a tampered one is refused (-32602).")
def test_input_required_result_tampered_state(ctx: Context) -> CallToolResult | InputRequiredResult:
    if ctx.request_state != "untampered":
        return input_required({"confirm": elicit("Please confirm", {"ok": {"type": "boolean"}}, ["ok"])},
                              "untampered")
    return text("state verified")


@mcp.tool(description="MRTR: asks only through the capabilities the client declared.")
def test_input_required_result_capabilities(ctx: Context) -> CallToolResult | InputRequiredResult:
    caps = ctx.client_capabilities
    requests: dict[str, Any] = {}
    if caps is not None and caps.sampling is not None:
        requests["sampling"] = sample("Say hello", 20)
    if caps is not None and caps.elicitation is not None:
        requests["user_name"] = NAME
    if not requests or responses(ctx):
        return text("capabilities respected")
    return input_required(requests)


@mcp.prompt(description="MRTR on prompts/get: asks for a context first.")
def test_input_required_result_prompt(ctx: Context) -> Any:
    content = accepted(ctx, "user_context")
    if content is None:
        return input_required({"user_context": elicit("What context should the prompt use?",
                                                      {"context": {"type": "string"}}, ["context"])})
    return f"Prompt with context: {content.get('context')}"


# ---- 2026-07-28: server-stateless diagnostics (SEP-2575) --------------------

@mcp.tool(description="Needs the sampling capability: refused (-32021) when it is not declared.")
def test_missing_capability(ctx: Context) -> CallToolResult:
    caps = ctx.client_capabilities
    if caps is None or caps.sampling is None:
        raise MCPError(code=-32021, message="Missing required client capability: sampling",
                       data={"requiredCapabilities": {"sampling": {}}})
    return text("sampling is declared")


@mcp.tool(description="Asks through an InputRequiredResult, never a server-to-client request.")
async def test_streaming_elicitation(ctx: Context) -> CallToolResult | InputRequiredResult:
    await ctx.report_progress(0, 1, "asking")
    content = accepted(ctx, "user_name")
    if content is None:
        return input_required({"user_name": NAME})
    return text(f"Hello, {content.get('name')}!")


_added = {"tool": False, "prompt": False}


@mcp.tool(description="Adds a tool (tools list changed).")
async def test_trigger_tool_change(ctx: Context) -> CallToolResult:
    if not _added["tool"]:
        _added["tool"] = True
        mcp.add_tool(lambda: "added", name="test_added_tool", description="Added at run time.")
    await ctx.notify_tools_changed()
    return text("tool list changed")


@mcp.tool(description="Adds a prompt (prompts list changed).")
async def test_trigger_prompt_change(ctx: Context) -> CallToolResult:
    if not _added["prompt"]:
        _added["prompt"] = True
        mcp.prompt(name="test_added_prompt", description="Added at run time.")(lambda: "added")
    await ctx.notify_prompts_changed()
    return text("prompt list changed")


# ---- resources, prompts, completions -----------------------------------------

@mcp.resource("test://static-text", mime_type="text/plain", description="A static text resource.")
def static_text() -> str:
    return "This is the content of the static text resource."


@mcp.resource("test://static-binary", mime_type="image/png", description="A static binary resource.")
def static_binary() -> bytes:
    return _png()


@mcp.resource("test://watched-resource", mime_type="text/plain", description="A resource to subscribe to.")
def watched() -> str:
    return "Watched resource content"


@mcp.resource("test://template/{id}/data", mime_type="application/json",
              description="A resource template with an id.")
def template_data(id: str) -> str:
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@mcp.prompt(description="A simple prompt without arguments.")
def test_simple_prompt() -> str:
    return "This is a simple prompt for testing."


@mcp.prompt(description="A prompt with two arguments.")
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@mcp.prompt(description="A prompt with an embedded resource.")
def test_prompt_with_embedded_resource(resourceUri: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": {"type": "resource", "resource": {
            "uri": resourceUri, "mimeType": "text/plain", "text": "Embedded resource content for testing."}}},
        {"role": "user", "content": {"type": "text", "text": "Please process the embedded resource above."}},
    ]


@mcp.prompt(description="A prompt with an image.")
def test_prompt_with_image() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": {"type": "image", "data": PNG, "mimeType": "image/png"}},
        {"role": "user", "content": {"type": "text", "text": "Please analyze the image above."}},
    ]


@mcp.completion()
async def complete(ref, argument, context) -> Completion:
    words = ["paris", "park", "party", "test-one", "test-two"]
    return Completion(values=[w for w in words if w.startswith(argument.value)], has_more=False)


# ---- legacy-only methods: logging/setLevel, resources/(un)subscribe -----------

_subscribed: set[str] = set()


async def set_level(ctx, params: SetLevelRequestParams) -> EmptyResult:
    return EmptyResult()


async def subscribe(ctx, params: SubscribeRequestParams) -> EmptyResult:
    _subscribed.add(str(params.uri))
    return EmptyResult()


async def unsubscribe(ctx, params: UnsubscribeRequestParams) -> EmptyResult:
    _subscribed.discard(str(params.uri))
    return EmptyResult()


_low = mcp._lowlevel_server
_low.add_request_handler("logging/setLevel", SetLevelRequestParams, set_level)
_low.add_request_handler("resources/subscribe", SubscribeRequestParams, subscribe)
_low.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, unsubscribe)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    a = ap.parse_args()
    mcp.run(transport="streamable-http", host=a.host, port=a.port)


if __name__ == "__main__":
    main()
