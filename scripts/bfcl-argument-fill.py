#!/usr/bin/env python3
"""BFCL per question: relevance and irrelevance of the two "nothing fits"
gates of policies/selection-transformer.toml, alone and together, modelled
on top of the policy without either gate.

Inputs (all from `toolgate import bfcl`'s questions.jsonl):
* JUDGED.jsonl: `JUDGED=FILE examples/bfcl_questions` with the policy
  without `min_cosine` and without `[features.argument_fill]` (each
  question's exposed tools);
* EVIDENCE.jsonl: `examples/bfcl_gate_roc` (raw cosines per candidate);
* FILL.jsonl: `examples/bfcl_argument_fill` (filled / required per
  candidate).

A tool counts as exposed when the policy exposes it, the question's best
candidate's raw cosine of the keywords reaches MIN_COSINE (the cosine gate
is per question) and the tool's fill reaches MIN_FRACTION (the fill gate is
per tool). The first and last combinations are what `bfcl_questions` gives
with the gates in the policy (checked: docs/selection-nothing-fits.md).

usage: scripts/bfcl-argument-fill.py JUDGED EVIDENCE FILL [A|B|all] [MIN_COSINE] [MIN_FRACTION]
"""
import json
import sys


def lines(path):
    return {q["id"]: q for q in map(json.loads, open(path))}


jud, ev, fill = (lines(p) for p in sys.argv[1:4])
half = sys.argv[4] if len(sys.argv) > 4 else "A"
cos = float(sys.argv[5]) if len(sys.argv) > 5 else 0.15
frac = float(sys.argv[6]) if len(sys.argv) > 6 else 0.75


def score(c, f):
    need = exposed = irr = nothing = 0
    for qid, fq in fill.items():
        if half != "all" and fq["holdout"] != (half == "B"):
            continue
        best = max([t["cos_keywords"] for t in ev[qid]["tools"]] or [0.0])
        fr = {t["name"]: (t["filled"] / t["required"] if t["required"] else 1.0) for t in fq["tools"]}
        shown = [n for n in jud[qid]["exposed"]
                 if (c is None or best >= c) and (f is None or fr.get(n, 1.0) >= f - 1e-9)]
        if fq["expected"]:
            for e in set(fq["expected"]):
                need += 1
                exposed += e in shown
        else:
            irr += 1
            nothing += not shown
    return exposed / need, nothing / irr, need, irr


for name, c, f in (("none", None, None), (f"min_cosine {cos}", cos, None),
                   (f"argument fill {frac}", None, frac), ("both", cos, frac)):
    r, i, n, m = score(c, f)
    print(f"half {half} | {name:<22} | relevance {100 * r:5.1f}% of {n} | irrelevance {100 * i:5.1f}% of {m}")
