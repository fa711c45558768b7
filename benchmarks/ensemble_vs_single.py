"""Ensemble vs best single trial, paired on the same search: does ensemble selection pay held-out?

    python benchmarks/ensemble_vs_single.py --datasets segment car glass --seeds 0 --time-budget 60

Per dataset and seed: one AutoClassifier search on a stratified 75% split (the split of
``compare.py``); its ensemble, and its best complete trial refit on the same training rows, are both
scored on the 25%. One search gives both answers, so the difference is the ensemble's alone, not the
run-to-run noise of two searches (``ours`` against ``ours-single`` in ``compare.py`` mixes the two).
Prints held-out ROC AUC (binary, higher is better) or log loss (multiclass, lower is better), and
wins / ties / losses of the ensemble with a tie under 0.002.
"""

import argparse
import warnings

from heldout import load, run_grid, score
from sklearn.model_selection import train_test_split

from automl import AutoClassifier
from automl.data import check_prediction_data, check_training_data, widen_proba
from automl.space import rebuild

TIE = 0.002


def run(name, seed, budget, n_jobs):
    X, y = load(name)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, stratify=y, random_state=seed)
    model = AutoClassifier(time_budget=budget, n_jobs=n_jobs, random_state=seed, tracking=False,
                           verbose=0).fit(X_train, y_train)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fit has warned about the same repairs
        X_clean, y_enc, _, profile = check_training_data(X_train, y_train, n_folds=5)
    single = rebuild(model.best_params_, model.profile_, model.components_, model.random_state_)
    single.fit(X_clean, y_enc)
    proba_single = widen_proba(single.predict_proba(check_prediction_data(X_test, profile)), model.class_counts_)
    return {
        "dataset": name, "seed": seed, "metric": "roc_auc" if len(model.classes_) == 2 else "log_loss",
        "members": len(model.ensemble_.estimators_), "best_family": model.best_params_["model"],
        "ensemble": score(y_test, model.predict_proba(X_test), model.classes_),
        "best_single": score(y_test, proba_single, model.classes_),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", required=True)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--time-budget", type=float, default=60.0)
    parser.add_argument("--n-jobs", type=int, default=2)
    parser.add_argument("--csv", default=None, help="also write the table here")
    args = parser.parse_args()
    table = run_grid(args.datasets, args.seeds, lambda name, seed: run(name, seed, args.time_budget, args.n_jobs))
    sign = table["metric"].map({"roc_auc": 1.0, "log_loss": -1.0})
    gain = sign * (table["ensemble"] - table["best_single"])
    table["outcome"] = ["tie" if abs(g) < TIE else "win" if g > 0 else "loss" for g in gain]
    print(table.to_string(index=False, float_format="%.4f"))
    counts = table["outcome"].value_counts()
    print(f"\nensemble vs best single: {counts.get('win', 0)} wins, {counts.get('tie', 0)} ties, "
          f"{counts.get('loss', 0)} losses of {len(table)} (tie: under {TIE})")
    if args.csv:
        table.to_csv(args.csv, index=False)


if __name__ == "__main__":
    main()
