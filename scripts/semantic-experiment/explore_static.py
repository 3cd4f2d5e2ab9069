from eval import *
tools, qs, irr, gold, B, Bi, half = setup()
raw = np.load("cache/static_raw384.npy")
res = {}
for dims in [384, 256, 128, 64]:
    for wt in ["none", "zipf", "idf", "zipf+idf"]:
        st = Static(dims=dims if dims < 384 else None, weighting="zipf" if "zipf" in wt else "none", table=raw)
        if dims == 384 and wt != "none":  # also try centring without PCA rotation
            pass
        if "idf" in wt:
            st.fit_idf([tool_text(t) for t in tools])
        C, Ci = static_matrices(st, tools, qs, irr)
        r = rec(ranks_of(C, gold)); h = rec(ranks_of(hybrid(B, C, 2), gold))
        print(f"dims={dims:3d} w={wt:9s} static={np.round(r,1)} hyb2={np.round(h,1)} AUC={auc(C.max(1), Ci.max(1)):.3f} var={st.var:.2f}", flush=True)
