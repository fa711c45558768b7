"""Demo: AutoClassifier on a bundled real dataset, against a default HistGradientBoosting.

Run with ``make demo`` (or ``python examples/demo.py --dataset kc1 --time-budget 60``). Prints the
leaderboard, the ensemble, the held-out ROC AUC of the ensemble beside a default
HistGradientBoostingClassifier fitted on the same split, and where the MLflow runs are.
"""

import argparse
import sys
import time
from pathlib import Path

import pandas as pd
from mlflow.tracking import MlflowClient
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split

from automl import AutoClassifier
from automl.datasets import load_dataset


def default_hgb_auc(X_train, y_train, X_test, y_test, positive):
    # HistGradientBoosting reads pandas categoricals natively: the fair "default" baseline.
    def prepare(X):
        return X.apply(lambda c: c.astype("category") if c.dtype == object or c.dtype == "str" else c)

    categories = {c: prepare(X_train)[c].cat.categories for c in prepare(X_train).select_dtypes("category")}
    X_train, X_test = prepare(X_train), prepare(X_test)
    for column, levels in categories.items():
        X_test[column] = X_test[column].cat.set_categories(levels)
    model = HistGradientBoostingClassifier(random_state=0).fit(X_train, y_train)
    return roc_auc_score(y_test == positive, model.predict_proba(X_test)[:, list(model.classes_).index(positive)])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="credit-g", choices=["credit-g", "kc1"])
    parser.add_argument("--time-budget", type=float, default=60.0)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    X, y = load_dataset(args.dataset)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.25, stratify=y, random_state=args.seed
    )
    print(f"{args.dataset}: {len(X_train)} training rows, {len(X_test)} held-out rows, "
          f"{X.shape[1]} features; budget {args.time_budget:.0f} s on {args.n_jobs} worker(s)")
    started = time.time()
    model = AutoClassifier(time_budget=args.time_budget, n_jobs=args.n_jobs, random_state=args.seed)
    model.fit(X_train, y_train)
    wall = time.time() - started

    board = model.leaderboard_
    print("\nLeaderboard (top 10 of", len(board), "trials):")
    print(board.drop(columns=["params", "note"]).head(10).to_string(index=False, float_format="%.4f"))
    counts = board["state"].value_counts().to_dict()
    stopped = int(board["note"].str.startswith("stopped by the time budget").sum())  # PRUNED too, but not by Hyperband
    print(f"\nTrials: {counts.get('COMPLETE', 0)} complete, {counts.get('PRUNED', 0) - stopped} pruned, "
          f"{stopped} stopped by the budget, {counts.get('FAIL', 0)} failed; fit wall time {wall:.1f} s for a "
          f"{args.time_budget:.0f} s budget")
    members = board[board["weight"] > 0][["trial", "family", "mean", "weight"]]
    print("\nEnsemble (Caruana selection over out-of-fold predictions):")
    print(members.to_string(index=False, float_format="%.4f"))

    positive = model.classes_[1]
    auc = roc_auc_score(y_test == positive, model.predict_proba(X_test)[:, 1])
    baseline = default_hgb_auc(X_train, y_train, X_test, y_test, positive)
    print(f"\nBest single trial CV ROC AUC: {model.best_score_:.4f} +/- {model.best_score_std_:.4f} "
          "(optimistic: the best of many)")
    print(f"Held-out ROC AUC: ensemble {auc:.4f} | default HistGradientBoosting {baseline:.4f}")
    report = model.report(Path("automl_runs") / "demo-report.html")
    print(f"\nReport (open in a browser, no network needed): {report.resolve()}")
    mlflow = Path(sys.executable).with_name("mlflow")
    experiment = MlflowClient(model.mlflow_tracking_uri_).get_run(model.mlflow_run_id_).info.experiment_id
    print(f"\nMLflow parent run {model.mlflow_run_id_}; browse every trial with:\n"
          f"  {mlflow} ui --backend-store-uri {model.mlflow_tracking_uri_}\n"
          f"then open http://127.0.0.1:5000/#/experiments/{experiment}/runs/{model.mlflow_run_id_} "
          "(the README's 'Browsing trials in MLflow' says where to click)")


if __name__ == "__main__":
    pd.set_option("display.width", 160)
    main()
