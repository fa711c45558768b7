"""What every trial of one search shares, made once from the user's data: :func:`prepare_search`.

The fit (:mod:`automl.estimators`) and a joining worker (:mod:`automl.search.worker`) both call it,
so a worker given the same data and settings rebuilds the very folds, families and metric of the
fit, and proves it by the same ``search_key``.
"""

from typing import NamedTuple

import numpy as np
from sklearn.model_selection import KFold, ShuffleSplit, StratifiedKFold, StratifiedShuffleSplit

from ..data import check_training_data
from ..space import resolve_components
from .objective import search_key
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


# validation="auto" holds out rows instead of k-fold CV from this many rows, or this many cells
# (rows x columns): FLAML's switch (its CV_HOLDOUT_THRESHOLD and SMALL_LARGE_THRES, flaml/automl/automl.py).
HOLDOUT_MIN_ROWS = 100_000
HOLDOUT_MIN_CELLS = 10_000_000
# The holdout's share of the rows (FLAML's split_ratio default), at most HOLDOUT_MAX_ROWS rows: beyond
# that the ranking of trials is as sure (the standard error of a ROC AUC on 100,000 rows is about
# 0.001) and every rung would pay to predict more rows.
HOLDOUT_SHARE = 0.1
HOLDOUT_MAX_ROWS = 100_000


def prepare_search(X, y, *, task="classification", metric=None, cv=5, random_state=None, include=None,
                   components=(), validation="auto"):
    """Validate ``X, y`` and make what every trial of the search shares: data, folds, families, metric, seed.

    Parameters
    ----------
    X : {DataFrame, array-like} of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    task : {"classification", "regression"}, default="classification"
    metric : str or None, default=None
        A name of :mod:`automl.search.scoring`; None: the task's default.
    cv : int or CV splitter, default=5
        An int makes ``StratifiedKFold`` (``KFold`` for regression), shuffled with the seed. A
        splitter of one split is a holdout (rows become Hyperband's resource).
    random_state : int or None, default=None
        The seed of the folds and of every trial; None draws one.
    include : list of str or None, default=None
        Model families to keep (:func:`automl.space.resolve_components`).
    components : sequence of ComponentSpec, default=()
        User families added to the registry.
    validation : {"auto", "cv", "holdout"}, default="auto"
        "holdout" scores every trial on one seeded, stratified holdout of :data:`HOLDOUT_SHARE` of the
        rows (at most :data:`HOLDOUT_MAX_ROWS`), ``cv`` unused; "auto" does so for an int ``cv`` from
        :data:`HOLDOUT_MIN_ROWS` rows or :data:`HOLDOUT_MIN_CELLS` cells, as FLAML does.

    Returns
    -------
    setup : SearchSetup
        ``(X, y, folds, specs, metric, seed, profile, search_key, validation)``: the validated frame,
        the encoded target of shape (n_samples,), the folds as (train, test) index pairs (one pair for
        a holdout), and the rest.

    Raises
    ------
    DataValidationError
        If ``X`` or ``y`` is unusable (:func:`automl.data.check_training_data`).
    ValueError
        For an unknown metric or family key, or when no family is left for the data.
    """
    # A holdout needs two rows of a class (one on each side, see _every_class_in); a class rarer than that is dropped.
    n_folds = 2 if validation == "holdout" else cv if isinstance(cv, int) else cv.get_n_splits()
    X_clean, y_enc, _, profile = check_training_data(X, y, n_folds=n_folds, task=task)
    holdout = validation == "holdout" or (validation == "auto" and isinstance(cv, int) and _is_large(profile))
    metric = get_metric(metric, profile.n_classes)
    specs = resolve_components(include, components, profile)
    seed = random_state if random_state is not None else int(np.random.default_rng().integers(2**31 - 1))
    folds = _holdout(X_clean, y_enc, seed, task) if holdout else _make_folds(cv, X_clean, y_enc, seed, task)
    return SearchSetup(X_clean, y_enc, folds, specs, metric, seed, profile,
                       search_key(profile.fingerprint, folds, metric.name), "holdout" if len(folds) == 1 else "cv")


def _is_large(profile):
    rows = profile.n_samples
    return rows >= HOLDOUT_MIN_ROWS or rows * profile.n_features >= HOLDOUT_MIN_CELLS


def _make_folds(cv, X, y, seed, task):
    # One splitter, made once: every trial is scored on the same rows, so OOF arrays are comparable.
    splitter = cv
    if isinstance(splitter, int):
        kind = KFold if task == "regression" else StratifiedKFold
        splitter = kind(n_splits=cv, shuffle=True, random_state=seed)
    return list(splitter.split(X, y))


def _holdout(X, y, seed, task):
    """One (train, test) pair: a seeded holdout, stratified for classification, its rows sorted."""
    size = min(HOLDOUT_SHARE, HOLDOUT_MAX_ROWS / len(y))
    kind = ShuffleSplit if task == "regression" else StratifiedShuffleSplit
    train, test = next(kind(n_splits=1, test_size=size, random_state=seed).split(X, y))
    if task != "regression":
        train, test = _every_class_in(train, test, y)
    return [(np.sort(train), np.sort(test))]


def _every_class_in(train, test, y):
    """Move one training row of each class the holdout lacks into it (a stratified 10% of 2-5 rows is none):
    a class absent from the holdout is never scored, and a binary ROC AUC on one class is undefined."""
    missing = np.setdiff1d(np.unique(y[train]), np.unique(y[test]))
    if not len(missing):
        return train, test
    moved = np.array([train[np.flatnonzero(y[train] == label)[0]] for label in missing])
    return np.setdiff1d(train, moved), np.concatenate([test, moved])
