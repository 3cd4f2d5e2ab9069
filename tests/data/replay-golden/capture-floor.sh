#!/bin/sh
# Captures the expected outputs of `fit --fit floor` and of
# `fit --transitions-out` (tests/replay_golden.rs). The files in
# expected/floor-* and expected/transitions-* were written by the binary of
# commit 58416f4 (both read the trace whole, before they were streamed):
# run from the crate root,
#   sh tests/data/replay-golden/capture-floor.sh target/debug/toolgate
set -e
BIN=${1:-target/debug/toolgate}
D=tests/data/replay-golden
OUT=${2:-$D/expected}
mkdir -p $OUT
# name|trace|catalog args
while IFS='|' read -r name trace cat; do
  [ -z "$name" ] && continue
  for floor in min-score min-score-idf min-coverage min-share; do
    # the text report for one key (the same numbers as the JSON)
    fmts=json; [ $floor = min-score-idf ] && fmts="text json"
    for fmt in $fmts; do
      f=$OUT/floor-$name-$floor.$fmt
      $BIN fit --fit floor --floor $floor --policy $D/floor.toml --trace $trace $cat \
        --skip-invalid --holdout 0.3 --target-recall 0.8 --format $fmt > $f 2>&1 || echo "exit $?" >> $f
    done
  done
  # transitions (with the floor fit, all sessions counted)
  $BIN fit --fit floor --policy $D/floor.toml --trace $trace $cat --skip-invalid --holdout 0 \
    --transitions-out $OUT/transitions-$name.toml > /dev/null 2>&1 || true
done <<LIST
sessions|examples/sessions.jsonl|
sessions-interleaved|$D/sessions-interleaved.jsonl|
sessions-bad|$D/sessions-bad.jsonl|
pooled|$D/bfcl/pooled.jsonl|--tools $D/bfcl/catalog.json
pooled-interleaved|$D/pooled-interleaved.jsonl|--tools $D/bfcl/catalog.json
irrelevance|$D/bfcl/irrelevance.jsonl|--tools $D/bfcl/catalog.json
multiple|$D/bfcl/multiple.jsonl|--tools $D/bfcl/catalog.json
multi_turn|$D/bfcl/multi_turn.jsonl|--tools $D/bfcl/multi_turn_catalog.json
multi_turn-interleaved|$D/multi_turn-interleaved.jsonl|--tools $D/bfcl/multi_turn_catalog.json
LIST
# transitions with the weight fit (training sessions only), text and json
for name in sessions multi_turn; do
  case $name in
    sessions) trace=examples/sessions.jsonl; cat="";;
    multi_turn) trace=$D/bfcl/multi_turn.jsonl; cat="--tools $D/bfcl/multi_turn_catalog.json";;
  esac
  $BIN fit --policy $D/selection.toml --trace $trace $cat --skip-invalid \
    --transitions-out $OUT/transitions-$name-weights.toml > $OUT/transitions-$name-weights.text 2>&1 || echo "exit $?" >> $OUT/transitions-$name-weights.text
done
# errors without --skip-invalid
for name in sessions-bad sessions-unknown; do
  f=$OUT/floor-$name-noskip.out
  $BIN fit --fit floor --policy $D/floor.toml --trace $D/$name.jsonl > $f 2>&1 || echo "exit $?" >> $f
  f=$OUT/transitions-$name-noskip.out
  $BIN fit --policy $D/selection.toml --trace $D/$name.jsonl --transitions-out /dev/null > $f 2>&1 || echo "exit $?" >> $f
done
