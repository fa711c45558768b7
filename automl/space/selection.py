"""Column selection for wide tables: the numeric columns of highest univariate score.

A table of thousands of columns makes every tree model's fit cost grow with its width (a default
histogram GBM on 3,375 rows x 3,000 columns took 43 s on one core), so that no trial finishes in a
short budget. Keeping the ``k`` columns of highest F-statistic is cheap (0.05 s there) and, fitted
inside the pipeline, it sees only each fold's training rows: choosing columns on all rows before
the folds would leak the validation rows' labels into the choice (Hastie, Tibshirani and Friedman,
*The Elements of Statistical Learning*, 2nd ed., section 7.10.2).
"""

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.feature_selection import SelectorMixin, f_classif, f_regression
from sklearn.utils.validation import check_is_fitted, validate_data

# From this many numeric columns the search offers the selection (``select`` in the tree); under it
# the tree is the one of narrow tables, unchanged (the shared datasets have at most 60 columns).
WIDE_MIN_COLUMNS = 200
# Bounds of the searched count, and the count of the starting configurations on a wide table: about
# one second per fold of a default histogram GBM on 3,375 rows (docs/benchmarks.md, "eighth step").
MIN_KEPT, PORTFOLIO_KEPT = 16, 128


class TopColumns(SelectorMixin, BaseEstimator):
    """Keep the ``k`` columns of highest univariate F-statistic against the target.

    The F-statistic is scikit-learn's :func:`~sklearn.feature_selection.f_classif` (one-way ANOVA
    across the classes) or :func:`~sklearn.feature_selection.f_regression` (from the correlation
    with a numeric target), computed with each missing value replaced by its column's mean, so that
    families that read NaN themselves keep their NaN after the selection. Unlike scikit-learn's
    ``SelectKBest``, missing values are accepted.

    Parameters
    ----------
    k : int, default=128
        Columns kept; all of them when ``k`` is at least the number of columns.
    task : {"classification", "regression"}, default="classification"
        Which F-statistic scores the columns.

    Attributes
    ----------
    scores_ : ndarray of shape (n_features_in_,)
        The F-statistic of each column; ``-inf`` where it is undefined (a constant column, or one
        missing on every row): such a column is kept last.
    support_ : ndarray of bool, shape (n_features_in_,)
        The kept columns.
    n_features_in_ : int
        Columns seen in ``fit``.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 50)
    >>> X = np.column_stack([rng.normal(size=100), y + rng.normal(0, 0.3, 100), rng.normal(size=100)])
    >>> TopColumns(k=1).fit(X, y).get_support().tolist()
    [False, True, False]
    """

    def __init__(self, k=PORTFOLIO_KEPT, task="classification"):
        self.k = k
        self.task = task

    def fit(self, X, y):
        """Score every column on ``X`` and ``y`` and keep the ``k`` best (ties: the leftmost).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Numbers; NaN allowed.
        y : array-like of shape (n_samples,)
            Class labels, or a numeric target when ``task="regression"``.

        Returns
        -------
        self : TopColumns
        """
        X, y = validate_data(self, X, y, dtype=float, ensure_all_finite="allow-nan")
        missing = np.isnan(X)
        if missing.any():
            seen = (~missing).sum(axis=0)
            means = np.divide(np.nansum(X, axis=0), seen, out=np.zeros(X.shape[1]), where=seen > 0)
            X = np.where(missing, means, X)
        score = f_regression if self.task == "regression" else f_classif
        with np.errstate(all="ignore"):
            self.scores_ = np.nan_to_num(score(X, y)[0], nan=-np.inf)
        kept = np.argsort(-self.scores_, kind="stable")[: max(1, int(self.k))]
        self.support_ = np.zeros(X.shape[1], dtype=bool)
        self.support_[kept] = True
        return self

    def _get_support_mask(self):
        check_is_fitted(self, "support_")
        return self.support_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags


def suggest_selection(trial, n_numeric, task):
    """The ``select`` step of a numeric chain, or None when the table is narrow or all is kept.

    Parameters
    ----------
    trial : optuna.trial.Trial or optuna.trial.FixedTrial
    n_numeric : int
        Numeric columns the chain receives.
    task : {"classification", "regression"}

    Returns
    -------
    step : (str, TopColumns) or None
        ``("select", TopColumns(k))`` with ``k`` searched on a log scale in
        [:data:`MIN_KEPT`, ``n_numeric``], when ``n_numeric >= WIDE_MIN_COLUMNS`` and the trial chose
        ``select="top"``.
    """
    if n_numeric < WIDE_MIN_COLUMNS or trial.suggest_categorical("select", ["all", "top"]) == "all":
        return None
    k = trial.suggest_int("select.top.k", MIN_KEPT, n_numeric, log=True)
    return ("select", TopColumns(k=k, task="regression" if task == "regression" else "classification"))
