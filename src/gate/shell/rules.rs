//! Stage 4, rules: a normalised command against `[[gate.shell.rules]]`
//! (name or name regex, required flags, operand regexes and positions,
//! dynamic operands) and a redirection target against
//! `[[gate.shell.redirect_rules]]`; each hit is a finding whose message
//! shows the command as normalised.

use super::normalize::normalize_operand;
use super::{Arg, OperandPosition, Parsed, RedirectMode, Walker, excerpt};
use crate::gate::types::{Finding, FindingKind, fill};

impl Walker<'_> {
    pub(super) fn redirect_rules(&mut self, mode: RedirectMode, target: &Arg) {
        let norm = normalize_operand(&target.text);
        for rule in &self.cfg.redirect_rules {
            if rule.modes.contains(&mode) && rule.target.is_match(&norm) {
                let op = match mode {
                    RedirectMode::Read => "<",
                    RedirectMode::Write => ">",
                    RedirectMode::Append => ">>",
                    RedirectMode::ReadWrite => "<>",
                    RedirectMode::Clobber => ">|",
                };
                self.findings.push(Finding {
                    rule_id: rule.id.clone(),
                    kind: FindingKind::Shell,
                    path: self.path.to_owned(),
                    severity: rule.severity,
                    action: rule.action,
                    message: fill(&rule.message, &format!("`{op} {norm}`")),
                });
            }
        }
    }

    pub(super) fn rules(&mut self, name: &str, parsed: &Parsed, args: &[Arg]) {
        let mut hits = Vec::new();
        // Each operand normalised once, when a rule first tests it (a
        // command several rules name tests the same operands again).
        let norms: Vec<std::cell::OnceCell<String>> = parsed
            .operands
            .iter()
            .map(|_| std::cell::OnceCell::new())
            .collect();
        let norm = |i: usize| -> &str {
            norms[i].get_or_init(|| normalize_operand(&parsed.operands[i].text))
        };
        // The rules that name the command, found once per plan for a name
        // some rule lists; for any other name only a `command_regex` can.
        let cfg = self.cfg;
        let by_name = cfg.index().rules_for.get(name);
        let candidates = by_name.unwrap_or(&cfg.index().regex_rules);
        for &ri in candidates {
            let rule = &cfg.rules[ri];
            if by_name.is_none()
                && !rule
                    .command_regex
                    .as_ref()
                    .is_some_and(|r| r.is_match(name))
            {
                continue;
            }
            // The operands after the rule's subcommand, if it names one
            // (`ops` starts at operand `start`).
            let mut start = 0;
            if !rule.subcommands.is_empty() {
                match rule
                    .subcommands
                    .iter()
                    .find_map(|s| subcommand_len(s, &parsed.operands))
                {
                    Some(k) => start = k,
                    None => continue,
                }
            }
            let ops: &[&Arg] = &parsed.operands[start..];
            if rule.flags_none.iter().any(|f| parsed.flags.contains(f)) {
                continue;
            }
            let flags_present = rule.flags_all.iter().all(|f| parsed.flags.contains(f))
                && (rule.flags_any.is_empty()
                    || rule.flags_any.iter().any(|f| parsed.flags.contains(f)));
            // Without its flags a rule matches only when an expansion may
            // hold them (below): nothing else to test.
            if !flags_present && !parsed.unknown_flags {
                continue;
            }
            let n = ops.len();
            // (index among the operands, or `None` for an option's value;
            // the argument)
            let selected: Vec<(Option<usize>, &Arg)> = if rule.option_values.is_empty() {
                ops.iter()
                    .enumerate()
                    .filter(|(k, _)| match rule.operand_position {
                        OperandPosition::Any => true,
                        OperandPosition::First => *k == 0,
                        OperandPosition::Last => *k + 1 == n,
                        OperandPosition::NotLast => *k + 1 < n,
                    })
                    .map(|(k, a)| (Some(start + k), *a))
                    .collect()
            } else {
                parsed
                    .values
                    .iter()
                    .filter(|(f, _)| rule.option_values.contains(f))
                    .map(|(_, a)| (None, a))
                    .collect()
            };
            let needs_operand =
                rule.operand.is_some() || rule.operand_dynamic || !rule.option_values.is_empty();
            let operand_hit = |(i, a): &(Option<usize>, &Arg)| {
                (!rule.operand_dynamic || a.dynamic)
                    && rule.operand.as_ref().is_none_or(|r| match i {
                        Some(i) => r.is_match(norm(*i)),
                        None => r.is_match(&a.text),
                    })
            };
            let matched = if needs_operand {
                let hit = selected.iter().any(operand_hit);
                // An argument from an expansion may hold the required flags:
                // a dangerous static target is enough then.
                let static_hit = !rule.operand_dynamic
                    && selected.iter().filter(|(_, a)| !a.dynamic).any(operand_hit);
                hit && (flags_present || (parsed.unknown_flags && static_hit))
            } else {
                flags_present
            };
            if matched {
                hits.push(Finding {
                    rule_id: rule.id.clone(),
                    kind: FindingKind::Shell,
                    path: self.path.to_owned(),
                    severity: rule.severity,
                    action: rule.action,
                    message: fill(
                        &rule.message,
                        &format!(
                            "`{}`",
                            if rule.option_values.is_empty() {
                                display_normalized(name, parsed, args)
                            } else {
                                display(args)
                            }
                        ),
                    ),
                });
            }
        }
        self.findings.extend(hits);
    }
}

/// How many operands `sub` (`"stash drop"`: words separated by blanks)
/// spans at the start of `ops`, if they spell it.
fn subcommand_len(sub: &str, ops: &[&Arg]) -> Option<usize> {
    let mut k = 0;
    for w in sub.split_whitespace() {
        let a = ops.get(k)?;
        if a.dynamic || a.text != w {
            return None;
        }
        k += 1;
    }
    Some(k)
}

pub(super) fn display(args: &[Arg]) -> String {
    excerpt(
        &args
            .iter()
            .map(|a| a.text.as_str())
            .collect::<Vec<_>>()
            .join(" "),
    )
}

fn display_normalized(name: &str, p: &Parsed, args: &[Arg]) -> String {
    let mut out = String::from(name);
    for f in &p.flags {
        out.push(' ');
        out.push_str(f);
    }
    for o in &p.operands {
        out.push(' ');
        out.push_str(&normalize_operand(&o.text));
    }
    if p.flags.is_empty() && p.operands.is_empty() && args.len() > 1 {
        return display(args);
    }
    excerpt(&out)
}
