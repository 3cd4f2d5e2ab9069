"""Shared paths of the Python package's tests.

Run from the repository root (``tests/python_package.rs`` does, after
``scripts/test`` built the package into ``.venv-py``):
``.venv-py/bin/python -m pytest python/tests``. The CLI the verdicts and
reports are compared with is ``$TOOLGATE_BIN`` (the binary cargo built for
the test run), else ``target/debug/toolgate``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"


def data_files(folder: str, name: str) -> list[Path]:
    """The repository's copy of a data file, and the shared one when present."""
    out = [REPO / "tests" / "data" / folder / name]
    shared = SHARED / "data" / folder / name
    if shared.exists():
        out.append(shared)
    return [p for p in out if p.exists()]


def toolgate_bin() -> Path:
    """The CLI to compare with; a missing binary fails the test."""
    p = Path(os.environ.get("TOOLGATE_BIN", REPO / "target" / "debug" / "toolgate"))
    if not p.exists():
        pytest.fail(f"the toolgate binary {p} is missing: build it (cargo build) or set TOOLGATE_BIN")
    return p


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Runs the CLI from the repository root."""
    return subprocess.run(
        [str(toolgate_bin()), *args], cwd=REPO, input=stdin, capture_output=True, text=True
    )


def cli_json(*args: str, stdin: str | None = None) -> dict:
    r = run_cli(*args, stdin=stdin)
    assert r.stdout, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch: pytest.MonkeyPatch) -> None:
    # The gate's shipped roots are ["."]: run every test where the CLI runs.
    monkeypatch.chdir(REPO)
