"""Speed from Python, the same cases as the Rust criterion benches:
`select` over 1,000 tools (benches/activation.rs `evaluate/1000`: the same
synthetic tags and session, drawn by the same xorshift64*) and `check` of
the 200-byte shell line of benches/gate.rs. Under `scripts/test` each runs
once (`--benchmark-disable`) and checks its result; `Engine.session` is
measured beside the keyword API. For the numbers, with a
release build (`maturin develop --release`):
`.venv-py/bin/python -m pytest python/tests/test_bench.py --benchmark-only`."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolgate import Engine

DOMAINS = ["file_operation", "code_generation", "database", "network", "shell_execution",
           "data_analysis", "documentation"]
STAGES = ["exploration", "implementation", "debugging", "documentation"]
KW = ["query", "select", "insert", "database", "sql", "table", "migration", "api", "http",
      "request", "fetch", "endpoint", "curl", "rest", "run", "execute", "command", "script",
      "build", "deploy", "test", "read", "write", "file", "open", "load", "search", "web",
      "email", "send", "time", "date", "calculate", "math", "git", "commit", "diff", "log",
      "memory", "graph"]
M64 = (1 << 64) - 1


class Rng:
    """benches/activation.rs's xorshift64*."""

    def __init__(self, seed: int) -> None:
        self.s = seed

    def next(self) -> int:
        s = self.s
        s ^= s >> 12
        s ^= (s << 25) & M64
        s ^= s >> 27
        self.s = s
        return (s * 0x2545F4914F6CDD1D) & M64

    def below(self, n: int) -> int:
        return self.next() % n

    def sample(self, src: list[str], k: int) -> list[str]:
        v = list(src)
        for i in range(min(k, len(v))):
            j = i + self.below(len(v) - i)
            v[i], v[j] = v[j], v[i]
        return v[:k]


def tag_file(n: int, seed: int) -> str:
    r = Rng(seed)
    q = lambda v: ", ".join(f'"{x}"' for x in v)  # noqa: E731
    out = []
    for i in range(n):
        nd, ns, nk = r.below(4), r.below(4), r.below(7)
        d, s, k = q(r.sample(DOMAINS, nd)), q(r.sample(STAGES, ns)), q(r.sample(KW, nk))
        bp = r.below(1000) / 1000.0
        pc = 1 + r.below(5)
        out.append(
            f'[[tool]]\nname = "tool_{i}"\ndescription = "synthetic tool {i}"\ndomains = [{d}]\n'
            f"preferred_stages = [{s}]\ntrigger_keywords = [{k}]\nbase_priority = {bp}\n"
            f"parameter_complexity = {pc}\n\n"
        )
    return "".join(out)


def session(n: int) -> dict:
    r = Rng(7)
    context = {
        "user_intent_keywords": r.sample(KW, 5),
        "conversation_stage": "debugging",
        "recent_tool_calls": [f"tool_{r.below(n)}" for _ in range(5)],
        "session_duration_seconds": 1800.0,
        "active_language": "python",
        "project_type": "web",
    }
    counts, ages = {}, {}
    for i in range(0, n, 3):
        counts[f"tool_{i}"] = 1 + r.below(20)
        ages[f"tool_{i}"] = float(r.below(900))
    return {"context": context, "usage": {"call_counts": counts, "seconds_since_last_call": ages}, "now": 0.0}


def command_200() -> str:
    c = ('cd target/tmp && cargo build --release 2>&1 | tee build.log && grep -n "warning" build.log'
         ' | head -20 && echo "built $(date +%s)" >> times.txt && git diff --stat HEAD~1 -- src/')
    while len(c) < 200:
        c += " docs/"
    return c[:200]


@pytest.fixture(scope="module")
def engine_1000(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    d = tmp_path_factory.mktemp("tags1000")
    (d / "bench.toml").write_text(tag_file(1000, 42))
    return Engine.load(tags=d)


def test_select_1000_tools(benchmark, engine_1000: Engine) -> None:
    inputs = session(1000)
    sel = benchmark(lambda: engine_1000.select(**inputs))
    assert len(sel.tools) == 1000
    assert 0 < len(sel.active) < 1000


def test_select_1000_tools_and_read_the_active_names(benchmark, engine_1000: Engine) -> None:
    inputs = session(1000)
    active = benchmark(lambda: engine_1000.select(**inputs).active)
    assert active == engine_1000.select(**inputs).active and active


def test_session_select_1000_tools(benchmark, engine_1000: Engine) -> None:
    """The same session kept on the Rust side (`Engine.session`): read once,
    so a selection only evaluates."""
    inputs = session(1000)
    s = engine_1000.session(context=inputs["context"], usage=inputs["usage"], now=inputs["now"])
    sel = benchmark(s.select)
    assert sel.to_dict() == engine_1000.select(**inputs).to_dict()
    assert 0 < len(sel.active) < 1000


def test_check_200_byte_shell_line(benchmark) -> None:
    engine = Engine.load()
    cmd = command_200()
    assert len(cmd) == 200
    args = {"command": cmd}
    v = benchmark(engine.check, "shell.run_command", args)
    assert v.decision == "allow", v.message
