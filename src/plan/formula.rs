//! The lowered score formula: the program compile makes of a policy's
//! `formula`, which evaluate runs for every tool.
//!
//! The top-level sum of the formula is kept as its terms, in evalexpr's own
//! order, each a short postfix program over an `f64` stack whose slots are the
//! plan's features ([`FEATURES`](super::FEATURES)); weights are folded in as
//! constants. When every term is `weight * feature`, [`Formula::linear`] holds
//! the branch-free form.

/// One instruction of a term's postfix program.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    /// Push a constant.
    Const(f64),
    /// Push feature number `n` (an index into [`FEATURES`](super::FEATURES)).
    Feature(u8),
    /// Pop b, pop a, push a + b.
    Add,
    /// Pop b, pop a, push a - b.
    Sub,
    /// Pop b, pop a, push a * b.
    Mul,
    /// Pop b, pop a, push a / b.
    Div,
    /// Pop b, pop a, push a.powf(b).
    Pow,
    /// Negate the top.
    Neg,
    /// Pop n values, push their minimum (folded from +inf and bounded by
    /// `i64::MAX`, exactly as evalexpr 11 does).
    Min(u8),
    /// Pop n values, push their maximum (folded from -inf, bounded by `i64::MIN`).
    Max(u8),
    /// Unary math function applied to the top.
    Func(MathFn),
}

/// The unary functions of the policy language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MathFn {
    /// `floor`
    Floor,
    /// `ceil`
    Ceil,
    /// `round` (half away from zero)
    Round,
    /// `math::abs`
    Abs,
    /// `math::sqrt`
    Sqrt,
    /// `math::ln`
    Ln,
    /// `math::exp`
    Exp,
}

impl MathFn {
    /// Applies the function to `x`.
    #[inline]
    pub fn apply(self, x: f64) -> f64 {
        match self {
            MathFn::Floor => x.floor(),
            MathFn::Ceil => x.ceil(),
            MathFn::Round => x.round(),
            MathFn::Abs => x.abs(),
            MathFn::Sqrt => x.sqrt(),
            MathFn::Ln => x.ln(),
            MathFn::Exp => x.exp(),
        }
    }
}

/// Maximum stack depth of a term program; deeper formulas are rejected.
pub const MAX_STACK: usize = 64;

/// One additive term of the formula.
#[derive(Debug, Clone)]
pub struct Term {
    /// The term's source text as evalexpr prints it (`w_domain * domain_match`).
    pub text: String,
    /// +1.0 or -1.0: whether the term is added or subtracted.
    pub sign: f64,
    /// The postfix program computing the term's (unsigned) value.
    pub program: Vec<Op>,
    /// When the term is `weight * feature` (either order), a lone feature or a
    /// constant times a feature: the feature and its constant weight.
    pub linear: Option<(u8, f64)>,
    /// Features the term reads.
    pub features: Vec<u8>,
}

/// A lowered formula: the terms of its top-level sum.
#[derive(Debug, Clone)]
pub struct Formula {
    /// Source text.
    pub source: String,
    /// Terms in evaluation order.
    pub terms: Vec<Term>,
    /// When every term is `weight * feature` (or a lone feature): (feature, signed
    /// weight) per term, for a branch-free sum. `(-w) * f` equals `-(w * f)`
    /// exactly in IEEE arithmetic, so this computes the same bits as the terms.
    pub linear: Option<Vec<(u8, f64)>>,
}
