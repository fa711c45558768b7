"""The ensemble stage of ``fit``: choose members on the OOF predictions, trim them to the time left, fit them.

:func:`select_members` runs ensemble selection (:mod:`automl.ensemble.selection`) over the complete
trials; :func:`members_in_time` drops the lightest members whose refit would not end in time;
:func:`build_ensemble` fits what is left as a :mod:`automl.ensemble.voting` ensemble. When no trial
finished, :func:`fit_fallback` gives the fit a model all the same.
"""

import logging
import warnings
from functools import partial

import numpy as np

from ..exceptions import NoSuccessfulTrialsError, warn_user
from ..search import is_holdout, scored_rows
from .selection import EnsembleSelection, weighted_average
from .voting import WeightedEnsembleClassifier, WeightedEnsembleRegressor

logger = logging.getLogger(__name__)


def build_ensemble(result, X, y, folds, metric, build, *, seconds_left, random_state, ensemble_size,
                   final_fit, n_jobs, sample_weight=None):
    """The ensemble stage of ``fit``: select members on the OOF predictions, trim to time, fit.

    Parameters
    ----------
    result : SearchResult
        With at least one complete trial in ``result.oof``.
    X : DataFrame of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
        Encoded labels.
    folds : list of (ndarray, ndarray)
        The search's folds (the bags of ``final_fit="bag"``); the OOF arrays hold the rows they score
        (:func:`automl.search.scored_rows`).
    metric : Metric
    build : callable
        ``build(trial) -> pipeline`` from a FrozenTrial: unfitted, or fitted and frozen
        (``sklearn.frozen.FrozenEstimator``, whose fit does nothing) for a holdout search's own models.
    seconds_left : float or None
        Time for the final fit; members are dropped, least weight first, until their estimated
        fits end in it (:func:`members_in_time`). None: no limit.
    random_state, ensemble_size, final_fit, n_jobs
        As for ``AutoClassifier``.
    sample_weight : ndarray of shape (n_samples,) or None, default=None
        Row weights: ensemble selection's metric weighs the hillclimb rows by them, and every member
        is fitted with them.

    Returns
    -------
    ensemble : WeightedEnsembleClassifier or WeightedEnsembleRegressor
        Fitted; the regressor for a regression metric.
    weights : dict of int -> float
        Weight by trial number, of the members kept.
    scores : tuple of (float, float)
        Pooled-OOF score of the kept ensemble and of the best single trial (the hillclimb set).
    """
    hillclimb_y, hillclimb_w = _hillclimb_set(y, folds, sample_weight)
    selection, chosen = select_members(result, hillclimb_y, metric, ensemble_size, random_state, hillclimb_w)
    trials = {t.number: t for t in result.study.get_trials(deepcopy=False)}
    if seconds_left is not None and not is_holdout(folds):  # a holdout's members are fitted already
        costs = final_fit_costs(result, chosen, final_fit, len(folds))
        chosen = members_in_time(chosen, costs, seconds_left, n_jobs)
    members = [build(trials[n]) for n in chosen]
    kind = WeightedEnsembleRegressor if metric.task == "regression" else WeightedEnsembleClassifier
    ensemble = kind(estimators=members, weights=list(chosen.values()), final_fit=final_fit, cv=folds, n_jobs=n_jobs)
    # Scored on the members kept, which the time budget may have trimmed.
    kept = metric(hillclimb_y, weighted_average([result.oof[n] for n in chosen], list(chosen.values())),
                  sample_weight=hillclimb_w)
    best_single = selection.best_single_score_ * (1 if metric.greater_is_better else -1)
    with warnings.catch_warnings():
        # Each member's configuration was fitted in its trial, where its convergence warnings were left
        # out of the output for the same reason (automl.search.objective); its refit would print them anew.
        # Set here, in the calling thread: joblib's threads read the same filters, catch_warnings is not
        # thread-safe.
        warnings.simplefilter("ignore")
        return ensemble.fit(X, y, sample_weight=sample_weight), chosen, (kept, best_single)


def _hillclimb_set(y, folds, sample_weight):
    """The target and the weights (None: unweighted) of the rows the OOF arrays hold."""
    rows = scored_rows(folds)
    return y[rows], None if sample_weight is None else sample_weight[rows]


def beats_constant(score, y, folds, metric, sample_weight=None):
    """Whether ``score`` on the hillclimb set beats a constant prediction there.

    The constant is the training part's class prior (or mean, for regression) of the first fold,
    scored on the rows the folds score (:func:`automl.search.scored_rows`): ROC AUC 0.5, the prior's
    log loss, the mean's RMSE; all of them weighted when ``sample_weight`` is given.
    """
    rows, train = scored_rows(folds), np.asarray(folds[0][0])
    train_w = np.ones(len(train)) if sample_weight is None else sample_weight[train]
    if metric.task == "regression":
        constant = np.full(len(rows), float(np.average(y[train], weights=train_w)))
    else:
        prior = np.bincount(y[train], weights=train_w, minlength=int(y.max()) + 1) / train_w.sum()
        constant = np.tile(prior, (len(rows), 1))
    baseline = metric(y[rows], constant, sample_weight=None if sample_weight is None else sample_weight[rows])
    return score > baseline if metric.greater_is_better else score < baseline


def select_members(result, y, metric, ensemble_size, random_state, sample_weight=None):
    """Ensemble selection (Caruana et al., ICML 2004) on the complete trials' OOF predictions.

    The answer is kept in ``result.selection`` and given again while the trials and arguments are the
    same: selection costs seconds on large data, and the top-up's estimate asks it first.

    ``y`` is the target of the rows the OOF arrays hold (:func:`automl.search.scored_rows`), and
    ``sample_weight`` their weights (the metric weighs them), or None.

    Returns
    -------
    selection : EnsembleSelection
        Fitted on the OOF arrays of ``result.oof`` in trial-number order.
    chosen : dict of int -> float
        Weight by trial number, of the trials with positive weight.
    """
    numbers = sorted(result.oof)
    key = (tuple(numbers), metric.name, ensemble_size, random_state, sample_weight is None)
    if result.selection is not None and result.selection[0] == key:
        return result.selection[1], dict(result.selection[2])
    selection = EnsembleSelection(ensemble_size=ensemble_size, random_state=random_state)
    score = metric.signed if sample_weight is None else partial(metric.signed, sample_weight=sample_weight)
    selection.fit([result.oof[n] for n in numbers], y, score)
    chosen = {n: float(w) for n, w in zip(numbers, selection.weights_) if w > 0}
    result.selection = (key, selection, chosen)
    return selection, dict(chosen)


def final_fit_costs(result, chosen, final_fit, n_folds):
    """Estimated seconds of each chosen member's final fit, from its trial's duration.

    A refit on all rows costs about one fold's fit, duration / (k - 1); bagging costs the whole
    duration (its k fold fits again). A holdout's members (one fold) are the trials' own fitted models:
    nothing to fit.

    Returns
    -------
    costs : dict of int -> float
        Seconds by trial number.
    """
    if n_folds == 1:
        return {n: 0.0 for n in chosen}
    trials = {t.number: t for t in result.study.get_trials(deepcopy=False)}
    share = 1.0 if final_fit == "bag" else 1.0 / (n_folds - 1)
    return {n: trials[n].duration.total_seconds() * share for n in chosen}


def final_fit_seconds(result, y, folds, metric, *, ensemble_size, final_fit, n_jobs, random_state,
                      sample_weight=None):
    """Estimated wall seconds of the final fit of the ensemble the search so far would give.

    Ensemble selection is run on ``result`` as :func:`build_ensemble` runs it, and the chosen members'
    costs (:func:`final_fit_costs`) are scheduled on ``n_jobs`` threads (:func:`schedule_seconds`).
    Arguments as for :func:`build_ensemble`; ``result.oof`` must not be empty.

    Returns
    -------
    seconds : float
    """
    hillclimb_y, hillclimb_w = _hillclimb_set(y, folds, sample_weight)
    _, chosen = select_members(result, hillclimb_y, metric, ensemble_size, random_state, hillclimb_w)
    return schedule_seconds(list(final_fit_costs(result, chosen, final_fit, len(folds)).values()), n_jobs)


def schedule_seconds(costs, n_jobs=1):
    """Graham's bound on a greedy schedule of jobs taking ``costs`` seconds on ``n_jobs`` threads.

    ``sum / n_jobs + (1 - 1 / n_jobs) * max`` (Graham, "Bounds on multiprocessing timing anomalies",
    SIAM J. Appl. Math., 1969) allows for one long job finishing alone, where the plain sum / n_jobs
    does not. 0.0 for no jobs.
    """
    if not costs:
        return 0.0
    return sum(costs) / n_jobs + (1 - 1 / n_jobs) * max(costs)


def members_in_time(chosen, costs, seconds_left, n_jobs=1):
    """Drop the lightest members whose final fit would not end in the time left.

    The members' fits run on ``n_jobs`` threads, each taking the next member when it is free
    (greedy list scheduling); the estimate is Graham's bound on such a schedule (:func:`schedule_seconds`).

    Parameters
    ----------
    chosen : dict of int -> float
        Weight by trial number, from ensemble selection.
    costs : dict of int -> float
        Estimated seconds of each member's final fit while ``n_jobs`` fits share the cores (as the
        search's trials did). A bagged member's cost is its k fold fits together, which makes the
        bound's longest-job term pessimistic for ``final_fit="bag"``.
    seconds_left : float
        Seconds the final fit may take.
    n_jobs : int, default=1
        Members fitted at once.

    Returns
    -------
    kept : dict of int -> float
        The heaviest members whose estimated schedule fits (always at least the heaviest one), weights
        renormalized to sum to 1, by trial number.
    """
    kept, kept_costs = {}, []
    for number, weight in sorted(chosen.items(), key=lambda item: -item[1]):
        candidate = [*kept_costs, costs[number]]
        if kept and schedule_seconds(candidate, n_jobs) > seconds_left:
            continue
        kept[number] = weight
        kept_costs = candidate
    if len(kept) < len(chosen):
        logger.warning("Kept %d of %d ensemble members to end the fit within the time budget.",
                       len(kept), len(chosen))
    total = sum(kept.values())
    return {n: w / total for n, w in sorted(kept.items())}


def fit_fallback(X, y, profile, seed, seconds_left=None, sample_weight=None):
    """A cheap, safe model for a search in which no trial finished, so fit still returns something.

    The portfolio's logistic regression, or ridge regression for a regression profile
    (:func:`automl.space.default_pipeline`), as an ensemble of one; a dummy predicting the class
    prior or the mean if even that fails, or at once when ``seconds_left`` (the final stage's time) is
    already spent; None if both fail. The linear model's own fit is not bounded: on data so large that
    it overruns, the trials overran first. ``sample_weight`` of shape (n_samples,) weighs the rows of
    either fit.
    """
    from sklearn.dummy import DummyClassifier, DummyRegressor

    from ..space import default_pipeline

    if profile.task == "regression":
        kind, members = WeightedEnsembleRegressor, (default_pipeline("ridge", profile, seed), DummyRegressor())
    else:
        kind, members = WeightedEnsembleClassifier, (default_pipeline("logreg", profile, seed),
                                                     DummyClassifier(strategy="prior"))
    if seconds_left is not None and seconds_left <= 0:
        logger.warning("No time left for the fallback's linear model: the fallback predicts the %s.",
                       "mean" if profile.task == "regression" else "class prior")
        members = members[1:]
    for member in members:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return kind(estimators=[member], weights=[1.0]).fit(X, y, sample_weight=sample_weight)
        except Exception as exc:
            logger.warning("Fallback model %s failed: %s", type(member).__name__, exc)
    return None


def use_fallback(result, fallback):
    """Return the fallback model when no trial finished, with a warning; raise if there is none.

    Raises
    ------
    NoSuccessfulTrialsError
        If the fallback could not be fit either; the message quotes the trials' first errors.
    """
    from optuna.trial import TrialState

    trials = result.study.get_trials(deepcopy=False, states=(TrialState.PRUNED, TrialState.FAIL))
    errors = sorted({t.user_attrs.get("error", "") for t in trials} - {""})[:3]
    if fallback is None:
        raise NoSuccessfulTrialsError(
            f"None of {len(trials)} trials finished and the fallback model failed. First errors: {errors}"
        )
    member = fallback.estimators[0]
    name = type(member[-1] if hasattr(member, "steps") else member).__name__  # a pipeline's model, or a dummy
    warn_user(
        f"None of {len(trials)} started trials finished (first errors: {errors or 'none'}); the model "
        f"is the fallback, a {name}. Raise time_budget or n_trials.", UserWarning
    )
    return fallback
