"""Held-out benchmark: AutoClassifier vs a default HistGradientBoosting on the same 75/25 split.

    python benchmarks/heldout.py --datasets kc1 phoneme credit-g --time-budget 60 --n-jobs 2

For each dataset of ../shared/data (see MANIFEST.csv there) and seed: a stratified 75/25 split, our
fit on the 75% with the given wall-clock budget, scored on the 25%. Prints one row per run: held-out
ROC AUC (binary) or log loss, the baseline's, trials complete / pruned / failed, fit wall time
against the budget, and seconds spent in MLflow logging. ``--csv`` appends the rows to a file.
"""

import argparse
import os
import tempfile
import time
from pathlib import Path

import pandas as pd
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import log_loss, roc_auc_score
from sklearn.model_selection import train_test_split

from automl import AutoClassifier

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def load(name):
    manifest = pd.read_csv(DATA / "MANIFEST.csv").set_index("name")
    row = manifest.loc[name]
    frame = pd.read_csv(DATA / row["file"])
    return frame.drop(columns=[row["target"]]), frame[row["target"]]


def run_grid(datasets, seeds, run):
    """``run(name, seed) -> dict`` for every dataset and seed, each row printed as it comes; the table."""
    rows = []
    for name in datasets:
        for seed in seeds:
            rows.append(run(name, seed))
            print(pd.DataFrame(rows[-1:]).to_string(index=False, float_format="%.4f"), flush=True)
    return pd.DataFrame(rows)


def score(y_true, proba, classes):
    if len(classes) == 2:
        return roc_auc_score(y_true == classes[1], proba[:, 1])
    return log_loss(y_true, proba, labels=classes)


def baseline(X_train, y_train, X_test):
    """Default HistGradientBoosting with pandas categoricals read natively."""
    cats = [c for c in X_train.columns if not pd.api.types.is_numeric_dtype(X_train[c])]
    X_train, X_test = X_train.copy(), X_test.copy()
    for c in cats:
        levels = X_train[c].astype("category").cat.categories
        X_train[c] = pd.Categorical(X_train[c], categories=levels)
        X_test[c] = pd.Categorical(X_test[c], categories=levels)
    model = HistGradientBoostingClassifier(random_state=0).fit(X_train, y_train)
    return model.predict_proba(X_test), model.classes_


def run(name, seed, args):
    X, y = load(name)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, stratify=y, random_state=seed)
    started = time.time()
    model = AutoClassifier(time_budget=args.time_budget, n_jobs=args.n_jobs, random_state=seed,
                           final_fit=args.final_fit, sampler=args.sampler, pruning=not args.no_pruning,
                           verbose=0).fit(X_train, y_train)
    wall = time.time() - started
    base_proba, base_classes = baseline(X_train, y_train, X_test)
    states = model.leaderboard_["state"].value_counts()
    return {
        "dataset": name, "seed": seed, "final_fit": args.final_fit, "sampler": args.sampler,
        "pruning": not args.no_pruning, "metric": model.metric_,
        "ours": score(y_test, model.predict_proba(X_test), model.classes_),
        "best_single_cv": model.best_score_, "best_single_cv_std": model.best_score_std_,
        "default_hgb": score(y_test, base_proba, base_classes),
        "complete": int(states.get("COMPLETE", 0)), "pruned": int(states.get("PRUNED", 0)),
        "failed": int(states.get("FAIL", 0)), "members": int((model.leaderboard_["weight"] > 0).sum()),
        "fit_seconds": wall, "budget": args.time_budget, "ratio": wall / args.time_budget,
        "mlflow_seconds": model.timings_["tracking"], "search_seconds": model.timings_["search"],
        "ensemble_seconds": model.timings_["ensemble"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["kc1", "phoneme", "credit-g"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--time-budget", type=float, default=60.0)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--final-fit", default="refit", choices=["refit", "bag"])
    parser.add_argument("--sampler", default="tpe", choices=["tpe", "random"])
    parser.add_argument("--no-pruning", action="store_true")
    parser.add_argument("--csv", default=None, help="append the rows to this CSV file")
    args = parser.parse_args()
    # MLflow runs of the benchmark go to a throwaway local store, not the user's.
    args.csv = os.path.abspath(args.csv) if args.csv else None
    workdir = tempfile.mkdtemp(prefix="automl-bench-")
    os.environ.setdefault("MLFLOW_TRACKING_URI", f"sqlite:///{workdir}/mlflow.db")
    os.chdir(workdir)
    table = run_grid(args.datasets, args.seeds, lambda name, seed: run(name, seed, args))
    print("\n" + table.to_markdown(index=False, floatfmt=".4f") if _has_tabulate() else table.to_string())
    if args.csv:
        table.to_csv(args.csv, mode="a", header=not Path(args.csv).exists(), index=False)


def _has_tabulate():
    try:
        import tabulate  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    main()
