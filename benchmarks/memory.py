"""Peak memory of one fit, as summed RSS and as PSS of its process tree, beside the frame's own size.

    .venv/bin/python benchmarks/memory.py 1000000 60        # synthetic-1m's 800,000 training rows, 60 s
    .venv/bin/python benchmarks/memory.py 6250 30 '{"validation": "holdout"}'   # the fixed overhead

Fits AutoClassifier (n_jobs=2, tracking off) on the first 80% of ``synthetic_table(rows)`` and prints one
JSON line: ``frame_mb`` (``memory_usage(deep=True)`` of the training frame), ``start_rss_mb`` (this
process before the fit: imports and the data), ``peak_rss_mb`` and ``peak_pss_mb``, polled every 0.1 s
over this process and its descendants, and when the PSS peak came (seconds into the fit) with each
process's RSS and PSS then. Summed RSS counts a page that two processes map once in each
(the frame the fit and its worker share); PSS (proportional set size, Linux ``smaps_rollup``) splits
it between them, so it is the physical memory of the tree. ``compare.py`` reports summed RSS.
The rows are read from a parquet file in benchmarks/.data, written once by a child process, so that
this process holds the frame and not the heap left by making it; before 2026-12-07 the table was made
here, and the start and peak figures of docs/benchmarks.md's fourth and seventh large-table steps
include that heap (a session measured 430 MB of it). Delete the file when ``synthetic_table`` changes.
Options as JSON, passed to AutoClassifier. Run it on a quiet machine.
"""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
from peers.data import PACKAGED_DIR, synthetic_table

PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")
POLL_SECONDS = 0.1


def tree(root):
    """Pids of ``root`` and its descendants."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except OSError:  # the process ended while we looked
            continue
    members, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in members]
        members.update(children)
        frontier.extend(children)
    return members


def usage(pids):
    """Summed RSS and PSS of ``pids``, in MB, and ``{pid: (rss, pss)}`` of each."""
    each = {}
    for pid in pids:
        try:
            rss = int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE_BYTES
            rollup = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()
        except OSError:
            continue
        pss = sum(int(line.split()[1]) * 1024 for line in rollup if line.startswith("Pss:"))
        each[pid] = (rss / 1e6, pss / 1e6)
    return sum(r for r, _ in each.values()), sum(p for _, p in each.values()), each


def training_rows(rows):
    """The first 80% of ``synthetic_table(rows)``, written once to a parquet file that the fit reads."""
    path = PACKAGED_DIR / f"synthetic-{rows}-train.parquet"
    if not path.exists():
        PACKAGED_DIR.mkdir(parents=True, exist_ok=True)
        # In a child: making the table leaves freed heap that this process's RSS would keep counting.
        partial = path.with_suffix(".tmp")
        subprocess.run([sys.executable, __file__, "--write", str(rows), str(partial)], check=True)
        partial.rename(path)  # a write stopped halfway is not taken for the table next time
    frame = pd.read_parquet(path)
    return frame.drop(columns="label"), frame["label"]


def write(rows, path):
    X, y, _ = synthetic_table(rows)
    n_train = int(rows * 0.8)
    X.iloc[:n_train].assign(label=y.iloc[:n_train]).to_parquet(path, index=False)


def main(rows, budget, options):
    X, y = training_rows(rows)
    n_train = len(y)
    from automl import AutoClassifier

    start, peaks, at_peak, done = usage(tree(os.getpid())), [0.0, 0.0], {}, threading.Event()

    def poll():
        while not done.is_set():
            rss, pss, each = usage(tree(os.getpid()))
            if pss > peaks[1]:  # where the physical peak is, and which process holds what there
                at_peak.update(seconds=round(time.time() - started, 1), processes=sorted(
                    ([round(r), round(p)] for r, p in each.values()), reverse=True))
            peaks[:] = max(peaks[0], rss), max(peaks[1], pss)
            time.sleep(POLL_SECONDS)

    started = time.time()
    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    params = {**dict(time_budget=budget, n_jobs=2, random_state=0, tracking=False, verbose=0), **options}
    model = AutoClassifier(**params).fit(X, y)
    wall = time.time() - started
    done.set()
    watcher.join()
    print(json.dumps({"rows": n_train, "frame_mb": round(X.memory_usage(deep=True).sum() / 1e6),
                      "start_rss_mb": round(start[0]), "peak_rss_mb": round(peaks[0]), "peak_pss_mb": round(peaks[1]),
                      "wall": round(wall, 1), "validation": model.validation_, "trials": len(model.leaderboard_),
                      "pss_peak_at_seconds": at_peak.get("seconds"),
                      "pss_peak_processes_rss_pss_mb": at_peak.get("processes"),
                      "leaderboard": model.leaderboard_[["trial", "family", "state", "folds", "seconds"]]
                      .sort_values("trial").round(1).values.tolist()}))


if __name__ == "__main__":
    if sys.argv[1] == "--write":
        sys.exit(write(int(sys.argv[2]), sys.argv[3]))
    main(int(sys.argv[1]), float(sys.argv[2]), json.loads(sys.argv[3]) if len(sys.argv) > 3 else {})
