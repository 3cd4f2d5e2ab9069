//! Where a call runs ([`toolgate::gate::CallEnv`]): the project roots an MCP
//! client sends replace the policy's relative roots, and a root that holds
//! every file (`/`, the home directory) makes file access ask
//! (`path.broad-root`) instead of allowing everything "inside" it.
//!
//! A test binary of its own with a single test: it changes the process's
//! working directory to `/`, which would race tests running beside it.

use serde_json::json;
use toolgate::gate::{Action, CallEnv, check_call, check_call_in};

fn ids(v: &toolgate::gate::Verdict) -> Vec<&str> {
    v.findings.iter().map(|f| f.rule_id.as_str()).collect()
}

#[test]
fn client_roots_replace_relative_roots_and_a_broad_root_asks() {
    let plan = toolgate::load::load_plan(&Default::default()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().canonicalize().unwrap().join("project");
    std::fs::create_dir(&project).unwrap();
    std::fs::write(project.join("notes.txt"), "n").unwrap();
    let secret = project.parent().unwrap().join("secret.txt");
    std::fs::write(&secret, "s").unwrap();
    let read = |p: &std::path::Path| json!({ "path": p.display().to_string() });
    let start = std::env::current_dir().unwrap();

    // Started in `/` (as Claude Desktop starts servers), with no roots: the
    // shipped root `.` is `/`, which holds everything, so every file access
    // asks, even one that containment alone would allow.
    std::env::set_current_dir("/").unwrap();
    for p in [project.join("notes.txt"), "/etc/shadow".into()] {
        let v = check_call(&plan, "filesystem.read_text_file", read(&p));
        assert_eq!(v.decision, Action::Ask, "{p:?}: {}", v.message);
        assert!(ids(&v).contains(&"path.broad-root"), "{:?}", ids(&v));
        assert!(v.message.contains("`/` holds every file"), "{}", v.message);
    }
    // A shell line that touches files asks too; one that touches none does not.
    let sh = |c: &str| check_call(&plan, "shell.run_command", json!({ "command": c }));
    assert!(ids(&sh("echo hi >> ~/.bashrc")).contains(&"path.broad-root"));
    let v = sh("echo hello");
    assert!(!ids(&v).contains(&"path.broad-root"), "{:?}", ids(&v));
    // A call with no file effect at all (SQL) is not concerned.
    let v = check_call(&plan, "sqlite.read_query", json!({ "query": "SELECT 1" }));
    assert_eq!(v.decision, Action::Allow, "{}", v.message);

    // The client's roots (or `--root`): the project is where they say,
    // wherever the process runs.
    let env = CallEnv {
        roots: vec![project.clone()],
    };
    let v = check_call_in(
        &plan,
        "filesystem.read_text_file",
        read(&project.join("notes.txt")),
        &env,
    );
    assert_eq!(v.decision, Action::Allow, "{}", v.message);
    for p in [secret.clone(), "/etc/shadow".into()] {
        let v = check_call_in(&plan, "filesystem.read_text_file", read(&p), &env);
        assert_eq!(v.decision, Action::Deny, "{p:?}: {}", v.message);
        assert!(ids(&v).contains(&"path.outside-roots"), "{:?}", ids(&v));
    }
    // Relative argument paths start at the client's first root.
    let v = check_call_in(
        &plan,
        "filesystem.read_text_file",
        json!({"path": "notes.txt"}),
        &env,
    );
    assert_eq!(v.decision, Action::Allow, "{}", v.message);
    let v = check_call_in(
        &plan,
        "filesystem.read_text_file",
        json!({"path": "../secret.txt"}),
        &env,
    );
    assert_eq!(v.decision, Action::Deny, "{}", v.message);

    // A client root that is itself `/` (or the home directory) is broad too.
    let v = check_call_in(
        &plan,
        "filesystem.read_text_file",
        read(&project.join("notes.txt")),
        &CallEnv {
            roots: vec!["/".into()],
        },
    );
    assert_eq!(v.decision, Action::Ask, "{}", v.message);
    if let Some(home) = std::env::var_os("HOME").map(std::path::PathBuf::from)
        && home.is_absolute()
        && home.parent().is_some()
    {
        let env = CallEnv {
            roots: vec![home.clone()],
        };
        let v = check_call_in(
            &plan,
            "filesystem.read_text_file",
            read(&home.join(".bashrc")),
            &env,
        );
        assert!(ids(&v).contains(&"path.broad-root"), "{:?}", ids(&v));
        assert!(
            v.message.contains("every file of the user"),
            "{}",
            v.message
        );
    }

    // The policy's examples hold wherever the command runs (they run in a
    // project under the temporary directory): `/` here.
    toolgate::load::load_plan(&Default::default()).expect("the shipped examples hold in `/`");

    // Absolute policy roots (a deployment's) win over the client's.
    let mut text = toolgate::defaults::DEFAULT_POLICY.1.to_string();
    let abs = format!("roots = [{:?}]", project.display().to_string());
    text = text.replacen("roots = [\".\"]", &abs, 1);
    assert!(text.contains(&abs));
    let policy =
        toolgate::parse::policy::parse_policy(toolgate::diag::SourceFile::new("p.toml", text))
            .unwrap();
    let tools = toolgate::load::load_catalog(&Default::default()).unwrap();
    let fixed = toolgate::compile::compile(&policy, tools).unwrap();
    let elsewhere = CallEnv {
        roots: vec![project.parent().unwrap().to_path_buf()],
    };
    let v = check_call_in(
        &fixed,
        "filesystem.read_text_file",
        read(&secret),
        &elsewhere,
    );
    assert_eq!(v.decision, Action::Deny, "{}", v.message);

    std::env::set_current_dir(start).unwrap();
}
