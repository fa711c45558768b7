"""Nested CV benchmark: the search's own best score against what the fit delivers on rows it never saw.

    python benchmarks/nested.py                      # both parts (about 7 min for "real" alone)
    python benchmarks/nested.py --part noise --seeds 0 1 2
    python benchmarks/nested.py --part real --datasets kc1 --time-budget 30 --json out.json

Part "noise": 200 rows x 20 Gaussian features with random binary labels, nothing to learn (true ROC
AUC 0.5). For each seed, one AutoClassifier(n_trials=30, cv=5, n_jobs=1, random_state=seed) is fit on
all rows, as a user would, and its best trial's mean CV score (``best_score_``) is printed beside the
nested estimate (``nested_cv``, 3 outer folds) of the same configuration. Selection bias predicts the
first above 0.5 on every seed; an honest estimate has a mean over seeds within two standard errors of
0.5.

Part "real": kc1 and phoneme of ../shared/data (MANIFEST.csv there) under ``nested_cv(outer_cv=3)``
with AutoClassifier(time_budget=60, n_jobs=2), the budget of EACH outer fit: per outer fold the
ensemble, the best single trial refit, the search's inner best, the optimism gap and the baselines
(prior, logistic regression, default HistGradientBoosting), then mean +/- std over the folds.

BLAS/OpenMP pools are held to one thread in this process (the search workers already hold theirs to
cores / n_jobs): on a shared 2-core machine, OpenMP threads spinning against another process's load
made a 0.7 s fit take 39 s. Scores do not depend on it.
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from automl import AutoClassifier
from automl.estimators import nested_cv

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
COLUMNS = ["fold", "ensemble", "best_single", "inner_best", "optimism_gap", "dummy", "logreg", "hgb",
           "best_family", "n_trials", "n_complete", "fit_seconds"]


def load(name):
    manifest = pd.read_csv(DATA / "MANIFEST.csv").set_index("name")
    row = manifest.loc[name]
    frame = pd.read_csv(DATA / row["file"])
    return frame.drop(columns=[row["target"]]), frame[row["target"]]


def noise_data(seed, n_samples=200, n_features=20):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(rng.normal(size=(n_samples, n_features))).add_prefix("x")
    return X, pd.Series(rng.integers(0, 2, size=n_samples), name="y")


def run_noise(seeds, n_trials):
    rows = []
    for seed in seeds:
        X, y = noise_data(seed)
        params = dict(time_budget=None, n_trials=n_trials, cv=5, n_jobs=1, tracking=False, verbose=0,
                      random_state=seed)
        started = time.time()
        full = AutoClassifier(**params).fit(X, y)
        report = nested_cv(AutoClassifier(**params), X, y, outer_cv=3, random_state=seed)
        means = report.summary["mean"]
        rows.append({
            "seed": seed, "search_best": full.best_score_, "search_best_std": full.best_score_std_,
            "search_family": full.best_params_.get("model"), "nested_ensemble": means["ensemble"],
            "nested_best_single": means["best_single"], "nested_inner_best": means["inner_best"],
            "nested_gap": means["optimism_gap"], "seconds": time.time() - started,
        })
        print(pd.DataFrame(rows[-1:]).to_string(index=False, float_format="%.4f"), flush=True)
    table = pd.DataFrame(rows)
    print("\n## Pure noise (true ROC AUC 0.5)\n")
    print(table.to_string(index=False, float_format="%.4f"))
    nested = table["nested_ensemble"]
    sem = nested.std(ddof=1) / np.sqrt(len(nested))
    above = int((table["search_best"] > 0.5).sum())
    print(f"\nsearch best > 0.5 on {above} of {len(table)} seeds: {'PASS' if above == len(table) else 'FAIL'}"
          f" (mean {table['search_best'].mean():.4f}, min {table['search_best'].min():.4f})")
    inside = abs(nested.mean() - 0.5) <= 2 * sem
    print(f"nested ensemble mean over seeds {nested.mean():.4f} +/- {sem:.4f} (standard error); "
          f"within 2 SE of 0.5: {'PASS' if inside else 'FAIL'}")
    return {"table": table.to_dict("records"), "nested_mean": nested.mean(), "nested_sem": sem,
            "search_best_above": above}


def run_real(datasets, time_budget, n_jobs, seed):
    results = {}
    for name in datasets:
        X, y = load(name)
        model = AutoClassifier(time_budget=time_budget, n_jobs=n_jobs, tracking=False, verbose=0,
                               random_state=seed)
        started = time.time()
        report = nested_cv(model, X, y, outer_cv=3, random_state=seed)
        wall = time.time() - started
        print(f"\n## {name}: {report.metric}, outer_cv=3, time_budget={time_budget} s per outer fit, "
              f"inner n_jobs={n_jobs}, wall {wall:.0f} s\n")
        print(report.folds[COLUMNS].to_string(index=False, float_format="%.4f"))
        summary = report.summary
        line = {q: f"{summary.loc[q, 'mean']:.4f} +/- {summary.loc[q, 'std']:.4f}" for q in summary.index}
        print("\nmean +/- std over outer folds:")
        print(pd.Series(line).to_string())
        results[name] = {**report.to_dict(), "wall_seconds": wall}
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["noise", "real", "all"], default="all")
    parser.add_argument("--seeds", nargs="+", type=int, default=list(range(10)), help="noise part")
    parser.add_argument("--n-trials", type=int, default=30, help="noise part")
    parser.add_argument("--datasets", nargs="+", default=["kc1", "phoneme"], help="real part")
    parser.add_argument("--time-budget", type=float, default=60.0, help="real part, per outer fit")
    parser.add_argument("--n-jobs", type=int, default=2, help="real part, search workers per fit")
    parser.add_argument("--json", default=None, help="write every figure to this file")
    args = parser.parse_args()
    out = {}
    with threadpool_limits(limits=1):
        if args.part in ("noise", "all"):
            out["noise"] = run_noise(args.seeds, args.n_trials)
        if args.part in ("real", "all"):
            out["real"] = run_real(args.datasets, args.time_budget, args.n_jobs, seed=0)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, default=float))


if __name__ == "__main__":
    main()
