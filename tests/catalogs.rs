//! The shipped tool tags cover every tool of every real MCP catalog
//! (tests/data/mcp-catalogs, copied from shared/data/mcp-catalogs), with the
//! catalog's own description and inputSchema, and every tag uses the default
//! policy's domains and stages.

use std::sync::Arc;

use toolgate::load::{Sources, load_plan};

#[test]
fn shipped_tags_cover_every_catalog_tool_verbatim() {
    let plan = Arc::new(load_plan(&Sources::default()).unwrap());
    let mut n = 0;
    for e in std::fs::read_dir("tests/data/mcp-catalogs").unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        // everything-fullcaps is the everything server with more client capabilities
        let server = v["server"].as_str().unwrap().trim_end_matches("-fullcaps");
        for t in v["tools"].as_array().unwrap() {
            let name = format!("{server}.{}", t["name"].as_str().unwrap());
            let tool = plan
                .tool(&name)
                .unwrap_or_else(|| panic!("{} has no tags for {name}", p.display()));
            assert_eq!(
                tool.description,
                t["description"].as_str().unwrap_or_default(),
                "{name}"
            );
            assert_eq!(*tool.input_schema.value(), t["inputSchema"], "{name}");
            assert!(!tool.auto_tagged, "{name} should carry hand-chosen tags");
            n += 1;
        }
    }
    assert!(n >= 70, "{n}");
    for demo in [
        "web_search",
        "calculator",
        "read_file",
        "delete_file",
        "get_current_time",
        "send_email",
    ] {
        assert!(plan.tool(demo).is_some(), "seed demo tool {demo}");
    }
    for gate_tool in [
        "shell.run_command",
        "shell.shell_execute",
        "sqlite.write_query",
        "sqlite.read_query",
    ] {
        assert!(plan.tool(gate_tool).is_some(), "{gate_tool}");
    }
    assert!(plan.tool("sqlite.read_query").unwrap().gate.read_only);
}

#[test]
fn embedded_tags_match_the_tool_tags_directory() {
    let mut files: Vec<String> = std::fs::read_dir("tool-tags")
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| p.display().to_string())
        .collect();
    files.sort();
    let embedded: Vec<String> = toolgate::load::DEFAULT_TAGS
        .iter()
        .map(|(n, _)| n.to_string())
        .collect();
    assert_eq!(
        files, embedded,
        "src/load.rs DEFAULT_TAGS must list every tool-tags file"
    );
    for (name, text) in toolgate::load::DEFAULT_TAGS {
        assert_eq!(std::fs::read_to_string(name).unwrap(), *text);
    }
}
