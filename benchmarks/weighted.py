"""Row weights (issue 27): a fit given the rows' weights against one without, scored by the weighted metric on
held-out rows.

    .venv/bin/python benchmarks/weighted.py --csv benchmarks/results/weighted.csv        # every case, 60 s

Each case is a real dataset of ../shared/data with weights that come with it, split 75/25 (stratified, seeded);
both fits see the same training rows and features, "plain" as ``fit(X, y)``, "weighted" as
``fit(X, y, sample_weight=w)``:

- ``credit-g-costs``: German credit with UCI's cost matrix as weights (a bad customer called good costs 5, a
  good one called bad 1: bad rows weigh 5). Metric: log loss, weighted (a class-constant weight leaves ROC AUC
  unchanged, so it is no test of weights).
- ``adult-fnlwgt``: adult with its census sampling weight ``fnlwgt`` (the number of people a row stands for),
  which is then not a feature in either fit. Metric: ROC AUC, weighted: how well the model ranks the
  population the survey describes.

Each fit runs in its own process (``peers/monitor.py``: wall, peak RSS, foreign load). Written per case and
mode: the search's best score (weighted in "weighted" mode only), and the held-out score, weighted and not.
"""

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers.monitor import monitored_row, save_and_show  # noqa: E402

DATA = Path(os.environ.get("AUTOML_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
CASES = ["credit-g-costs", "adult-fnlwgt"]
BAD_COST = 5.0  # UCI Statlog German credit's cost matrix


def load(case):
    """``(X, y, w, metric)`` of a case."""
    if case == "credit-g-costs":
        frame = pd.read_csv(DATA / "credit-g.csv")
        y = frame.pop("class")
        return frame, y, np.where(y == "bad", BAD_COST, 1.0), "log_loss"
    frame = pd.read_csv(DATA / "adult.csv.gz")
    y, w = frame.pop("class"), frame.pop("fnlwgt").to_numpy(dtype=float)
    return frame, y, w, "roc_auc"


def held_out_scores(model, X, y, w):
    from automl.search import get_metric

    metric = get_metric(model.metric_, len(model.classes_))
    proba = model.predict_proba(X)
    codes = pd.Index(model.classes_).get_indexer(y)
    return metric(codes, proba, sample_weight=w), metric(codes, proba)


def run_one(case, mode, budget, seed, n_jobs):
    """One fit, in this process: a dict of the figures."""
    from sklearn.model_selection import train_test_split

    from automl import AutoClassifier

    X, y, w, metric = load(case)
    X_tr, X_te, y_tr, y_te, w_tr, w_te = train_test_split(X, y, w, test_size=0.25, random_state=seed, stratify=y)
    model = AutoClassifier(time_budget=budget, n_jobs=n_jobs, random_state=seed, metric=metric, tracking=False,
                           verbose=0)
    model.fit(X_tr, y_tr, sample_weight=w_tr if mode == "weighted" else None)
    weighted, plain = held_out_scores(model, X_te, y_te, w_te)
    board = model.leaderboard_
    return {"case": case, "mode": mode, "seed": seed, "budget": budget, "metric": model.metric_,
            "n_train": len(y_tr), "n_test": len(y_te), "best_family": board["family"].iloc[0],
            "best_score": model.best_score_, "held_out_weighted": weighted, "held_out_unweighted": plain,
            "n_complete": int((board["state"] == "COMPLETE").sum())}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="+", default=CASES, choices=CASES)
    parser.add_argument("--time-budget", type=float, default=60.0)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--csv", default=None, help="append the rows to this CSV")
    parser.add_argument("--one", nargs=3, metavar=("CASE", "MODE", "SEED"), help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:  # a child process: one fit, its figures as JSON
        case, mode, seed = args.one
        Path(args.out).write_text(json.dumps(run_one(case, mode, args.time_budget, int(seed), args.n_jobs)))
        return
    rows = []
    for seed in args.seeds:
        for case in args.cases:
            for mode in ("plain", "weighted"):
                command = [sys.executable, __file__, "--one", case, mode, str(seed), "--time-budget",
                           str(args.time_budget), "--n-jobs", str(args.n_jobs)]
                row = monitored_row(command, 10 * args.time_budget + 300, f"{case} {mode} seed {seed}")
                rows.extend([row] if row else [])
    save_and_show(rows, args.csv, ["case", "seed", "mode", "metric", "best_score", "held_out_weighted",
                                   "held_out_unweighted", "best_family", "n_complete", "wall", "foreign_cpu"])


if __name__ == "__main__":
    main()
