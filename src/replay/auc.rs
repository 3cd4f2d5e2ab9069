//! Predictive power of a single number: ROC AUC and point-biserial correlation.

/// ROC AUC of `scores` for the boolean `labels` (Mann–Whitney U with average
/// ranks for ties): the probability that a random positive scores above a
/// random negative, ties counting one half. `None` without positives or
/// without negatives, or when a score is NaN.
pub fn auc(scores: &[f64], labels: &[bool]) -> Option<f64> {
    if scores.len() != labels.len() || scores.iter().any(|x| x.is_nan()) {
        return None;
    }
    let pos = labels.iter().filter(|l| **l).count();
    let neg = labels.len() - pos;
    if pos == 0 || neg == 0 {
        return None;
    }
    let mut idx: Vec<usize> = (0..scores.len()).collect();
    idx.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    let mut rank_sum = 0.0;
    let mut i = 0;
    while i < idx.len() {
        let mut j = i;
        while j + 1 < idx.len() && scores[idx[j + 1]] == scores[idx[i]] {
            j += 1;
        }
        // Ranks i+1 ..= j+1 share their average.
        let avg = (i + j + 2) as f64 / 2.0;
        for &k in &idx[i..=j] {
            if labels[k] {
                rank_sum += avg;
            }
        }
        i = j + 1;
    }
    let p = pos as f64;
    Some((rank_sum - p * (p + 1.0) / 2.0) / (p * neg as f64))
}

/// Pearson correlation of `x` with the 0/1 `labels` (point-biserial r).
/// `None` when either is constant.
pub fn point_biserial(x: &[f64], labels: &[bool]) -> Option<f64> {
    let n = x.len();
    if n == 0 || n != labels.len() {
        return None;
    }
    let nf = n as f64;
    let mx = x.iter().sum::<f64>() / nf;
    let my = labels.iter().filter(|l| **l).count() as f64 / nf;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, &l) in x.iter().zip(labels) {
        let dx = a - mx;
        let dy = if l { 1.0 } else { 0.0 } - my;
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if sxx <= 0.0 || syy <= 0.0 {
        return None;
    }
    Some(sxy / (sxx * syy).sqrt())
}

/// [`point_biserial`] with weighted rows: a row labelled `true` weighs
/// `weights.0`, one labelled `false` `weights.1` (the inverse sampling
/// rates of a per-class sample, so the correlation estimates the whole
/// population's). `None` when either is constant or a weight is not
/// positive.
pub fn point_biserial_weighted(x: &[f64], labels: &[bool], weights: (f64, f64)) -> Option<f64> {
    let n = x.len();
    if n == 0 || n != labels.len() || !(weights.0 > 0.0 && weights.1 > 0.0) {
        return None;
    }
    let w = |l: bool| if l { weights.0 } else { weights.1 };
    let sw: f64 = labels.iter().map(|&l| w(l)).sum();
    let mx = x.iter().zip(labels).map(|(a, &l)| w(l) * a).sum::<f64>() / sw;
    let my = labels.iter().filter(|l| **l).count() as f64 * weights.0 / sw;
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, &l) in x.iter().zip(labels) {
        let dx = a - mx;
        let dy = if l { 1.0 } else { 0.0 } - my;
        sxy += w(l) * dx * dy;
        sxx += w(l) * dx * dx;
        syy += w(l) * dy * dy;
    }
    if sxx <= 0.0 || syy <= 0.0 {
        return None;
    }
    Some(sxy / (sxx * syy).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auc_by_hand() {
        // Positives 0.9, 0.4; negatives 0.5, 0.1, 0.4.
        // Pairs: (0.9 > all 3) = 3; (0.4 vs 0.5: 0, vs 0.1: 1, vs 0.4: 0.5) = 1.5 → 4.5 / 6.
        let s = [0.9, 0.5, 0.4, 0.1, 0.4];
        let l = [true, false, true, false, false];
        assert!((auc(&s, &l).unwrap() - 0.75).abs() < 1e-12);
        assert_eq!(auc(&[1.0, 2.0], &[true, true]), None);
        assert_eq!(auc(&[0.0, 1.0], &[false, true]), Some(1.0));
        assert_eq!(auc(&[1.0, 1.0], &[false, true]), Some(0.5));
    }

    #[test]
    fn correlation_by_hand() {
        let r = point_biserial(&[1.0, 0.0], &[true, false]).unwrap();
        assert!((r - 1.0).abs() < 1e-12);
        let r = point_biserial(&[0.0, 1.0, 0.0, 1.0], &[true, false, false, true]).unwrap();
        assert!(r.abs() < 1e-12);
        assert_eq!(point_biserial(&[1.0, 1.0], &[true, false]), None);
    }

    #[test]
    fn weighted_correlation_is_the_repeated_rows() {
        // Weight 3 on the negatives = each negative row three times.
        let x = [0.9, 0.2, 0.4, 0.1];
        let l = [true, false, true, false];
        let rep_x = [0.9, 0.2, 0.2, 0.2, 0.4, 0.1, 0.1, 0.1];
        let rep_l = [true, false, false, false, true, false, false, false];
        let a = point_biserial_weighted(&x, &l, (1.0, 3.0)).unwrap();
        let b = point_biserial(&rep_x, &rep_l).unwrap();
        assert!((a - b).abs() < 1e-12, "{a} {b}");
        assert_ne!(a, point_biserial(&x, &l).unwrap());
        assert_eq!(point_biserial_weighted(&x, &l, (0.0, 1.0)), None);
    }
}
