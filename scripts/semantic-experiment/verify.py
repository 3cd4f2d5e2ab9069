import time, numpy as np
from minilm import MiniLM
m = MiniLM()
S = ["How do I delete a file", "remove a file from disk", "weather forecast in Paris",
     "Convert 100 euro to USD", "currency conversion between two currencies", "That is a happy person", "That is a very happy person", "Today is a sunny day"]
E = m.encode(S)
C = E @ E.T
for i in range(len(S)):
    print(f"{S[i][:40]:40s}", " ".join(f"{c:.3f}" for c in C[i]))
print("first 5 dims of 'This is an example sentence':", m.encode(["This is an example sentence"])[0][:5])
E = m.encode(["The weather is lovely today.", "It's so sunny outside!", "He drove to the stadium."])
print("quickstart triple:\n", np.round(E @ E.T, 4))
print("full vector head 'This is an example sentence':", np.array2string(m.encode(["This is an example sentence"])[0][:10], precision=8))
q = ["Convert 100 euro to USD"] 
ids = [m.tok.encode(q[0]).ids]
for _ in range(2): m.encode_ids(ids, normalize=True)
ts=[]
for _ in range(20):
    t=time.perf_counter(); m.encode_ids(ids); ts.append(time.perf_counter()-t)
print("ms per short query (%d tokens): median %.2f" % (len(ids[0]), 1e3*np.median(ts)))
ids = [m.tok.encode("I need to book a flight from New York to San Francisco next Friday for two adults, economy class, and also find a hotel near the airport with free parking").ids]
ts=[]
for _ in range(20):
    t=time.perf_counter(); m.encode_ids(ids); ts.append(time.perf_counter()-t)
print("ms per longer query (%d tokens): median %.2f" % (len(ids[0]), 1e3*np.median(ts)))
