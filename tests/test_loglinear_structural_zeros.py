"""Structural zeros in the log-linear model (spec C.3: IPF with cells fixed at 0).

Oracles: the quasi-independence fit of a 3 x 3 table with an impossible cell, found by
maximising the Poisson likelihood with scipy (not by IPF); hand-worked masks; the CLI against
the library.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import optimize

from sdcrisk import InputError, LogLinearRisk, Microdata, ParameterError, tabulate
from sdcrisk.cli import main
from sdcrisk.data.structural_zeros import StructuralZeros

# a 3 x 3 sample, cell (0, 0) impossible; N = 2 n (pi = 0.5: lambda = 2 mu, so the risks
# exp(-mu) of the sample uniques are of order 0.1, not 1e-5)
COUNTS = np.array([[0, 1, 4], [1, 3, 2], [5, 1, 6]])
N_POP = 2 * int(COUNTS.sum())


def _frame(counts=COUNTS) -> pd.DataFrame:
    rows = [(str(i), str(j)) for (i, j), c in np.ndenumerate(counts) for _ in range(c)]
    return pd.DataFrame(rows, columns=["a", "b"])


def _table(counts=COUNTS):
    return tabulate(Microdata.from_source(_frame(counts), keys=["a", "b"],
                                         population_size=N_POP))


def _quasi_independence_mu(counts: np.ndarray, zero: np.ndarray) -> np.ndarray:
    """Poisson MLE of log mu_ij = u + a_i + b_j on the cells not in ``zero`` (BFGS)."""
    r, c = counts.shape

    def mu_of(p):
        a = np.concatenate([[0.0], p[1:r]])
        b = np.concatenate([[0.0], p[r:]])
        return np.where(zero, 0.0, np.exp(p[0] + a[:, None] + b[None, :]))

    def nll(p):
        mu = mu_of(p)
        live = ~zero
        return float(np.sum(mu[live] - counts[live] * np.log(mu[live])))

    res = optimize.minimize(nll, np.zeros(r + c - 1), method="BFGS",
                            options={"gtol": 1e-10, "maxiter": 10_000})
    return mu_of(res.x)


def _tau1(mu: np.ndarray, counts: np.ndarray, pi: float) -> float:
    su = counts == 1
    return float(np.sum(np.exp(-(1 - pi) * mu[su] / pi)))


def test_quasi_independence_against_the_likelihood():
    zero = np.zeros((3, 3), bool)
    zero[0, 0] = True
    mu = _quasi_independence_mu(COUNTS, zero)
    # the MLE matches the margins on the admissible cells
    np.testing.assert_allclose(mu.sum(axis=1), COUNTS.sum(axis=1), rtol=1e-6)
    np.testing.assert_allclose(mu.sum(axis=0), COUNTS.sum(axis=0), rtol=1e-6)
    pi = COUNTS.sum() / N_POP
    tab = _table()
    res = LogLinearRisk(terms="independence", structural_zeros=[{"a": "0", "b": "0"}],
                        tol=1e-9, max_iter=2000).fit(tab)
    assert res.estimate("tau1") == pytest.approx(_tau1(mu, COUNTS, pi), rel=1e-6)
    assert res.fitted["structural_zeros"]["fitted_cells_zeroed"] == 1
    assert any("structural zeros" in a for a in res.assumptions)
    # without the structural zero: plain independence, mu_ij = r_i c_j / n, another figure
    plain = LogLinearRisk(terms="independence").fit(tab)
    indep = np.outer(COUNTS.sum(axis=1), COUNTS.sum(axis=0)) / COUNTS.sum()
    assert plain.estimate("tau1") == pytest.approx(_tau1(indep, COUNTS, pi), rel=1e-9)
    assert abs(plain.estimate("tau1") - res.estimate("tau1")) > 0.01


def test_levels_absent_from_the_sample_drop_their_conditions():
    # level "2" of b is declared but no record has it (compacted away before the fit): the
    # condition (a=1, b=2) covers no fitted cell, the condition (a=0, b=0) still does
    tab = tabulate(Microdata.from_source(
        _frame(np.array([[0, 1], [1, 3], [5, 1]])), keys=["a", "b"], population_size=N_POP,
        levels={"b": ["0", "1", "2"]}))
    assert tab.levels[1] == ("0", "1", "2")
    res = LogLinearRisk(terms="independence", tol=1e-9, max_iter=2000,
                        structural_zeros=[{"a": "0", "b": "0"}, {"a": "1", "b": "2"}]).fit(tab)
    assert res.fitted["structural_zeros"]["fitted_cells_zeroed"] == 1
    zero = np.array([[True, False], [False, False], [False, False]])
    counts = np.array([[0, 1], [1, 3], [5, 1]])
    mu = _quasi_independence_mu(counts, zero)
    pi = counts.sum() / N_POP
    assert res.estimate("tau1") == pytest.approx(_tau1(mu, counts, pi), rel=1e-6)


def test_dense_mask_and_restrict_levels_by_hand():
    sz = StructuralZeros.from_codes([[0, -1, 1], [2, 0, -1]], keys=["x", "y", "z"],
                                    sizes=(3, 2, 2))
    mask = sz.dense_mask()
    expected = np.zeros((3, 2, 2), bool)
    expected[0, :, 1] = True
    expected[2, 0, :] = True
    np.testing.assert_array_equal(mask, expected)
    # drop level 1 of x (kept levels 0 and 2 become 0 and 1) and level 0 of y: the second
    # condition fixed y = 0 and goes; the first keeps x = 0, z = 1
    sub = sz.restrict_levels([np.array([True, False, True]), np.array([False, True]),
                              np.array([True, True])])
    assert sub.sizes == (2, 1, 2)
    assert sub.conditions.tolist() == [[0, -1, 1]]
    np.testing.assert_array_equal(sub.dense_mask(), expected[np.ix_([0, 2], [1], [0, 1])])
    with pytest.raises(ParameterError, match="one mask of length d_j per key"):
        sz.restrict_levels([np.array([True])])


def test_records_in_a_structural_zero_are_an_input_error():
    tab = _table()
    with pytest.raises(InputError, match=r"1 records fall in structural zeros \(first: "
                                          r"record \d+\).*fix the data or the conditions"):
        LogLinearRisk(terms="independence", structural_zeros=[{"a": "0", "b": "1"}]).fit(tab)


@pytest.mark.parametrize(("options", "words"), [
    ({"engine": "factored"}, "engine='dense'"),
    ({"partition": "a:2"}, "drop one of them"),
    ({"structural_zeros": 5}, "give a CSV path"),
])
def test_bad_combinations_are_refused(options, words):
    opts = {"structural_zeros": [{"a": "0", "b": "0"}], **options}
    with pytest.raises(ParameterError, match=words):
        LogLinearRisk(**opts)


def test_cli_takes_the_conditions_file(tmp_path, capsys):
    data = tmp_path / "sample.csv"
    _frame().to_csv(data, index=False)
    conds = tmp_path / "zeros.csv"
    conds.write_text("a,b\n0,0\n")
    out = tmp_path / "out.json"
    code = main(["assess", str(data), "--keys", "a,b", "--population-size", str(N_POP),
                 "--method", "loglinear", "--terms", "independence",
                 "--structural-zeros", str(conds), "--format", "json", "--out", str(out)])
    assert code == 0
    got = json.loads(out.read_text())
    lib = LogLinearRisk(terms="independence", structural_zeros=str(conds)).fit(_table())
    assert got["measures"]["tau1"]["estimate"] == pytest.approx(lib.estimate("tau1"), rel=1e-12)
    assert got["fitted"]["structural_zeros"]["fitted_cells_zeroed"] == 1
    assert got["parameters"]["structural_zeros"] == str(conds)
