"""A Rust panic inside a call reaches Python as `ToolgateError`, not as a
crash or pyo3's `PanicException` (a `BaseException`), and the interpreter and
the engine go on working. The panic comes from `_panic_for_tests`, compiled in
only with the cargo feature `test-hooks` (which `scripts/test`'s build of the
package enables): it panics inside the same guard, around the same
`py.detach`, as every call of the engine into the crate."""

from __future__ import annotations

import pytest

from toolgate import Engine, ToolgateError, _toolgate

PREFIX = "internal error in toolgate (a bug; please report it): "


@pytest.fixture(scope="module")
def panic():
    hook = getattr(_toolgate, "_panic_for_tests", None)
    if hook is None:
        pytest.fail(
            "toolgate._toolgate was built without the cargo feature `test-hooks`: build it as "
            "scripts/test does (pip install --config-settings 'maturin.build-args=--profile dev "
            "--features test-hooks' ./python)"
        )
    return hook


@pytest.mark.parametrize(
    "payload, text",
    [
        (None, "a test panic (static text)"),  # a &'static str payload
        ("index out of bounds: the len is 3 but the index is 7", "index out of bounds: the len is 3 but the index is 7"),
        (42, "unknown panic"),  # a payload that is not text
    ],
)
def test_a_panic_is_a_toolgate_error(panic, payload, text: str) -> None:
    with pytest.raises(ToolgateError) as e:
        panic(payload)
    assert type(e.value) is ToolgateError  # the base class: neither an input nor a load error
    assert str(e.value) == PREFIX + text


def test_the_engine_works_after_a_panic(panic) -> None:
    engine = Engine.load()
    before = engine.select(message="list the tables of the sqlite database").to_dict()
    for _ in range(3):
        with pytest.raises(ToolgateError):
            panic("again")
    assert engine.select(message="list the tables of the sqlite database").to_dict() == before
    assert engine.check("shell.run_command", {"command": "rm -rf /"}).decision == "deny"


def test_the_hook_refuses_other_payloads(panic) -> None:
    with pytest.raises(TypeError):
        panic(1.5)
