#!/usr/bin/env python3
"""Split a trace by session, with toolgate's hash split (replay::fit::is_holdout:
FNV-1a of the session id, held out when hash % 1e6 < fraction * 1e6).

Usage: split-trace.py TRACE FRACTION TRAIN_OUT HELDOUT_OUT
"""
import json
import sys

trace, fraction, train_out, test_out = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]


def held_out(session):
    h = 0xCBF29CE484222325
    for b in str(session).encode():
        h ^= b
        h = (h * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return (h % 1_000_000) < fraction * 1_000_000


with open(trace) as f, open(train_out, "w") as a, open(test_out, "w") as b:
    for line in f:
        if line.strip():
            (b if held_out(json.loads(line)["session"]) else a).write(line)
