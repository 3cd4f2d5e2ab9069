"""Full MiniLM embeddings of the pooled catalog, the questions and the irrelevance questions (cached)."""
import time, numpy as np
from common import load, tool_text
from minilm import MiniLM
tools, qs, irr = load()
print(len(tools), "tools", len(qs), "questions", len(irr), "irrelevance")
m = MiniLM()
for name, texts in [("tools", [tool_text(t) for t in tools]), ("tools_noparam", [tool_text(t, False) for t in tools]),
                    ("qs", [q["text"] for q in qs]), ("irr", [q["text"] for q in irr])]:
    t = time.time(); E = m.encode(texts, batch=16); np.save(f"cache/full_{name}.npy", E)
    print(name, E.shape, "%.1fs" % (time.time() - t), flush=True)
