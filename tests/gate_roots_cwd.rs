//! The path roots and the process's working directory (src/gate/path.rs,
//! `roots`): a relative root (the shipped `.`) follows the process's
//! directory when it changes, so a cached resolution can never keep
//! calling the old directory "inside"; absolute roots do not depend on it.
//!
//! A test binary of its own with a single test: it changes the process's
//! working directory, which would race tests running in parallel beside it.

use std::path::Path;

use toolgate::gate::config::shipped;
use toolgate::gate::path::{Placement, place, roots};

#[test]
fn relative_roots_follow_the_working_directory_absolute_roots_do_not() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    // the real paths: placement compares resolved paths with the roots
    let a = a.path().canonicalize().unwrap();
    let b = b.path().canonicalize().unwrap();
    let start = std::env::current_dir().unwrap();

    let mut relative = shipped().paths.clone();
    relative.roots = vec![".".into()];
    let mut absolute = shipped().paths.clone();
    absolute.roots = vec![a.display().to_string()];

    let inside = |r: &toolgate::gate::path::Roots, dir: &Path| {
        place(r, &dir.join("notes.txt"), false) == Placement::Inside
    };

    std::env::set_current_dir(&a).unwrap();
    let rel_a = roots(&relative);
    let abs_a = roots(&absolute);
    assert!(inside(&rel_a, &a), "`.` in {a:?} holds {a:?}/notes.txt");
    assert!(!inside(&rel_a, &b), "`.` in {a:?} does not hold {b:?}");
    assert!(inside(&abs_a, &a));
    assert!(!inside(&abs_a, &b));

    std::env::set_current_dir(&b).unwrap();
    let rel_b = roots(&relative);
    let abs_b = roots(&absolute);
    // the relative root moved with the process (no stale cache entry) ...
    assert!(inside(&rel_b, &b), "`.` in {b:?} holds {b:?}/notes.txt");
    assert!(!inside(&rel_b, &a), "`.` in {b:?} no longer holds {a:?}");
    // ... the absolute one did not
    assert_eq!(abs_a.lexical, abs_b.lexical);
    assert!(inside(&abs_b, &a));
    assert!(!inside(&abs_b, &b));

    // back: the first resolution is found again, and still right
    std::env::set_current_dir(&a).unwrap();
    assert!(inside(&roots(&relative), &a));
    assert!(!inside(&roots(&relative), &b));

    std::env::set_current_dir(start).unwrap();
}
