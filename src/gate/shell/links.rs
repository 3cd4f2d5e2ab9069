//! Links made earlier in the line (stage 3, continued).
//!
//! A path check resolves symlinks on the disk as it is when the line is
//! analysed, so a link the line itself makes (`ln -s ~ h && rm -rf h/`)
//! does not exist yet and would be placed by its name, inside the roots.
//! A command whose entry has a `link:hard` / `link:symbolic` effect
//! (`ln`, `link`, `cp -s`, `cp -l`) records each link it makes: where it
//! is and what it leads to. Every later path of the line is resolved
//! through those links lexically (the longest link name that is a prefix
//! of the path, repeatedly, at most `max_symlinks` times). A link whose
//! place or target is only known at run time (`ln -s "$T" h`) makes the
//! paths under it dynamic, which asks for writes and deletes (fail
//! closed).
//!
//! A move or copy (`link:copy`: `mv`, `cp`) of a link, or of a directory
//! holding one, carries it to the new name.
//!
//! Where a link goes when its name is an existing directory (`ln -s ~ h`
//! with a directory `h` makes `h/root`) is not known without the disk at
//! run time: with two operands both places are recorded.

use super::commands::{Ctx, source_arg};
use super::model::{Reading, Source};
use super::state::{Cwd, Dir};
use super::{Arg, Walker};
use crate::plan::gate::effect::{Effect, LinkKind};

/// The links made so far in one line.
#[derive(Debug, Default)]
pub(super) struct Links {
    /// Each link (absolute where the roots or `$HOME` make it so) and
    /// its target (`None`: only known at run time).
    made: Vec<(Dir, Option<Dir>)>,
    /// A link was made at a place only known at run time: any later path
    /// may lead through it.
    unknown_place: bool,
}

impl Links {
    /// No link was made.
    pub(super) fn is_empty(&self) -> bool {
        self.made.is_empty() && !self.unknown_place
    }
}

/// The kind of link a command's reading makes, if any: a flag's kind
/// (`ln -s`) over the entry's (`ln`), as flag effects come first.
pub(super) fn link_kind(r: &Reading) -> Option<LinkKind> {
    r.effects.iter().find_map(|e| match e {
        Effect::Link(k) => Some(*k),
        _ => None,
    })
}

/// The components and the kind of start of a directory.
fn parts(d: &Dir) -> (u8, &str, &[String]) {
    match d {
        Dir::Rel(c) => (0, "", c),
        Dir::Abs(c) => (1, "", c),
        Dir::Home(u, c) => (2, u, c),
    }
}

/// Whether `name` is `path` or a directory above it (`strict`: above
/// it only).
fn is_prefix(name: &Dir, path: &Dir, strict: bool) -> bool {
    let (kn, un, cn) = parts(name);
    let (kp, up, cp) = parts(path);
    kn == kp
        && un == up
        && cn.len() <= cp.len()
        && !(strict && cn.len() == cp.len())
        && cp[..cn.len()] == *cn
}

/// The last component `text` names, when plain (not `.`, `..`, `~`).
fn plain_basename(text: &str) -> Option<&str> {
    let b = text.trim_end_matches('/').rsplit('/').next()?;
    (!b.is_empty() && b != "." && b != ".." && !b.starts_with('~')).then_some(b)
}

impl Walker<'_> {
    /// `d` made absolute: a relative directory from the first root, a
    /// directory under `~` from `$HOME`; otherwise as it is.
    pub(super) fn absolute(&self, d: Dir) -> Dir {
        match &d {
            Dir::Rel(c) => match self.roots.lexical.first().and_then(|b| b.to_str()) {
                Some(root) => Dir::start().join(root).join_comps(c),
                None => d,
            },
            Dir::Home(u, c) if u.is_empty() => match std::env::var("HOME") {
                Ok(h) if h.starts_with('/') => Dir::start().join(&h).join_comps(c),
                _ => d,
            },
            _ => d,
        }
    }

    /// Where `d` leads through the links made earlier in the line, made
    /// absolute; `None` when it may lead through a link only known at run
    /// time (or through too many). `follow_last`: a link named by the
    /// whole path is followed too (not for `rm h`, which removes the
    /// link itself).
    pub(super) fn through_links(&self, d: Dir, follow_last: bool) -> Option<Dir> {
        if self.links.unknown_place {
            return None;
        }
        let mut cur = self.absolute(d);
        for _ in 0..=self.roots.max_symlinks {
            let best = self
                .links
                .made
                .iter()
                .filter(|(name, _)| is_prefix(name, &cur, !follow_last))
                .max_by_key(|(name, _)| parts(name).2.len());
            let Some((name, target)) = best else {
                return Some(cur);
            };
            let target = target.as_ref()?;
            let rest = &parts(&cur).2[parts(name).2.len()..];
            cur = self.absolute(target.join_comps(rest));
        }
        None
    }

    /// A move or copy of `src` (run in `cwd`, `None`: unknown) to `dest`:
    /// each link made earlier at `src` or below it is a link under
    /// `dest` too; a source only known at run time may be one (`dest`
    /// becomes dynamic).
    fn carry_links(&mut self, dest: Dir, src: &Arg, cwd: Option<&Dir>) {
        let from = match cwd {
            _ if src.dynamic => None,
            Some(c) => Some(c.join(&src.text)),
            None if src.text.starts_with(['/', '~']) => Some(Dir::start().join(&src.text)),
            None => None,
        };
        let Some(from) = from.and_then(|f| self.through_links(f, false)) else {
            self.push_link(dest, None);
            return;
        };
        let carried: Vec<(Dir, Option<Dir>)> = self
            .links
            .made
            .iter()
            .filter(|(name, _)| is_prefix(&from, name, false))
            .map(|(name, to)| {
                let below = &parts(name).2[parts(&from).2.len()..];
                (dest.join_comps(below), to.clone())
            })
            .collect();
        for (name, to) in carried {
            self.push_link(name, to);
        }
    }

    /// Records one link, or, past `max_links`, makes every later path
    /// dynamic (copies of a directory holding links would otherwise
    /// double them at each copy).
    fn push_link(&mut self, name: Dir, to: Option<Dir>) {
        if self.links.made.len() >= self.cfg.limits.max_links {
            self.links.unknown_place = true;
            self.links.made.clear();
        } else if !self.links.unknown_place {
            self.links.made.push((name, to));
        }
    }

    /// Records the links a command makes (its reading has a `link:KIND`
    /// effect): `LINK_NAME` for `ln TARGET LINK_NAME` (and
    /// `LINK_NAME/BASENAME`, in case it is a directory), `DIR/BASENAME`
    /// for each target with `ln TARGET... DIR` or `-t DIR`, `./BASENAME`
    /// for `ln TARGET`.
    pub(super) fn record_links(
        &mut self,
        kind: LinkKind,
        rest: &[Arg],
        reading: &Reading,
        ctx: &Ctx,
    ) {
        // A move or copy matters only once a link was made; past the
        // limit, or at an unknown place, every later path is dynamic.
        if (kind == LinkKind::Copy && self.links.is_empty()) || self.links.unknown_place {
            return;
        }
        let ops: Vec<&Arg> = reading
            .operands
            .iter()
            .filter_map(|&i| rest.get(i))
            .collect();
        // The directory of a `write` option (`-t DIR`).
        let dir_opt = reading
            .targets
            .iter()
            .filter(|t| t.effect == Effect::Write)
            .find(|t| match t.source {
                Source::Arg(i) => !reading.operands.contains(&i),
                Source::Part(..) => true,
                _ => false,
            })
            .and_then(|t| source_arg(rest, &t.source));
        // (link name as text, its place is dynamic, target operand)
        let mut made: Vec<(String, bool, &Arg)> = Vec::new();
        let base_of = |w: &Walker, src: &Arg| -> Option<String> {
            if let Some(b) = plain_basename(&src.text) {
                return Some(b.to_string());
            }
            let d = w.absolute(Dir::start().join(&src.text));
            parts(&d).2.last().cloned()
        };
        match (&dir_opt, ops.as_slice()) {
            (Some(dir), srcs) => {
                for s in srcs {
                    if let Some(b) = base_of(self, s) {
                        made.push((format!("{}/{b}", dir.text), dir.dynamic, s));
                    }
                }
            }
            (None, []) => {}
            (None, [only]) => {
                if let Some(b) = base_of(self, only) {
                    made.push((b, false, only));
                }
            }
            (None, [srcs @ .., dest]) => {
                if srcs.len() == 1 {
                    made.push((dest.text.to_string(), dest.dynamic, srcs[0]));
                }
                for s in srcs {
                    if let Some(b) = base_of(self, s) {
                        made.push((format!("{}/{b}", dest.text), dest.dynamic, s));
                    }
                }
            }
        }
        // The directories the command may run in (`None`: unknown).
        let cwds: Vec<Option<Dir>> = match self.cwd_of(ctx) {
            Cwd::Known(v) => v.iter().cloned().map(Some).collect(),
            Cwd::Unknown => vec![None],
        };
        for (name, name_dynamic, target) in made {
            for c in &cwds {
                let link = match c {
                    _ if name_dynamic => None,
                    Some(c) => Some(c.join(&name)),
                    None if name.starts_with(['/', '~']) => Some(Dir::start().join(&name)),
                    None => None,
                };
                let Some(link) = link.map(|l| self.absolute(l)) else {
                    self.links.unknown_place = true;
                    return;
                };
                if kind == LinkKind::Copy {
                    self.carry_links(link, target, c.as_ref());
                    continue;
                }
                let from = match (kind, c) {
                    (LinkKind::Symbolic, _) => Some(link.join("..")),
                    (LinkKind::Hard | LinkKind::Copy, Some(c)) => Some(c.clone()),
                    (LinkKind::Hard | LinkKind::Copy, None) => {
                        target.text.starts_with(['/', '~']).then(Dir::start)
                    }
                };
                let to = from
                    .filter(|_| !target.dynamic)
                    .map(|f| self.absolute(f.join(&target.text)));
                self.push_link(link, to);
            }
        }
    }
}
