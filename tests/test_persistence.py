"""save/load round trip, refusal of unknown formats, warning on version drift."""

import json

import numpy as np
import pytest

from automl import AutoClassifier
from automl.datasets import load_dataset
from automl.persistence import InconsistentVersionWarning, load, save


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    X, y = load_dataset("kc1")
    model = AutoClassifier(time_budget=None, n_trials=2, include=["logreg"], cv=3, tracking=False,
                           verbose=0, random_state=0).fit(X.iloc[:800], y.iloc[:800])
    path = save(model, tmp_path_factory.mktemp("model") / "m")
    return model, path, X.iloc[800:900]


def test_round_trip_same_predictions(saved):
    model, path, X_new = saved
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["classes"] == [str(c) for c in model.classes_]
    assert manifest["fingerprint"] == model.profile_.fingerprint
    np.testing.assert_array_equal(load(path).predict_proba(X_new), model.predict_proba(X_new))


def test_unknown_format_is_refused(saved, tmp_path):
    _, path, _ = saved
    manifest = json.loads((path / "manifest.json").read_text())
    (tmp_path / "model.joblib").write_bytes((path / "model.joblib").read_bytes())
    (tmp_path / "manifest.json").write_text(json.dumps(dict(manifest, format_version=99)))
    with pytest.raises(ValueError, match="format version 99"):
        load(tmp_path)


def test_version_drift_warns(saved, tmp_path):
    _, path, _ = saved
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["versions"]["scikit-learn"] = "0.1"
    (tmp_path / "model.joblib").write_bytes((path / "model.joblib").read_bytes())
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    with pytest.warns(InconsistentVersionWarning, match="scikit-learn"):
        load(tmp_path)
