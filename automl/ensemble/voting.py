"""The fitted ensemble: weighted soft voting over sklearn pipelines.

Ensemble selection (:mod:`automl.ensemble.selection`) decides the weights on out-of-fold predictions; this module
turns those weights into an sklearn classifier that can be fit, cloned, pickled and used to predict.
"""

import logging

import numpy as np
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
from sklearn.utils import _safe_indexing
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_consistent_length, check_is_fitted, validate_data
from threadpoolctl import threadpool_limits

from ..search import threads_per_job
from ..space import weight_params

logger = logging.getLogger(__name__)

__all__ = ["WeightedEnsembleClassifier", "WeightedEnsembleRegressor"]

_FINAL_FIT_OPTIONS = ("refit", "bag")


class _WeightedEnsemble(BaseEstimator):
    """Fit and average weighted members; the classifier and the regressor say what is averaged."""

    def __init__(self, *, estimators, weights, final_fit="refit", cv=None, n_jobs=1):
        self.estimators = estimators
        self.weights = weights
        self.final_fit = final_fit
        self.cv = cv
        self.n_jobs = n_jobs

    def fit(self, X, y, sample_weight=None):
        """Fit the members with positive weight.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Training data, passed unchanged to the members (their pipelines do the preprocessing).
        y : array-like of shape (n_samples,)
            Integer-encoded class labels ``0 .. n_classes - 1`` (classifier), or the target values
            (regressor).
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Row weights, given to each member's model (a pipeline's last step,
            :func:`automl.space.weight_params`); a bagged member's fold models get their rows' weights.

        Returns
        -------
        self : estimator
            The fitted ensemble.

        Raises
        ------
        ValueError
            If a parameter is invalid (weights negative, all zero or of the wrong length; unknown
            ``final_fit``; missing or malformed ``cv`` for bagging) or y is not integer-encoded (classifier)
            or finite (regressor).
        TypeError
            If ``sample_weight`` is given and a member's model takes none.
        """
        kept, weights = self._check_weights()
        folds = self._check_cv()
        # skip_check_array: the members' pipelines must receive X as given (DataFrame, mixed dtypes).
        X, y = validate_data(self, X, y, skip_check_array=True)
        y = self._check_target(y)
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=np.float64)
        check_consistent_length(X, y, sample_weight)
        members = [self.estimators[i] for i in kept]
        rows = [None] if self.final_fit == "refit" else [train for train, _ in folds]
        # Each thread's fit may start its own OpenMP/BLAS pool: share the cores out between the
        # threads that have work (a single member gets them all). Each thread sets its own limit in
        # _fit_member (OpenMP's is per thread); this outer one makes BLAS's process-wide limit, which
        # those per-thread blocks restore on exit, the same value, whichever thread exits first.
        n_threads = min(self.n_jobs, len(members) * len(rows))
        threads = threads_per_job(n_threads)
        with threadpool_limits(limits=threads):
            fitted = Parallel(n_jobs=n_threads, prefer="threads")(
                delayed(_fit_member)(member, X, y, train, threads, sample_weight) for member in members
                for train in rows
            )
        if self.final_fit == "refit":
            self.estimators_ = fitted
        else:
            self.estimators_ = [fitted[i:i + len(rows)] for i in range(0, len(fitted), len(rows))]
        self.weights_ = weights
        self._set_target_attributes(y)
        return self

    def _average(self, X, predict):
        """Weighted average of ``predict(model, X)`` over the members (a bagged member: its fold models' mean)."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, skip_check_array=True)
        total = None
        for weight, fitted in zip(self.weights_, self.estimators_):
            models = fitted if isinstance(fitted, list) else [fitted]
            contribution = weight * (sum(predict(model, X) for model in models) / len(models))
            total = contribution if total is None else total + contribution
        return total

    def _check_weights(self):
        """Validate ``weights`` against ``estimators``.

        Returns
        -------
        kept : ndarray of shape (n_members,)
            Indices of the estimators with positive weight.
        weights : ndarray of shape (n_members,)
            Their weights, normalized to sum to 1.
        """
        n_estimators = len(self.estimators)
        if n_estimators == 0:
            raise ValueError(
                f"The 'estimators' parameter of {type(self).__name__} must be a non-empty list of "
                "estimators. Got an empty list instead."
            )
        weights = np.asarray(self.weights, dtype=float)
        if weights.ndim != 1 or weights.shape[0] != n_estimators:
            problem = f"one weight per estimator ({n_estimators})"
        elif not np.all(np.isfinite(weights)) or np.any(weights < 0):
            problem = "finite and non-negative"
        elif weights.sum() <= 0:
            problem = "not all zero"
        else:
            kept = np.flatnonzero(weights > 0)
            return kept, weights[kept] / weights[kept].sum()
        raise ValueError(
            f"The 'weights' parameter of {type(self).__name__} must be {problem}. "
            f"Got {np.asarray(self.weights).tolist()} instead."
        )

    def _check_cv(self):
        """Validate ``final_fit`` and, for bagging, ``cv``; return the list of folds (None for refit)."""
        if self.final_fit not in _FINAL_FIT_OPTIONS:
            raise ValueError(
                f"The 'final_fit' parameter of {type(self).__name__} must be one of "
                f"{list(_FINAL_FIT_OPTIONS)}. Got {self.final_fit!r} instead."
            )
        if self.final_fit == "refit":
            return None
        folds = list(self.cv) if isinstance(self.cv, (list, tuple)) else []
        if not folds or any(not isinstance(f, (list, tuple)) or len(f) != 2 for f in folds):
            raise ValueError(
                f"The 'cv' parameter of {type(self).__name__} must be a non-empty list of "
                f"(train_idx, test_idx) pairs when final_fit='bag'. Got {self.cv!r} instead."
            )
        return [(np.asarray(train), np.asarray(test)) for train, test in folds]


class WeightedEnsembleClassifier(ClassifierMixin, _WeightedEnsemble):
    """Weighted soft-voting ensemble of classifiers (usually sklearn Pipelines).

    The predicted probabilities are the weighted average of the members' probabilities. Members with
    weight 0 are not fit at all.

    Parameters
    ----------
    estimators : list of estimator
        Unfitted classifiers with ``fit`` and ``predict_proba``; each is cloned before fitting.
    weights : array-like of shape (n_estimators,)
        Non-negative weight of each estimator, with a positive sum. They are normalized to sum to 1;
        zeros are allowed and drop the estimator.
    final_fit : {"refit", "bag"}, default="refit"
        How members are fit. ``"refit"`` fits one clone of each member on all rows. ``"bag"`` fits one
        clone per fold of ``cv`` on that fold's training rows and averages their probabilities, as
        AutoGluon does with its fold models; no model then sees all rows, but none needs to be refit.
    cv : list of tuple of (ndarray, ndarray) or None, default=None
        The ``(train_idx, test_idx)`` pairs for ``final_fit="bag"``, usually the shared folds of the
        search. Only the training indices are used. Ignored when ``final_fit="refit"``.
    n_jobs : int, default=1
        Models fitted at once, in threads: scikit-learn, LightGBM and XGBoost release the GIL in
        their fit loops, and threads need no new process when the search's workers were stopped.

    Attributes
    ----------
    estimators_ : list of estimator, or list of list of estimator
        The fitted members with positive weight, in input order. With ``final_fit="bag"`` each entry is
        the list of that member's fold models, one per pair of ``cv``.
    weights_ : ndarray of shape (n_members,)
        Normalized weights of the members in ``estimators_``; they sum to 1.
    classes_ : ndarray of shape (n_classes,)
        ``np.arange(n_classes)``: the integer-encoded labels, ``n_classes = y.max() + 1``.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Names of the features seen during ``fit``; defined only when X has string column names.

    See Also
    --------
    automl.ensemble.selection.EnsembleSelection : Chooses the weights from out-of-fold predictions.

    Notes
    -----
    ``y`` must already be encoded as integers ``0 .. n_classes - 1``: the caller owns the label encoder.
    A fold model that never saw some class predicts probability 0 for it; its columns are aligned
    through its ``classes_``, so ``predict_proba`` always returns ``n_classes`` columns.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.model_selection import StratifiedKFold
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn.tree import DecisionTreeClassifier
    >>> from automl.ensemble import WeightedEnsembleClassifier
    >>> X, y = load_iris(return_X_y=True)
    >>> members = [make_pipeline(StandardScaler(), LogisticRegression()),
    ...            DecisionTreeClassifier(max_depth=3, random_state=0)]
    >>> ensemble = WeightedEnsembleClassifier(estimators=members, weights=[3, 1]).fit(X, y)
    >>> ensemble.weights_
    array([0.75, 0.25])
    >>> ensemble.predict_proba(X[:2]).shape
    (2, 3)
    >>> ensemble.predict(X[:2])
    array([0, 0])

    Bagging the fold models of three folds instead of refitting:

    >>> folds = list(StratifiedKFold(n_splits=3, shuffle=True, random_state=0).split(X, y))
    >>> bagged = WeightedEnsembleClassifier(
    ...     estimators=members, weights=[3, 1], final_fit="bag", cv=folds).fit(X, y)
    >>> [len(fold_models) for fold_models in bagged.estimators_]
    [3, 3]
    """

    def predict_proba(self, X):
        """Weighted average of the members' class probabilities.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Input data, with the columns seen in ``fit``.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Class probabilities in the order of ``classes_``, each in [0, 1]; each row sums to 1.
        """
        # Weights that sum to 1 in exact arithmetic can sum to 1 + 2**-52 in floats, and scikit-learn's
        # metrics reject a probability above 1 (seen on kc1: every member certain of the same class).
        return np.clip(self._average(X, self._aligned_proba), 0.0, 1.0)

    def predict(self, X):
        """Class with the highest weighted probability.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Input data, with the columns seen in ``fit``.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted integer-encoded labels, taken from ``classes_``.
        """
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]

    def _aligned_proba(self, model, X):
        """Probabilities of one fitted model, widened to all of ``classes_``.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Zero in the columns of classes the model never saw.
        """
        proba = model.predict_proba(X)
        model_classes = np.asarray(model.classes_)
        if len(model_classes) == len(self.classes_):
            return proba
        aligned = np.zeros((proba.shape[0], len(self.classes_)))
        # classes_ is arange(n_classes), so a label is its own column index.
        aligned[:, model_classes.astype(int)] = proba
        return aligned

    def _check_target(self, y):
        return _check_encoded_labels(y)

    def _set_target_attributes(self, y):
        self.classes_ = np.arange(int(y.max()) + 1)


class WeightedEnsembleRegressor(RegressorMixin, _WeightedEnsemble):
    """Weighted average of regressors' predictions (usually sklearn pipelines).

    Parameters and fitting are those of :class:`WeightedEnsembleClassifier`: members with weight 0
    are not fit, ``final_fit="bag"`` averages each member's fold models instead of refitting it.

    Attributes
    ----------
    estimators_ : list of estimator, or list of list of estimator
    weights_ : ndarray of shape (n_members,)
        Normalized weights of the members in ``estimators_``; they sum to 1.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (n_features_in_,)

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> from sklearn.linear_model import Ridge
    >>> from sklearn.tree import DecisionTreeRegressor
    >>> X, y = load_diabetes(return_X_y=True)
    >>> ensemble = WeightedEnsembleRegressor(
    ...     estimators=[Ridge(), DecisionTreeRegressor(max_depth=3, random_state=0)], weights=[1, 1]).fit(X, y)
    >>> ensemble.predict(X[:2]).shape
    (2,)
    """

    def predict(self, X):
        """Weighted average of the members' predictions.

        Parameters
        ----------
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            Input data, with the columns seen in ``fit``.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        return self._average(X, lambda model, X: np.asarray(model.predict(X), dtype=float))

    def _check_target(self, y):
        y = np.asarray(y, dtype=float)
        if y.ndim != 1 or not np.isfinite(y).all():
            raise ValueError(f"{type(self).__name__} expects a finite target of shape (n_samples,); got {y.shape}.")
        return y

    def _set_target_attributes(self, y):
        pass


def _check_encoded_labels(y):
    """Return y as an integer ndarray of shape (n_samples,); raise unless labels are ints >= 0."""
    y = np.asarray(y)
    check_classification_targets(y)
    if y.ndim != 1 or y.dtype.kind not in "iu" or (y.size and y.min() < 0):
        raise ValueError(
            "WeightedEnsembleClassifier expects y encoded as integers 0 .. n_classes - 1 "
            f"(encode the labels first); got an array of dtype {y.dtype} and shape {y.shape}."
        )
    return y


def _fit_member(member, X, y, rows=None, threads=None, sample_weight=None):
    """A fitted clone of ``member``, on all rows or on the given row indices, on at most ``threads`` threads,
    weighted when ``sample_weight`` is given."""
    # OpenMP's thread count is a per-thread setting: the limit of the thread that started the
    # Parallel does not reach joblib's threads, and two HistGradientBoosting fits each spinning
    # an OpenMP team on all cores took 4-5x their time (segment: 3.6 s for a 0.7 s refit).
    with threadpool_limits(limits=threads):
        if rows is None:
            return clone(member).fit(X, y, **weight_params(member, sample_weight))
        weights = None if sample_weight is None else sample_weight[rows]
        return clone(member).fit(_safe_indexing(X, rows), y[rows], **weight_params(member, weights))


