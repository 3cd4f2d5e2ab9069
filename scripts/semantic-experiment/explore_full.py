from eval import *
tools, qs, irr, gold, B, Bi, half = setup()
T = np.load("cache/full_tools.npy"); Q = np.load("cache/full_qs.npy"); I = np.load("cache/full_irr.npy")
C = Q @ T.T; Ci = I @ T.T
Tn = np.load("cache/full_tools_noparam.npy")
print("bm25", np.round(rec(ranks_of(B, gold)), 1))
print("full", np.round(rec(ranks_of(C, gold)), 1))
print("full noparam", np.round(rec(ranks_of(Q @ Tn.T, gold)), 1))
for lam in [0.25, 0.5, 1, 2, 4]:
    print("hyb", lam, np.round(rec(ranks_of(hybrid(B, C, lam), gold)), 1))
print("rrf", np.round(rec(ranks_of(rrf(B, C), gold)), 1))
print("AUC best cos", auc(C.max(1), Ci.max(1)))
H = hybrid(B, C, 2)
r = ranks_of(H, gold)
for i in np.where(r > 8)[0][:30]:
    top = np.argsort(-H[i])[:3]
    print(f"r={r[i]:3d} gold={tools[gold[i]]['name']:40s} top={[tools[j]['name'] for j in top]} | {qs[i]['text'][:100]!r}")
