"""automl: full-pipeline AutoML for tabular data, with ensembling, measured honestly.

``AutoClassifier().fit(X, y)`` searches imputer -> scaler -> encoder -> model family ->
hyperparameters with Optuna (TPE + Hyperband), logs every trial to MLflow, and returns a
scikit-learn estimator that soft-votes the pipelines chosen by Caruana ensemble selection.

Importing the package is light: the estimator module (and scikit-learn, Optuna) load on first use,
and MLflow only when tracking starts.
"""

__version__ = "0.1.0"
__all__ = ["AutoClassifier", "load", "nested_cv", "__version__"]


def __getattr__(name):
    if name == "AutoClassifier":
        from .estimator import AutoClassifier

        return AutoClassifier
    if name == "load":
        from .persistence import load

        return load
    if name == "nested_cv":
        from .nested_cv import nested_cv

        return nested_cv
    raise AttributeError(f"module 'automl' has no attribute {name!r}")
