"""Peak memory of one model family's default fit, in this process, on the first rows of synthetic-1m's training frame.

    PYTHONPATH=benchmarks .venv/bin/python benchmarks/family_memory.py hgb 720000                  # seeded split
    PYTHONPATH=benchmarks .venv/bin/python benchmarks/family_memory.py hgb 720000 --rows-shuffled  # a rung's last rows

Validates the 800,000 training rows of ``synthetic_table(1_000_000)`` (the parquet file of memory.py),
builds the family's first portfolio configuration (``default_pipeline``, its model on 2 threads) and
fits it on the first ``rows`` rows, as a holdout rung of that size would (``fit_quietly``). Prints
one JSON line: the RSS before the fit (imports, the frames), the peak RSS above it (polled every
10 ms) and what is left above it after the fit, with the fit's seconds. ``--rows-shuffled`` passes
``rows_shuffled=True``, which the objective passes on a holdout's rungs (automl/space/stopping.py);
a checkout older than that has no such parameter: run it without. Run it on a quiet machine.
"""

import argparse
import gc
import json
import os
import threading
import time

import numpy as np
from memory import training_rows, usage

from automl.data import check_training_data
from automl.space import default_pipeline, fit_quietly, set_threads

POLL_SECONDS = 0.01


def rss_mb():
    return usage([os.getpid()])[0]


def main(family, rows, rows_shuffled):
    X_raw, y_raw = training_rows(1_000_000)
    X, y, _, profile = check_training_data(X_raw, y_raw, n_folds=5)
    del X_raw, y_raw
    gc.collect()
    X, y = X.iloc[:rows], np.asarray(y)[:rows]
    pipeline = set_threads(default_pipeline(family, profile, 0), 2)
    shuffled = {"rows_shuffled": True} if rows_shuffled else {}
    start, peak, done = rss_mb(), [0.0], threading.Event()

    def poll():
        while not done.is_set():
            peak[0] = max(peak[0], rss_mb())
            time.sleep(POLL_SECONDS)

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    started = time.time()
    fit_quietly(pipeline, X, y, **shuffled)
    seconds = time.time() - started
    done.set()
    watcher.join()
    print(json.dumps({"family": family, "rows": rows, "rows_shuffled": rows_shuffled, "start_rss_mb": round(start),
                      "peak_above_start_mb": round(peak[0] - start), "left_above_start_mb": round(rss_mb() - start),
                      "fit_seconds": round(seconds, 1)}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("family", help="a classification family key: hgb, lgbm, xgb, catboost, ...")
    parser.add_argument("rows", type=int, help="rows of the training frame to fit on, at most 800,000")
    parser.add_argument("--rows-shuffled", action="store_true")
    args = parser.parse_args()
    main(args.family, args.rows, args.rows_shuffled)
