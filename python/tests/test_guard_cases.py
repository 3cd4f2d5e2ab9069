"""The shared gate cases give the same verdicts from Python as from
``toolgate guard``, and reach the decision each case expects."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import REPO, SHARED, cli_json
from toolgate import Engine

CASE_FILES = ["guard-cases.jsonl", "guard-cases-2.jsonl", "benign-commands.jsonl"]
TOOL_OF_KIND = {
    "shell": "shell.run_command",
    "shell-argv": "shell.shell_execute",
    "sql-write": "sqlite.write_query",
    "sql-read": "sqlite.read_query",
}


def cases() -> list[dict]:
    out = []
    for name in CASE_FILES:
        for p in (SHARED / "data" / "cases" / name, REPO / "tests" / "data" / "cases" / name):
            if p.exists():
                out += [json.loads(l) for l in p.read_text().splitlines() if l.strip()]
                break
    return out


ALL = cases()


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The schema cases' tools (`case.ID`), as an MCP tools/list file that
    both the CLI (`--tools`) and the engine load beside the shipped tags."""
    tools = [
        {"name": f"case.{c['id']}", "inputSchema": c["schema"]} for c in ALL if "schema" in c
    ]
    p = tmp_path_factory.mktemp("cases") / "case-tools.json"
    p.write_text(json.dumps({"tools": tools}))
    return p


@pytest.fixture(scope="module")
def engine(catalog: Path) -> Engine:
    return Engine.load(tags=REPO / "tool-tags", tools=[catalog])


def call_of(c: dict) -> tuple[str, dict]:
    if c["kind"] == "schema":
        return f"case.{c['id']}", c["value"]
    return TOOL_OF_KIND[c["kind"]], {"command" if c["kind"].startswith("shell") else "query": c["value"]}


def test_there_are_cases_of_every_kind() -> None:
    kinds = {c["kind"] for c in ALL}
    assert kinds >= {"shell", "shell-argv", "sql-write", "sql-read", "schema"}, kinds
    assert len(ALL) >= 170


@pytest.mark.parametrize("case", ALL, ids=[c["id"] for c in ALL])
def test_same_verdict_as_toolgate_guard(case: dict, engine: Engine, catalog: Path) -> None:
    tool, args = call_of(case)
    v = engine.check(tool, args)
    cli = cli_json(
        "guard", "--tool", tool, "--args", json.dumps(args),
        "--tags", "tool-tags", "--tools", str(catalog), "--format", "json",
    )
    # `warnings` is the CLI's report on the catalog's schemas (keywords the
    # gate does not validate), not part of the call's verdict.
    assert isinstance(cli.pop("warnings"), list)
    assert v.to_dict() == cli
    assert v.decision == cli["decision"]
    assert v.arguments == cli["arguments"]
    assert [f.rule_id for f in v.findings] == [f["rule_id"] for f in cli["findings"]]
    assert v.message == cli["message"]
    want = case["expect"]
    if want == "not-allow":
        assert v.decision != "allow", v.message
    else:
        assert v.decision == want, f"{case['id']} ({case['why']}): {v.message}"
    if "coerced" in case and v.decision == "allow":
        assert v.arguments == case["coerced"]
    # The same call as JSON text (as `guard --args` takes it) gets the same verdict.
    assert engine.check(tool, json.dumps(args)).to_dict() == cli
