//! The effect model's vocabulary, as written in the policy.
//!
//! An effect string is `KIND` or `KIND:ARG`:
//! `none`, `read`, `write`, `delete`, `chdir`, `script`, `exec`, `install`,
//! `url`, `host`, `data`, `upload`, `network`, `system`, `remote`, `project`, `clear`,
//! `code:LANG`, `config:NAME`, `operands:KIND` (flags only: the operands'
//! effect becomes KIND), `link:hard` / `link:symbolic` (the run makes
//! links that later commands of the line follow) and `link:copy` (it
//! moves or copies such links), in `effects` and `flags`, and
//! `read:PATH` / `write:PATH` / `delete:PATH` (a fixed
//! target, in `effects` and `flags`), and `option:NAME=EFFECT` (flags
//! only: the value of option NAME takes EFFECT instead of its own: `tar
//! -x` reads the archive that `-f` names).

use serde::Deserialize;
use std::fmt;

/// What a command does with one target.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Effect {
    /// Data: nothing is done with it.
    None,
    /// The path is read.
    Read,
    /// The path is created or changed.
    Write,
    /// The path is removed.
    Delete,
    /// The command works in this directory.
    Chdir,
    /// The file is run as code (a script, a config that holds commands).
    Script,
    /// The value is a command line some program runs.
    Exec,
    /// The value names a package to install.
    Install,
    /// The value is a network address.
    Url,
    /// The value is a host name (or address) that is resolved: the text of
    /// a name reaches DNS servers (`dig NAME`, `ping NAME`).
    Host,
    /// The value is data sent over the network (a request's body or form
    /// field: `curl -d`, `wget --post-data`).
    Data,
    /// The value names a file whose content is sent over the network
    /// (`curl -T FILE`, `wget --post-file FILE`, `dig -f FILE`).
    Upload,
    /// The value is code in a language (`shell`, `sed`, `awk`, `python`,
    /// `javascript`, ...).
    Code(String),
    /// The value is a `KEY=VALUE` setting read by `[gate.shell.config.NAME]`.
    Config(String),
    /// Contacts the network.
    Network,
    /// Changes the system: processes, services, scheduled jobs, users,
    /// packages, privileges.
    System,
    /// Acts on another machine or service beyond fetching from it.
    Remote,
    /// Runs code the project defines.
    Project,
    /// Flags only: the run has none of the entry's `effects`.
    Clear,
    /// Flags only: the operands' effect becomes this one.
    Operands(Box<Effect>),
    /// Flags only: the value of the named option (as spelled in the
    /// entry's `options`) takes this effect instead of its own
    /// (`option:-f=read`: `tar -x` and `tar -t` read the archive).
    OptionValue(String, Box<Effect>),
    /// A fixed target: `write:~/.gitconfig`.
    Fixed(Box<Effect>, String),
    /// The run makes links (`link:symbolic`, `link:hard`) or moves or
    /// copies them (`link:copy`, [`LinkKind::Copy`]): the last
    /// operand (or the directory a `write` option such as `-t` names) is
    /// a link to each other operand, and later commands of the same line
    /// reach the link's target through its name. In `effects` for a
    /// command that always links (`ln`, `link`), in `flags` for an option
    /// that makes it link (`ln -s`, `cp -s`, `cp -l`); a flag's kind wins
    /// over the entry's.
    Link(LinkKind),
}

/// What kind of link an [`Effect::Link`] makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkKind {
    /// A hard link: its operand is resolved from the working directory.
    Hard,
    /// A symbolic link: its operand (the link's text) is resolved from
    /// the directory that holds the link.
    Symbolic,
    /// A move or copy (`mv`, `cp -r`): a link made earlier in the line
    /// (or a directory holding one) that an operand names is a link
    /// (the same) under the new name.
    Copy,
}

impl Effect {
    /// The kind's name, as written in the policy and in `toolgate guard`.
    pub fn kind(&self) -> &'static str {
        match self {
            Effect::None => "none",
            Effect::Read => "read",
            Effect::Write => "write",
            Effect::Delete => "delete",
            Effect::Chdir => "chdir",
            Effect::Script => "script",
            Effect::Exec => "exec",
            Effect::Install => "install",
            Effect::Url => "url",
            Effect::Host => "host",
            Effect::Data => "data",
            Effect::Upload => "upload",
            Effect::Code(_) => "code",
            Effect::Config(_) => "config",
            Effect::Network => "network",
            Effect::System => "system",
            Effect::Remote => "remote",
            Effect::Project => "project",
            Effect::Clear => "clear",
            Effect::Operands(_) => "operands",
            Effect::OptionValue(..) => "option",
            Effect::Fixed(e, _) => e.kind(),
            Effect::Link(_) => "link",
        }
    }

    /// Whether the effect applies to a path.
    pub fn is_path(&self) -> bool {
        matches!(
            self,
            Effect::Read | Effect::Write | Effect::Delete | Effect::Chdir | Effect::Script
        )
    }

    /// Parses a policy string.
    pub fn parse(s: &str) -> Result<Effect, String> {
        let simple = |k: &str| -> Option<Effect> {
            Some(match k {
                "none" => Effect::None,
                "read" => Effect::Read,
                "write" => Effect::Write,
                "delete" => Effect::Delete,
                "chdir" => Effect::Chdir,
                "script" => Effect::Script,
                "exec" => Effect::Exec,
                "install" => Effect::Install,
                "url" => Effect::Url,
                "host" => Effect::Host,
                "data" => Effect::Data,
                "upload" => Effect::Upload,
                "network" => Effect::Network,
                "system" => Effect::System,
                "remote" => Effect::Remote,
                "project" => Effect::Project,
                "clear" => Effect::Clear,
                _ => return None,
            })
        };
        if let Some(e) = simple(s) {
            return Ok(e);
        }
        let Some((k, arg)) = s.split_once(':') else {
            return Err(format!(
                "unknown effect `{s}`: expected none, read, write, delete, chdir, script, exec, install, url, host, data, upload, network, system, remote, project, clear, code:LANG, config:NAME, operands:EFFECT, link:hard|symbolic|copy or read|write|delete:PATH"
            ));
        };
        if arg.is_empty() {
            return Err(format!("effect `{s}` lacks its argument after `:`"));
        }
        match k {
            "code" => Ok(Effect::Code(arg.to_string())),
            "config" => Ok(Effect::Config(arg.to_string())),
            "operands" => {
                let inner = Effect::parse(arg)?;
                if matches!(
                    inner,
                    Effect::Operands(_) | Effect::Fixed(..) | Effect::Clear | Effect::Link(_)
                ) {
                    return Err(format!("`{s}`: operands cannot become `{arg}`"));
                }
                Ok(Effect::Operands(Box::new(inner)))
            }
            "option" => {
                let Some((name, e)) = arg.split_once('=') else {
                    return Err(format!("`{s}`: expected `option:NAME=EFFECT`"));
                };
                let inner = Effect::parse(e)?;
                if name.is_empty() || (!inner.is_path() && inner != Effect::None) {
                    return Err(format!(
                        "`{s}`: an option's value can become a path effect (read, write, delete, chdir, script) or none"
                    ));
                }
                Ok(Effect::OptionValue(name.to_string(), Box::new(inner)))
            }
            "link" => match arg {
                "hard" => Ok(Effect::Link(LinkKind::Hard)),
                "symbolic" => Ok(Effect::Link(LinkKind::Symbolic)),
                "copy" => Ok(Effect::Link(LinkKind::Copy)),
                _ => Err(format!(
                    "`{s}`: a link effect is `link:hard`, `link:symbolic` or `link:copy`"
                )),
            },
            "read" | "write" | "delete" => Ok(Effect::Fixed(
                Box::new(simple(k).unwrap_or(Effect::None)),
                arg.to_string(),
            )),
            _ => Err(format!("unknown effect `{s}`")),
        }
    }
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Effect::Code(l) => write!(f, "code:{l}"),
            Effect::Config(n) => write!(f, "config:{n}"),
            Effect::Operands(e) => write!(f, "operands:{e}"),
            Effect::OptionValue(n, e) => write!(f, "option:{n}={e}"),
            Effect::Fixed(e, p) => write!(f, "{e}:{p}"),
            Effect::Link(LinkKind::Hard) => f.write_str("link:hard"),
            Effect::Link(LinkKind::Symbolic) => f.write_str("link:symbolic"),
            Effect::Link(LinkKind::Copy) => f.write_str("link:copy"),
            other => f.write_str(other.kind()),
        }
    }
}

impl<'de> Deserialize<'de> for Effect {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Effect::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// One effect or a list of them (`flags = { "-x" = ["operands:none", "write:."] }`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effects(pub Vec<Effect>);

impl<'de> Deserialize<'de> for Effects {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Effects;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an effect string or a list of them")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Effects, E> {
                Effect::parse(s)
                    .map(|e| Effects(vec![e]))
                    .map_err(E::custom)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut a: A,
            ) -> Result<Effects, A::Error> {
                let mut v = Vec::new();
                while let Some(e) = a.next_element::<Effect>()? {
                    v.push(e);
                }
                Ok(Effects(v))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_effects_parse_and_print() {
        for s in ["link:hard", "link:symbolic", "link:copy"] {
            let e = Effect::parse(s).unwrap();
            assert!(matches!(e, Effect::Link(_)));
            assert_eq!(e.to_string(), s);
            assert_eq!(e.kind(), "link");
        }
        assert!(
            Effect::parse("link:soft")
                .unwrap_err()
                .contains("link:hard")
        );
        assert!(Effect::parse("operands:link:hard").is_err());
    }

    #[test]
    fn option_value_effects_parse_and_print() {
        let e = Effect::parse("option:-f=read").unwrap();
        assert_eq!(e, Effect::OptionValue("-f".into(), Box::new(Effect::Read)));
        assert_eq!(e.to_string(), "option:-f=read");
        assert_eq!(e.kind(), "option");
        assert!(Effect::parse("option:-f").is_err());
        assert!(Effect::parse("option:=read").is_err());
        assert!(Effect::parse("option:-f=network").is_err());
    }
}
