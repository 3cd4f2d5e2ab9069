//! The `sqlite3` command-line program (stage 3, continued): its operands
//! after the database are SQL statements or dot commands (meta-commands:
//! `.tables`, `.shell CMD`), as are the values of `-cmd`; without one it
//! reads them from standard input. (Source: the sqlite3 CLI's manual,
//! <https://sqlite.org/cli.html>: "Special commands to sqlite3 (dot-commands)"
//! and "Command-line Options".)
//!
//! The effect model names this code `code:sqlite` (`[[gate.shell.commands]]`
//! `sqlite3`), and `stdin_code = "sqlite"` for the standard input. Each
//! piece is judged here:
//!
//! - a dot command is allowed when `[gate.shell.code.sqlite] commands`
//!   lists its name, spelled out (the CLI also takes unique prefixes:
//!   `.sys` is `.system`, so a prefix is not read as its command); any
//!   other (`.shell`, `.system`, `.output`, `.once`, `.load`, `.import`,
//!   `.read`, `.open`, `.backup`...) asks (`effects.code`), and so does a
//!   dot command that runs on over a line;
//! - SQL is cut into its statements as the CLI runs them (at each `;`
//!   outside a trigger's `BEGIN ... END`), and each statement goes
//!   through the SQL analysis (`[gate.sql]`, dialect `sqlite`): its
//!   findings as they are (a rule that denies still denies), and a
//!   statement that is not a read (`INSERT`, `DROP`, `ATTACH`, a setting
//!   `PRAGMA`) asks (`effects.code`); `SELECT 1; SELECT 2` is two reads;
//! - with `-readonly` the CLI opens the database with
//!   `SQLITE_OPEN_READONLY` (the CLI's manual: "-readonly  open the
//!   database read-only"), and attached databases inherit it: a statement
//!   whose kind `[gate.shell.code.sqlite] readonly_statements` lists
//!   (`INSERT`, `UPDATE`, `DELETE`, `CREATE`, `DROP`, `ALTER`) fails with
//!   "attempt to write a readonly database", so its write findings (the
//!   statement's own rule, a `DELETE`/`UPDATE` without `WHERE`, an
//!   `ALTER` operation, not being a read) are dropped. What reaches past
//!   the database even so keeps its findings: the functions of
//!   `[[gate.sql.functions]]` (`writefile()`, `load_extension()`), and
//!   the kinds not listed (`VACUUM INTO` writes a new file, `ATTACH`
//!   opens another, `PRAGMA`); dot commands are judged as without it;
//! - SQL from a file (`-init FILE`, `code:sqlite-file`) or from standard
//!   input the line does not show (a pipe, a file, the terminal) asks; a
//!   here-document or here-string is read line by line as the CLI does: a
//!   line that starts with `.` outside a statement is a dot command, other
//!   lines gather into statements ended by a line ending in `;`.

use super::{Arg, CommandSpec, Scope, Stdin, Walker, excerpt};
use crate::gate::sql::{SqlConfig, analyze_sql, statement_kinds};
use crate::plan::gate::effect::Effect;

impl Walker<'_> {
    /// Judges one piece of sqlite3 code (an operand, a `-cmd` value): a dot
    /// command or SQL. `cmd` names the command for messages; `readonly`:
    /// the CLI opens the database with `-readonly`.
    pub(super) fn sqlite_code(&mut self, a: &Arg, cmd: &str, readonly: bool) {
        self.effect("code", &a.text, "sqlite");
        if a.dynamic || a.procsub {
            let d = format!(
                "`{cmd}` sqlite code `{}` is built at run time",
                excerpt(&a.text)
            );
            self.effect_check(|c| &c.code, &d);
            return;
        }
        if a.text.starts_with('.') {
            self.sqlite_dot(&a.text, cmd);
        } else {
            for statement in split_statements(&a.text) {
                self.sqlite_sql(&statement, cmd, readonly);
            }
        }
    }

    /// SQL read from a file the line does not show (`sqlite3 -init FILE`).
    pub(super) fn sqlite_file(&mut self, a: &Arg, cmd: &str) {
        self.effect("code", &a.text, "sqlite-file");
        let d = format!(
            "`{cmd}` runs the SQL and dot commands of `{}`, a file whose content the line does not show",
            excerpt(&a.text)
        );
        self.effect_check(|c| &c.code, &d);
    }

    /// A command that reads code in `lang` from standard input when no
    /// operand gives it (`stdin_code` of its entry, as its flags leave it:
    /// [`stdin_language`]): a here-document, a here-string or a file the
    /// line wrote with content it shows is judged, any other input asks.
    /// `sqlite-readonly` is sqlite code run under `-readonly`.
    pub(super) fn stdin_code_of(&mut self, lang: &str, cmd: &str, scope: &Scope) {
        let doc = match &scope.stdin {
            Stdin::Literal(doc) if !doc.dynamic => doc.text.to_string(),
            _ => {
                let d = format!(
                    "`{cmd}` reads {lang} code from standard input, which the line does not show"
                );
                self.effect("code", "stdin", lang);
                self.effect_check(|c| &c.code, &d);
                return;
            }
        };
        let readonly = lang == "sqlite-readonly";
        if lang != "sqlite" && !readonly {
            self.foreign_code(
                lang,
                &Arg::literal(&doc),
                &format!("`{cmd}` standard input"),
            );
            return;
        }
        let mut sql = String::new();
        for line in doc.lines() {
            if sql.trim().is_empty() && line.starts_with('.') {
                sql.clear();
                self.sqlite_code(&Arg::literal(line), cmd, readonly);
                continue;
            }
            sql.push_str(line);
            sql.push('\n');
            if line.trim_end().ends_with(';') {
                self.sqlite_code(&Arg::literal(&sql), cmd, readonly);
                sql.clear();
            }
        }
        if !sql.trim().is_empty() {
            self.sqlite_code(&Arg::literal(&sql), cmd, readonly);
        }
    }

    /// A dot command: allowed when `[gate.shell.code.sqlite] commands`
    /// lists its name.
    fn sqlite_dot(&mut self, text: &str, cmd: &str) {
        let name = text[1..]
            .split(|c: char| c.is_whitespace())
            .next()
            .unwrap_or("");
        let listed = self
            .cfg
            .code
            .get("sqlite")
            .is_some_and(|r| r.commands.iter().any(|c| c == name));
        if listed && !text.trim_end().contains('\n') {
            return;
        }
        let d = format!(
            "`{cmd}` dot command `{}` is not one that only reads or formats",
            excerpt(text)
        );
        self.effect_check(|c| &c.code, &d);
    }

    /// One SQL statement: the SQL rules' findings, and a finding when it
    /// is not a read; with `readonly`, a kind the read-only connection
    /// refuses keeps only the findings that do not concern writing the
    /// database.
    fn sqlite_sql(&mut self, text: &str, cmd: &str, readonly: bool) {
        let sql = self.sql;
        let mut rules = analyze_sql(sql, self.path, text, "sqlite", false);
        let read = analyze_sql(sql, self.path, text, "sqlite", true);
        let mut not_read = read
            .iter()
            .any(|f| !rules.iter().any(|r| r.rule_id == f.rule_id));
        if readonly && (not_read || !rules.is_empty()) && self.refused_when_readonly(text) {
            let writes = write_rule_ids(sql);
            rules.retain(|f| !writes.contains(&f.rule_id.as_str()));
            not_read = false;
        }
        self.findings.extend(rules);
        if not_read {
            let d = format!(
                "`{cmd}` runs SQL that is not a read statement (it may write, attach or change settings): `{}`",
                excerpt(text.trim())
            );
            self.effect_check(|c| &c.code, &d);
        }
    }

    /// Whether every statement of `text` is of a kind that
    /// `[gate.shell.code.sqlite] readonly_statements` lists.
    fn refused_when_readonly(&self, text: &str) -> bool {
        let Some(listed) = self.cfg.code.get("sqlite").map(|r| &r.readonly_statements) else {
            return false;
        };
        statement_kinds(self.sql, text, "sqlite")
            .is_some_and(|k| !k.is_empty() && k.iter().all(|k| listed.contains(k)))
    }
}

/// The language of the code a command reads from standard input: its
/// entry's `stdin_code`, or the code its flags turn the code operands
/// into (`-readonly` gives `operands:code:sqlite-readonly`: the CLI reads
/// its standard input as it reads its operands), the last such flag in
/// `rest` (the arguments after the command name, up to `--`) winning.
pub(super) fn stdin_language<'a>(spec: &'a CommandSpec, rest: &[Arg], lang: &'a str) -> &'a str {
    let mut out = lang;
    for a in rest {
        if a.text == "--" {
            break;
        }
        if !a.text.starts_with('-') || a.dynamic {
            continue;
        }
        let Some(effs) = spec.opt(&a.text).and_then(|o| o.flag.as_ref()) else {
            continue;
        };
        for e in &effs.0 {
            if let Effect::Operands(inner) = e
                && let Effect::Code(l) = inner.as_ref()
            {
                out = l;
            }
        }
    }
    out
}

/// The ids of the SQL rules that judge a change of the database itself:
/// the statement rules, `DELETE`/`UPDATE` without `WHERE`, the `ALTER
/// TABLE` operations and `not_read_only`.
fn write_rule_ids(sql: &SqlConfig) -> Vec<&str> {
    let c = &sql.checks;
    sql.statements
        .values()
        .chain(sql.alter_operations.values())
        .chain([
            &c.delete_without_where,
            &c.update_without_where,
            &c.not_read_only,
        ])
        .map(|r| r.id.as_str())
        .collect()
}

/// The statements of an SQL text as the CLI runs them: cut at each `;`
/// outside a `CREATE TRIGGER`'s `BEGIN ... END` (whose body holds `;`s;
/// `CASE ... END` inside it is followed), each piece with its `;`;
/// pieces of blanks and comments only are left out. A text the SQL
/// tokenizer cannot read stays whole (the analysis reports it).
fn split_statements(text: &str) -> Vec<String> {
    use sqlparser::keywords::Keyword;
    use sqlparser::tokenizer::{Token, Tokenizer};
    if !text.contains(';') {
        return vec![text.to_string()];
    }
    let dialect = sqlparser::dialect::SQLiteDialect {};
    let Ok(tokens) = Tokenizer::new(&dialect, text).tokenize() else {
        return vec![text.to_string()];
    };
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut content = false;
    // Keywords of the piece so far: CREATE first, TRIGGER seen.
    let (mut create, mut trigger) = (false, false);
    let (mut body, mut case) = (0usize, 0usize);
    for t in &tokens {
        cur.push_str(&t.to_string());
        match t {
            Token::Whitespace(_) => continue,
            Token::SemiColon if body == 0 => {
                if content {
                    out.push(std::mem::take(&mut cur));
                }
                cur.clear();
                (content, create, trigger, case) = (false, false, false, 0);
                continue;
            }
            Token::Word(w) => match w.keyword {
                Keyword::CREATE if !content => create = true,
                Keyword::TRIGGER if create => trigger = true,
                Keyword::BEGIN if trigger => body += 1,
                Keyword::CASE if body > 0 => case += 1,
                Keyword::END if case > 0 => case -= 1,
                Keyword::END if body > 0 => body -= 1,
                _ => {}
            },
            _ => {}
        }
        content = true;
    }
    if content {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::gate::types::Action;
    use crate::gate::{ShellInput, analyze_shell, config::shipped};

    /// The strictest action of the findings for `line` (allow: none).
    fn worst(line: &str) -> Action {
        let cfg = shipped();
        analyze_shell(&cfg.shell, &cfg.paths, "/c", ShellInput::Line(line))
            .iter()
            .map(|f| f.action)
            .max()
            .unwrap_or(Action::Allow)
    }

    #[test]
    fn dot_commands_by_name_and_sql_by_the_sql_rules() {
        assert_eq!(worst("sqlite3 db .tables"), Action::Allow);
        assert_eq!(worst("sqlite3 db '.schema t'"), Action::Allow);
        assert_eq!(worst("sqlite3 db 'SELECT 1'"), Action::Allow);
        assert_eq!(worst("sqlite3 db '.tab'"), Action::Ask);
        assert_eq!(worst("sqlite3 db '.shell id'"), Action::Ask);
        assert_eq!(
            worst("sqlite3 db 'UPDATE t SET a = 1 WHERE b = 2'"),
            Action::Ask
        );
        assert_eq!(worst("sqlite3 db 'DROP TABLE t'"), Action::Deny);
        assert_eq!(worst("sqlite3 -bogus db 'SELECT 1'"), Action::Ask);
    }

    #[test]
    fn standard_input_is_judged_only_when_shown() {
        assert_eq!(
            worst("sqlite3 db <<'EOF'\n.tables\nSELECT a\nFROM t;\nEOF"),
            Action::Allow
        );
        assert_eq!(
            worst("sqlite3 db <<'EOF'\nSELECT 1;\n.system id\nEOF"),
            Action::Ask
        );
        assert_eq!(worst("echo 'SELECT 1' | sqlite3 db"), Action::Ask);
        assert_eq!(worst("sqlite3 db < q.sql"), Action::Ask);
    }

    #[test]
    fn readonly_turns_standard_input_into_readonly_code() {
        let cfg = shipped();
        let spec = cfg.shell.command("sqlite3").unwrap();
        let args = |v: &[&str]| v.iter().map(|t| super::Arg::literal(t)).collect::<Vec<_>>();
        let lang = |v: &[&str]| super::stdin_language(spec, &args(v), "sqlite").to_string();
        assert_eq!(lang(&["db"]), "sqlite");
        assert_eq!(lang(&["-readonly", "db"]), "sqlite-readonly");
        assert_eq!(lang(&["-header", "db", "-readonly"]), "sqlite-readonly");
        assert_eq!(lang(&["db", "--", "-readonly"]), "sqlite");
        // the same statements on standard input and as an operand
        for sql in [
            "DELETE FROM t",
            "INSERT INTO t VALUES (1)",
            "SELECT 1; SELECT 2",
        ] {
            assert_eq!(
                worst(&format!("sqlite3 -readonly db <<< '{sql}'")),
                worst(&format!("sqlite3 -readonly db '{sql}'")),
                "{sql}"
            );
        }
        assert_eq!(worst("sqlite3 db <<< 'DELETE FROM t'"), Action::Deny);
    }

    #[test]
    fn readonly_makes_database_writes_harmless() {
        for line in [
            "sqlite3 -readonly db 'INSERT INTO t VALUES (1)'",
            "sqlite3 -readonly db 'UPDATE t SET a = 1'",
            "sqlite3 -readonly db 'DELETE FROM t'",
            "sqlite3 -readonly db 'DROP TABLE t'",
            "sqlite3 -readonly db 'CREATE TABLE x (a)'",
            "sqlite3 -readonly db 'SELECT 1; INSERT INTO t VALUES (2)'",
            "sqlite3 -json -readonly db 'ALTER TABLE t DROP COLUMN a'",
        ] {
            assert_eq!(worst(line), Action::Allow, "{line}");
        }
        // what reaches past the database keeps its findings
        assert_eq!(
            worst("sqlite3 -readonly db \"SELECT writefile('x', 'y')\""),
            Action::Deny
        );
        assert_ne!(
            worst("sqlite3 -readonly db \"VACUUM INTO 'x.db'\""),
            Action::Allow
        );
        assert_eq!(
            worst("sqlite3 -readonly db \"ATTACH 'o.db' AS o\""),
            Action::Ask
        );
        assert_eq!(worst("sqlite3 -readonly db '.shell id'"), Action::Ask);
        assert_eq!(
            worst("sqlite3 -readonly db 'PRAGMA writable_schema = 1'"),
            Action::Ask
        );
        // without -readonly the same writes ask or deny as before
        assert_eq!(worst("sqlite3 db 'INSERT INTO t VALUES (1)'"), Action::Ask);
        assert_eq!(worst("sqlite3 db 'DROP TABLE t'"), Action::Deny);
    }

    #[test]
    fn each_statement_of_an_operand_is_judged() {
        assert_eq!(worst("sqlite3 db 'SELECT 1; SELECT 2'"), Action::Allow);
        assert_eq!(worst("sqlite3 db 'SELECT 1; SELECT 2;'"), Action::Allow);
        assert_eq!(
            worst("sqlite3 db 'PRAGMA table_info(t); SELECT a FROM t'"),
            Action::Allow
        );
        assert_eq!(
            worst("sqlite3 db 'SELECT 1; INSERT INTO t VALUES (1)'"),
            Action::Ask
        );
        assert_eq!(worst("sqlite3 db 'SELECT 1; DROP TABLE t'"), Action::Deny);
        assert_eq!(
            worst("sqlite3 db \"SELECT 1; SELECT load_extension('x')\""),
            Action::Deny
        );
        // a `;` in a string or a comment does not end a statement
        assert_eq!(
            worst("sqlite3 db \"SELECT ';DROP TABLE t'\""),
            Action::Allow
        );
        assert_eq!(
            worst("sqlite3 db 'SELECT 1 -- ; DROP TABLE t'"),
            Action::Allow
        );
    }

    #[test]
    fn statements_are_cut_as_the_cli_runs_them() {
        use super::split_statements;
        assert_eq!(split_statements("SELECT 1"), vec!["SELECT 1"]);
        assert_eq!(
            split_statements("SELECT 1; SELECT 2;"),
            vec!["SELECT 1;", " SELECT 2;"]
        );
        assert_eq!(split_statements("SELECT ';'; -- x\n"), vec!["SELECT ';';"]);
        let trigger = "CREATE TRIGGER r AFTER INSERT ON t BEGIN DELETE FROM u; \
                       SELECT CASE WHEN 1 THEN 2 END; END; SELECT 3";
        let parts = split_statements(trigger);
        assert_eq!(parts.len(), 2, "{parts:?}");
        assert!(parts[0].ends_with("END; END;"), "{parts:?}");
        assert_eq!(parts[1], " SELECT 3");
    }
}
