"""Fuzz Ember's readers: ``python -m tests.fuzz.run --format pt_zip --seconds 60``.

Runs each format's seeds and then mutated inputs through a worker process (see
:mod:`tests.fuzz.harness`), prints progress and a summary table, writes a JSON summary, and
saves every input that hit a bug under ``runs/fuzz/<format>/`` (with a ``.txt`` note). After
fixing the reader, move the reproducer into ``tests/fuzz/regressions/<format>/`` under a
descriptive name: ``pytest tests/fuzz`` replays it from then on.

``--replay FILE...`` runs given files through one format's worker instead (a saved crash, a
regression). Exit status: 1 when any bug was found, 2 when a format could not be run.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
from pathlib import Path

from .harness import BUGS, CRASH_DIR, REPO, Stats, fuzz, replay
from .targets import TARGETS


def _progress_printer(total_seconds: float):
    """A rich progress bar on a terminal, a line every ~10 s otherwise."""
    if sys.stderr.isatty():
        from rich.progress import BarColumn, Progress, TextColumn, TimeRemainingColumn

        progress = Progress(TextColumn("{task.description:16}"), BarColumn(),
                            TextColumn("{task.fields[line]}"), TimeRemainingColumn(),
                            transient=True)
        progress.start()
        tasks: dict[str, int] = {}

        def update(stats: Stats) -> None:
            if stats.target not in tasks:
                tasks[stats.target] = progress.add_task(stats.target, total=total_seconds,
                                                        line="")
            progress.update(tasks[stats.target], completed=min(stats.seconds, total_seconds),
                            line=_line(stats))

        return update, progress.stop
    last: dict[str, float] = {}

    def plain(stats: Stats) -> None:
        if stats.seconds - last.get(stats.target, -10.0) >= 10:
            last[stats.target] = stats.seconds
            print(f"  {stats.target}: {stats.seconds:5.0f}/{total_seconds:g} s  {_line(stats)}",
                  file=sys.stderr, flush=True)

    return plain, lambda: None


def _line(stats: Stats) -> str:
    rate = stats.executed / stats.seconds if stats.seconds else 0.0
    return f"{stats.executed} inputs ({rate:.0f}/s), {stats.n_bugs} bugs"


def summary_table(results: list[dict]) -> str:
    """The per-format table, then one line per distinct bug."""
    head = ["format", "inputs", "inputs/s", "ok", "typed", *BUGS]
    rows = [[r["format"], r["executed"], r["inputs_per_s"], r["ok"], r["typed"],
             *(r["bugs"].get(b, 0) for b in BUGS)] for r in results]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    lines = ["  ".join(str(x).rjust(w) if i else str(x).ljust(w)
                       for i, (x, w) in enumerate(zip(row, widths))) for row in [head, *rows]]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for r in results:
        for s in r["seeds_not_ok"]:
            lines.append(f"\n{r['format']}: a valid seed did not load: {s}")
        for b in r["unique_bugs"]:
            lines.append(f"\n{r['format']}: {b['class']} {b['error']} x{b['count']}"
                         f"\n    at {b['where'] or '?'}\n    {b['message'][:300]}"
                         f"\n    input: {b['saved'][0] if b['saved'] else '-'}")
    return "\n".join(lines)


def markdown_table(results: list[dict]) -> str:
    """The per-format counts as a Markdown table (for benchmarks/RESULTS.md)."""
    head = ["format", "inputs", "inputs/s", "ok", "typed error", *BUGS]
    lines = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    for r in results:
        cells = [r["format"], f"{r['executed']:,}", f"{r['inputs_per_s']:,.0f}", f"{r['ok']:,}",
                 f"{r['typed']:,}", *(str(r["bugs"].get(b, 0)) for b in BUGS)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--format", action="append", choices=sorted(TARGETS),
                        help="format to fuzz (repeat for several; default: all)")
    parser.add_argument("--seconds", type=float, default=60.0, help="per format (default 60)")
    parser.add_argument("--max-inputs", type=int, help="stop each format after this many")
    parser.add_argument("--seed", type=int, default=0, help="RNG seed (default 0)")
    parser.add_argument("--out", type=Path, default=CRASH_DIR,
                        help=f"where bug inputs go (default {CRASH_DIR})")
    parser.add_argument("--json", type=Path, help="summary file (default OUT/summary.json)")
    parser.add_argument("--keep", type=int, default=20,
                        help="inputs saved per distinct bug (default 20)")
    parser.add_argument("--replay", nargs="+", type=Path, help="run these files instead")
    parser.add_argument("--markdown", action="store_true", help="also print a Markdown table")
    args = parser.parse_args(argv)
    names = args.format or sorted(TARGETS)
    if args.replay:
        if len(names) != 1:
            parser.error("--replay needs exactly one --format")
        bad = 0
        for path, outcome in replay(names[0], args.replay):
            bad += outcome.bug
            print(f"{path}: {outcome.status} {outcome.error} {outcome.where} "
                  f"{outcome.message[:200]}")
        return 1 if bad else 0
    update, stop = _progress_printer(args.seconds)
    path = args.json or args.out / "summary.json"
    results, broken = [], []
    try:
        for name in names:
            try:
                stats = fuzz(name, args.seconds, max_inputs=args.max_inputs,
                             rng_seed=args.seed, crash_dir=args.out, keep=args.keep,
                             progress=update)
            except Exception as e:  # noqa: BLE001 - one broken format must not stop the rest
                broken.append(f"{name}: the harness could not run it: {type(e).__name__}: {e}")
                continue
            results.append(stats.to_json())
            _write_summary(path, args, results, broken)  # a long run keeps what it has
    finally:
        stop()
    print(summary_table(results))
    for line in broken:
        print(f"\n{line}")
    if args.markdown:
        print("\n" + markdown_table(results))
    _write_summary(path, args, results, broken)
    print(f"\nsummary: {path}; bug inputs under {args.out}/<format>/ — once a reader is "
          "fixed, move its reproducer to tests/fuzz/regressions/<format>/")
    return 2 if broken else 1 if any(r["bugs"] for r in results) else 0


def _write_summary(path: Path, args, results: list[dict], broken: list[str]) -> None:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=REPO, check=False).stdout.strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit or None, "seconds_per_format": args.seconds, "rng_seed": args.seed,
        "results": results, "not_run": broken,
    }, indent=1))


if __name__ == "__main__":
    sys.exit(main())
