"""One knob of a portfolio default, A against B, by 5-fold stratified CV of that default alone.

    python benchmarks/defaults_ab.py --family hgb --param l2_regularization --values 1e-8 1 \
        --datasets kc1 credit-g vehicle splice
    python benchmarks/defaults_ab.py --family lgbm --param reg_lambda --values 1e-8 1 \
        --datasets kddcup99 --rows 40000

The pipeline is the one the search builds for the family's first portfolio entry
(``automl.space.rebuild``), with only ``--param`` changed. Out-of-fold predictions of all rows are scored
at once: ROC AUC for two classes, log loss for more. Use it on the tuning datasets only; defaults are
not chosen on the held-out suite. ``--rows`` draws a stratified sample of that many rows after dropping
the classes of fewer than 5 rows (so that every fold holds every class).
"""

import argparse
import sys
import time
from pathlib import Path

import pandas as pd
from sklearn.metrics import log_loss, roc_auc_score
from sklearn.model_selection import StratifiedKFold, cross_val_predict, train_test_split

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peers.data import load  # noqa: E402

from automl.data import check_training_data  # noqa: E402
from automl.space import portfolio, rebuild, resolve_components  # noqa: E402


def sample(X, y, rows, seed):
    """``rows`` stratified rows of the classes with at least 5 rows (all rows when ``rows`` is None)."""
    counts = y.value_counts()
    keep = y.isin(counts[counts >= 5].index).to_numpy()
    X, y = X[keep], y[keep]
    if rows is None or rows >= len(y):
        return X, y
    X, _, y, _ = train_test_split(X, y, train_size=rows, stratify=y, random_state=seed)
    return X, y


def run(name, family, param, values, rows, seed):
    X, y, _ = load(name)
    X, y = sample(X, y, rows, seed)
    X, y_enc, classes, profile = check_training_data(X, y, n_folds=5)
    specs = resolve_components(include=[family], profile=profile)
    first = next(c for c in portfolio(specs) if c["model"] == family)
    folds = StratifiedKFold(5, shuffle=True, random_state=seed)
    result = {"dataset": name, "rows": len(y_enc), "classes": len(classes)}
    for value in values:
        pipeline = rebuild({**first, f"model.{family}.{param}": value}, profile, specs, random_state=seed)
        started = time.time()
        proba = cross_val_predict(pipeline, X, y_enc, cv=folds, method="predict_proba")
        result[f"seconds@{value:g}"] = time.time() - started
        result[f"score@{value:g}"] = (roc_auc_score(y_enc, proba[:, 1]) if len(classes) == 2
                                      else log_loss(y_enc, proba, labels=range(len(classes))))
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", required=True, help="a portfolio family: hgb, lgbm, xgb, catboost, ...")
    parser.add_argument("--param", required=True, help="the model's knob, as the space names it")
    parser.add_argument("--values", nargs="+", type=float, required=True)
    parser.add_argument("--datasets", nargs="+", required=True)
    parser.add_argument("--rows", type=int, default=None, help="a stratified sample of this many rows")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rows = []
    for name in args.datasets:
        rows.append(run(name, args.family, args.param, args.values, args.rows, args.seed))
        print(pd.DataFrame(rows[-1:]).to_string(index=False, float_format="%.4f"), flush=True)
    print(pd.DataFrame(rows).to_string(index=False, float_format="%.4f"))


if __name__ == "__main__":
    main()
