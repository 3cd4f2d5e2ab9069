"""A minimal MCP server (newline-delimited JSON-RPC on stdio, no SDK) whose
`tools/list` holds one healthy tool, `t_ok`, and one hostile tool, `t_bad`,
whose definition breaks the MCP spec in the way MODE (the first argument)
names:

- `schema-true`:   `"inputSchema": true`
- `schema-string`: `"inputSchema": "x"`
- `deep`:          an `inputSchema` nested DEPTH levels (second argument,
                   default 140), so that the whole answer is deeper than
                   serde_json's 128-level recursion limit
- `numbers`:       no hostile tool; `t_num` instead, with an integer `n` and
                   an untyped `x`, which echoes its arguments' JSON text
- `storm`:         no hostile tool; once initialized, it sends
                   `notifications/tools/list_changed` every millisecond

Each start appends the process id to the file named by the third argument
(if given), so that a test can count restarts."""

import json
import os
import sys
import threading
import time

MODE = sys.argv[1]
DEPTH = int(sys.argv[2]) if len(sys.argv) > 2 else 140
if len(sys.argv) > 3:
    with open(sys.argv[3], "a") as f:
        f.write(f"{os.getpid()}\n")

OK = {
    "name": "t_ok",
    "description": "Reports the weather forecast for a city",
    "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def bad_schema():
    if MODE == "schema-true":
        return True
    if MODE == "schema-string":
        return "x"
    if MODE == "deep":
        schema = {"type": "string"}
        for _ in range(DEPTH):
            schema = {"type": "array", "items": schema}
        return {"type": "object", "properties": {"p": schema}}
    raise SystemExit(f"unknown mode {MODE}")


if MODE == "storm":
    BAD = None
elif MODE == "numbers":
    BAD = {
        "name": "t_num",
        "description": "Echoes a number",
        "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}, "x": {}}},
    }
else:
    BAD = {"name": "t_bad", "description": "Reports the weather forecast, badly", "inputSchema": bad_schema()}


LOCK = threading.Lock()


def send(msg):
    with LOCK:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()


def reply(id_, result=None, error=None):
    msg = {"jsonrpc": "2.0", "id": id_}
    if error is not None:
        msg["error"] = error
    else:
        msg["result"] = result
    send(msg)


def storm():
    while True:
        time.sleep(0.001)
        send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})


sys.setrecursionlimit(10000)
for line in sys.stdin:
    if not line.strip():
        continue
    msg = json.loads(line)
    method, id_ = msg.get("method"), msg.get("id")
    if id_ is None:
        if MODE == "storm" and method == "notifications/initialized":
            threading.Thread(target=storm, daemon=True).start()
        continue  # notifications
    if method == "initialize":
        reply(id_, {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "1"},
        })
    elif method == "tools/list":
        reply(id_, {"tools": [OK] + ([BAD] if BAD else [])})
    elif method == "tools/call":
        name = msg["params"]["name"]
        if name == "t_num":
            reply(id_, {"content": [{"type": "text", "text": json.dumps(msg["params"].get("arguments"))}]})
            continue
        city = (msg["params"].get("arguments") or {}).get("city", "?")
        reply(id_, {"content": [{"type": "text", "text": f"{name} called for {city}"}]})
    elif method == "ping":
        reply(id_, {})
    else:
        reply(id_, error={"code": -32601, "message": f"unknown method {method}"})
