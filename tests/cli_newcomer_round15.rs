//! Issue 29, items 1 and 9: a TOML or JSON file given to the option that
//! does not take its kind (an mcp-proxy config as `--policy`, a policy or a
//! JSON catalog as `mcp-proxy --config`, a JSON catalog as `--policy`) is
//! named as one problem that says which option takes it; a policy's
//! known-keys list has no duplicates and a missing required key is said
//! once.

mod common;
use common::{stderr, toolgate, write};

const MANIFEST: &str = env!("CARGO_MANIFEST_DIR");

/// An mcp-proxy config with the shape of a real one.
const PROXY: &str = "policy = \"policies/selection.toml\"\nmax_concurrent_calls = 4\n\n[http]\nlisten = \"127.0.0.1:8080\"\n\n[[server]]\nname = \"files\"\ncommand = [\"npx\", \"server-filesystem\"]\n\n[[server]]\nname = \"git\"\nurl = \"http://localhost:9000/mcp\"\n";

fn path(rel: &str) -> String {
    format!("{MANIFEST}/{rel}")
}

#[test]
fn an_mcp_proxy_config_as_policy_is_named_once() {
    let d = tempfile::tempdir().unwrap();
    let f = write(d.path(), "bad-proxy.toml", PROXY);
    let o = toolgate(&["eval", "--policy", &f], None);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(
        e.contains("looks like an mcp-proxy config") && e.contains("[[server]]"),
        "{e}"
    );
    assert!(e.contains("mcp-proxy --config"), "{e}");
    assert!(!e.contains("missing the required key"), "{e}");
    assert!(e.len() < 1000, "{} bytes: {e}", e.len());
}

#[test]
fn a_policy_as_mcp_proxy_config_is_named_once() {
    let o = toolgate(
        &["mcp-proxy", "--config", &path("policies/default.toml")],
        None,
    );
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("looks like a policy"), "{e}");
    assert!(e.contains("--policy"), "{e}");
    assert!(!e.contains("unknown key"), "{e}");
    assert!(e.len() < 1000, "{} bytes: {e}", e.len());
}

#[test]
fn a_json_catalog_as_policy_or_config_is_named() {
    let catalog = path("examples/server.json");
    let o = toolgate(&["eval", "--policy", &catalog], None);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("is JSON") && e.contains("tool catalog"), "{e}");
    assert!(e.contains("--tools"), "{e}");
    assert!(!e.contains("TOML syntax error"), "{e}");

    let o = toolgate(&["mcp-proxy", "--config", &catalog], None);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("is JSON") && e.contains("--tools"), "{e}");
    assert!(!e.contains("TOML syntax error"), "{e}");
}

#[test]
fn a_tag_file_as_mcp_proxy_config_is_named() {
    let d = tempfile::tempdir().unwrap();
    let f = write(
        d.path(),
        "time.toml",
        "[[tool]]\nname = \"now\"\ndomains = [\"time\"]\n",
    );
    let o = toolgate(&["mcp-proxy", "--config", &f], None);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("looks like a tool-tag file"), "{e}");
    assert!(e.contains("--tags"), "{e}");
}

#[test]
fn known_keys_are_listed_once_and_a_missing_key_said_once() {
    let d = tempfile::tempdir().unwrap();
    // not a proxy config, not a tag file: an ordinary misspelt policy
    let f = write(
        d.path(),
        "p.toml",
        "[scroe]\nformula = \"1\"\n[features.a]\nsource = \"context\"\n",
    );
    let o = toolgate(&["eval", "--policy", &f], None);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    for line in e.lines().filter(|l| l.contains("known keys here: ")) {
        let list = line.split("known keys here: ").nth(1).unwrap();
        let keys: Vec<&str> = list.split(", ").collect();
        let mut unique = keys.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(keys.len(), unique.len(), "duplicates in {line}");
    }
    // a policy without [features]: six passes read it, one problem
    let f = write(d.path(), "q.toml", "[score]\nformula = \"1\"\n");
    let o = toolgate(&["eval", "--policy", &f], None);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert_eq!(
        e.matches("missing the required key `features`").count(),
        1,
        "{e}"
    );
    let mut seen = std::collections::HashSet::new();
    for line in e.lines().filter(|l| l.contains("missing the required key")) {
        assert!(seen.insert(line.to_string()), "said twice: {line}\n{e}");
    }
}
