"""What every trial of one search shares, made once from the user's data: :func:`prepare_search`.

The fit (:mod:`automl.estimators`) and a joining worker (:mod:`automl.search.worker`) both call it,
so a worker given the same data and settings rebuilds the very folds, families and metric of the
fit, and proves it by the same ``search_key``.
"""

from typing import NamedTuple

import numpy as np

from ..data import check_training_data
from ..exceptions import DataValidationError, warn_user
from ..space import resolve_components
from .objective import rung_order, search_key
from .scoring import get_metric
from .splits import holdout_split, make_folds, n_splits_of, time_order


class SearchSetup(NamedTuple):
    """What one search is made of (see :func:`prepare_search`)."""

    X: object  # validated DataFrame of shape (n_samples, n_features)
    y: np.ndarray  # encoded target of shape (n_samples,)
    folds: list  # (train_index, test_index) pairs shared by every trial
    specs: list  # ComponentSpecs on offer
    metric: object  # scoring.Metric
    seed: int
    profile: object  # data.DatasetProfile
    search_key: str  # digest of the data, folds and metric (objective.search_key)
    validation: str = "cv"  # "cv" (k folds) or "holdout" (one fold, rows as Hyperband's resource)
    groups: object = None  # group codes of shape (n_samples,) (data.check_groups), or None
    time_column: object = None  # the column that orders the rows of a time-ordered search, or None
    time_ordered: bool = False  # cv="time", or a time_column: every validated row later than its training rows
    sample_weight: object = None  # row weights of shape (n_samples,), mean 1 (data.weights), or None


# validation="auto" holds out rows instead of k-fold CV from this many rows, or this many cells
# (rows x columns), at any budget: FLAML's switch (its CV_HOLDOUT_THRESHOLD and SMALL_LARGE_THRES,
# flaml/automl/automl.py).
HOLDOUT_MIN_ROWS = 100_000
HOLDOUT_MIN_CELLS = 10_000_000
# Under a time budget also from HOLDOUT_BUDGET_MIN_ROWS rows (so that the holdout holds 2,000 rows or more)
# once the cells reach HOLDOUT_BUDGET_MIN_CELLS and HOLDOUT_CELLS_PER_SECOND per second of budget: where
# CV would leave too few trials. The per-second rate is FLAML's (its switch scales with the budget: 10M
# cells an hour, less 10%), which alone would hold out bank-marketing at 60 s; the floor is measured on
# tuning tables (docs/benchmarks.md, "Large tables, second step"): on 80,000 x 30 cells a holdout beat 5-fold
# CV by 0.0036 ROC AUC at 60 s (a tie at 300 s), on 18,750 x 30 CV won by 0.0037 at 60 s, and on
# bank-marketing's 30,891 x 20 by 0.0018.
HOLDOUT_BUDGET_MIN_ROWS = 20_000
HOLDOUT_BUDGET_MIN_CELLS = 1_500_000
HOLDOUT_CELLS_PER_SECOND = 2_500
# The holdout's share of the rows (FLAML's split_ratio default), at most HOLDOUT_MAX_ROWS rows: beyond
# that the ranking of trials is as sure (the standard error of a ROC AUC on 100,000 rows is about
# 0.001) and every rung would pay to predict more rows.
HOLDOUT_SHARE = 0.1
HOLDOUT_MAX_ROWS = 100_000
# A holdout asked for on fewer rows than this is warned about: with 1,000 rows a ROC AUC near 0.8 has a
# standard error of about 0.015 (Hanley and McNeil, 1982), more than most differences between trials.
HOLDOUT_WARN_ROWS = 1_000
# An automatic holdout needs as many rows as make its share HOLDOUT_WARN_ROWS: a wide table of 3,750 rows x
# 3,000 columns passes HOLDOUT_MIN_CELLS, and its 375 held-out rows would have drawn the warning above.
HOLDOUT_AUTO_MIN_ROWS = round(HOLDOUT_WARN_ROWS / HOLDOUT_SHARE)


def prepare_search(X, y, *, task="classification", metric=None, cv=5, random_state=None, include=None,
                   components=(), validation="auto", time_budget=None, groups=None, time_column=None,
                   sample_weight=None):
    """Validate ``X, y`` and make what every trial of the search shares: data, folds, families, metric, seed.

    Parameters
    ----------
    X : {DataFrame, array-like} of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    task : {"classification", "regression"}, default="classification"
    metric : str or None, default=None
        A name of :mod:`automl.search.scoring`; None: the task's default.
    cv : int, "time" or CV splitter, default=5
        An int makes ``StratifiedKFold`` (``KFold`` for regression), shuffled with the seed, or with
        ``groups`` ``StratifiedGroupKFold`` (``GroupKFold``) (:func:`automl.search.splits.default_splitter`).
        ``"time"`` makes ``TimeSeriesSplit(5)`` on the rows in time order (``time_column``, else as given).
        A splitter's ``split(X, y, groups)`` is called on the validated rows, in time order when
        ``time_column`` is given. A splitter of one split is a holdout (rows become Hyperband's resource).
    random_state : int or None, default=None
        The seed of the folds and of every trial; None draws one.
    include : list of str or None, default=None
        Model families to keep (:func:`automl.space.resolve_components`).
    components : sequence of ComponentSpec, default=()
        User families added to the registry.
    validation : {"auto", "cv", "holdout"}, default="auto"
        "holdout" scores every trial on one seeded, stratified holdout of :data:`HOLDOUT_SHARE` of the
        rows (at most :data:`HOLDOUT_MAX_ROWS`), ``cv`` unused; "auto" does so for an int ``cv`` from
        :data:`HOLDOUT_MIN_ROWS` rows or :data:`HOLDOUT_MIN_CELLS` cells, as FLAML does (the cells on
        :data:`HOLDOUT_AUTO_MIN_ROWS` rows or more), and under a
        ``time_budget`` from :data:`HOLDOUT_BUDGET_MIN_ROWS` rows once the cells reach both
        :data:`HOLDOUT_BUDGET_MIN_CELLS` and :data:`HOLDOUT_CELLS_PER_SECOND` per second of it: where
        k-fold CV would leave too few trials.
    time_budget : float or None, default=None
        Seconds of the fit, for ``validation="auto"``; None: no budget, the size alone decides.
    groups : array-like of shape (n_samples,) or None, default=None
        A group label per row (a patient, a customer): the folds, or the holdout
        (``GroupShuffleSplit``), keep each group on one side.
    time_column : str or None, default=None
        A numeric or datetime column of ``X`` that orders the rows for ``cv="time"`` or a splitter
        (:mod:`automl.search.splits`); a holdout is then the newest rows. It stays a feature.
    sample_weight : array-like of shape (n_samples,) or None, default=None
        A weight per row (:func:`automl.data.check_sample_weight`), rescaled to a mean of 1: every
        trial's models are fitted with it and its scores weighted; families that take no weights are
        left out (:func:`automl.space.resolve_components`). The folds do not depend on it.

    Returns
    -------
    setup : SearchSetup
        ``(X, y, folds, specs, metric, seed, profile, search_key, validation, groups, time_column,
        time_ordered, sample_weight)``: the validated frame,
        the encoded target of shape (n_samples,), the folds as (train, test) index pairs (one pair for
        a holdout), and the rest. A holdout's rows are stored re-ordered, the training part first in
        its rungs' order (:func:`automl.search.objective.rung_order`), then the holdout's rows; every
        row is kept. ``groups`` holds the group codes in the same order, or None; ``sample_weight`` the
        rescaled weights in the same order, or None.

    Raises
    ------
    DataValidationError
        If ``X``, ``y``, ``groups`` or ``sample_weight`` is unusable (:func:`automl.data.check_training_data`),
        ``groups`` has fewer groups than an int ``cv`` has folds, or a fold's training or validation rows
        all weigh 0.
    ValueError
        For an unknown metric or family key, when no family is left for the data, when ``cv`` is
        a splitter that needs groups and none are given, when ``time_column`` comes with an int ``cv``
        (shuffled folds would ignore it), or when time order and groups are asked for together.

    Warns
    -----
    UserWarning
        When a holdout holds fewer than :data:`HOLDOUT_WARN_ROWS` rows (only a forced one can).
    """
    time_ordered = _check_order(cv, groups, time_column)
    auto = validation == "auto" and (isinstance(cv, int) or cv == "time")
    # A holdout needs two rows of a class (one on each side, see _every_class_in); a class rarer than that is
    # dropped. The data's shape before validation tells an automatic holdout already, so that the check does
    # not warn of classes rarer than cv folds the search will not use.
    shape = getattr(X, "shape", None)  # not np.shape: an array-like may refuse NumPy's functions
    likely = auto and shape is not None and len(shape) == 2 and _holdout_pays(shape[0], shape[1], time_budget)
    n_folds = 2 if validation == "holdout" or likely else n_splits_of(cv, groups)
    checked = check_training_data(X, y, n_folds=n_folds, task=task, groups=groups, sample_weight=sample_weight)
    (X_clean, y_enc, _, profile), (groups, weights) = checked[:4], (checked[4:] if len(checked) > 4 else (None, None))
    holdout = validation == "holdout" or (auto and _holdout_pays(profile.n_samples, profile.n_features, time_budget))
    metric = get_metric(metric, profile.n_classes)
    specs = resolve_components(include, components, profile, weighted=weights is not None)
    seed = random_state if random_state is not None else int(np.random.default_rng().integers(2**31 - 1))
    order = time_order(X_clean, time_column, profile) if time_ordered else None
    if holdout:
        share = min(HOLDOUT_SHARE, HOLDOUT_MAX_ROWS / len(y_enc))
        folds = holdout_split(X_clean, y_enc, seed, task, share, groups, order)
    else:
        folds = make_folds(cv, X_clean, y_enc, seed, task, groups, order)
    _check_fold_weights(folds, weights)
    key = search_key(profile.fingerprint, folds, metric.name, weights)  # of the user's rows, before a holdout's layout
    if holdout and len(folds[0][1]) < HOLDOUT_WARN_ROWS:
        warn_user(f"validation='holdout' on {len(y_enc):,} rows scores every trial on {len(folds[0][1]):,} "
                  "held-out rows only: their scores are noisy enough to pick the wrong trials. "
                  "validation='cv' scores every row.", UserWarning)
    if len(folds) == 1:  # a holdout, or a user's splitter of one split
        order, folds = _in_rung_order(y_enc, folds[0], seed, task)
        X_clean, y_enc = X_clean.iloc[order].reset_index(drop=True), y_enc[order]
        groups = None if groups is None else groups[order]
        weights = None if weights is None else weights[order]
    return SearchSetup(X_clean, y_enc, folds, specs, metric, seed, profile, key,
                       "holdout" if len(folds) == 1 else "cv", groups, time_column, time_ordered, weights)


def _check_order(cv, groups, time_column):
    """Whether the search is time-ordered; refuses a time column that the folds would ignore."""
    if time_column is not None and isinstance(cv, int):
        raise ValueError(f"time_column={time_column!r} orders the rows for cv='time' (or a splitter such as "
                         f"TimeSeriesSplit); cv={cv} makes shuffled folds, which would ignore it.")
    time_ordered = cv == "time" or time_column is not None
    if time_ordered and groups is not None:
        raise ValueError("Time order and groups together are not supported yet: give one of cv='time' "
                         "(or time_column) and groups.")
    return time_ordered


def _check_fold_weights(folds, weights):
    """Refuse folds whose training or validation rows all weigh 0: no model, or no score, would come of them."""
    if weights is None:
        return
    for number, (train, test) in enumerate(folds):
        for part, rows in (("training", train), ("validation", test)):
            if not weights[rows].any():
                raise DataValidationError(
                    f"Every {part} row of fold {number} has sample_weight 0: nothing would be "
                    f"{'learnt' if part == 'training' else 'scored'} there. Give those rows weight, or other folds.")


def _holdout_pays(rows, columns, time_budget):
    """Whether ``validation="auto"`` holds out rows: a large table, or one too large for CV in the budget."""
    cells = rows * columns
    if rows >= HOLDOUT_MIN_ROWS or (cells >= HOLDOUT_MIN_CELLS and rows >= HOLDOUT_AUTO_MIN_ROWS):
        return True
    return (time_budget is not None and rows >= HOLDOUT_BUDGET_MIN_ROWS
            and cells >= max(HOLDOUT_BUDGET_MIN_CELLS, HOLDOUT_CELLS_PER_SECOND * time_budget))


def _in_rung_order(y, fold, seed, task):
    """The rows' new order and the holdout as re-laid: the training rows first, in :func:`rung_order`, then the
    holdout's, then any row a user's splitter left out of both (kept: the fallback and the checks read every row).

    Every rung is then the first rows, a slice that each trial reads from the shared file in place (an
    index array would copy 720,000 rows x 30 columns into every rung of 1M rows, about 100 MB). Only the
    search sees this order: the fit's models and scores do not depend on where a row is stored.
    """
    train, test = fold
    rest = np.setdiff1d(np.arange(len(y)), np.concatenate([train, test]))
    order = np.concatenate([rung_order(train, y, seed, task != "regression"), test, rest])
    n_train, n_test = len(train), len(test)
    return order, [(np.arange(n_train), np.arange(n_train, n_train + n_test))]
