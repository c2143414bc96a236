"""Numerics of the negative-binomial predictive law (sdcrisk.core._nb).

Oracles: the golden table of methods spec G.2 (10 printed digits), mpmath's hyp2f1 at 30
digits (``E[1/(f+U)] = p^r / f * 2F1(r, f; f+1; 1-p)``, FW eq 24), and brute-force summation
of ``scipy.stats.nbinom.pmf`` (which uses the same "failures before the r-th success"
parametrisation as the package).
"""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest
from scipy import stats

from sdcrisk.core import _nb
from sdcrisk.exceptions import ApproximationWarning

# --- methods spec G.2: Benedetti-Franconi exact risk r(f, p) = E[1/F | f], U ~ NB(f, p) ------
BF_GOLDEN = [
    (1, 0.5, 0.6931471806),
    (1, 0.1, 0.2558427881),
    (1, 0.01, 0.0465168706),
    (2, 0.5, 0.3068528194),
    (2, 0.1, 0.0826841347),
    (2, 0.01, 0.0096311427),
    (3, 0.5, 0.1931471806),
    (3, 0.1, 0.0463684295),
    (3, 0.01, 0.0049532208),
    (4, 0.1, 0.0318849893),
    (5, 0.2, 0.0471446334),
    (10, 0.05, 0.0055213174),
]


def hyp_ref(f: float, r: float, p: float) -> float:
    """E[1/(f+U)] by FW eq 24 with mpmath at 30 digits."""
    with mpmath.workdps(30):
        p_ = mpmath.mpf(p)
        return float(p_**r / f * mpmath.hyp2f1(r, f, f + 1, 1 - p_))


_J = np.arange(200_001)


def brute(f: float, r: float, p: float, power: int) -> float:
    """sum_j P(U=j) / (f+j)^power by direct summation of the scipy pmf (j <= 2e5)."""
    w = stats.nbinom.pmf(_J, r, p)
    # the truncated tail must be negligible for the comparison to mean anything
    assert 1.0 - w.sum() < 1e-13
    return float(np.sum(w / (f + _J) ** power))


@pytest.mark.parametrize(("f", "p", "expected"), BF_GOLDEN)
def test_bf_golden_table(f, p, expected):
    got = _nb.expected_inverse(f, f, p)
    assert got.shape == ()
    assert abs(float(got) - expected) < 5e-11


def test_bf_golden_table_vectorised_in_one_call():
    f = np.array([row[0] for row in BF_GOLDEN], float)
    p = np.array([row[1] for row in BF_GOLDEN])
    expected = np.array([row[2] for row in BF_GOLDEN])
    got = _nb.expected_inverse(f, f, p)
    np.testing.assert_allclose(got, expected, rtol=0, atol=5e-11)


@pytest.mark.parametrize(
    ("f", "r", "p", "expected"),
    [
        # Poisson-gamma (spec B.1, G.2): n=1000, N=1e5, K=1e4, alpha=0.5 -> p = 1.2/21
        (1, 1.5, 1.2 / 21, 0.0922368822),
        # Poisson-gamma with general f: f=3, alpha=0.7 -> size 3.7, p=0.2
        (3, 3.7, 0.2, 0.0719330521),
        # FW eq 24: alpha=2.3, lambda=40000, u=150000 -> p = 40000/190000, f=1
        (1, 2.3, 40_000 / 190_000, 0.1780684609),
    ],
)
def test_poisson_gamma_and_fw_golden_values(f, r, p, expected):
    assert abs(float(_nb.expected_inverse(f, r, p)) - expected) < 5e-11


def test_poisson_gamma_f1_closed_form():
    # spec B.1: E[1/F | f=1] = (p - p^(alpha+1)) / (alpha (1-p))
    alpha, p = 0.5, 1.2 / 21
    closed = (p - p ** (alpha + 1)) / (alpha * (1 - p))
    assert float(_nb.expected_inverse(1, alpha + 1, p)) == pytest.approx(closed, rel=1e-12)
    assert p ** (alpha + 1) == pytest.approx(0.0136597555, abs=5e-11)
    assert float(_nb.prob_zero(alpha + 1, p)) == pytest.approx(0.0136597555, abs=5e-11)


# cases for each regime of expected_inverse: closed forms (r = f in {1, 2}, p <= 0.5), Euler
# series (r <= f + 1), direct pmf series (r > f + 1) and quadrature (p below ~0.002, or a
# pmf series too long); which branch serves a case is the implementation's choice
CLOSED_FORMS = [(1, 1, 0.5), (1, 1, 0.3), (1, 1, 0.01), (2, 2, 0.5), (2, 2, 0.2), (2, 2, 0.02)]
EULER = [(3, 3, 0.7), (4, 4.5, 0.1), (1, 1, 0.9), (2, 2, 0.75), (10, 3, 0.05), (50, 50, 0.01),
         (1, 0.3, 0.05), (1000, 3, 0.1), (7, 3, 0.003)]
DIRECT = [(5, 50, 0.3), (2, 80.5, 0.01), (1, 2.3, 0.21), (3, 4.7, 0.2), (1, 40, 0.5),
          (2, 50, 0.003)]
QUADRATURE = [(3, 3, 1e-4), (1, 1.3, 1e-5), (1, 1, 1e-6), (2, 5, 5e-4), (20, 1, 1e-3),
              (1, 1, 1.5e-3)]


@pytest.mark.parametrize(("f", "r", "p"), CLOSED_FORMS + EULER + DIRECT + QUADRATURE)
def test_expected_inverse_matches_mpmath(f, r, p):
    assert float(_nb.expected_inverse(f, r, p)) == pytest.approx(hyp_ref(f, r, p), rel=1e-10)


def test_closed_forms_agree_with_formula():
    # spec B.2 closed forms, written out independently
    for p in (0.5, 0.3, 0.05):
        q = 1 - p
        assert float(_nb.expected_inverse(1, 1, p)) == pytest.approx(
            p / q * math.log(1 / p), rel=1e-13)
        assert float(_nb.expected_inverse(2, 2, p)) == pytest.approx(
            p / q**2 * (p * math.log(p) + q), rel=1e-12)


def test_p_equal_one_is_one_over_f():
    np.testing.assert_allclose(_nb.expected_inverse([1, 2, 7], [1, 5, 0.5], 1.0),
                               [1.0, 0.5, 1 / 7], rtol=0, atol=0)
    np.testing.assert_allclose(_nb.expected_inverse_square([1, 2, 7], [1, 5, 0.5], 1.0),
                               [1.0, 0.25, 1 / 49], rtol=0, atol=1e-18)


@pytest.mark.parametrize(
    ("f", "r", "p"),
    [
        (1, 1, 0.3), (1, 1, 0.05), (1, 1, 1e-3),  # geometric closed form (p/q) Li2(q)
        (2, 2, 0.1), (3, 3.7, 0.2), (1, 1.5, 1.2 / 21), (5, 50, 0.3), (2, 0.5, 0.01),
        (3, 3, 1e-3), (1, 2.3, 1e-3),  # quadrature branch (p < ~0.002)
    ],
)
def test_expected_inverse_square_matches_brute_force(f, r, p):
    got = float(_nb.expected_inverse_square(f, r, p))
    assert got == pytest.approx(brute(f, r, p, 2), rel=1e-10)


def test_expected_inverse_square_geometric_is_dilog():
    # r = f = 1: (p/q) Li2(q), Li2 from mpmath
    for p in (0.9, 0.3, 0.01):
        q = 1 - p
        expected = p / q * float(mpmath.polylog(2, q))
        assert float(_nb.expected_inverse_square(1, 1, p)) == pytest.approx(expected, rel=1e-12)


def test_expected_inverse_brute_force_spot_checks():
    for f, r, p in [(1, 1, 0.2), (4, 2.5, 0.05), (2, 30, 0.4), (1, 1, 1e-3)]:
        assert float(_nb.expected_inverse(f, r, p)) == pytest.approx(brute(f, r, p, 1),
                                                                     rel=1e-10)


def test_second_moment_dominates_square_of_first():
    f = np.array([1, 2, 3, 1, 5])
    r = np.array([1, 2, 3.7, 1.5, 50])
    p = np.array([0.1, 0.3, 0.2, 0.05, 0.3])
    e1 = _nb.expected_inverse(f, r, p)
    e2 = _nb.expected_inverse_square(f, r, p)
    assert np.all(e2 > e1**2)
    assert np.all(e2 < e1 / f)  # 1/(f+U)^2 <= (1/f) * 1/(f+U), strictly unless U == 0 a.s.


@pytest.mark.parametrize(("r", "p"), [(1.0, 0.3), (2.5, 0.3), (7.0, 0.9), (0.4, 0.01)])
def test_moments_and_point_probabilities_match_scipy(r, p):
    assert float(_nb.prob_zero(r, p)) == pytest.approx(stats.nbinom.pmf(0, r, p), rel=1e-13)
    assert float(_nb.prob_one(r, p)) == pytest.approx(stats.nbinom.pmf(1, r, p), rel=1e-13)
    assert float(_nb.nb_mean(r, p)) == pytest.approx(stats.nbinom.mean(r, p), rel=1e-13)
    assert float(_nb.nb_variance(r, p)) == pytest.approx(stats.nbinom.var(r, p), rel=1e-13)


def test_vectorised_with_repeated_triples_keeps_shape_and_order():
    f = np.array([[1, 3, 1], [3, 1, 2]], float)
    r = np.array([[1, 3, 1], [3, 1.5, 2]], float)
    p = np.array([[0.1, 0.2, 0.1], [0.2, 0.1, 0.5]])
    got = _nb.expected_inverse(f, r, p)
    assert got.shape == (2, 3)
    expected = np.array([[hyp_ref(*t) for t in zip(fr, rr, pr, strict=True)]
                         for fr, rr, pr in zip(f, r, p, strict=True)])
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    # repeated triples give bit-identical values
    assert got[0, 0] == got[0, 2]
    assert got[0, 1] == got[1, 0]
    sq = _nb.expected_inverse_square(f, r, p)
    assert sq.shape == (2, 3)
    assert sq[0, 0] == sq[0, 2]
    assert sq[1, 1] == pytest.approx(brute(1, 1.5, 0.1, 2), rel=1e-10)


def test_broadcasting_and_empty_input():
    got = _nb.expected_inverse(np.array([1, 2, 3]), np.array([1, 2, 3]), 0.1)
    np.testing.assert_allclose(got, [0.2558427881, 0.0826841347, 0.0463684295], atol=5e-11)
    empty = _nb.expected_inverse(np.zeros(0), np.zeros(0), np.zeros(0))
    assert empty.shape == (0,)


@pytest.mark.parametrize(("f", "r", "p"), [(0, 1, 0.5), (1, 0, 0.5), (1, 1, 0.0),
                                           (1, 1, 1.5), (1, 1, np.nan), (1, -2, 0.5)])
def test_invalid_arguments_raise(f, r, p):
    with pytest.raises(ValueError):
        _nb.expected_inverse(f, r, p)
    with pytest.raises(ValueError):
        _nb.expected_inverse_square(f, r, p)


def test_fw_theta_regression_small_p_large_f():
    # spec G.2, corrected FW eq (25): E[theta] = p^alpha 2F1(alpha, f; f+1; q) with
    # f = 1543, u = 149534, E[S] = 0.1713, alpha = 10 -> lambda = alpha / E[S],
    # p = lambda / (lambda + u). SciPy quad without breakpoints returns ~1e-12 here.
    f, u, es = 1543, 149_534, 0.1713
    for alpha, expected in [(1000, 0.0568678674), (100, 0.0573267341), (10, 0.0622884039)]:
        lam = alpha / es
        p = lam / (lam + u)
        got = f * float(_nb.expected_inverse(f, alpha, p))
        assert got == pytest.approx(expected, abs=5e-10)


def test_near_poisson_quadrature_is_accurate_and_quiet():
    # Poisson-gamma's alpha at its search bound gives NB laws with r ~ 1e10 and p within 4e-7
    # of 1 (the values below came from a 300-record fuzz sample, 4 keys, N = 1e4). quad's error
    # estimate there was 2e-7 of the value, which warned; the value is good to far better than
    # any risk figure needs (checked against mpmath below), so it must not warn.
    mp = mpmath
    f, r, p = 107.0, 10699994980.166916, 0.9999996631944
    q = 1.0 - p
    with mp.workdps(40):
        ref = mp.quad(lambda s: mp.e ** (-f * s) * (mp.mpf(p) / (1 - q * mp.e ** (-s))) ** r,
                      [0, 1e-4, 3e-4, 1e-3, 1e-2, 0.1, 1, mp.inf])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ApproximationWarning)
        got = float(_nb.expected_inverse(f, r, p))
    assert got == pytest.approx(float(ref), rel=1e-6)
    assert got == pytest.approx(0.00026955284, rel=1e-6)


# --- r = f at small p: the recurrences in f (no quadrature, no scipy) --------------------------
def _mp_moment(f: float, p: float, power: int, r: float | None = None) -> float:
    """E[1/(f+U)^power], U ~ NB(r, p) (r = f by default), by mpmath quadrature of the
    Laplace form at 30 digits, split at multiples of the peak's width."""
    with mpmath.workdps(30):
        f_, p_ = mpmath.mpf(f), mpmath.mpf(p)
        r_ = f_ if r is None else mpmath.mpf(r)
        q = 1 - p_
        width = 1 / (f_ + r_ * q / p_)
        cuts = [0] + [width * 10 ** k for k in range(-2, 5)] + [mpmath.inf]
        return float(mpmath.quad(lambda s: s ** (power - 1) * mpmath.e ** (-f_ * s)
                                 * (p_ / (1 - q * mpmath.e ** (-s))) ** r_, cuts))


@pytest.mark.parametrize("f", [1, 2, 3, 17, 1000, 5000])
@pytest.mark.parametrize("p", [1e-9, 1.8e-4, 1e-3])
def test_benedetti_franconi_recurrences_match_mpmath(f, p):
    """At these p a series needs more than 20,000 terms: the moments came from scipy's quad
    (good to ~1e-12, 0.4 s of every nb command's start to import); the recurrences agree
    with mpmath to 1e-13 for both moments, up to f = 5,000."""
    fu, pu = np.array([float(f)]), np.array([p])
    assert _nb._recurrence_cases(fu, fu, pu, np.array([True]))[0]
    assert float(_nb.expected_inverse(f, f, p)) == pytest.approx(_mp_moment(f, p, 1),
                                                                 rel=1e-13)
    assert float(_nb.expected_inverse_square(f, f, p)) == pytest.approx(_mp_moment(f, p, 2),
                                                                        rel=1e-13)


def test_recurrences_in_one_call_keep_each_entry():
    """Many f and p in one call (as a table's cells): each entry its own value."""
    f = np.array([3.0, 1.0, 40.0, 3.0, 2.0])
    p = np.array([1e-4, 1e-6, 1e-4, 2e-5, 1e-4])
    got = _nb.expected_inverse(f, f, p)
    want = [_mp_moment(fi, pi, 1) for fi, pi in zip(f, p, strict=True)]
    np.testing.assert_allclose(got, want, rtol=1e-13)


@pytest.mark.parametrize("x", [0.0, 1e-12, 1e-5, 0.1, 0.5, 0.5000001, 0.9, 1 - 1e-9, 1.0])
def test_dilog_matches_mpmath(x):
    assert float(_nb.dilog(x)) == pytest.approx(float(mpmath.polylog(2, x)), rel=1e-15,
                                                abs=1e-300)


@pytest.mark.parametrize("f", [1, 3, 100, 4001])
@pytest.mark.parametrize("extra", [1e-9, 0.3, 62.0, 1e5])
@pytest.mark.parametrize("p", [1e-8, 1.8e-4])
def test_recurrence_for_r_above_f_matches_mpmath(f, extra, p):
    """r = f + a, a > 0 (Poisson-gamma's alpha + f, the graphical models' per-cell sizes):
    E[1/(f+U)] by the recurrence, against mpmath at 30 digits. Graphical's fits at a
    sampling fraction of 1.8e-4 sent 1,697 triples to quadrature (3.7 of auto's 6.9 s)."""
    fu, ru, pu = np.array([float(f)]), np.array([f + extra]), np.array([p])
    assert _nb._recurrence_cases(fu, ru, pu, np.array([True]))[0]
    assert float(_nb.expected_inverse(f, f + extra, p)) == pytest.approx(
        _mp_moment(f, p, 1, r=f + extra), rel=1e-13)


def test_quadrature_still_serves_what_the_recurrences_do_not():
    """r < f (E[1/(f+U)]), and r != f for E[1/(f+U)^2] (whose start needs more than the
    dilogarithm): quadrature, as before."""
    fu, pu = np.array([3.0]), np.array([1e-5])
    assert not _nb._recurrence_cases(fu, np.array([2.5]), pu, np.array([True]))[0]
    assert not _nb._recurrence_cases(fu, np.array([3.5]), pu, np.array([True]), power=2)[0]
    assert float(_nb.expected_inverse(3, 2.5, 1e-5)) == pytest.approx(
        _mp_moment(3, 1e-5, 1, r=2.5), rel=1e-10)
    assert float(_nb.expected_inverse_square(3, 3.5, 1e-5)) == pytest.approx(
        _mp_moment(3, 1e-5, 2, r=3.5), rel=1e-10)
