"""Which questions the hybrids gain/lose vs BM25 at k=8 (shared set), plus the issue's two vocabulary-gap probes."""
import numpy as np
from eval import *
tools, qs, irr, gold, B, Bi, half = setup()
raw = np.load("cache/static_raw384.npy")
st = Static(dims=256, weighting="zipf", table=raw)
Cs, _ = static_matrices(st, tools, qs, [])
rb = ranks_of(B, gold); rs = ranks_of(hybrid(B, Cs, 1.5), gold)
print("static hybrid gains (BM25 rank -> hybrid rank):")
for i in np.where((rb > 8) & (rs <= 8))[0]:
    print(f"  {rb[i]:4d} -> {rs[i]:2d}  {tools[gold[i]]['name']:35s} {qs[i]['text'][:90]!r}")
print("static hybrid losses:")
for i in np.where((rb <= 8) & (rs > 8))[0]:
    print(f"  {rb[i]:4d} -> {rs[i]:2d}  {tools[gold[i]]['name']:35s} {qs[i]['text'][:90]!r}")
idx = {t["name"]: i for i, t in enumerate(tools)}
T = st.embed([tool_text(t) for t in tools])
bm = BM25(tools)
from minilm import MiniLM
m = MiniLM(); TF = np.load("cache/full_tools.npy")
for q, names in [("How much is 100 euro in USD?", ["currency_conversion", "currency_converter", "convert_currency"]),
                 ("remove the file report.txt", ["delete_file", "file.delete", "os.remove"]),
                 ("How much is 394 times 213?", ["CalcProduct", "multiply"])]:
    present = [n for n in names if n in idx]
    cand = [n for n in idx if any(w in n.lower() for w in ("currenc", "delete", "remove", "product", "multipl"))]
    c = (st.embed([q]) @ T.T)[0]; b = bm.scores(q); cf = (m.encode([q]) @ TF.T)[0]
    for n in sorted(set(present + cand))[:8]:
        j = idx[n]
        rk = lambda s: int((s >= s[j]).sum())
        print(f"{q!r:40s} {n:35s} rank BM25 {rk(b):4d} static {rk(c):4d} static-hyb {rk(hybrid(b[None], c[None], 1.5)[0]):4d} full {rk(cf):4d} full-hyb {rk(hybrid(b[None], cf[None], 4)[0]):4d}")
