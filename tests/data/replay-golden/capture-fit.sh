#!/bin/sh
# Captures the expected outputs of `fit` and `compare --plot`
# (tests/replay_golden.rs) with a given binary. The files in expected/fit-*
# and expected/plot-* were written by the binary of commit d8fa7cf (the
# whole-matrix fit and the in-memory plot, before issue 28's second round):
# run from the crate root,
#   sh tests/data/replay-golden/capture-fit.sh target/debug/toolgate
set -e
BIN=${1:-target/debug/toolgate}
D=tests/data/replay-golden
OUT=${2:-$D/expected}
mkdir -p $OUT
# name|trace|policy|catalog args
while IFS='|' read -r name trace pol cat; do
  [ -z "$name" ] && continue
  for fmt in text json; do
    $BIN fit --policy policies/$pol.toml --trace $trace $cat --skip-invalid --format $fmt > $OUT/fit-$name-$pol.$fmt 2>&1 || echo "exit $?" >> $OUT/fit-$name-$pol.$fmt
  done
done <<LIST
sessions|examples/sessions.jsonl|default|
sessions|examples/sessions.jsonl|selection|
sessions-interleaved|$D/sessions-interleaved.jsonl|default|
multiple|$D/bfcl/multiple.jsonl|selection|--tools $D/bfcl/catalog.json
pooled|$D/bfcl/pooled.jsonl|default|--tools $D/bfcl/catalog.json
pooled|$D/bfcl/pooled.jsonl|selection|--tools $D/bfcl/catalog.json
multi_turn|$D/bfcl/multi_turn.jsonl|default|--tools $D/bfcl/multi_turn_catalog.json
multi_turn|$D/bfcl/multi_turn.jsonl|selection|--tools $D/bfcl/multi_turn_catalog.json
LIST
$BIN fit --policy policies/selection.toml --trace $D/bfcl/pooled.jsonl --tools $D/bfcl/catalog.json --negatives 50 --holdout 0.3 --target-recall 0.9 > $OUT/fit-pooled-negatives.text
# compare --plot: the report and the SVG.
for name in sessions pooled multi_turn; do
  case $name in
    sessions) trace=examples/sessions.jsonl; cat="";;
    pooled) trace=$D/bfcl/pooled.jsonl; cat="--tools $D/bfcl/catalog.json";;
    multi_turn) trace=$D/bfcl/multi_turn.jsonl; cat="--tools $D/bfcl/multi_turn_catalog.json";;
  esac
  $BIN compare --policy-a policies/default.toml --policy-b policies/selection.toml --trace $trace $cat --skip-invalid --plot $OUT/plot-$name.svg > $OUT/plot-$name.text
done
