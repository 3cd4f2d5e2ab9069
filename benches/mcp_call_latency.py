#!/usr/bin/env python3
"""Latency the MCP proxy adds to a `tools/call`, end to end with a real server.

Two client sessions (the official `mcp` SDK) stay open side by side: one to
`mcp-server-time` directly, one to `toolgate mcp-proxy --server time=...`. Calls
of `get_current_time` alternate between them (so drift in machine load hits
both alike); the script reports each side's median and the difference of the
medians, which is the proxy's added latency (issue target: <= 0.5 ms). It also
times `tools/list` through the proxy, as the client sees it.

    cargo build --release
    .venv/bin/python benches/mcp_call_latency.py [--calls 2000] [--bin target/release/toolgate]

Needs the `.venv` that .ci/run creates.
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
                for _ in range(a.warmup):
                    await d.call_tool("get_current_time", args)
                    await p.call_tool("time.get_current_time", args)
                td: list[float] = []
                tp: list[float] = []
                for i in range(a.calls):
                    order = [(d, "get_current_time", td), (p, "time.get_current_time", tp)]
                    if i % 2:
                        order.reverse()
                    for s, name, out in order:
                        t0 = time.perf_counter()
                        r = await s.call_tool(name, args)
                        out.append((time.perf_counter() - t0) * 1e3)
                        assert not r.is_error
                tl: list[float] = []
                for _ in range(max(100, a.calls // 10)):
                    t0 = time.perf_counter()
                    await p.list_tools()
                    tl.append((time.perf_counter() - t0) * 1e3)
    md, mp = statistics.median(td), statistics.median(tp)
    print(f"tools/call get_current_time, {a.calls} calls each, alternating")
    print(f"  direct   median {md:.3f} ms  p90 {pct(td, .9):.3f} ms")
    print(f"  proxied  median {mp:.3f} ms  p90 {pct(tp, .9):.3f} ms")
    print(f"  added    median difference {mp - md:.3f} ms")
    print(f"tools/list through the proxy (client-observed): median {statistics.median(tl):.3f} ms")


if __name__ == "__main__":
    anyio.run(main)
