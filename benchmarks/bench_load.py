"""Benchmark: ``load_scenario`` cold and from the on-disk cache, each in a new process.

For each scenario, with an empty cache folder of this run (``EVCS_GYM_CACHE_DIR``):

* **cold**: a new process loads the scenario: it reads the files, computes the route
  sets and the warm start, and writes the cache entry (``key+write``: the seconds of
  hashing the files for the key and of writing the entry, the cache's whole cost);
* **cached**: another new process loads it again and reads the entry;
* **uncached**: with ``--uncached``, a third process loads it with ``cache=False``
  (what every load cost before the cache); the cold load's overhead is cold / uncached.

Seconds are those of the ``load_scenario`` call (the process's ``import evcs_gym`` is
timed apart). Each process also checks that its :class:`~evcs_gym.NetworkData` equals
the cold one (the route choice of every platoon and the warm start's travel times, bit
for bit).

Run: ``python benchmarks/bench_load.py [--scenarios tiny siouxfalls ...] [--uncached]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

import evcs_gym

_CHILD = r"""
import hashlib, json, sys, time
t0 = time.perf_counter()
import evcs_gym
imported = time.perf_counter() - t0
t0 = time.perf_counter()
nd = evcs_gym.load_scenario(sys.argv[1], cache=sys.argv[2] == "1")
seconds = time.perf_counter() - t0
h = hashlib.sha256(nd.initial_route_choice.tobytes())
h.update(nd.route_links.tobytes())
if nd.reference_traveltime is not None:
    h.update(nd.reference_traveltime.tobytes())
print(json.dumps({
    "import_s": imported, "load_s": seconds, "from_cache": nd.from_cache,
    "timings": nd.timings, "digest": h.hexdigest(), "summary": nd.summary(),
}))
"""


def load_in_new_process(name: str, cache_dir: str, cache: bool) -> dict:
    env = {**os.environ, "EVCS_GYM_CACHE_DIR": cache_dir}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, name, "1" if cache else "0"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench(name: str, uncached: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix="evcs-bench-load-") as cache_dir:
        cold = load_in_new_process(name, cache_dir, cache=True)
        cached = load_in_new_process(name, cache_dir, cache=True)
        entry_mb = (
            sum(
                os.path.getsize(os.path.join(cache_dir, f))
                for f in os.listdir(cache_dir)
                if f.endswith(".npz")
            )
            / 1e6
        )
        plain = load_in_new_process(name, cache_dir, cache=False) if uncached else None
    assert not cold["from_cache"] and cached["from_cache"], (cold, cached)
    digests = {cold["digest"], cached["digest"]} | ({plain["digest"]} if plain else set())
    same = len(digests) == 1
    t = cold["timings"]
    line = (
        f"{name:<22}{cold['load_s']:>9.2f}{t.get('routes', 0):>9.2f}{t.get('warm_start', 0):>9.2f}"
        f"{cached['load_s']:>9.2f}{cached['timings']['cache_read']:>9.3f}"
        f"{(plain['load_s'] if plain else float('nan')):>10.2f}"
        f"{t.get('cache_key', 0) + t.get('cache_write', 0):>10.2f}{entry_mb:>9.1f}"
        f"{cached['import_s']:>9.2f}{str(same):>7}"
    )
    print(line, flush=True)
    return {"cold": cold, "cached": cached, "uncached": plain, "entry_mb": entry_mb, "same": same}


def main(argv: list[str] | None = None) -> dict[str, dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", nargs="+", default=evcs_gym.available_scenarios())
    parser.add_argument("--uncached", action="store_true", help="also time a load with cache=False")
    args = parser.parse_args(argv)
    print(f"evcs-gym {evcs_gym.__version__}; each load in a new process, seconds of the call")
    print(
        f"{'scenario':<22}{'cold s':>9}{'routes':>9}{'warm st.':>9}{'cached s':>9}"
        f"{'read s':>9}{'uncached':>10}{'key+write':>10}{'MB':>9}{'import':>9}{'same':>7}"
    )
    results = {}
    for name in args.scenarios:
        results[name] = r = bench(name, args.uncached)
        settings = r["cold"]["summary"].rsplit("settings ", 1)[-1]
        print(f"    {name}: settings {settings}", flush=True)
    return results


if __name__ == "__main__":
    main()
