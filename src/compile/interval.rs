//! Interval arithmetic over the lowered formula (see [`crate::plan::formula`]).
//!
//! Each operation takes intervals that hold every value its operands can take
//! and returns one that holds every value the operation can produce, computed
//! with the same `f64` operations the interpreter uses (IEEE `+ - * /`, `powf`,
//! `exp`, `ln`, `sqrt` are monotone in each argument, so evaluating them on the
//! endpoints bounds what they give inside). `nan` records that some inputs
//! make the value NaN; an interval with `lo > hi` holds no number at all (only
//! NaN, when `nan` is set).

use crate::plan::FEATURES;
use crate::plan::formula::{Formula, MAX_STACK, MathFn, Op};

/// A closed interval of `f64`, and whether NaN is also possible.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Lowest value (may be `-inf`).
    pub lo: f64,
    /// Highest value (may be `+inf`).
    pub hi: f64,
    /// Some inputs give NaN.
    pub nan: bool,
}

impl Interval {
    /// `[x, x]`.
    pub fn point(x: f64) -> Self {
        if x.is_nan() {
            return Self::nan_only();
        }
        Interval {
            lo: x,
            hi: x,
            nan: false,
        }
    }

    /// `[lo, hi]` (the endpoints are ordered).
    pub fn new(lo: f64, hi: f64) -> Self {
        Self::hull_of(&[lo, hi])
    }

    /// Every number, and NaN.
    pub fn everything() -> Self {
        Interval {
            lo: f64::NEG_INFINITY,
            hi: f64::INFINITY,
            nan: true,
        }
    }

    /// No number, only NaN.
    pub fn nan_only() -> Self {
        Interval {
            lo: f64::INFINITY,
            hi: f64::NEG_INFINITY,
            nan: true,
        }
    }

    /// Whether it holds no number.
    pub fn is_empty(&self) -> bool {
        self.lo > self.hi
    }

    /// Whether it is one number (and never NaN).
    pub fn is_point(&self) -> bool {
        self.lo == self.hi && !self.nan
    }

    /// Whether `x` lies within.
    pub fn contains(&self, x: f64) -> bool {
        self.lo <= x && x <= self.hi
    }

    /// The smallest interval holding `values`; a NaN among them (an endpoint
    /// computation such as `inf - inf`) widens the result to everything.
    pub fn hull_of(values: &[f64]) -> Self {
        let mut out = Interval {
            lo: f64::INFINITY,
            hi: f64::NEG_INFINITY,
            nan: false,
        };
        for &v in values {
            if v.is_nan() {
                return Self::everything();
            }
            out.lo = out.lo.min(v);
            out.hi = out.hi.max(v);
        }
        out
    }

    /// The smallest interval holding both.
    pub fn hull(self, other: Interval) -> Self {
        Interval {
            lo: self.lo.min(other.lo),
            hi: self.hi.max(other.hi),
            nan: self.nan || other.nan,
        }
    }

    fn with_nan(mut self, nan: bool) -> Self {
        self.nan |= nan;
        self
    }

    fn binary(a: Interval, b: Interval, f: impl Fn(Interval, Interval) -> Interval) -> Interval {
        if a.is_empty() || b.is_empty() {
            return Self::nan_only();
        }
        f(a, b).with_nan(a.nan || b.nan)
    }

    /// `a + b`.
    fn add_i(a: Interval, b: Interval) -> Interval {
        Self::binary(a, b, |a, b| Self::hull_of(&[a.lo + b.lo, a.hi + b.hi]))
    }

    /// `a - b`.
    fn sub_i(a: Interval, b: Interval) -> Interval {
        Self::binary(a, b, |a, b| Self::hull_of(&[a.lo - b.hi, a.hi - b.lo]))
    }

    /// `a * b`.
    fn mul_i(a: Interval, b: Interval) -> Interval {
        Self::binary(a, b, |a, b| {
            Self::hull_of(&[a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi])
        })
    }

    /// `a / b`.
    fn div_i(a: Interval, b: Interval) -> Interval {
        Self::binary(a, b, |a, b| {
            if b.lo <= 0.0 && b.hi >= 0.0 {
                // a division by (something near) zero: anything, NaN for 0/0
                Self::everything()
            } else {
                Self::hull_of(&[a.lo / b.lo, a.lo / b.hi, a.hi / b.lo, a.hi / b.hi])
            }
        })
    }

    /// `a.powf(b)`.
    pub fn pow(a: Interval, b: Interval) -> Interval {
        Self::binary(a, b, |a, b| {
            let corners = [
                a.lo.powf(b.lo),
                a.lo.powf(b.hi),
                a.hi.powf(b.lo),
                a.hi.powf(b.hi),
            ];
            if a.lo >= 0.0 {
                // x^y = exp(y ln x) is monotone in each argument for x >= 0:
                // the extremes lie at the corners
                Self::hull_of(&corners)
            } else if b.is_point() && b.lo.fract() == 0.0 && b.lo.abs() < 1e9 {
                let n = b.lo;
                if n < 0.0 && a.hi >= 0.0 {
                    return Self::everything();
                }
                let odd = (n / 2.0).fract() != 0.0;
                let mut h = Self::hull_of(&[a.lo.powf(n), a.hi.powf(n)]);
                if !odd && a.hi >= 0.0 && n > 0.0 {
                    // an even power of an interval around 0 reaches 0
                    h.lo = h.lo.min(0.0f64.powf(n));
                }
                h
            } else {
                // a negative base to a fractional power is NaN
                Self::everything()
            }
        })
    }

    /// `-a`.
    fn neg_i(a: Interval) -> Interval {
        if a.is_empty() {
            return a;
        }
        Interval {
            lo: -a.hi,
            hi: -a.lo,
            nan: a.nan,
        }
    }

    /// `min(args...)` or `max(args...)` as the interpreter computes them: NaN
    /// arguments are skipped, and the result is bounded by `i64::MAX` (min) or
    /// `i64::MIN` (max) as evalexpr 11 bounds it.
    pub fn min_max(args: &[Interval], is_min: bool) -> Interval {
        let any_nan = args.iter().any(|a| a.nan);
        let all_may_be_nan = args.iter().all(|a| a.nan);
        let live: Vec<&Interval> = args.iter().filter(|a| !a.is_empty()).collect();
        let bound = if is_min {
            i64::MAX as f64
        } else {
            i64::MIN as f64
        };
        if live.is_empty() {
            return Interval::point(bound);
        }
        let (mut lo, mut hi) = if is_min {
            (
                live.iter().map(|a| a.lo).fold(f64::INFINITY, f64::min),
                live.iter().map(|a| a.hi).fold(f64::INFINITY, f64::min),
            )
        } else {
            (
                live.iter().map(|a| a.lo).fold(f64::NEG_INFINITY, f64::max),
                live.iter().map(|a| a.hi).fold(f64::NEG_INFINITY, f64::max),
            )
        };
        if any_nan {
            // skipping a NaN argument moves the result away from it: up for
            // min (to the largest remaining), down for max
            if is_min {
                hi = live.iter().map(|a| a.hi).fold(f64::NEG_INFINITY, f64::max);
            } else {
                lo = live.iter().map(|a| a.lo).fold(f64::INFINITY, f64::min);
            }
            if all_may_be_nan {
                if is_min {
                    hi = hi.max(bound);
                } else {
                    lo = lo.min(bound);
                }
            }
        }
        let clamp = |x: f64| {
            if (is_min && x > bound) || (!is_min && x < bound) {
                bound
            } else {
                x
            }
        };
        Interval {
            lo: clamp(lo),
            hi: clamp(hi),
            nan: false,
        }
    }

    /// A unary function of the policy language.
    pub fn func(f: MathFn, a: Interval) -> Interval {
        if a.is_empty() {
            return a;
        }
        let mono = |lo: f64, hi: f64| Self::hull_of(&[f.apply(lo), f.apply(hi)]).with_nan(a.nan);
        match f {
            MathFn::Floor | MathFn::Ceil | MathFn::Round | MathFn::Exp => mono(a.lo, a.hi),
            MathFn::Abs => {
                if a.lo <= 0.0 && a.hi >= 0.0 {
                    Interval {
                        lo: 0.0,
                        hi: a.lo.abs().max(a.hi.abs()),
                        nan: a.nan,
                    }
                } else {
                    mono(a.lo, a.hi)
                }
            }
            MathFn::Sqrt | MathFn::Ln => {
                if a.hi < 0.0 {
                    return Self::nan_only();
                }
                mono(a.lo.max(0.0), a.hi).with_nan(a.lo < 0.0)
            }
        }
    }
}

/// Interval sum (each operand holds every value it can take).
impl std::ops::Add for Interval {
    type Output = Interval;
    fn add(self, b: Interval) -> Interval {
        Interval::add_i(self, b)
    }
}

/// Interval difference.
impl std::ops::Sub for Interval {
    type Output = Interval;
    fn sub(self, b: Interval) -> Interval {
        Interval::sub_i(self, b)
    }
}

/// Interval product.
impl std::ops::Mul for Interval {
    type Output = Interval;
    fn mul(self, b: Interval) -> Interval {
        Interval::mul_i(self, b)
    }
}

/// Interval quotient (everything, NaN included, when the divisor reaches 0).
impl std::ops::Div for Interval {
    type Output = Interval;
    fn div(self, b: Interval) -> Interval {
        Interval::div_i(self, b)
    }
}

/// Interval negation.
impl std::ops::Neg for Interval {
    type Output = Interval;
    fn neg(self) -> Interval {
        Interval::neg_i(self)
    }
}

/// Runs one term program over intervals.
pub fn eval_program(program: &[Op], features: &[Interval]) -> Interval {
    let mut stack: Vec<Interval> = Vec::with_capacity(MAX_STACK);
    for op in program {
        match *op {
            Op::Const(x) => stack.push(Interval::point(x)),
            Op::Feature(f) => stack.push(features[f as usize]),
            Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Pow => {
                let (Some(b), Some(a)) = (stack.pop(), stack.pop()) else {
                    return Interval::everything();
                };
                stack.push(match op {
                    Op::Add => a + b,
                    Op::Sub => a - b,
                    Op::Mul => a * b,
                    Op::Div => a / b,
                    _ => Interval::pow(a, b),
                });
            }
            Op::Neg => {
                let Some(a) = stack.pop() else {
                    return Interval::everything();
                };
                stack.push(-a);
            }
            Op::Min(n) | Op::Max(n) => {
                let n = n as usize;
                if stack.len() < n {
                    return Interval::everything();
                }
                let args = stack.split_off(stack.len() - n);
                stack.push(Interval::min_max(&args, matches!(op, Op::Min(_))));
            }
            Op::Func(f) => {
                let Some(a) = stack.pop() else {
                    return Interval::everything();
                };
                stack.push(Interval::func(f, a));
            }
        }
    }
    stack.pop().unwrap_or_else(Interval::everything)
}

/// The formula over intervals: the raw score's interval and each term's signed
/// contribution, summed in the interpreter's order.
pub fn eval_formula(
    formula: &Formula,
    features: &[Interval; FEATURES.len()],
) -> (Interval, Vec<Interval>) {
    let mut terms = Vec::with_capacity(formula.terms.len());
    let mut sum: Option<Interval> = None;
    for t in &formula.terms {
        let v = eval_program(&t.program, features);
        let c = if t.sign < 0.0 { -v } else { v };
        terms.push(c);
        sum = Some(match sum {
            None => c,
            Some(s) => s + c,
        });
    }
    (sum.unwrap_or(Interval::point(0.0)), terms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_bounds_every_value() {
        let a = Interval::new(-1.0, 2.0);
        let b = Interval::new(0.5, 3.0);
        assert_eq!(a * b, Interval::new(-3.0, 6.0));
        assert_eq!(a - b, Interval::new(-4.0, 1.5));
        assert_eq!(a / b, Interval::new(-2.0, 4.0));
        assert!((b / a).nan);
        let sq = Interval::pow(a, Interval::point(2.0));
        assert_eq!((sq.lo, sq.hi), (0.0, 4.0));
        let s = Interval::func(MathFn::Sqrt, a);
        assert!(s.nan && s.lo == 0.0);
        let m = Interval::min_max(&[a, b], true);
        assert_eq!((m.lo, m.hi), (-1.0, 2.0));
    }
}
