"""A minimal MCP server (newline-delimited JSON-RPC on stdio, no SDK) whose
`tools/list` comes in three pages, with untagged tools, one of them annotated
`destructiveHint`. It exists to test that the proxy follows `nextCursor` and
auto-tags what it finds."""

import json
import sys

PAGES = [
    [{"name": "alpha", "description": "First page tool that echoes alpha"}],
    [{"name": "beta", "description": "Second page tool that echoes beta"}],
    [
        {"name": "gamma", "description": "Third page tool that echoes gamma"},
        {
            "name": "wipe",
            "description": "Erases every record of the archive",
            "annotations": {"destructiveHint": True, "readOnlyHint": False},
        },
    ],
]
SCHEMA = {"type": "object", "properties": {}}


def reply(id_, result=None, error=None):
    msg = {"jsonrpc": "2.0", "id": id_}
    if error is not None:
        msg["error"] = error
    else:
        msg["result"] = result
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


for line in sys.stdin:
    if not line.strip():
        continue
    msg = json.loads(line)
    method, id_ = msg.get("method"), msg.get("id")
    if id_ is None:
        continue  # notifications
    if method == "initialize":
        reply(id_, {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "paged", "version": "1"},
        })
    elif method == "tools/list":
        page = int((msg.get("params") or {}).get("cursor") or 0)
        result = {"tools": [{**t, "inputSchema": SCHEMA} for t in PAGES[page]]}
        if page + 1 < len(PAGES):
            result["nextCursor"] = str(page + 1)
        reply(id_, result)
    elif method == "tools/call":
        name = msg["params"]["name"]
        reply(id_, {"content": [{"type": "text", "text": f"{name} called"}]})
    elif method == "ping":
        reply(id_, {})
    else:
        reply(id_, error={"code": -32601, "message": f"unknown method {method}"})
