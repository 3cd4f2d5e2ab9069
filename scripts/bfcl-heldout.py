#!/usr/bin/env python3
"""Held-out BFCL data for docs/selection.md (see scripts/selection-experiments.sh).

../shared/data/bfcl holds every second entry of BFCL v4 live_multiple (the
odd positions, 526 entries): the half policies/selection.toml was tuned on.
This script takes the other half (the even positions, 527 entries) and the
live_irrelevance set from the same PyPI package (bfcl-eval 2026.3.23, Apache
2.0; the wheel is passed in, fetched with `pip download`), and writes a BFCL
data folder that `toolgate import bfcl` reads:

  OUT/BFCL_v4_multiple.json            multiple (unchanged; in-sample)
  OUT/BFCL_v4_live_multiple.json       the held-out half of live_multiple
  OUT/BFCL_v4_irrelevance.json         live_irrelevance (held out)
  OUT/possible_answer/...              their answers

Usage: bfcl-heldout.py WHEEL SHARED_BFCL_DIR OUT
"""
import json
import os
import sys
import zipfile

wheel, shared, out = sys.argv[1:4]
z = zipfile.ZipFile(wheel)


def lines(name):
    return [l for l in z.read("bfcl_eval/data/" + name).decode().splitlines() if l.strip()]


with open(os.path.join(shared, "BFCL_v4_live_multiple.json")) as f:
    shared_ids = {json.loads(l)["id"] for l in f if l.strip()}
os.makedirs(os.path.join(out, "possible_answer"), exist_ok=True)
live = lines("BFCL_v4_live_multiple.json")
held = [l for l in live if json.loads(l)["id"] not in shared_ids]
assert len(live) - len(held) == len(shared_ids), "the shared half is not a subset of the package's file"
held_ids = {json.loads(l)["id"] for l in held}
answers = [l for l in lines("possible_answer/BFCL_v4_live_multiple.json") if json.loads(l)["id"] in held_ids]
files = {
    "BFCL_v4_live_multiple.json": held,
    "possible_answer/BFCL_v4_live_multiple.json": answers,
    "BFCL_v4_multiple.json": lines("BFCL_v4_multiple.json"),
    "possible_answer/BFCL_v4_multiple.json": lines("possible_answer/BFCL_v4_multiple.json"),
    "BFCL_v4_irrelevance.json": lines("BFCL_v4_live_irrelevance.json"),
}
for name, ls in files.items():
    with open(os.path.join(out, name), "w") as f:
        f.write("\n".join(ls) + "\n")
print(f"held-out live_multiple: {len(held)} entries; live_irrelevance: {len(files['BFCL_v4_irrelevance.json'])} entries")
