"""A downstream MCP server that serves ONLY the 2026-07-28 protocol revision
(the modern, stateless era), built on the official Python SDK 2.x `MCPServer`.

Tools:
- `lookup_order(order_id)`: an ordinary tool.
- `refund_order(order_id)`: asks the user first, by returning its own
  `InputRequiredResult` (SEP-2322, multi-round-trip): one form elicitation under
  the key `approve` (`{"approve": boolean}`) and a requestState `asked:<order_id>`
  (sealed by the SDK's RequestStateBoundary, bound to the tool name and the
  arguments). The retry must carry `inputResponses.approve` and that state back;
  only then does it refund.

Pinned to 2026-07-28: an `initialize` (the handshake era) is refused with
UNSUPPORTED_PROTOCOL_VERSION (-32022) naming the served versions, so a peer that
falls back to the legacy era fails loudly instead of passing unnoticed.

Every request is appended to the JSON-lines file named by MODERN_SERVER_LOG (if
set): method, the request's protocol version from `_meta`, tool name,
arguments, and whether it carried inputResponses / requestState (the verified
plaintext state, as the tool sees it). Tests read it to check what the proxy
sent downstream.

    python modern_server.py                   # stdio
    python modern_server.py --http PORT       # Streamable HTTP on 127.0.0.1:PORT/mcp
Over HTTP, MODERN_SERVER_KEY (>= 32 bytes) is the requestState key, so several
replicas accept each other's state; MODERN_SERVER_NAME names the replica in
`lookup_order`'s answer (default "modern").
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from mcp import types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.request_state import RequestStateSecurity
from mcp.shared.exceptions import MCPError

SERVED = ["2026-07-28"]
LOG = os.environ.get("MODERN_SERVER_LOG")
REPLICA = os.environ.get("MODERN_SERVER_NAME", "modern")
KEY = os.environ.get("MODERN_SERVER_KEY")


def _log(entry: dict[str, Any]) -> None:
    if LOG:
        with open(LOG, "a") as f:
            f.write(json.dumps(entry, sort_keys=True) + "\n")


async def modern_only(ctx, call_next):
    """Middleware: log the request, refuse the handshake era."""
    params = dict(ctx.params or {})
    meta = params.get("_meta") or {}
    entry = {
        "method": ctx.method,
        "protocolVersion": meta.get(types.PROTOCOL_VERSION_META_KEY),
        "replica": REPLICA,
    }
    if ctx.method == "tools/call":
        entry.update(name=params.get("name"), arguments=params.get("arguments"),
                     inputResponses=sorted((params.get("inputResponses") or {}).keys()),
                     requestState=params.get("requestState") is not None)
    if ctx.request_id is not None:
        _log(entry)
    if ctx.method == "initialize":
        requested = params.get("protocolVersion")
        raise MCPError(
            code=types.UNSUPPORTED_PROTOCOL_VERSION,
            message=f"this server serves only {SERVED}, not the initialize handshake",
            data={"supported": SERVED, "requested": requested},
        )
    return await call_next(ctx)


security = (RequestStateSecurity(keys=[KEY], ttl=300, audience="modern")
            if KEY else RequestStateSecurity.ephemeral(ttl=300, audience="modern"))
mcp = MCPServer("modern", version="1.0.0", request_state_security=security, middleware=[modern_only])


@mcp.tool()
def lookup_order(order_id: str) -> str:
    """Look up a customer order by its id and return its shipping status."""
    return f"order {order_id}: shipped ({REPLICA})"


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


@mcp.tool()
async def refund_order(order_id: str, ctx: Context) -> str | types.InputRequiredResult:
    """Refund a customer order by its id, after asking the user to approve the refund."""
    answer = (ctx.input_responses or {}).get("approve")
    if answer is None:
        _log({"event": "ask", "order_id": order_id, "replica": REPLICA})
        return types.InputRequiredResult(
            input_requests={
                "approve": types.ElicitRequest(
                    params=types.ElicitRequestFormParams(
                        message=f"modern: refund order {order_id}?",
                        requested_schema={
                            "type": "object",
                            "properties": {"approve": {"type": "boolean", "title": "Approve the refund"}},
                            "required": ["approve"],
                        },
                    )
                )
            },
            request_state=f"asked:{order_id}",
        )
    # The SDK has verified the seal; this is the plaintext this server minted.
    if ctx.request_state != f"asked:{order_id}":
        raise MCPError(code=types.INVALID_PARAMS,
                       message=f"refund_order: retry without this server's own requestState ({ctx.request_state!r})")
    content = _field(answer, "content") or {}
    if _field(answer, "action") == "accept" and content.get("approve") is True:
        _log({"event": "refunded", "order_id": order_id, "replica": REPLICA})
        return f"order {order_id}: refunded ({REPLICA})"
    _log({"event": "refund_declined", "order_id": order_id, "replica": REPLICA})
    return f"order {order_id}: refund not approved ({REPLICA})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT/mcp")
    a = ap.parse_args()
    if a.http is None:
        mcp.run()
    else:
        mcp.run("streamable-http", host="127.0.0.1", port=a.http, stateless_http=True)


if __name__ == "__main__":
    main()
