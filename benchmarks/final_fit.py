"""Refit vs bagged fold models, paired on the same search: which final fit to make the default.

    python benchmarks/final_fit.py --datasets kc1 phoneme credit-g --seeds 0 1 2 --time-budget 60

Per dataset and seed: one AutoClassifier search (``final_fit="refit"``) on a stratified 75% split;
then the same members and weights are fit the other way (``"bag"``: one model per shared fold,
averaged) and both are scored on the 25%. Pairing removes the search's own run-to-run noise. Prints
held-out ROC AUC (binary) or log loss of each, and the seconds each final fit took.
"""

import argparse
import time

from heldout import load, run_grid, score
from sklearn.base import clone
from sklearn.model_selection import StratifiedKFold, train_test_split

from automl import AutoClassifier
from automl.data import check_prediction_data, check_training_data


def run(name, seed, budget, n_jobs):
    X, y = load(name)
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, stratify=y, random_state=seed)
    model = AutoClassifier(time_budget=budget, n_jobs=n_jobs, random_state=seed, tracking=False,
                           verbose=0).fit(X_train, y_train)
    X_clean, y_enc, _, _ = check_training_data(X_train, y_train, n_folds=5)
    # The estimator's own folds: StratifiedKFold(5, shuffle=True, random_state=seed) on the same rows.
    folds = list(StratifiedKFold(5, shuffle=True, random_state=seed).split(X_clean, y_enc))
    started = time.time()
    bag = clone(model.ensemble_).set_params(final_fit="bag", cv=folds).fit(X_clean, y_enc)
    bag_seconds = time.time() - started
    X_new = check_prediction_data(X_test, model.profile_)
    return {
        "dataset": name, "seed": seed, "members": len(model.ensemble_.estimators_),
        "refit": score(y_test, model.predict_proba(X_test), model.classes_),
        "bag": score(y_test, bag.predict_proba(X_new), model.classes_),
        "refit_seconds": model.timings_["ensemble"], "bag_fit_seconds": bag_seconds,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["kc1", "phoneme", "credit-g"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--time-budget", type=float, default=60.0)
    parser.add_argument("--n-jobs", type=int, default=2)
    args = parser.parse_args()
    table = run_grid(args.datasets, args.seeds, lambda name, seed: run(name, seed, args.time_budget, args.n_jobs))
    print(table.to_string(index=False, float_format="%.4f"))
    print("\nmean by dataset:\n", table.groupby("dataset")[["refit", "bag"]].mean().to_string(float_format="%.4f"))
    print(f"\nbag better on {(table['bag'] > table['refit']).sum()} of {len(table)} runs")


if __name__ == "__main__":
    main()
