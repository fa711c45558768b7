"""AutoRegressor: the classifier's stages for a numeric target.

Only what the task decides differs, each in the stage that owns it: the target check
(:func:`automl.data.target.regression_target`), KFold instead of stratified folds, the metrics
(:data:`automl.search.scoring.REGRESSION_METRICS`), the families (:mod:`automl.space.regressors`) and a searched
target transform (:mod:`automl.space.pipeline`), the leak check (:mod:`automl.checks.leakage_regression`) and
the ensemble's weighted average (:class:`automl.ensemble.WeightedEnsembleRegressor`).
"""

import numpy as np
from sklearn.base import RegressorMixin

from ._docs import ATTRIBUTES_DOC, PARAMETERS_DOC
from .base import _AutoMLBase, tabular_tags


class AutoRegressor(RegressorMixin, _AutoMLBase):
    """Full-pipeline AutoML regressor: CASH search with TPE and Hyperband, then ensemble selection.

    As :class:`automl.AutoClassifier`, for a numeric target: every pipeline is scored by shuffled
    k-fold CV (RMSE by default), every finished trial's out-of-fold predictions are kept, and
    Caruana et al.'s (ICML 2004) greedy forward selection with replacement chooses the weights of
    an average of the refit pipelines. The target is standardized inside every pipeline, and for a
    non-negative, right-skewed target a ``log1p`` transform is a searched choice (scikit-learn's
    ``TransformedTargetRegressor``).
{parameters}
    Attributes
    ----------
{attributes}

    Examples
    --------
    >>> from sklearn.datasets import load_diabetes
    >>> X, y = load_diabetes(return_X_y=True, as_frame=True)
    >>> model = AutoRegressor(time_budget=None, n_trials=3, include=["ridge"], cv=3,
    ...                       tracking=False, verbose=0, random_state=0).fit(X, y)
    >>> model.metric_, model.predict(X.iloc[:2]).shape
    ('rmse', (2,))
    """

    _task = "regression"

    def _set_target(self, y):
        pass

    def predict(self, X):
        """The ensemble's weighted average of its members' predictions.

        Parameters
        ----------
        X : {DataFrame, array-like} of shape (n_samples, n_features)
            Columns are matched by name (order may differ; extra columns are ignored with a warning).

        Returns
        -------
        y_pred : ndarray of float64 of shape (n_samples,)

        Raises
        ------
        DataValidationError
            If a training column is missing (named in the message) or a value cannot be converted.
        NotFittedError
            If called before ``fit``.
        """
        X_clean = self._predict_data(X)  # checks that the model is fitted first
        return np.asarray(self.ensemble_.predict(X_clean), dtype=np.float64)

    def __sklearn_tags__(self):
        return tabular_tags(super().__sklearn_tags__(), self.random_state)


AutoRegressor.__doc__ = AutoRegressor.__doc__.format(parameters=PARAMETERS_DOC.rstrip("\n"),
                                                     attributes=ATTRIBUTES_DOC.strip("\n"))
