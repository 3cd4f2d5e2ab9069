"""The proxy's Prometheus metrics (src/mcp/metrics.rs), read the way a
collector reads them: `GET /metrics` on the `--listen` address (and on
`--metrics ADDR` beside a stdio client), parsed with the official Python
`prometheus_client`'s OpenMetrics parser (a parser we did not write: it
rejects a malformed exposition).

After real calls through the proxy (a search, a read allowed, a `DROP TABLE`
denied, a call the gate asks about confirmed, through the official `mcp`
SDK), the counters say so by server, tool, decision and confirmation, the
latency histograms counted them, and no argument value ever became a label.
"""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest
from mcp import types
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from conftest import proxy, sqlite_server, tables
from test_modern import RENAME, modern_proxy

pytestmark = pytest.mark.anyio


def families(text: str) -> dict:
    """name -> list of (labels, value) of every sample, by the official parser."""
    out: dict[str, list] = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, []).append((s.labels, s.value))
    return out


def total(fams: dict, name: str, **labels: str) -> float:
    return sum(v for ls, v in fams.get(name, []) if all(ls.get(k) == x for k, x in labels.items()))


async def scrape(url: str) -> tuple[str, dict]:
    async with httpx.AsyncClient(timeout=10) as c:
        r = await c.get(url)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/openmetrics-text"), r.headers
    return r.text, families(r.text)


async def exercise(p, db: Path) -> None:
    """A search, an allowed read, a denied DROP, a confirmed rename."""
    r = await p.call("toolgate__find_tools", {"query": "which tables are in my sqlite database"})
    assert not r.is_error
    await p.names()
    r = await p.call("sqlite__read_query", {"query": "SELECT name FROM users"})
    assert not r.is_error
    r = await p.call("sqlite__write_query", {"query": "DROP TABLE users"})
    assert r.is_error
    r = await p.call("sqlite__write_query", RENAME)
    assert not r.is_error, r
    assert tables(db) == {"customers"}


def check(text: str, fams: dict) -> None:
    calls = "toolgate_calls_total"
    assert total(fams, calls, server="sqlite", tool="sqlite.read_query", decision="allow", outcome="ok") >= 1, text
    assert total(fams, calls, server="sqlite", tool="sqlite.write_query", decision="deny", outcome="denied") == 1, text
    assert total(fams, calls, server="sqlite", tool="sqlite.write_query", decision="ask", confirmed="yes",
                 outcome="ok") == 1, text
    assert total(fams, calls, tool="toolgate__find_tools", decision="allow") >= 1, text
    assert total(fams, "toolgate_gate_duration_seconds_count") >= 3, text
    assert total(fams, "toolgate_call_duration_seconds_count", server="sqlite") >= 3, text
    assert total(fams, "toolgate_find_tools_results_count") >= 1, text
    assert total(fams, "toolgate_listed_tools_count") >= 1, text
    assert total(fams, "toolgate_catalog_compiles_total", outcome="ok") >= 1, text
    assert "toolgate_withheld_tools" in fams, text
    # bounded labels: no argument value, no SQL, ever
    assert "DROP" not in text and "SELECT" not in text and "customers" not in text, text


async def test_metrics_on_the_listen_address_count_real_calls(tmp_path, db):
    async def yes(context, params):
        return types.ElicitResult(action="accept", content={"confirm": True})

    async with modern_proxy(tmp_path, "http", "--server", sqlite_server(db), elicitation=yes) as p:
        await exercise(p, db)
        base = re.sub(r"/mcp$", "", p.http.url)
        text, fams = await scrape(f"{base}/metrics")
        check(text, fams)
        # the same client's further call moves the counter
        await p.call("sqlite__read_query", {"query": "SELECT 1"})
        _, after = await scrape(f"{base}/metrics")
        key = dict(server="sqlite", tool="sqlite.read_query", decision="allow", outcome="ok")
        assert total(after, "toolgate_calls_total", **key) == total(fams, "toolgate_calls_total", **key) + 1


async def test_metrics_beside_a_stdio_client(tmp_path, db):
    async def yes(context, params):
        return types.ElicitResult(action="accept", content={"confirm": True})

    async with proxy(tmp_path, "--server", sqlite_server(db), "--metrics", "127.0.0.1:0",
                     elicitation=yes) as p:
        with anyio.fail_after(10):
            while not (m := re.search(r"serving metrics at (http://\S+)", p.log.read_text())):
                await anyio.sleep(0.05)
        await exercise(p, db)
        text, fams = await scrape(m.group(1))
        check(text, fams)
