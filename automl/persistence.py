"""Save and load a fitted model: a joblib file beside a ``manifest.json``.

The manifest records the format version, the library versions, the feature schema, the classes,
the metric and the training data's fingerprint. ``load`` refuses a format it does not know and
warns when the installed versions differ from those that saved the model.

Loading unpickles the model, which runs code from the file: load only files you trust.
"""

import json
import warnings
from pathlib import Path

import joblib

FORMAT_VERSION = 1
MODEL_FILE = "model.joblib"
MANIFEST_FILE = "manifest.json"


class InconsistentVersionWarning(UserWarning):
    """The model was saved under other versions of automl or its dependencies."""


# The packages a fitted model's pickle depends on; absent optional ones are left out.
RUNTIME_PACKAGES = ("scikit-learn", "pandas", "numpy", "scipy", "optuna", "cloudpickle", "skops",
                    "lightgbm", "xgboost")


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

    from . import __version__

    versions = {"automl": __version__}
    for package in packages:
        try:
            versions[package] = version(package)
        except PackageNotFoundError:
            continue
    return versions


def save(model, path):
    """Write a fitted AutoClassifier to the folder ``path`` (created if missing).

    Parameters
    ----------
    model : AutoClassifier
        Fitted.
    path : str or Path
        A folder; ``model.joblib`` and ``manifest.json`` are written in it.

    Returns
    -------
    path : Path
    """
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    joblib.dump(model, path / MODEL_FILE)
    profile = model.profile_
    manifest = {
        "format_version": FORMAT_VERSION,
        "versions": package_versions(),
        "features": {c: profile.kinds[c] for c in profile.input_columns},
        "categories": {c: list(v) for c, v in profile.categories.items()},
        "classes": [str(c) for c in model.classes_],
        "metric": model.metric_,
        "fingerprint": profile.fingerprint,
    }
    (path / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2))
    return path


def load(path):
    """Load a model written by :func:`save`.

    Parameters
    ----------
    path : str or Path

    Returns
    -------
    model : AutoClassifier

    Raises
    ------
    FileNotFoundError
        If the folder lacks ``manifest.json`` or ``model.joblib``.
    ValueError
        If the manifest's format version is unknown to this release.

    Warns
    -----
    InconsistentVersionWarning
        If a library version differs from the one that saved the model.
    """
    path = Path(path)
    manifest = json.loads((path / MANIFEST_FILE).read_text())
    if manifest.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"{path} holds a model of format version {manifest.get('format_version')!r}; this release "
            f"of automl reads format {FORMAT_VERSION}. Load it with the automl version that saved it."
        )
    installed = package_versions()
    drift = {k: (v, installed.get(k)) for k, v in manifest["versions"].items() if installed.get(k) != v}
    if drift:
        warnings.warn(f"Model saved with other versions (saved, installed): {drift}",
                      InconsistentVersionWarning, stacklevel=2)
    return joblib.load(path / MODEL_FILE)
