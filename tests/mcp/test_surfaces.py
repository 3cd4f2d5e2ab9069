"""Resources, prompts, completion and logging through `toolgate mcp-proxy`.

Two downstream servers (the `mcp` SDK's FastMCP, mcp<2, on stdio, written
below) each list a resource, a resource template, a subscribable resource and
prompts; one prompt name (`greet`) exists on both. Clients: the `mcp` SDK
(2.x) over stdio and, for the subscription flows that need two sessions at
once, over Streamable HTTP (`--listen`).
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, types
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

from conftest import ROOT, VENV1, proxy, text_of
from test_http import audit_lines, http_proxy

pytestmark = pytest.mark.anyio

PASS_THROUGH = str(ROOT / "tests/data/conformance/pass-through.toml")

# One downstream server: NAME from argv[1]; every (un)subscribe it receives
# is appended to the file argv[2].
SERVER = '''
import sys
from pydantic import AnyUrl
from mcp import types
from mcp.server.fastmcp import Context, FastMCP

NAME, LOG = sys.argv[1], sys.argv[2]
mcp = FastMCP(NAME)


def log(line: str) -> None:
    with open(LOG, "a") as f:
        f.write(line + "\\n")


@mcp.resource(f"memo://{NAME}/readme", name=f"{NAME}-readme", mime_type="text/plain",
              description=f"The readme of {NAME}.")
def readme() -> str:
    return f"readme of {NAME}"


@mcp.resource(f"memo://{NAME}/watched", name=f"{NAME}-watched", mime_type="text/plain",
              description="A resource to subscribe to.")
def watched() -> str:
    return f"watched of {NAME}"


@mcp.resource(f"memo://{NAME}/items/{{id}}", name=f"{NAME}-item", mime_type="text/plain",
              description="An item by id.")
def item(id: str) -> str:
    return f"{NAME} item {id}"


@mcp.prompt(description="Greets someone.")
def greet(who: str) -> str:
    return f"{NAME} greets {who}"


@mcp.prompt(name=f"only_{NAME}", description=f"A prompt only {NAME} has.")
def only() -> str:
    return f"only {NAME}"


@mcp.completion()
async def complete(ref, argument, context) -> types.Completion:
    words = [f"{NAME}-ann", f"{NAME}-bob"]
    return types.Completion(values=[w for w in words if w.startswith(argument.value)])


@mcp.tool(annotations=types.ToolAnnotations(readOnlyHint=True))
async def touch_resource(uri: str, ctx: Context) -> str:
    """Announce that a resource changed (notifications/resources/updated)."""
    await ctx.session.send_resource_updated(AnyUrl(uri))
    return "touched"


@mcp.tool(annotations=types.ToolAnnotations(readOnlyHint=True))
async def announce_prompts(ctx: Context) -> str:
    """Announce that the prompt list changed (notifications/prompts/list_changed)."""
    await ctx.session.send_prompt_list_changed()
    return "announced"


@mcp.tool(annotations=types.ToolAnnotations(readOnlyHint=True))
def crash() -> str:
    """Exit the server process at once (the proxy restarts it)."""
    import os
    os._exit(3)


@mcp._mcp_server.subscribe_resource()
async def subscribe(uri) -> None:
    log(f"subscribe {uri}")


@mcp._mcp_server.unsubscribe_resource()
async def unsubscribe(uri) -> None:
    log(f"unsubscribe {uri}")


# FastMCP (mcp<2) declares `resources.subscribe: false` whatever handlers it has
_caps = mcp._mcp_server.get_capabilities


def _with_subscribe(*args, **kwargs):
    caps = _caps(*args, **kwargs)
    caps.resources.subscribe = True
    return caps


mcp._mcp_server.get_capabilities = _with_subscribe
mcp.run()
'''


def servers(tmp_path: Path) -> tuple[list[str], Path]:
    """`--server` arguments for servers `a` and `b`, and their subscription log."""
    script = tmp_path / "surface_server.py"
    script.write_text(SERVER)
    log = tmp_path / "subscriptions.log"
    args = []
    for name in ("a", "b"):
        args += ["--server", f"{name}={VENV1 / 'python'} {script} {name} {log}"]
    return args, log


def sub_log(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


class Inbox:
    """The notifications a client session received."""

    def __init__(self) -> None:
        self.messages: list[Any] = []
        self._event = anyio.Event()

    async def handler(self, message: Any) -> None:
        self.messages.append(message)
        self._event.set()

    def of(self, kind: type) -> list[Any]:
        return [m for m in self.messages if isinstance(m, kind)]

    async def wait_for(self, kind: type, count: int = 1, timeout: float = 10.0) -> list[Any]:
        with anyio.fail_after(timeout):
            while len(self.of(kind)) < count:
                self._event = anyio.Event()
                await self._event.wait()
        return self.of(kind)


@asynccontextmanager
async def http_session(url: str):
    inbox = Inbox()
    async with create_mcp_http_client() as http:
        async with streamable_http_client(url, http_client=http) as (r, w):
            async with ClientSession(r, w, message_handler=inbox.handler) as s:
                init = await s.initialize()
                yield s, inbox, init


async def test_resources_and_templates_from_two_servers_over_stdio(tmp_path):
    args, _ = servers(tmp_path)
    audit = tmp_path / "audit.jsonl"
    async with proxy(tmp_path, *args, "--audit", str(audit)) as p:
        caps = p.init.capabilities
        assert caps.resources is not None and caps.resources.subscribe
        assert caps.prompts is not None and caps.completions is not None
        # the proxy announces changed lists itself (a server's restart)
        assert caps.resources.list_changed and caps.prompts.list_changed
        assert caps.logging is not None

        listed = await p.session.list_resources()
        uris = sorted(str(r.uri) for r in listed.resources)
        assert uris == ["memo://a/readme", "memo://a/watched", "memo://b/readme", "memo://b/watched"]
        assert listed.next_cursor is None
        templates = await p.session.list_resource_templates()
        assert sorted(t.uri_template for t in templates.resource_templates) == [
            "memo://a/items/{id}", "memo://b/items/{id}"]

        # each URI goes to the server that listed it, or whose template matches
        for uri, text in [("memo://a/readme", "readme of a"), ("memo://b/readme", "readme of b"),
                          ("memo://b/items/42", "b item 42"), ("memo://a/items/7", "a item 7")]:
            r = await p.session.read_resource(uri)
            assert r.contents[0].text == text, (uri, r)

        # a URI no server serves: a JSON-RPC error that names it
        with pytest.raises(Exception) as e:
            await p.session.read_resource("memo://c/readme")
        assert "memo://c/readme" in str(e.value)

    reads = [r for r in audit_lines(audit) if r.get("via") == "resources/read"]
    assert [(r["tool"], r["server"], r["outcome"]) for r in reads] == [
        ("memo://a/readme", "a", "ok"), ("memo://b/readme", "b", "ok"),
        ("memo://b/items/42", "b", "ok"), ("memo://a/items/7", "a", "ok"),
        ("memo://c/readme", None, "unavailable")]


async def test_prompts_from_two_servers_and_completion(tmp_path):
    args, _ = servers(tmp_path)
    # the default name format: `{server}__{tool}`
    async with proxy(tmp_path, *args) as p:
        names = sorted(pr.name for pr in (await p.session.list_prompts()).prompts)
        assert names == ["a__greet", "a__only_a", "b__greet", "b__only_b"]
        r = await p.session.get_prompt("b__greet", {"who": "ann"})
        assert r.messages[0].content.text == "b greets ann"
        r = await p.session.get_prompt("a__only_a")
        assert r.messages[0].content.text == "only a"
        with pytest.raises(Exception) as e:
            await p.session.get_prompt("greet", {"who": "ann"})
        assert "unknown prompt `greet`" in str(e.value)

        c = await p.session.complete(types.PromptReference(type="ref/prompt", name="b__greet"),
                                     {"name": "who", "value": "b-"})
        assert c.completion.values == ["b-ann", "b-bob"]
        c = await p.session.complete(
            types.ResourceTemplateReference(type="ref/resource", uri="memo://a/items/{id}"),
            {"name": "id", "value": "a-a"})
        assert c.completion.values == ["a-ann"]

        # logging/setLevel is accepted (stored in the session)
        assert await p.session.set_logging_level("warning") is not None

    # `{tool}`: names pass unchanged; the clash on `greet` gets a hash suffix
    async with proxy(tmp_path, *args, "--name-format", "{tool}") as p:
        names = sorted(pr.name for pr in (await p.session.list_prompts()).prompts)
        assert "only_a" in names and "only_b" in names and "greet" in names
        other = [n for n in names if n.startswith("greet_")]
        assert len(other) == 1 and len(names) == 4, names
        texts = {(await p.session.get_prompt(n, {"who": "x"})).messages[0].content.text
                 for n in ("greet", other[0])}
        assert texts == {"a greets x", "b greets x"}


async def test_subscriptions_reach_only_the_sessions_subscribed(tmp_path):
    args, log = servers(tmp_path)
    async with http_proxy(tmp_path, *args, "--policy", PASS_THROUGH, "--name-format", "{server}__{tool}") as hp:
        async with http_session(hp.url) as (s1, in1, _), http_session(hp.url) as (s2, in2, _), \
                http_session(hp.url) as (s3, in3, _):
            await s1.subscribe_resource("memo://a/watched")
            await s2.subscribe_resource("memo://a/watched")
            await s3.subscribe_resource("memo://b/watched")
            # one downstream subscription per URI, however many sessions
            assert sub_log(log) == ["subscribe memo://a/watched", "subscribe memo://b/watched"]

            r = await s3.call_tool("a__touch_resource", {"uri": "memo://a/watched"})
            assert text_of(r) == "touched", r
            for inbox in (in1, in2):
                got = await inbox.wait_for(types.ResourceUpdatedNotification)
                assert [str(n.params.uri) for n in got] == ["memo://a/watched"]
            await anyio.sleep(0.5)
            assert in3.of(types.ResourceUpdatedNotification) == [], "s3 did not subscribe to it"

            # the first session leaves: the server is not told (s2 stays)
            await s1.unsubscribe_resource("memo://a/watched")
            assert sub_log(log) == ["subscribe memo://a/watched", "subscribe memo://b/watched"]
            await s3.call_tool("a__touch_resource", {"uri": "memo://a/watched"})
            await in2.wait_for(types.ResourceUpdatedNotification, 2)
            await anyio.sleep(0.5)
            assert len(in1.of(types.ResourceUpdatedNotification)) == 1

            # the last one leaves: unsubscribed downstream
            await s2.unsubscribe_resource("memo://a/watched")
            assert sub_log(log)[-1] == "unsubscribe memo://a/watched"

            # a prompts/list_changed reaches every session
            await s1.call_tool("b__announce_prompts", {})
            for inbox in (in1, in2, in3):
                await inbox.wait_for(types.PromptListChangedNotification)

        # s3 closed its session while subscribed: the proxy unsubscribes for it
        with anyio.fail_after(10):
            while "unsubscribe memo://b/watched" not in sub_log(log):
                await anyio.sleep(0.1)
        assert sub_log(log).count("subscribe memo://a/watched") == 1


async def test_subscriptions_survive_a_server_restart(tmp_path):
    args, log = servers(tmp_path)
    async with http_proxy(tmp_path, *args, "--policy", PASS_THROUGH) as hp:
        async with http_session(hp.url) as (s1, in1, _):
            await s1.subscribe_resource("memo://a/watched")
            assert sub_log(log) == ["subscribe memo://a/watched"]
            r = await s1.call_tool("a__crash", {})
            assert r.is_error, r
            # restarted: subscribed again on the new connection, and the
            # session is told the resources and prompts may have changed
            with anyio.fail_after(20):
                while sub_log(log).count("subscribe memo://a/watched") < 2:
                    await anyio.sleep(0.1)
            await in1.wait_for(types.ResourceListChangedNotification)
            await in1.wait_for(types.PromptListChangedNotification)
            with anyio.fail_after(20):
                while True:
                    r = await s1.call_tool("a__touch_resource", {"uri": "memo://a/watched"})
                    if not r.is_error:
                        break
                    await anyio.sleep(0.2)
            got = await in1.wait_for(types.ResourceUpdatedNotification)
            assert [str(n.params.uri) for n in got] == ["memo://a/watched"]


async def test_no_resource_capability_without_a_server_that_has_it(tmp_path):
    # a bare JSON-RPC server that declares tools only
    paged = ROOT / "tests/mcp/paged_server.py"
    async with proxy(tmp_path, "--server", f"paged={VENV1 / 'python'} {paged}") as p:
        caps = p.init.capabilities
        assert caps.resources is None and caps.prompts is None and caps.completions is None
        assert caps.logging is not None
        with pytest.raises(Exception) as e:
            await p.session.list_resources()
        assert "resources" in str(e.value)
