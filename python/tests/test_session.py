"""`Engine.session`: a session kept on the Rust side gives the selections the
keyword API gives for the same context, usage and time, before and after
recorded calls and messages; its inputs are checked as `select` checks them."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest

from conftest import REPO
from toolgate import Engine, InputError, Session, UnknownToolError

SQL = json.loads((REPO / "examples" / "sql-session.json").read_text())
EXAMPLES = ["sql-session.json", "debugging-session.json", "chinese-request.json"]


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine.load()


@pytest.mark.parametrize("example", EXAMPLES)
def test_a_session_selects_as_the_keyword_api(engine: Engine, example: str) -> None:
    inputs = json.loads((REPO / "examples" / example).read_text())
    s = engine.session(context=inputs.get("context"), usage=inputs.get("usage"), now=inputs.get("now"))
    assert isinstance(s, Session)
    # with the message, and without it
    assert s.select(message=inputs.get("message")).to_dict() == engine.select(**inputs).to_dict()
    without = {k: v for k, v in inputs.items() if k != "message"}
    assert s.select().to_dict() == engine.select(**without).to_dict()
    # a message joins one selection only: the session is unchanged
    assert s.select().to_dict() == engine.select(**without).to_dict()
    name = engine.select(**inputs).active[0]
    assert s.explain(name, message=inputs.get("message")).score == engine.explain(name, **inputs).score


def test_recorded_calls_are_the_usage_the_keyword_api_would_be_given(engine: Engine) -> None:
    s = engine.session(context=SQL["context"], usage=SQL["usage"], now=100.0)
    assert s.now == 100.0
    s.record_call("sqlite.read_query", at=130.0)
    s.record_call("read_query")  # an alias, at the session's clock (130)
    s.record_call("sqlite.describe_table", at=150.0)
    assert s.now == 150.0
    # written out by hand: counts +1, ages on the session's clock, the recent calls in order
    usage = {
        "call_counts": {"sqlite.list_tables": 1, "sqlite.describe_table": 3, "sqlite.read_query": 2},
        "seconds_since_last_call": {"sqlite.list_tables": 290.0, "sqlite.describe_table": 0.0,
                                    "sqlite.read_query": 20.0},
        "usage_frequency": {},
    }
    assert s.usage == usage
    context = copy.deepcopy(SQL["context"])
    context["recent_tool_calls"] += ["sqlite.read_query", "sqlite.read_query", "sqlite.describe_table"]
    assert s.context["recent_tool_calls"] == context["recent_tool_calls"]
    want = engine.select(context=context, message=SQL["message"], usage=usage, now=150.0)
    got = s.select(message=SQL["message"])
    assert got.to_dict() == want.to_dict()
    # and it is not the selection before the calls
    assert got.to_dict() != engine.select(**SQL, now=150.0).to_dict()


def test_the_recent_calls_keep_the_policys_window(engine: Engine) -> None:
    s = engine.session(now=0.0)
    names = ["sqlite.list_tables", "sqlite.describe_table", "sqlite.read_query", "git.git_status",
             "git.git_log", "time.get_current_time", "fetch.fetch"]
    for i, n in enumerate(names):
        s.record_call(n, at=float(i))
    assert s.context["recent_tool_calls"] == names[-5:]  # recent_calls_window = 5 (policies/default.toml)
    assert sum(s.usage["call_counts"].values()) == 7
    assert s.select(now=10.0).to_dict() == engine.select(context=s.context, usage=s.usage, now=10.0).to_dict()


def test_frequency_usage_is_each_tools_share_of_the_calls() -> None:
    engine = Engine.load(policy=REPO / "policies" / "seed-article.toml")
    s = engine.session()
    for n in ["sqlite.read_query", "sqlite.read_query", "sqlite.read_query", "git.git_status"]:
        s.record_call(n)
    assert s.usage["usage_frequency"] == {"sqlite.read_query": 0.75, "git.git_status": 0.25}
    assert s.select().to_dict() == engine.select(context=s.context, usage=s.usage).to_dict()


def test_user_messages_are_remembered_as_the_policy_says(tmp_path: Path) -> None:
    engine = Engine.load(policy=REPO / "policies" / "selection.toml")  # [keywords.memory] turns = 2
    first, second, third = ("list the tables of the sqlite database", "show the git log",
                            "what time is it in Tokyo")
    s = engine.session()
    s.user_message(first)
    assert s.select().to_dict() == engine.select(message=first).to_dict()
    k1 = s.context["user_intent_keywords"]
    assert "tables" in k1 and "sqlite" in k1
    s.user_message(second)
    k2 = s.context["user_intent_keywords"]
    s.user_message(third)
    ctx = s.context
    assert ctx["previous_intent_keywords"] == [k2, k1]
    s.user_message("and in Paris")
    assert s.context["previous_intent_keywords"] == [ctx["user_intent_keywords"], k2]  # two turns kept
    assert s.select().to_dict() == engine.select(context=s.context).to_dict()
    # without [keywords.memory] nothing is remembered
    d = Engine.load().session()
    d.user_message(first)
    d.user_message(second)
    assert d.context.get("previous_intent_keywords", []) == []


def test_bad_inputs_are_the_keyword_apis_errors(engine: Engine) -> None:
    cases = [
        {"usage": {"call_counts": {"sqlite.read_querry": 1}}},
        {"context": {"session_duration_seconds": "seven minutes"}},
        {"context": {"conversation_stage": "exploring"}},
        {"context": {"recent_tool_calls": ["nope"]}},
        {"usage": {"seconds_since_last_call": {"sqlite.read_query": -1}}},
        {"now": math.inf},
    ]
    for kw in cases:
        with pytest.raises(InputError) as want:
            engine.select(**kw)
        with pytest.raises(InputError) as got:
            engine.session(**kw)
        assert str(got.value) == str(want.value), kw
    s = engine.session()
    for message in [5, ["a"]]:
        with pytest.raises(InputError) as want:
            engine.select(message=message)
        with pytest.raises(InputError) as got:
            s.select(message=message)
        assert str(got.value) == str(want.value)
    for bad in [math.nan, math.inf, "soon", True]:
        with pytest.raises(InputError, match="`now` must be a"):
            s.select(now=bad)
        with pytest.raises(InputError, match="`at` must be a"):
            s.record_call("sqlite.read_query", at=bad)
        with pytest.raises(InputError, match="`now` must be a"):
            s.now = bad
    with pytest.raises(UnknownToolError) as e:
        s.record_call("sqlite.read_querry")
    assert e.value.tool == "sqlite.read_querry" and e.value.suggestion == "sqlite.read_query"
    with pytest.raises(UnknownToolError):
        s.explain("nope")
    # nothing was recorded by the failed calls
    assert s.usage == {"call_counts": {}, "seconds_since_last_call": {}, "usage_frequency": {}}
    assert s.now == 0.0
    with pytest.raises(TypeError):
        s.select("positional message")  # type: ignore[misc]


def test_a_session_of_a_watched_engine_selects_with_the_plan_in_force(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text((REPO / "policies" / "default.toml").read_text())
    with Engine.watch(policy=policy, debounce_ms=50) as engine:
        s = engine.session(context=SQL["context"], usage=SQL["usage"])
        assert s.engine is engine
        assert len(s.select(message=SQL["message"]).active) == 30
        text = policy.read_text()
        policy.write_text(text.replace("w_stage = 0.20", "w_stage = 0.05", 1))
        ev = engine.next_event(timeout=20)
        assert ev is not None and ev.kind == "loaded", ev
        after = s.select(message=SQL["message"])
        assert after.to_dict() == engine.select(**SQL).to_dict()
        assert sorted(after.active) == ["sqlite.describe_table", "sqlite.list_tables", "sqlite.read_query"]
