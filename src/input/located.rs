//! An input's problems at their place in the input's text (issue 29): the
//! inline `tools` become [`ToolSpec`]s whose names, tags and numbers carry
//! their byte spans in the input file, so the compiler's errors about them
//! (`base_priority` out of range, an undeclared stage, with its
//! did-you-mean) read `INPUT:LINE:COLUMN: ...` like a tag file's; and an
//! undeclared `context.conversation_stage` stands at its value. Spans come
//! from [`crate::diag::json_path`] (the input was already parsed; a value
//! it cannot find keeps no span).

use std::sync::Arc;

use crate::diag::SourceFile;
use crate::diag::json_path::{Seg, value_span};
use crate::parse::tags::ToolSpec;
use crate::plan::Plan;

use super::EvalInput;

/// The input's inline `tools` (none: `None`) as tool specs located in the
/// input file `name`, whose text is `text`: every span of a spec (name,
/// domains, preferred stages, base priority, parameter complexity,
/// follows, input schema) points at its value there.
pub fn located_tools(input: &EvalInput, name: &str, text: &str) -> Option<Vec<ToolSpec>> {
    let tools = input.tools.as_ref()?;
    let file = SourceFile::new(name, text);
    let span = |path: &[Seg<'_>]| value_span(text, path).unwrap_or(0..0);
    let specs = tools
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let at = |rest: &[Seg<'_>]| {
                let mut p = vec![Seg::Key("tools"), Seg::Index(i)];
                p.extend_from_slice(rest);
                span(&p)
            };
            let mut spec = t.clone().into_spec();
            spec.name.span = at(&[Seg::Key("name")]);
            if let Some(tags) = &mut spec.tags {
                for (j, d) in tags.domains.iter_mut().enumerate() {
                    d.span = at(&[Seg::Key("domains"), Seg::Index(j)]);
                }
                for (j, s) in tags.preferred_stages.iter_mut().enumerate() {
                    s.span = at(&[Seg::Key("preferred_stages"), Seg::Index(j)]);
                }
                tags.base_priority.span = at(&[Seg::Key("base_priority")]);
                tags.parameter_complexity.span = at(&[Seg::Key("parameter_complexity")]);
            }
            for (j, f) in spec.follows.iter_mut().enumerate() {
                f.span = at(&[Seg::Key("follows"), Seg::Index(j)]);
            }
            let schema = ["input_schema", "inputSchema"]
                .into_iter()
                .map(|k| at(&[Seg::Key(k)]))
                .find(|s| s.end > 0);
            spec.input_schema_span = schema;
            spec.file = Some(file.clone());
            spec
        })
        .collect();
    Some(specs)
}

/// The input's `context.conversation_stage` when `plan` does not declare
/// it: `NAME:LINE:COLUMN: conversation stage `X` is not declared ...
/// (did you mean `Y`?)`, at the value in the input file `name` (`text`);
/// `None` when the stage is declared or absent.
pub fn undeclared_stage(input: &EvalInput, plan: &Plan, name: &str, text: &str) -> Option<String> {
    let stage = input.context.conversation_stage.as_ref()?;
    plan.stage_index(stage).is_none().then_some(())?;
    let hint = crate::diag::did_you_mean(stage, plan.stages.iter().map(|s| s.as_str()))
        .map(|s| format!(" (did you mean `{s}`?)"))
        .unwrap_or_default();
    let message = format!(
        "conversation stage `{}` is not declared by the policy; declared: {}{hint}",
        crate::diag::echo(stage),
        plan.stages.join(", ")
    );
    let at = value_span(text, &[Seg::Key("context"), Seg::Key("conversation_stage")]);
    Some(match at {
        Some(s) => {
            let f: Arc<SourceFile> = SourceFile::new(name, text);
            let (line, col) = f.line_col(s.start);
            format!("{name}:{line}:{col}: {message}")
        }
        None => format!("{name}: {message}"),
    })
}
