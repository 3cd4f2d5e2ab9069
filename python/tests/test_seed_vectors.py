"""The seed vectors reproduce from Python: scores to 1e-9, the effective
threshold, the active set and the domain weights (as tests/seed_vectors.rs
checks them in Rust)."""

from __future__ import annotations

import json

import pytest

from conftest import REPO, data_files
from toolgate import Engine

PRESETS = [
    ("policies/default.toml", "registry.jsonl"),
    ("policies/seed-article.toml", "article.jsonl"),
]


@pytest.mark.parametrize("policy,vectors", PRESETS)
def test_preset_reproduces_its_vectors(policy: str, vectors: str) -> None:
    engine = Engine.load(policy=REPO / policy)
    n = 0
    for path in data_files("seed-vectors", vectors):
        for line in path.read_text().splitlines():
            v = json.loads(line)
            exp = v["expected"]
            sel = engine.select(
                **{k: v[k] for k in ("context", "message", "usage", "tools", "now") if k in v}
            )
            assert abs(sel.effective_threshold - exp["effective_threshold"]) < 1e-12, v["id"]
            for name, want in exp["scores"].items():
                got = sel.tool(name).score
                assert abs(got - want) <= 1e-9, f"{v['id']}: {name}: {got} vs {want}"
            assert sorted(sel.active) == exp["active"], v["id"]
            if "domain_weights" in exp:
                got_dw = dict(sel.domain_weights)
                for d, want in exp["domain_weights"].items():
                    assert abs(got_dw.get(d, 0.0) - want) < 1e-12, f"{v['id']}: {d}"
            n += 1
    assert n >= 300
