"""One knob of a portfolio default, A against B, by 5-fold CV of that default alone.

    python benchmarks/defaults_ab.py --family hgb --param l2_regularization --values 1e-8 1 \
        --datasets kc1 credit-g vehicle splice
    python benchmarks/defaults_ab.py --family lgbm --param reg_lambda --values 1e-8 1 \
        --datasets kddcup99 --rows 40000
    python benchmarks/defaults_ab.py --family hgb lgbm catboost rf et ridge xgb knn svr \
        --datasets energy-efficiency-heating abalone kin8nm california-housing

The pipeline is the one the search builds for the family's first portfolio entry
(``automl.space.rebuild``), with only ``--param`` changed; without ``--param``, each family's first
entry as it is (the families side by side, for the portfolio's order). Out-of-fold predictions of all
rows are scored at once: ROC AUC for two classes, log loss for more, RMSE for a regression dataset
(shuffled 5-fold). Use it on the tuning datasets only; defaults are not chosen on the held-out suite.
``--rows`` draws a sample of that many rows (stratified for classes, after dropping the classes of
fewer than 5 rows, so that every fold holds every class).
"""

import argparse
import sys
import time
from pathlib import Path

import pandas as pd
from sklearn.metrics import log_loss, roc_auc_score, root_mean_squared_error
from sklearn.model_selection import KFold, StratifiedKFold, cross_val_predict, train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers.data import load  # noqa: E402

from automl.data import check_training_data  # noqa: E402
from automl.space import portfolio, rebuild, resolve_components  # noqa: E402


def sample(X, y, rows, seed, regression):
    """``rows`` rows (stratified, of the classes with at least 5 rows; all rows when ``rows`` is None)."""
    if not regression:
        counts = y.value_counts()
        keep = y.isin(counts[counts >= 5].index).to_numpy()
        X, y = X[keep], y[keep]
    if rows is None or rows >= len(y):
        return X, y
    X, _, y, _ = train_test_split(X, y, train_size=rows, stratify=None if regression else y, random_state=seed)
    return X, y


def oof_score(pipeline, X, y, classes, folds):
    """``(score, seconds)`` of ``pipeline``'s OOF predictions of all rows."""
    started = time.time()
    if not len(classes):
        pred = cross_val_predict(pipeline, X, y, cv=folds)
        return root_mean_squared_error(y, pred), time.time() - started
    proba = cross_val_predict(pipeline, X, y, cv=folds, method="predict_proba")
    score = roc_auc_score(y, proba[:, 1]) if len(classes) == 2 else log_loss(y, proba, labels=range(len(classes)))
    return score, time.time() - started


def run(name, families, param, values, rows, seed):
    X, y, task = load(name)
    regression = task == "regression"
    X, y = sample(X, y, rows, seed, regression)
    X, y_enc, classes, profile = check_training_data(X, y, n_folds=5, task="regression" if regression
                                                     else "classification")
    folds = (KFold if regression else StratifiedKFold)(5, shuffle=True, random_state=seed)
    result = {"dataset": name, "rows": len(y_enc), "classes": len(classes)}
    offered = {spec.key for spec in resolve_components(profile=profile)}  # by the data's size
    for family in (f for f in families if f in offered):
        specs = resolve_components(include=[family], profile=profile)
        first = next(c for c in portfolio(specs) if c["model"] == family)
        for value in values if param else [None]:
            knob = {f"model.{family}.{param}": value} if param else {}
            pipeline = rebuild({**first, **knob}, profile, specs, random_state=seed)
            label = f"{value:g}" if param else family
            result[f"score@{label}"], result[f"seconds@{label}"] = oof_score(pipeline, X, y_enc, classes, folds)
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", nargs="+", required=True,
                        help="portfolio families: hgb, lgbm, xgb, catboost, ... (one with --param)")
    parser.add_argument("--param", help="the model's knob, as the space names it")
    parser.add_argument("--values", nargs="+", type=float, default=())
    parser.add_argument("--datasets", nargs="+", required=True)
    parser.add_argument("--rows", type=int, default=None, help="a stratified sample of this many rows")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.param and (len(args.family) != 1 or not args.values):
        parser.error("--param takes one --family and its --values")
    rows = []
    for name in args.datasets:
        rows.append(run(name, args.family, args.param, args.values, args.rows, args.seed))
        print(pd.DataFrame(rows[-1:]).to_string(index=False, float_format="%.4f"), flush=True)
    print(pd.DataFrame(rows).to_string(index=False, float_format="%.4f"))


if __name__ == "__main__":
    main()
