"""Leak checks: on the data before the search, and on the chosen model after it.

A search optimizes a leak as eagerly as a signal. :mod:`~automl.checks.leakage` (ROC AUC, for a
classifier) and :mod:`~automl.checks.leakage_regression` (R^2 and Spearman correlation) look for
columns that know the target, identifiers and duplicated rows; :func:`check_before_search` runs the
task's check as ``fit`` does, and :func:`check_group_folds` whether the folds keep each group whole.
:mod:`~automl.checks.dominance` looks for one column carrying most of
the final model's permutation importance. Each returns a :class:`LeakageReport`.
"""

from .before_search import check_before_search, check_group_folds
from .dominance import check_in_time, check_model_dominance
from .leakage import LeakageReport, LeakFinding, check_data_leakage
from .leakage_regression import check_regression_leakage

__all__ = [
    "LeakFinding", "LeakageReport", "check_before_search", "check_group_folds", "check_data_leakage", "check_in_time",
    "check_model_dominance", "check_regression_leakage",
]
