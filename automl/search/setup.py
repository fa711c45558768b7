"""What every trial of one search shares, made once from the user's data: :func:`prepare_search`.

The fit (:mod:`automl.estimators`) and a joining worker (:mod:`automl.search.worker`) both call it,
so a worker given the same data and settings rebuilds the very folds, families and metric of the
fit, and proves it by the same ``search_key``.
"""

from typing import NamedTuple

import numpy as np
from sklearn.model_selection import KFold, StratifiedKFold

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


def prepare_search(X, y, *, task="classification", metric=None, cv=5, random_state=None, include=None,
                   components=()):
    """Validate ``X, y`` and make what every trial of the search shares: data, folds, families, metric, seed.

    Parameters
    ----------
    X : {DataFrame, array-like} of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
    task : {"classification", "regression"}, default="classification"
    metric : str or None, default=None
        A name of :mod:`automl.search.scoring`; None: the task's default.
    cv : int or CV splitter, default=5
        An int makes ``StratifiedKFold`` (``KFold`` for regression), shuffled with the seed.
    random_state : int or None, default=None
        The seed of the folds and of every trial; None draws one.
    include : list of str or None, default=None
        Model families to keep (:func:`automl.space.resolve_components`).
    components : sequence of ComponentSpec, default=()
        User families added to the registry.

    Returns
    -------
    setup : SearchSetup
        ``(X, y, folds, specs, metric, seed, profile, search_key)``: the validated frame, the encoded
        target of shape (n_samples,), the folds as (train, test) index pairs, and the rest.

    Raises
    ------
    DataValidationError
        If ``X`` or ``y`` is unusable (:func:`automl.data.check_training_data`).
    ValueError
        For an unknown metric or family key, or when no family is left for the data.
    """
    n_folds = cv if isinstance(cv, int) else cv.get_n_splits()
    X_clean, y_enc, _, profile = check_training_data(X, y, n_folds=n_folds, task=task)
    metric = get_metric(metric, profile.n_classes)
    specs = resolve_components(include, components, profile)
    seed = random_state if random_state is not None else int(np.random.default_rng().integers(2**31 - 1))
    folds = _make_folds(cv, X_clean, y_enc, seed, task)
    return SearchSetup(X_clean, y_enc, folds, specs, metric, seed, profile,
                       search_key(profile.fingerprint, folds, metric.name))


def _make_folds(cv, X, y, seed, task):
    # One splitter, made once: every trial is scored on the same rows, so OOF arrays are comparable.
    splitter = cv
    if isinstance(splitter, int):
        kind = KFold if task == "regression" else StratifiedKFold
        splitter = kind(n_splits=cv, shuffle=True, random_state=seed)
    return list(splitter.split(X, y))
