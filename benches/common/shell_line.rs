//! The 200-byte command line of the gate benchmark, shared by
//! `benches/gate.rs` and `examples/shell_profile.rs` (the profiler's loop),
//! so both measure the same line.

/// A realistic 200-byte command line: a compound with a pipe, a
/// substitution, quotes and redirections.
pub fn command_200() -> String {
    let mut c = String::from(
        "cd target/tmp && cargo build --release 2>&1 | tee build.log && grep -n \"warning\" build.log | head -20 && echo \"built $(date +%s)\" >> times.txt && git diff --stat HEAD~1 -- src/",
    );
    while c.len() < 200 {
        c.push_str(" docs/");
    }
    c.truncate(200);
    c
}
