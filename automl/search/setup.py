"""What every trial of one search shares, made once from the user's data: :func:`prepare_search`.

The fit (:mod:`automl.estimators`) and a joining worker (:mod:`automl.search.worker`) both call it,
so a worker given the same data and settings rebuilds the very folds, families and metric of the
fit, and proves it by the same ``search_key``.
"""

from typing import NamedTuple

import numpy as np
from sklearn.model_selection import (
    GroupKFold, GroupShuffleSplit, KFold, ShuffleSplit, StratifiedGroupKFold, StratifiedKFold, StratifiedShuffleSplit,
)

from ..data import check_training_data
from ..exceptions import DataValidationError, warn_user
from ..space import resolve_components
from .objective import rung_order, search_key
from .scoring import get_metric


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
                   components=(), validation="auto", time_budget=None, groups=None):
    """Validate ``X, y`` and make what every trial of the search shares: data, folds, families, metric, seed.

    Parameters
    ----------
    X : {DataFrame, array-like} of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    task : {"classification", "regression"}, default="classification"
    metric : str or None, default=None
        A name of :mod:`automl.search.scoring`; None: the task's default.
    cv : int or CV splitter, default=5
        An int makes ``StratifiedKFold`` (``KFold`` for regression), shuffled with the seed, or with
        ``groups`` ``StratifiedGroupKFold`` (``GroupKFold``) (:func:`default_splitter`). A splitter's
        ``split(X, y, groups)`` is called on the validated rows. A splitter of one split is a holdout
        (rows become Hyperband's resource).
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

    Returns
    -------
    setup : SearchSetup
        ``(X, y, folds, specs, metric, seed, profile, search_key, validation, groups)``: the validated frame,
        the encoded target of shape (n_samples,), the folds as (train, test) index pairs (one pair for
        a holdout), and the rest. A holdout's rows are stored re-ordered, the training part first in
        its rungs' order (:func:`automl.search.objective.rung_order`), then the holdout's rows; every
        row is kept. ``groups`` holds the group codes in the same order, or None.

    Raises
    ------
    DataValidationError
        If ``X``, ``y`` or ``groups`` is unusable (:func:`automl.data.check_training_data`), or
        ``groups`` has fewer groups than an int ``cv`` has folds.
    ValueError
        For an unknown metric or family key, when no family is left for the data, or when ``cv`` is
        a splitter that needs groups and none are given.

    Warns
    -----
    UserWarning
        When a holdout holds fewer than :data:`HOLDOUT_WARN_ROWS` rows (only a forced one can).
    """
    auto = validation == "auto" and isinstance(cv, int)
    # A holdout needs two rows of a class (one on each side, see _every_class_in); a class rarer than that is
    # dropped. The data's shape before validation tells an automatic holdout already, so that the check does
    # not warn of classes rarer than cv folds the search will not use.
    shape = getattr(X, "shape", None)  # not np.shape: an array-like may refuse NumPy's functions
    likely = auto and shape is not None and len(shape) == 2 and _holdout_pays(shape[0], shape[1], time_budget)
    n_folds = 2 if validation == "holdout" or likely else cv if isinstance(cv, int) else cv.get_n_splits()
    checked = check_training_data(X, y, n_folds=n_folds, task=task, groups=groups)
    (X_clean, y_enc, _, profile), groups = checked[:4], (checked[4] if groups is not None else None)
    holdout = validation == "holdout" or (auto and _holdout_pays(profile.n_samples, profile.n_features, time_budget))
    metric = get_metric(metric, profile.n_classes)
    specs = resolve_components(include, components, profile)
    seed = random_state if random_state is not None else int(np.random.default_rng().integers(2**31 - 1))
    if holdout:
        folds = _holdout(X_clean, y_enc, seed, task, groups)
    else:
        folds = _make_folds(cv, X_clean, y_enc, seed, task, groups)
    key = search_key(profile.fingerprint, folds, metric.name)  # of the user's rows, before a holdout's layout
    if holdout and len(folds[0][1]) < HOLDOUT_WARN_ROWS:
        warn_user(f"validation='holdout' on {len(y_enc):,} rows scores every trial on {len(folds[0][1]):,} "
                  "held-out rows only: their scores are noisy enough to pick the wrong trials. "
                  "validation='cv' scores every row.", UserWarning)
    if len(folds) == 1:  # a holdout, or a user's splitter of one split
        order, folds = _in_rung_order(y_enc, folds[0], seed, task)
        X_clean, y_enc = X_clean.iloc[order].reset_index(drop=True), y_enc[order]
        groups = None if groups is None else groups[order]
    return SearchSetup(X_clean, y_enc, folds, specs, metric, seed, profile, key,
                       "holdout" if len(folds) == 1 else "cv", groups)


def default_splitter(task, n_splits, seed, grouped=False):
    """The folds an int ``cv`` stands for: shuffled, seeded, stratified for classification, grouped with groups.

    ``StratifiedKFold`` or ``KFold``; with groups scikit-learn's ``StratifiedGroupKFold`` (each class's
    share kept as near as whole groups allow) or ``GroupKFold`` (groups spread so the folds' sizes
    match), both shuffled with the seed.
    """
    if grouped:
        kind = GroupKFold if task == "regression" else StratifiedGroupKFold
    else:
        kind = KFold if task == "regression" else StratifiedKFold
    return kind(n_splits=n_splits, shuffle=True, random_state=seed)


def _holdout_pays(rows, columns, time_budget):
    """Whether ``validation="auto"`` holds out rows: a large table, or one too large for CV in the budget."""
    cells = rows * columns
    if rows >= HOLDOUT_MIN_ROWS or (cells >= HOLDOUT_MIN_CELLS and rows >= HOLDOUT_AUTO_MIN_ROWS):
        return True
    return (time_budget is not None and rows >= HOLDOUT_BUDGET_MIN_ROWS
            and cells >= max(HOLDOUT_BUDGET_MIN_CELLS, HOLDOUT_CELLS_PER_SECOND * time_budget))


def _make_folds(cv, X, y, seed, task, groups):
    # One splitter, made once: every trial is scored on the same rows, so OOF arrays are comparable.
    splitter = cv
    if isinstance(splitter, int):
        if groups is not None and groups.max() + 1 < cv:
            raise DataValidationError(f"groups has {groups.max() + 1} groups, fewer than the cv={cv} folds: "
                                      f"give cv={max(2, groups.max() + 1)} or fewer.")
        splitter = default_splitter(task, cv, seed, grouped=groups is not None)
    try:
        return list(splitter.split(X, y, groups))
    except ValueError as exc:
        if groups is None and "groups" in str(exc):
            raise ValueError(f"cv={splitter!r} splits by groups, and none were given: pass fit(X, y, groups=...), "
                             "a group label per row.") from exc
        raise


def _holdout(X, y, seed, task, groups=None):
    """One (train, test) pair: a seeded holdout, stratified for classification (whole groups with groups),
    its rows sorted."""
    size = min(HOLDOUT_SHARE, HOLDOUT_MAX_ROWS / len(y))
    if groups is not None:  # a share of the groups, not of the rows
        splitter = GroupShuffleSplit(n_splits=1, test_size=size, random_state=seed)
    else:
        kind = ShuffleSplit if task == "regression" else StratifiedShuffleSplit
        splitter = kind(n_splits=1, test_size=size, random_state=seed)
    train, test = next(splitter.split(X, y, groups))
    if task != "regression":
        train, test = _every_class_in(train, test, y, groups)
    return [(np.sort(train), np.sort(test))]


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


def _every_class_in(train, test, y, groups=None):
    """Move one training row of each class the holdout lacks into it (a stratified 10% of 2-5 rows is none),
    with its whole group when there are groups: a class absent from the holdout is never scored, and a
    binary ROC AUC on one class is undefined."""
    missing = np.setdiff1d(np.unique(y[train]), np.unique(y[test]))
    if not len(missing):
        return train, test
    moved = np.array([train[np.flatnonzero(y[train] == label)[0]] for label in missing])
    if groups is not None:
        moved = train[np.isin(groups[train], groups[moved])]
    return np.setdiff1d(train, moved), np.union1d(test, moved)
