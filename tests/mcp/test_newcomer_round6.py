"""Issue 29, newcomer pass 6: a proxy tool called with a misspelt argument
(`{"qurey": ...}`) answers with what a model can act on: the unknown
argument, the argument meant, and the tool's arguments with their types;
nothing is searched or called. With the official `mcp` SDK as the client
(both eras), the real proxy and mcp-server-sqlite downstream.

Run alone: `.venv/bin/python -m pytest -q tests/mcp/test_newcomer_round6.py`."""

from __future__ import annotations

import json

import pytest

from conftest import MODERN, proxy, sqlite_server, text_of
from test_modern import modern_proxy

pytestmark = pytest.mark.anyio

QUESTION = "which tables are in my sqlite database"


def assert_names_the_typo(text: str) -> None:
    assert "toolgate__find_tools has no argument `qurey` (did you mean `query`?)" in text, text
    assert "nothing was done" in text, text
    assert "`query` (string, required)" in text and "`limit` (integer, optional)" in text, text


async def test_a_misspelt_find_tools_argument_is_named_with_the_one_meant(tmp_path, db):
    audit = tmp_path / "audit.jsonl"
    async with proxy(tmp_path, "--server", sqlite_server(db), "--audit", str(audit)) as p:
        r = await p.call("toolgate__find_tools", {"qurey": QUESTION})
        assert r.is_error, text_of(r)
        assert_names_the_typo(text_of(r))
        # nothing was searched: no tool joined the list
        assert "sqlite__list_tables" not in await p.names()
        # a misspelt `limit` beside a good query is not silently ignored either
        r = await p.call("toolgate__find_tools", {"query": QUESTION, "limt": 1})
        assert r.is_error and "`limt` (did you mean `limit`?)" in text_of(r), text_of(r)
        # spelt right, the same search finds the tool
        r = await p.call("toolgate__find_tools", {"query": QUESTION})
        assert not r.is_error, text_of(r)
        assert r.structured_content["tools"][0]["name"] == "sqlite__list_tables"
        # and toolgate__call_tool names its own arguments the same way
        r = await p.call("toolgate__call_tool", {"nmae": "sqlite__list_tables", "arguments": {}})
        assert r.is_error, text_of(r)
        t = text_of(r)
        assert "toolgate__call_tool has no argument `nmae` (did you mean `name`?)" in t, t
        assert "`name` (string, required), `arguments` (object, optional)" in t, t
    # the refused calls were not forwarded
    lines = [json.loads(x) for x in audit.read_text().splitlines() if x.strip()] if audit.exists() else []
    assert not any(x.get("tool") == "sqlite.list_tables" for x in lines), lines


async def test_a_modern_client_gets_the_same_answer_and_may_pass_its_session(tmp_path, db):
    async with modern_proxy(tmp_path, "stdio", "--server", sqlite_server(db), mode=MODERN) as p:
        assert p.modern
        r = await p.call("toolgate__find_tools", {"qurey": QUESTION})
        assert r.is_error, text_of(r)
        assert_names_the_typo(text_of(r))
        # `session`, the modern era's argument, is known
        r = await p.call("toolgate__find_tools", {"query": QUESTION})
        assert not r.is_error, text_of(r)
        h = r.structured_content["session"]
        r = await p.call("toolgate__find_tools", {"query": QUESTION, "session": h})
        assert not r.is_error, text_of(r)
