"""The ``automl`` command: thin argparse over the library.

``automl fit data.csv --target col --time-budget 60 --out DIR`` and ``automl predict DIR new.csv``.
Each subcommand has ``add_parser(subparsers)`` and ``run(args)``; the logic lives in the library.
Exit codes: 0 success, 1 failure (the error is logged to stderr), 2 bad arguments (argparse).
"""

import argparse
import logging
import sys

logger = logging.getLogger("automl")


def _read_table(path):
    import pandas as pd

    if str(path).endswith((".parquet", ".pq")):
        return pd.read_parquet(path)
    return pd.read_csv(path)


def add_fit_parser(subparsers):
    p = subparsers.add_parser("fit", help="search, ensemble and save a model")
    p.add_argument("data", help="CSV or Parquet file with the features and the target")
    p.add_argument("--target", required=True, help="name of the target column")
    p.add_argument("--time-budget", type=float, default=60.0, help="wall seconds for the fit (default 60)")
    p.add_argument("--n-trials", type=int, default=None)
    p.add_argument("--metric", default=None)
    p.add_argument("--cv", type=int, default=5)
    p.add_argument("--n-jobs", type=int, default=1, help="worker processes")
    p.add_argument("--random-state", type=int, default=None)
    p.add_argument("--include", default=None, help="comma-separated model families, e.g. hgb,rf")
    p.add_argument("--storage", default=None, help="Optuna storage URL or journal path")
    p.add_argument("--tracking-uri", default=None)
    p.add_argument("--no-tracking", action="store_true")
    p.add_argument("--out", required=True, help="folder to save the model in")
    p.set_defaults(run=run_fit)


def run_fit(args):
    from .estimator import AutoClassifier
    from .persistence import save

    frame = _read_table(args.data)
    if args.target not in frame.columns:
        raise ValueError(f"Target column {args.target!r} is not in {args.data}; columns: {list(frame.columns)}")
    model = AutoClassifier(
        time_budget=args.time_budget, n_trials=args.n_trials, metric=args.metric, cv=args.cv,
        n_jobs=args.n_jobs, random_state=args.random_state,
        include=args.include.split(",") if args.include else None, storage=args.storage,
        tracking=not args.no_tracking, tracking_uri=args.tracking_uri,
    ).fit(frame.drop(columns=[args.target]), frame[args.target])
    save(model, args.out)
    print(model.leaderboard_.head(10).drop(columns=["params", "note"]).to_string(index=False))
    print(f"best CV {model.metric_}: {model.best_score_:.4f} +/- {model.best_score_std_:.4f} "
          f"(optimistic: best of {len(model.leaderboard_)} trials); saved to {args.out}")


def add_predict_parser(subparsers):
    p = subparsers.add_parser("predict", help="predict with a saved model")
    p.add_argument("model", help="folder written by 'automl fit'")
    p.add_argument("data", help="CSV or Parquet file with the feature columns")
    p.add_argument("--output", default="-", help="CSV file for predictions (default: stdout)")
    p.add_argument("--proba", action="store_true", help="write class probabilities too")
    p.set_defaults(run=run_predict)


def run_predict(args):
    import pandas as pd

    from .persistence import load

    model = load(args.model)
    X = _read_table(args.data)
    out = pd.DataFrame({"prediction": model.predict(X)})
    if args.proba:
        proba = model.predict_proba(X)
        for i, label in enumerate(model.classes_):
            out[f"proba_{label}"] = proba[:, i]
    out.to_csv(sys.stdout if args.output == "-" else args.output, index=False)


def main(argv=None):
    """Run the ``automl`` command line.

    Parameters
    ----------
    argv : list of str or None
        Arguments without the program name; None reads ``sys.argv``.

    Returns
    -------
    code : int
        0 on success, 1 when the command failed (the reason is logged to stderr).
    """
    parser = argparse.ArgumentParser(prog="automl", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(required=True, dest="command")
    add_fit_parser(subparsers)
    add_predict_parser(subparsers)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        args.run(args)
    except Exception as exc:
        logger.error("%s failed: %s: %s", args.command, type(exc).__name__, exc)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
