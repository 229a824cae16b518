"""Does a change move W1's cost? This tree against a git revision, in alternating order, on one machine.

    python bench/bench_ab.py --base HEAD~1 [--pairs 4] [--turns 60]

On this shared 2-core machine two runs of the same code minutes apart differ by up to 0.06 in W1's
ratio to the floor and by about 1 ms of CPU a turn, more than most single changes move them. So a
change is measured against the code before it in pairs, in the order ABBA ABBA (base, this tree, this
tree, base, ...), each run `bench_durable.py --quick --kinds session` in its own process with its own
dev server and Postgres: drift in the machine's load falls on both sides alike. ``--base`` is exported
with ``git archive`` into a temporary folder and imported from there, so its uncommitted changes are not
in it; this tree runs as it is, committed or not. Both sides run this tree's harness (bench/*.py copied
over the base's), so only the product code differs; a base too old for the harness fails its first run
with the harness's error.

It prints and stores (``--out``, default bench/results/ab.json) each run's W1 latency ratio, CPU ratio,
and CPU and latency in ms over the floor, then the means per side and how many pairs moved each way.
Report the ms over the floor: the floor's own CPU moves between runs by more than a small change does,
so the ratios hide what the difference in ms shows. Four pairs (about 3 minutes) show half a millisecond
of CPU a turn; below that, say the change was not measurable here rather than reading the noise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MEASURES = ("ratio_to_floor", "cpu_ratio_to_floor", "cpu_ms_over_floor", "ms_over_floor")


def export(revision: str, into: Path) -> str:
    """The revision's tree under ``into``; returns its commit id."""
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", f"{revision}^{{commit}}"],
                            capture_output=True, text=True)
    if commit.returncode != 0:
        sys.exit(f"--base {revision!r} is not a commit here: {commit.stderr.strip()}")
    archive = subprocess.Popen(["git", "-C", str(ROOT), "archive", commit.stdout.strip()], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(into)], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        sys.exit(f"git archive {revision} failed")
    for harness in (ROOT / "bench").glob("*.py"):  # the same measurement on both sides
        shutil.copy2(harness, into / "bench" / harness.name)
    return commit.stdout.strip()


def one_run(tree: Path, turns: int, out: Path, timeout: float) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [sys.executable, str(tree / "bench" / "bench_durable.py"), "--quick", "--kinds", "session",
               "--turns", str(turns), "--out", str(out)]
    try:
        done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        sys.exit(f"a run in {tree} took over {timeout:.0f} s; nothing is compared")
    if done.returncode != 0:
        sys.exit(f"a run in {tree} failed (exit {done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    session = json.loads(out.read_text())["sequential"]["session"]
    return {measure: session[measure] for measure in MEASURES}


def paired(runs: list[dict]) -> list[tuple[dict, dict]]:
    """(base, this) for each pair of consecutive runs, whichever of the two ran first."""
    pairs = []
    for first, second in zip(runs[::2], runs[1::2], strict=True):
        pairs.append((first, second) if first["side"] == "base" else (second, first))
    return pairs


def summarize(runs: list[dict]) -> dict:
    means = {side: {m: round(statistics.mean(r[m] for r in runs if r["side"] == side), 3) for m in MEASURES}
             for side in ("base", "this")}
    pairs = paired(runs)
    lower = {m: sum(this[m] < base[m] for base, this in pairs) for m in MEASURES}
    return {"means": means, "pairs": len(pairs), "pairs_where_this_tree_is_lower": lower}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", required=True, help="the git revision to compare this tree against")
    parser.add_argument("--pairs", type=int, default=4, help="base/this pairs, in the order ABBA ABBA")
    parser.add_argument("--turns", type=int, default=60, help="measured W1 turns per run (and as many floors)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds one run may take")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "ab.json")
    args = parser.parse_args()
    if args.pairs < 1:
        sys.exit("--pairs must be at least 1")
    with tempfile.TemporaryDirectory(prefix="adkt-ab-") as scratch:
        base_tree = Path(scratch) / "base"
        base_tree.mkdir()
        base_commit = export(args.base, base_tree)
        runs: list[dict] = []
        for pair in range(args.pairs):
            order = ("base", "this") if pair % 2 == 0 else ("this", "base")
            for side in order:
                tree = base_tree if side == "base" else ROOT
                measured = one_run(tree, args.turns, Path(scratch) / "run.json", args.timeout)
                runs.append({"side": side, **{m: round(v, 3) for m, v in measured.items()}})
                print(f"pair {pair + 1} {side:4s} latency {measured['ratio_to_floor']:.3f}  cpu {measured['cpu_ratio_to_floor']:.3f}"
                      f"  cpu ms over floor {measured['cpu_ms_over_floor']:.2f}  ms over floor {measured['ms_over_floor']:.2f}",
                      flush=True)
    summary = summarize(runs)
    result = {"base": args.base, "base_commit": base_commit, "turns": args.turns, "runs": runs, **summary}
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    for side in ("base", "this"):
        m = summary["means"][side]
        print(f"{side:4s} means: latency {m['ratio_to_floor']:.3f}  cpu {m['cpu_ratio_to_floor']:.3f}  "
              f"cpu ms over floor {m['cpu_ms_over_floor']:.2f}  ms over floor {m['ms_over_floor']:.2f}")
    print(f"this tree lower in (of {summary['pairs']} pairs): {summary['pairs_where_this_tree_is_lower']}")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
