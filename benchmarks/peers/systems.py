"""The systems under test: one fit function each, and the venv it runs in.

A fit function takes ``(X_train, y_train, task, budget, seed, workdir)`` and returns
``(predict, info)``: a function from features to a DataFrame of class probabilities (one column per
class label; task "binary" or "multiclass") or to an array of point predictions (task "regression"),
and a dict of extra CSV fields (version, trial counts, ...). Every system here handles both; the
task picks the library's classifier or regressor. The worker times the call, so everything a user
would wait for belongs inside it and nothing else does.

Every library is imported inside its function: a worker imports only the system it runs, in a venv
that may hold nothing else (automl is not installed in the peer venvs, FLAML not in AutoGluon's).
"""

from importlib.metadata import version

import pandas as pd

N_JOBS = 2  # the machine's two cores, given to every system


def _frame(proba, classes):
    return pd.DataFrame(proba, columns=[str(c) for c in classes])


def _is_regression(task):
    return task == "regression"


# --- ours -----------------------------------------------------------------------------------------

def _ours(**overrides):
    def fit(X, y, task, budget, seed, workdir):
        from automl import AutoClassifier, AutoRegressor
        # tracking=False: MLflow logging is an opt-out cost, not part of the search being compared;
        # its seconds are measured separately by benchmarks/heldout.py.
        estimator = AutoRegressor if _is_regression(task) else AutoClassifier
        model = estimator(time_budget=budget, n_jobs=N_JOBS, random_state=seed, verbose=0,
                          tracking=False, **overrides).fit(X, y)
        if _is_regression(task):
            return model.predict, _ours_info(model)
        return lambda X_new: _frame(model.predict_proba(X_new), model.classes_), _ours_info(model)
    return fit


def _ours_first_rung(folds):
    """Ours with Hyperband's first rung at ``folds`` folds instead of one: a candidate default."""
    fit = _ours(pruning=True)

    def first_rung_fit(*args):
        from automl import search
        # The pruner is built in this process and sent to the workers, so setting it here reaches them.
        search.PRUNING_MIN_RESOURCE = folds
        return fit(*args)
    return first_rung_fit


def _ours_info(model):
    """Trial counts and the stage timings from which the summary derives our overhead."""
    from automl.search.liveness import STOPPED_AT_DEADLINE

    board = model.leaderboard_
    states = board["state"].value_counts()
    timings = model.timings_
    complete = int(states.get("COMPLETE", 0))
    # A worker stopped at the deadline leaves its trial FAIL with this note: the budget, not an error.
    stopped = int(((board["state"] == "FAIL") & board["note"].fillna("").str.startswith(STOPPED_AT_DEADLINE)).sum())
    return {
        "system_version": version("automl"),
        "trials_complete": complete, "trials_pruned": int(states.get("PRUNED", 0)),
        "trials_failed": int(states.get("FAIL", 0)) - stopped, "trials_stopped": stopped,
        "trials_killed": int(model.n_trials_killed_),
        "trials_per_minute": complete / max(timings["search"], 1e-9) * 60,
        "members": int((board["weight"] > 0).sum()),
        "search_seconds": timings["search"], "ensemble_seconds": timings["ensemble"],
        # The part of the search after its first deadline, given back by the final stage (0.0: none).
        "top_up_seconds": timings.get("top_up", 0.0),
        # The model-level leak check has its own share of the budget: not overhead, reported apart.
        "model_check_seconds": timings.get("model_check", 0.0),
        "folds_fitted": int(board["folds"].sum()),
        "tracking_seconds": timings["tracking"], "total_seconds": timings["total"],
    }


# --- plain gradient boosting baselines ------------------------------------------------------------

def _category_encoder(X_train, max_levels=None):
    """Turns non-numeric columns into pandas categoricals with the training levels (unseen -> NaN).

    A column with more than ``max_levels`` levels (titanic's names and tickets: 891 levels; HGB
    accepts at most 255) becomes its integer codes instead, so the baseline runs on every dataset.
    """
    levels = {column: X_train[column].astype("category").cat.categories
              for column in X_train.columns if not pd.api.types.is_numeric_dtype(X_train[column])}

    def encode(frame):
        frame = frame.copy()
        for column, categories in levels.items():
            frame[column] = pd.Categorical(frame[column], categories=categories)
            if max_levels is not None and len(categories) > max_levels:
                frame[column] = frame[column].cat.codes.replace(-1, float("nan"))
        return frame
    return encode


def hgb(X, y, task, budget, seed, workdir):
    """Default HistGradientBoosting{Classifier,Regressor}, categoricals read natively
    (categorical_features="from_dtype")."""
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
    encode = _category_encoder(X, max_levels=255)
    if _is_regression(task):
        model = HistGradientBoostingRegressor(random_state=seed).fit(encode(X), y)
        return lambda X_new: model.predict(encode(X_new)), {"system_version": version("scikit-learn")}
    model = HistGradientBoostingClassifier(random_state=seed).fit(encode(X), y)
    predict = lambda X_new: _frame(model.predict_proba(encode(X_new)), model.classes_)
    return predict, {"system_version": version("scikit-learn")}


def lgbm(X, y, task, budget, seed, workdir):
    """Default LGBM{Classifier,Regressor}, categoricals as the category dtype (LightGBM's native handling)."""
    from lightgbm import LGBMClassifier, LGBMRegressor
    encode = _category_encoder(X)
    if _is_regression(task):
        model = LGBMRegressor(random_state=seed, n_jobs=N_JOBS, verbose=-1).fit(encode(X), y)
        return lambda X_new: model.predict(encode(X_new)), {"system_version": version("lightgbm")}
    model = LGBMClassifier(random_state=seed, n_jobs=N_JOBS, verbose=-1).fit(encode(X), y)
    predict = lambda X_new: _frame(model.predict_proba(encode(X_new)), model.classes_)
    return predict, {"system_version": version("lightgbm")}


# --- peers ----------------------------------------------------------------------------------------

def flaml(X, y, task, budget, seed, workdir):
    """flaml.AutoML with the same budget, metric, cores and seed; everything else default."""
    from flaml import AutoML
    model = AutoML()
    if _is_regression(task):
        flaml_task, metric = "regression", "rmse"
    else:
        flaml_task, metric = "classification", "roc_auc" if task == "binary" else "log_loss"
    model.fit(X, y, task=flaml_task, time_budget=budget, metric=metric, n_jobs=N_JOBS,
              seed=seed, verbose=0)
    info = {"system_version": version("flaml"), "n_models": len(model.config_history),
            "best_model": model.best_estimator}
    if _is_regression(task):
        return model.predict, info
    return lambda X_new: _frame(model.predict_proba(X_new), model.classes_), info


def _autogluon(presets=None):
    def fit(X, y, task, budget, seed, workdir):
        from autogluon.tabular import TabularPredictor
        metric = {"binary": "roc_auc", "multiclass": "log_loss", "regression": "root_mean_squared_error"}[task]
        # problem_type only for regression: a numeric target with few distinct values (abalone's rings,
        # wine quality) would otherwise be inferred as multiclass. Classification keeps the inference.
        problem_type = "regression" if _is_regression(task) else None
        # No seed argument: AutoGluon's models use fixed seeds (0 by default), so only the split varies.
        predictor = TabularPredictor(label=y.name, eval_metric=metric, problem_type=problem_type,
                                     path=f"{workdir}/autogluon", verbosity=2)  # model-level lines in the log
        predictor.fit(X.assign(**{y.name: y}), time_limit=budget, presets=presets)
        info = {"system_version": version("autogluon.tabular"),
                "n_models": len(predictor.model_names()), "best_model": predictor.model_best}
        if _is_regression(task):
            return lambda X_new: predictor.predict(X_new).to_numpy(), info
        return lambda X_new: predictor.predict_proba(X_new, as_multiclass=True), info
    return fit


# name -> (venv, fit function). "main" is the venv the harness runs in (the library's own).
SYSTEMS = {
    "ours": ("main", _ours()),
    "ours-random": ("main", _ours(sampler="random")),
    "ours-nopruning": ("main", _ours(pruning=False)),
    # pruning="auto" (the default) does not prune under 120 s: this prunes at every budget.
    "ours-pruning": ("main", _ours(pruning=True)),
    "ours-rung2": ("main", _ours_first_rung(2)),
    "ours-single": ("main", _ours(ensemble_size=1)),
    # Where the switch from k-fold CV to a holdout pays (issue 25): either one forced, at any size.
    "ours-holdout": ("main", _ours(validation="holdout")),
    "ours-cv": ("main", _ours(validation="cv")),
    "hgb": ("main", hgb),
    "lgbm": ("main", lgbm),
    "flaml": ("flaml", flaml),
    "autogluon": ("autogluon", _autogluon()),
    "autogluon-best": ("autogluon", _autogluon("best_quality")),
}
