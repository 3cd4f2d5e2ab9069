//! Inline JavaScript (`node -e CODE`), parsed with oxc (`oxc_parser`) and
//! checked against the policy's harmless subset ([`CodeRules`]): every
//! identifier used must be declared in the code, a listed function or
//! global, or a `require`d listed module; every member of a module or
//! global used must be listed; every call must call one of those, a
//! function defined in the code, or a listed method; no internal
//! (`__x__`) or forbidden member (`constructor`, `prototype`), no dynamic
//! `import()`, no `with`.

use std::collections::HashMap;

use oxc_allocator::Allocator;
use oxc_ast::ast::*;
use oxc_ast_visit::{Visit, walk};
use oxc_span::SourceType;
use oxc_syntax::scope::ScopeFlags;

use super::rules::{CodeProblem, CodeRules};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Binding {
    Callable,
    Module(String),
    Value,
}

/// Checks JavaScript `code`; `Ok` when it uses only the harmless subset.
pub fn check(rules: &CodeRules, code: &str) -> Result<(), CodeProblem> {
    if code.len() > rules.max_bytes {
        return Err(CodeProblem::TooComplex(format!(
            "{} bytes of code, over the limit of {}",
            code.len(),
            rules.max_bytes
        )));
    }
    let allocator = Allocator::default();
    let mut ret = oxc_parser::Parser::new(&allocator, code, SourceType::cjs()).parse();
    if ret.panicked || ret.diagnostics.has_errors() {
        // `node --input-type=module -e`: try as a module.
        let alt = oxc_parser::Parser::new(&allocator, code, SourceType::mjs()).parse();
        if alt.panicked || alt.diagnostics.has_errors() {
            let msg = ret
                .diagnostics
                .errors()
                .next()
                .map(|d| d.to_string())
                .unwrap_or_else(|| "does not parse".into());
            return Err(CodeProblem::Parse(msg));
        }
        ret = alt;
    }
    let program = &ret.program;
    let mut binder = Binder {
        bindings: HashMap::new(),
    };
    binder.visit_program(program);
    let mut checker = Checker {
        rules,
        bindings: &binder.bindings,
        problems: Vec::new(),
        depth: 0,
        too_deep: false,
    };
    checker.visit_program(program);
    if checker.too_deep {
        return Err(CodeProblem::TooComplex(format!(
            "expressions nested more than {} deep",
            rules.max_depth
        )));
    }
    let mut problems = checker.problems;
    problems.sort();
    problems.dedup();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(CodeProblem::Uses(problems))
    }
}

/// `require("m")` → `m`.
fn required_module(e: &Expression) -> Option<String> {
    if let Expression::CallExpression(c) = e.get_inner_expression()
        && let Expression::Identifier(id) = c.callee.get_inner_expression()
        && id.name == "require"
        && c.arguments.len() == 1
        && let Some(Expression::StringLiteral(s)) = c.arguments[0].as_expression()
    {
        return Some(s.value.to_string());
    }
    None
}

struct Binder {
    bindings: HashMap<String, Binding>,
}

impl Binder {
    /// An explicit binding; a name bound twice differently is a value.
    fn bind(&mut self, name: &str, b: Binding) {
        match self.bindings.get(name) {
            Some(old) if *old != b => {
                self.bindings.insert(name.to_string(), Binding::Value);
            }
            _ => {
                self.bindings.insert(name.to_string(), b);
            }
        }
    }

    fn bind_pattern_values(&mut self, p: &BindingPattern) {
        match p {
            BindingPattern::BindingIdentifier(id) => self.bind(&id.name, Binding::Value),
            BindingPattern::ObjectPattern(o) => {
                for prop in &o.properties {
                    self.bind_pattern_values(&prop.value);
                }
                if let Some(r) = &o.rest {
                    self.bind_pattern_values(&r.argument);
                }
            }
            BindingPattern::ArrayPattern(a) => {
                for e in a.elements.iter().flatten() {
                    self.bind_pattern_values(e);
                }
                if let Some(r) = &a.rest {
                    self.bind_pattern_values(&r.argument);
                }
            }
            BindingPattern::AssignmentPattern(a) => self.bind_pattern_values(&a.left),
        }
    }
}

impl<'a> Visit<'a> for Binder {
    fn visit_variable_declarator(&mut self, it: &VariableDeclarator<'a>) {
        match (&it.id, &it.init) {
            (BindingPattern::BindingIdentifier(id), Some(init)) => {
                let inner = init.get_inner_expression();
                let b = if matches!(
                    inner,
                    Expression::ArrowFunctionExpression(_) | Expression::FunctionExpression(_)
                ) {
                    Binding::Callable
                } else if let Some(m) = required_module(inner) {
                    Binding::Module(m)
                } else if let Expression::StaticMemberExpression(s) = inner
                    && let Some(m) = required_module(&s.object)
                {
                    Binding::Module(format!("{m}.{}", s.property.name))
                } else {
                    Binding::Value
                };
                self.bind(&id.name, b);
            }
            (BindingPattern::ObjectPattern(o), Some(init))
                if required_module(init).is_some() && o.rest.is_none() =>
            {
                let m = required_module(init).unwrap_or_default();
                for prop in &o.properties {
                    match (&prop.key, &prop.value, prop.computed) {
                        (
                            PropertyKey::StaticIdentifier(k),
                            BindingPattern::BindingIdentifier(b),
                            false,
                        ) => {
                            self.bind(&b.name, Binding::Module(format!("{m}.{}", k.name)));
                        }
                        (_, v, _) => self.bind_pattern_values(v),
                    }
                }
            }
            (p, _) => self.bind_pattern_values(p),
        }
        if let Some(init) = &it.init {
            self.visit_expression(init);
        }
    }

    fn visit_function(&mut self, it: &Function<'a>, flags: ScopeFlags) {
        if let Some(id) = &it.id {
            self.bind(&id.name, Binding::Callable);
        }
        walk::walk_function(self, it, flags);
    }

    fn visit_class(&mut self, it: &Class<'a>) {
        if let Some(id) = &it.id {
            self.bind(&id.name, Binding::Callable);
        }
        walk::walk_class(self, it);
    }

    fn visit_binding_identifier(&mut self, it: &BindingIdentifier<'a>) {
        // Parameters, catch clauses, loop variables: values, unless the
        // name is already classified.
        if !self.bindings.contains_key(it.name.as_str()) {
            self.bindings.insert(it.name.to_string(), Binding::Value);
        }
    }

    fn visit_assignment_expression(&mut self, it: &AssignmentExpression<'a>) {
        if let AssignmentTarget::AssignmentTargetIdentifier(id) = &it.left {
            self.bind(&id.name, Binding::Value);
        }
        walk::walk_assignment_expression(self, it);
    }

    fn visit_import_declaration(&mut self, it: &ImportDeclaration<'a>) {
        let m = it.source.value.to_string();
        for s in it.specifiers.iter().flatten() {
            match s {
                ImportDeclarationSpecifier::ImportSpecifier(sp) => {
                    let name = match &sp.imported {
                        ModuleExportName::IdentifierName(n) => n.name.to_string(),
                        ModuleExportName::IdentifierReference(n) => n.name.to_string(),
                        ModuleExportName::StringLiteral(n) => n.value.to_string(),
                    };
                    self.bind(&sp.local.name, Binding::Module(format!("{m}.{name}")));
                }
                ImportDeclarationSpecifier::ImportDefaultSpecifier(sp) => {
                    self.bind(&sp.local.name, Binding::Module(m.clone()));
                }
                ImportDeclarationSpecifier::ImportNamespaceSpecifier(sp) => {
                    self.bind(&sp.local.name, Binding::Module(m.clone()));
                }
            }
        }
    }
}

struct Checker<'r> {
    rules: &'r CodeRules,
    bindings: &'r HashMap<String, Binding>,
    problems: Vec<String>,
    depth: usize,
    too_deep: bool,
}

impl Checker<'_> {
    fn flag(&mut self, what: String) {
        self.problems.push(what);
    }

    /// The qualified name an expression denotes when it is a module, a
    /// global namespace, or a member of one.
    fn qualified(&self, e: &Expression) -> Option<String> {
        match e.get_inner_expression() {
            Expression::Identifier(id) => match self.bindings.get(id.name.as_str()) {
                Some(Binding::Module(m)) => Some(m.clone()),
                Some(_) => None,
                None => self
                    .rules
                    .globals
                    .iter()
                    .any(|g| g == id.name.as_str())
                    .then(|| id.name.to_string()),
            },
            Expression::StaticMemberExpression(s) => self
                .qualified(&s.object)
                .map(|b| format!("{b}.{}", s.property.name)),
            Expression::ComputedMemberExpression(c) => match &c.expression {
                Expression::StringLiteral(k) => self
                    .qualified(&c.object)
                    .map(|b| format!("{b}.{}", k.value)),
                _ => None,
            },
            other => required_module(other),
        }
    }

    fn member_name_bad(&self, name: &str) -> bool {
        self.rules.internal_name(name) || self.rules.forbidden_attributes.iter().any(|f| f == name)
    }

    /// Whether calling `e` runs only harmless code.
    fn callable_ok(&self, e: &Expression) -> bool {
        match e.get_inner_expression() {
            Expression::Identifier(id) => match self.bindings.get(id.name.as_str()) {
                Some(Binding::Callable) => true,
                Some(Binding::Module(m)) => self.rules.attribute_allowed(m),
                Some(Binding::Value) => false,
                None => self.rules.functions.iter().any(|f| f == id.name.as_str()),
            },
            Expression::StaticMemberExpression(s) => match self.qualified(&s.object) {
                Some(b) => self
                    .rules
                    .attribute_allowed(&format!("{b}.{}", s.property.name)),
                None => self.method_ok(s.property.name.as_str()),
            },
            Expression::ComputedMemberExpression(c) => match &c.expression {
                Expression::StringLiteral(k) => match self.qualified(&c.object) {
                    Some(b) => self.rules.attribute_allowed(&format!("{b}.{}", k.value)),
                    None => self.method_ok(k.value.as_str()),
                },
                _ => false,
            },
            Expression::ArrowFunctionExpression(_) | Expression::FunctionExpression(_) => true,
            _ => false,
        }
    }

    fn method_ok(&self, m: &str) -> bool {
        !self.member_name_bad(m) && self.rules.methods.iter().any(|x| x == m)
    }

    fn callee_name(&self, e: &Expression) -> Option<String> {
        match e.get_inner_expression() {
            Expression::Identifier(id) => Some(id.name.to_string()),
            Expression::StaticMemberExpression(s) => match self.qualified(&s.object) {
                Some(b) => Some(format!("{b}.{}", s.property.name)),
                None => Some(format!(".{}", s.property.name)),
            },
            _ => None,
        }
    }

    fn check_callee(&mut self, callee: &Expression, args: &[Argument]) {
        // `require("m")`: only listed modules.
        if let Expression::Identifier(id) = callee.get_inner_expression()
            && id.name == "require"
            && !self.bindings.contains_key("require")
        {
            match args.first().and_then(|a| a.as_expression()) {
                Some(Expression::StringLiteral(s)) if args.len() == 1 => {
                    if !self.rules.module_allowed(s.value.as_str()) {
                        self.flag(format!("`require(\"{}\")`", s.value));
                    }
                }
                _ => self.flag("`require` of a computed name".into()),
            }
            return;
        }
        if !self.callable_ok(callee) {
            self.flag(format!("a call of `{}`", describe(callee)));
        }
        if let Some(name) = self.callee_name(callee) {
            for spec in &self.rules.callable_arguments {
                let (f, which) = spec.split_once(':').unwrap_or((spec.as_str(), "0"));
                if f != name {
                    continue;
                }
                if let Ok(k) = which.parse::<usize>()
                    && let Some(a) = args.get(k).and_then(|a| a.as_expression())
                    && !self.callable_ok(a)
                {
                    self.flag(format!("`{}` passed to `{name}`", describe(a)));
                }
            }
        }
    }
}

fn describe(e: &Expression) -> String {
    match e.get_inner_expression() {
        Expression::Identifier(id) => id.name.to_string(),
        Expression::StaticMemberExpression(s) => {
            format!("{}.{}", describe(&s.object), s.property.name)
        }
        Expression::ComputedMemberExpression(c) => format!("{}[...]", describe(&c.object)),
        Expression::CallExpression(c) => format!("{}(...)", describe(&c.callee)),
        Expression::StringLiteral(_) => "'...'".into(),
        _ => "an expression".into(),
    }
}

impl<'a> Visit<'a> for Checker<'_> {
    fn visit_expression(&mut self, it: &Expression<'a>) {
        if self.too_deep {
            return;
        }
        self.depth += 1;
        if self.depth > self.rules.max_depth {
            self.too_deep = true;
        } else {
            walk::walk_expression(self, it);
        }
        self.depth -= 1;
    }

    fn visit_identifier_reference(&mut self, it: &IdentifierReference<'a>) {
        let name = it.name.as_str();
        let unbound = !self.bindings.contains_key(name)
            && !self.rules.functions.iter().any(|f| f == name)
            && !self.rules.globals.iter().any(|f| f == name)
            && !self.rules.names.iter().any(|f| f == name)
            && name != "require";
        if self.rules.internal_name(name) || unbound {
            self.flag(format!("`{name}`"));
        }
    }

    fn visit_static_member_expression(&mut self, it: &StaticMemberExpression<'a>) {
        let p = it.property.name.as_str();
        if self.member_name_bad(p) {
            self.flag(format!("`.{p}`"));
        } else if let Some(b) = self.qualified(&it.object) {
            let q = format!("{b}.{p}");
            if !self.rules.attribute_allowed(&q) {
                self.flag(format!("`{q}`"));
            }
        }
        walk::walk_static_member_expression(self, it);
    }

    fn visit_computed_member_expression(&mut self, it: &ComputedMemberExpression<'a>) {
        match &it.expression {
            Expression::StringLiteral(k) => {
                let p = k.value.as_str();
                if self.member_name_bad(p) {
                    self.flag(format!("`[\"{p}\"]`"));
                } else if let Some(b) = self.qualified(&it.object) {
                    let q = format!("{b}.{p}");
                    if !self.rules.attribute_allowed(&q) {
                        self.flag(format!("`{q}`"));
                    }
                }
            }
            Expression::NumericLiteral(_) => {}
            _ => {
                if self.qualified(&it.object).is_some() {
                    self.flag(format!("a computed member of `{}`", describe(&it.object)));
                }
            }
        }
        walk::walk_computed_member_expression(self, it);
    }

    fn visit_call_expression(&mut self, it: &CallExpression<'a>) {
        self.check_callee(&it.callee, &it.arguments);
        walk::walk_call_expression(self, it);
    }

    fn visit_new_expression(&mut self, it: &NewExpression<'a>) {
        if !self.callable_ok(&it.callee) {
            self.flag(format!("`new {}`", describe(&it.callee)));
        }
        walk::walk_new_expression(self, it);
    }

    fn visit_tagged_template_expression(&mut self, it: &TaggedTemplateExpression<'a>) {
        if !self.callable_ok(&it.tag) {
            self.flag(format!("a tagged template `{}`", describe(&it.tag)));
        }
        walk::walk_tagged_template_expression(self, it);
    }

    fn visit_import_expression(&mut self, it: &ImportExpression<'a>) {
        self.flag("a dynamic `import()`".into());
        walk::walk_import_expression(self, it);
    }

    fn visit_import_declaration(&mut self, it: &ImportDeclaration<'a>) {
        let m = it.source.value.as_str();
        if !self.rules.module_allowed(m) {
            self.flag(format!("`import ... from \"{m}\"`"));
        }
        walk::walk_import_declaration(self, it);
    }

    fn visit_with_statement(&mut self, it: &WithStatement<'a>) {
        self.flag("a `with` statement".into());
        walk::walk_with_statement(self, it);
    }
}
