"""The rows a boosting model stops early on: a seeded split of its training rows, or their last tenth.

HistGradientBoosting, and our early-stopped LightGBM (:mod:`automl.space.boosting`), hold back
:data:`VALIDATION_FRACTION` of their training rows and stop when the loss there stops improving. A
seeded split draws those rows and copies both parts. A holdout search's rung is the first rows of a
frame stored in a seeded, stratified random order (:func:`automl.search.objective.rung_order`), so
its last tenth is as random a sample as the split's, and slices of it are views, not copies. On
720,000 rows of synthetic-1m (2 threads) that took the default HGB's peak above its start from 482 to
387 MB, and LightGBM's from 325 to 228 MB (docs/benchmarks.md, "Large tables, ninth step"). The
objective says so with the fit parameter ``rows_shuffled=True``
(:func:`automl.space.pipeline.fit_quietly`). Under CV a fold's rows keep the user's order (perhaps
by time, or sorted by the label), so there the seeded split stays.
"""

import math

import numpy as np
from sklearn.base import is_classifier
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.utils import _safe_indexing

# Share of the rows held back to stop on (HistGradientBoosting's validation_fraction).
VALIDATION_FRACTION = 0.1


def tail_start(y, classification, fraction=VALIDATION_FRACTION):
    """Where the stopping rows start when they are the last ``fraction`` of ``y``, or None.

    As many rows as ``train_test_split`` would hold back (``ceil(fraction * n_samples)``). None when
    ``y`` (shape (n_samples,)) has fewer than 2 rows, or, for a classifier, when a class of the last
    rows is missing from the first: the model would not know a label it is scored on (a holdout
    search's smallest rungs may hold a rare class once). The caller then splits as before.
    """
    y = np.asarray(y)
    start = len(y) - math.ceil(fraction * len(y))
    if start < 1:
        return None
    if classification and not np.isin(np.unique(y[start:]), np.unique(y[:start])).all():
        return None
    return start


class _StopsOnLastRows:
    """``fit`` that, given ``rows_shuffled=True``, stops on the last rows instead of HGB's own split."""

    def fit(self, X, y, sample_weight=None, *, rows_shuffled=False):
        """Fit on ``X`` (n_samples, n_features) and ``y`` (n_samples,), stopping on the last rows if told so.

        With ``rows_shuffled``, early stopping on and a float ``validation_fraction``, the last
        ``validation_fraction`` of the rows (:func:`tail_start`) are the stopping rows, passed as
        ``X_val`` and ``y_val``; otherwise HistGradientBoosting's own seeded split.

        Raises
        ------
        ValueError
            From scikit-learn's ``fit``.
        """
        # early_stopping="auto" is left to scikit-learn, which turns it on for any X_val; with a fraction
        # of None it stops on the training loss, and an int is a row count.
        stops = (not isinstance(self.early_stopping, str) and bool(self.early_stopping)
                 and isinstance(self.validation_fraction, float))
        start = tail_start(y, is_classifier(self), self.validation_fraction) if rows_shuffled and stops else None
        if start is None:
            return super().fit(X, y, sample_weight=sample_weight)
        head, tail = slice(None, start), slice(start, None)
        y = np.asarray(y)
        weights = {} if sample_weight is None else {"sample_weight": np.asarray(sample_weight)[head],
                                                    "sample_weight_val": np.asarray(sample_weight)[tail]}
        return super().fit(_safe_indexing(X, head), y[head], X_val=_safe_indexing(X, tail), y_val=y[tail],
                           **weights)


class StoppingHGBClassifier(_StopsOnLastRows, HistGradientBoostingClassifier):
    """``sklearn.ensemble.HistGradientBoostingClassifier`` whose ``fit`` can stop on the last rows.

    Its parameters and fitted attributes are scikit-learn's; ``fit(..., rows_shuffled=True)`` is
    described in the module docstring. Without it the fit is scikit-learn's, unchanged.
    """


class StoppingHGBRegressor(_StopsOnLastRows, HistGradientBoostingRegressor):
    """``sklearn.ensemble.HistGradientBoostingRegressor`` whose ``fit`` can stop on the last rows.

    As :class:`StoppingHGBClassifier`.
    """
