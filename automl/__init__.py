"""automl: full-pipeline AutoML for tabular data, with ensembling, measured honestly.

``AutoClassifier().fit(X, y)`` (``AutoRegressor`` for a numeric target) searches imputer -> scaler ->
encoder -> model family -> hyperparameters with Optuna (TPE + Hyperband), logs every trial to MLflow,
and returns a scikit-learn estimator that soft-votes the pipelines chosen by Caruana ensemble selection.

The subpackages follow the data through ``fit``: :mod:`automl.data` (X and y checked),
:mod:`automl.space` (what is searched), :mod:`automl.search` (the trials), :mod:`automl.ensemble`
(what is kept), :mod:`automl.checks` (leaks), assembled by :mod:`automl.estimators`; around the
fitted model, :mod:`automl.tracking` (MLflow, save and load), :mod:`automl.report` and
:mod:`automl.retraining`. ``docs/design.md`` draws the map.

Importing the package is light: the estimators (and scikit-learn, Optuna) load on first use, and
MLflow only when tracking starts.
"""

import importlib

from . import _flat_names

__version__ = "0.1.0"
__all__ = ["AutoClassifier", "AutoRegressor", "load", "nested_cv", "__version__"]

_LAZY = {"AutoClassifier": "estimators", "AutoRegressor": "estimators", "load": "tracking",
         "nested_cv": "estimators"}

_flat_names.install()  # models saved by the flat layout name its modules


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'automl' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    globals()[name] = value  # looked up once
    return value
