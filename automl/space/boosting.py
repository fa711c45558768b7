"""LightGBM that stops early on an inner split of its training rows, as HistGradientBoosting does.

The number of trees a table needs grows with its rows: LightGBM's defaults (31 leaves, learning rate 0.1)
stopped after 234 trees on 72,000 rows and 657 on 720,000 rows of the generated tuning tables, so a
searched count of 16 to 1,024 trees either underfits large data or pays for trees it does not need.
Stopping on held-back rows bounds the count instead (LightGBM's ``early_stopping`` callback; the split is
scikit-learn's ``HistGradientBoosting`` rule: 10% of the rows, stratified for a classifier; on a holdout
search's rung, the last 10%, read in place: see :mod:`automl.space.stopping`).

Imported only when such a model is built: LightGBM is optional.
"""

import inspect

import numpy as np
from lightgbm import LGBMClassifier, LGBMModel, LGBMRegressor, early_stopping
from sklearn.model_selection import train_test_split
from sklearn.utils import _safe_indexing

from .stopping import VALIDATION_FRACTION, tail_start
# Rounds without a better validation loss before the boosting stops.
STOPPING_ROUNDS = 50
# LightGBM 4.7 takes the validation rows as eval_X / eval_y and deprecates eval_set; 4.0 knows only eval_set.
_EVAL_X = "eval_X" in inspect.signature(LGBMModel.fit).parameters


def inner_split(y, seed, classification):
    """Row positions ``(train, validation)`` of an early-stopping split of ``y``, shape (n_samples,).

    For a classifier the split is stratified on the classes of two rows or more; a class of one row
    stays in the training part, so that the model knows every class it was given (a holdout search's
    smallest rungs may hold a rare class once).
    """
    rows = np.arange(len(y))
    if not classification:
        return train_test_split(rows, test_size=VALIDATION_FRACTION, random_state=seed)
    labels, counts = np.unique(y, return_counts=True)
    single = np.isin(y, labels[counts < 2])
    try:
        train, validation = train_test_split(rows[~single], test_size=VALIDATION_FRACTION, random_state=seed,
                                             stratify=y[~single])
    except ValueError:  # more classes than validation rows: a plain split, the classes kept as above
        train, validation = train_test_split(rows[~single], test_size=VALIDATION_FRACTION, random_state=seed)
    return np.concatenate([train, rows[single]]), validation


class _StopsEarly:
    """The ``fit`` of both early-stopped classes; ``_stratified`` says whether the split is stratified."""

    _stratified = True

    def fit(self, X, y, sample_weight=None, *, rows_shuffled=False):
        """Fit on 90% of the rows of ``X`` (n_samples, n_features) and ``y`` (n_samples,), stopping on the rest.

        The rest is an :func:`inner_split`, or with ``rows_shuffled`` the last rows
        (:func:`automl.space.stopping.tail_start`), taken as slices.

        Raises
        ------
        ValueError
            From LightGBM, or from scikit-learn's ``train_test_split`` when the rows are too few to split.
        """
        y = np.asarray(y)
        start = tail_start(y, self._stratified) if rows_shuffled else None
        if start is None:
            train, validation = inner_split(y, self.random_state, self._stratified)
        else:
            train, validation = slice(None, start), slice(start, None)
        X_val, y_val = _safe_indexing(X, validation), y[validation]
        evaluation = {"eval_X": (X_val,), "eval_y": (y_val,)} if _EVAL_X else {"eval_set": [(X_val, y_val)]}
        weights = {}
        if sample_weight is not None:  # the stopping rows are weighed as the training rows are
            sample_weight = np.asarray(sample_weight)
            weights = {"sample_weight": sample_weight[train], "eval_sample_weight": [sample_weight[validation]]}
        return super().fit(_safe_indexing(X, train), y[train],
                           callbacks=[early_stopping(STOPPING_ROUNDS, verbose=False)], **evaluation, **weights)


class EarlyStoppingLGBMClassifier(_StopsEarly, LGBMClassifier):
    """``lightgbm.LGBMClassifier`` whose ``fit`` stops on an inner :data:`VALIDATION_FRACTION` of the rows.

    ``n_estimators`` is the most trees it may grow; ``best_iteration_`` is where it stopped, and the
    model keeps the trees up to it (LightGBM's rule). The other parameters are LightGBM's.
    """


class EarlyStoppingLGBMRegressor(_StopsEarly, LGBMRegressor):
    """``lightgbm.LGBMRegressor`` whose ``fit`` stops on an inner :data:`VALIDATION_FRACTION` of the rows.

    As :class:`EarlyStoppingLGBMClassifier`; the split is not stratified.
    """

    _stratified = False
