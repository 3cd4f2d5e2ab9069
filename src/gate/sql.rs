//! SQL analysis (`[gate.sql]`), on the AST of the `sqlparser` crate.
//!
//! Parsing is what makes the checks sound: a comment cannot hide a keyword
//! or fake a `WHERE`, and a dangerous word inside a string literal is data.
//! Statement kinds are addressed in the configuration by the name of their
//! `sqlparser::ast::Statement` variant (`Drop`, `Truncate`...), `ALTER TABLE`
//! operations by their `AlterTableOperation` variant (`DropColumn`...).
//! SQL that does not parse yields a `Parse` finding (fail closed).

use std::fmt::{self, Debug, Write as _};

use std::ops::ControlFlow;

use sqlparser::ast::{
    BinaryOperator, Expr, ObjectName, ObjectNamePart, Query, SetExpr, Statement, TableFactor,
    UnaryOperator, Value, Visit, Visitor,
};
use sqlparser::dialect::{Dialect, dialect_from_str};
use sqlparser::parser::Parser;
use sqlparser::tokenizer::{Token, Tokenizer, Whitespace};

use super::types::{Action, Check, Finding, FindingKind, fill};

mod pragma;

pub use crate::plan::gate::sql::{FunctionRule, ReadOnlySpec, SqlChecks, SqlConfig};

/// Analyzes SQL text, the argument at JSON pointer `path`, parsed in
/// `dialect` (a tag from the tool, mapped by `[gate.sql.dialects]`; empty
/// means the default). With `read_only`, anything but exactly one read
/// statement is flagged.
pub fn analyze_sql(
    cfg: &SqlConfig,
    path: &str,
    sql: &str,
    dialect: &str,
    read_only: bool,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let checks = &cfg.checks;
    let tag = dialect.trim().to_ascii_lowercase();
    let name = if tag.is_empty() {
        cfg.default_dialect.clone()
    } else {
        cfg.dialects.get(&tag).cloned().unwrap_or(tag)
    };
    let Some(dialect) = dialect_from_str(&name) else {
        let d = format!("unknown SQL dialect `{name}`");
        out.push(checks.parse_error.finding(FindingKind::Parse, path, &d));
        return out;
    };
    if sql.len() > cfg.max_input_bytes {
        let d = format!(
            "{} bytes of SQL, over the limit of {} ([gate.sql] max_input_bytes)",
            sql.len(),
            cfg.max_input_bytes
        );
        out.push(checks.too_large.finding(FindingKind::Parse, path, &d));
        return out;
    }
    if let Some(p) = pragma::parse_pragma(sql) {
        pragma_findings(cfg, path, &p, read_only, &mut out);
        return out;
    }
    let statements = match Parser::new(dialect.as_ref())
        .with_recursion_limit(cfg.max_nesting)
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_statements())
    {
        Ok(s) => s,
        Err(e) => {
            let d = format!("{e}");
            out.push(checks.parse_error.finding(FindingKind::Parse, path, &d));
            return out;
        }
    };
    if statements.is_empty() {
        out.push(
            checks
                .empty
                .finding(FindingKind::Sql, path, "no SQL statement"),
        );
        return out;
    }
    let a = Analyzer { cfg, path };
    let total = statements.len();
    // Read-only: one finding says everything that is not a single read
    // statement (the count and each statement that writes), never one per cause.
    let mut not_read: Vec<String> = Vec::new();
    if read_only && total != 1 {
        not_read.push(format!(
            "{total} statements where exactly one read statement is accepted"
        ));
    }
    for (i, stmt) in statements.iter().enumerate() {
        // The label (the statement printed back) is only rendered when a
        // finding needs it: printing an AST costs more than checking it.
        const LABEL: &str = "\u{1}statement\u{1}";
        let before = out.len();
        a.statement(stmt, LABEL, &mut out);
        if read_only && !cfg.read_only.functions.is_empty() {
            a.listed_functions(stmt, &mut out);
        }
        let writes = read_only && !a.is_read(stmt);
        if out.len() > before || writes {
            let label = if total > 1 {
                format!(
                    "statement {} of {total}, `{}`",
                    i + 1,
                    excerpt(&stmt.to_string())
                )
            } else {
                format!("`{}`", excerpt(&stmt.to_string()))
            };
            for f in &mut out[before..] {
                f.message = f.message.replace(LABEL, &label);
            }
            if writes {
                not_read.push(format!("{label} is not a read statement"));
            }
        }
    }
    if !not_read.is_empty() {
        let d = not_read.join("; ");
        out.push(checks.not_read_only.finding(FindingKind::Sql, path, &d));
    }
    a.tokens(dialect.as_ref(), sql, &mut out);
    // A read-only tool's finding already counts the statements.
    if total > 1 && !read_only && out.iter().any(|f| f.action != Action::Allow) {
        let d = format!("{total} statements in one call");
        out.push(checks.stacked.finding(FindingKind::Sql, path, &d));
    }
    out
}

/// The kinds of the statements of `sql` (`sqlparser::ast::Statement`
/// variant names, `Pragma` for a `PRAGMA` statement), parsed as
/// [`analyze_sql`] parses them; `None` when the text does not parse (the
/// analysis reports that).
pub fn statement_kinds(cfg: &SqlConfig, sql: &str, dialect: &str) -> Option<Vec<String>> {
    if pragma::parse_pragma(sql).is_some() {
        return Some(vec!["Pragma".to_string()]);
    }
    let tag = dialect.trim().to_ascii_lowercase();
    let name = cfg.dialects.get(&tag).cloned().unwrap_or(tag);
    let dialect = dialect_from_str(&name)?;
    let statements = Parser::new(dialect.as_ref())
        .with_recursion_limit(cfg.max_nesting)
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_statements())
        .ok()?;
    Some(statements.iter().map(variant_name).collect())
}

/// A single `PRAGMA` statement: a read when `[gate.sql.read_only]
/// pragmas` lists its name and it sets nothing (no `=`); otherwise the
/// `Pragma` rule of `[gate.sql.statements]`, and on a read-only tool
/// `not_read_only`.
fn pragma_findings(
    cfg: &SqlConfig,
    path: &str,
    p: &pragma::Pragma<'_>,
    read_only: bool,
    out: &mut Vec<Finding>,
) {
    let listed = cfg
        .read_only
        .pragmas
        .iter()
        .any(|n| n.eq_ignore_ascii_case(p.name));
    if listed && !p.assigns {
        return;
    }
    let mut text = String::from("PRAGMA ");
    if let Some(s) = p.schema {
        text.push_str(s);
        text.push('.');
    }
    text.push_str(p.name);
    match (p.value, p.assigns) {
        (Some(v), true) => {
            let _ = write!(text, " = {v}");
        }
        (Some(v), false) => {
            let _ = write!(text, "({v})");
        }
        (None, _) => {}
    }
    let label = format!("`{}`", excerpt(&text));
    let a = Analyzer { cfg, path };
    if let Some(rule) = cfg.statements.get("Pragma") {
        a.rule(rule, &label, out);
    }
    if read_only {
        let d = format!("{label} is not a read statement");
        out.push(cfg.checks.not_read_only.finding(FindingKind::Sql, path, &d));
    }
}

struct Analyzer<'c> {
    cfg: &'c SqlConfig,
    path: &'c str,
}

impl Analyzer<'_> {
    fn rule(&self, rule: &Check, detail: &str, out: &mut Vec<Finding>) {
        out.push(Finding {
            rule_id: rule.id.clone(),
            kind: FindingKind::Sql,
            path: self.path.to_owned(),
            severity: rule.severity,
            action: rule.action,
            message: fill(&rule.message, detail),
        });
    }

    fn statement(&self, stmt: &Statement, label: &str, out: &mut Vec<Finding>) {
        let name = variant_name(stmt);
        if let Some(rule) = self.cfg.statements.get(&name) {
            self.rule(rule, label, out);
        }
        match stmt {
            Statement::Delete(d) if self.missing_where(d.selection.as_ref()) => {
                self.rule(&self.cfg.checks.delete_without_where, label, out);
            }
            Statement::Update(u) if self.missing_where(u.selection.as_ref()) => {
                self.rule(&self.cfg.checks.update_without_where, label, out);
            }
            Statement::AlterTable(alter) => {
                for op in &alter.operations {
                    if let Some(rule) = self.cfg.alter_operations.get(&variant_name(op)) {
                        let d = format!("{label}: `{}`", excerpt(&op.to_string()));
                        self.rule(rule, &d, out);
                    }
                }
            }
            Statement::Query(q) => self.query(q, label, out),
            Statement::Insert(ins) => {
                if let Some(src) = &ins.source {
                    self.query(src, label, out);
                }
            }
            Statement::Explain { statement, .. } => self.statement(statement, label, out),
            // Code written now, run later: a trigger's body runs on every
            // matching change, so its statements are judged as if sent now
            // (a `DELETE` without `WHERE` planted in a trigger is denied like
            // the `DELETE` itself); the trigger itself is the policy's
            // `CreateTrigger` statement rule.
            Statement::CreateTrigger(t) => {
                if let Some(body) = &t.statements {
                    for s in body.statements() {
                        self.statement(s, label, out);
                    }
                }
            }
            _ => {}
        }
    }

    /// Data-modifying statements nested in a query (CTEs, `WITH ... DELETE`).
    fn query(&self, q: &Query, label: &str, out: &mut Vec<Finding>) {
        if let Some(with) = &q.with {
            for cte in &with.cte_tables {
                self.query(&cte.query, label, out);
            }
        }
        self.set_expr(&q.body, label, out);
    }

    fn set_expr(&self, e: &SetExpr, label: &str, out: &mut Vec<Finding>) {
        match e {
            SetExpr::Query(q) => self.query(q, label, out),
            SetExpr::SetOperation { left, right, .. } => {
                self.set_expr(left, label, out);
                self.set_expr(right, label, out);
            }
            SetExpr::Insert(s) | SetExpr::Update(s) | SetExpr::Delete(s) | SetExpr::Merge(s) => {
                self.statement(s, label, out);
            }
            _ => {}
        }
    }

    fn missing_where(&self, selection: Option<&Expr>) -> bool {
        match selection {
            None => true,
            Some(e) => self.cfg.tautology_is_no_where && constant_true(e),
        }
    }

    fn is_read(&self, stmt: &Statement) -> bool {
        if !self.cfg.read_only.statements.contains(&variant_name(stmt)) {
            return false;
        }
        match stmt {
            Statement::Query(q) => query_is_read(q),
            Statement::Explain { statement, .. } => self.is_read(statement),
            _ => true,
        }
    }

    /// On a read-only tool with a function list: every function called
    /// (scalar, aggregate, window or table function) must be listed.
    fn listed_functions(&self, stmt: &Statement, out: &mut Vec<Finding>) {
        let mut calls = Calls(Vec::new());
        let _ = stmt.visit(&mut calls);
        let mut names = calls.0;
        names.sort();
        names.dedup();
        for n in names {
            if !n.is_empty()
                && !self
                    .cfg
                    .read_only
                    .functions
                    .iter()
                    .any(|f| f.eq_ignore_ascii_case(&n))
            {
                let d = format!("`{n}()`");
                out.push(self.cfg.checks.unlisted_function.finding(
                    FindingKind::Sql,
                    self.path,
                    &d,
                ));
            }
        }
    }

    /// Flags calls of configured functions and executable comments, found
    /// on the token stream so that every position (select list, `WHERE`,
    /// `DEFAULT`...) is covered; string literals and comments are separate
    /// tokens and never match a function.
    fn tokens(&self, dialect: &dyn Dialect, sql: &str, out: &mut Vec<Finding>) {
        let Ok(tokens) = Tokenizer::new(dialect, sql).tokenize() else {
            return;
        };
        for t in &tokens {
            if let Token::Whitespace(Whitespace::MultiLineComment(c)) = t
                && self
                    .cfg
                    .executable_comment_prefixes
                    .iter()
                    .any(|p| c.starts_with(p.as_str()))
            {
                let d = format!("`/*{}*/`", excerpt(c));
                out.push(self.cfg.checks.executable_comment.finding(
                    FindingKind::Sql,
                    self.path,
                    &d,
                ));
            }
        }
        let significant: Vec<&Token> = tokens
            .iter()
            .filter(|t| !matches!(t, Token::Whitespace(_)))
            .collect();
        for pair in significant.windows(2) {
            if let (Token::Word(w), Token::LParen) = (pair[0], pair[1]) {
                for rule in &self.cfg.functions {
                    let lower = w.value.to_ascii_lowercase();
                    if rule.names.iter().any(|n| n.eq_ignore_ascii_case(&w.value))
                        || rule
                            .prefixes
                            .iter()
                            .any(|p| lower.starts_with(&p.to_ascii_lowercase()))
                    {
                        let called = w.value.to_ascii_lowercase();
                        out.push(Finding {
                            rule_id: rule.id.clone(),
                            kind: FindingKind::Sql,
                            path: self.path.to_owned(),
                            severity: rule.severity,
                            action: rule.action,
                            message: fill(&rule.message, &format!("`{called}()`")),
                        });
                    }
                }
            }
        }
    }
}

/// The functions a statement calls (lowercase, last part of the name).
struct Calls(Vec<String>);

fn last_part(n: &ObjectName) -> String {
    match n.0.last() {
        Some(ObjectNamePart::Identifier(i)) => i.value.to_ascii_lowercase(),
        _ => String::new(),
    }
}

impl Visitor for Calls {
    type Break = ();

    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
        if let Expr::Function(f) = e {
            self.0.push(last_part(&f.name));
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, t: &TableFactor) -> ControlFlow<()> {
        match t {
            TableFactor::Table {
                name,
                args: Some(_),
                ..
            }
            | TableFactor::Function { name, .. } => self.0.push(last_part(name)),
            _ => {}
        }
        ControlFlow::Continue(())
    }
}

fn query_is_read(q: &Query) -> bool {
    q.locks.is_empty()
        && q.with
            .as_ref()
            .is_none_or(|w| w.cte_tables.iter().all(|c| query_is_read(&c.query)))
        && set_expr_is_read(&q.body)
}

fn set_expr_is_read(e: &SetExpr) -> bool {
    match e {
        SetExpr::Select(s) => s.into.is_none(),
        SetExpr::Query(q) => query_is_read(q),
        SetExpr::SetOperation { left, right, .. } => {
            set_expr_is_read(left) && set_expr_is_read(right)
        }
        SetExpr::Values(_) | SetExpr::Table(_) => true,
        _ => false,
    }
}

/// Whether `e` is true whatever the row: literals, `x = x` on the same
/// literal or column, literal comparisons, and `OR`/`AND`/`NOT`/parentheses
/// over those. Cheap and conservative: unknown shapes are not constant.
fn constant_true(e: &Expr) -> bool {
    constant_bool(e) == Some(true)
}

fn constant_bool(e: &Expr) -> Option<bool> {
    match e {
        Expr::Nested(inner) => constant_bool(inner),
        Expr::Value(v) => match &v.value {
            Value::Boolean(b) => Some(*b),
            Value::Number(n, _) => n.parse::<f64>().ok().map(|x| x != 0.0),
            _ => None,
        },
        Expr::UnaryOp {
            op: UnaryOperator::Not,
            expr,
        } => constant_bool(expr).map(|b| !b),
        Expr::IsTrue(inner) => constant_bool(inner),
        Expr::BinaryOp { left, op, right } => match op {
            BinaryOperator::Or => match (constant_bool(left), constant_bool(right)) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
            BinaryOperator::And => match (constant_bool(left), constant_bool(right)) {
                (Some(true), Some(true)) => Some(true),
                (Some(false), _) | (_, Some(false)) => Some(false),
                _ => None,
            },
            BinaryOperator::Eq
            | BinaryOperator::NotEq
            | BinaryOperator::Lt
            | BinaryOperator::LtEq
            | BinaryOperator::Gt
            | BinaryOperator::GtEq => compare(left, op, right),
            _ => None,
        },
        _ => None,
    }
}

fn compare(left: &Expr, op: &BinaryOperator, right: &Expr) -> Option<bool> {
    let l = strip_nested(left);
    let r = strip_nested(right);
    let same_column = match (l, r) {
        (Expr::Identifier(a), Expr::Identifier(b)) => a.value.eq_ignore_ascii_case(&b.value),
        (Expr::CompoundIdentifier(a), Expr::CompoundIdentifier(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b)
                    .all(|(x, y)| x.value.eq_ignore_ascii_case(&y.value))
        }
        _ => false,
    };
    if same_column {
        // NULL = NULL is not true, but a column compared with itself is
        // true on every non-NULL row: treat as unbounded.
        return match op {
            BinaryOperator::Eq | BinaryOperator::LtEq | BinaryOperator::GtEq => Some(true),
            _ => None,
        };
    }
    let (Expr::Value(a), Expr::Value(b)) = (l, r) else {
        return None;
    };
    let ord = match (&a.value, &b.value) {
        (Value::Number(x, _), Value::Number(y, _)) => x
            .parse::<f64>()
            .ok()?
            .partial_cmp(&y.parse::<f64>().ok()?)?,
        (Value::SingleQuotedString(x), Value::SingleQuotedString(y)) => x.cmp(y),
        (Value::Boolean(x), Value::Boolean(y)) => x.cmp(y),
        _ => return None,
    };
    use std::cmp::Ordering::*;
    Some(match op {
        BinaryOperator::Eq => ord == Equal,
        BinaryOperator::NotEq => ord != Equal,
        BinaryOperator::Lt => ord == Less,
        BinaryOperator::LtEq => ord != Greater,
        BinaryOperator::Gt => ord == Greater,
        BinaryOperator::GtEq => ord != Less,
        _ => return None,
    })
}

fn strip_nested(mut e: &Expr) -> &Expr {
    while let Expr::Nested(inner) = e {
        e = inner;
    }
    e
}

/// Name of an enum variant from its `Debug` output, without formatting
/// more than the name.
fn variant_name<T: Debug>(v: &T) -> String {
    struct Name(String, bool);
    impl fmt::Write for Name {
        fn write_str(&mut self, s: &str) -> fmt::Result {
            for c in s.chars() {
                if c.is_alphanumeric() || c == '_' {
                    self.0.push(c);
                } else {
                    self.1 = true;
                    return Err(fmt::Error);
                }
            }
            Ok(())
        }
    }
    let mut n = Name(String::new(), false);
    let _ = write!(n, "{v:?}");
    n.0
}

fn excerpt(s: &str) -> String {
    const MAX: usize = 120;
    if s.chars().count() <= MAX {
        s.to_owned()
    } else {
        let cut: String = s.chars().take(MAX).collect();
        format!("{cut}...")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::GenericDialect;

    fn expr(s: &str) -> Expr {
        Parser::new(&GenericDialect {})
            .try_with_sql(s)
            .unwrap()
            .parse_expr()
            .unwrap()
    }

    #[test]
    fn detects_constant_true() {
        for t in [
            "1=1",
            "true",
            "1",
            "'a'='a'",
            "id = id",
            "(1 = 1)",
            "x = 5 OR 1=1",
            "NOT false",
            "2 > 1",
            "1=1 AND 2=2",
        ] {
            assert!(constant_true(&expr(t)), "{t}");
        }
        for t in [
            "id = 1",
            "1=0",
            "false",
            "x OR y",
            "x = 5 AND 1=1",
            "0",
            "name = 'a'",
        ] {
            assert!(!constant_true(&expr(t)), "{t}");
        }
    }

    #[test]
    fn names_variants() {
        #[derive(Debug)]
        #[allow(dead_code)]
        enum E {
            Drop { a: u8 },
            Truncate(u8),
            Unit,
        }
        assert_eq!(variant_name(&E::Drop { a: 1 }), "Drop");
        assert_eq!(variant_name(&E::Truncate(1)), "Truncate");
        assert_eq!(variant_name(&E::Unit), "Unit");
    }
}
