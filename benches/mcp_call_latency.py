#!/usr/bin/env python3
"""Latency the MCP proxy adds to a `tools/call`, end to end with a real server.

Two client sessions (the official `mcp` SDK) stay open side by side: one to
`mcp-server-time` directly, one to `toolgate mcp-proxy --server time=...`. Calls
of `get_current_time` rotate between the server, the proxy (`time__get_current_time`)
and the proxy's call-through tool (`toolgate__call_tool`), so drift in machine
load hits the three alike; the script reports each median and the differences
of the medians: the proxy's added latency (issue target: <= 0.5 ms) and what
the call-through tool adds to a direct call through the proxy. It also times
`tools/list` through the proxy, as the client sees it.

    cargo build --release
    .venv/bin/python benches/mcp_call_latency.py [--calls 2000] [--bin target/release/toolgate]

Needs the `.venv` that scripts/test creates.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parents[1]


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--bin", default=str(ROOT / "target/release/toolgate"))
    a = ap.parse_args()
    time_server = str(ROOT / ".venv/bin/mcp-server-time")
    direct = StdioServerParameters(command=time_server, args=["--local-timezone", "UTC"])
    proxied = StdioServerParameters(
        command=a.bin,
        args=["mcp-proxy", "--server", f"time={time_server} --local-timezone UTC"],
        env={"RUST_LOG": "warn"},
    )
    args = {"timezone": "UTC"}
    with open(os.devnull, "w") as devnull:
        async with stdio_client(direct, errlog=devnull) as (r1, w1), stdio_client(
            proxied, errlog=sys.stderr
        ) as (r2, w2):
            async with ClientSession(r1, w1) as d, ClientSession(r2, w2) as p:
                await d.initialize()
                await p.initialize()
                through = {"name": "time__get_current_time", "arguments": args}
                # list the time tool (a search), so that the SDK finds it in its
                # cache and does not re-list before every call to validate output
                await p.call_tool("toolgate__find_tools", {"query": "get the current time in a timezone"})
                assert "time__get_current_time" in [t.name for t in (await p.list_tools()).tools]
                for _ in range(a.warmup):
                    await d.call_tool("get_current_time", args)
                    await p.call_tool("time__get_current_time", args)
                    await p.call_tool("toolgate__call_tool", through)
                td: list[float] = []
                tp: list[float] = []
                tc: list[float] = []
                for i in range(a.calls):
                    order = [(d, "get_current_time", args, td), (p, "time__get_current_time", args, tp),
                             (p, "toolgate__call_tool", through, tc)]
                    # rotate, so that drift in machine load hits the three alike
                    order = order[i % 3:] + order[:i % 3]
                    for s, name, arguments, out in order:
                        t0 = time.perf_counter()
                        r = await s.call_tool(name, arguments)
                        out.append((time.perf_counter() - t0) * 1e3)
                        assert not r.is_error
                tl: list[float] = []
                for _ in range(max(100, a.calls // 10)):
                    t0 = time.perf_counter()
                    await p.list_tools()
                    tl.append((time.perf_counter() - t0) * 1e3)
    md, mp, mc = statistics.median(td), statistics.median(tp), statistics.median(tc)
    print(f"tools/call get_current_time, {a.calls} calls each, rotating")
    print(f"  direct            median {md:.3f} ms  p90 {pct(td, .9):.3f} ms")
    print(f"  proxied           median {mp:.3f} ms  p90 {pct(tp, .9):.3f} ms")
    print(f"  via call_tool     median {mc:.3f} ms  p90 {pct(tc, .9):.3f} ms")
    print(f"  added by the proxy       median difference {mp - md:.3f} ms")
    print(f"  added by call_tool       median difference {mc - mp:.3f} ms (vs a direct call through the proxy)")
    print(f"tools/list through the proxy (client-observed): median {statistics.median(tl):.3f} ms")


if __name__ == "__main__":
    anyio.run(main)
