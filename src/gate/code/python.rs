//! Inline Python (`python3 -c CODE`), parsed with Ruff's parser
//! (`ruff_python_parser`) and checked against the policy's harmless subset
//! ([`CodeRules`]): every name used must be bound in the code, a listed
//! function, or an imported listed module; every module member used must be
//! listed; every call must call one of those, a function defined in the
//! code, or a listed method; no internal (`__x__`) or forbidden attribute.

use std::collections::HashMap;

use ruff_python_ast::visitor::{self, Visitor};
use ruff_python_ast::{self as ast, Expr, ExprContext, Stmt};

use super::rules::{CodeProblem, CodeRules};

/// What a name is bound to in the code.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Binding {
    /// `def f` / `class C` / `f = lambda ...`: code that is itself checked.
    Callable,
    /// An imported module or member, by qualified name.
    Module(String),
    /// Any other value (assignment target, parameter, loop variable).
    Value,
}

/// Checks Python `code`; `Ok` when it uses only the harmless subset.
pub fn check(rules: &CodeRules, code: &str) -> Result<(), CodeProblem> {
    if code.len() > rules.max_bytes {
        return Err(CodeProblem::TooComplex(format!(
            "{} bytes of code, over the limit of {}",
            code.len(),
            rules.max_bytes
        )));
    }
    let parsed =
        ruff_python_parser::parse_module(code).map_err(|e| CodeProblem::Parse(e.to_string()))?;
    let body = &parsed.syntax().body;
    let mut binder = Binder {
        rules,
        bindings: HashMap::new(),
        problems: Vec::new(),
    };
    for s in body {
        binder.visit_stmt(s);
    }
    let mut checker = Checker {
        rules,
        bindings: &binder.bindings,
        problems: binder.problems,
        depth: 0,
        too_deep: false,
    };
    for s in body {
        checker.visit_stmt(s);
    }
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

/// First pass: every name the code binds, and what to.
struct Binder<'r> {
    rules: &'r CodeRules,
    bindings: HashMap<String, Binding>,
    problems: Vec<String>,
}

impl Binder<'_> {
    fn bind(&mut self, name: &str, b: Binding) {
        // A name bound twice to different kinds of thing is a plain value.
        match self.bindings.get(name) {
            Some(old) if *old != b => {
                self.bindings.insert(name.to_string(), Binding::Value);
            }
            _ => {
                self.bindings.insert(name.to_string(), b);
            }
        }
    }
}

impl<'a> Visitor<'a> for Binder<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::FunctionDef(f) => self.bind(f.name.id.as_str(), Binding::Callable),
            Stmt::ClassDef(c) => self.bind(c.name.id.as_str(), Binding::Callable),
            Stmt::Assign(a) if a.targets.len() == 1 && matches!(*a.value, Expr::Lambda(_)) => {
                if let Expr::Name(n) = &a.targets[0] {
                    self.bind(n.id.as_str(), Binding::Callable);
                    visitor::walk_expr(self, &a.value);
                    return;
                }
            }
            Stmt::Import(i) => {
                for alias in &i.names {
                    let full = alias.name.id.as_str();
                    match &alias.asname {
                        Some(a) => self.bind(a.id.as_str(), Binding::Module(full.to_string())),
                        None => {
                            let first = full.split('.').next().unwrap_or(full);
                            self.bind(first, Binding::Module(first.to_string()));
                        }
                    }
                }
            }
            Stmt::ImportFrom(i) => {
                let module = i.module.as_ref().map(|m| m.id.as_str()).unwrap_or("");
                for alias in &i.names {
                    let name = alias.name.id.as_str();
                    if name == "*" {
                        self.problems.push(format!("`from {module} import *`"));
                        continue;
                    }
                    let bound = alias.asname.as_ref().map(|a| a.id.as_str()).unwrap_or(name);
                    self.bind(bound, Binding::Module(format!("{module}.{name}")));
                }
            }
            Stmt::Global(g) => {
                for n in &g.names {
                    self.bind(n.id.as_str(), Binding::Value);
                }
            }
            Stmt::Nonlocal(g) => {
                for n in &g.names {
                    self.bind(n.id.as_str(), Binding::Value);
                }
            }
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if let Expr::Name(n) = expr
            && matches!(n.ctx, ExprContext::Store | ExprContext::Del)
        {
            self.bind(n.id.as_str(), Binding::Value);
        }
        visitor::walk_expr(self, expr);
    }

    fn visit_parameter(&mut self, p: &'a ast::Parameter) {
        self.bind(p.name.id.as_str(), Binding::Value);
        visitor::walk_parameter(self, p);
    }

    fn visit_except_handler(&mut self, h: &'a ast::ExceptHandler) {
        let ast::ExceptHandler::ExceptHandler(h2) = h;
        if let Some(n) = &h2.name {
            self.bind(n.id.as_str(), Binding::Value);
        }
        visitor::walk_except_handler(self, h);
    }

    fn visit_pattern(&mut self, p: &'a ast::Pattern) {
        match p {
            ast::Pattern::MatchAs(m) => {
                if let Some(n) = &m.name {
                    self.bind(n.id.as_str(), Binding::Value);
                }
            }
            ast::Pattern::MatchStar(m) => {
                if let Some(n) = &m.name {
                    self.bind(n.id.as_str(), Binding::Value);
                }
            }
            ast::Pattern::MatchMapping(m) => {
                if let Some(n) = &m.rest {
                    self.bind(n.id.as_str(), Binding::Value);
                }
            }
            _ => {}
        }
        visitor::walk_pattern(self, p);
    }

    fn visit_alias(&mut self, _alias: &'a ast::Alias) {
        let _ = self.rules;
    }
}

/// Second pass: every use.
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

    /// The qualified module path `expr` denotes, if it names a module or
    /// module member (`os.path` → "os.path").
    fn qualified(&self, expr: &Expr) -> Option<String> {
        match expr {
            Expr::Name(n) => match self.bindings.get(n.id.as_str()) {
                Some(Binding::Module(m)) => Some(m.clone()),
                _ => None,
            },
            Expr::Attribute(a) => self
                .qualified(&a.value)
                .map(|base| format!("{base}.{}", a.attr.id.as_str())),
            _ => None,
        }
    }

    /// Whether `expr`, called, runs only harmless code.
    fn callable_ok(&self, expr: &Expr) -> bool {
        match expr {
            Expr::Name(n) => {
                let id = n.id.as_str();
                match self.bindings.get(id) {
                    Some(Binding::Callable) => true,
                    Some(Binding::Module(m)) => self.rules.attribute_allowed(m),
                    Some(Binding::Value) => false,
                    None => self.rules.functions.iter().any(|f| f == id),
                }
            }
            Expr::Attribute(a) => match self.qualified(&a.value) {
                Some(base) => self
                    .rules
                    .attribute_allowed(&format!("{base}.{}", a.attr.id.as_str())),
                None => {
                    let m = a.attr.id.as_str();
                    self.rules.methods.iter().any(|x| x == m)
                }
            },
            Expr::Lambda(_) => true,
            _ => false,
        }
    }

    fn check_call(&mut self, call: &ast::ExprCall) {
        if !self.callable_ok(&call.func) {
            let shown = describe(&call.func);
            self.flag(format!("a call of `{shown}`"));
        }
        // Functions that call what they are given.
        let name = match &*call.func {
            Expr::Name(n) => Some(n.id.to_string()),
            other => self.qualified(other),
        };
        let Some(name) = name else { return };
        for spec in &self.rules.callable_arguments {
            let (f, which) = spec.split_once(':').unwrap_or((spec.as_str(), "0"));
            if f != name {
                continue;
            }
            let arg: Option<&Expr> = match which.parse::<usize>() {
                Ok(k) => call.arguments.args.get(k),
                Err(_) => call
                    .arguments
                    .keywords
                    .iter()
                    .find(|k| k.arg.as_ref().is_some_and(|a| a.id.as_str() == which))
                    .map(|k| &k.value),
            };
            if let Some(a) = arg
                && !self.callable_ok(a)
                && !self.method_reference(a)
            {
                self.flag(format!("`{}` passed to `{name}`", describe(a)));
            }
        }
    }

    /// `str.upper` and the like: a listed method of a listed function.
    fn method_reference(&self, e: &Expr) -> bool {
        if let Expr::Attribute(a) = e
            && let Expr::Name(n) = &*a.value
            && self.bindings.get(n.id.as_str()).is_none()
            && self.rules.functions.iter().any(|f| f == n.id.as_str())
        {
            let m = a.attr.id.as_str();
            return self.rules.methods.iter().any(|x| x == m);
        }
        false
    }
}

/// Short source-like text of an expression, for messages.
fn describe(e: &Expr) -> String {
    match e {
        Expr::Name(n) => n.id.to_string(),
        Expr::Attribute(a) => format!("{}.{}", describe(&a.value), a.attr.id.as_str()),
        Expr::Call(c) => format!("{}(...)", describe(&c.func)),
        Expr::Subscript(s) => format!("{}[...]", describe(&s.value)),
        Expr::StringLiteral(_) => "'...'".into(),
        Expr::Lambda(_) => "lambda".into(),
        _ => "an expression".into(),
    }
}

impl<'a> Visitor<'a> for Checker<'_> {
    fn visit_stmt(&mut self, stmt: &'a Stmt) {
        match stmt {
            Stmt::Import(i) => {
                for alias in &i.names {
                    let m = alias.name.id.as_str();
                    if !self.rules.module_allowed(m) {
                        self.flag(format!("`import {m}`"));
                    }
                }
            }
            Stmt::ImportFrom(i) => {
                let module = i.module.as_ref().map(|m| m.id.as_str()).unwrap_or("");
                if i.level > 0 || !self.rules.module_allowed(module) {
                    self.flag(format!(
                        "`from {}{module} import ...`",
                        ".".repeat(i.level as usize)
                    ));
                } else {
                    for alias in &i.names {
                        let q = format!("{module}.{}", alias.name.id.as_str());
                        if alias.name.id.as_str() != "*"
                            && !self.rules.attribute_allowed(&q)
                            && !self.rules.module_allowed(&q)
                        {
                            self.flag(format!("`{q}`"));
                        }
                    }
                }
            }
            Stmt::FunctionDef(f) if self.rules.internal_name(f.name.id.as_str()) => {
                self.flag(format!("`{}`", f.name.id.as_str()));
            }
            Stmt::ClassDef(c) => {
                if let Some(args) = &c.arguments
                    && !args.keywords.is_empty()
                {
                    self.flag(format!(
                        "class `{}` with keywords (metaclass)",
                        c.name.id.as_str()
                    ));
                }
            }
            _ => {}
        }
        visitor::walk_stmt(self, stmt);
    }

    fn visit_decorator(&mut self, d: &'a ast::Decorator) {
        if !self.callable_ok(&d.expression) && !matches!(d.expression, Expr::Call(_)) {
            self.flag(format!("decorator `{}`", describe(&d.expression)));
        }
        visitor::walk_decorator(self, d);
    }

    fn visit_expr(&mut self, expr: &'a Expr) {
        if self.too_deep {
            return;
        }
        self.depth += 1;
        if self.depth > self.rules.max_depth {
            self.too_deep = true;
            self.depth -= 1;
            return;
        }
        match expr {
            Expr::Name(n) => {
                let id = n.id.as_str();
                let unbound = matches!(n.ctx, ExprContext::Load)
                    && !self.bindings.contains_key(id)
                    && !self.rules.functions.iter().any(|f| f == id)
                    && !self.rules.names.iter().any(|f| f == id);
                if self.rules.internal_name(id) || unbound {
                    self.flag(format!("`{id}`"));
                }
            }
            Expr::Attribute(a) => {
                let attr = a.attr.id.as_str();
                if self.rules.internal_name(attr)
                    || self.rules.forbidden_attributes.iter().any(|f| f == attr)
                {
                    self.flag(format!("`.{attr}`"));
                } else if let Some(q) = self.qualified(expr)
                    && !self.rules.attribute_allowed(&q)
                {
                    self.flag(format!("`{q}`"));
                }
            }
            Expr::Call(c) => self.check_call(c),
            _ => {}
        }
        visitor::walk_expr(self, expr);
        self.depth -= 1;
    }
}
