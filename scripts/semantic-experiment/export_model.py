"""Export the static table as a Model2Vec folder that toolgate ships.

Reads the distilled per-wordpiece table of all-MiniLM-L6-v2
(`cache/static_raw384.npy`, written by `distill.py`) and writes, to the
folder given as the first argument (default
`policies/models/minilm-static-128` under the repository):

* `model.safetensors`: `embeddings` = the table reduced by PCA to 128
  dimensions and weighted by Zipf-SIF (`static.py`), quantised to int8 with
  one scale per row; `weights` = those per-row scales (f32), which
  model2vec-rs multiplies into each row before mean pooling;
* `tokenizer.json`: the model's own WordPiece tokenizer, without the
  truncation and padding of the transformer (static pooling needs neither);
* `config.json`: `{"normalize": true, ...}` (unit vectors, so a dot
  product is the cosine).

These are the choices `eval.py` and `extra.py` measured ("dims=128 int8").
"""
import hashlib
import json
import os
import sys

import numpy as np
from safetensors.numpy import save_file

from static import MD, RAW, pca, zipf_sif

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "policies/models/minilm-static-128")
os.makedirs(out, exist_ok=True)

E, var = pca(np.load(RAW), 128)
E = E * zipf_sif(len(E))[:, None]
scale = np.abs(E).max(1, keepdims=True) / 127.0
scale[scale == 0] = 1.0
q = np.round(E / scale).astype(np.int8)
save_file({"embeddings": q, "weights": scale[:, 0].astype(np.float32)},
          os.path.join(out, "model.safetensors"))

tok = json.load(open(os.path.join(MD, "tokenizer.json")))
tok["truncation"] = None
tok["padding"] = None
with open(os.path.join(out, "tokenizer.json"), "w") as f:
    json.dump(tok, f, ensure_ascii=False, separators=(",", ":"))
with open(os.path.join(out, "config.json"), "w") as f:
    json.dump({"model_type": "model2vec", "architectures": ["StaticModel"],
               "tokenizer_name": "sentence-transformers/all-MiniLM-L6-v2",
               "apply_pca": 128, "apply_zipf": True, "hidden_dim": 128,
               "normalize": True}, f, indent=2)
    f.write("\n")
for name in ("model.safetensors", "tokenizer.json", "config.json"):
    p = os.path.join(out, name)
    print(name, os.path.getsize(p), hashlib.sha256(open(p, "rb").read()).hexdigest()[:16])
print(f"PCA variance kept: {var:.3f}")
