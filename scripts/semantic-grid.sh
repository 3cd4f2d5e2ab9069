#!/usr/bin/env bash
# The tuning grid of the semantic_match round of issue 10 (docs/selection.md,
# "The semantic match"): policies/selection.toml with w_semantic, the
# threshold and the memory decay varied, replayed on the TUNING data only
# (pooled shared set, multi-turn training half, shared irrelevance), then the
# selection rule fixed before any held-out replay:
#   eligible: pooled median <= 7 and multi-turn training median <= 9;
#   chosen:   most calls found over both sets; ties -> fewest tools on irrelevance.
#
#   bash scripts/semantic-grid.sh [OUT]   (OUT as prepared by scripts/selection-experiments.sh)
#
# 160 replays x 3 data sets: about 3 minutes with the release binary.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${TOOLGATE_BIN:-$PWD/target/release/toolgate}
OUT=${1:-/tmp/toolgate-selection}
[ -f "$OUT/mt-train.jsonl" ] || { echo "run scripts/selection-experiments.sh $OUT first (it prepares the data)" >&2; exit 2; }
C=$OUT/bfcl/catalog.json; MC=$OUT/bfcl/multi_turn_catalog.json
trap 'rm -f policies/.grid.toml' EXIT
policy() { # threshold w_semantic decay -> policies/.grid.toml (relative data paths still resolve)
    python3 - "$@" <<'PY'
import re, sys
T, w, decay = sys.argv[1:4]
t = open("policies/selection.toml").read()
t = re.sub(r"^threshold = [0-9.]+ ", f"threshold = {T} ", t, count=1, flags=re.M)
t = re.sub(r"^w_semantic = [0-9.]+ ", f"w_semantic = {w} ", t, count=1, flags=re.M)
t = re.sub(r"^decay = [0-9.]+ ", f"decay = {decay} ", t, count=1, flags=re.M)
open("policies/.grid.toml", "w").write(t)
PY
}
summary() { sed -E 's/recall ([0-9.]+)% \(([0-9]+)\/.*median ([0-9.]+),.*/\1 \2 \3/'; }
: > "$OUT/semantic-grid.txt"
for decay in 0.15 0.3; do
for w in 0 0.2 0.4 0.6 0.8; do
for T in 0.38 0.42 0.46 0.50 0.54 0.58 0.62 0.66 0.70 0.74 0.78 0.82 0.86 0.90 0.94 0.98; do
    policy $T $w $decay
    pooled=$($B replay --policy policies/.grid.toml --trace "$OUT/bfcl/pooled.jsonl" --tools "$C" | tail -1 | summary)
    mt=$($B replay --policy policies/.grid.toml --trace "$OUT/mt-train.jsonl" --tools "$MC" | tail -1 | summary)
    irr=$($B replay --policy policies/.grid.toml --trace "$OUT/bfcl/irrelevance.jsonl" --tools "$C" --format json | python3 -c '
import json, sys; d = json.load(sys.stdin)["summary"]["no_call_active"]; print("%.2f %s" % (d["mean"], d["median"]))')
    echo "$w $T $decay | $pooled | $mt | $irr" | tee -a "$OUT/semantic-grid.txt"
done; done; done
echo "== chosen (w_semantic threshold decay | pooled recall calls median | multi-turn recall calls median | irrelevance mean median)"
python3 - "$OUT/semantic-grid.txt" <<'PY'
import sys
rows = []
for l in open(sys.argv[1]):
    a, p, m, i = [x.split() for x in l.split("|")]
    rows.append((a, p, m, i, int(p[1]) + int(m[1]), float(i[0])))
ok = [r for r in rows if float(r[1][2]) <= 7 and float(r[2][2]) <= 9]
ok.sort(key=lambda r: (-r[4], r[5]))
for r in ok[:5]:
    print(" ".join(r[0]), "|", " ".join(r[1]), "|", " ".join(r[2]), "|", " ".join(r[3]), "| calls", r[4])
PY
