#!/usr/bin/env python3
"""ROC points of absolute "nothing fits" gates on BFCL, judged per question.

Reads the JSON lines of `examples/bfcl_gate_roc.rs` (one per question, each
candidate with its raw cosine to the message and to the keywords, BM25 in
units of idf1 and coverage) and prints, for each evidence and each threshold
X, on half A (holdout = false) or B:

* relevance: share of needed tools whose question's best candidate reaches X
  ("question" gate: nothing is exposed when the best candidate is below X),
  or whose own value reaches X ("tool" gate: a tool below X is not exposed);
* irrelevance: share of irrelevant questions whose best candidate is below X.

Only the gate is modelled: a needed tool the policy's ranking would not
expose anyway is counted as exposed here; `examples/bfcl_questions.rs` gives
the policy's real numbers.

usage: scripts/bfcl-gate-roc.py EVIDENCE.jsonl [A|B|all] [FIELD...]
"""
import json
import sys

path = sys.argv[1]
half = sys.argv[2] if len(sys.argv) > 2 else "A"
fields = sys.argv[3:] or ["cos_message", "cos_keywords", "bm25_idf", "coverage", "coverage_all"]
qs = [json.loads(l) for l in open(path)]
if half != "all":
    qs = [q for q in qs if q["holdout"] == (half == "B")]
rel = [q for q in qs if q["expected"]]
irr = [q for q in qs if not q["expected"]]
needed = sum(len(set(q["expected"])) for q in rel)
print(f"half {half}: {len(rel)} relevant questions ({needed} needed tools), {len(irr)} irrelevant")
for f in fields:
    vals = sorted({round(t[f], 3) for q in qs for t in q["tools"]})
    best_irr = [max(t[f] for t in q["tools"]) for q in irr]
    points = []
    for x in vals:
        r_q = r_t = 0
        for q in rel:
            best = max(t[f] for t in q["tools"])
            for e in set(q["expected"]):
                v = next((t[f] for t in q["tools"] if t["name"] == e), 0.0)
                r_q += best >= x
                r_t += v >= x
        i_ok = sum(b < x for b in best_irr)
        points.append((x, r_q / needed, r_t / needed, i_ok / max(len(irr), 1)))
    print(f"\n{f}: threshold | relevance (question gate) | relevance (tool gate) | irrelevance")
    # the points where relevance (question gate) crosses 99.5, 99, 98, 97, 95%
    # and irrelevance crosses 50..90%
    shown = set()
    for target in (1.0, 0.995, 0.99, 0.985, 0.98, 0.97, 0.95, 0.9):
        ok = [p for p in points if p[1] >= target]
        if ok:
            shown.add(ok[-1])
    for target in (0.5, 0.6, 0.7, 0.8, 0.9):
        ok = [p for p in points if p[3] >= target]
        if ok:
            shown.add(ok[0])
    for p in sorted(shown):
        print(f"  {p[0]:8.3f} | {100*p[1]:6.1f}% | {100*p[2]:6.1f}% | {100*p[3]:6.1f}%")
    # area under the question-gate ROC (relevance kept vs irrelevance caught)
    xs = [(1 - p[1], p[3]) for p in points]
