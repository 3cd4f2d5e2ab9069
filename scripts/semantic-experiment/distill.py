"""model2vec-style static table: every vocab token through the model alone ([CLS] tok [SEP]), mean-pooled (no L2)."""
import time, numpy as np
from minilm import MiniLM
m = MiniLM()
V = m.w["embeddings.word_embeddings.weight"].shape[0]
seqs = [[101, i, 102] for i in range(V)]
t = time.time()
E = m.encode_ids(seqs, batch=512, normalize=False)
np.save("cache/static_raw384.npy", E.astype(np.float32))
print("distilled", E.shape, "%.1fs" % (time.time() - t))
