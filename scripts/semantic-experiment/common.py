"""Data loading, pooled catalog, split and BM25 baseline (mirrors toolgate's selection.toml)."""
import os
WORK = os.environ.get("SEMEXP_WORK", "/tmp/semexp")  # model (pkg/), caches, held-out cut
import hashlib, json, math, re
from collections import Counter, defaultdict
import numpy as np
import snowballstemmer

D = os.environ.get("BFCL_DATA", os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../../shared/data/bfcl")) + "/"
STOP = {"the", "a", "an", "to", "of", "in", "for", "and", "or", "is", "are"}
_stem = snowballstemmer.stemmer("english")


def jl(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def user_text(q):
    turns = q["question"]
    msgs = [m["content"] for t in turns for m in t if m.get("role") == "user"]
    return "\n".join(msgs)


def split_name(n):
    s = re.sub(r"[_.\-/]", " ", n)
    s = re.sub(r"([a-z])([A-Z])", r"\1 \2", s)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", s)
    s = re.sub(r"([A-Za-z])([0-9])", r"\1 \2", s)
    s = re.sub(r"([0-9])([A-Za-z])", r"\1 \2", s)
    return s.lower()


def load(root=D):
    """Returns tools (list of dict name, desc, params), questions (list of dict id,text,gold,split), irrelevance questions."""
    tools = {}
    qs = []
    for fn in ["BFCL_v4_multiple.json", "BFCL_v4_live_multiple.json"]:
        ans = {a["id"]: list(a["ground_truth"][0].keys())[0] for a in jl(root + "possible_answer/" + fn)}
        for q in jl(root + fn):
            for f in q["function"]:
                t = tools.setdefault(f["name"], {"name": f["name"], "descs": [], "params": []})
                d = (f.get("description") or "").strip()
                if d and d not in t["descs"]:
                    t["descs"].append(d)
                for p in (f.get("parameters") or {}).get("properties", {}) or {}:
                    if p not in t["params"]:
                        t["params"].append(p)
            qs.append({"id": q["id"], "text": user_text(q), "gold": ans[q["id"]], "src": fn.split("_v4_")[1][:-5]})
    irr = [{"id": q["id"], "text": user_text(q)} for q in jl(root + "BFCL_v4_irrelevance.json")]
    names = sorted(tools)
    tl = []
    for n in names:
        t = tools[n]
        t["desc"] = " ".join(t["descs"])
        tl.append(t)
    for q in qs + irr:
        q["half"] = hashlib.sha1(q["id"].encode()).digest()[0] % 2  # 0 = half A, 1 = half B
    return tl, qs, irr


def tool_text(t, params=True):
    s = split_name(t["name"]) + ". " + t["desc"]
    if params and t["params"]:
        s += " Parameters: " + ", ".join(split_name(p) for p in t["params"])
    return s


# ---------------- BM25 ----------------
def terms(text):
    out = []
    for run in re.findall(r"\w+", text):
        for piece in split_name(run).split():
            if len(piece) < 2 or piece in STOP:
                continue
            out.append(piece if piece.isdigit() else _stem.stemWord(piece))
    return out


class BM25:
    def __init__(self, tools, k1=1.2, b=0.3, wn=3.0, wd=1.0, wp=1.0):
        self.k1, self.b = k1, b
        docs = []
        for t in tools:
            tf = Counter()
            ln = 0.0
            for w, txt in ((wn, t["name"]), (wd, t["desc"]), (wp, " ".join(t["params"]))):
                ts = terms(txt)
                for x in ts:
                    tf[x] += w
                ln += w * len(ts)
            docs.append((tf, ln))
        N = len(docs)
        avg = sum(l for _, l in docs) / N
        df = Counter(x for tf, _ in docs for x in tf)
        self.idf = {x: math.log(1 + (N - d + 0.5) / (d + 0.5)) for x, d in df.items()}
        self.post = defaultdict(list)
        for i, (tf, ln) in enumerate(docs):
            for x, f in tf.items():
                w = self.idf[x] * f * (k1 + 1) / (f + k1 * (1 - b + b * ln / avg))
                self.post[x].append((i, w))
        self.N = N

    def scores(self, text):
        s = np.zeros(self.N)
        for x in set(terms(text)):
            for i, w in self.post.get(x, ()):
                s[i] += w
        return s
