"""save/load as an MLflow model folder: round trip, schema at predict time, refusals, version drift."""

import json
import shutil
import warnings
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pytest

import automl
from automl import AutoClassifier
from automl.datasets import load_dataset
from automl.exceptions import DataRepairWarning, DataValidationError
from automl.tracking import InconsistentVersionWarning, load, read_manifest, release_series


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    X, y = load_dataset("credit-g")
    model = AutoClassifier(time_budget=None, n_trials=2, include=["logreg"], cv=3, tracking=False,
                           verbose=0, random_state=0).fit(X.iloc[:600], y.iloc[:600])
    path = model.save(tmp_path_factory.mktemp("model") / "m")
    return model, path, X.iloc[600:700]


def test_round_trip_same_predictions(saved):
    model, path, X_new = saved
    assert (path / "MLmodel").is_file()
    manifest = read_manifest(path)
    assert manifest["format_version"] == 2
    assert manifest["classes"] == [str(c) for c in model.classes_]
    assert manifest["fingerprint"] == model.profile_.fingerprint
    assert manifest["features"]["checking_status"] == "categorical"
    assert manifest["features"]["duration"] == "numeric"
    assert set(manifest["categories"]["checking_status"]) == set(model.profile_.categories["checking_status"])
    assert manifest["n_samples"] == 600 and sum(manifest["class_counts"]) == 600
    loaded = automl.load(path)
    np.testing.assert_array_equal(loaded.predict_proba(X_new), model.predict_proba(X_new))
    np.testing.assert_array_equal(loaded.classes_, model.classes_)


def test_mlflow_reads_the_folder_with_its_signature(saved):
    import mlflow.pyfunc
    import mlflow.sklearn

    model, path, X_new = saved
    np.testing.assert_array_equal(mlflow.sklearn.load_model(str(path)).predict(X_new), model.predict(X_new))
    pyfunc = mlflow.pyfunc.load_model(str(path))
    inputs = {spec.name: spec.type.name for spec in pyfunc.metadata.get_input_schema().inputs}
    # Types follow the training dtypes: MLflow casts neither int64 to double nor float to long.
    assert (inputs["checking_status"], inputs["duration"]) == ("string", "long")
    assert read_manifest(path)["dtypes"]["duration"] == "int64"
    served = X_new.copy()
    served.loc[served.index[0], "checking_status"] = None  # a missing value passes the schema
    assert list(pyfunc.predict(served)) == list(model.predict(served))


def test_schema_is_checked_at_predict_time(saved):
    _, path, X_new = saved
    loaded = load(path)
    with pytest.raises(DataValidationError, match="missing 2 column.*'duration', 'age'"):
        loaded.predict(X_new.drop(columns=["duration", "age"]))
    with pytest.warns(DataRepairWarning, match="Ignored 1 column.*'extra'"):
        with_extra = loaded.predict_proba(X_new.assign(extra=1.0))
    reordered = loaded.predict_proba(X_new[X_new.columns[::-1]])
    np.testing.assert_array_equal(with_extra, loaded.predict_proba(X_new))
    np.testing.assert_array_equal(reordered, loaded.predict_proba(X_new))


def test_existing_folder_needs_overwrite(saved, tmp_path):
    model, path, X_new = saved
    target = tmp_path / "m"
    shutil.copytree(path, target)
    (target / "stale.txt").write_text("from the old model")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        model.save(target)
    assert (target / "stale.txt").exists()  # refused: nothing touched
    model.save(target, overwrite=True)
    assert not (target / "stale.txt").exists()
    np.testing.assert_array_equal(load(target).predict_proba(X_new), model.predict_proba(X_new))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]  # no staging folder left behind


def test_unknown_format_is_refused(saved, tmp_path):
    _, path, _ = saved
    shutil.copytree(path, tmp_path / "m")
    manifest = read_manifest(path)
    (tmp_path / "m" / "manifest.json").write_text(json.dumps(dict(manifest, format_version=99)))
    with pytest.raises(ValueError, match="format version 99"):
        load(tmp_path / "m")


def test_not_a_model_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="not an automl model folder"):
        load(tmp_path)


@pytest.mark.parametrize("saved_version, warns", [("0.1", True), ("1.3.0", False)])
def test_version_drift_warns_across_release_series(saved, tmp_path, saved_version, warns):
    import sklearn

    _, path, _ = saved
    shutil.copytree(path, tmp_path / "m")
    manifest = read_manifest(path)
    # 0.1 -> 1.9 crosses a release series; 1.3 -> 1.9 does not (scikit-learn adds its own warning).
    manifest["versions"]["scikit-learn"] = saved_version
    (tmp_path / "m" / "manifest.json").write_text(json.dumps(manifest))
    assert release_series(sklearn.__version__) == "1"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load(tmp_path / "m")
    ours = [w for w in caught if issubclass(w.category, InconsistentVersionWarning)]
    assert bool(ours) == warns
    if warns:
        assert f"scikit-learn {saved_version} -> {sklearn.__version__}" in str(ours[0].message)


def test_first_format_still_loads(saved, tmp_path):
    model, path, X_new = saved
    manifest = dict(read_manifest(path), format_version=1)
    joblib.dump(model, tmp_path / "model.joblib")
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    np.testing.assert_array_equal(load(tmp_path).predict_proba(X_new), model.predict_proba(X_new))


def test_save_before_fit_is_refused(tmp_path):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        AutoClassifier().save(tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_release_series():
    assert [release_series(v) for v in ("1.9.1", "0.1.0", "2", "0.24.2")] == ["1", "0.1", "2", "0.24"]


@pytest.mark.parametrize("name", ["classifier", "regressor"])
def test_a_model_saved_by_the_flat_package_loads(name):
    # Saved at e588ad5, before the modules moved into subpackages: its pickle names the old modules
    # (automl.estimator, automl.components, ...). tests/fixtures/saved-flat-0.1/make.py made it.
    import mlflow.sklearn
    from sklearn.datasets import load_diabetes

    folder = Path(__file__).parent / "fixtures" / "saved-flat-0.1"
    if name == "classifier":
        X = load_dataset("credit-g")[0].iloc[300:320]
    else:
        X = load_diabetes(return_X_y=True, as_frame=True)[0].iloc[300:320]
    expected = pd.read_csv(folder / f"{name}_expected.csv").to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a newer scikit-learn than the one that saved it warns
        model = load(folder / name)
        # MLflow's own loader too (a registry model, mlflow models serve): any loader finds the old names.
        by_mlflow = mlflow.sklearn.load_model(str(folder / name))
    for loaded in (model, by_mlflow):
        predicted = loaded.predict_proba(X) if name == "classifier" else loaded.predict(X)[:, None]
        np.testing.assert_allclose(predicted, expected, rtol=1e-9)
    assert type(model) is (automl.AutoClassifier if name == "classifier" else automl.AutoRegressor)


def test_the_flat_module_names_forward_to_the_moved_objects():
    import automl.components
    import automl.estimator
    from automl.space import components

    assert automl.estimator.AutoClassifier is automl.AutoClassifier
    assert automl.components._build_hgb is components._build_hgb
    with pytest.raises(AttributeError):
        automl.estimator.no_such_name
    with pytest.raises(ModuleNotFoundError):
        import automl.no_such_module  # noqa: F401
