"""MkDocs hook: publish the benchmark grid's plots from ``benchmarks/results/`` as they are.

The MARL grid's report writes its plots next to its tables
(``benchmarks/results/<folder>/plots/*.png``). The docs show them without a copy in
``docs/``: every such plot is added to the site as ``results/<folder>/plots/<name>.png``,
so a page links it as ``![...](results/marl_tiny/plots/tiny_curve.png)`` (relative to
``docs/``) and always shows the committed result.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"


def on_files(files: Files, config) -> Files:
    for plot in sorted(RESULTS.glob("*/plots/*.png")):
        uri = "results/" + plot.relative_to(RESULTS).as_posix()
        files.append(File.generated(config, uri, abs_src_path=str(plot)))
    return files
