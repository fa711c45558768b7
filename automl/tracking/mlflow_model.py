"""The fitted model as an MLflow model: signature, pinned requirements and our package's code.

Kept apart from :mod:`automl.tracking.runs` (runs and trials) because the same model description serves
logging to a run and, later, saving to a directory. Like the runs, it imports mlflow only
inside its functions.
"""

import contextlib
import os
import threading

from .persistence import _code_paths, _pip_requirements, model_signature

__all__ = ["global_tracking_uri", "input_example", "log_model"]


def input_example(X, n=5):
    """The first ``n`` rows of X as a DataFrame (arrays get columns ``x0, x1, ...``), stored with the model."""
    import numpy as np
    import pandas as pd

    if not isinstance(X, pd.DataFrame) and hasattr(X, "to_pandas") and hasattr(X, "columns"):
        return X.slice(0, n).to_pandas()  # polars or pyarrow, as automl.data reads them: by name
    return X.head(n) if isinstance(X, pd.DataFrame) else pd.DataFrame(np.asarray(X)[:n]).add_prefix("x")


def log_model(client, tracking_uri, experiment_id, run_id, model, input_example):
    """Log ``model`` as the MLflow model ``model`` of run ``run_id`` (sklearn flavour, cloudpickle).

    Parameters
    ----------
    client : MlflowClient
    tracking_uri : str
    experiment_id : str
    run_id : str
        The run the model is logged to; it gets the tag ``automl.model_uri``.
    model : estimator
        Fitted; ``predict`` takes a DataFrame.
    input_example : DataFrame of shape (n_examples, n_features) or None
        A few raw training rows; the signature is inferred from them, integer columns as double.

    Returns
    -------
    model_uri : str
        ``models:/<model_id>``.
    """
    import mlflow.sklearn
    from mlflow.models import infer_signature

    if hasattr(model, "profile_"):  # ours: the same signature as a saved folder, from the training dtypes
        signature = model_signature(model.profile_)
    else:
        signature = None if input_example is None else infer_signature(
            _schema_example(input_example), model.predict(input_example))
    # Made here, in our experiment and linked to our run, the LoggedModel need not be guessed
    # by log_model from MLflow's global active run, which worker processes do not share.
    logged = client.create_logged_model(experiment_id, name="model", source_run_id=run_id)
    with global_tracking_uri(tracking_uri):
        info = mlflow.sklearn.log_model(
            model, name="model", model_id=logged.model_id, run_id=run_id,
            signature=signature, input_example=input_example,
            # skops cannot save our estimator (it holds DataFrames such as leaderboard_), and
            # trying costs a full serialization per fit: cloudpickle, as MLflow did before 3.7.
            serialization_format="cloudpickle", code_paths=_code_paths(model),
            pip_requirements=_pip_requirements(),
        )
    client.set_tag(run_id, "automl.model_uri", info.model_uri)
    return info.model_uri


def _schema_example(input_example):
    """``input_example`` with integer columns as float64, to infer the model signature from."""
    # A signature column of type long rejects a served row missing that value, which the pipeline
    # would impute; double takes both (MLflow's advice for integer columns with missing values).
    from pandas.api.types import is_integer_dtype
    columns = [col for col, dtype in input_example.dtypes.items() if is_integer_dtype(dtype)]
    return input_example.astype({col: "float64" for col in columns})


@contextlib.contextmanager
def global_tracking_uri(tracking_uri):
    """Point MLflow's process-wide tracking URI at ``tracking_uri`` for the block only."""
    # mlflow.sklearn.log_model takes no client: it resolves its store from that global. And
    # set_tracking_uri also sets (or, given None, unsets) the environment variable.
    import mlflow
    previous = mlflow.get_tracking_uri() if mlflow.is_tracking_uri_set() else None
    with _environ_restored("MLFLOW_TRACKING_URI"):
        mlflow.set_tracking_uri(tracking_uri)
        try:
            yield
        finally:
            mlflow.set_tracking_uri(previous)


# Serialises the short-lived environment changes below, so threads cannot restore them out of order.
_ENVIRON_LOCK = threading.RLock()


@contextlib.contextmanager
def _environ_restored(name):
    """Put the environment variable ``name`` back as it was once the block ends."""
    with _ENVIRON_LOCK:
        previous = os.environ.get(name)
        try:
            yield
        finally:
            os.environ.pop(name, None)
            if previous is not None:
                os.environ[name] = previous
