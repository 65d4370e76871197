"""MkDocs hook: publish the result folders' plots from ``benchmarks/results/`` as they are.

The MARL grid's report writes its plots next to its tables
(``benchmarks/results/<folder>/plots/*.png``), a study its plot in its folder
(``benchmarks/results/<folder>/*.png``). The docs show them without a copy in
``docs/``: every such plot is added to the site under ``results/`` at the same path, so
a page links it as ``![...](results/marl_tiny/plots/tiny_curve.png)`` (relative to
``docs/``) and always shows the committed result.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"


def on_files(files: Files, config) -> Files:
    for plot in sorted([*RESULTS.glob("*/plots/*.png"), *RESULTS.glob("*/*.png")]):
        uri = "results/" + plot.relative_to(RESULTS).as_posix()
        files.append(File.generated(config, uri, abs_src_path=str(plot)))
    return files
