"""The README and the docs cite only files that exist, and every result file is indexed.

``docs/_scripts/results_index.py`` finds the result files a page cites; the docs site
itself is checked by ``mkdocs build --strict`` (``.ci/run``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def results_index(load_script):
    return load_script("docs/_scripts", "results_index")


def test_every_cited_result_file_exists(results_index):
    assert results_index.dangling() == []


def test_every_result_file_backs_a_published_figure(results_index):
    cited = results_index.citations()
    assert [f for f in results_index.result_files() if f not in cited] == []


def test_every_cited_result_is_in_the_index(results_index):
    index = results_index.INDEX.read_text()
    cited = results_index.citations()
    for unit, members in results_index.units(results_index.result_files()).items():
        if any(f in cited for f in members):
            assert f"`{unit}`" in index, f"{unit} is cited but not in {results_index.INDEX.name}"


def test_the_readme_cites_only_files_of_the_repository():
    readme = (ROOT / "README.md").read_text()
    paths = set(re.findall(r"`((?:benchmarks|docs|examples|evcs_gym|tests)/[\w./-]+)`", readme))
    paths |= set(re.findall(r'src="([^"]+)"', readme))
    paths |= {p for p in ("LICENSE", "NOTICE", "CITATION.cff", "CHANGELOG.md") if p in readme}
    missing = sorted(p for p in paths if not (ROOT / p.rstrip("/")).exists())
    assert missing == []
    assert len(readme.splitlines()) <= 200


@pytest.mark.timeout(300)
def test_the_readmes_main_job_runs_as_written(tmp_path, capsys):
    """The quick start's ``evcs-gym train ...`` with its own options (and its game's
    recipe), cut to 8 evaluations and no verification: the command, its scenario and its
    options stay valid."""
    import shlex

    from evcs_gym.cli import main

    readme = (ROOT / "README.md").read_text()
    (line,) = [ln for ln in readme.splitlines() if "&& evcs-gym train " in ln]
    argv = shlex.split(line.split("&& evcs-gym ", 1)[1])
    assert argv[0] == "train" and "--scenario" in argv
    if "--budget" in argv:
        argv[argv.index("--budget") + 1] = "8"
    else:  # the game's recipe sets the budget; the flag overrides it
        argv += ["--budget", "8"]
    argv += ["--verify-budget", "0", "--workers", "1", "--quiet", "--out", str(tmp_path / "run")]
    assert main(argv) == 0
    assert "final pure prices and revenue" in capsys.readouterr().out
