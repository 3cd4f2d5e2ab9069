from eval import *
from static import pca
tools, qs, irr, gold, B, Bi, half = setup()
raw = np.load("cache/static_raw384.npy")
p = np.load("cache/wordpiece_p.npy")
pmin = p[p > 0].min()
for dims in [256, 128]:
    E, _ = pca(raw, dims)
    for a in [1e-3, 3e-4, 1e-4, 3e-5, 1e-5]:
        w = a / (a + np.where(p > 0, p, pmin))
        st = Static(dims=None, weighting="none", table=(E * w[:, None]).astype(np.float32))
        C, Ci = static_matrices(st, tools, qs, irr)
        hs = [round(rec(ranks_of(hybrid(B, C, lam), gold))[2], 1) for lam in [0.5, 1, 2, 4]]
        print(f"dims={dims} sif a={a:g} static={np.round(rec(ranks_of(C, gold)),1)} hyb@8 lam .5/1/2/4={hs} AUC={auc(C.max(1), Ci.max(1)):.3f}", flush=True)
