"""Nested cross-validation: the whole AutoML fit inside outer folds, scored on rows it never saw.

The best of many trials' CV scores is biased upwards, and the more configurations a search compares
the larger the bias: the winner is partly the trial whose folds happened to favour it (Cawley and
Talbot, JMLR 2010). Nested CV removes that bias by moving the entire fit (validation, search,
ensemble selection, final fit) inside each training part of an outer split and scoring it on the
outer test part (Varma and Simon, BMC Bioinformatics 2006). Beside the ensemble it scores the search's
best single pipeline, refit on the same training part, and three baselines, so each fold shows what
the search adds over a default model and how far its own best score overstated it.
"""

import json
import numbers
import time
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from joblib import Parallel, delayed
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.dummy import DummyClassifier, DummyRegressor
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.model_selection import TimeSeriesSplit
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import OrdinalEncoder
from sklearn.utils import check_random_state

from ..data import check_prediction_data, check_training_data, training_classes
from ..exceptions import DataRepairWarning, DataValidationError
from ..search import check_group_counts, default_splitter, get_metric, make_folds, resolve_n_jobs, time_order
from ..space import MAX_NATIVE_CARDINALITY, default_pipeline, rebuild, weight_params
from ..tracking import make_tracker
from . import _params as P
from .base import _AutoMLBase

__all__ = ["NestedCVReport", "nested_cv"]

_CONSTRAINTS = {
    "outer_cv": [P.interval(int, 2, None), P.has_method("split", "a CV splitter")],
    "n_jobs": [P.interval(int, 1, None), P.interval(int, None, -1)],
    "random_state": [P.interval(int, 0, 2**32 - 1), P.is_none()],
}
# The per-fold quantities the summary aggregates (the other columns describe the fold).
QUANTITIES = (
    "ensemble", "best_single", "inner_best", "inner_ensemble", "optimism_gap",
    "dummy", "logreg", "ridge", "hgb", "fit_seconds", "n_trials",
)  # the linear baseline is "logreg" for a classifier, "ridge" for a regressor


@dataclass
class NestedCVReport:
    """What an AutoML fit delivers on rows its search never saw, per outer fold and on average.

    Attributes
    ----------
    folds : DataFrame of shape (n_outer_folds, 18)
        One row per outer fold, with columns:

        - ``fold``, ``n_train``, ``n_test``: the fold's number and the sizes of its two parts
          (``n_train`` is read from the fitted profile: the rows the inner fit really saw);
        - ``ensemble``: the fitted AutoML model's score on the outer test part;
        - ``best_single``: the best trial's pipeline, refit on the outer training part, scored there;
        - ``inner_best``, ``inner_best_std``: the search's own best mean CV score and its fold spread
          (``best_score_``, ``best_score_std_``), computed on the outer training part alone;
        - ``inner_ensemble``: the ensemble's score on the OOF predictions it was selected on;
        - ``optimism_gap``: ``inner_best - best_single`` for a metric to maximize,
          ``best_single - inner_best`` for a loss; positive means the search flattered its winner;
        - ``dummy``, ``logreg``, ``hgb``: the baselines' scores (see :func:`nested_cv`);
        - ``best_family``, ``n_trials``, ``n_complete``: the winning family, trials started and
          finished; ``fit_seconds``: wall time of the inner fit; ``seed``: its ``random_state_``;
          ``mlflow_run_id``: the inner fit's MLflow parent run (None when untracked).
    summary : DataFrame of shape (10, 3)
        Index: the quantities ``ensemble, best_single, inner_best, inner_ensemble, optimism_gap,
        dummy, logreg, hgb, fit_seconds, n_trials``. Columns: ``mean``, ``std`` (ddof=1) and
        ``sem`` (standard error, ``std / sqrt(n_outer_folds)``).
    metric : str
        The estimator's metric (``metric_`` of the fitted folds), the unit of every score.
    greater_is_better : bool
        Its direction: False for a loss such as ``log_loss``.
    mlflow_run_id : str or None, default=None
        The MLflow run ``nested-cv`` holding this report (``nested_cv_folds.csv``,
        ``nested_cv.json``, summary metrics); None when the estimator was not tracked.
    """

    folds: pd.DataFrame
    summary: pd.DataFrame
    metric: str
    greater_is_better: bool
    mlflow_run_id: str | None = None

    def to_dict(self):
        """The report as plain Python values, ready for ``json.dumps``.

        Returns
        -------
        report : dict
            ``metric``, ``greater_is_better``, ``mlflow_run_id``, ``folds`` (a list of one dict per
            fold) and ``summary`` (quantity -> ``{"mean", "std", "sem"}``). NaN becomes None.
        """
        return {
            "metric": self.metric,
            "greater_is_better": self.greater_is_better,
            "mlflow_run_id": self.mlflow_run_id,
            "folds": json.loads(self.folds.to_json(orient="records")),
            "summary": json.loads(self.summary.to_json(orient="index")),
        }


def _refuse_rare_classes(classes, counts, n_folds, outer_cv):
    """Every outer training part must hold every class, or its inner search cannot learn that class."""
    rare = [f"class {label!r} has {n} member(s)" for label, n in zip(classes.tolist(), counts) if n < n_folds]
    if rare:
        raise DataValidationError(
            f"nested_cv with outer_cv={outer_cv}: {len(rare)} class(es) have fewer members than outer_cv: "
            f"{', '.join(rare[:5])}. Every outer fold needs every class: lower outer_cv, or drop or merge "
            "these classes.")


def nested_cv(estimator, X, y, *, outer_cv=3, n_jobs=1, random_state=None, groups=None, sample_weight=None):
    """Estimate what an AutoML fit delivers, with the whole fit nested inside outer CV folds.

    For each outer split, a clone of ``estimator`` is fit (search, ensemble selection and final fit)
    on the training part only, and scored on the test part. On the same two parts it also refits
    the search's best single pipeline and three baselines, so the bias of selecting the best of
    many trials (Cawley and Talbot, 2010) shows as the gap between the search's own best CV score
    and what that winner scores on unseen rows.

    Parameters
    ----------
    estimator : AutoClassifier or AutoRegressor
        Unfitted configuration; it is cloned for each outer fold, never fitted itself. Its
        ``time_budget`` is the budget of EACH outer fit: the total is ``n_outer_folds`` times
        ``time_budget``, or less when outer folds run in parallel. Its ``storage`` must be None (a
        persistent study would carry trials from one outer fold into the next).
    X : {DataFrame, array-like} of shape (n_samples, n_features)
        As for :meth:`AutoClassifier.fit`; the inner fits receive the rows as given.
    y : array-like of shape (n_samples,)
        Class labels, or the numeric target of a regressor.
    outer_cv : int or CV splitter, default=3
        An int ``k`` makes ``StratifiedKFold(k, shuffle=True, random_state=random_state)`` (``KFold``
        for a regressor; with ``groups``, ``StratifiedGroupKFold`` or ``GroupKFold``; when the
        estimator's search is in time order, ``cv="time"`` or a ``time_column``, ``TimeSeriesSplit(k)``
        on the rows in that order: each outer fit on the past, scored on the rows after it, the oldest
        never scored). A splitter's ``split(X, y, groups)`` is called on the validated data.
    n_jobs : int, default=1
        Outer folds fitted at once, in joblib worker processes; -1 all cores, -2 all but one. Above
        1, each inner fit is given ``n_jobs=1`` (one search worker), so ``n_jobs`` processes share
        the cores; at 1, the inner fits keep the estimator's own ``n_jobs``.
    random_state : int or None, default=None
        Seed of the outer splitter and, when ``estimator.random_state`` is None, of the seed drawn
        for each outer fit: the same ``random_state`` gives the same report.
    groups : array-like of shape (n_samples,) or None, default=None
        A group label per row: the outer folds keep each group on one side, and each inner fit is given
        its rows' groups (``fit(X, y, groups)``), so that the estimate is of groups never seen.
    sample_weight : array-like of shape (n_samples,) or None, default=None
        A weight per row: each inner fit is given its rows' weights (``fit(X, y, sample_weight=...)``),
        the baselines are fitted with them, and every outer score is the metric weighted by the test
        rows' weights.

    Returns
    -------
    report : NestedCVReport
        ``folds`` (one row per outer fold), ``summary`` (mean, std, standard error), ``metric``.

    Raises
    ------
    ValueError
        If ``outer_cv`` is an int below 2 or not a splitter, ``n_jobs`` is 0, or
        ``estimator.storage`` is set (the message names the parameter).
    TypeError
        If ``estimator`` is not an :class:`AutoClassifier` or :class:`AutoRegressor`.
    DataValidationError
        If X or y is unusable, or a class has fewer members than ``outer_cv`` (every outer
        training part must hold every class), or a single member with a splitter as ``outer_cv``;
        errors of the inner fits propagate as they are.

    See Also
    --------
    AutoClassifier.best_score_ : The search's own, optimistic, estimate.

    Notes
    -----
    Scores use the estimator's metric (``metric_``), with each model's probability columns placed
    in the columns of the full label set, so a class missing from a training part scores as
    probability 0. The baselines, fit on the validated training part with ``random_state`` set to
    the fold's seed, are: ``DummyClassifier(strategy="prior")`` (ROC AUC exactly 0.5); the
    portfolio's logistic regression (``C=1``; median imputation with indicators, standard scaling,
    one-hot encoding: :func:`automl.space.pipeline.default_pipeline`, also the fit's fallback); and a
    default ``HistGradientBoostingClassifier`` reading ordinal-encoded categoricals natively
    (columns with more than 250 levels stay ordinal numbers). A regressor's baselines are
    ``DummyRegressor()`` (the training mean), the portfolio's ridge regression (column ``ridge``)
    and a default ``HistGradientBoostingRegressor``.

    The outer training parts overlap, so fold scores are not independent: the standard error
    ``std / sqrt(k)`` understates the uncertainty of the mean, and no unbiased estimator of it
    exists (Bengio and Grandvalet, JMLR 2004). Read it as a lower bound.

    References
    ----------
    G. C. Cawley and N. L. C. Talbot, "On over-fitting in model selection and subsequent selection
    bias in performance evaluation", Journal of Machine Learning Research 11, 2079-2107, 2010.

    S. Varma and R. Simon, "Bias in error estimation when using cross-validation for model
    selection", BMC Bioinformatics 7:91, 2006.

    Y. Bengio and Y. Grandvalet, "No unbiased estimator of the variance of K-fold
    cross-validation", Journal of Machine Learning Research 5, 1089-1105, 2004.

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from automl import AutoClassifier
    >>> X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    >>> model = AutoClassifier(time_budget=None, n_trials=2, include=["logreg"], cv=2,
    ...                        tracking=False, verbose=0, random_state=0)
    >>> report = nested_cv(model, X, y, outer_cv=2, random_state=0)
    >>> report.metric, len(report.folds), report.folds["dummy"].tolist()
    ('roc_auc', 2, [0.5, 0.5])
    >>> list(report.summary.columns)
    ['mean', 'std', 'sem']
    """
    _check_arguments(estimator, outer_cv, n_jobs, random_state)
    task = estimator._task
    n_folds = outer_cv if isinstance(outer_cv, numbers.Integral) else 1
    try:
        with warnings.catch_warnings():
            # Rare classes are refused just below, in terms of outer_cv, rather than warned about.
            warnings.filterwarnings("ignore", message=".*fewer members than n_folds", category=DataRepairWarning)
            checked = check_training_data(X, y, n_folds=n_folds, task=task, groups=groups, sample_weight=sample_weight)
    except DataValidationError as exc:
        # The check speaks of `cv`; here the folds it counted are the outer ones.
        message = str(exc).replace("lower cv", "lower outer_cv")
        raise DataValidationError(f"nested_cv with outer_cv={outer_cv}: {message}") from exc
    (X_all, y_all, classes, profile), codes = checked[:4], (checked[4] if len(checked) > 4 else None)
    weights = None if sample_weight is None else np.asarray(sample_weight, dtype=np.float64)
    if task == "classification":  # the check drops a class seen once: refused here, so that no row is gone
        _refuse_rare_classes(*training_classes(y), max(n_folds, 2), outer_cv)
    splits = _outer_splits(estimator, outer_cv, X_all, y_all, profile, codes, random_state)
    n_jobs = resolve_n_jobs(n_jobs)
    inner = clone(estimator)
    if n_jobs > 1:
        inner.set_params(n_jobs=1)
    seeds = _fold_seeds(estimator.random_state, len(splits), random_state)
    rows = Parallel(n_jobs=n_jobs)(
        delayed(_outer_fold)(clone(inner).set_params(random_state=seed), X, y, train, test,
                             y_all[test], classes, number, None if codes is None else codes[train], weights)
        for number, ((train, test), seed) in enumerate(zip(splits, seeds))
    )
    folds = pd.DataFrame(rows)
    metric = get_metric(folds["metric"].iloc[0], len(classes))
    folds = folds.drop(columns="metric")
    report = NestedCVReport(folds=folds, summary=_summarize(folds), metric=metric.name,
                            greater_is_better=metric.greater_is_better)
    report.mlflow_run_id = _log_to_mlflow(estimator, report, {"outer_cv": outer_cv, "n_jobs": n_jobs,
                                                              "random_state": random_state,
                                                              "weighted": sample_weight is not None})
    return report


def _log_to_mlflow(estimator, report, arguments):
    """Log the report as an MLflow run ``nested-cv`` when the estimator tracks; its id or None."""
    tracker = make_tracker(estimator.tracking, estimator.tracking_uri, estimator.experiment_name)
    params = {**arguments, **{f"estimator.{k}": v for k, v in estimator.get_params(deep=False).items()}}
    run_id = tracker.start_fit(params, {"mlflow.runName": "nested-cv", "automl.kind": "nested_cv"})
    metrics = {f"nested_{q}_{stat}": report.summary.loc[q, stat] for q in report.summary.index
               for stat in ("mean", "sem")}
    tracker.log_fit_results(
        artifacts={"nested_cv_folds.csv": report.folds, "nested_cv.json": report.to_dict()},
        metrics={k: float(v) for k, v in metrics.items() if np.isfinite(v)}, model=None, input_example=None,
    )
    tracker.end_fit()
    return run_id


def _outer_splits(estimator, outer_cv, X, y, profile, groups, random_state):
    """The outer folds: shuffled, grouped, or in time order when the estimator's search is (``cv="time"`` or a
    ``time_column``): then an int ``outer_cv`` is ``TimeSeriesSplit(outer_cv)``, each outer fit on the past."""
    time_ordered = estimator.cv == "time" or getattr(estimator, "time_column", None) is not None
    if time_ordered:
        splitter = TimeSeriesSplit(outer_cv) if isinstance(outer_cv, numbers.Integral) else outer_cv
        return make_folds(splitter, X, y, None, estimator._task, order=time_order(X, estimator.time_column, profile))
    splitter = outer_cv
    if isinstance(outer_cv, numbers.Integral):
        if groups is not None:
            check_group_counts(groups, y, outer_cv, estimator._task, name="outer_cv")
        splitter = default_splitter(estimator._task, outer_cv, random_state, grouped=groups is not None)
    return list(splitter.split(X, y, groups))


def _check_arguments(estimator, outer_cv, n_jobs, random_state):
    """Raise for an estimator that cannot be nested or an argument outside its constraints."""
    if not isinstance(estimator, _AutoMLBase):
        raise TypeError(f"nested_cv needs an AutoClassifier or AutoRegressor; got {type(estimator).__name__}.")
    if estimator.storage is not None:
        raise ValueError(
            "The 'storage' parameter of the estimator must be None for nested_cv. Got "
            f"{estimator.storage!r} instead: a persistent study would carry trials of one outer fold, "
            "chosen on rows another fold tests on, into the next fold's search."
        )
    for name, value in {"outer_cv": outer_cv, "n_jobs": n_jobs, "random_state": random_state}.items():
        allowed = _CONSTRAINTS[name]
        if not any(check(value) for _, check in allowed):
            texts = [text for text, _ in allowed]
            expected = texts[0] if len(texts) == 1 else ", ".join(texts[:-1]) + " or " + texts[-1]
            raise ValueError(f"The {name!r} parameter of nested_cv must be {expected}. Got {value!r} instead.")


def _fold_seeds(estimator_seed, n_folds, random_state):
    """The ``random_state`` of each outer fit: the estimator's own, else one drawn per fold.

    Drawing them from ``random_state`` here, rather than letting each fit draw its own, makes the
    whole nested CV reproducible under one seed, sequential or parallel.
    """
    if estimator_seed is not None:
        return [estimator_seed] * n_folds
    return check_random_state(random_state).randint(0, 2**31 - 1, size=n_folds).tolist()


def _outer_fold(estimator, X, y, train, test, y_test, classes, number, groups=None, weights=None):
    """Fit ``estimator`` on the training rows, score it, its best trial and the baselines on the test rows
    (all weighted when ``weights``, of shape (n_samples,), are given)."""
    X_train, y_train, X_test = _take(X, train), _take(y, train), _take(X, test)
    w_train, w_test = (None, None) if weights is None else (weights[train], weights[test])
    started = time.perf_counter()
    fitted = estimator.fit(X_train, y_train, groups=groups, sample_weight=w_train)
    seconds = time.perf_counter() - started
    metric = get_metric(fitted.metric_, len(classes))
    seed = fitted.random_state_
    regression = fitted.profile_.task == "regression"
    with warnings.catch_warnings():
        # The inner fit has already warned about the same repairs (dropped columns); levels unseen by
        # an outer fold's training rows are what an outer test fold is expected to hold.
        warnings.simplefilter("ignore", DataRepairWarning)
        checked = check_training_data(X_train, y_train, n_folds=1, task=fitted._task, sample_weight=w_train)
        (X_tr, y_tr, classes_tr, profile), w_tr = checked[:4], (checked[5] if len(checked) > 4 else None)
        X_te = check_prediction_data(X_test, profile)
        if regression:
            scores = {"ensemble": metric(y_test, fitted.predict(X_test), sample_weight=w_test)}
        else:
            scores = {"ensemble": metric(y_test, _align(fitted.predict_proba(X_test), fitted.classes_, classes),
                                         sample_weight=w_test)}
    if regression:
        models = {"dummy": DummyRegressor(), "ridge": default_pipeline("ridge", profile, seed)}
    else:
        models = {"dummy": DummyClassifier(strategy="prior"), "logreg": default_pipeline("logreg", profile, seed)}
    models = {"best_single": _best_single(fitted), **models, "hgb": _hgb_baseline(profile, seed)}
    for name, model in models.items():
        scores[name] = np.nan
        if model is not None:
            model.fit(X_tr, y_tr, **weight_params(model, w_tr))
            if regression:
                scores[name] = metric(y_test, model.predict(X_te), sample_weight=w_test)
            else:
                scores[name] = metric(y_test, _align(model.predict_proba(X_te), classes_tr[model.classes_], classes),
                                      sample_weight=w_test)
    sign = 1.0 if metric.greater_is_better else -1.0
    board = fitted.leaderboard_
    return {
        "fold": number, "n_train": fitted.profile_.n_samples, "n_test": len(test),
        "ensemble": scores["ensemble"], "best_single": scores["best_single"],
        "inner_best": fitted.best_score_, "inner_best_std": fitted.best_score_std_,
        "inner_ensemble": fitted.ensemble_score_,
        "optimism_gap": sign * (fitted.best_score_ - scores["best_single"]),
        **{name: scores[name] for name in models if name != "best_single"},
        "best_family": fitted.best_params_.get("model"), "n_trials": len(board),
        "n_complete": int((board["state"] == "COMPLETE").sum()), "fit_seconds": seconds,
        "seed": seed, "mlflow_run_id": fitted.mlflow_run_id_, "metric": metric.name,
    }


def _take(data, index):
    """Rows ``index`` of X or y as given: by position for pandas, else of an array."""
    if hasattr(data, "iloc"):
        return data.iloc[index]
    if isinstance(data, np.ndarray):
        return data[index]
    # Lists of mixed rows: an object array keeps numbers numbers and strings strings.
    return np.asarray(data, dtype=object)[index]


def _align(proba, labels, classes):
    """Place the columns of ``proba`` (one per label of ``labels``) in those of the full ``classes``.

    Parameters
    ----------
    proba : ndarray of shape (n_samples, n_labels)
    labels : ndarray of shape (n_labels,)
        The model's classes, a subset of ``classes``, in its column order.
    classes : ndarray of shape (n_classes,)

    Returns
    -------
    full : ndarray of shape (n_samples, n_classes)
        Zero in the columns of classes the model never saw.
    """
    columns = pd.Index(classes).get_indexer(labels)
    if (columns < 0).any():
        raise ValueError(f"Labels {list(labels)} are not all among the classes {list(classes)}.")
    full = np.zeros((len(proba), len(classes)))
    full[:, columns] = proba
    return full


def _best_single(fitted):
    """The best complete trial's pipeline, rebuilt unfitted; None when no trial completed."""
    if not fitted.best_params_:
        return None
    return rebuild(fitted.best_params_, fitted.profile_, fitted.components_, fitted.random_state_)


def _hgb_baseline(profile, seed):
    """Default HistGradientBoosting; categoricals as ordinal codes it splits on natively."""
    levels = {c: len(profile.categories.get(c, ())) for c in profile.categorical_columns}
    native = [c for c, n in levels.items() if n <= MAX_NATIVE_CARDINALITY]
    wide = [c for c, n in levels.items() if n > MAX_NATIVE_CARDINALITY]
    transformers = []
    for name, columns in (("native", native), ("wide", wide)):
        if columns:
            # Unknown and missing levels become NaN, which the trees route as missing values.
            encoder = OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=np.nan,
                                     encoded_missing_value=np.nan)
            transformers.append((name, encoder, columns))
    if profile.numeric_columns:
        transformers.append(("numeric", "passthrough", list(profile.numeric_columns)))
    kind = HistGradientBoostingRegressor if profile.task == "regression" else HistGradientBoostingClassifier
    model = kind(categorical_features=list(range(len(native))) or None, random_state=seed)
    return Pipeline([("preprocess", ColumnTransformer(transformers, sparse_threshold=0.0)), ("model", model)])


def _summarize(folds):
    """Mean, standard deviation (ddof=1) and standard error of each quantity over the outer folds."""
    values = folds[[q for q in QUANTITIES if q in folds]].astype(float)
    std = values.std(ddof=1)
    return pd.DataFrame({"mean": values.mean(), "std": std, "sem": std / np.sqrt(len(values))})
