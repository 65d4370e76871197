"""Which result files the README and the docs cite, and ``benchmarks/results/INDEX.md``.

A page cites a result by its path in backticks, relative to the repository
(``benchmarks/results/convergence_tiny.txt``) or to ``benchmarks/results/``
(``convergence_tiny.txt``, ``archive/2026-11-27-stall-stop/``); ``*``, ``{a,b}`` and
``<name>`` stand for any part of a name, and a path ending in ``/`` for a folder.

    python docs/_scripts/results_index.py           # report uncited and missing files
    python docs/_scripts/results_index.py --write   # (re)write benchmarks/results/INDEX.md

``tests/test_docs.py`` checks that every citation resolves, that every cited file is in
the index and that every file in ``benchmarks/results/`` is cited.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
INDEX = RESULTS / "INDEX.md"
BOOKKEEPING = {"INDEX.md", "README.md"}  # the index and the archive folders' notes


def pages() -> list[Path]:
    """The README and every docs page (the docs' tooling excluded)."""
    docs = sorted(p for p in (ROOT / "docs").rglob("*.md") if "_" not in p.parts[-2][:1])
    return [ROOT / "README.md", *docs]


def result_files() -> list[str]:
    """Every file under ``benchmarks/results/`` but the bookkeeping, relative to it."""
    return sorted(
        str(p.relative_to(RESULTS))
        for p in RESULTS.rglob("*")
        if p.is_file() and p.name not in BOOKKEEPING
    )


def units(files: list[str]) -> dict[str, list[str]]:
    """Index rows: a benchmark-grid folder (one with ``run.json``) is one unit, so is a
    run's ``.txt`` log with its ``.json`` output; any other file is its own."""
    out: dict[str, list[str]] = defaultdict(list)
    grids = {f.rsplit("/", 1)[0] + "/" for f in files if f.endswith("/run.json")}
    present = set(files)
    for f in files:
        grid = next((g for g in grids if f.startswith(g)), None)
        stem, _, ext = f.rpartition(".")
        if grid is None and ext in ("txt", "json") and {f"{stem}.txt", f"{stem}.json"} <= present:
            out[f"{stem}.{{txt,json}}"].append(f)  # a run's log and its JSON output
        else:
            out[grid or f].append(f)
    return dict(out)


_TOKEN = re.compile(r"`([^`\s]+)`")


def _pattern(token: str) -> re.Pattern[str] | None:
    token = token.removeprefix("benchmarks/results/")
    if not re.fullmatch(r"[\w./*{},<>-]+", token) or "/" in token.split("*")[0][:1]:
        return None
    regex = ""
    i = 0
    while i < len(token):
        c = token[i]
        if c == "*":
            regex += r"[^/]*"
        elif c == "<":
            j = token.index(">", i)
            regex, i = regex + r"[^/]*", j
        elif c == "{":
            j = token.index("}", i)
            regex += "(" + "|".join(map(re.escape, token[i + 1 : j].split(","))) + ")"
            i = j
        else:
            regex += re.escape(c)
        i += 1
    if token.endswith("/"):
        regex += ".*"
    return re.compile(regex)


def citations() -> dict[str, list[tuple[str, str]]]:
    """``{cited file: [(page, section heading), ...]}`` over every page."""
    files = result_files()
    cited: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for page in pages():
        heading = ""
        for line in page.read_text().splitlines():
            if line.startswith("#") and not line.startswith("#!"):
                heading = line.lstrip("#").strip()
            for token in _TOKEN.findall(line):
                if not any(k in token for k in ("results", ".txt", ".json", "archive/", "marl")):
                    continue
                pattern = _pattern(token)
                if pattern is None:
                    continue
                for f in files:
                    if pattern.fullmatch(f):
                        where = (str(page.relative_to(ROOT)), heading)
                        if where not in cited[f]:
                            cited[f].append(where)
    for f in files:  # a run's JSON output goes with its cited log, and the other way round
        stem, _, ext = f.rpartition(".")
        twin = f"{stem}.json" if ext == "txt" else f"{stem}.txt"
        if ext in ("txt", "json") and f not in cited and twin in cited:
            cited[f] = list(cited[twin])
    return dict(cited)


def dangling() -> list[tuple[str, str]]:
    """``(page, token)`` of result citations that match no file."""
    files = result_files() + [str(p.relative_to(RESULTS)) for p in RESULTS.rglob("README.md")]
    out = []
    for page in pages():
        for token in _TOKEN.findall(page.read_text()):
            if not token.startswith("benchmarks/results/") or token.endswith("INDEX.md"):
                continue
            pattern = _pattern(token)
            if pattern is not None and not any(pattern.fullmatch(f) for f in files):
                out.append((str(page.relative_to(ROOT)), token))
    return out


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()


def commit_of(path: str) -> str:
    """The last commit that added or changed ``path``'s content (renames followed)."""
    full = f"benchmarks/results/{path}".replace(".{txt,json}", ".txt")
    if path.endswith("/"):
        return _git("log", "--format=%h", "-1", "--", full)
    return _git("log", "--follow", "--diff-filter=AM", "--format=%h", "-1", "--", full)


def command_of(unit: str) -> str:
    """The command that produced ``unit``: its first line, its ``.txt`` twin's, or a grid's
    ``run.json``."""
    if unit.endswith("/"):
        run = json.loads((RESULTS / unit / "run.json").read_text())
        commands = run.get("commands") or [run.get("command", "")]
        return " ; ".join(  # a study's run.json lists {"command", "date"} records
            str(c["command"]) if isinstance(c, dict) else str(c) for c in commands
        )
    path = RESULTS / unit.replace(".{txt,json}", ".txt")
    if path.suffix == ".json" and path.with_suffix(".txt").is_file():
        path = path.with_suffix(".txt")
    if path.suffix == ".json":
        return ""
    head = path.read_text(errors="replace").splitlines()[:8]
    # the first line that runs something (a few files open with a note on the game first)
    runs = [h for h in head if re.search(r"\b(python|evcs-gym|nox) ", h)]
    line = (runs or head or [""])[0]
    line = re.sub(r"^(# |\$ )", "", line.strip())
    return line.split("   (")[0].strip()


GAME = re.compile(
    r"evcs-gym (\d+\.\d+\.\d+)( as of commit [0-9a-f]+)?[^)]{0,60}?settings ([0-9a-f]{12})"
)


def game_of(unit: str) -> str:
    """The game ``unit`` was measured on, as its file states it: ``version, settings hash``
    (a grid: its ``run.json``'s ``games``, one entry per task); empty if it states none."""
    if unit.endswith("/"):
        run = json.loads((RESULTS / unit / "run.json").read_text())
        tags = {tag for task_tags in run.get("games", {}).values() for tag in task_tags}
        found = [GAME.search(t) for t in sorted(tags)]
        return "; ".join(f"{m[1]}, {m[3]}" for m in found if m)
    path = RESULTS / unit.replace(".{txt,json}", ".txt")
    if path.suffix == ".json":
        data = json.loads(path.read_text())
        game = (data.get("game") if isinstance(data, dict) else None) or {}  # a list: none
        return f"{game['version']}, {game['settings_hash']}" if game else ""
    found = GAME.search("\n".join(path.read_text(errors="replace").splitlines()[:12]))
    return f"{found[1]}, {found[3]}" if found else ""


def _unstated(unit: str) -> str:
    """What the index says of a file that names no game."""
    if unit.startswith("archive/"):
        folder = unit.split("/")[1]
        return f"0.1.0, superseded (`archive/{folder}/README.md`)"
    if unit.endswith("/"):
        return "no EVCS task"
    return "not stated"


def write_index() -> str:
    """Write ``INDEX.md``: one row per cited unit, where it is published, command, commit."""
    cited = citations()
    rows = []
    for unit, members in sorted(units(result_files()).items()):
        where = sorted({w for f in members for w in cited.get(f, [])})
        if not where:
            continue
        published = "<br>".join(f"{page} § {heading}" for page, heading in where)
        command = command_of(unit).replace("|", "\\|")
        game = game_of(unit) or _unstated(unit)
        rows.append(f"| `{unit}` | {published} | `{command}` | {game} | `{commit_of(unit)}` |")
    text = "\n".join(
        [
            "# Index of published results",
            "",
            "Every file in `benchmarks/results/` backs a figure published in the README or",
            "the docs (`docs/`). This index maps each file to the pages that cite it",
            "(page § section), the command that produced it (the first line of the file,",
            "or of a benchmark grid's `run.json`), the game it was measured on (the package",
            "version and the scenario's settings hash, as the file states them) and the last",
            "commit that changed it.",
            "Superseded runs cited by the research notes' history are under `archive/`,",
            "one folder per change of the game, each with a README.",
            "Regenerate with `python docs/_scripts/results_index.py --write`.",
            "",
            "| file | published in | command | game | commit |",
            "|---|---|---|---|---|",
            *rows,
            "",
        ]
    )
    INDEX.write_text(text)
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write INDEX.md")
    args = parser.parse_args(argv)
    cited = citations()
    uncited = [f for f in result_files() if f not in cited]
    for page, token in dangling():
        print(f"missing: {page} cites {token}")
    for f in uncited:
        print(f"uncited: {f}")
    if args.write:
        write_index()
        print(f"written: {INDEX.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
