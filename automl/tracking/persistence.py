"""Save and load a fitted model as an MLflow model directory, with our manifest beside it.

``save`` writes what ``mlflow.sklearn.save_model`` writes (an ``MLmodel`` file with the ``sklearn``
and ``python_function`` flavors, the pickled estimator, pinned requirements, our package's code)
plus ``manifest.json``: the format version, the library versions, the feature schema (names,
kinds, categories seen), the classes, the metric and the training data's fingerprint. The MLflow
signature is built from the same schema, so ``mlflow models serve`` checks served columns too.

``load`` reads the manifest first, so a format it does not know is refused and a version drift is
announced before anything is unpickled. Unpickling runs code from the file: **load only models
you trust** (the same holds for every pickle-based format, MLflow's included).

Folders written by automl 0.1's first format (``model.joblib`` beside the manifest) still load.
"""

import contextlib
import json
import logging
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

from ..data import class_counts_of

FORMAT_VERSION = 2
MANIFEST_FILE = "manifest.json"
LEGACY_MODEL_FILE = "model.joblib"  # format 1

__all__ = ["InconsistentVersionWarning", "load", "package_versions", "read_manifest", "save"]


class InconsistentVersionWarning(UserWarning):
    """The model was saved under another release series of automl or of a dependency."""


# The packages a fitted model's pickle depends on; absent optional ones are left out.
RUNTIME_PACKAGES = ("scikit-learn", "pandas", "numpy", "scipy", "optuna", "cloudpickle", "skops",
                    "lightgbm", "xgboost", "catboost")
# Signature column types of the kinds automl.data.validation assigns to input columns; numeric columns
# take the type of their training dtype (MLflow refuses to cast int64 to double, or float to long).
_SIGNATURE_TYPES = {"boolean": "boolean", "datetime": "datetime", "categorical": "string"}
_NUMERIC_TYPES = {"int64": "long", "int32": "integer", "int16": "integer", "int8": "integer",
                  "float32": "float"}


# MLflow's messages that leave the user nothing to act on: its advice to save scikit-learn models with skops,
# which cannot save ours (mlflow_model.log_model says why), and its notes on creating a new store's tables.
_NOISY_LOGGERS = {"mlflow.sklearn": logging.ERROR, "mlflow.store.db.utils": logging.WARNING}


@contextlib.contextmanager
def quiet_mlflow():
    """Silence :data:`_NOISY_LOGGERS` below their level for the block; MLflow's real warnings still show."""
    loggers = {logging.getLogger(name): level for name, level in _NOISY_LOGGERS.items()}
    previous = {logger: logger.level for logger in loggers}
    for logger, level in loggers.items():
        logger.setLevel(max(level, logger.getEffectiveLevel()))
    try:
        yield
    finally:
        for logger, level in previous.items():
            logger.setLevel(level)


def package_versions(packages=RUNTIME_PACKAGES):
    """Installed versions of ``packages`` (absent ones omitted), plus automl's own.

    Parameters
    ----------
    packages : sequence of str, default=RUNTIME_PACKAGES
        Distribution names as pip knows them.

    Returns
    -------
    versions : dict of str -> str
        ``{"automl": "0.1.0", "scikit-learn": "1.9.1", ...}``.
    """
    from importlib.metadata import PackageNotFoundError, version

    from .. import __version__

    versions = {"automl": __version__}
    for package in packages:
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            continue
    return versions


def manifest_of(model):
    """The manifest of a fitted model: what ``load`` and a retraining job compare against.

    Parameters
    ----------
    model : AutoClassifier
        Fitted.

    Returns
    -------
    manifest : dict
        Keys ``format_version, versions, features`` (input column -> kind), ``dtypes`` (input
        column -> pandas dtype in training), ``categories``
        (categorical column -> levels seen), ``dropped`` (column -> why training dropped it),
        ``task``, ``classes`` (as str) and ``class_counts`` (empty for a regressor), ``metric``,
        ``fingerprint``, ``n_samples``.
    """
    profile = model.profile_
    return {
        "format_version": FORMAT_VERSION,
        "versions": package_versions(),
        "features": {c: profile.kinds[c] for c in profile.input_columns},
        "dtypes": dict(profile.dtypes or {}),
        "categories": {c: list(v) for c, v in profile.categories.items()},
        "dropped": dict(profile.dropped_columns),
        "task": profile.task,
        "classes": [str(c) for c in getattr(model, "classes_", ())],
        "class_counts": list(class_counts_of(model)) if hasattr(model, "classes_") else [],
        "metric": model.metric_,
        "fingerprint": profile.fingerprint,
        "n_samples": int(profile.n_samples),
    }


def model_signature(profile):
    """The MLflow signature of a model trained on data of ``profile``: one column per input column.

    Columns training dropped (all missing, constant) are optional; the others are required. A
    numeric column has the type of its training dtype: ``long`` for int64, ``double`` for float64
    (so a column that had missing values in training takes them when served, and one that had none
    must be sent as integers).

    Parameters
    ----------
    profile : DatasetProfile

    Returns
    -------
    signature : mlflow.models.ModelSignature
        Inputs only; outputs are the class labels.
    """
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, Schema

    dtypes = profile.dtypes or {}
    optional = set(profile.dropped_columns) | set(profile.identifier_columns)  # no model reads them
    columns = [ColSpec(_column_type(profile.kinds[c], dtypes.get(c, "float64")), c, required=c not in optional)
               for c in profile.input_columns]
    return ModelSignature(inputs=Schema(columns))


def _column_type(kind, dtype):
    if kind != "numeric":
        return _SIGNATURE_TYPES[kind]
    return _NUMERIC_TYPES.get(dtype.lower(), "double")


def save(model, path, *, overwrite=False):
    """Write a fitted AutoClassifier to the folder ``path`` as an MLflow model.

    The folder is written beside ``path`` first and moved into place whole, so an interrupted save
    leaves the previous model (or nothing) at ``path``, never half of one.

    Parameters
    ----------
    model : AutoClassifier
        Fitted.
    path : str or Path
        The model folder. ``mlflow.sklearn.load_model(path)`` and ``mlflow models serve -m path``
        read it too.
    overwrite : bool, default=False
        Replace a model already at ``path``.

    Returns
    -------
    path : Path

    Raises
    ------
    FileExistsError
        If ``path`` exists, is not empty and ``overwrite`` is False.
    """
    import mlflow.sklearn

    path = Path(path)
    refuse_non_empty(path, overwrite)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.", dir=path.parent))
    try:
        with quiet_mlflow():
            mlflow.sklearn.save_model(
                model, staging / "model", serialization_format="cloudpickle",
                signature=model_signature(model.profile_), code_paths=_code_paths(model),
                pip_requirements=_pip_requirements(),
            )
        (staging / "model" / MANIFEST_FILE).write_text(json.dumps(manifest_of(model), indent=2))
        _replace(staging / "model", path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return path


def _replace(new, path):
    """Move the folder ``new`` to ``path``; an old folder there is removed only once ``new`` is in place."""
    if not path.exists():
        os.replace(new, path)
        return
    old = new.parent / "previous"
    os.replace(path, old)
    os.replace(new, path)
    shutil.rmtree(old, ignore_errors=True)


def read_manifest(path):
    """The manifest of the model folder ``path`` (see :func:`manifest_of`), without unpickling it.

    Raises
    ------
    FileNotFoundError
        If ``path`` holds no ``manifest.json``: it is not a folder written by :func:`save`.
    """
    manifest = Path(path) / MANIFEST_FILE
    if not manifest.is_file():
        raise FileNotFoundError(f"{path} is not an automl model folder: it has no {MANIFEST_FILE}.")
    return json.loads(manifest.read_text())


def load(path):
    """Load a model written by :func:`save`.

    Unpickling runs code from the folder: load only models you trust.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    model : AutoClassifier
        Predicts like the saved one; ``predict`` matches columns by name, errors on missing
        columns (naming them) and ignores extra ones with a warning.

    Raises
    ------
    FileNotFoundError
        If the folder lacks the manifest or the model.
    ValueError
        If the manifest's format version is unknown to this release.

    Warns
    -----
    InconsistentVersionWarning
        If a package's release series (major version; major.minor below 1.0) differs from the
        one that saved the model. scikit-learn adds its own warning for any version change.
    """
    path = Path(path)
    manifest = read_manifest(path)
    version = manifest.get("format_version")
    if version not in (1, FORMAT_VERSION):
        raise ValueError(
            f"{path} holds a model of format version {version!r}; this release of automl reads formats "
            f"1 and {FORMAT_VERSION}. Load it with the automl version that saved it."
        )
    _warn_on_drift(manifest["versions"], package_versions(), stacklevel=3)
    if version == 1:
        import joblib

        return joblib.load(path / LEGACY_MODEL_FILE)
    if not (path / "MLmodel").is_file():
        raise FileNotFoundError(f"{path} has a manifest but no MLmodel file: the model was not saved whole.")
    return load_mlflow_model(str(path))


def load_mlflow_model(uri):
    """``mlflow.sklearn.load_model(uri)``, leaving ``sys.path`` as it was.

    MLflow prepends the model's code folder to ``sys.path`` for good; automl is already imported,
    so the pickle resolves to it either way. Unpickling runs code: load only models you trust.
    """
    import mlflow.sklearn

    search_path = list(sys.path)
    try:
        return mlflow.sklearn.load_model(uri)
    finally:
        sys.path[:] = search_path



def refuse_non_empty(path, overwrite):
    """Raise FileExistsError if ``path`` is a non-empty folder and ``overwrite`` is False."""
    path = Path(path)
    if path.exists() and any(path.iterdir()) and not overwrite:
        raise FileExistsError(f"{path} exists and is not empty; pass overwrite=True (CLI: --overwrite) "
                              "to replace the model in it, or choose another folder.")


def release_series(version):
    """``"1.9.1" -> "1"``, ``"0.1.0" -> "0.1"``: the part of a version that changes on breaking releases."""
    parts = str(version).split(".")
    return ".".join(parts[:2]) if parts[0] == "0" else parts[0]


def _warn_on_drift(saved, installed, stacklevel):
    drift = {name: (v, installed.get(name)) for name, v in saved.items()
             if installed.get(name) is None or release_series(installed[name]) != release_series(v)}
    if drift:
        listing = ", ".join(f"{name} {was} -> {now or 'not installed'}" for name, (was, now) in drift.items())
        warnings.warn(f"The model was saved with other release series of: {listing}. Its predictions "
                      "may differ or fail; refit it under the installed versions.",
                      InconsistentVersionWarning, stacklevel=stacklevel)


def _pip_requirements():
    """The model's runtime requirements, pinned to what is installed.

    Given explicitly because MLflow's inference takes seconds of the fit's budget, and would pin
    ``automl`` itself, a name that on PyPI is another project (our package travels in code_paths).
    """
    return [f"{name}=={version}" for name, version in package_versions().items() if name != "automl"]


def _code_paths(model):
    """The automl package directory when the model is one of automl's classes, else None."""
    # Shipped with the model, it lets `mlflow models predict` run where automl is not installed.
    if type(model).__module__.split(".")[0] == __name__.split(".")[0]:
        return [str(Path(__file__).resolve().parents[1])]
    return None
