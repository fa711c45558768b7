"""Grouped and time-ordered rows (issue 27): the search's own score with shuffled folds and with grouped or
time-ordered folds, against the score on groups it never saw or on the future.

    .venv/bin/python benchmarks/grouped.py --csv benchmarks/results/grouped.csv          # every case, 60 s
    .venv/bin/python benchmarks/grouped.py --cases copies:diabetes --modes grouped --time-budget 30

Three kinds of case. The first two are fit twice, ``fit(X, y)`` (mode "shuffled") and ``fit(X, y, groups=...)``
("grouped"):

- ``copies:NAME``: a real dataset of ../shared/data made grouped: each row becomes ``COPIES`` copies with
  Gaussian noise of ``NOISE`` standard deviations on every numeric column (categoricals copied as they are),
  each original row a group (a patient seen several times). 25% of the groups are held out (seeded
  ``GroupShuffleSplit``); the fit sees the rest.
- ``beijing-air``: ../shared/data/large/beijing-air.csv.gz, hourly PM2.5 of 12 stations (a real table of
  repeated entities); the station is the group, three stations (seeded) are held out, and the fit sees the
  other nine (its features: the weather, the other pollutants and the time of day and year; ``station`` and
  the row counter ``No`` are not features). Rows whose PM2.5 is missing are dropped.

The third, ``beijing-air-future``, is fit with shuffled folds ("shuffled") and in time order ("time":
``cv="time", time_column="time"``, the hour of each row as a datetime, which is also a feature in both modes) on
every station's first three years (2013-03 to 2016-02), and scored on the last year.

Each fit runs in its own process (``peers/monitor.py``: wall, peak RSS, foreign load). Printed and written
per case and mode: the search's best score (``best_score_``, its spread over folds), the ensemble's score on
the rows it was selected on (``ensemble_score_``), and the score of the fitted model on the held-out groups.
Scores are ROC AUC (binary) or RMSE (regression).
"""

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers.monitor import monitored_row, save_and_show  # noqa: E402

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
COPIES = 4
NOISE = 0.05
HELD_OUT_SHARE = 0.25
CASES = ["copies:diabetes", "copies:qsar-biodeg", "copies:kc1", "copies:wine-quality-red", "beijing-air",
         "beijing-air-future"]
FUTURE = "2016-03-01"  # beijing-air-future: the held-out year starts here


def copied(name, seed):
    """``(X, y, groups, task)`` of dataset ``name`` as COPIES noisy copies of each row."""
    manifest = pd.read_csv(DATA / "MANIFEST.csv").set_index("name")
    row = manifest.loc[name]
    frame = pd.read_csv(DATA / row["file"])
    X, y = frame.drop(columns=[row["target"]]), frame[row["target"]]
    rng = np.random.default_rng(seed)
    numeric = X.select_dtypes("number").columns
    parts = []
    for _ in range(COPIES):
        part = X.copy()
        noise = rng.normal(scale=NOISE, size=(len(X), len(numeric))) * X[numeric].std().to_numpy()
        part[numeric] = X[numeric] + noise
        parts.append(part)
    task = "regression" if row["task"] == "regression" else "classification"
    return (pd.concat(parts, ignore_index=True), pd.concat([y] * COPIES, ignore_index=True),
            np.tile(np.arange(len(X)), COPIES), task)


def beijing(seed):
    frame = pd.read_csv(DATA / "large" / "beijing-air.csv.gz").dropna(subset=["PM2.5"]).reset_index(drop=True)
    return frame.drop(columns=["PM2.5", "station", "No"]), frame["PM2.5"], frame["station"].to_numpy(), "regression"


def beijing_future(seed):
    """beijing-air with a datetime column ``time``; its groups are the held-out rows' marks (the last year)."""
    X, y, _, task = beijing(seed)
    X = X.assign(time=pd.to_datetime(X[["year", "month", "day", "hour"]]))
    return X, y, (X["time"] >= FUTURE).to_numpy(), task


def held_out(groups, seed):
    """The rows of a seeded HELD_OUT_SHARE of the groups (at least one group)."""
    labels = np.unique(groups)
    n_test = max(1, round(HELD_OUT_SHARE * len(labels)))
    test = np.random.default_rng(seed).permutation(labels)[:n_test]
    return np.isin(groups, test)


def score(task, y_true, model, X):
    from sklearn.metrics import mean_squared_error, roc_auc_score

    if task == "regression":
        return float(np.sqrt(mean_squared_error(y_true, model.predict(X))))
    proba = model.predict_proba(X)
    return float(roc_auc_score(y_true == model.classes_[1], proba[:, 1]))


def run_one(case, mode, budget, seed, n_jobs):
    """One fit, in this process: a dict of the figures."""
    from automl import AutoClassifier, AutoRegressor

    if case == "beijing-air-future":
        X, y, test, task = beijing_future(seed)
        groups = test.astype(int)
    else:
        X, y, groups, task = beijing(seed) if case == "beijing-air" else copied(case.split(":", 1)[1], seed)
        test = held_out(groups, seed)
    kind = AutoRegressor if task == "regression" else AutoClassifier
    order = dict(cv="time", time_column="time") if mode == "time" else {}
    model = kind(time_budget=budget, n_jobs=n_jobs, random_state=seed, tracking=False, verbose=0, **order)
    model.fit(X[~test], y[~test], groups=groups[~test] if mode == "grouped" else None)
    board = model.leaderboard_
    return {
        "case": case, "mode": mode, "seed": seed, "budget": budget, "metric": model.metric_,
        "validation": model.validation_, "n_train": int((~test).sum()), "n_test": int(test.sum()),
        "n_groups_train": int(len(np.unique(groups[~test]))), "best_family": board["family"].iloc[0],
        "best_score": model.best_score_, "best_score_std": model.best_score_std_,
        "ensemble_score": model.ensemble_score_, "held_out_score": score(task, y[test], model, X[test]),
        "n_complete": int((board["state"] == "COMPLETE").sum()),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", nargs="+", default=CASES)
    parser.add_argument("--modes", nargs="+", default=None, choices=["shuffled", "grouped", "time"],
                        help="default: shuffled and grouped, or shuffled and time for beijing-air-future")
    parser.add_argument("--time-budget", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--csv", default=None, help="append the rows to this CSV")
    parser.add_argument("--one", nargs=2, metavar=("CASE", "MODE"), help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:  # a child process: one fit, its figures as JSON
        Path(args.out).write_text(json.dumps(run_one(*args.one, args.time_budget, args.seed, args.n_jobs)))
        return
    rows = []
    for case in args.cases:
        for mode in args.modes or (["shuffled", "time"] if case == "beijing-air-future" else ["shuffled", "grouped"]):
            command = [sys.executable, __file__, "--one", case, mode, "--time-budget", str(args.time_budget),
                       "--seed", str(args.seed), "--n-jobs", str(args.n_jobs)]
            row = monitored_row(command, 10 * args.time_budget + 300, f"{case} {mode}")
            rows.extend([row] if row else [])
    save_and_show(rows, args.csv, ["case", "mode", "metric", "best_score", "best_score_std", "ensemble_score",
                                   "held_out_score", "best_family", "n_complete", "wall", "foreign_cpu"])


if __name__ == "__main__":
    main()
