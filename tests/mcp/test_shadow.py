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

from conftest import VENV1, proxy, read_jsonl, selection_policy_text, sqlite_server, text_of, time_server, toolgate_bin
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


QUERY = "what time is it now, and which tables does the database have"
# Another ranking of the same tools: the semantic match weighs five times more.
RERANK = ("w_semantic = 0.4 ", "w_semantic = 2.0 ")


def found_names(r) -> list[str]:
    return [t["name"] for t in (r.structured_content or {}).get("tools", [])]


async def find_in(tmp_path, servers: list[str], policy: Path, *extra: str) -> list[str]:
    async with proxy(tmp_path, *servers, "--policy", str(policy), *extra) as p:
        r = await p.call("toolgate__find_tools", {"query": QUERY})
        assert not r.is_error, text_of(r)
        return found_names(r)


async def test_find_tools_results_are_decided_under_the_shadow_too(tmp_path, db):
    live = tmp_path / "live.toml"
    live.write_text(selection_policy_text())
    rerank = selection_policy_text()
    assert RERANK[0] in rerank, "selection.toml no longer weighs the semantic match 0.4"
    shadow = tmp_path / "shadow.toml"
    shadow.write_text(rerank.replace(*RERANK, 1))
    servers = ["--server", sqlite_server(db), "--server", time_server()]
    # what each policy returns for the query, each as the live one (no shadow)
    by_live = await find_in(tmp_path, servers, live)
    by_shadow = await find_in(tmp_path, servers, shadow)
    assert by_live and by_shadow and by_live != by_shadow, (by_live, by_shadow)

    log = tmp_path / "shadow.jsonl"
    async with proxy(tmp_path, *servers, "--policy", str(live), "--shadow-policy", str(shadow),
                     "--shadow-log", str(log), "--metrics", "127.0.0.1:0") as p:
        url = await metrics_url(p)
        r = await p.call("toolgate__find_tools", {"query": QUERY})
        assert found_names(r) == by_live, "the live result stands"
        # a search both policies answer alike (the best tool only): compared, no difference
        same = await p.call("toolgate__find_tools", {"query": "convert time between timezones", "limit": 1})
        assert found_names(same) == ["time__convert_time"], text_of(same)
        text, fams = await scrape(url)
        assert total(fams, "toolgate_shadow_decisions_total", kind="find") == 2, text
        assert total(fams, "toolgate_shadow_diffs_total", kind="find") == 1, text
        assert re.search(r"shadow policy: another find_tools result", p.log.read_text())
    notes = [x for x in read_jsonl(log) if x["event"] == "shadow" and x["kind"] == "find"]
    exposed = lambda names: [n.replace(".", "__", 1) for n in names]  # noqa: E731
    assert len(notes) == 1, notes
    assert exposed(notes[0]["live"]) == by_live and exposed(notes[0]["shadow"]) == by_shadow, notes
    assert "time is it" not in log.read_text(), "the query (an argument) is not in the shadow log"


INACTIVE_FORBIDDEN = "\n[gate]\nallow_inactive_calls = false\n"


async def test_calls_refused_before_or_after_the_gate_are_compared(tmp_path, db):
    """The live policy forbids calling tools that are not listed; the shadow
    does not: a call of the unlisted clock is refused live and would be
    allowed under the shadow (a difference). A listed tool's call is allowed
    by both; a call with an integer beyond 64 bits is refused by both (no
    policy decides it). Then the other way round: the live policy allows the
    clock, the shadow would refuse it."""
    strict = tmp_path / "strict.toml"
    strict.write_text(selection_policy_text() + INACTIVE_FORBIDDEN)
    open_ = tmp_path / "open.toml"
    open_.write_text(selection_policy_text())
    servers = ["--server", sqlite_server(db), "--server", time_server()]

    log = tmp_path / "shadow.jsonl"
    audit = tmp_path / "audit.jsonl"
    async with proxy(tmp_path, *servers, "--policy", str(strict), "--shadow-policy", str(open_),
                     "--shadow-log", str(log), "--audit", str(audit), "--metrics", "127.0.0.1:0") as p:
        url = await metrics_url(p)
        names = await p.names(CONTEXT)
        assert "sqlite__read_query" in names and "time__get_current_time" not in names, names
        r = await p.call("time__get_current_time", {"timezone": "UTC"})
        assert r.is_error and "allow_inactive_calls" in text_of(r), text_of(r)
        r = await p.call("sqlite__read_query", {"query": "SELECT name FROM users"})
        assert not r.is_error, text_of(r)
        r = await p.call("sqlite__read_query", {"query": "SELECT 1", "n": 10**30})
        assert r.is_error and "64-bit" in text_of(r), text_of(r)
        text, fams = await scrape(url)
        assert total(fams, "toolgate_shadow_decisions_total", kind="call") == 3, text
        assert total(fams, "toolgate_shadow_diffs_total", kind="call") == 1, text
    assert [(t, d, o) for t, d, o in decisions(audit)][0] == ("time.get_current_time", "deny", "inactive")
    notes = [x for x in read_jsonl(log) if x["event"] == "shadow" and x["kind"] == "call"]
    assert len(notes) == 1, notes
    assert {"tool": "time.get_current_time", "live": "deny", "shadow": "allow"}.items() <= notes[0].items()

    log2 = tmp_path / "shadow2.jsonl"
    async with proxy(tmp_path, *servers, "--policy", str(open_), "--shadow-policy", str(strict),
                     "--shadow-log", str(log2)) as p:
        await p.names(CONTEXT)
        r = await p.call("time__get_current_time", {"timezone": "UTC"})
        assert not r.is_error, text_of(r)
        # once called, the clock is listed (a called tool joins the list) under both
        r = await p.call("time__get_current_time", {"timezone": "UTC"})
        assert not r.is_error, text_of(r)
    notes = [x for x in read_jsonl(log2) if x["event"] == "shadow" and x["kind"] == "call"]
    assert len(notes) == 1, notes
    assert {"tool": "time.get_current_time", "live": "allow", "shadow": "deny"}.items() <= notes[0].items()
    assert "allow_inactive_calls" in notes[0]["detail"], notes[0]


async def test_a_changed_definition_is_decided_by_each_policys_on_definition_change(tmp_path):
    """A server changes a tool's description (the mutating server of
    test_discovery.py): the live policy asks the user (who confirms, and the
    call is made), the shadow's `on_definition_change = "deny"` would have
    refused it: one difference, decided before the gate, so the gate's
    verdict of that call is not compared again."""
    from mcp import types

    from test_discovery import MUTATING_SERVER

    script = tmp_path / "mut_server.py"
    script.write_text(MUTATING_SERVER)
    shadow = tmp_path / "deny.toml"
    shadow.write_text(selection_policy_text()
                      .replace('on_definition_change = "ask"', 'on_definition_change = "deny"', 1))
    log = tmp_path / "shadow.jsonl"

    async def accept(context, params):
        return types.ElicitResult(action="accept", content={"confirm": True})

    async with proxy(tmp_path, "--server", f"mut={VENV1 / 'python'} {script}", "--debounce-ms", "20",
                     "--shadow-policy", str(shadow), "--shadow-log", str(log), "--metrics", "127.0.0.1:0",
                     elicitation=accept) as p:
        url = await metrics_url(p)
        assert text_of(await p.call("mut__report", {"path": "q3.csv"})) == "report: 3 sales"
        assert text_of(await p.call("mut__mutate")) == "mutated"
        await p.notes.wait_list_changed(1)
        r = await p.call("mut__report", {"path": "q3.csv"})
        assert not r.is_error and text_of(r) == "report: 3 sales", "confirmed live: the call is made"
        text, fams = await scrape(url)
        assert total(fams, "toolgate_shadow_decisions_total", kind="call") == 3, text
        assert total(fams, "toolgate_shadow_diffs_total", kind="call") == 1, text
    notes = [x for x in read_jsonl(log) if x["event"] == "shadow" and x["kind"] == "call"]
    assert len(notes) == 1, notes
    assert {"tool": "mut.report", "live": "ask", "shadow": "deny"}.items() <= notes[0].items(), notes
    assert "on_definition_change" in notes[0]["detail"], notes[0]
