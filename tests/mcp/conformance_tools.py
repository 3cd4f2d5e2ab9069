"""The tools, resources and prompts of the MCP conformance suite's fixture
server, as the scenarios of `@modelcontextprotocol/conformance` describe them
(`test_simple_text`, `test://static-text`, `test_prompt_with_arguments`, ...),
on stdio with the `mcp` SDK's FastMCP (mcp<2), plus resource subscriptions
and completions.

tests/mcp_conformance.rs puts it behind `toolgate mcp-proxy --listen`, so that
the suite's scenarios run through the proxy with what they expect
(server-everything, the server the main run fronts, has other ones).
"""

import base64
import io
import struct
import wave
import zlib

import anyio
from mcp import types
from mcp.server.fastmcp import Context, FastMCP

mcp = FastMCP("conformance-tools")

def _png() -> bytes:
    """A 1x1 red PNG."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
            + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b""))


def _wav() -> bytes:
    """Ten milliseconds of silence, 8 kHz mono."""
    buf = io.BytesIO()
    with wave.open(buf, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(8000)
        w.writeframes(b"\x00\x00" * 80)
    return buf.getvalue()


PNG = base64.b64encode(_png()).decode()
WAV = base64.b64encode(_wav()).decode()


@mcp.tool()
def test_simple_text() -> list[types.ContentBlock]:
    """Returns a simple text response."""
    return [types.TextContent(type="text", text="This is a simple text response for testing.")]


@mcp.tool()
def test_image_content() -> list[types.ContentBlock]:
    """Returns a 1x1 PNG image."""
    return [types.ImageContent(type="image", data=PNG, mimeType="image/png")]


@mcp.tool()
def test_audio_content() -> list[types.ContentBlock]:
    """Returns a tiny WAV file."""
    return [types.AudioContent(type="audio", data=WAV, mimeType="audio/wav")]


@mcp.tool()
def test_embedded_resource() -> list[types.ContentBlock]:
    """Returns an embedded text resource."""
    return [types.EmbeddedResource(type="resource", resource=types.TextResourceContents(
        uri="test://embedded-resource", mimeType="text/plain",
        text="This is an embedded resource content."))]


@mcp.tool()
def test_multiple_content_types() -> list[types.ContentBlock]:
    """Returns text, an image and an embedded resource."""
    return [
        types.TextContent(type="text", text="Multiple content types test:"),
        types.ImageContent(type="image", data=PNG, mimeType="image/png"),
        types.EmbeddedResource(type="resource", resource=types.TextResourceContents(
            uri="test://mixed-content-resource", mimeType="application/json",
            text='{"test":"data","value":123}')),
    ]


@mcp.tool()
def test_error_handling() -> str:
    """Always fails."""
    raise RuntimeError("This tool intentionally returns an error for testing")


@mcp.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50 and 100 of 100."""
    for p in (0, 50, 100):
        await ctx.report_progress(p, 100)
        if p < 100:
            await anyio.sleep(0.05)
    return "Progress test completed"


@mcp.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Sends three log messages while it runs."""
    await ctx.info("Tool execution started")
    await anyio.sleep(0.05)
    await ctx.info("Tool processing data")
    await anyio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Logging test completed"


@mcp.resource("test://static-text", mime_type="text/plain", description="A static text resource.")
def static_text() -> str:
    return "This is the content of the static text resource."


@mcp.resource("test://static-binary", mime_type="image/png", description="A static binary resource.")
def static_binary() -> bytes:
    return _png()


@mcp.resource("test://watched-resource", mime_type="text/plain", description="A resource to subscribe to.")
def watched() -> str:
    return "Watched resource content."


@mcp.resource("test://template/{id}/data", mime_type="application/json",
              description="A resource template with an id.")
def template_data(id: str) -> str:
    return f'{{"id":"{id}","templateTest":true,"data":"Data for ID: {id}"}}'


@mcp._mcp_server.subscribe_resource()
async def subscribe(uri) -> None:
    pass


@mcp._mcp_server.unsubscribe_resource()
async def unsubscribe(uri) -> None:
    pass


# FastMCP (mcp<2) declares `resources.subscribe: false` whatever handlers it has
_capabilities = mcp._mcp_server.get_capabilities


def _with_subscribe(*args, **kwargs):
    caps = _capabilities(*args, **kwargs)
    caps.resources.subscribe = True
    return caps


mcp._mcp_server.get_capabilities = _with_subscribe


@mcp.prompt(description="A simple prompt without arguments.")
def test_simple_prompt() -> str:
    return "This is a simple prompt for testing."


@mcp.prompt(description="A prompt with two arguments.")
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@mcp.prompt(description="A prompt with an embedded resource.")
def test_prompt_with_embedded_resource(resourceUri: str) -> list:
    from mcp.server.fastmcp.prompts.base import UserMessage
    return [
        UserMessage(content=types.EmbeddedResource(type="resource", resource=types.TextResourceContents(
            uri=resourceUri, mimeType="text/plain", text="Embedded resource content for testing."))),
        UserMessage(content="Please process the embedded resource above."),
    ]


@mcp.prompt(description="A prompt with an image.")
def test_prompt_with_image() -> list:
    from mcp.server.fastmcp.prompts.base import UserMessage
    return [
        UserMessage(content=types.ImageContent(type="image", data=PNG, mimeType="image/png")),
        UserMessage(content="Please analyze the image above."),
    ]


@mcp.completion()
async def complete(ref, argument, context) -> types.Completion:
    words = ["paris", "park", "party", "test-one", "test-two"]
    return types.Completion(values=[w for w in words if w.startswith(argument.value)], hasMore=False)


mcp.run()
