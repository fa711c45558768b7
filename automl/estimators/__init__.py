"""The estimators: ``fit`` prepares the search, checks for leaks, searches, builds the ensemble, checks the model.

:mod:`~automl.estimators.base` holds the fit both share; :class:`AutoClassifier` and
:class:`AutoRegressor` say what the task changes. :func:`nested_cv` fits a clone inside outer folds
to measure what the whole fit delivers on rows its search never saw.
"""

from .classifier import AutoClassifier
from .nested import QUANTITIES, NestedCVReport, nested_cv
from .regressor import AutoRegressor

__all__ = ["AutoClassifier", "AutoRegressor", "NestedCVReport", "QUANTITIES", "nested_cv"]
