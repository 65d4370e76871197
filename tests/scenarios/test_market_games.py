"""The market games meet their targets: a certified interior equilibrium, no constant
guess an answer, and an interior collusive reference that no station's prices can raise
and that beats every uniform profile.

Every check here runs on the game's own references (``<name>_references.json``); the
solver's runs that found them are the slow tests at the end. Every verification is the
converged deviation search (the package's default), its gains on 4 seeds.
`tiny_market`'s checks are in the default suite; the Sioux Falls market's (minutes
each) are behind the slow marker.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import evcs_gym
from evcs_gym.equilibrium import BestResponseDynamics, collusion_index, exploitability
from evcs_gym.scenarios import load_references

SEEDS = 4
NASH_CONV = {"tiny_market": 0.018, "siouxfalls_market": 0.020}
"""The most verified NashConv each game's Nash reference may show. ``tiny_market``'s N
verifies at 1.62 % under the default search (two rounds to 1/192 of the range, scored
on the held-out seed 4): above the 1.0 % its design asks, for the platoon sawtooth (one
platoon is about 0.35 % of a station's revenue). The seeds agree on this game, so the
search seed only sets the search's random poll directions: scored on seed 0 the same
search finds 1.04 %, on seed 1 1.67 %, and the strongest attacks about 1.5 % at every
reference found (see the deviation-search research notes). Smaller platoons, a new
game, would lower that floor."""
JOINT_GAIN = 0.005
"""The most any one station's prices may raise the total revenue at the collusive
reference."""


GAMES = ["tiny_market", pytest.param("siouxfalls_market", marks=pytest.mark.slow)]
"""The market games, each with its references; Sioux Falls' checks take minutes each."""

SHAPED_BY_THE_TRAFFIC = ["siouxfalls_market"]
"""Games whose stations must price their periods apart (peaks, queues, detours)."""


@pytest.fixture(scope="module", params=GAMES)
def market(request) -> evcs_gym.NetworkData:
    return evcs_gym.load_scenario(request.param)


@pytest.fixture(scope="module")
def references(market):
    refs = load_references(market)
    assert refs is not None, f"{market.name} ships its references"
    return refs


@pytest.fixture(scope="module")
def nash_certificate(market, references):
    return exploitability(market, references.nash, seeds=SEEDS)


def bounds(market) -> tuple[float, float]:
    """The price bounds every station of a market game shares."""
    (common,) = set(market.price_bounds.values())
    return common


def interior(market, prices: dict[str, np.ndarray], margin: float = 0.15) -> bool:
    """Every station's mean price at least ``margin`` of its range inside its bounds."""
    for agent, p in prices.items():
        lo, hi = market.price_bounds[agent]
        if not lo + margin * (hi - lo) <= float(np.mean(p)) <= hi - margin * (hi - lo):
            return False
    return True


def test_the_nash_reference_is_certified_and_interior(market, references, nash_certificate):
    assert nash_certificate.relative_nash_conv <= NASH_CONV[market.name], nash_certificate.summary()
    assert nash_certificate.n_seeds == SEEDS and nash_certificate.converged
    assert interior(market, references.nash)


@pytest.mark.parametrize("name", SHAPED_BY_THE_TRAFFIC)  # fast: references only
def test_the_traffic_shapes_the_nash_prices(name):
    """At least two stations' dearest and cheapest periods differ by 10 % of the range.

    Loads its game itself: overriding the module's ``market`` fixture here would make
    pytest rebuild it, and ``tiny_market``'s N certificate with it, for the tests after."""
    market = evcs_gym.load_scenario(name)
    references = load_references(market)
    assert references is not None
    lo, hi = bounds(market)
    spreads = [float(np.ptp(p)) / (hi - lo) for p in references.nash.values()]
    assert sum(s >= 0.10 for s in spreads) >= 2, spreads


def test_no_station_can_raise_the_collusive_total(market, references):
    cert = exploitability(market, references.collusive, seeds=SEEDS, objective="total")
    assert cert.converged and cert.max_relative_gain <= JOINT_GAIN, cert.summary()


def test_the_collusive_reference_is_interior_and_beats_every_uniform_profile(market, references):
    assert interior(market, references.collusive)
    lo, hi = bounds(market)
    ev = evcs_gym.EVCSRewardEvaluator(market)

    def total(prices) -> float:
        return float(np.mean([ev.evaluate(prices, seed=s).total_reward for s in range(2)]))

    best_uniform = max(
        total(evcs_gym.uniform_prices(market.agent_names, market.n_periods, p))
        for p in np.linspace(lo, hi, 21)
    )
    assert total(references.collusive) >= best_uniform


@pytest.mark.parametrize("where", ["floor", "mid-bounds", "ceiling"])
def test_no_constant_guess_is_an_answer(market, nash_certificate, where):
    """A guess's NashConv is bounded from below by any search's, so the cheap 32-candidate
    one on 2 seeds suffices here (far from equilibrium the converged search costs 3-5
    times as much, and the guesses' gains stand far above the seeds' noise)."""
    lo, hi = bounds(market)
    price = {"floor": lo, "mid-bounds": (lo + hi) / 2, "ceiling": hi}[where]
    guess = evcs_gym.uniform_prices(market.agent_names, market.n_periods, price)
    cert = exploitability(market, guess, seeds=2, search="budget32")
    assert cert.relative_nash_conv >= 0.05
    assert cert.relative_nash_conv >= 3 * nash_certificate.relative_nash_conv


def test_delta_spans_competition_to_collusion(market, references):
    at_nash = collusion_index(market, references.nash, references, seeds=2)
    at_collusion = collusion_index(market, references.collusive, references, seeds=2)
    assert at_nash.delta == 0.0 and at_collusion.delta == 1.0
    assert at_collusion.revenue > 1.1 * at_nash.revenue  # the references are apart


SOLVES = {
    ("tiny_market", "nash"): dict(
        start="tiny_market_nash_0.3.0.json", target=0.008, min_damping=0.25
    ),
    ("tiny_market", "collusive"): dict(
        start="tiny_market_collusive_0.3.0.json",
        target=0.004,
        min_damping=0.25,
        objective="total",
    ),
    ("siouxfalls_market", "nash"): dict(
        start="siouxfalls_market_nash_0.3.0.json", target=0.018, min_damping=0.25, max_rounds=4
    ),
    ("siouxfalls_market", "collusive"): dict(
        start="siouxfalls_market_collusive_0.3.0.json",
        target=0.005,
        min_damping=0.25,
        max_rounds=4,
        objective="total",
    ),
}
"""The solver run behind each shipped reference, as its ``how`` records: best-response
dynamics with 0.4.0's converged search (``converged-0.4``) from the 0.3.0 game's reference
(``benchmarks/inputs/``)."""

INPUTS = Path(__file__).resolve().parents[2] / "benchmarks" / "inputs"


@pytest.mark.slow
@pytest.mark.parametrize("which", ["nash", "collusive"])
def test_the_solver_reproduces_the_references(market, references, which):
    """``evcs-gym solve`` with the options its ``how`` records converges to the shipped
    reference, to the printed digits."""
    options = dict(SOLVES[(market.name, which)])
    start = json.loads((INPUTS / options.pop("start")).read_text())
    options.setdefault("max_rounds", 20)
    options.setdefault("search", "converged-0.4")  # the references' search (evcs-gym 0.4.0)
    options.setdefault("held_out", False)  # and its certificates, in sample
    solver = BestResponseDynamics(market, seeds=SEEDS, **options)
    res = solver.solve(start)
    assert res.converged, res
    shipped = getattr(references, which)
    for agent in market.agent_names:
        np.testing.assert_allclose(res.prices[agent], shipped[agent], atol=1e-6)
