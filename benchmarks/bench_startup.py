"""Start-up cost: ``import ember``, ``ember --help`` and ``ember info``, each in a fresh
interpreter, for this checkout and (``--compare DIR``) another one, alternating run by run.

    python benchmarks/bench_startup.py [--repeat 15] [--compare /path/to/other/checkout]

``DIR`` is a checkout's root (its ``core/`` goes on ``PYTHONPATH``); a git revision can be
checked out for it with ``git worktree add /tmp/before <rev>``. Reports median wall seconds
and how many ``ember`` modules each command imports.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import row, write_record

HERE = Path(__file__).resolve().parents[1]

COMMANDS = {
    "import ember": "import ember",
    "ember --help": "import sys; sys.argv = ['ember', '--help']\n"
                    "from ember.cli import main\ntry: main()\nexcept SystemExit: pass",
    "ember info": "import sys\nfrom ember.cli import main\nmain(['info'])",
}
COUNT = "\nimport sys as _s; print('MODULES', sum(m.startswith('ember') for m in _s.modules))"


def run(root: Path, code: str) -> tuple[float, int]:
    env = dict(os.environ, PYTHONPATH=str(root / "core"))
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code + COUNT], env=env, capture_output=True,
                         text=True, check=True).stdout
    elapsed = time.perf_counter() - started
    return elapsed, int(out.rsplit("MODULES", 1)[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--compare", type=Path, default=None, help="another checkout's root")
    args = parser.parse_args()
    roots = {"this": HERE} | ({"compare": args.compare.resolve()} if args.compare else {})
    print(f"# start-up — {platform.processor() or platform.machine()}, "
          f"{time.strftime('%Y-%m-%d')}, load {os.getloadavg()[0]:.2f}")
    header = " | ".join(f"{name} s | {name} modules" for name in roots)
    print(f"| command | {header} |")
    print("|---|" + "---:|" * (2 * len(roots)))
    rows = []
    for label, code in COMMANDS.items():
        times: dict[str, list[float]] = {name: [] for name in roots}
        modules: dict[str, int] = {}
        for _ in range(args.repeat):  # alternate the checkouts so both see the same load
            for name, root in roots.items():
                elapsed, modules[name] = run(root, code)
                times[name].append(elapsed)
        cells = " | ".join(f"{statistics.median(times[n]):.3f} | {modules[n]}" for n in roots)
        print(f"| `{label}` | {cells} |")
        goal = "" if label == "import ember" else "goal < 0.3 s; "
        peer = statistics.median(times["compare"]) if args.compare else None
        rows.append(row("system", f"{label} (fresh interpreter)", statistics.median(times["this"]),
                        peer, "s", f"checkout {args.compare}" if args.compare else "none",
                        note=f"{goal}{modules['this']} ember modules"))
    write_record(rows)


if __name__ == "__main__":
    main()
