//! Variants of each SQL danger kind, beyond the shared cases.

mod gate_common;
use gate_common as common;

use toolgate::gate::{Action, FindingKind, PatternSet, analyze_sql, decide};

fn check(
    read_only: bool,
    dialect: &str,
    queries: &[&str],
    want: impl Fn(Action) -> bool,
    label: &str,
) {
    let cfg = common::config();
    let set = PatternSet::compile(&cfg.patterns).unwrap();
    let mut bad = Vec::new();
    for q in queries {
        let mut f = analyze_sql(&cfg.sql, "/query", q, dialect, read_only);
        f.extend(set.scan_as(toolgate::gate::PatternScope::Sql, "/query", q));
        let got = decide(&f);
        if !want(got) {
            bad.push(format!(
                "{q:?} -> {got:?} {:?}",
                f.iter().map(|f| &f.message).collect::<Vec<_>>()
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "expected {label} (read_only={read_only}, {dialect}):\n{}",
        bad.join("\n")
    );
}

#[test]
fn destructive_statements_are_denied_however_spelled_or_commented() {
    let q = [
        "DROP VIEW v",
        "DROP INDEX i",
        "drop table if exists users cascade",
        "DrOp\tTaBlE\nusers",
        "DROP -- c\n TABLE users",
        "DROP SCHEMA s CASCADE",
        "DROP DATABASE prod",
        "TRUNCATE users",
        "truncate table a, b",
        "DELETE FROM t WHERE 1=1",
        "DELETE FROM t WHERE true",
        "DELETE FROM t WHERE (1 = 1)",
        "DELETE FROM t WHERE 'a' = 'a'",
        "DELETE FROM t WHERE id = id",
        "delete from t where x = 1 or 1 = 1",
        "DELETE FROM t WHERE NOT false",
        "UPDATE t SET a = 1 WHERE 1",
        "UPDATE t SET a = 1 WHERE 2 > 1",
        "UPDATE t SET a = 1 -- WHERE id = 1",
        "UPDATE t SET a = 'WHERE id = 1'",
        "DELETE FROM t /* WHERE id = 1 */ ;",
        "ALTER TABLE t DROP COLUMN c",
        "ALTER TABLE t DROP CONSTRAINT pk",
        "DELETE FROM users WHERE id = 1; DROP TABLE users",
        "INSERT INTO t VALUES (1); TRUNCATE t",
        "SELECT 1 /*! ; DROP TABLE users */",
        "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d",
        "SELECT load_extension('x')",
        "SELECT * FROM t WHERE id = pg_sleep(10)",
        "SELEC * FROM",
        "DELETE FROM",
        "",
        "   -- nothing\n",
        "SELECT 'unterminated",
    ];
    check(false, "", &q, |a| a == Action::Deny, "deny");
    check(
        false,
        "postgres",
        &q[..q.len() - 4],
        |a| a == Action::Deny,
        "deny",
    );
}

#[test]
fn risky_changes_ask() {
    check(
        false,
        "",
        &[
            "ALTER TABLE t RENAME COLUMN a TO b",
            "ALTER TABLE t RENAME TO u",
            "GRANT ALL ON t TO bob",
            "REVOKE SELECT ON t FROM bob",
        ],
        |a| a == Action::Ask,
        "ask",
    );
}

/// Code written now, run later (attack pass on the 2026-07-28 proxy): a
/// trigger asks, and a statement the gate refuses is refused inside a
/// trigger's body too, so an allowed `INSERT` cannot set it off.
#[test]
fn triggers_ask_and_their_bodies_are_judged_like_statements() {
    check(
        false,
        "sqlite",
        &[
            "CREATE TRIGGER t AFTER INSERT ON users BEGIN INSERT INTO log(x) VALUES (new.id); END",
            "CREATE TRIGGER t2 BEFORE UPDATE ON users BEGIN UPDATE users SET n = 1 WHERE id = old.id; END",
        ],
        |a| a == Action::Ask,
        "ask",
    );
    check(
        false,
        "sqlite",
        &[
            "CREATE TRIGGER t AFTER INSERT ON users BEGIN DELETE FROM users; END",
            "CREATE TRIGGER t AFTER INSERT ON users BEGIN UPDATE users SET name = 'x'; END",
            "create trigger t after insert on users begin select 1; delete from users where 1 = 1; end",
        ],
        |a| a == Action::Deny,
        "deny",
    );
}

#[test]
fn bounded_writes_and_data_are_allowed() {
    check(
        false,
        "",
        &[
            "UPDATE t SET a = 1 WHERE /* note */ id = 1",
            "DELETE FROM t WHERE note = '-- x'",
            "DELETE FROM t WHERE id IN (SELECT id FROM u WHERE stale)",
            "UPDATE t SET note = 'DROP TABLE users' WHERE id = 2",
            "INSERT INTO logs (msg) VALUES ('DELETE FROM users')",
            "INSERT INTO t SELECT * FROM u",
            "CREATE TABLE t (id INT PRIMARY KEY)",
            "CREATE INDEX i ON t (a)",
            "ALTER TABLE t ADD COLUMN c INT",
            "SELECT 1; SELECT 2",
            "SELECT 'pg_sleep(1)'",
            "delete from t where id = 1;",
        ],
        |a| a == Action::Allow,
        "allow",
    );
}

#[test]
fn read_only_accepts_exactly_one_read_statement() {
    check(
        true,
        "",
        &[
            "SELECT * FROM t",
            "select a, count(*) from t group by a having count(*) > 1 order by 2 desc limit 5",
            "WITH x AS (SELECT 1 AS a) SELECT * FROM x",
            "SELECT 1 UNION SELECT 2",
            "SELECT '; DROP TABLE users; --'",
            "/* leading comment */ SELECT 1 -- trailing",
            "EXPLAIN SELECT * FROM t",
            "SELECT * FROM t WHERE msg LIKE '%UPDATE t SET%';",
        ],
        |a| a == Action::Allow,
        "allow",
    );
    check(
        true,
        "",
        &[
            "SELECT 1; SELECT 2",
            "SELECT * FROM t FOR UPDATE",
            "SELECT * INTO backup FROM t",
            "WITH d AS (UPDATE t SET a = 1 WHERE id = 1 RETURNING *) SELECT * FROM d",
            "EXPLAIN ANALYZE DELETE FROM t WHERE id = 1",
            "INSERT INTO t SELECT * FROM u",
            "CREATE TABLE x (a INT)",
            "DELETE FROM t WHERE id = 1",
            "-- SELECT 1\nDELETE FROM t WHERE id = 1",
            "SELECT 1 /* ; */ ; DELETE FROM t WHERE id = 1",
            "",
        ],
        |a| a != Action::Allow,
        "not allow",
    );
}

#[test]
fn dialects_are_mapped_by_tag() {
    check(
        false,
        "sqlite",
        &["DELETE FROM t", "DROP TABLE t"],
        |a| a == Action::Deny,
        "deny",
    );
    check(
        false,
        "MySQL",
        &["DROP TABLE `users`", "DELETE FROM `t`"],
        |a| a == Action::Deny,
        "deny",
    );
    check(
        false,
        "mysql",
        &["DELETE FROM `t` WHERE `id` = 1"],
        |a| a == Action::Allow,
        "allow",
    );
    check(
        false,
        "pg",
        &["UPDATE \"t\" SET a = 1", "TRUNCATE t RESTART IDENTITY"],
        |a| a == Action::Deny,
        "deny",
    );
    check(
        true,
        "postgresql",
        &["SELECT now()::date"],
        |a| a == Action::Allow,
        "allow",
    );
    check(
        false,
        "no-such-dialect",
        &["SELECT 1"],
        |a| a == Action::Deny,
        "deny",
    );
}

#[test]
fn parse_errors_are_parse_findings() {
    let cfg = common::config();
    let f = analyze_sql(&cfg.sql, "/q", "SELEC * FROM", "", false);
    assert_eq!(f.len(), 1);
    assert_eq!(f[0].kind, FindingKind::Parse);
    assert_eq!(f[0].path, "/q");
    assert_eq!(f[0].action, Action::Deny);
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let cfg = common::config();
    let q = format!("SELECT {}1{}", "(".repeat(5000), ")".repeat(5000));
    let f = analyze_sql(&cfg.sql, "/q", &q, "", true);
    assert_eq!(decide(&f), Action::Deny);
}

/// A read-only tool that gets a write says so once: one `not-read-only`
/// finding names the statement count and each writing statement, and a
/// verdict never lists the same finding twice.
#[test]
fn read_only_violations_are_one_finding() {
    let cfg = common::config();
    let f = analyze_sql(&cfg.sql, "/query", "SELECT 1; DROP TABLE users", "", true);
    let ro: Vec<&str> = f
        .iter()
        .filter(|x| x.rule_id == "sql.not-read-only")
        .map(|x| x.message.as_str())
        .collect();
    assert_eq!(ro.len(), 1, "{ro:?}");
    assert!(
        ro[0].contains("2 statements where exactly one read statement is accepted; statement 2 of 2, `DROP TABLE users` is not a read statement"),
        "{}",
        ro[0]
    );
    let f = analyze_sql(&cfg.sql, "/query", "DELETE FROM a WHERE id = 1", "", true);
    assert_eq!(
        f.iter()
            .filter(|x| x.rule_id == "sql.not-read-only")
            .count(),
        1,
        "{f:?}"
    );
    assert!(
        f.iter().all(|x| !x.message.contains("statements where")),
        "{f:?}"
    );
    let f = analyze_sql(&cfg.sql, "/query", "SELECT 1; SELECT 2", "", true);
    let ro: Vec<&str> = f
        .iter()
        .filter(|x| x.rule_id == "sql.not-read-only")
        .map(|x| x.message.as_str())
        .collect();
    assert_eq!(ro.len(), 1, "{ro:?}");
    assert!(!ro[0].contains("is not a read statement"), "{}", ro[0]);

    // Through the whole gate: no (rule, argument, message) twice, and the
    // message for the model names the read-only rule once.
    let plan = std::sync::Arc::new(toolgate::load::load_plan(&Default::default()).unwrap());
    for q in [
        "SELECT 1; DROP TABLE users",
        "DELETE FROM users",
        "SELECT 1; SELECT 2; UPDATE t SET a = 1",
    ] {
        let v = toolgate::gate::Gate::new(plan.clone())
            .check("sqlite.read_query", serde_json::json!({ "query": q }));
        assert_eq!(v.decision, Action::Deny, "{q}");
        let mut keys: Vec<(&str, &str)> = v
            .findings
            .iter()
            .map(|f| (f.rule_id.as_str(), f.path.as_str()))
            .collect();
        let n = keys.len();
        keys.dedup();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), n, "{q}: {:?}", v.findings);
        assert_eq!(
            v.message.matches("This tool is read-only").count(),
            1,
            "{q}: {}",
            v.message
        );
    }
}
