"""The tools of the MCP conformance suite's fixture server, as the scenarios
of `@modelcontextprotocol/conformance` describe them (`test_simple_text`,
`test_image_content`, ...), on stdio with the `mcp` SDK's FastMCP (mcp<2).

tests/mcp_conformance.rs puts it behind `toolgate mcp-proxy --listen`, so that
the suite's tool scenarios run through the proxy with the tools they expect
(server-everything, the server the main run fronts, has other tools).
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


mcp.run()
