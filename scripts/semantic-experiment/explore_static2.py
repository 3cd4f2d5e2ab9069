from eval import *
from static import pca, zipf_sif
tools, qs, irr, gold, B, Bi, half = setup()
raw = np.load("cache/static_raw384.npy")
T_full = np.load("cache/full_tools.npy")
def show(name, C, Ci):
    hs = {lam: rec(ranks_of(hybrid(B, C, lam), gold))[2] for lam in [0.5, 1, 2, 4, 8]}
    print(f"{name:28s} static={np.round(rec(ranks_of(C, gold)),1)} hyb@8 by lam={ {k: round(v,1) for k,v in hs.items()} } rrf@8={rec(ranks_of(rrf(B,C),gold))[2]:.1f} AUC={auc(C.max(1), Ci.max(1)):.3f}", flush=True)
# centred 384 (PCA keeping all dims = centring + rotation)
Ec, _ = pca(raw, 384)
for nm, tab, wt in [("384 centred", Ec, "none"), ("384 centred zipf", Ec, "zipf"), ("256 zipf", None, "zipf")]:
    st = Static(dims=256 if tab is None else None, weighting=wt, table=raw if tab is None else tab)
    C, Ci = static_matrices(st, tools, qs, irr); show(nm, C, Ci)
# asymmetric: static raw query vs full-model tool vectors (same space: both mean-pooled outputs)
for wt in ["none", "zipf"]:
    st = Static(dims=None, weighting=wt, table=raw)
    Q = st.embed([q["text"] for q in qs]); I = st.embed([q["text"] for q in irr])
    show("asym raw %s q vs full tools" % wt, Q @ T_full.T, I @ T_full.T)
