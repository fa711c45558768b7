"""The record of a fit in MLflow, and the fitted model as an MLflow model folder.

:mod:`~automl.tracking.runs` logs a parent run per fit and a nested run per trial (an Optuna
callback); :mod:`~automl.tracking.mlflow_model` logs the fitted estimator as an MLflow model;
:mod:`~automl.tracking.persistence` saves and loads it as a folder with our manifest. Only these
modules import mlflow, and only inside functions: it costs about a second to import.
"""

from .mlflow_model import global_tracking_uri, input_example, log_model
from .persistence import (
    InconsistentVersionWarning, load, load_mlflow_model, model_signature, package_versions, read_manifest,
    refuse_non_empty, release_series, save,
)
from .runs import DEFAULT_EXPERIMENT_NAME, MLflowTracker, NullTracker, TrialLogger, make_tracker, read_run_json

__all__ = [
    "DEFAULT_EXPERIMENT_NAME", "InconsistentVersionWarning", "MLflowTracker", "NullTracker", "TrialLogger",
    "global_tracking_uri", "input_example", "load", "load_mlflow_model", "log_model", "make_tracker",
    "model_signature", "package_versions", "read_manifest", "read_run_json", "refuse_non_empty", "release_series",
    "save",
]
