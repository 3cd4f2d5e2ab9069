//! The proxy's catalog: the tools discovered downstream, namespaced
//! `server.tool`, merged with the tool tags and compiled into a plan.
//!
//! A discovered tool whose `server.tool` name has tags gets those tags
//! (semantic and gate), with the live description and `inputSchema` from the
//! server; any other tool becomes an untagged [`ToolSpec`], auto-tagged by the
//! policy's `[auto_tags]`, its MCP annotations `readOnlyHint` /
//! `destructiveHint` setting `read_only` and the destructive risk level
//! (`openWorldHint` sets `open_world`, for tagged tools too when their
//! tags do not say). Tags
//! of tools no server offers are left out: the plan holds exactly what can be
//! called.

use std::sync::Arc;

use rmcp::model::Tool;
use serde_json::Value;

use crate::compile::{CompileCache, CompileStats};
use crate::diag::LoadError;
use crate::eval::Activation;
use crate::parse::policy::Sp;
use crate::parse::schema_text::{SchemaInterner, SchemaText};
use crate::parse::tags::{GateTags, RiskLevel, ToolSpec};
use crate::plan::Plan;

use super::names::{NameFormat, assign};
use super::pins::definition_hash;
use super::source::PlanInputs;
use crate::parse::discovery::DiscoveryParams;

/// The tools one server offered at its last listing.
#[derive(Debug, Clone)]
pub struct ServerTools {
    /// Server name (the namespace).
    pub server: String,
    /// Its tools, as listed (bare names).
    pub tools: Arc<Vec<Tool>>,
    /// Listing version (0: never listed).
    pub version: u64,
}

/// Where a catalog tool is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// Index of the server in the proxy's server list.
    pub server: usize,
    /// The tool's name at that server (bare).
    pub name: String,
}

/// How exposed names are made: the format, and the names the proxy keeps
/// for its own tools.
#[derive(Debug, Clone, Default)]
pub struct Naming {
    /// The name format.
    pub format: NameFormat,
    /// Names no downstream tool may take (the proxy's own tools).
    pub reserved: Vec<String>,
}

/// A compiled catalog: the plan plus, per plan tool, the MCP tool to list and
/// the route to call it.
#[derive(Debug, Clone)]
pub struct Catalog {
    /// The plan (tools in server order, then listing order; catalog names
    /// `server.tool`).
    pub plan: Arc<Plan>,
    /// Per plan tool index: the tool as listed to the client, under its
    /// exposed (client-safe) name.
    pub tools: Vec<Tool>,
    /// Per plan tool index: where to call it.
    pub routes: Vec<Route>,
    /// Per plan tool index: SHA-256 of its definition ([`super::pins::definition_hash`]).
    pub hashes: Vec<String>,
    /// Exposed name → plan tool index.
    pub by_name: rustc_hash::FxHashMap<String, usize>,
    /// The policy's `[discovery]`.
    pub discovery: DiscoveryParams,
    /// Per server: the listing version compiled in.
    pub server_versions: Vec<u64>,
    /// The inputs' version compiled in.
    pub inputs_version: u64,
}

fn auto_spec(full: String, tool: &Tool, input_schema: SchemaText) -> ToolSpec {
    let ann = tool.annotations.as_ref();
    let read_only = ann.and_then(|a| a.read_only_hint).unwrap_or(false);
    let destructive = ann.and_then(|a| a.destructive_hint).unwrap_or(false);
    let open_world = ann.and_then(|a| a.open_world_hint);
    ToolSpec {
        name: Sp::new(full, 0..0),
        aliases: Vec::new(),
        description: tool.description.as_deref().unwrap_or_default().to_string(),
        input_schema,
        tags: None,
        gate: GateTags {
            read_only,
            open_world,
            risk_level: (destructive && !read_only).then_some(RiskLevel::Destructive),
            ..GateTags::default()
        },
        follows: Vec::new(),
        file: None,
        input_schema_span: None,
    }
}

/// The proxy's compiler: each server's last listing as tool specs (with
/// their definition hashes), and the [`CompileCache`] holding their compiled
/// tools. When one server re-lists (`notifications/tools/list_changed`),
/// only its tools are compiled again; a policy-only edit recompiles the
/// policy part and links it to the same catalog. A tags edit rebuilds every
/// server's specs (the tags are merged into them).
#[derive(Debug, Default)]
pub struct CatalogCompiler {
    /// Per server name: the listing it was built from (its `Arc`), the
    /// inputs' version, the specs and the definition hashes.
    servers: Vec<ServerUnit>,
    compiler: CompileCache,
}

#[derive(Debug, Clone)]
struct ServerUnit {
    server: String,
    listing: Arc<Vec<Tool>>,
    inputs_version: u64,
    specs: Arc<Vec<ToolSpec>>,
    /// Per spec: the index of its tool in the listing, and its definition hash.
    tools: Arc<Vec<(usize, String)>>,
}

impl CatalogCompiler {
    /// What the last build recompiled and reused.
    pub fn stats(&self) -> &CompileStats {
        self.compiler.stats()
    }
}

fn server_unit(
    tagged: &rustc_hash::FxHashMap<&str, &ToolSpec>,
    s: &ServerTools,
    inputs_version: u64,
) -> ServerUnit {
    let mut specs = Vec::with_capacity(s.tools.len());
    let mut tools = Vec::with_capacity(s.tools.len());
    let mut seen = rustc_hash::FxHashSet::default();
    let mut interner = SchemaInterner::default();
    for (i, t) in s.tools.iter().enumerate() {
        let full = format!("{}.{}", s.server, t.name);
        if !seen.insert(full.clone()) {
            tracing::warn!(tool = %full, "server listed the same tool twice; keeping the first");
            continue;
        }
        let tree = Value::Object((*t.input_schema).clone());
        let description = t.description.as_deref().unwrap_or_default();
        let hash = definition_hash(description, &tree);
        let schema = interner.intern(SchemaText::new(&tree));
        let spec = match tagged.get(full.as_str()) {
            Some(tag) => {
                let mut spec = (*tag).clone();
                spec.aliases.clear();
                spec.description = description.to_string();
                spec.input_schema = schema;
                // the live annotation, where the tags do not say
                if spec.gate.open_world.is_none() {
                    spec.gate.open_world = t.annotations.as_ref().and_then(|a| a.open_world_hint);
                }
                spec
            }
            None => auto_spec(full, t, schema),
        };
        specs.push(spec);
        tools.push((i, hash));
    }
    ServerUnit {
        server: s.server.clone(),
        listing: s.tools.clone(),
        inputs_version,
        specs: Arc::new(specs),
        tools: Arc::new(tools),
    }
}

/// Compiles the catalog of `servers` (in the proxy's server order) with
/// `inputs`, naming the tools for clients with `naming` (collisions are
/// logged as warnings). Fails with the compile's diagnostics (e.g. a pinned
/// tool that no server offers).
pub fn build_catalog(
    inputs: &PlanInputs,
    servers: &[ServerTools],
    naming: &Naming,
) -> Result<Catalog, LoadError> {
    CatalogCompiler::default().build(inputs, servers, naming)
}

impl CatalogCompiler {
    /// [`build_catalog`], reusing what `self` compiled for the servers whose
    /// listing (the same `Arc`) and inputs did not change.
    pub fn build(
        &mut self,
        inputs: &PlanInputs,
        servers: &[ServerTools],
        naming: &Naming,
    ) -> Result<Catalog, LoadError> {
        let tagged: rustc_hash::FxHashMap<&str, &ToolSpec> = inputs
            .tags
            .iter()
            .map(|t| (t.name.value.as_str(), t))
            .collect();
        let mut units: Vec<ServerUnit> = Vec::with_capacity(servers.len());
        for s in servers {
            let unit = self
                .servers
                .iter()
                .find(|u| {
                    u.server == s.server
                        && Arc::ptr_eq(&u.listing, &s.tools)
                        && u.inputs_version == inputs.version
                })
                .cloned()
                .unwrap_or_else(|| server_unit(&tagged, s, inputs.version));
            units.push(unit);
        }
        self.servers = units.clone();
        // Two servers whose names give the same `server.tool` (`a.b` + `c`
        // and `a` + `b.c`): the first keeps it, as before the catalog was
        // compiled per server. The later unit is rebuilt without it (and is
        // compiled again on every build: a rare, logged case).
        let mut drop: Vec<(usize, Vec<bool>)> = Vec::new();
        {
            let mut seen: rustc_hash::FxHashSet<&str> = rustc_hash::FxHashSet::default();
            for (k, u) in units.iter().enumerate() {
                let keep: Vec<bool> = u
                    .specs
                    .iter()
                    .map(|t| !seen.contains(t.name.value.as_str()))
                    .collect();
                if keep.iter().any(|k| !k) {
                    drop.push((k, keep));
                }
                seen.extend(u.specs.iter().map(|t| t.name.value.as_str()));
            }
        }
        for (k, keep) in drop {
            let u = &mut units[k];
            let (mut specs, mut tools) = (Vec::new(), Vec::new());
            for ((spec, tool), keep) in u.specs.iter().zip(u.tools.iter()).zip(keep) {
                if keep {
                    specs.push(spec.clone());
                    tools.push(tool.clone());
                } else {
                    tracing::warn!(tool = %spec.name.value, "two servers list the same tool name; keeping the first");
                }
            }
            u.specs = Arc::new(specs);
            u.tools = Arc::new(tools);
        }
        // The policy's [[examples]] were checked when it loaded (against the
        // tags); a live catalog of a few servers ranks differently (BM25's idf,
        // relative scores), so they are not run again here.
        let mut policy = inputs.policy.clone();
        policy.examples.clear();
        let specs: Vec<Arc<Vec<ToolSpec>>> = units.iter().map(|u| u.specs.clone()).collect();
        let plan = self.compiler.compile(&policy, &specs)?;
        let n = plan.tools.len();
        let (mut tools, mut routes, mut hashes) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        for (si, u) in units.iter().enumerate() {
            for (i, hash) in u.tools.iter() {
                let t = &servers[si].tools[*i];
                tools.push(t.clone());
                routes.push(Route {
                    server: si,
                    name: t.name.to_string(),
                });
                hashes.push(hash.clone());
            }
        }
        // compile keeps the order of the specs; check it rather than assume it.
        debug_assert!(
            plan.tools
                .iter()
                .zip(&routes)
                .all(|(c, r)| c.name == format!("{}.{}", servers[r.server].server, r.name))
        );
        let pairs: Vec<(&str, &str)> = routes
            .iter()
            .map(|r| (servers[r.server].server.as_str(), r.name.as_str()))
            .collect();
        let reserved: Vec<&str> = naming.reserved.iter().map(String::as_str).collect();
        let (names, warnings) = assign(&naming.format, &pairs, &reserved);
        for w in warnings {
            tracing::warn!("{w}");
        }
        let mut by_name = rustc_hash::FxHashMap::default();
        for (i, (t, n)) in tools.iter_mut().zip(names).enumerate() {
            by_name.insert(n.clone(), i);
            t.name = n.into();
        }
        Ok(Catalog {
            plan: Arc::new(plan),
            tools,
            routes,
            hashes,
            by_name,
            discovery: inputs.policy.discovery.clone(),
            server_versions: servers.iter().map(|s| s.version).collect(),
            inputs_version: inputs.version,
        })
    }
}

impl Catalog {
    /// The listed tools of the active set of `activation` (which must come
    /// from this catalog's plan), in catalog order, under their exposed names.
    pub fn active_tools(&self, activation: &Activation) -> Vec<Tool> {
        activation
            .tools
            .iter()
            .filter(|s| s.active)
            .map(|s| self.tools[s.tool].clone())
            .collect()
    }

    /// The `tools/list` answer for `activation`: its active tools, one page.
    pub fn list_result(&self, activation: &Activation) -> rmcp::model::ListToolsResult {
        rmcp::model::ListToolsResult::with_all_items(self.active_tools(activation))
    }

    /// The plan index of the tool called `name`: its exposed name, else its
    /// catalog name (`server.tool`), which clients may also use.
    pub fn resolve(&self, name: &str) -> Option<usize> {
        self.by_name
            .get(name)
            .copied()
            .or_else(|| self.plan.tool_index(name))
    }

    /// The route of the tool called `name` (see [`Catalog::resolve`]).
    pub fn route(&self, name: &str) -> Option<(usize, &Route)> {
        self.resolve(name).map(|i| (i, &self.routes[i]))
    }

    /// The exposed name of plan tool `i`.
    pub fn exposed(&self, i: usize) -> &str {
        &self.tools[i].name
    }

    /// The catalog name of plan tool `i`.
    pub fn catalog_name(&self, i: usize) -> &str {
        &self.plan.tools[i].name
    }
}

/// Reads the tools of a captured catalog file (`tests/data/mcp-catalogs/*.json`:
/// an object with `server` and `tools`), or of a `tools/list` result.
pub fn tools_from_json(v: &Value) -> Result<Vec<Tool>, String> {
    let tools = v
        .get("tools")
        .or_else(|| v.get("result").and_then(|r| r.get("tools")))
        .ok_or("no `tools` array")?;
    serde_json::from_value(tools.clone()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::context::{SessionContext, UsageStats};

    fn inputs() -> PlanInputs {
        let policy = crate::load::load_policy(None).unwrap();
        let tags = crate::load::load_catalog(&crate::load::Sources::default()).unwrap();
        PlanInputs {
            policy,
            tags,
            version: 1,
        }
    }

    fn tool(name: &str, desc: &str) -> Tool {
        serde_json::from_value(serde_json::json!({
            "name": name, "description": desc,
            "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}},
            "annotations": {"destructiveHint": true}
        }))
        .unwrap()
    }

    #[test]
    fn the_open_world_hint_is_kept_for_auto_tagged_and_tagged_tools() {
        let annotated = |name: &str, ann: serde_json::Value| -> Tool {
            serde_json::from_value(serde_json::json!({
                "name": name, "description": "d",
                "inputSchema": {"type": "object", "properties": {"url": {"type": "string"}}},
                "annotations": ann
            }))
            .unwrap()
        };
        let servers = vec![ServerTools {
            server: "fetch".into(),
            tools: Arc::new(vec![
                // tagged (tool-tags/fetch.toml says nothing of it): the server's hint
                annotated(
                    "fetch",
                    serde_json::json!({"openWorldHint": true, "readOnlyHint": true}),
                ),
                annotated("closed", serde_json::json!({"openWorldHint": false})),
                annotated("silent", serde_json::json!({})),
            ]),
            version: 1,
        }];
        let c = build_catalog(&inputs(), &servers, &Naming::default()).unwrap();
        let ow = |n: &str| c.plan.tool(n).unwrap().gate.open_world;
        assert_eq!(ow("fetch.fetch"), Some(true));
        assert!(!c.plan.tool("fetch.fetch").unwrap().auto_tagged);
        assert_eq!(ow("fetch.closed"), Some(false));
        assert_eq!(ow("fetch.silent"), None);
        let g = crate::gate::compiled(&c.plan);
        let i = c.plan.tool_index("fetch.closed").unwrap();
        assert_eq!(g.tools[i].open_world, Some(false));
    }

    #[test]
    fn merges_tags_with_live_tools_and_auto_tags_the_rest() {
        let servers = vec![
            ServerTools {
                server: "sqlite".into(),
                tools: Arc::new(vec![
                    tool("read_query", "live description"),
                    tool("brand_new", "Drops every widget from the warehouse"),
                ]),
                version: 3,
            },
            ServerTools {
                server: "down".into(),
                tools: Arc::new(vec![]),
                version: 0,
            },
        ];
        let c = build_catalog(&inputs(), &servers, &Naming::default()).unwrap();
        assert_eq!(c.plan.tools.len(), 2);
        let rq = c.plan.tool("sqlite.read_query").unwrap();
        assert!(!rq.auto_tagged);
        assert_eq!(rq.description, "live description");
        assert!(rq.gate.read_only, "gate tags come from the tag file");
        assert!(rq.aliases.is_empty());
        let nw = c.plan.tool("sqlite.brand_new").unwrap();
        assert!(nw.auto_tagged);
        assert_eq!(nw.gate.risk_level, Some(RiskLevel::Destructive));
        assert_eq!(c.tools[1].name, "sqlite__brand_new");
        assert_eq!(c.resolve("sqlite__brand_new"), Some(1));
        assert_eq!(
            c.resolve("sqlite.brand_new"),
            Some(1),
            "catalog names resolve too"
        );
        assert_eq!(c.catalog_name(1), "sqlite.brand_new");
        assert_eq!(c.hashes[0].len(), 64);
        assert_eq!(
            c.route("sqlite.brand_new").unwrap().1,
            &Route {
                server: 0,
                name: "brand_new".into()
            }
        );
        assert!(
            c.route("sqlite.write_query").is_none(),
            "tags without a server are left out"
        );
        assert_eq!(c.server_versions, [3, 0]);
        let act = c
            .plan
            .evaluate(&SessionContext::default(), &UsageStats::default(), 0.0);
        let listed = c.active_tools(&act);
        assert_eq!(listed.len(), act.active_names().len());
    }

    fn listing(n: usize, word: &str) -> Arc<Vec<Tool>> {
        Arc::new(
            (0..n)
                .map(|i| tool(&format!("{word}_{i}"), &format!("{word} things number {i}")))
                .collect(),
        )
    }

    /// What a client sees of a catalog, and every score of a session.
    fn view(c: &Catalog) -> (Vec<String>, Vec<Route>, Vec<String>, Vec<u64>) {
        let ctx = SessionContext {
            user_intent_keywords: vec!["alpha".into(), "things".into()],
            ..Default::default()
        };
        let act = c.plan.evaluate(&ctx, &UsageStats::default(), 0.0);
        (
            c.tools.iter().map(|t| t.name.to_string()).collect(),
            c.routes.clone(),
            c.hashes.clone(),
            act.tools.iter().map(|s| s.score.to_bits()).collect(),
        )
    }

    #[test]
    fn one_server_relisting_recompiles_only_its_tools() {
        let inputs = inputs();
        let mut servers: Vec<ServerTools> = ["alpha", "beta", "gamma"]
            .iter()
            .enumerate()
            .map(|(k, w)| ServerTools {
                server: w.to_string(),
                tools: listing(5 + k, w),
                version: 1,
            })
            .collect();
        let mut cc = CatalogCompiler::default();
        let first = cc.build(&inputs, &servers, &Naming::default()).unwrap();
        assert_eq!(cc.stats().units_compiled, 3);
        assert_eq!(first.plan.tools.len(), 18);
        // `beta` announces list_changed and lists again: a new listing.
        servers[1].tools = listing(7, "beta");
        servers[1].version = 2;
        let second = cc.build(&inputs, &servers, &Naming::default()).unwrap();
        let s = cc.stats().clone();
        assert_eq!(
            (s.units_compiled, s.units_reused, s.tools_compiled),
            (1, 2, 7)
        );
        assert_eq!(second.plan.tools.len(), 19);
        assert_eq!(second.server_versions, [1, 2, 1]);
        // The same catalog as a compile from scratch.
        let fresh = build_catalog(&inputs, &servers, &Naming::default()).unwrap();
        assert_eq!(view(&second), view(&fresh));
        // Nothing changed: nothing compiled; a new tags version: all of it.
        cc.build(&inputs, &servers, &Naming::default()).unwrap();
        assert!(cc.stats().catalog_reused);
        let newer = PlanInputs {
            version: 2,
            ..inputs
        };
        cc.build(&newer, &servers, &Naming::default()).unwrap();
        assert_eq!(cc.stats().units_compiled, 3);
    }

    #[test]
    fn a_name_two_servers_give_is_kept_once() {
        let servers = vec![
            ServerTools {
                server: "a.b".into(),
                tools: Arc::new(vec![tool("c", "first")]),
                version: 1,
            },
            ServerTools {
                server: "a".into(),
                tools: Arc::new(vec![tool("b.c", "second"), tool("d", "other")]),
                version: 1,
            },
        ];
        let c = build_catalog(&inputs(), &servers, &Naming::default()).unwrap();
        assert_eq!(c.plan.tools.len(), 2);
        assert_eq!(c.plan.tool("a.b.c").unwrap().description, "first");
        assert_eq!(c.routes[1].name, "d");
    }

    #[test]
    fn shipped_catalogs_all_compile_together() {
        let mut servers = Vec::new();
        let mut expected = 0;
        for name in [
            "everything-fullcaps",
            "fetch",
            "filesystem",
            "git",
            "memory",
            "shell",
            "sqlite",
            "time",
        ] {
            let text =
                std::fs::read_to_string(format!("tests/data/mcp-catalogs/{name}.json")).unwrap();
            let v: Value = serde_json::from_str(&text).unwrap();
            let tools = tools_from_json(&v).unwrap();
            expected += tools.len();
            servers.push(ServerTools {
                server: name.trim_end_matches("-fullcaps").into(),
                tools: Arc::new(tools),
                version: 1,
            });
        }
        let c = build_catalog(&inputs(), &servers, &Naming::default()).unwrap();
        assert_eq!(c.plan.tools.len(), expected);
        assert!(expected >= 60, "{expected}");
        assert!(c.plan.tools.iter().all(|t| !t.auto_tagged));
    }
}
