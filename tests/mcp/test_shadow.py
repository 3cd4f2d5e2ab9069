"""The shadow policy (`mcp-proxy --shadow-policy FILE --shadow-log FILE`,
src/mcp/shadow.rs): every decision is made again under a second policy that
is never enforced.

A real client (the official `mcp` SDK) talks to the proxy in front of the real
mcp-server-sqlite and mcp-server-time. The shadow policy differs from the live
one on a known request (it pins `time.get_current_time`, so its active set
differs for every `tools/list`) and on known calls (its `[gate]` denies every
safe tool, which the live gate allows). The differences are counted in the
Prometheus metrics (scraped and parsed with the official `prometheus_client`
parser), written to the shadow log in the trace format, and `toolgate
compare` reads that log. A shadow edit is picked up while the proxy runs; a
broken one is reported (log with file:line:column, a metric) and the last
good shadow plan keeps deciding. The same session without a shadow lists and
decides exactly the same: the shadow never changes a live decision.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import anyio
import pytest

from conftest import proxy, read_jsonl, selection_policy_text, sqlite_server, text_of, time_server, toolgate_bin
from test_metrics import scrape, total

pytestmark = pytest.mark.anyio

CONTEXT = {"message": "select all rows from the users table", "conversation_stage": "exploration"}

DENY_SAFE = """
[gate.risk]
[[gate.risk.rules]]
name = "shadow: no safe tool runs"
risk_level = ["safe"]
decision = "deny"
message = "the shadow policy denies every safe tool"
"""

ALLOW_SAFE = DENY_SAFE.replace('decision = "deny"', 'decision = "allow"')


def shadow_text(gate: str = DENY_SAFE) -> str:
    return selection_policy_text().replace("pinned = []", 'pinned = ["time.get_current_time"]', 1) + gate


async def session(p) -> tuple[list[str], list[tuple[bool, str]]]:
    """A known request and known calls: what the client sees of them."""
    names = await p.names(CONTEXT)
    results = []
    for tool, args in [("sqlite__read_query", {"query": "SELECT name FROM users"}),
                       ("time__get_current_time", {"timezone": "UTC"})]:
        r = await p.call(tool, args)
        # the time tool's text moves with the clock: only its being an error is compared
        results.append((bool(r.is_error), text_of(r) if tool.startswith("sqlite") else ""))
    return names, results


async def metrics_url(p) -> str:
    with anyio.fail_after(10):
        while not (m := re.search(r"serving metrics at (http://\S+)", p.log.read_text())):
            await anyio.sleep(0.05)
    return m.group(1)


async def wait_metric(url: str, name: str, value: float, **labels: str) -> dict:
    with anyio.fail_after(15):
        while True:
            _, fams = await scrape(url)
            if total(fams, name, **labels) >= value:
                return fams
            await anyio.sleep(0.1)


def decisions(audit: Path) -> list[tuple[str, str, str]]:
    return [(r["tool"], r["decision"], r["outcome"]) for r in read_jsonl(audit)]


async def test_shadow_policy_counts_logs_reloads_and_never_changes_live_decisions(tmp_path, db):
    live = tmp_path / "live.toml"
    live.write_text(selection_policy_text())
    shadow = tmp_path / "shadow.toml"
    shadow.write_text(shadow_text())
    first_shadow = tmp_path / "shadow-v1.toml"
    first_shadow.write_text(shadow_text())
    log = tmp_path / "shadow.jsonl"
    servers = ["--server", sqlite_server(db), "--server", time_server()]

    # the same session without a shadow: the live decisions to compare with
    plain_audit = tmp_path / "plain.jsonl"
    async with proxy(tmp_path, *servers, "--policy", str(live), "--audit", str(plain_audit)) as p:
        plain = await session(p)

    audit = tmp_path / "audit.jsonl"
    async with proxy(tmp_path, *servers, "--policy", str(live), "--audit", str(audit),
                     "--shadow-policy", str(shadow), "--shadow-log", str(log),
                     "--poll-ms", "100", "--metrics", "127.0.0.1:0") as p:
        url = await metrics_url(p)
        shadowed = await session(p)
        # live decisions never change because of the shadow
        assert shadowed == plain, (shadowed, plain)
        assert not any(err for err, _ in shadowed[1]), shadowed
        assert "time__get_current_time" not in shadowed[0], "the shadow's pin is not listed"
        assert decisions(audit) == decisions(plain_audit)
        assert all(d == "allow" for _, d, _ in decisions(audit)), decisions(audit)

        text, fams = await scrape(url)
        assert total(fams, "toolgate_shadow_decisions_total", kind="list") >= 1, text
        assert total(fams, "toolgate_shadow_diffs_total", kind="list") >= 1, text
        assert total(fams, "toolgate_shadow_decisions_total", kind="call") == 2, text
        assert total(fams, "toolgate_shadow_diffs_total", kind="call") == 2, text
        assert total(fams, "toolgate_shadow_loads_total", outcome="ok") == 1, text

        # an edit of the shadow is picked up without a restart: now it allows
        shadow.write_text(shadow_text(ALLOW_SAFE))
        await wait_metric(url, "toolgate_shadow_loads_total", 2, outcome="ok")
        r = await p.call("sqlite__read_query", {"query": "SELECT name FROM users"})
        assert not r.is_error
        _, fams = await scrape(url)
        assert total(fams, "toolgate_shadow_decisions_total", kind="call") == 3
        assert total(fams, "toolgate_shadow_diffs_total", kind="call") == 2, "same verdict now"

        # a broken edit is reported, and the last good shadow plan keeps deciding
        shadow.write_text(shadow_text(ALLOW_SAFE).replace('pinned = ["time.get_current_time"]',
                                                          'pinned = "oops"', 1))
        await wait_metric(url, "toolgate_shadow_loads_total", 1, outcome="error")
        with anyio.fail_after(5):
            while not re.search(r"shadow policy: .*shadow\.toml:\d+:\d+", p.log.read_text()):
                await anyio.sleep(0.05)
        names = await p.names(CONTEXT)
        r = await p.call("sqlite__read_query", {"query": "SELECT name FROM users"})
        assert not r.is_error
        _, fams = await scrape(url)
        assert total(fams, "toolgate_shadow_diffs_total", kind="call") == 2, "still the allowing shadow"
        lists = total(fams, "toolgate_shadow_decisions_total", kind="list")
        assert total(fams, "toolgate_shadow_diffs_total", kind="list") == lists, "still pinning the time tool"
        # the live list only grew by the tools called since (they join the list)
        assert set(shadowed[0]) <= set(names), (names, shadowed[0])

    lines = read_jsonl(log)
    notes = [x for x in lines if x["event"] == "shadow"]
    calls = [x for x in lines if x["event"] == "tool_call"]
    assert {"kind": "call", "tool": "sqlite.read_query", "live": "allow", "shadow": "deny"}.items() \
        <= notes[[n["kind"] for n in notes].index("call")].items(), notes
    assert any(n["kind"] == "call" and n["tool"] == "time.get_current_time" for n in notes), notes
    listed = [n for n in notes if n["kind"] == "list"]
    assert listed and all(n["shadow_only"] == ["time.get_current_time"] and n["live_only"] == []
                          for n in listed), listed
    assert [c["tool"] for c in calls] == ["sqlite.read_query", "time.get_current_time",
                                          "sqlite.read_query", "sqlite.read_query"], calls
    assert all("arguments" not in c for c in calls), "arguments never reach the shadow log"
    assert any(x["event"] == "user_message" for x in lines), lines
    assert any(x["event"] == "context" and x.get("stage") == "exploration" for x in lines), lines
    assert "SELECT" not in log.read_text()

    # toolgate compare reads the shadow log as a trace: live against the first shadow
    out = subprocess.run([str(toolgate_bin()), "compare", "--policy-a", str(live), "--policy-b",
                          str(first_shadow), "--trace", str(log), "--format", "json"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["a"]["calls"] == 4 and report["b"]["calls"] == 4, out.stdout[:2000]
    assert report["b"]["active"]["mean"] == report["a"]["active"]["mean"] + 1, "the shadow pins one more tool"
    assert report["b"]["recall"] > report["a"]["recall"], "... the time tool, called once"


async def test_a_shadow_policy_that_does_not_load_stops_the_start(tmp_path, db):
    bad = tmp_path / "shadow.toml"
    bad.write_text(selection_policy_text().replace("pinned = []", 'pinned = "oops"', 1))
    out = subprocess.run([str(toolgate_bin()), "mcp-proxy", "--server", sqlite_server(db),
                          "--shadow-policy", str(bad)], capture_output=True, text=True, timeout=60,
                         stdin=subprocess.DEVNULL)
    assert out.returncode != 0
    assert re.search(r"shadow\.toml:\d+:\d+", out.stderr), out.stderr
    out = subprocess.run([str(toolgate_bin()), "mcp-proxy", "--server", sqlite_server(db),
                          "--shadow-log", str(tmp_path / "x.jsonl")], capture_output=True, text=True,
                         timeout=60, stdin=subprocess.DEVNULL)
    assert out.returncode == 2 and "--shadow-policy" in out.stderr, out.stderr
