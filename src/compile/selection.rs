//! Compiling the selection-quality parts of a policy: the `transition_match`
//! feature from the learned counts of a transitions file and the tags'
//! `follows = [...]`, and the `semantic_match` feature's tool embeddings (see
//! `parse::selection` for the keys).

use crate::diag::{Diagnostic, ErrorKind, Sink};
use crate::parse::policy::PolicySource;
use crate::parse::tags::ToolSpec;
use crate::plan::{NameMap, Transitions};

/// Builds the compiled transitions of `policy` over the catalog whose names
/// map to indices in `by_name` (`n` tools). `with_follows` holds the compiled
/// index and the spec of each tool whose tags declare `follows` (for the
/// names and their spans).
/// Unknown names in `follows` are errors with a did-you-mean; learned pairs
/// that name a tool absent from this catalog are skipped and counted (the
/// same transitions file can serve several catalogs).
pub fn build_transitions(
    policy: &PolicySource,
    n: usize,
    with_follows: &[(usize, ToolSpec)],
    by_name: &NameMap<usize>,
    sink: &mut Sink,
    warnings: &mut Vec<String>,
) -> Option<Transitions> {
    let mut followers: Vec<Vec<u32>> = vec![Vec::new(); n];
    let any_follows = !with_follows.is_empty();
    for (b, spec) in with_follows {
        for f in &spec.follows {
            match by_name.get(&f.value) {
                Some(&a) => followers[a].push(*b as u32),
                None => sink.push(
                    spec.diag(
                        ErrorKind::UnknownName,
                        f.span.clone(),
                        format!(
                            "tool `{}`: `follows` names `{}`, which is not in the catalog",
                            crate::diag::echo(&spec.name.value),
                            crate::diag::echo(&f.value)
                        ),
                    )
                    .with_suggestion(&f.value, by_name.keys().map(|s| s.as_str())),
                ),
            }
        }
    }
    for f in &mut followers {
        f.sort_unstable();
        f.dedup();
    }
    let Some(tp) = &policy.features.transitions else {
        if any_follows {
            warnings.push(
                "tool tags declare `follows`, but the policy has no [features.transition_match]; they have no effect"
                    .into(),
            );
        }
        return None;
    };
    let mut counts: Vec<Vec<(u32, f64)>> = vec![Vec::new(); n];
    let (mut skipped, mut total) = (0, 0);
    let mut examples = Vec::new();
    match (&tp.file, &tp.data) {
        (Some(file), None) => sink.push(Diagnostic::at(
            ErrorKind::Io,
            &policy.file,
            file.span.clone(),
            format!(
                "the transitions file `{}` was not read (policies that reference data files are loaded with toolgate::load)",
                file.value
            ),
        )),
        (_, Some(data)) => {
            for (from, to, c) in &data.counts {
                match (by_name.get(from), by_name.get(&to.value)) {
                    (Some(&a), Some(&b)) => counts[a].push((b as u32, *c)),
                    _ => {
                        skipped += 1;
                        if examples.len() < SKIPPED_PAIRS_SHOWN {
                            examples.push(format!(
                                "`{}` → `{}`",
                                crate::diag::echo(from),
                                crate::diag::echo(&to.value)
                            ));
                        }
                    }
                }
            }
            total = data.counts.len();
        }
        (None, None) => {}
    }
    if skipped > 0 {
        warnings.push(skipped_warning(
            tp.file.as_ref().map(|f| f.value.as_str()),
            skipped,
            total,
            examples,
        ));
    }
    let s = tp.smoothing;
    let mut prior = vec![0.0; n];
    let mut total = 0.0;
    for row in &counts {
        for &(b, c) in row {
            prior[b as usize] += c;
            total += c;
        }
    }
    if total > 0.0 {
        for p in &mut prior {
            *p /= total;
        }
    }
    let mut sparse = Vec::with_capacity(n);
    let mut backoff = Vec::with_capacity(n);
    for mut row in counts {
        row.sort_unstable_by_key(|x| x.0);
        // the same pair twice in a file adds up
        let mut merged: Vec<(u32, f64)> = Vec::with_capacity(row.len());
        for (b, c) in row {
            match merged.last_mut() {
                Some(last) if last.0 == b => last.1 += c,
                _ => merged.push((b, c)),
            }
        }
        let out: f64 = merged.iter().map(|x| x.1).sum();
        let denom = out + s;
        if denom > 0.0 {
            backoff.push(if total > 0.0 { s / denom } else { 0.0 });
            sparse.push(merged.into_iter().map(|(b, c)| (b, c / denom)).collect());
        } else {
            backoff.push(0.0);
            sparse.push(Vec::new());
        }
    }
    Some(Transitions {
        declared: tp.declared,
        sparse,
        backoff,
        prior,
        followers,
        skipped_pairs: skipped,
    })
}

/// Learned pairs named in the warning about pairs absent from the catalog.
const SKIPPED_PAIRS_SHOWN: usize = 3;

/// The one warning about the learned pairs of the transitions `file` that
/// name a tool absent from the catalog: how many of how many, the first
/// [`SKIPPED_PAIRS_SHOWN`] (`… N more`), and what the feature still uses.
fn skipped_warning(file: Option<&str>, skipped: usize, total: usize, shown: Vec<String>) -> String {
    let file = file.map(|f| format!(" of {f}")).unwrap_or_default();
    let mut pairs = shown.join(", ");
    if skipped > shown.len() {
        pairs.push_str(", ");
        pairs.push_str(&crate::diag::more(skipped - shown.len()));
    }
    let (of, rest) = if skipped == total {
        (
            format!("all {total} learned transition pairs{file}"),
            "transition_match falls back to the tags' `follows` (the file was learned on another catalog and counts only with it)".to_string(),
        )
    } else {
        (
            format!("{skipped} of the {total} learned transition pairs{file}"),
            format!("transition_match uses the other {}", total - skipped),
        )
    };
    format!("{of} name a tool absent from this catalog and are skipped ({pairs}); {rest}")
}

/// Builds the compiled `semantic_match` of `policy` over `tools` (catalog
/// order): embeds every tool's text with the model the loader loaded from
/// `[features.semantic_match] model`, reusing what `memo` holds from the
/// last compile with the same model: all of it for the same catalog (a
/// policy-only edit), else the row of every tool whose name, description
/// and input schema are unchanged (a changed unit); `stats` counts both. A
/// policy whose model was not loaded (parsed without `toolgate::load`) is
/// an error at the `model` key. Without `memo` (a compile that keeps
/// nothing), every tool is embedded and nothing is kept.
pub(crate) fn build_semantic(
    policy: &PolicySource,
    tools: &std::sync::Arc<Vec<crate::plan::CompiledTool>>,
    memo: Option<&mut Option<super::catalog::SemanticMemo>>,
    stats: &mut super::catalog::CompileStats,
    sink: &mut Sink,
) -> Option<crate::text::semantic::SemanticIndex> {
    use super::catalog::SemanticMemo;
    use crate::text::semantic::{SemanticIndex, ToolVectors, tool_text};
    use std::sync::Arc;
    let text =
        |t: &crate::plan::CompiledTool| tool_text(&t.name, &t.description, &t.input_schema.value());
    let sp = policy.features.semantic.as_ref()?;
    let Some(data) = &sp.data else {
        sink.push(Diagnostic::at(
            ErrorKind::Io,
            &policy.file,
            sp.model.span.clone(),
            format!(
                "the semantic model `{}` was not read (policies that reference data files are loaded with toolgate::load)",
                sp.model.value
            ),
        ));
        return None;
    };
    let model = data.model.clone();
    let index = |vectors| {
        SemanticIndex::with_vectors(model.clone(), sp.normalization, vectors)
            .with_input(sp.input)
            .with_min_cosine(sp.min_cosine)
    };
    let Some(memo) = memo else {
        stats.embeddings_computed = tools.len();
        let vectors = ToolVectors::embed(&model, tools.iter().map(text));
        return Some(index(Arc::new(vectors)));
    };
    // Only what was embedded with this very model can be reused.
    let old = memo
        .take()
        .filter(|m| m.model.upgrade().is_some_and(|m| Arc::ptr_eq(&m, &model)));
    if let Some(m) = &old
        && m.tools.upgrade().is_some_and(|t| Arc::ptr_eq(&t, tools))
    {
        stats.embeddings_reused = tools.len();
        let vectors = m.vectors.clone();
        *memo = old;
        return Some(index(vectors));
    }
    let state = old.as_ref().map(|m| m.state.clone()).unwrap_or_default();
    let keys: Vec<u64> = tools.iter().map(|t| SemanticMemo::key(&state, t)).collect();
    let mut computed = 0;
    let vectors = Arc::new(ToolVectors::embed_reusing(
        &model,
        tools.len(),
        |i| {
            computed += 1;
            text(&tools[i])
        },
        |i| {
            let m = old.as_ref()?;
            Some(m.vectors.row(*m.rows.get(&keys[i])? as usize))
        },
    ));
    stats.embeddings_computed = computed;
    stats.embeddings_reused = tools.len() - computed;
    let mut rows = std::collections::HashMap::with_capacity(keys.len());
    for (i, k) in keys.into_iter().enumerate() {
        rows.entry(k).or_insert(i as u32);
    }
    *memo = Some(SemanticMemo {
        tools: Arc::downgrade(tools),
        model: Arc::downgrade(&model),
        vectors: vectors.clone(),
        rows,
        state,
    });
    Some(index(vectors))
}
