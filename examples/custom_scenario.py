"""Make your own scenario: write a scenario folder, load it, evaluate a price profile.

A scenario is a folder ``<name>/`` with four files: ``<name>_nodes.csv``,
``<name>_links.csv``, ``<name>_demand.csv`` and ``<name>_settings.json``
(docs/scenarios/format.md). This script writes a small corridor with two competing
stations, "north" and "south", one on each of two parallel roads between a western and
an eastern town, loads it with :func:`evcs_gym.load_scenario` (which validates every
file and names the row and column of any mistake), evaluates two price profiles and
plays one step of the PettingZoo game on it.

Run: ``python examples/custom_scenario.py [--out FOLDER]`` (about a second).
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
from pathlib import Path

import evcs_gym

NAME = "corridor"

# name, x, y (m; used for drawing only)
NODES = [
    ("west", 0, 0),
    ("junction_w", 3000, 0),
    ("north", 6000, 1500),
    ("south", 6000, -1500),
    ("junction_e", 9000, 0),
    ("east", 12000, 0),
]

# one row per direction: name, start, end, length (m), u (free-flow speed, m/s),
# kappa (jam density, veh/m), merge_priority
ROADS = [
    ("west", "junction_w", 3000, 15),
    ("junction_w", "north", 3400, 15),
    ("junction_w", "south", 3400, 12),  # the southern road is slower ...
    ("north", "junction_e", 3400, 15),
    ("south", "junction_e", 3400, 12),
    ("junction_e", "east", 3000, 15),
]

# orig, dest, start_t, end_t (s), q (vehicles per s)
DEMAND = [
    ("west", "east", 0, 1800, 0.5),
    ("east", "west", 0, 1800, 0.3),
    ("south", "east", 0, 1800, 0.05),  # ... but the south station has captive drivers
]

SETTINGS = {
    "network_name": NAME,
    "simulation_time": 3600,
    "deltan": 5,
    "charging_car_rate": 0.3,
    "charging_link_length": 600,
    "charging_link_free_flow_speed": 2,
    "charging_periods": 4,
    "charging_nodes": {"north": [0.5, 2.0], "south": [0.5, 2.0]},
    "routes_per_od": 4,
    "charging_demand_per_vehicle": 20,
    "station_taste_scale": 4,
    "ue_convergence_threshold": 0.002,
    "ue_charging_gap_threshold": 0.002,
    "ue_max_iterations": 60,
    "flow_scale_factor": 50,
    "reward_scale": 2000,
}


def write_scenario(parent: Path) -> Path:
    """Write the ``corridor`` scenario folder under ``parent``; return the folder."""
    folder = Path(parent) / NAME
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"{NAME}_nodes.csv", "w", newline="") as f:
        csv.writer(f).writerows([("name", "x", "y"), *NODES])
    with open(folder / f"{NAME}_links.csv", "w", newline="") as f:
        rows = [("name", "start", "end", "length", "u", "kappa", "merge_priority")]
        for start, end, length, speed in ROADS:
            for a, b in ((start, end), (end, start)):
                rows.append((f"{a}-{b}", a, b, length, speed, 0.2, 1))
        csv.writer(f).writerows(rows)
    with open(folder / f"{NAME}_demand.csv", "w", newline="") as f:
        csv.writer(f).writerows([("orig", "dest", "start_t", "end_t", "q"), *DEMAND])
    (folder / f"{NAME}_settings.json").write_text(json.dumps(SETTINGS, indent=2))
    return folder


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="folder to write the scenario into (default: a temp dir)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        folder = write_scenario(Path(args.out or tmp))
        nd = evcs_gym.load_scenario(folder)
        print(f"loaded {nd.summary()}")
        evaluator = evcs_gym.EVCSRewardEvaluator(nd)
        revenues = {}
        for label, prices in {
            "equal prices": {"north": [1.25] * 4, "south": [1.25] * 4},
            "south undercuts": {"north": [1.25] * 4, "south": [1.0] * 4},
        }.items():
            res = evaluator.evaluate(prices, seed=0)
            revenues[label] = dict(res.rewards)
            flows = {a: res.flows[a].tolist() for a in nd.agent_names}
            print(f"{label}: revenues {res.rewards}, flows {flows}, converged {res.converged}")

        env = evcs_gym.parallel_env(scenario=folder)  # the game on it, like any bundled one
        env.reset(seed=0)
        _, rewards, *_ = env.step({a: env.action_space(a).sample() for a in env.agents})
        print(f"one step of the game: rewards {rewards}")
    return revenues


if __name__ == "__main__":
    main()
