"""Hot reload with real file edits: a good edit is served, a bad edit keeps
the last good plan and reports its file:line:column, by the event iterator
and by a callback."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from conftest import REPO
from toolgate import Engine, ToolgateError

SQL = json.loads((REPO / "examples" / "sql-session.json").read_text())


@pytest.fixture
def policy(tmp_path: Path) -> Path:
    p = tmp_path / "policy.toml"
    p.write_text((REPO / "policies" / "default.toml").read_text())
    return p


def edit(p: Path, old: str, new: str) -> None:
    text = p.read_text()
    assert old in text
    p.write_text(text.replace(old, new, 1))


def test_edits_are_served_and_a_bad_edit_keeps_the_last_good_plan(policy: Path) -> None:
    with Engine.watch(policy=policy, debounce_ms=50) as engine:
        assert engine.watching and engine.version == 1
        before = engine.select(**SQL).active
        assert len(before) == 30
        edit(policy, "w_stage = 0.20", "w_stage = 0.05")
        ev = engine.next_event(timeout=20)
        assert ev is not None and ev.kind == "loaded", ev
        assert (ev.version, ev.previous_version) == (2, 1)
        assert ev.content_hash == engine.content_hash and len(ev.tool_names) == 71
        after = engine.select(**SQL).active
        assert engine.version == 2
        assert sorted(after) == ["sqlite.describe_table", "sqlite.list_tables", "sqlite.read_query"]

        edit(policy, "w_stage = 0.05", "w_stag = 0.05")
        ev = engine.next_event(timeout=20)
        assert ev is not None and ev.kind == "rejected", ev
        assert ev.version == 2
        d = ev.diagnostics[0]
        assert (d.file, d.line, d.column) == (str(policy), 31, 1)
        assert f"{policy}:31:1: weight `w_stag`" in ev.error
        # still serving v2
        assert engine.version == 2 and engine.select(**SQL).active == after
        status = engine.status()
        assert status["rejections"] == 1 and status["version"] == 2
        assert status["last_error"].startswith(f"{policy}:31:1:")

        edit(policy, "w_stag = 0.05", "w_stage = 0.20")
        ev = engine.next_event(timeout=20)
        assert ev is not None and ev.kind == "loaded" and ev.version == 3
        assert engine.select(**SQL).active == before
    assert not engine.watching
    assert engine.next_event(timeout=0.2) is None


def test_a_callback_reports_loads_and_rejections(policy: Path) -> None:
    seen = []
    got = threading.Event()

    def on_event(ev) -> None:
        seen.append(ev)
        if len(seen) >= 2:
            got.set()

    engine = Engine.watch(policy=policy, on_event=on_event, poll_ms=50, debounce_ms=20)
    try:
        edit(policy, "threshold = 0.4 ", "threshold = 0.5 ")
        deadline = time.monotonic() + 20
        while not seen and time.monotonic() < deadline:
            time.sleep(0.05)
        edit(policy, "threshold = 0.5 ", "threshold = 1.5 ")
        assert got.wait(20), seen
    finally:
        engine.close()
    assert [e.kind for e in seen[:2]] == ["loaded", "rejected"]
    assert seen[1].diagnostics and seen[1].diagnostics[0].line == 11
    assert engine.version == 2
    with pytest.raises(ToolgateError, match="on_event"):
        engine.next_event(timeout=0)


def test_reload_now_and_errors(policy: Path) -> None:
    with pytest.raises(ToolgateError, match="does not watch"):
        Engine.load().status()
    with pytest.raises(TypeError):
        Engine.watch(policy=policy, on_event=42)
    with Engine.watch(policy=policy) as engine:
        edit(policy, "w_stage = 0.20", "w_stage = 0.10")
        ev = engine.reload()
        assert ev.kind == "loaded" and engine.version >= 2
        it = engine.events(timeout=0.5)
        # the watcher sees the same edit (its event or nothing) and then the
        # iterator ends after half a second of quiet
        assert all(e.kind == "loaded" for e in it)
