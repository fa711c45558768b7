"""automl: full-pipeline AutoML for tabular data, with ensembling, measured honestly.

``AutoClassifier().fit(X, y)`` (``AutoRegressor`` for a numeric target) searches imputer -> scaler ->
encoder -> model family -> hyperparameters with Optuna (TPE + Hyperband), logs every trial to MLflow,
and returns a scikit-learn estimator that soft-votes the pipelines chosen by Caruana ensemble selection.

Importing the package is light: the estimator module (and scikit-learn, Optuna) load on first use,
and MLflow only when tracking starts.
"""

import importlib

__version__ = "0.1.0"
__all__ = ["AutoClassifier", "AutoRegressor", "load", "nested_cv", "__version__"]

_LAZY = {"AutoClassifier": "estimator", "AutoRegressor": "regressor", "load": "persistence", "nested_cv": "nested_cv"}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'automl' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    # Importing automl.nested_cv binds the package attribute to the submodule: rebind it to the
    # function, or the second `automl.nested_cv` would be the module.
    globals()[name] = value
    return value
