//! Running the lowered formula (see [`crate::plan::formula`]): one term
//! program at a time, or the branch-free weighted sum when every term is linear.

use crate::plan::formula::{Formula, MAX_STACK, Op};

/// Runs a term program on the feature values. The program was checked at
/// compile time (stack depth ≤ [`MAX_STACK`], balanced), so this cannot fail.
#[inline]
pub fn run(program: &[Op], features: &[f64]) -> f64 {
    // Fast paths for the shapes of the seed's formula.
    match program {
        [Op::Const(w), Op::Feature(f), Op::Mul] => return *w * features[*f as usize],
        [Op::Feature(f), Op::Const(w), Op::Mul] => return features[*f as usize] * *w,
        [Op::Feature(f)] => return features[*f as usize],
        _ => {}
    }
    let mut stack = [0.0f64; MAX_STACK];
    let mut sp = 0usize;
    for op in program {
        match *op {
            Op::Const(x) => {
                stack[sp] = x;
                sp += 1;
            }
            Op::Feature(f) => {
                stack[sp] = features[f as usize];
                sp += 1;
            }
            Op::Add | Op::Sub | Op::Mul | Op::Div | Op::Pow => {
                sp -= 1;
                let b = stack[sp];
                let a = stack[sp - 1];
                stack[sp - 1] = match op {
                    Op::Add => a + b,
                    Op::Sub => a - b,
                    Op::Mul => a * b,
                    Op::Div => a / b,
                    _ => a.powf(b),
                };
            }
            Op::Neg => stack[sp - 1] = -stack[sp - 1],
            Op::Min(n) | Op::Max(n) => {
                let n = n as usize;
                let is_min = matches!(op, Op::Min(_));
                let mut acc = if is_min {
                    f64::INFINITY
                } else {
                    f64::NEG_INFINITY
                };
                for &x in &stack[sp - n..sp] {
                    acc = if is_min { acc.min(x) } else { acc.max(x) };
                }
                // evalexpr 11 folds integers separately from i64::MAX / i64::MIN and
                // returns that bound when it beats the float result (all-NaN or
                // huge arguments); keep its answer exactly.
                if is_min && (i64::MAX as f64) < acc {
                    acc = i64::MAX as f64;
                } else if !is_min && (i64::MIN as f64) > acc {
                    acc = i64::MIN as f64;
                }
                sp -= n;
                stack[sp] = acc;
                sp += 1;
            }
            Op::Func(f) => stack[sp - 1] = f.apply(stack[sp - 1]),
        }
    }
    stack[0]
}

impl Formula {
    /// The unclamped score: the terms summed in evalexpr's order. `contributions`
    /// receives each term's signed contribution when given.
    #[inline]
    pub fn eval(&self, features: &[f64], mut contributions: Option<&mut Vec<f64>>) -> f64 {
        if let (Some(lin), None) = (&self.linear, &contributions)
            && let Some((&(f0, w0), rest)) = lin.split_first()
        {
            let mut sum = w0 * features[f0 as usize];
            for &(f, w) in rest {
                sum += w * features[f as usize];
            }
            return sum;
        }
        let mut sum = 0.0;
        for (i, t) in self.terms.iter().enumerate() {
            let v = run(&t.program, features);
            let c = if t.sign < 0.0 { -v } else { v };
            if let Some(out) = contributions.as_deref_mut() {
                out.push(c);
            }
            sum = if i == 0 { c } else { sum + c };
        }
        sum
    }
}
