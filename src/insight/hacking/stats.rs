//! The small statistics §19 names: Wilson's interval, an exponential moving average,
//! and a one-sided Welch test (Student's t through the regularised incomplete beta).

/// The 97.5 % quantile of the standard normal: a two-sided 95 % interval.
pub const Z95: f64 = 1.959_963_984_540_054;

/// Wilson's 95 % score interval [L, U] for `k` successes out of `n` (`None` for n = 0).
pub fn wilson(k: usize, n: usize) -> Option<(f64, f64)> {
    if n == 0 {
        return None;
    }
    let (n, p, z2) = (n as f64, k as f64 / n as f64, Z95 * Z95);
    let centre = p + z2 / (2.0 * n);
    let spread = Z95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    let denominator = 1.0 + z2 / n;
    Some((
        ((centre - spread) / denominator).max(0.0),
        ((centre + spread) / denominator).min(1.0),
    ))
}

/// The exponential moving average of a series (`None` values carry the last average
/// on; the first value starts it): e₁ = x₁, eₜ = α xₜ + (1 − α) eₜ₋₁.
pub fn ema(values: &[Option<f64>], alpha: f64) -> Vec<Option<f64>> {
    let mut last: Option<f64> = None;
    values
        .iter()
        .map(|x| {
            last = match (x, last) {
                (Some(x), None) => Some(*x),
                (Some(x), Some(e)) => Some(alpha * x + (1.0 - alpha) * e),
                (None, e) => e,
            };
            last
        })
        .collect()
}

/// Count, mean and (unbiased) variance of a sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Moments {
    pub n: f64,
    pub mean: f64,
    pub var: f64,
}

/// The one-sided p-value of Welch's test that `a`'s mean is greater than `b`'s
/// (`None` when either has fewer than two values or both variances are 0).
pub fn welch_greater(a: Moments, b: Moments) -> Option<f64> {
    if a.n < 2.0 || b.n < 2.0 {
        return None;
    }
    let (va, vb) = (a.var / a.n, b.var / b.n);
    let se2 = va + vb;
    if se2 <= 0.0 || !se2.is_finite() {
        return None;
    }
    let t = (a.mean - b.mean) / se2.sqrt();
    let df = se2 * se2 / (va * va / (a.n - 1.0) + vb * vb / (b.n - 1.0));
    Some(student_t_upper(t, df))
}

/// P(T > t) for Student's t with `df` degrees of freedom.
pub fn student_t_upper(t: f64, df: f64) -> f64 {
    let x = df / (df + t * t);
    let tail = 0.5 * incomplete_beta(0.5 * df, 0.5, x);
    if t >= 0.0 {
        tail
    } else {
        1.0 - tail
    }
}

/// ln Γ(x) (Lanczos, g = 7, n = 9): 15 digits for x > 0.
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularised incomplete beta function I_x(a, b) (continued fraction, Lentz).
pub fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wilson_matches_the_textbook_values() {
        // 10 of 100: [0.0552, 0.1744] (Newcombe 1998, method 3)
        let (l, u) = wilson(10, 100).unwrap();
        assert!((l - 0.055_229).abs() < 1e-5, "{l}");
        assert!((u - 0.174_366).abs() < 1e-5, "{u}");
        let (l, u) = wilson(0, 20).unwrap();
        assert_eq!(l, 0.0);
        assert!((u - 0.161_125).abs() < 1e-5, "{u}");
        assert_eq!(wilson(0, 0), None);
    }

    #[test]
    fn student_t_tails_match_scipy() {
        // scipy.stats.t.sf(2.0, 10) = 0.036694017385370196
        assert!((student_t_upper(2.0, 10.0) - 0.036_694_017_385_370_2).abs() < 1e-12);
        let p = student_t_upper(-1.5, 3.5);
        assert!((p + student_t_upper(1.5, 3.5) - 1.0).abs() < 1e-12);
        assert!((student_t_upper(0.0, 7.0) - 0.5).abs() < 1e-12);
        // the density integrated numerically: 0.0014995
        let p = student_t_upper(3.1, 57.3);
        assert!((p - 0.001_499_5).abs() < 1e-6, "{p}");
    }

    #[test]
    fn the_moving_average_starts_at_the_first_value() {
        let e = ema(&[Some(1.0), Some(0.0), None, Some(1.0)], 0.3);
        assert_eq!(e[0], Some(1.0));
        assert!((e[1].unwrap() - 0.7).abs() < 1e-12);
        assert_eq!(e[2], e[1]);
        assert!((e[3].unwrap() - (0.3 + 0.7 * 0.7)).abs() < 1e-12);
    }
}
