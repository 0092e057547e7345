"""The statistics of the repro table, in the Python standard library only (no numpy/scipy, so the
report runs wherever python3 does):

- mean_sd: mean and sample standard deviation (n - 1).
- t_cdf: Student's t distribution function, from the regularized incomplete beta function
  I_x(a, b) evaluated by its continued fraction (modified Lentz).
- welch_less: one-sided Welch t-test, H1: mean(x) < mean(y) (unequal variances,
  Welch-Satterthwaite degrees of freedom).
- t_less: one-sided one-sample t-test, H1: mean(x) < mu (the speedrun's acceptance test).
- tokens_to_reach: first token count where a loss curve reaches a target (linear interpolation).
- bootstrap_tokens: percentile bootstrap of "tokens to reach the target preset's final loss", seeds
  resampled with replacement within each preset, the target re-estimated in every replicate.
- quantile: the inverted-CDF quantile used for the bootstrap intervals.

verify/stats_check.py checks every function against closed forms, published tables and outputs,
and independent computations."""
import math
import random


def mean_sd(xs):
    """Mean and sample standard deviation (divisor n - 1; 0 for a single value)."""
    n = len(xs)
    m = math.fsum(xs) / n
    s = math.sqrt(math.fsum((x - m) ** 2 for x in xs) / (n - 1)) if n > 1 else 0.0
    return m, s


def _betacf(a, b, x):
    """Continued fraction of I_x(a, b) (converges fast for x < (a + 1) / (a + b + 2))."""
    tiny, eps = 1e-300, 1e-15
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 100000):
        # Two terms per m: the even coefficient d_{2m}, then the odd one d_{2m+1}.
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < eps:
            return h
    raise ArithmeticError("incomplete beta: continued fraction did not converge (a=%g b=%g x=%g)" % (a, b, x))


def betainc(a, b, x):
    """Regularized incomplete beta function I_x(a, b) for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    # x^a (1 - x)^b / B(a, b), in logs so that large a, b do not overflow.
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t, df):
    """P(T <= t) for Student's t with df > 0 degrees of freedom (df need not be an integer)."""
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    # P(|T| > |t|) = I_{df / (df + t^2)}(df / 2, 1 / 2).
    tail = 0.5 * betainc(0.5 * df, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def welch_less(x, y):
    """One-sided Welch test of H1: mean(x) < mean(y). Returns (t, df, p); None with fewer than two
    values on a side. Two constant samples give t = -inf/+inf (p 0/1), or p 0.5 when equal."""
    if len(x) < 2 or len(y) < 2:
        return None
    (mx, sx), (my, sy) = mean_sd(x), mean_sd(y)
    vx, vy = sx * sx / len(x), sy * sy / len(y)
    if vx + vy == 0.0:
        t = 0.0 if mx == my else math.copysign(math.inf, mx - my)
        return t, math.inf, 0.5 if t == 0.0 else t_cdf(t, 1.0)
    t = (mx - my) / math.sqrt(vx + vy)
    df = (vx + vy) ** 2 / (vx * vx / (len(x) - 1) + vy * vy / (len(y) - 1))
    return t, df, t_cdf(t, df)


def t_less(x, mu):
    """One-sided one-sample t-test of H1: mean(x) < mu. Returns (t, df, p); None for one value."""
    if len(x) < 2:
        return None
    m, s = mean_sd(x)
    if s == 0.0:
        t = 0.0 if m == mu else math.copysign(math.inf, m - mu)
        return t, len(x) - 1, 0.5 if t == 0.0 else t_cdf(t, 1.0)
    t = (m - mu) / (s / math.sqrt(len(x)))
    return t, len(x) - 1, t_cdf(t, len(x) - 1)


def tokens_to_reach(curve, target):
    """First token count where the curve [(tokens, loss), ...] is <= target, linearly interpolated
    between the two validations around the crossing; None when it never gets there."""
    prev = None
    for tok, loss in curve:
        if loss <= target:
            if prev is None:
                return float(tok)
            t0, l0 = prev
            return t0 + (tok - t0) * (l0 - target) / (l0 - loss)
        prev = (tok, loss)
    return None


def mean_curve(curves):
    """Pointwise mean of per-seed curves that share their token counts: [(tokens, mean loss)]."""
    return [(pts[0][0], math.fsum(l for _, l in pts) / len(pts)) for pts in zip(*curves)]


def quantile(sorted_values, q):
    """Inverted-CDF quantile: the smallest v with (number of values <= v) / n >= q."""
    n = len(sorted_values)
    return sorted_values[min(n - 1, max(0, math.ceil(q * n) - 1))]


def bootstrap_tokens(curves, target, resamples, seed):
    """Replicates of "tokens to reach the target preset's final mean loss" for every preset.

    curves: {preset: [per-seed curve [(tokens, loss), ...]]}, curves of one preset sharing their
    token counts; target: the preset whose final mean loss is the target. Each replicate draws every
    preset's seeds with replacement (independently per preset, the target preset's draw used for
    both its curve and the target) and records, per preset, the tokens its resampled mean curve
    needs to reach the resampled target (math.inf when it does not within its budget).
    Returns {preset: [value per replicate]}; the same seed gives the same replicates."""
    rng = random.Random(seed)
    names = list(curves)
    out = {p: [] for p in names}
    for _ in range(resamples):
        draw = {p: [curves[p][rng.randrange(len(curves[p]))] for _ in curves[p]] for p in names}
        goal = math.fsum(c[-1][1] for c in draw[target]) / len(draw[target])
        for p in names:
            reach = tokens_to_reach(mean_curve(draw[p]), goal)
            out[p].append(math.inf if reach is None else reach)
    return out
