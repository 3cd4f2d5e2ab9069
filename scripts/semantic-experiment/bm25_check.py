import numpy as np
from common import load, BM25
tools, qs, irr = load()
idx = {t["name"]: i for i, t in enumerate(tools)}
bm = BM25(tools)
ranks = []
for q in qs:
    s = bm.scores(q["text"]); g = idx[q["gold"]]
    ranks.append(int((s >= s[g]).sum()) if s[g] > 0 else 10**6)
ranks = np.array(ranks)
print({k: round(100 * (ranks <= k).mean(), 1) for k in [1, 5, 8, 10, 20]})
print("halves", [(ranks[[q['half'] == h for q in qs]] <= 10).mean() for h in (0, 1)], sum(q['half'] == 0 for q in qs))
