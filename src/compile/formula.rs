//! The score formula: parsed by evalexpr, lowered to a slot-indexed program.
//!
//! A policy writes its score as an evalexpr expression over named features
//! (`domain_match`, ...) and weights (`w_domain`, ... from `[score.weights]`).
//! Walking evalexpr's tree for every tool is slow (about 0.66 µs per 7-term sum),
//! so at compile time the tree is lowered:
//!
//! 1. weights become constants, features become slot indices;
//! 2. the top-level sum is split into *terms* along its left spine, so each term's
//!    contribution can be explained and the terms still add up in evalexpr's own
//!    order (`((t1 + t2) - t3) + t4`);
//! 3. each term becomes a short postfix program over an `f64` stack.
//!
//! **Language.** All numbers are 64-bit floats: an integer literal `1` means
//! `1.0`, so `1/2` is `0.5` (evalexpr alone would give integer `0`). Supported:
//! `+ - * / ^`, unary `-`, parentheses, and the functions `min(a, b, ...)`,
//! `max(a, b, ...)`, `floor`, `ceil`, `round`, `math::abs`, `math::sqrt`,
//! `math::ln`, `math::exp`. Anything else (comparisons, `&&`, strings,
//! assignments) is rejected when the policy loads.
//!
//! [`reference_eval`] evaluates the same formula through evalexpr (integer
//! literals converted to floats); property tests check that both agree exactly.

use evalexpr::{Node, Operator, Value};

use crate::plan::formula::{Formula, MAX_STACK, MathFn, Op, Term};

/// The unary function called `name` in the policy language.
fn math_fn(name: &str) -> Option<MathFn> {
    Some(match name {
        "floor" => MathFn::Floor,
        "ceil" => MathFn::Ceil,
        "round" => MathFn::Round,
        "math::abs" => MathFn::Abs,
        "math::sqrt" => MathFn::Sqrt,
        "math::ln" => MathFn::Ln,
        "math::exp" => MathFn::Exp,
        _ => return None,
    })
}

/// The names of the functions a formula may call.
pub const FUNCTIONS: &[&str] = &[
    "min",
    "max",
    "floor",
    "ceil",
    "round",
    "math::abs",
    "math::sqrt",
    "math::ln",
    "math::exp",
];

/// Longest formula (and rule expression) accepted, in bytes. evalexpr builds
/// and walks its tree recursively; this bound keeps that recursion far from the
/// stack limit of any thread (a reload runs on its own thread), whatever the
/// formula's shape.
pub const MAX_EXPRESSION_LEN: usize = 2000;

/// Why a formula was rejected.
#[derive(Debug, Clone, PartialEq)]
pub enum FormulaError {
    /// evalexpr could not parse it.
    Parse(String),
    /// It uses an operator outside the policy language.
    Unsupported(String),
    /// It names something that is neither a feature nor a weight.
    UnknownVariable(String),
    /// It calls a function outside the policy language.
    UnknownFunction(String),
    /// Nesting too deep.
    TooDeep,
    /// Longer than [`MAX_EXPRESSION_LEN`] bytes.
    TooLong(usize),
}

impl std::fmt::Display for FormulaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FormulaError::Parse(e) => write!(f, "the formula does not parse: {e}"),
            FormulaError::Unsupported(op) => write!(
                f,
                "the formula uses `{op}`, which the policy language does not support (only + - * / ^, unary -, parentheses and the functions {})",
                FUNCTIONS.join(", ")
            ),
            FormulaError::UnknownVariable(v) => write!(
                f,
                "the formula names `{v}`, which is neither a feature nor a weight of [score.weights]"
            ),
            FormulaError::UnknownFunction(v) => write!(
                f,
                "the formula calls `{v}`, which is not one of {}",
                FUNCTIONS.join(", ")
            ),
            FormulaError::TooDeep => {
                write!(f, "the formula is nested too deeply (stack > {MAX_STACK})")
            }
            FormulaError::TooLong(n) => write!(
                f,
                "the formula is {n} bytes long; at most {MAX_EXPRESSION_LEN} are accepted"
            ),
        }
    }
}

/// Lowers `source`. `feature` maps a name to a feature index, `weight` to a constant.
pub fn lower(
    source: &str,
    feature: &dyn Fn(&str) -> Option<u8>,
    weight: &dyn Fn(&str) -> Option<f64>,
) -> Result<Formula, FormulaError> {
    if source.len() > MAX_EXPRESSION_LEN {
        return Err(FormulaError::TooLong(source.len()));
    }
    let tree =
        evalexpr::build_operator_tree(source).map_err(|e| FormulaError::Parse(e.to_string()))?;
    let root =
        unwrap_root(&tree).ok_or_else(|| FormulaError::Parse("the formula is empty".into()))?;
    let mut spine = Vec::new();
    split_terms(root, 1.0, &mut spine);
    let mut terms = Vec::new();
    for (sign, node) in spine {
        let mut program = Vec::new();
        emit(node, feature, weight, &mut program)?;
        if max_depth(&program) > MAX_STACK {
            return Err(FormulaError::TooDeep);
        }
        let mut features: Vec<u8> = program
            .iter()
            .filter_map(|op| {
                if let Op::Feature(f) = op {
                    Some(*f)
                } else {
                    None
                }
            })
            .collect();
        features.sort_unstable();
        features.dedup();
        let linear = match program.as_slice() {
            [Op::Feature(f)] => Some((*f, 1.0)),
            [Op::Const(w), Op::Feature(f), Op::Mul] | [Op::Feature(f), Op::Const(w), Op::Mul] => {
                Some((*f, *w))
            }
            _ => None,
        };
        terms.push(Term {
            text: infix(node),
            sign,
            program,
            linear,
            features,
        });
    }
    let linear = terms
        .iter()
        .map(|t| {
            t.linear
                .map(|(f, w)| (f, if t.sign < 0.0 { -w } else { w }))
        })
        .collect::<Option<Vec<_>>>();
    Ok(Formula {
        source: source.to_string(),
        terms,
        linear,
    })
}

/// Prints a (supported) expression tree back in infix form, for explanations.
pub fn infix(node: &Node) -> String {
    let kids = node.children();
    let bin = |op: &str| match kids {
        [l, r] => format!("{} {op} {}", infix(l), infix(r)),
        _ => node.to_string(),
    };
    match node.operator() {
        Operator::RootNode => match kids {
            [only] if matches!(only.operator(), Operator::Add | Operator::Sub) => {
                format!("({})", infix(only))
            }
            [only] => infix(only),
            _ => String::new(),
        },
        Operator::Add => bin("+"),
        Operator::Sub => bin("-"),
        Operator::Mul => bin("*"),
        Operator::Div => bin("/"),
        Operator::Exp => bin("^"),
        Operator::Neg => match kids {
            [x] => format!("-{}", infix(x)),
            _ => node.to_string(),
        },
        Operator::Const { value } => value.to_string(),
        Operator::VariableIdentifierRead { identifier } => identifier.clone(),
        Operator::FunctionIdentifier { identifier } => match kids {
            [only] => {
                let inner = unwrap_root(only).unwrap_or(only);
                let args: Vec<String> = if matches!(inner.operator(), Operator::Tuple) {
                    inner.children().iter().map(infix).collect()
                } else {
                    vec![infix(inner)]
                };
                format!("{identifier}({})", args.join(", "))
            }
            _ => node.to_string(),
        },
        _ => node.to_string().trim().to_string(),
    }
}

fn unwrap_root(node: &Node) -> Option<&Node> {
    let mut n = node;
    while matches!(n.operator(), Operator::RootNode) {
        match n.children() {
            [only] => n = only,
            _ => return None,
        }
    }
    Some(n)
}

/// Splits along the left spine of `+`/`-`: `((a + b) - c)` gives `[+a, +b, -c]`.
fn split_terms<'n>(node: &'n Node, sign: f64, out: &mut Vec<(f64, &'n Node)>) {
    match (node.operator(), node.children()) {
        (Operator::Add, [l, r]) => {
            split_terms(l, sign, out);
            out.push((1.0, r));
        }
        (Operator::Sub, [l, r]) => {
            split_terms(l, sign, out);
            out.push((-1.0, r));
        }
        (Operator::RootNode, [only])
            if matches!(only.operator(), Operator::Add | Operator::Sub) =>
        {
            split_terms(only, sign, out)
        }
        _ => out.push((sign, node)),
    }
}

fn emit(
    node: &Node,
    feature: &dyn Fn(&str) -> Option<u8>,
    weight: &dyn Fn(&str) -> Option<f64>,
    out: &mut Vec<Op>,
) -> Result<(), FormulaError> {
    let kids = node.children();
    let bin = |op: Op, out: &mut Vec<Op>| -> Result<(), FormulaError> {
        let [l, r] = kids else {
            return Err(FormulaError::Parse(format!(
                "`{}` is missing an operand",
                node.operator()
            )));
        };
        emit(l, feature, weight, out)?;
        emit(r, feature, weight, out)?;
        out.push(op);
        Ok(())
    };
    match node.operator() {
        Operator::RootNode => match kids {
            [only] => emit(only, feature, weight, out),
            _ => Err(FormulaError::Unsupported(
                "an empty or multi-part group".into(),
            )),
        },
        Operator::Add => bin(Op::Add, out),
        Operator::Sub => bin(Op::Sub, out),
        Operator::Mul => bin(Op::Mul, out),
        Operator::Div => bin(Op::Div, out),
        Operator::Exp => bin(Op::Pow, out),
        Operator::Neg => {
            let [x] = kids else {
                return Err(FormulaError::Unsupported("-".into()));
            };
            emit(x, feature, weight, out)?;
            out.push(Op::Neg);
            Ok(())
        }
        Operator::Const { value } => match value {
            Value::Float(x) => {
                out.push(Op::Const(*x));
                Ok(())
            }
            Value::Int(i) => {
                out.push(Op::Const(*i as f64));
                Ok(())
            }
            other => Err(FormulaError::Unsupported(format!("the constant {other}"))),
        },
        Operator::VariableIdentifierRead { identifier } => {
            if let Some(f) = feature(identifier) {
                out.push(Op::Feature(f));
                Ok(())
            } else if let Some(w) = weight(identifier) {
                out.push(Op::Const(w));
                Ok(())
            } else {
                Err(FormulaError::UnknownVariable(identifier.clone()))
            }
        }
        Operator::FunctionIdentifier { identifier } => {
            let args: Vec<&Node> = match kids {
                [only] => {
                    let inner = unwrap_root(only).unwrap_or(only);
                    if matches!(inner.operator(), Operator::Tuple) {
                        inner.children().iter().collect()
                    } else {
                        vec![inner]
                    }
                }
                _ => return Err(FormulaError::Unsupported(format!("{identifier}(...)"))),
            };
            match identifier.as_str() {
                "min" | "max" => {
                    if args.len() < 2 || args.len() > u8::MAX as usize {
                        return Err(FormulaError::Unsupported(format!(
                            "{identifier} with {} argument(s) (it takes 2 or more)",
                            args.len()
                        )));
                    }
                    for a in &args {
                        emit(a, feature, weight, out)?;
                    }
                    let n = args.len() as u8;
                    out.push(if identifier == "min" {
                        Op::Min(n)
                    } else {
                        Op::Max(n)
                    });
                    Ok(())
                }
                name => {
                    let f = math_fn(name)
                        .ok_or_else(|| FormulaError::UnknownFunction(name.to_string()))?;
                    if args.len() != 1 {
                        return Err(FormulaError::Unsupported(format!(
                            "{name} with {} arguments",
                            args.len()
                        )));
                    }
                    emit(args[0], feature, weight, out)?;
                    out.push(Op::Func(f));
                    Ok(())
                }
            }
        }
        other => Err(FormulaError::Unsupported(other.to_string())),
    }
}

fn max_depth(program: &[Op]) -> usize {
    let mut depth: usize = 0;
    let mut max = 0;
    for op in program {
        match op {
            Op::Const(_) | Op::Feature(_) => depth += 1,
            Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Pow => depth = depth.saturating_sub(1),
            Op::Min(n) | Op::Max(n) => depth = depth.saturating_sub(*n as usize - 1),
            Op::Neg | Op::Func(_) => {}
        }
        max = max.max(depth);
    }
    max
}

/// Evaluates `source` through evalexpr itself, with every integer literal read as
/// a float (the policy language's meaning), the features bound by name and the
/// weights as given. The reference the lowered form is tested against.
pub fn reference_eval(
    source: &str,
    features: &[(&str, f64)],
    weights: &[(&str, f64)],
) -> Result<f64, String> {
    use evalexpr::{ContextWithMutableVariables, HashMapContext};
    if source.len() > MAX_EXPRESSION_LEN {
        return Err(format!("longer than {MAX_EXPRESSION_LEN} bytes"));
    }
    let mut tree = evalexpr::build_operator_tree(source).map_err(|e| e.to_string())?;
    ints_to_floats(&mut tree);
    let mut ctx = HashMapContext::new();
    for (k, v) in features.iter().chain(weights.iter()) {
        ctx.set_value((*k).to_string(), Value::Float(*v))
            .map_err(|e| e.to_string())?;
    }
    tree.eval_number_with_context(&ctx)
        .map_err(|e| e.to_string())
}

fn ints_to_floats(node: &mut Node) {
    if let Operator::Const { value } = node.operator_mut()
        && let Value::Int(i) = value
    {
        *value = Value::Float(*i as f64);
    }
    for c in node.children_mut() {
        ints_to_floats(c);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feat(n: &str) -> Option<u8> {
        ["a", "b", "c"]
            .iter()
            .position(|x| *x == n)
            .map(|i| i as u8)
    }
    fn w(n: &str) -> Option<f64> {
        (n == "w").then_some(0.5)
    }

    #[test]
    fn splits_left_spine_and_explains_linear_terms() {
        let f = lower("w*a + 0.25*b - c", &feat, &w).unwrap();
        assert_eq!(f.terms.len(), 3);
        assert_eq!(f.terms[0].linear, Some((0, 0.5)));
        assert_eq!(f.terms[1].linear, Some((1, 0.25)));
        assert_eq!(f.terms[2].sign, -1.0);
        let x = f.eval(&[1.0, 2.0, 3.0], None);
        assert_eq!(x, 0.5 + 0.5 - 3.0);
    }

    #[test]
    fn integers_are_floats() {
        let f = lower("1/2 * a", &feat, &w).unwrap();
        assert_eq!(f.eval(&[1.0, 0.0, 0.0], None), 0.5);
        assert_eq!(reference_eval("1/2 * a", &[("a", 1.0)], &[]).unwrap(), 0.5);
    }

    #[test]
    fn rejects_unknown_names_and_operators() {
        assert!(
            matches!(lower("a + zz", &feat, &w), Err(FormulaError::UnknownVariable(v)) if v == "zz")
        );
        assert!(matches!(
            lower("a > b", &feat, &w),
            Err(FormulaError::Unsupported(_))
        ));
        assert!(matches!(
            lower("foo(a)", &feat, &w),
            Err(FormulaError::UnknownFunction(_))
        ));
        assert!(matches!(
            lower("a +", &feat, &w),
            Err(FormulaError::Parse(_))
        ));
        assert!(matches!(
            lower("\"s\" + a", &feat, &w),
            Err(FormulaError::Unsupported(_))
        ));
        assert!(matches!(
            lower("a = 1", &feat, &w),
            Err(FormulaError::Unsupported(_))
        ));
    }

    #[test]
    fn functions_match_evalexpr() {
        let src = "min(a, b, 0.3) + max(a, c) - math::sqrt(b) + floor(c) * round(a)";
        let f = lower(src, &feat, &w).unwrap();
        let vals = [0.7, 0.2, 2.5];
        let r = reference_eval(src, &[("a", 0.7), ("b", 0.2), ("c", 2.5)], &[]).unwrap();
        assert_eq!(f.eval(&vals, None), r);
    }
}
