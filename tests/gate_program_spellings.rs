//! Issue 30, item 7: program spellings. A program named by a relative or
//! absolute path is the program itself: `../../bin/rm -rf /` is denied
//! like `rm -rf /` (not only asked about as a script from outside the
//! project), and so is a wrapper named by such a path. A whole command
//! quoted as the program name (`'git status'`, `bash -lc "'git
//! status'"`) names no known program.

mod round3;
use round3::{allowed, expect, guard_expect};
use toolgate::gate::Action;

#[test]
fn a_program_named_by_a_path_gets_the_rules_of_its_name() {
    expect(
        Action::Deny,
        "shell.rm.recursive-root",
        &[
            "../../bin/rm -rf /",
            "./../../../bin/rm -rf ~",
            "/usr/bin/../../bin/rm -rf /",
            "/usr//bin/./rm -rf /",
            "/opt/tools/bin/rm -rf ~",
            "/usr/bin/env rm -rf /",
            "../../usr/bin/env rm -rf /",
            "cd /usr/bin && ./rm -rf /",
        ],
    );
    allowed(&[
        "/usr/bin/env rm -rf build",
        "/usr/bin/rm -rf build",
        "/bin/ls -la",
        "./scripts/build.sh",
        "./target/release/app --help",
    ]);
    // Outside the project and the system directories it is still a script
    // from elsewhere.
    expect(
        Action::Ask,
        "shell.script-outside",
        &["../bin/ls", "/opt/x/rm -f build/x"],
    );
}

#[test]
fn a_quoted_whole_command_is_no_known_program() {
    expect(
        Action::Ask,
        "shell.unknown-command",
        &[
            "bash -lc \"'git status'\"",
            "'git status'",
            "\"rm -rf ~\"",
            "\"ls -la\"",
            "sudo 'git status'",
        ],
    );
    allowed(&["bash -lc 'git status'", "'git' status", "\"ls\" -la"]);
}

#[test]
fn guard_reads_program_spellings() {
    guard_expect(7, "shell.rm.recursive-root", &["../../bin/rm -rf /"]);
    guard_expect(6, "shell.unknown-command", &["bash -lc \"'git status'\""]);
    guard_expect(0, "", &["/usr/bin/env rm -rf build"]);
}
