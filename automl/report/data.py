"""The report's content: a fitted model's results as plain, JSON-ready data (no new computation).

The page (:mod:`automl.report.page`) is drawn from this data alone, so a run's logged
``report/report.json`` is enough to draw it again.
"""

import datetime
import json

import numpy as np

from ..data import class_counts_of
from ..search import BUDGET_NOTE, n_splits_of
from ..tracking import package_versions

FORMAT, VERSION = "automl-report", 1
TOP_N = 20  # leaderboard rows shown


def report_data(model, nested_cv=None):
    """Gather a fitted model's results as plain data, the content of the report.

    Parameters
    ----------
    model : AutoClassifier or AutoRegressor
        Fitted.
    nested_cv : NestedCVReport or None, default=None
        A nested-CV estimate of the same configuration (:func:`automl.nested_cv`), shown beside
        the search's own optimistic best score.

    Returns
    -------
    data : dict
        JSON-serializable: ``format, version, created, estimator, data, search, trials,
        leaderboard, pruning, ensemble, leakage, nested_cv, reproducibility``.
    """
    board = model.leaderboard_
    return _json_safe({
        "format": FORMAT, "version": VERSION,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "estimator": type(model).__name__,
        "data": _data_summary(model),
        "search": _search_summary(model, board),
        "trials": _records(board.drop(columns=["params"]).sort_values("trial")),
        "leaderboard": _records(board.head(TOP_N)),
        "pruning": _pruning_summary(board, _n_folds(model), _validation(model)),
        "ensemble": _ensemble_summary(model, board),
        "leakage": {"findings": _records(model.leak_report_.to_frame()),
                    "notes": list(getattr(model.leak_report_, "notes", ()))},
        "nested_cv": None if nested_cv is None else nested_cv.to_dict(),
        "reproducibility": _reproducibility(model),
    })


def _validation(model):
    """"cv" or "holdout": what the trials' scores were measured on (models saved before the switch: "cv")."""
    return getattr(model, "validation_", "cv")


def _n_folds(model):
    if _validation(model) == "holdout":
        return 1
    try:
        return n_splits_of(model.cv)
    except ValueError:  # a splitter that counts its folds by the groups (LeaveOneGroupOut): the folds run
        return int(model.leaderboard_["folds"].max())


def _data_summary(model):
    profile = model.profile_
    columns = [
        {"column": c, "kind": profile.kinds.get(c, "numeric"), "missing_rate": profile.missing_rate.get(c, 0.0),
         "n_levels": len(profile.categories[c]) if c in profile.categories else None}
        for c in profile.feature_names
    ]
    return {
        "n_samples": profile.n_samples, "n_features": profile.n_features, "task": profile.task,
        **_target_summary(model), "columns": columns, "dropped_columns": dict(profile.dropped_columns),
        "fingerprint": profile.fingerprint,
    }


def _target_summary(model):
    """Classes and their counts, or the regression target's statistics."""
    if model.profile_.task == "regression":
        return {"classes": [], "class_counts": [], "target_stats": dict(model.profile_.target_stats or {})}
    return {"classes": [str(c) for c in model.classes_], "class_counts": list(class_counts_of(model))}


def _search_summary(model, board):
    states = board["state"].value_counts()
    return {
        "metric": model.metric_, "greater_is_better": model.study_.direction.name == "MAXIMIZE",
        "validation": _validation(model), "n_groups": getattr(model, "n_groups_", None),
        "time_ordered": getattr(model, "time_ordered_", False), "weighted": getattr(model, "weighted_", False),
        "n_trials": len(board), "states": {s: int(n) for s, n in states.items()},
        "n_trials_killed": model.n_trials_killed_, "best_score": model.best_score_,
        "best_score_std": model.best_score_std_, "best_params": model.best_params_,
        "best_trial": int(board["trial"].iloc[0]) if len(board) and board["state"].iloc[0] == "COMPLETE" else None,
        "timings_seconds": dict(model.timings_),
    }


def _pruning_summary(board, n_folds, validation):
    """How trials ended early, and how many folds Hyperband spared under CV.

    ``n_pruned`` counts the trials Hyperband pruned, ``n_stopped`` those the time budget stopped (both
    are Optuna's PRUNED; the leaderboard's note tells them apart). ``folds_saved`` counts the folds
    that pruned trials never ran; under a holdout (one fold) it is 0 and the resource is rows.
    """
    early = board[board["state"] == "PRUNED"]
    by_budget = early["note"].str.startswith(BUDGET_NOTE)
    pruned = early[~by_budget]
    folds_by_trial = board.groupby(["folds", "state"]).size()
    return {
        "validation": validation, "n_folds": n_folds, "n_pruned": len(pruned), "n_stopped": int(by_budget.sum()),
        "folds_run": int(board["folds"].sum()), "folds_full_cv": int(len(board) * n_folds),
        "folds_saved": int((n_folds - pruned["folds"]).sum()),
        "trials_by_folds": [{"folds": int(f), "state": s, "n_trials": int(n)} for (f, s), n in folds_by_trial.items()],
    }


def _ensemble_summary(model, board):
    members = board[board["weight"] > 0][["trial", "family", "weight", "mean", "std"]]
    return {
        "members": _records(members.sort_values("weight", ascending=False)),
        "hillclimb_score": model.ensemble_score_, "best_single_oof_score": model.best_single_oof_score_,
        "ensemble_size": model.ensemble_size, "final_fit": model.final_fit, "fallback": not model.best_params_,
    }


def _reproducibility(model):
    return {
        "random_state": model.random_state_, "params": model.get_params(deep=False),
        "components": [spec.key for spec in model.components_], "versions": package_versions(),
        "fingerprint": model.profile_.fingerprint, "study_name": model.study_.study_name,
        "mlflow_run_id": model.mlflow_run_id_, "mlflow_tracking_uri": model.mlflow_tracking_uri_,
    }


def _records(frame):
    return json.loads(frame.to_json(orient="records", default_handler=str))


def _json_safe(value):
    """``value`` in JSON's types: numpy numbers as Python ones, NaN and inf as None, objects as repr."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_json_safe(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if np.isfinite(value) else None
    if value is None or isinstance(value, (str, int, bool)):
        return value
    return repr(value)
