"""Downstream servers that break the MCP spec in one tool: the proxy withholds
that tool (with a warning naming the server, the tool and the cause) and keeps
serving the others, without restarting the server. An answer nested deeper
than the proxy's decoder accepts fails at once, naming the limit; integers
beyond 64 bits in a call's arguments are refused rather than rounded."""

from __future__ import annotations

import json
import textwrap
import time
from pathlib import Path

import anyio
import pytest

from conftest import VENV, proxy, text_of

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).parent / "hostile_server.py"


def stub(mode: str, starts: Path, depth: int = 140) -> str:
    return f"hostile={VENV / 'python'} {SERVER} {mode} {depth} {starts}"


@pytest.mark.parametrize("mode", ["schema-true", "schema-string"])
async def test_a_tool_with_a_non_object_input_schema_is_withheld_and_the_others_served(tmp_path, mode):
    starts = tmp_path / "starts"
    async with proxy(tmp_path, "--server", stub(mode, starts)) as p:
        # the healthy tool is found and listed, the hostile one is not
        found = await p.call("toolgate__find_tools", {"query": "weather forecast for a city"})
        assert not found.is_error, text_of(found)
        assert "t_ok" in text_of(found) and "t_bad" not in text_of(found), text_of(found)
        names = await p.names()
        assert "hostile__t_ok" in names and "hostile__t_bad" not in names, names
        # the healthy tool is callable
        ok = await p.call("hostile__t_ok", {"city": "Oslo"})
        assert not ok.is_error, text_of(ok)
        assert text_of(ok) == "t_ok called for Oslo"
        # the hostile one is not (fail closed), and the refusal says why
        for name in ("hostile__t_bad", "hostile.t_bad"):
            bad = await p.call(name, {})
            assert bad.is_error
            msg = text_of(bad)
            assert "withheld" in msg and "inputSchema" in msg and "hostile" in msg, msg
        await anyio.sleep(1.0)
        # no restart loop: the server started once and still serves
        again = await p.call("hostile__t_ok", {"city": "Rome"})
        assert text_of(again) == "t_ok called for Rome"
    assert len(starts.read_text().split()) == 1, starts.read_text()
    log = p.log.read_text()
    assert "server down" not in log, log[-3000:]
    warned = [line for line in log.splitlines() if "tool withheld" in line]
    assert warned, log[-3000:]
    assert "hostile" in warned[0] and "t_bad" in warned[0] and "not a JSON object" in warned[0], warned


async def test_an_answer_nested_too_deep_fails_at_once_naming_the_limit(tmp_path):
    # Before: the answer was dropped unread and the proxy waited 30 s, then
    # said the server gave no answer.
    starts = tmp_path / "starts"
    config = tmp_path / "proxy.toml"
    config.write_text(textwrap.dedent(f"""
        restart_initial_ms = 20000
        [[server]]
        name = "hostile"
        command = "{VENV / 'python'}"
        args = ["{SERVER}", "deep", "140", "{starts}"]
    """))
    began = time.monotonic()
    async with proxy(tmp_path, "--config", str(config)) as p:
        # a call made while the first start is still under way is told so
        while True:
            r = await p.call("hostile__t_ok", {"city": "Oslo"})
            msg = text_of(r)
            if "is starting" not in msg or time.monotonic() - began > 15:
                break
            await anyio.sleep(0.1)
        elapsed = time.monotonic() - began
        assert r.is_error
        assert "hostile" in msg and "recursion limit of 128" in msg and "nested" in msg, msg
        assert elapsed < 15, f"{elapsed:.1f} s: the failure must be reported at once"
    log = p.log.read_text()
    assert "recursion limit of 128" in log, log[-3000:]
    assert "no answer within" not in log, log[-3000:]


async def test_an_answer_deep_but_within_the_limit_is_served(tmp_path):
    starts = tmp_path / "starts"
    async with proxy(tmp_path, "--server", stub("deep", starts, 110)) as p:
        for name in ("hostile__t_ok", "hostile__t_bad"):
            r = await p.call(name, {"city": "Oslo"} if name.endswith("ok") else {})
            assert not r.is_error, text_of(r)
    assert len(starts.read_text().split()) == 1


async def test_integers_beyond_64_bits_are_refused_not_rounded(tmp_path):
    starts = tmp_path / "starts"
    async with proxy(tmp_path, "--server", stub("numbers", starts)) as p:
        ok = await p.call("hostile__t_num", {"n": 18446744073709551615, "x": 2})
        assert not ok.is_error, text_of(ok)
        assert json.loads(text_of(ok)) == {"n": 18446744073709551615, "x": 2}
        # typed integer or untyped: the client sent the exact integer, the
        # proxy's parser would round it; refused, and the tool is not called
        for args, shown in [
            ({"n": 18446744073709551617}, "`n` = 18446744073709551617"),
            ({"x": [1, 123456789012345678901234567890]}, "`x/1` = 123456789012345678901234567890"),
        ]:
            r = await p.call("hostile__t_num", args)
            assert r.is_error, text_of(r)
            assert "beyond the 64-bit range" in text_of(r) and shown in text_of(r), text_of(r)
        # through the call-through tool as well
        r = await p.call("toolgate__call_tool", {"name": "hostile__t_num", "arguments": {"n": -9223372036854775810}})
        assert r.is_error and "beyond the 64-bit range" in text_of(r), text_of(r)
        # ... also with `arguments` sent as a JSON string, nested in an object
        text = '{"x": {"k": 18446744073709551617}}'
        r = await p.call("toolgate__call_tool", {"name": "hostile__t_num", "arguments": text})
        assert r.is_error and "`x/k` = 18446744073709551617" in text_of(r), text_of(r)
        # ... and a string form within range still goes through
        r = await p.call("toolgate__call_tool", {"name": "hostile__t_num", "arguments": '{"x": {"k": 7}}'})
        assert not r.is_error and json.loads(text_of(r)) == {"x": {"k": 7}}, text_of(r)


async def test_a_list_changed_flood_is_relisted_at_a_bounded_rate(tmp_path):
    """A server that sends notifications/tools/list_changed every millisecond
    is re-listed (and the catalog recompiled) at most every 250 ms, with one
    warning, and keeps serving."""
    starts = tmp_path / "starts"
    # the whole life of the proxy: re-listings happen from the first listing
    # to the shutdown
    t0 = time.monotonic()
    async with proxy(tmp_path, "--server", stub("storm", starts)) as p:
        ok = await p.call("hostile__t_ok", {"city": "Oslo"})
        assert text_of(ok) == "t_ok called for Oslo", text_of(ok)
        await anyio.sleep(3.0)
        ok = await p.call("hostile__t_ok", {"city": "Rome"})
        assert text_of(ok) == "t_ok called for Rome", text_of(ok)
    elapsed = time.monotonic() - t0
    log = p.log.read_text()
    relisted = log.count("re-listed")
    # before the bound: hundreds a second (7,873 in 12 s in one run)
    assert 1 <= relisted <= elapsed / 0.25 + 4, (relisted, elapsed, log[-2000:])
    assert log.count("faster than every 250 ms") == 1, log[-2000:]
    assert len(starts.read_text().split()) == 1, starts.read_text()


async def test_a_huge_unknown_tool_name_is_echoed_clipped(tmp_path):
    # Issue 29 item 5: a 120 KB name, called directly and through the
    # call-through tool, comes back clipped with a marker, and the audit line
    # that records the call stays bounded.
    starts = tmp_path / "starts"
    audit = tmp_path / "audit.jsonl"
    name = "hostile__" + "x" * 120_000
    async with proxy(tmp_path, "--audit", str(audit), "--server", stub("numbers", starts)) as p:
        for r in [
            await p.call(name, {}),
            await p.call("toolgate__call_tool", {"name": name, "arguments": {}}),
        ]:
            assert r.is_error, text_of(r)
            assert len(text_of(r)) < 2_000, len(text_of(r))
            assert "more characters" in text_of(r), text_of(r)
    lines = [line for line in audit.read_text().splitlines() if line.strip()]
    assert lines, "the calls are audited"
    assert all(len(line) < 4_000 for line in lines), [len(line) for line in lines]
