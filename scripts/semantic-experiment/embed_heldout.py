"""Full MiniLM embeddings of the held-out data (multiple + other live_multiple half; live_irrelevance)."""
import os
WORK = os.environ.get("SEMEXP_WORK", "/tmp/semexp")  # model (pkg/), caches, held-out cut
import time, numpy as np
from common import load, tool_text
from minilm import MiniLM
m = MiniLM()
# held-out: multiple + the other live_multiple half (own catalog), live_irrelevance
ht, hq, hi = load(os.path.join(WORK, "heldout/"))
print("heldout", len(ht), "tools", len(hq), "questions", len(hi), "live_irrelevance")
for name, texts in [("ho_tools", [tool_text(t) for t in ht]), ("ho_qs", [q["text"] for q in hq]), ("ho_irr", [q["text"] for q in hi])]:
    t = time.time(); E = m.encode(texts, batch=16); np.save(f"cache/full_{name}.npy", E)
    print(name, E.shape, "%.1fs" % (time.time() - t), flush=True)
