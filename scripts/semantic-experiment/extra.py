"""Quantisation/dims check and paired gains vs BM25 on the held-out half; saves the distilled table."""
import json, numpy as np
from math import comb
from eval import *
from static import pca, zipf_sif
from safetensors.numpy import save_file
tools, qs, irr, gold, B, Bi, half = setup()
htools, hqs, _, hgold, hB, _, _ = setup(HO)
live = np.array([q["src"] == "live_multiple" for q in hqs])
raw = np.load("cache/static_raw384.npy")
lam = json.load(open("results.json"))["lams"]
def mcnemar(a, b):  # exact two-sided
    g, l = int((b & ~a).sum()), int((a & ~b).sum()); n = g + l
    p = min(1.0, 2 * sum(comb(n, i) for i in range(0, min(g, l) + 1)) / 2 ** n) if n else 1.0
    return g, l, p
for dims in (256, 128):
    E, var = pca(raw, dims); E = (E * zipf_sif(len(E))[:, None]).astype(np.float32)
    for q in ("f32", "f16", "int8"):
        if q == "f16": Eq = E.astype(np.float16).astype(np.float32)
        elif q == "int8":
            s = np.abs(E).max(1, keepdims=True) / 127.0
            Eq = (np.round(E / s).astype(np.int8).astype(np.float32) * s)
        else: Eq = E
        st = Static(dims=None, weighting="none", table=Eq)
        C, _ = static_matrices(st, tools, qs, [])
        hC, _ = static_matrices(st, htools, hqs, [])
        r = rec(ranks_of(hybrid(B, C, 1.5), gold)); hr = rec(ranks_of(hybrid(hB, hC, 1.5), hgold), live)
        size = len(E) * dims * {"f32": 4, "f16": 2, "int8": 1}[q] + (len(E) * 4 if q == "int8" else 0)
        print(f"dims={dims} {q}: {size/1e6:.1f} MB (PCA variance kept {var:.2f}); hybrid λ=1.5 recall@k shared {np.round(r,1)}, held-out live half {np.round(hr,1)}")
        if q == "f16":
            save_file({"embeddings": E.astype(np.float16)}, f"static-minilm-{dims}d-zipf-f16.safetensors")
    # paired comparison @8 on the held-out live half
    st = Static(dims=dims, weighting="zipf", table=raw)
    hC, _ = static_matrices(st, htools, hqs, [])
    a = ranks_of(hB, hgold)[live] <= 8; b = ranks_of(hybrid(hB, hC, 1.5), hgold)[live] <= 8
    print(f"  held-out live half @8, static-{dims} hybrid vs BM25: gained {mcnemar(a,b)[0]}, lost {mcnemar(a,b)[1]}, exact McNemar p={mcnemar(a,b)[2]:.3g}")
hC = np.load("cache/full_ho_qs.npy") @ np.load("cache/full_ho_tools.npy").T
a = ranks_of(hB, hgold)[live] <= 8; b = ranks_of(hybrid(hB, hC, 4), hgold)[live] <= 8
print(f"  held-out live half @8, full hybrid vs BM25: gained/lost/p {mcnemar(a,b)}")
