"""The leak checks on every classification dataset of ../shared/data: what each one flags, with figures.

    python benchmarks/leak_check.py [--datasets kc1 adult ...] [--csv results/leak_check.csv]
    python benchmarks/leak_check.py --planted      # kc1 with a leak, a row id, 10% copies planted

For each dataset: the data checks (:func:`automl.checks.leakage.check_data_leakage`: target leakage,
identifiers, duplicates) on 5 shared stratified folds, then the model check
(:func:`automl.checks.dominance.check_model_dominance`) on the portfolio's first HistGradientBoosting
configuration over 3 of those folds, no deadline. One line per finding, with its evidence.
Datasets with a class rarer than 5 rows are cut to the classes with at least 5 (said in the line).
"""

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import StratifiedKFold

from automl.checks import check_data_leakage, check_model_dominance
from automl.data import check_training_data
from automl.space import portfolio, rebuild, resolve_components

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def classification_datasets():
    manifest = pd.read_csv(DATA / "MANIFEST.csv")
    return manifest[manifest["task"].isin(["binary", "multiclass"])].set_index("name")


def load(row):
    frame = pd.read_csv(DATA / row["file"])
    X, y = frame.drop(columns=[row["target"]]), frame[row["target"]]
    counts = y.value_counts()
    keep = y.isin(counts[counts >= 5].index)
    note = "" if keep.all() else f"; {int((~keep).sum())} rows of classes under 5 rows left out"
    return X[keep].reset_index(drop=True), y[keep].reset_index(drop=True), note


def check(name, row):
    X, y, note = load(row)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        X_clean, y_enc, _, profile = check_training_data(X, y, n_folds=5)
    folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X_clean, y_enc))
    started = time.time()
    data_report = check_data_leakage(X_clean, y_enc, profile, folds, random_state=0)
    data_seconds = time.time() - started
    specs = resolve_components(include=["hgb"])
    pipeline = rebuild(portfolio(specs)[0], profile, specs, random_state=0)
    metric = "roc_auc" if profile.n_classes == 2 else "log_loss"
    started = time.time()
    model_report = check_model_dominance(pipeline, X_clean, y_enc, folds, metric=metric, random_state=0)
    model_seconds = time.time() - started
    rows = []
    for finding in (data_report + model_report).findings:
        rows.append({"dataset": name, "column": finding.column, "kind": finding.kind,
                     "severity": finding.severity, "evidence": finding.evidence, "message": finding.message})
    print(f"{name}: {len(X)} rows{note}; data checks {data_seconds:.1f} s, model check {model_seconds:.1f} s, "
          f"{len(rows)} finding(s)", flush=True)
    for r in rows:
        print(f"  [{r['severity']}] {r['kind']} {r['column']}: {r['message']}", flush=True)
    return rows


def planted():
    """The issue's acceptance cases: kc1 plus a post-outcome count, plus a row id, with 10% of rows copied."""
    row = classification_datasets().loc["kc1"]
    X, y, _ = load(row)
    defective = (y.astype(str).str.lower() == "true").to_numpy()
    copies = np.random.default_rng(1).choice(len(X), size=len(X) // 10, replace=False)
    rate = np.where(defective, 2.0, 0.3)
    cases = {
        f"bugs reported after release (Poisson 2.0 / 0.3, draw {seed})":
            (X.assign(bugs_reported_after_release=np.random.default_rng(seed).poisson(rate)), y)
        for seed in range(8)
    }
    cases.update({
        "row id": (X.assign(row_id=np.arange(len(X))), y),
        "10% of rows duplicated": (pd.concat([X, X.iloc[copies]], ignore_index=True),
                                   pd.concat([y, y.iloc[copies]], ignore_index=True)),
    })
    for name, (Xc, yc) in cases.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            X_clean, y_enc, _, profile = check_training_data(Xc, yc, n_folds=5)
        folds = list(StratifiedKFold(5, shuffle=True, random_state=0).split(X_clean, y_enc))
        print(f"kc1 + {name}: {len(Xc)} rows")
        for f in check_data_leakage(X_clean, y_enc, profile, folds, random_state=0).findings:
            if f.kind != "duplicates" or "duplicated" in name:  # kc1's own copies: listed once, below
                print(f"  [{f.severity}] {f.kind} {f.column}: {f.evidence}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="*", default=None)
    parser.add_argument("--csv", default=None)
    parser.add_argument("--planted", action="store_true", help="only the planted kc1 cases")
    args = parser.parse_args()
    if args.planted:
        return planted()
    manifest = classification_datasets()
    names = args.datasets or list(manifest.index)
    rows = [r for name in names for r in check(name, manifest.loc[name])]
    if args.csv:
        pd.DataFrame(rows).to_csv(args.csv, index=False)


if __name__ == "__main__":
    np.set_printoptions(precision=4)
    main()
