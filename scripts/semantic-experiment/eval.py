"""Recall@k for BM25 / static / full MiniLM / hybrids, split halves, held-out set, irrelevance analysis."""
import os
WORK = os.environ.get("SEMEXP_WORK", "/tmp/semexp")  # model (pkg/), caches, held-out cut
import json, sys, time
import numpy as np
from common import load, BM25, tool_text
from static import Static

KS = [1, 5, 8, 10, 20]
HO = os.path.join(WORK, "heldout/")


def ranks_of(S, gold):
    """S: (Q, N) scores; gold: (Q,) index -> 1-based pessimistic rank of gold."""
    g = S[np.arange(len(S)), gold][:, None]
    return (S >= g).sum(1)


def rec(r, mask=None):
    r = r if mask is None else r[mask]
    return [100.0 * (r <= k).mean() for k in KS]


def norm_bm25(B):
    m = B.max(1, keepdims=True)
    return np.where(m > 0, B / np.where(m > 0, m, 1), 0.0)


def hybrid(B, C, lam):
    return norm_bm25(B) + lam * C


def rrf(B, C, k=60):
    rb = (-B).argsort(1).argsort(1) + 1
    rc = (-C).argsort(1).argsort(1) + 1
    return 1.0 / (k + rb) + 1.0 / (k + rc)


def auc(pos, neg):
    pos, neg = np.asarray(pos), np.asarray(neg)
    allv = np.concatenate([pos, neg])
    order = allv.argsort().argsort() + 1.0  # ties negligible for floats
    return (order[:len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg))


def setup(root=None):
    tools, qs, irr = load(root) if root else load()
    bm = BM25(tools)
    idx = {t["name"]: i for i, t in enumerate(tools)}
    gold = np.array([idx[q["gold"]] for q in qs])
    B = np.array([bm.scores(q["text"]) for q in qs])
    Bi = np.array([bm.scores(q["text"]) for q in irr])
    half = np.array([q["half"] for q in qs])
    return tools, qs, irr, gold, B, Bi, half


def static_matrices(st, tools, qs, irr):
    T = st.embed([tool_text(t) for t in tools])
    return st.embed([q["text"] for q in qs]) @ T.T, st.embed([q["text"] for q in irr]) @ T.T


# ---------------------------------------------------------------- main
def tune_lam(B, C, gold, mask, grid=(0.25, 0.5, 1, 1.5, 2, 3, 4)):
    """λ maximising recall@8 (then @5) on the rows in mask."""
    best = max(grid, key=lambda l: (rec(ranks_of(hybrid(B[mask], C[mask], l), gold[mask]))[2],
                                    rec(ranks_of(hybrid(B[mask], C[mask], l), gold[mask]))[1]))
    return best


def fmt(r):
    return " / ".join(f"{x:.1f}" for x in r)


def adaptive(H, gold, Hi, taus, cap=20):
    """Set = tools with H >= tau * best (best > 0), at most cap. Returns rows (tau, recall, mean, median, irr mean, irr median)."""
    rows = []
    for tau in taus:
        def sets(M):
            mx = M.max(1, keepdims=True)
            keep = M >= tau * mx
            order = np.argsort(-M, 1).argsort(1)
            keep &= order < cap
            return keep
        k = sets(H)
        hit = k[np.arange(len(H)), gold]
        sz = k.sum(1)
        ki = sets(Hi).sum(1)
        rows.append((tau, 100 * hit.mean(), sz.mean(), np.median(sz), ki.mean(), np.median(ki)))
    return rows


def main():
    out = []
    P = lambda *a: (print(*a, flush=True), out.append(" ".join(str(x) for x in a)))
    tools, qs, irr, gold, B, Bi, half = setup()
    htools, hqs, _, hgold, hB, _, hhalf = setup(HO)
    _, _, hirr, _, _, _, _ = setup(HO)
    # live_irrelevance against the 817-tool shared catalog (as toolgate's docs do)
    bm = BM25(tools)
    hBi = np.array([bm.scores(q["text"]) for q in hirr])
    src = np.array([q["src"] for q in hqs])
    ho_live = src == "live_multiple"   # the truly held-out part (multiple is shared)

    raw = np.load("cache/static_raw384.npy")
    p = np.load("cache/wordpiece_p.npy")
    from static import pca
    E256, var256 = pca(raw, 256)
    w_sif = 1e-4 / (1e-4 + np.where(p > 0, p, p[p > 0].min()))
    st_z = Static(dims=256, weighting="zipf", table=raw)
    st_s = Static(dims=None, weighting="none", table=(E256 * w_sif[:, None]).astype(np.float32))
    m = {}
    m["static-256 zipf"] = static_matrices(st_z, tools, qs, irr) + static_matrices(st_z, htools, hqs, [])[:1] + (st_z.embed([q["text"] for q in hirr]) @ st_z.embed([tool_text(t) for t in tools]).T,)
    m["static-256 sif(wordfreq)"] = static_matrices(st_s, tools, qs, irr) + static_matrices(st_s, htools, hqs, [])[:1] + (st_s.embed([q["text"] for q in hirr]) @ st_s.embed([tool_text(t) for t in tools]).T,)
    T, Q, I = np.load("cache/full_tools.npy"), np.load("cache/full_qs.npy"), np.load("cache/full_irr.npy")
    hT, hQ, hI = np.load("cache/full_ho_tools.npy"), np.load("cache/full_ho_qs.npy"), np.load("cache/full_ho_irr.npy")
    m["full MiniLM"] = (Q @ T.T, I @ T.T, hQ @ hT.T, hI @ T.T)
    A, Bh = half == 0, half == 1

    P("## recall@k (k = " + ", ".join(map(str, KS)) + ")\n")
    P("| matcher | shared all (726) | half A (%d) | half B (%d) | held-out live half (%d) | held-out incl. multiple (%d) |" % (A.sum(), Bh.sum(), ho_live.sum(), len(hqs)))
    P("| --- | --- | --- | --- | --- | --- |")
    rows = [("BM25", B, hB)] + [(n, c[0], c[2]) for n, c in m.items()]
    for n, S, hS in rows:
        r, hr = ranks_of(S, gold), ranks_of(hS, hgold)
        P(f"| {n} | {fmt(rec(r))} | {fmt(rec(r, A))} | {fmt(rec(r, Bh))} | {fmt(rec(hr, ho_live))} | {fmt(rec(hr))} |")
    lams = {}
    for n, c in m.items():
        C, hC = c[0], c[2]
        lA, lB, lall = tune_lam(B, C, gold, A), tune_lam(B, C, gold, Bh), tune_lam(B, C, gold, np.ones(len(B), bool))
        lams[n] = lall
        rA = ranks_of(hybrid(B, C, lB), gold)  # half A scored with λ tuned on half B
        rB = ranks_of(hybrid(B, C, lA), gold)
        rall = ranks_of(hybrid(B, C, lall), gold)
        hr = ranks_of(hybrid(hB, hC, lall), hgold)
        P(f"| hybrid BM25 + λ·cos [{n}] (λ all={lall}, A={lA}, B={lB}) | {fmt(rec(rall))} (in-sample λ) | {fmt(rec(rA, A))} (λ from B) | {fmt(rec(rB, Bh))} (λ from A) | {fmt(rec(hr, ho_live))} (λ from shared) | {fmt(rec(hr))} |")
        r, hr = ranks_of(rrf(B, C), gold), ranks_of(rrf(hB, hC), hgold)
        P(f"| RRF(BM25, cos) k=60 [{n}] (nothing tuned) | {fmt(rec(r))} | {fmt(rec(r, A))} | {fmt(rec(r, Bh))} | {fmt(rec(hr, ho_live))} | {fmt(rec(hr))} |")

    P("\n## adaptive set: hybrid >= tau * best, cap 20 (tau chosen on shared = in-sample; live_irrelevance and held-out half are held out)\n")
    for n in ["static-256 zipf", "full MiniLM"]:
        C, Ci, hC, hCi = m[n]
        lam = lams[n]
        P(f"\n### {n}, λ = {lam}\n")
        P("| tau | shared recall | size mean | median | irrelevance(240) mean | median | held-out recall (all 727) | size mean | median | live_irrelevance(884) mean | median |")
        P("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        taus = [0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9]
        a = adaptive(hybrid(B, C, lam), gold, hybrid(Bi, Ci, lam), taus)
        b = adaptive(hybrid(hB, hC, lam), hgold, hybrid(hBi, hCi, lam), taus)
        for x, y in zip(a, b):
            P(f"| {x[0]} | {x[1]:.1f} | {x[2]:.1f} | {x[3]:.0f} | {x[4]:.1f} | {x[5]:.0f} | {y[1]:.1f} | {y[2]:.1f} | {y[3]:.0f} | {y[4]:.1f} | {y[5]:.0f} |")
    P("\nBM25 alone, same rule:")
    a = adaptive(norm_bm25(B), gold, norm_bm25(Bi), [0.3, 0.4, 0.5, 0.6])
    for x in a:
        P(f"| {x[0]} | {x[1]:.1f} | {x[2]:.1f} | {x[3]:.0f} | {x[4]:.1f} | {x[5]:.0f} |")

    P("\n## nothing fits: best cosine per query\n")
    P("| matcher | best-cos pooled median [p10, p90] | irrelevance(240) median [p10, p90] | AUC shared | live_irrelevance(884) median | AUC pooled-heldout vs live_irr | floor (gold cos p3, shared) | gold≥floor & top-8 (shared / held-out) | tools ≥ floor on irrelevance: mean, median, share with 0 | same ∩ top-8: mean, median | live_irr ≥ floor: mean, median, share 0 |")
    P("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for n, (C, Ci, hC, hCi) in m.items():
        bp, bi, hbp, hbi = C.max(1), Ci.max(1), hC.max(1), hCi.max(1)
        gc = C[np.arange(len(C)), gold]
        floor = np.percentile(gc, 3)
        lam = lams[n]
        r8 = ranks_of(hybrid(B, C, lam), gold) <= 8
        hr8 = ranks_of(hybrid(hB, hC, lam), hgold) <= 8
        hgc = hC[np.arange(len(hC)), hgold]
        keep = 100 * (r8 & (gc >= floor)).mean(); hkeep = 100 * (hr8 & (hgc >= floor)).mean()
        cnt = (Ci >= floor).sum(1)
        Hi = hybrid(Bi, Ci, lam)
        top8 = np.argsort(-Hi, 1)[:, :8]
        cnt8 = np.array([(Ci[i, top8[i]] >= floor).sum() for i in range(len(Ci))])
        hcnt = (hCi >= floor).sum(1)
        q = lambda v: f"{np.median(v):.3f} [{np.percentile(v,10):.3f}, {np.percentile(v,90):.3f}]"
        P(f"| {n} | {q(bp)} | {q(bi)} | {auc(bp, bi):.3f} | {np.median(hbi):.3f} | {auc(hbp, hbi):.3f} | {floor:.3f} | {keep:.1f} / {hkeep:.1f} | {cnt.mean():.1f}, {np.median(cnt):.0f}, {100*(cnt==0).mean():.0f}% | {cnt8.mean():.1f}, {np.median(cnt8):.0f} | {hcnt.mean():.1f}, {np.median(hcnt):.0f}, {100*(hcnt==0).mean():.0f}% |")

    # top-30 irrelevance questions by best full cosine, for manual judgement
    C, Ci = m["full MiniLM"][:2]
    o = np.argsort(-Ci.max(1))[:30]
    with open("irrelevance_top30.tsv", "w") as f:
        for i in o:
            j = Ci[i].argmax()
            f.write(f"{irr[i]['id']}\t{Ci[i, j]:.3f}\t{tools[j]['name']}\t{irr[i]['text'][:160]!r}\t{tools[j]['desc'][:160]!r}\n")
    with open("results.md", "w") as f:
        f.write("\n".join(out) + "\n")
    json.dump({"lams": lams, "var256": var256}, open("results.json", "w"))


if __name__ == "__main__":
    main()
