"""Fixtures for the MCP proxy tests: real MCP servers from PyPI and npm, driven
through `toolgate mcp-proxy` by a client built on the official `mcp` SDK.

Where things are (each can be overridden by an environment variable):

- TOOLGATE_BIN: the toolgate binary (default: target/debug/toolgate, then target/release/toolgate)
- TOOLGATE_MCP_VENV: virtualenv with `mcp` (2.x), mcp-server-time, mcp-server-git, mcp-server-fetch (default: .venv)
- TOOLGATE_MCP1_VENV: virtualenv with `mcp<2`, mcp-server-sqlite, mcp-shell-server (default: .venv-mcp1)
- TOOLGATE_NODE_DIR: npm prefix with @modelcontextprotocol/server-filesystem (default: .mcp-node)

`scripts/test` (the README's test command) installs all of them; see docs/mcp-proxy.md.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parents[2]


def selection_policy_text() -> str:
    """policies/selection.toml with its transitions file and semantic model
    named by absolute path, so that a copy written to a test's folder still
    loads."""
    text = (ROOT / "policies/selection.toml").read_text()
    out = text.replace('file = "transitions/', f'file = "{ROOT}/policies/transitions/')
    assert out != text, "selection.toml no longer names its transitions file"
    moved = out.replace('model = "models/', f'model = "{ROOT}/policies/models/')
    assert moved != out, "selection.toml no longer names its semantic model"
    return moved

# the seed preset (policies/default.toml), for tests of the seed's context rules
SEED = str(ROOT / "policies/default.toml")

# the proxy's own tools, listed first
META = ["toolgate__find_tools", "toolgate__call_tool"]


def x(catalog_name: str) -> str:
    """The exposed (client-safe) name of a catalog name under the default format."""
    server, _, tool = catalog_name.partition(".")
    return f"{server}__{tool}"


def _path(env: str, default: str) -> Path:
    p = Path(os.environ.get(env, default))
    return p if p.is_absolute() else ROOT / p


def toolgate_bin() -> Path:
    if os.environ.get("TOOLGATE_BIN"):
        return Path(os.environ["TOOLGATE_BIN"])
    for p in (ROOT / "target/debug/toolgate", ROOT / "target/release/toolgate"):
        if p.exists():
            return p
    pytest.fail("no toolgate binary: run `cargo build` (or set TOOLGATE_BIN)")


VENV = _path("TOOLGATE_MCP_VENV", ".venv") / "bin"
VENV1 = _path("TOOLGATE_MCP1_VENV", ".venv-mcp1") / "bin"
NODE_BIN = _path("TOOLGATE_NODE_DIR", ".mcp-node") / "node_modules/.bin"


def server_bin(venv: Path, name: str) -> str:
    p = venv / name
    if not p.exists():
        pytest.fail(f"{p} is missing: run scripts/test (or install {name} there)")
    return str(p)


def filesystem_bin() -> str:
    p = NODE_BIN / "mcp-server-filesystem"
    if p.exists():
        return str(p)
    if os.environ.get("TOOLGATE_SKIP_MCP_NODE") == "1":
        msg = "skipped on purpose (TOOLGATE_SKIP_MCP_NODE=1): the filesystem server tests did not run"
        print(msg, file=sys.stderr)
        pytest.skip(msg)
    pytest.fail(
        f"{p} is missing: run scripts/test (it installs @modelcontextprotocol/server-filesystem "
        f"with npm into {NODE_BIN.parent.parent}; it needs Node.js), or skip these tests on "
        "purpose with TOOLGATE_SKIP_MCP_NODE=1"
    )


def time_server() -> str:
    return f"time={server_bin(VENV, 'mcp-server-time')} --local-timezone UTC"


def git_server(repo: Path) -> str:
    return f"git={server_bin(VENV, 'mcp-server-git')} --repository {repo}"


def sqlite_server(db: Path) -> str:
    return f"sqlite={server_bin(VENV1, 'mcp-server-sqlite')} --db-path {db}"


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    p = tmp_path / "shop.db"
    c = sqlite3.connect(p)
    c.executescript(
        """
        CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL);
        INSERT INTO users (name) VALUES ('ann'), ('bob'), ('cho');
        """
    )
    c.commit()
    c.close()
    return p


def tables(db: Path) -> set[str]:
    c = sqlite3.connect(db)
    try:
        return {r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    finally:
        c.close()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "repo"
    r.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    subprocess.run(["git", "init", "-q", "-b", "main", str(r)], check=True, env=env)
    (r / "README.md").write_text("hello\n")
    subprocess.run(["git", "-C", str(r), "add", "README.md"], check=True, env=env)
    subprocess.run(["git", "-C", str(r), "commit", "-q", "-m", "init"], check=True, env=env)
    (r / "README.md").write_text("hello, changed\n")
    (r / "new.txt").write_text("untracked\n")
    return r


class Notes:
    """Counts notifications/tools/list_changed from the proxy."""

    def __init__(self) -> None:
        self.list_changed = 0
        self._event = anyio.Event()

    async def handler(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.list_changed += 1
            self._event.set()

    async def wait_list_changed(self, count: int, timeout: float = 10.0) -> None:
        with anyio.fail_after(timeout):
            while self.list_changed < count:
                self._event = anyio.Event()
                await self._event.wait()


class Proxy:
    """A connected client session to a running proxy."""

    def __init__(self, session: ClientSession, notes: Notes, init: types.InitializeResult, log: Path):
        self.session = session
        self.notes = notes
        self.init = init
        self.log = log

    @property
    def gate(self) -> str:
        meta = self.init.meta or {}
        return (meta.get("toolgate/proxy") or {}).get("gate", "")

    async def names(self, context: dict | None = None) -> list[str]:
        params = None
        if context is not None:
            params = types.PaginatedRequestParams(_meta={"toolgate/context": context})
        res = await self.session.list_tools(params=params)
        return [t.name for t in res.tools]

    async def tools(self) -> list[types.Tool]:
        return (await self.session.list_tools()).tools

    async def call(self, name: str, args: dict | None = None, **kw: Any) -> types.CallToolResult:
        return await self.session.call_tool(name, args or {}, **kw)


@asynccontextmanager
async def proxy(
    tmp_path: Path,
    *args: str,
    elicitation=None,
    roots=None,
    env: dict | None = None,
    cwd: str | Path | None = None,
):
    """Starts `toolgate mcp-proxy ARGS...` (in `cwd`, default the test's
    folder) and yields a connected Proxy."""
    log = tmp_path / f"proxy-{os.getpid()}-{id(args)}.log"
    notes = Notes()
    params = StdioServerParameters(
        command=str(toolgate_bin()),
        args=["mcp-proxy", *args],
        env={"RUST_LOG": os.environ.get("RUST_LOG", "warn,toolgate::mcp=debug"), **(env or {})},
        # the gate's default path root is the working directory: the test's own folder
        cwd=str(cwd if cwd is not None else tmp_path),
    )
    kwargs: dict[str, Any] = {"message_handler": notes.handler}
    if elicitation is not None:
        kwargs["elicitation_callback"] = elicitation
    if roots is not None:
        kwargs["list_roots_callback"] = roots
    with open(log, "w") as errlog:
        try:
            async with stdio_client(params, errlog=errlog) as (r, w):
                async with ClientSession(r, w, **kwargs) as s:
                    init = await s.initialize()
                    yield Proxy(s, notes, init, log)
        except BaseException:
            errlog.flush()
            print(f"--- proxy stderr ({log}) ---\n{log.read_text()[-6000:]}", file=sys.stderr)
            raise


@asynccontextmanager
async def direct(command: str, *args: str, env: dict | None = None):
    """A client session straight to a server (no proxy), for comparisons."""
    params = StdioServerParameters(command=command, args=list(args), env=env)
    with open(os.devnull, "w") as devnull:
        async with stdio_client(params, errlog=devnull) as (r, w):
            async with ClientSession(r, w) as s:
                await s.initialize()
                yield s


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


def comparable(result: types.CallToolResult) -> dict:
    d = result.model_dump(mode="json", by_alias=True, exclude_none=True)
    d.pop("_meta", None)
    d.pop("resultType", None)
    return d


# --- the modern era (protocol revision 2026-07-28): shared by test_modern.py
# and test_replicas.py ---------------------------------------------------

MODERN = "2026-07-28"
# what the proxy adds to a modern request and a modern result (docs: design of the modern era)
SESSION_META = "toolgate/session"
CONFIRM_KEY = "toolgate_confirm"

MODERN_SERVER = Path(__file__).resolve().parent / "modern_server.py"

# risk tags for modern_server.py's tools, so that the gate allows them (the
# server's own confirmation is what the tests look at)
MODERN_TAGS = """
[[tool]]
name = "modern.lookup_order"
domains = ["data_analysis"]
preferred_stages = ["exploration", "implementation", "debugging"]
trigger_keywords = ["order", "shipping", "status"]
base_priority = 0.8
parameter_complexity = 1
risk_level = "safe"
requires_confirmation = false

[[tool]]
name = "modern.refund_order"
domains = ["data_analysis"]
preferred_stages = ["exploration", "implementation", "debugging"]
trigger_keywords = ["order", "refund"]
base_priority = 0.8
parameter_complexity = 1
risk_level = "safe"
requires_confirmation = false
"""


def modern_server(log: Path | None = None, name: str = "modern") -> str:
    """`--server` spec of tests/mcp/modern_server.py (SDK 2.x, serves only
    2026-07-28) over stdio; its requests are logged to `log` (JSON lines)."""
    env = f"env MODERN_SERVER_LOG={log} " if log is not None else ""
    return f"{name}={env}{VENV / 'python'} {MODERN_SERVER}"


def modern_tags(tmp_path: Path) -> Path:
    """The shipped tool tags plus MODERN_TAGS."""
    import shutil

    d = tmp_path / "tags-modern"
    if not d.exists():
        shutil.copytree(ROOT / "tool-tags", d)
        (d / "modern.toml").write_text(MODERN_TAGS)
    return d


def tamper(sealed: str) -> str:
    """`sealed` with one character changed, in the middle (a letter or digit,
    so a base64 string stays well-formed)."""
    assert sealed, "nothing to tamper with"
    mid = len(sealed) // 2
    for i in list(range(mid, len(sealed))) + list(range(mid - 1, -1, -1)):
        c = sealed[i]
        if c.isalnum():
            swap = "B" if c == "A" else "A"
            return sealed[:i] + swap + sealed[i + 1:]
    raise AssertionError(f"no letter or digit to change in {sealed!r}")


def read_jsonl(path: Path) -> list[dict]:
    import json

    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []
