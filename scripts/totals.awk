# One line of totals over a `cargo test` log (scripts/test feeds it the
# whole run): the Rust tests (every `test result:` line of libtest) and the
# SDK flows (the `WHAT (pytest): N passed, M failed, K skipped in T` lines that
# tests/mcp_proxy.rs, tests/mcp_inspector.rs and tests/python_package.rs print through
# tests/pytest_summary). tests/test_totals.rs checks it on sample logs.
/^test result:/ {
    for (i = 1; i <= NF; i++) {
        if ($(i+1) ~ /^passed;?$/) rp += $i
        if ($(i+1) ~ /^failed;?$/) rf += $i
        if ($(i+1) ~ /^ignored;?$/) ri += $i
    }
    bins++
}
/ \(pytest\): / {
    for (i = 1; i <= NF; i++) {
        if ($(i+1) ~ /^passed,?$/) pp += $i
        if ($(i+1) ~ /^(failed|errors?),?$/) pf += $i
        if ($(i+1) ~ /^skipped,?$/) ps += $i
    }
}
END {
    printf "== totals: Rust %d passed, %d failed, %d ignored (%d binaries); SDK flows %d passed, %d failed, %d skipped\n", rp, rf, ri, bins, pp, pf, ps
    printf "totals: %d passed, %d failed, %d skipped\n", rp + pp, rf + pf, ri + ps
}
