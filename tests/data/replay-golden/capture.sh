#!/bin/sh
# Captures the expected outputs of `replay` and `compare` (tests/replay_golden.rs)
# with a given binary. The files in expected/ were written by the binary of
# commit 389b7bc (before streaming, issue 28): run from the crate root,
#   sh tests/data/replay-golden/capture.sh target/debug/toolgate
# with policies/selection.toml as it was then, now frozen beside this script as
# selection.toml (issue 24 changed the shipped one; tests/replay_golden.rs
# replays the frozen copy).
set -e
BIN=${1:-target/debug/toolgate}
D=tests/data/replay-golden
OUT=${2:-$D/expected}
mkdir -p $OUT
# name|trace|catalog args
while IFS='|' read -r name trace cat; do
  [ -z "$name" ] && continue
  for pol in default selection; do
    for fmt in text json; do
      $BIN replay --policy policies/$pol.toml --trace $trace $cat --format $fmt --skip-invalid > $OUT/replay-$name-$pol.$fmt
    done
  done
  $BIN compare --policy-a policies/default.toml --policy-b policies/selection.toml --trace $trace $cat --skip-invalid --show 1000 > $OUT/compare-$name.text
  $BIN compare --policy-a policies/default.toml --policy-b policies/selection.toml --trace $trace $cat --skip-invalid > $OUT/compare-$name-noshow.text
  $BIN compare --policy-a policies/default.toml --policy-b policies/selection.toml --trace $trace $cat --skip-invalid --format json > $OUT/compare-$name.json
done <<LIST
sessions|examples/sessions.jsonl|
sessions-interleaved|$D/sessions-interleaved.jsonl|
sessions-bad|$D/sessions-bad.jsonl|
multiple|$D/bfcl/multiple.jsonl|--tools $D/bfcl/catalog.json
live_multiple|$D/bfcl/live_multiple.jsonl|--tools $D/bfcl/catalog.json
pooled|$D/bfcl/pooled.jsonl|--tools $D/bfcl/catalog.json
pooled-interleaved|$D/pooled-interleaved.jsonl|--tools $D/bfcl/catalog.json
irrelevance|$D/bfcl/irrelevance.jsonl|--tools $D/bfcl/catalog.json
multi_turn|$D/bfcl/multi_turn.jsonl|--tools $D/bfcl/multi_turn_catalog.json
multi_turn-interleaved|$D/multi_turn-interleaved.jsonl|--tools $D/bfcl/multi_turn_catalog.json
LIST
# Errors without --skip-invalid: the message and exit code.
for pol in default selection; do
  $BIN replay --policy policies/$pol.toml --trace $D/sessions-bad.jsonl > $OUT/replay-bad-noskip-$pol.out 2>&1 || echo "exit $?" >> $OUT/replay-bad-noskip-$pol.out
done
for pol in default selection; do
  $BIN replay --policy policies/$pol.toml --trace $D/sessions-unknown.jsonl > $OUT/replay-unknown-noskip-$pol.out 2>&1 || echo "exit $?" >> $OUT/replay-unknown-noskip-$pol.out
done
$BIN compare --policy-a policies/default.toml --policy-b policies/selection.toml --trace $D/sessions-unknown.jsonl > $OUT/compare-unknown-noskip.out 2>&1 || echo "exit $?" >> $OUT/compare-unknown-noskip.out
