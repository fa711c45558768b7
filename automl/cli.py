"""The ``automl`` command: thin argparse over the library.

``automl fit data.csv --target col --time-budget 60 --out DIR`` (``--task regression`` for a numeric
target; inferred when left out), ``automl predict DIR new.csv``,
``automl evaluate data.csv --target col --outer-cv 3`` (nested CV), ``automl report RUN_ID``, ``automl retrain``
and ``automl worker --storage URL --study NAME --data data.csv`` (joins a fit's search from another process
or machine).
Each subcommand has ``add_parser(subparsers)`` and ``run(args)``; the logic lives in the library.
Exit codes: 0 success, 1 failure (the error is logged to stderr), 2 bad arguments (argparse), 130 interrupted
(Ctrl-C; SIGTERM for `worker`).
"""

import argparse
import logging
import sys
from pathlib import Path

logger = logging.getLogger("automl")


def _read_table(path):
    import pandas as pd

    if str(path).endswith((".parquet", ".pq")):
        return pd.read_parquet(path)
    return pd.read_csv(path)


def _add_search_arguments(p):
    """The data and the estimator's settings, shared by fit and evaluate."""
    from .data import MAX_CLASSES

    p.add_argument("data", help="CSV or Parquet file with the features and the target")
    p.add_argument("--target", required=True, help="name of the target column")
    p.add_argument("--groups", default=None, metavar="COLUMN",
                   help="column of group labels (a patient, a customer): every fold keeps each group whole; "
                        "the column is not a feature")
    p.add_argument("--weight", default=None, metavar="COLUMN",
                   help="column of row weights (a survey weight, an exposure): every model's fit and every score "
                        "weigh the rows by it; the column is not a feature")
    p.add_argument("--task", choices=["auto", "classification", "regression"], default="auto",
                   help=f"default auto: regression for a numeric target with more than {MAX_CLASSES} distinct "
                        "values, else classification (a message says which)")
    p.add_argument("--time-budget", type=_budget, default=60.0,
                   help="wall seconds per fit (default 60); 'none' for no clock (then give --n-trials)")
    p.add_argument("--n-trials", type=int, default=None)
    p.add_argument("--metric", default=None)
    p.add_argument("--cv", type=_cv, default=None,
                   help="folds (default 5), or 'time' for folds in time order (the default with --time-column)")
    p.add_argument("--time-column", default=None, metavar="COLUMN",
                   help="numeric or datetime column that orders the rows in time: folds train on the past and "
                        "validate the future (it stays a feature)")
    p.add_argument("--validation", choices=["auto", "cv", "holdout"], default="auto",
                   help="default auto: a holdout (rows as Hyperband's resource) from 100,000 rows or 10 million "
                        "cells, or from 20,000 rows and 1.5 million cells (more past 600 s of budget); else --cv folds")
    p.add_argument("--n-jobs", type=int, default=1, help="worker processes of each search (-1: all cores)")
    p.add_argument("--random-state", type=int, default=None)
    p.add_argument("--include", default=None, help="comma-separated model families, e.g. hgb,rf")
    p.add_argument("--tracking-uri", default=None)
    p.add_argument("--no-tracking", action="store_true")


def _cv(text):
    """A number of folds, or 'time'."""
    return "time" if text.strip().lower() == "time" else int(text)


def _budget(text):
    """A number of seconds, or 'none' for no time budget."""
    return None if text.strip().lower() == "none" else float(text)


def _estimator(args, y, **extra):
    from .data import infer_task
    from .estimators import AutoClassifier, AutoRegressor

    task = infer_task(y, args.target) if args.task == "auto" else args.task
    kind = AutoRegressor if task == "regression" else AutoClassifier
    return kind(
        time_budget=args.time_budget, n_trials=args.n_trials, metric=args.metric,
        cv=args.cv if args.cv is not None else ("time" if args.time_column else 5),
        time_column=args.time_column, validation=args.validation, n_jobs=args.n_jobs, random_state=args.random_state,
        include=args.include.split(",") if args.include else None,
        tracking=not args.no_tracking, tracking_uri=args.tracking_uri, **extra,
    )


def _read_training(args):
    """The features, the target, the groups and the weights (None without --groups, --weight) of --data."""
    frame = _read_table(args.data)
    if args.target not in frame.columns:
        raise ValueError(f"Target column {args.target!r} is not in {args.data}; columns: {list(frame.columns)}")
    named = [args.target]
    for option in ("groups", "weight", "time_column"):
        column = getattr(args, option, None)
        if column is not None and (column not in frame.columns or column in named):
            raise ValueError(f"--{option.replace('_', '-')} {column!r} must name a column of {args.data} other than "
                             f"the target{', the groups and the weights' if len(named) > 1 else ''}; "
                             f"columns: {list(frame.columns)}")
        named.append(column)
    _, groups, weight, time_column = named
    if time_column is not None:
        frame[time_column] = _as_datetimes(frame[time_column], time_column)  # a CSV holds dates as text
    return (frame.drop(columns=[c for c in (args.target, groups, weight) if c is not None]), frame[args.target],
            None if groups is None else frame[groups], None if weight is None else frame[weight])


def _as_datetimes(values, name):
    """Text parsed as datetimes; numbers and datetimes as they are."""
    import pandas as pd

    if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_datetime64_any_dtype(values):
        return values
    try:
        return pd.to_datetime(values, format="mixed")
    except (ValueError, TypeError) as exc:
        raise ValueError(f"--time-column {name!r} holds text that is not a date or time ({exc}): give a column of "
                         "dates, times or numbers in time order.") from exc


def add_fit_parser(subparsers):
    p = subparsers.add_parser("fit", help="search, ensemble and save a model")
    _add_search_arguments(p)
    p.add_argument("--storage", default=None,
                   help="Optuna storage URL (postgresql://..., sqlite:///...) or journal path; workers started "
                        "with 'automl worker' on the same storage and --study join the search")
    p.add_argument("--study", default=None, help="study name in --storage (default: automl)")
    p.add_argument("--oof-dir", default=None,
                   help="folder for the trials' OOF predictions; on a shared file system for workers of other "
                        "machines (default: a temporary folder, seen by workers of this machine)")
    p.add_argument("--out", required=True, help="folder to save the model in (an MLflow model)")
    p.add_argument("--overwrite", action="store_true", help="replace a model already in --out")
    p.add_argument("--report", default=None, help="also write the HTML report (and its JSON) here")
    p.set_defaults(run=run_fit)


def run_fit(args):
    from .tracking import refuse_non_empty

    out = Path(args.out)
    refuse_non_empty(out, args.overwrite)  # before the search, not after it
    X, y, groups, weights = _read_training(args)
    model = _estimator(args, y, storage=args.storage, study_name=args.study, oof_dir=args.oof_dir).fit(
        X, y, groups, sample_weight=weights)
    model.save(out, overwrite=args.overwrite)
    print(model.leaderboard_.head(10).drop(columns=["params", "note"]).to_string(index=False))
    if model.best_params_:
        on, spread = "CV", f" +/- {model.best_score_std_:.4f}"
        if model.validation_ == "holdout":  # one score per trial: no spread
            on, spread = "holdout", ""
        print(f"best {on} {model.metric_}{' (weighted)' if model.weighted_ else ''}: {model.best_score_:.4f}{spread} "
              f"(optimistic: best of {len(model.leaderboard_)} trials); saved to {args.out}")
    else:
        print(f"no trial finished in the budget: saved the fallback model to {args.out}; raise --time-budget")
    if args.report:
        print(f"report: {model.report(args.report)}")


def add_predict_parser(subparsers):
    p = subparsers.add_parser("predict", help="predict with a saved model")
    p.add_argument("model", help="folder written by 'automl fit'")
    p.add_argument("data", help="CSV or Parquet file with the feature columns")
    p.add_argument("--output", default="-", help="CSV file for predictions (default: stdout)")
    p.add_argument("--proba", action="store_true", help="write class probabilities too (classifiers)")
    p.set_defaults(run=run_predict)


def run_predict(args):
    import pandas as pd

    from .tracking import load

    model = load(args.model)
    if args.proba and not hasattr(model, "predict_proba"):
        raise ValueError(f"--proba: the model in {args.model} is an {type(model).__name__}, which predicts "
                         "values, not class probabilities; leave --proba out.")
    X = _read_table(args.data)
    out = pd.DataFrame({"prediction": model.predict(X)})
    if args.proba:
        proba = model.predict_proba(X)
        for i, label in enumerate(model.classes_):
            out[f"proba_{label}"] = proba[:, i]
    out.to_csv(sys.stdout if args.output == "-" else args.output, index=False)


def add_evaluate_parser(subparsers):
    p = subparsers.add_parser(
        "evaluate", help="nested CV: the whole fit inside outer folds, scored on rows it never saw")
    _add_search_arguments(p)
    p.add_argument("--outer-cv", type=int, default=3, help="outer folds (default 3)")
    p.add_argument("--outer-jobs", type=int, default=1, help="outer folds fitted at once (default 1)")
    p.add_argument("--json", default=None, help="write the nested-CV report as JSON here")
    p.add_argument("--report", default=None,
                   help="then fit on all rows and write the HTML report, nested-CV table included, here")
    p.set_defaults(run=run_evaluate)


def run_evaluate(args):
    import json

    import numpy as np

    from .estimators import nested_cv

    if args.json:  # made now, so that a bad path fails before the compute, not after it
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    X, y, groups, weights = _read_training(args)
    estimator = _estimator(args, y, verbose=0)
    report = nested_cv(estimator, X, y, outer_cv=args.outer_cv, n_jobs=args.outer_jobs,
                       random_state=args.random_state, groups=groups, sample_weight=weights)
    print(report.folds.drop(columns=["mlflow_run_id"]).to_string(index=False, float_format="%.4f"))
    print(report.summary.to_string(float_format="%.4f"))
    ensemble, inner = report.summary.loc["ensemble"], report.summary.loc["inner_best"]
    claim = "no trial finished in any outer fold" if np.isnan(inner["mean"]) else (
        f"{inner['mean']:.4f} (its inner CV score, optimistic on average: see optimism_gap per fold)")
    run = f"; MLflow run {report.mlflow_run_id}" if report.mlflow_run_id else ""
    weighted = " (weighted)" if weights is not None else ""
    print(f"nested CV {report.metric}{weighted}: {ensemble['mean']:.4f} +/- {ensemble['sem']:.4f} (standard error) "
          f"vs the search's own best {claim}{run}")
    if (report.folds["n_complete"] == 0).any():
        logger.warning("In %d outer fold(s) no trial finished: there the model was the fallback (logistic or "
                       "ridge regression). Raise --time-budget.", int((report.folds["n_complete"] == 0).sum()))
    if args.json:
        Path(args.json).write_text(json.dumps(report.to_dict(), indent=1))
    if args.report:
        model = estimator.set_params(verbose=1).fit(X, y, groups, sample_weight=weights)
        print(f"report: {model.report(args.report, nested_cv=report)}")


def add_worker_parser(subparsers):
    p = subparsers.add_parser(
        "worker", help="join a running search (started by 'automl fit --storage URL --study NAME') and run trials",
        description="Waits for the fit to publish its search, checks that --data is the fit's data, then runs "
                    "trials of the shared study until the search's deadline or trial cap, --time-budget, or the "
                    "fit closing the search. Its trials reach the fit's ensemble and MLflow parent run.")
    p.add_argument("--storage", required=True, help="the fit's Optuna storage URL (or journal path)")
    p.add_argument("--study", required=True, help="the fit's study name")
    p.add_argument("--data", required=True, help="the CSV or Parquet file the fit was given")
    p.add_argument("--target", default=None, help="target column (default: the one the fit published)")
    p.add_argument("--groups", default=None, metavar="COLUMN", help="the fit's --groups column, if it had one")
    p.add_argument("--weight", default=None, metavar="COLUMN", help="the fit's --weight column, if it had one")
    p.add_argument("--time-budget", type=_budget, default=None,
                   help="wall seconds this worker works at most (default: until the search ends)")
    p.add_argument("--n-jobs", type=_n_jobs, default=1,
                   help="worker processes on this machine (-1: all cores, -2: all but one)")
    p.add_argument("--oof-dir", default=None,
                   help="the fit's --oof-dir as this machine mounts it, if at another path (default: the fit's path)")
    p.add_argument("--tracking-uri", default=None, help="MLflow URI for trial runs (default: the fit's)")
    p.add_argument("--wait", type=float, default=300.0, help="seconds to wait for the fit (default 300)")
    p.set_defaults(run=run_worker)


def run_worker(args):
    import signal

    from .search import SharedSearch, open_storage
    from .search import run_worker as join_search

    # systemd, docker and kill stop with SIGTERM: stop our processes and mark our trials as Ctrl-C does.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    if not Path(args.data).is_file():
        raise FileNotFoundError(f"--data {args.data}: no such file")
    local = _local_storage_file(args.storage)
    if local is not None and not local.exists():
        raise FileNotFoundError(f"--storage {args.storage}: no such file on this machine; a worker joins the "
                                "fit's storage, it does not make one (check the path, or start the fit first)")
    storage = open_storage(args.storage, workdir=None)
    shared = SharedSearch.wait_for(storage, args.study, args.wait)
    target = args.target or shared.target
    args.time_column = shared.params.get("time_column")  # parsed from text as the fit's CLI parsed it
    if target is None:
        raise ValueError(f"The fit of study {args.study!r} did not name its target column: pass --target.")
    args.target = target
    X, y, groups, weights = _read_training(args)
    result = join_search(X, y, storage=storage, study_name=args.study, time_budget=args.time_budget,
                         n_jobs=args.n_jobs, oof_dir=args.oof_dir, tracking_uri=args.tracking_uri, wait=args.wait,
                         groups=groups, sample_weight=weights)
    print(result.line())
    return 1 if result.died else 0


def _n_jobs(text):
    value = int(text)
    if value == 0:
        raise argparse.ArgumentTypeError("must not be 0 (-1: all cores, -2: all but one)")
    return value


def _local_storage_file(storage):
    """The file behind a journal path or a sqlite:/// URL, else None."""
    if "://" not in storage:
        return Path(storage)
    if storage.startswith("sqlite:///"):
        return Path(storage[len("sqlite:///"):])
    return None


def add_report_parser(subparsers):
    p = subparsers.add_parser("report", help="write the HTML report of a tracked fit from its MLflow run")
    p.add_argument("run_id", help="the fit's MLflow parent run id (mlflow_run_id_)")
    p.add_argument("--tracking-uri", default=None, help="default: MLFLOW_TRACKING_URI or ./mlflow.db")
    p.add_argument("--out", default=None, help="HTML file to write (default: report-<run id>.html)")
    p.set_defaults(run=run_report)


def run_report(args):
    from .report import write_report
    from .tracking import read_run_json

    data = read_run_json(args.tracking_uri, args.run_id, "report/report.json")
    html_path, json_path = write_report(data, args.out or f"report-{args.run_id}.html")
    print(f"report: {html_path} (data: {json_path})")


def add_retrain_parser(subparsers):
    p = subparsers.add_parser(
        "retrain", help="fit a challenger on the newest data; promote it in the MLflow registry if it wins",
        description="Exit codes: 0 promoted, 99 kept (the champion stays), 1 failed, 75 busy (another job "
                    "runs). One line on stdout; the JSON summary goes to [job] summary.")
    p.add_argument("--config", required=True, help="the job's TOML file (see docs/retraining.md)")
    p.set_defaults(run=run_retrain)


def run_retrain(args):
    from .retraining import read_config, run_job

    summary = run_job(read_config(args.config))
    print(summary.line())
    return summary.exit_code


def main(argv=None):
    """Run the ``automl`` command line.

    Parameters
    ----------
    argv : list of str or None
        Arguments without the program name; None reads ``sys.argv``.

    Returns
    -------
    code : int
        0 on success, 1 when the command failed (the reason is logged to stderr); ``retrain`` has
        its own codes (see :data:`automl.retraining.EXIT_CODES`).
    """
    parser = argparse.ArgumentParser(prog="automl", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(required=True, dest="command")
    for add_parser in (add_fit_parser, add_predict_parser, add_evaluate_parser, add_report_parser,
                       add_retrain_parser, add_worker_parser):
        add_parser(subparsers)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    try:
        code = args.run(args)
    except KeyboardInterrupt:
        logger.error("%s interrupted: running trials were marked failed; finished ones are kept.", args.command)
        return 130
    except Exception as exc:
        logger.error("%s failed: %s: %s", args.command, type(exc).__name__, exc)
        return 1
    return code or 0


if __name__ == "__main__":
    sys.exit(main())
