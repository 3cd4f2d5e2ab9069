import time, numpy as np
from static import Static
from common import load
tools, qs, _ = load()
raw = np.load("cache/static_raw384.npy")
st = Static(dims=256, weighting="zipf", table=raw)
texts = [q["text"] for q in qs]
def med(f, n):
    ts = []
    for i in range(n):
        t = time.perf_counter(); f(i); ts.append(time.perf_counter() - t)
    return 1e6 * np.median(ts)
print("static tokenise only (µs, median over queries):", round(med(lambda i: st.tok.encode(texts[i % len(texts)], add_special_tokens=False), 726), 1))
print("static tokenise+embed (µs):", round(med(lambda i: st.embed([texts[i % len(texts)]]), 726), 1))
print("query tokens median:", np.median([len(st.ids(t)) for t in texts]))
for d in (128, 256, 384):
    T = np.random.randn(1000, d).astype(np.float32); q = np.random.randn(d).astype(np.float32)
    print(f"numpy 1000x{d} f32 dot products (µs):", round(med(lambda i: T @ q, 2000), 1))
    T16 = T.astype(np.float16); q16 = q.astype(np.float16)
