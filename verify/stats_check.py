#!/usr/bin/env python3
"""Checks of bench/repro_stats.py on fixed inputs with known answers, each from a source that shares
no code with it: closed forms, a published t table, R's published t.test outputs, an independent
numerical integration, and an exhaustive enumeration of the bootstrap distribution.

  stats_check.py [NAME ...]   run the named checks (all by default; verify/test_repro.c runs each
                              on its own); exit 1 with a message on the first mismatch."""
import itertools
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pycheck  # noqa: E402
import repro_stats as st  # noqa: E402
from pycheck import near  # noqa: E402

# Student's sleep data (Cushny & Peebles 1905), R's `sleep` data set: extra hours of sleep with
# drug 1 and drug 2 on the same ten patients.
SLEEP1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
SLEEP2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]


def check_betainc_closed_forms():
    # I_x(a, 1) = x^a and I_x(1, b) = 1 - (1 - x)^b; I_x(a, b) = 1 - I_{1-x}(b, a).
    for a in (0.5, 1.0, 2.5, 7.0, 40.0):
        for x in (0.01, 0.2, 0.5, 0.77, 0.99):
            near("I_%g(%g, 1)" % (x, a), st.betainc(a, 1.0, x), x ** a, 1e-13)
            near("I_%g(1, %g)" % (x, a), st.betainc(1.0, a, x), 1.0 - (1.0 - x) ** a, 1e-13)
            near("symmetry a=%g x=%g" % (a, x), st.betainc(a, 3.5, x), 1.0 - st.betainc(3.5, a, 1.0 - x), 1e-13)
    near("I_0", st.betainc(2.0, 3.0, 0.0), 0.0, 0.0)
    near("I_1", st.betainc(2.0, 3.0, 1.0), 1.0, 0.0)


def check_t_cdf_closed_forms():
    # df 1 is the Cauchy distribution, df 2 has F(t) = 1/2 + t / (2 sqrt(2 + t^2)); a very large df
    # is the standard normal.
    for t in (-40.0, -5.0, -2.5, -1.0, -0.3, 0.0, 0.3, 1.0, 2.5, 5.0, 40.0):
        near("df 1, t %g" % t, st.t_cdf(t, 1.0), 0.5 + math.atan(t) / math.pi, 1e-13)
        near("df 2, t %g" % t, st.t_cdf(t, 2.0), 0.5 + t / (2.0 * math.sqrt(2.0 + t * t)), 1e-13)
        near("df 1e7, t %g" % t, st.t_cdf(t, 1e7), 0.5 * math.erfc(-t / math.sqrt(2.0)), 1e-7)
    near("t = +inf", st.t_cdf(math.inf, 3.0), 1.0, 0.0)
    near("t = -inf", st.t_cdf(-math.inf, 3.0), 0.0, 0.0)


def check_t_cdf_integration():
    # Independent computation: 1/2 + the integral of the t density from 0 to t (composite Simpson,
    # 20000 intervals), at non-integer degrees of freedom such as Welch's.
    for df in (0.7, 2.5, 3.7, 17.776, 79.0, 250.0):
        c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
        dens = lambda x: c * (1.0 + x * x / df) ** (-(df + 1) / 2)  # noqa: E731
        for t in (0.1, 0.9, 2.0, 4.5):
            n = 20000
            h = t / n
            s = dens(0.0) + dens(t) + sum((4 if i % 2 else 2) * dens(i * h) for i in range(1, n))
            want = 0.5 + s * h / 3
            near("df %g, t %g" % (df, t), st.t_cdf(t, df), want, 1e-10)
            near("df %g, t %g (lower tail)" % (df, -t), st.t_cdf(-t, df), 1.0 - want, 1e-10)


# Upper critical values t_{P, df} of Student's t to three decimals (NIST/SEMATECH e-Handbook of
# Statistical Methods, section 1.3.6.7.2, "Critical Values of the Student's t Distribution"). Left
# out: its df 1, P 0.999 entry, 318.313, which the closed form tan(pi (P - 1/2)) = 318.309 shows is
# off in the third decimal.
T_TABLE = {
    1: {0.90: 3.078, 0.95: 6.314, 0.975: 12.706, 0.99: 31.821, 0.995: 63.657},
    2: {0.90: 1.886, 0.95: 2.920, 0.975: 4.303, 0.99: 6.965, 0.995: 9.925, 0.999: 22.327},
    3: {0.90: 1.638, 0.95: 2.353, 0.975: 3.182, 0.99: 4.541, 0.995: 5.841, 0.999: 10.215},
    4: {0.90: 1.533, 0.95: 2.132, 0.975: 2.776, 0.99: 3.747, 0.995: 4.604, 0.999: 7.173},
    5: {0.90: 1.476, 0.95: 2.015, 0.975: 2.571, 0.99: 3.365, 0.995: 4.032, 0.999: 5.893},
    10: {0.90: 1.372, 0.95: 1.812, 0.975: 2.228, 0.99: 2.764, 0.995: 3.169, 0.999: 4.144},
    30: {0.90: 1.310, 0.95: 1.697, 0.975: 2.042, 0.99: 2.457, 0.995: 2.750, 0.999: 3.385},
    100: {0.90: 1.290, 0.95: 1.660, 0.975: 1.984, 0.99: 2.364, 0.995: 2.626, 0.999: 3.174},
}


def check_t_table():
    # A value printed to three decimals is the true critical value within 0.0005, so the CDF must
    # pass P between t - 0.0005 and t + 0.0005.
    for df, row in T_TABLE.items():
        for p, t in row.items():
            lo, hi = st.t_cdf(t - 0.0005, df), st.t_cdf(t + 0.0005, df)
            if not lo <= p <= hi:
                raise AssertionError("df %d: F(%.3f -+ 0.0005) = %.6f .. %.6f does not contain %g" % (df, t, lo, hi, p))


def check_welch_published():
    # R: t.test(extra ~ group, data = sleep) prints "t = -1.8608, df = 17.776, p-value = 0.07939"
    # (two-sided; the one-sided p is half of it).
    t, df, p = st.welch_less(SLEEP1, SLEEP2)
    near("sleep t", t, -1.8608, 5e-5)
    near("sleep df", df, 17.776, 5e-4)
    near("sleep two-sided p", 2 * p, 0.07939, 5e-6)
    t2, df2, p2 = st.welch_less(SLEEP2, SLEEP1)
    near("reverse t", t2, -t, 1e-12)
    near("reverse p", p2, 1 - p, 1e-12)
    # R: t.test(c(11,9,10,11,10,12,9,11,12,9), c(11,13,10,13,12,9,11,12,12,11)) prints
    # "t = -1.8325, df = 17.9, p-value = 0.08356".
    t, df, p = st.welch_less([11, 9, 10, 11, 10, 12, 9, 11, 12, 9], [11, 13, 10, 13, 12, 9, 11, 12, 12, 11])
    near("ts t", t, -1.8325, 5e-5)
    near("ts df", df, 17.9, 0.05)
    near("ts two-sided p", 2 * p, 0.08356, 5e-6)
    # Degenerate inputs: one value on a side, or no spread at all.
    if st.welch_less([1.0], SLEEP2) is not None:
        raise AssertionError("a single value must give no test")
    if st.welch_less([1.0, 1.0], [2.0, 2.0])[2] != 0.0 or st.welch_less([2.0, 2.0], [1.0, 1.0])[2] != 1.0:
        raise AssertionError("constant samples: p must be 0 (lower) or 1 (higher)")


def check_one_sample_published():
    # R: t.test(extra ~ group, data = sleep, paired = TRUE), a one-sample test on the differences,
    # prints "t = -4.0621, df = 9, p-value = 0.002833" (two-sided).
    diffs = [a - b for a, b in zip(SLEEP1, SLEEP2)]
    t, df, p = st.t_less(diffs, 0.0)
    near("paired t", t, -4.0621, 5e-5)
    near("paired df", df, 9, 0)
    near("paired two-sided p", 2 * p, 0.002833, 5e-7)
    # Shifting data and bar together changes nothing (the acceptance test's "mean < 3.28").
    t2, _, p2 = st.t_less([3.28 + d / 100 for d in diffs], 3.28)
    near("shifted t", t2, t, 1e-9)
    near("shifted p", p2, p, 1e-10)


def check_mean_sd():
    # The textbook example 2, 4, 4, 4, 5, 5, 7, 9: mean 5, squared deviations summing to 32.
    m, s = st.mean_sd([2, 4, 4, 4, 5, 5, 7, 9])
    near("mean", m, 5.0, 0.0)
    near("sd", s, math.sqrt(32 / 7), 1e-15)
    if st.mean_sd([4.2]) != (4.2, 0.0):
        raise AssertionError("one value: sd 0")


def check_tokens_to_reach():
    curve = [(0, 10.0), (100, 6.0), (200, 4.0), (300, 4.5), (400, 3.0)]
    for target, want in ((5.0, 150.0), (6.0, 100.0), (10.0, 0.0), (8.0, 50.0), (4.0, 200.0), (3.5, 300 + 200 / 3)):
        got = st.tokens_to_reach(curve, target)
        near("target %g" % target, got, want, 1e-9)
    if st.tokens_to_reach(curve, 2.9) is not None:
        raise AssertionError("a target below the curve must give None")
    mc = st.mean_curve([[(0, 1.0), (10, 3.0)], [(0, 2.0), (10, 5.0)]])
    if mc != [(0, 1.5), (10, 4.0)]:
        raise AssertionError("mean_curve: %s" % mc)


def check_quantile():
    v = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    for q, want in ((0.0, 1), (0.05, 1), (0.1, 1), (0.11, 2), (0.5, 5), (0.95, 10), (1.0, 10)):
        if st.quantile(v, q) != want:
            raise AssertionError("quantile(%g) = %s, want %s" % (q, st.quantile(v, q), want))


def _two_presets():
    # Seeds of a target preset A (its final mean is the target) and of a preset B, on shared
    # token points; B's curves cross the target at different places in different draws.
    a = [[(0, 9.0), (100, 6.0), (200, 5.0)], [(0, 9.0), (100, 6.2), (200, 5.3)], [(0, 9.0), (100, 6.1), (200, 4.9)]]
    b = [[(0, 9.0), (100, 5.2), (200, 4.6)], [(0, 9.0), (100, 5.6), (200, 4.7)], [(0, 9.0), (100, 4.9), (200, 4.4)]]
    return {"A": a, "B": b}


def check_bootstrap_exhaustive():
    # The exact bootstrap distribution: every ordered draw of 3 seeds from 3 for A and for B
    # (27 x 27 equally likely), enumerated; the Monte Carlo replicates must give the same
    # quantiles and agree on probabilities within four standard errors.
    curves = _two_presets()
    exact = []
    for ia in itertools.product(range(3), repeat=3):
        goal = sum(curves["A"][i][-1][1] for i in ia) / 3
        for ib in itertools.product(range(3), repeat=3):
            r = st.tokens_to_reach(st.mean_curve([curves["B"][i] for i in ib]), goal)
            exact.append(math.inf if r is None else r)
    exact.sort()
    n_mc = 20000
    reps = st.bootstrap_tokens(curves, "A", n_mc, seed=5)
    mc = sorted(reps["B"])
    for q in (0.005, 0.025, 0.1, 0.5, 0.9, 0.975, 0.995):
        # The exact CDF just below and at the Monte Carlo quantile must straddle q up to the
        # noise of n_mc draws (four standard errors).
        got = st.quantile(mc, q)
        below = sum(x < got for x in exact) / len(exact)
        upto = sum(x <= got for x in exact) / len(exact)
        se = math.sqrt(q * (1 - q) / n_mc)
        if not (below <= q + 4 * se and upto >= q - 4 * se):
            raise AssertionError("quantile %g: Monte Carlo %s has exact CDF %.4f..%.4f" % (q, got, below, upto))
    for cut in (120.0, 140.0, 160.0):
        pe = sum(x >= cut for x in exact) / len(exact)
        pm = sum(x >= cut for x in mc) / n_mc
        near("P(tokens >= %g)" % cut, pm, pe, 4 * math.sqrt(pe * (1 - pe) / n_mc) + 1e-12)
    # The target preset reaches its own resampled final mean exactly at its last validation.
    if set(reps["A"]) != {200.0}:
        raise AssertionError("the target preset must reach its own final loss at its end: %s" % sorted(set(reps["A"])))


def check_bootstrap_deterministic():
    curves = _two_presets()
    r1, r2 = st.bootstrap_tokens(curves, "A", 500, seed=3), st.bootstrap_tokens(curves, "A", 500, seed=3)
    if r1 != r2:
        raise AssertionError("the same seed must give the same replicates")
    if st.bootstrap_tokens(curves, "A", 500, seed=4) == r1:
        raise AssertionError("another seed must give other replicates")
    # One seed per preset: every replicate is the point estimate.
    one = {"A": curves["A"][:1], "B": curves["B"][:1]}
    want = st.tokens_to_reach(one["B"][0], one["A"][0][-1][1])
    if set(st.bootstrap_tokens(one, "A", 100, seed=1)["B"]) != {want}:
        raise AssertionError("one seed: the bootstrap must be degenerate at the point estimate")
    # A preset that never reaches the target gives inf in every replicate.
    never = {"A": curves["A"], "C": [[(0, 9.0), (100, 8.0), (200, 7.0)]] * 3}
    if set(st.bootstrap_tokens(never, "A", 50, seed=1)["C"]) != {math.inf}:
        raise AssertionError("a preset that never reaches the target must give inf")


if __name__ == "__main__":
    sys.exit(pycheck.main(globals()))
