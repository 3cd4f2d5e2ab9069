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
//! - SQL goes through the SQL analysis (`[gate.sql]`, dialect `sqlite`):
//!   its findings as they are (a rule that denies still denies), and SQL
//!   that is not one read statement (`INSERT`, `DROP`, `ATTACH`, a
//!   setting `PRAGMA`) asks (`effects.code`), `-readonly` or not;
//! - SQL from a file (`-init FILE`, `code:sqlite-file`) or from standard
//!   input the line does not show (a pipe, a file, the terminal) asks; a
//!   here-document or here-string is read line by line as the CLI does: a
//!   line that starts with `.` outside a statement is a dot command, other
//!   lines gather into statements ended by a line ending in `;`.

use super::{Arg, Scope, Stdin, Walker, excerpt};
use crate::gate::sql::analyze_sql;

impl Walker<'_> {
    /// Judges one piece of sqlite3 code (an operand, a `-cmd` value): a dot
    /// command or SQL. `cmd` names the command for messages.
    pub(super) fn sqlite_code(&mut self, a: &Arg, cmd: &str) {
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
            self.sqlite_sql(&a.text, cmd);
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
    /// operand gives it (`stdin_code` of its entry): a here-document is
    /// judged, any other input asks.
    pub(super) fn stdin_code_of(&mut self, lang: &str, cmd: &str, scope: &Scope) {
        let doc = match &scope.stdin {
            Stdin::Literal(doc) if !doc.dynamic => doc.text.clone(),
            _ => {
                let d = format!(
                    "`{cmd}` reads {lang} code from standard input, which the line does not show"
                );
                self.effect("code", "stdin", lang);
                self.effect_check(|c| &c.code, &d);
                return;
            }
        };
        if lang != "sqlite" {
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
                self.sqlite_code(&Arg::literal(line), cmd);
                continue;
            }
            sql.push_str(line);
            sql.push('\n');
            if line.trim_end().ends_with(';') {
                self.sqlite_code(&Arg::literal(&sql), cmd);
                sql.clear();
            }
        }
        if !sql.trim().is_empty() {
            self.sqlite_code(&Arg::literal(&sql), cmd);
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

    /// SQL: the SQL rules' findings, and a finding when it is not one read
    /// statement.
    fn sqlite_sql(&mut self, text: &str, cmd: &str) {
        let sql = self.sql;
        let rules = analyze_sql(sql, self.path, text, "sqlite", false);
        let read = analyze_sql(sql, self.path, text, "sqlite", true);
        let not_read = read
            .iter()
            .any(|f| !rules.iter().any(|r| r.rule_id == f.rule_id));
        self.findings.extend(rules);
        if not_read {
            let d = format!(
                "`{cmd}` runs SQL that is not one read statement (it may write, attach or change settings): `{}`",
                excerpt(text.trim())
            );
            self.effect_check(|c| &c.code, &d);
        }
    }
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
}
