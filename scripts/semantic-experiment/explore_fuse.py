from eval import *
tools, qs, irr, gold, B, Bi, half = setup()
raw = np.load("cache/static_raw384.npy")
st = Static(dims=256, weighting="zipf", table=raw)
Cs, Cis = static_matrices(st, tools, qs, irr)
Cf = np.load("cache/full_qs.npy") @ np.load("cache/full_tools.npy").T
def z(C): return (C - C.mean(1, keepdims=True)) / C.std(1, keepdims=True)
for nm, C in [("static256zipf", Cs), ("full", Cf)]:
    for lam in [0.05, 0.1, 0.15, 0.2, 0.3, 0.5]:
        print(nm, "z lam", lam, np.round(rec(ranks_of(norm_bm25(B) + lam * z(C), gold)), 1))
    for lam in [1, 2, 3]:
        # cos relative to the query's best cos
        Cr = C / C.max(1, keepdims=True)
        print(nm, "rel lam", lam, np.round(rec(ranks_of(norm_bm25(B) + lam * Cr, gold)), 1))
