"""The stationary-mean estimator (evcs_gym.ue.stationary): MSER truncation
and the AR(1) standard error."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from evcs_gym.ue.stationary import (
    MAX_AUTOCORRELATION,
    StationaryEstimate,
    ar1_standard_error,
    mser_truncation,
    stationary_estimate,
)


def _ar1(rng: np.random.Generator, n: int, k: int, rho: float, sd: float = 1.0) -> np.ndarray:
    """``n`` rows of ``k`` independent stationary AR(1) series around 100."""
    x = np.empty((n, k))
    x[0] = rng.normal(0, sd, k)
    innovation = sd * np.sqrt(1 - rho**2)
    for t in range(1, n):
        x[t] = rho * x[t - 1] + rng.normal(0, innovation, k)
    return 100.0 + x


def test_mser_drops_a_decaying_transient_and_nothing_from_a_stationary_series():
    rng = np.random.default_rng(0)
    steady = _ar1(rng, 60, 3, 0.5)
    assert mser_truncation(steady) <= 5
    transient = steady.copy()
    transient[:12] += np.linspace(40, 5, 12)[:, None]  # 40 % off, decaying over 12 rows
    assert 10 <= mser_truncation(transient) <= 20


def test_mser_never_drops_more_than_allowed():
    x = np.r_[np.full(30, 10.0), np.full(30, 1.0)][:, None] + np.arange(60)[:, None] * 0.01
    assert mser_truncation(x, max_fraction=0.5) <= 30
    assert mser_truncation(x, max_fraction=0.2) <= 12
    assert mser_truncation(np.ones((2, 1))) == 0


def test_ar1_standard_error_is_calibrated_on_ar1_series():
    """Across 400 replications of a 20-row window of an AR(1) series with ρ = 0.7 (the
    orbit's measured lag-1 autocorrelation), the error of the mean divided by the
    estimated standard error has a spread near 1 (the plain s/√m gives about 2)."""
    rng = np.random.default_rng(1)
    z, naive = [], []
    for _ in range(400):
        w = _ar1(rng, 20, 4, 0.7)
        se, tau = ar1_standard_error(w)
        z.extend((w.mean(axis=0) - 100.0) / se)
        naive.extend((w.mean(axis=0) - 100.0) / (w.std(axis=0, ddof=1) / np.sqrt(20)))
    assert 0.8 < np.std(z) < 1.3
    assert np.std(naive) > 1.8


def test_ar1_standard_error_of_independent_rows_is_about_the_plain_one():
    rng = np.random.default_rng(2)
    w = rng.normal(100, 5, (200, 3))
    se, tau = ar1_standard_error(w)
    plain = w.std(axis=0, ddof=1) / np.sqrt(200)
    assert np.allclose(se, plain, rtol=0.15) and tau < 1.2


def test_ar1_standard_error_caps_the_autocorrelation():
    trend = np.linspace(0, 1, 30)[:, None] + np.array([[100.0, 50.0]])
    se, tau = ar1_standard_error(trend)
    rho = MAX_AUTOCORRELATION
    assert tau == pytest.approx((1 + rho) / (1 - rho)) and np.all(se > 0)


def test_a_constant_column_has_no_error_and_does_not_set_the_autocorrelation():
    rng = np.random.default_rng(3)
    w = np.c_[np.full(25, 7.0), rng.normal(100, 1, 25), np.zeros(25)]
    se, tau = ar1_standard_error(w)
    assert se[0] == 0 and se[2] == 0 and se[1] > 0 and tau >= 1


def test_a_window_of_one_row_has_no_standard_error():
    se, tau = ar1_standard_error(np.ones((1, 2)))
    assert np.isnan(se).all() and np.isnan(tau)


@settings(max_examples=60, deadline=None)
@given(
    arrays(
        np.float64,
        st.tuples(st.integers(3, 60), st.integers(1, 5)),
        elements=st.floats(0, 1e6, allow_nan=False, allow_infinity=False),
    )
)
def test_the_estimate_is_the_mean_of_its_window(history):
    est = stationary_estimate(history)
    assert 0 <= est.first <= len(history) // 2 and est.stop == len(history)
    window = history[est.first :]
    assert np.allclose(est.mean, window.mean(axis=0), rtol=1e-12, atol=1e-9)
    assert np.all(est.se >= 0) and 1 <= est.tau <= 19 + 1e-9
    slack = 1e-12 * np.abs(window).max() + 1e-12
    assert np.all(window.min(axis=0) <= est.mean + slack)
    assert np.all(est.mean <= window.max(axis=0) + slack)


@settings(max_examples=40, deadline=None)
@given(
    arrays(
        np.float64,
        st.tuples(st.integers(3, 40), st.just(3)),
        elements=st.floats(1, 1e4, allow_nan=False, allow_infinity=False),
    ),
    st.floats(0.01, 100.0),
)
def test_the_estimate_does_not_depend_on_the_currency(history, rate):
    """Revenues in another currency (every column scaled alike) give the same window and
    the same relative errors."""
    a, b = stationary_estimate(history), stationary_estimate(history * rate)
    assert (a.first, a.stop) == (b.first, b.stop)
    assert np.allclose(b.se, a.se * rate, rtol=1e-6, atol=1e-9)


def test_precise_judges_small_stations_on_the_market_scale():
    est = StationaryEstimate(0, 30, np.array([1000.0, 100.0]), np.array([20.0, 20.0]), 2.0)
    assert not est.precise(0.03, floor=0.0)  # 20 % of the small station
    assert est.precise(0.03, floor=1.5)  # 20 <= 3 % of 1.5 x 550
    assert est.length == 30
