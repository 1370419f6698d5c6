"""A mutation campaign against irrun: many mutated IR files, figures per family.

    python tests/fuzz_campaign.py --count 5000 --seed 0 --jobs 2

Each mutant (see ``tests/support/mutants.py``) goes through ``irrun validate`` and, when that
passes, ``irrun run -o out.npz``, in a forked worker under a memory limit and a time
limit.  Prints, per family, the count and each kind of failure (tracebacks, internal
errors, hangs, MemoryErrors, crashes, output that is not one line per problem, partial
output files, files validate accepts and run rejects), then the worst cases, each with
what replays it.  Exits 1 if any mutant failed.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]


def main(argv: list[str] | None = None) -> int:
    from support import mutants  # its run_all imports the tools once, before forking

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=5000, help="how many mutants (default 5000)")
    parser.add_argument("--seed", type=int, default=0, help="the campaign's seed (default 0)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="workers at once")
    parser.add_argument("--family", choices=sorted(mutants.FAMILIES), help="only this family")
    parser.add_argument("--index", type=int, help="replay this one mutant, showing its output")
    parser.add_argument("--worst", type=int, default=25, help="how many failures to list")
    parser.add_argument("--save", metavar="DIR", help="write each failing mutant's files here")
    args = parser.parse_args(argv)

    pool = mutants.starts()
    indices = [args.index] if args.index is not None else range(args.count)
    todo = [mutants.make_mutant(args.seed, i, pool, args.family) for i in indices]
    counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    failures: list[tuple[dict, list[tuple[str, str]]]] = []
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="irrun-fuzz-") as work:
        for result in mutants.run_all(todo, Path(work), args.jobs):
            m = result["mutant"]
            noted = mutants.problems(result)
            found = [(cls, detail) for cls, detail in noted if cls not in mutants.INFO_CLASSES]
            c = counts[m.family]
            c["count"] += 1
            c["validate-rejects"] += result.get("validate", {}).get("rc") == 1
            c["run-ok"] += result.get("run", {}).get("rc") == 0
            for cls in {cls for cls, _ in noted}:
                c[cls] += 1
            if found:
                failures.append((result, found))
            if args.index is not None:
                for step in ("validate", "run"):
                    if step in result:
                        r = result[step]
                        print(f"--- {step}: exit {r['rc']}, {r['seconds']:.2f} s\n{r['out']}{r['err']}")
                print(m.describe(), noted)
            if args.save and found:
                where = Path(args.save) / f"{m.seed}-{m.index}"
                where.mkdir(parents=True, exist_ok=True)
                (where / "m.xml").write_bytes(m.xml)
                if m.weights is not None:
                    (where / "m.bin").write_bytes(m.weights)
    seconds = time.perf_counter() - began

    columns = ["count", "validate-rejects", "run-ok", *mutants.CLASSES]
    width = max(len(f) for f in [*counts, "family", "total"])
    print(f"{'family':<{width}}  " + "  ".join(f"{c:>{max(len(c), 5)}}" for c in columns))
    total: collections.Counter = collections.Counter()
    for family in sorted(counts):
        total.update(counts[family])
        print(f"{family:<{width}}  " + "  ".join(f"{counts[family][c]:>{max(len(c), 5)}}"
                                                for c in columns))  # fmt: skip
    print(f"{'total':<{width}}  " + "  ".join(f"{total[c]:>{max(len(c), 5)}}" for c in columns))
    n = len(todo)
    print(f"\n{n} mutants (seed {args.seed}) in {seconds:.0f} s with {args.jobs} jobs; "
          f"{len(failures)} failed")  # fmt: skip
    # The worst first: crashes and hangs, then tracebacks, ..., by the order of CLASSES.
    rank = {cls: i for i, cls in enumerate(mutants.CLASSES)}
    failures.sort(key=lambda f: (min(rank[c] for c, _ in f[1]), -f[0]["seconds"]))
    for result, found in failures[: args.worst]:
        m = result["mutant"]
        family = f" --family {args.family}" if args.family else ""
        print(f"\n{m.describe()}  [replay: python tests/fuzz_campaign.py --seed {m.seed} "
              f"--index {m.index}{family}]")  # fmt: skip
        for cls, detail in found:
            print(f"  {cls}: {detail}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
