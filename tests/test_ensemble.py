"""Tests of automl.ensemble.WeightedEnsembleClassifier on sklearn's iris and breast-cancer data."""

import doctest

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.datasets import load_breast_cancer, load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.tree import DecisionTreeClassifier

from automl import ensemble as ensemble_module
from automl.ensemble import WeightedEnsembleClassifier


def logistic():
    return make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))


def tree():
    return DecisionTreeClassifier(max_depth=3, random_state=0)


@pytest.fixture(scope="module")
def iris():
    return load_iris(return_X_y=True)


def three_folds(X, y):
    return list(StratifiedKFold(n_splits=3, shuffle=True, random_state=0).split(X, y))


def test_refit_probabilities_are_the_weighted_average(iris):
    X, y = iris
    ensemble = WeightedEnsembleClassifier(estimators=[logistic(), tree()], weights=[0.7, 0.3])
    assert ensemble.fit(X, y) is ensemble
    proba = ensemble.predict_proba(X)
    assert proba.shape == (150, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(ensemble.weights_, [0.7, 0.3])
    np.testing.assert_array_equal(ensemble.classes_, [0, 1, 2])
    assert ensemble.n_features_in_ == 4
    expected = 0.7 * logistic().fit(X, y).predict_proba(X) + 0.3 * tree().fit(X, y).predict_proba(X)
    np.testing.assert_allclose(proba, expected)
    np.testing.assert_array_equal(ensemble.predict(X), np.argmax(expected, axis=1))
    assert np.mean(ensemble.predict(X) == y) > 0.9


def test_weights_are_normalized_and_zero_weight_members_dropped(iris):
    X, y = iris
    ensemble = WeightedEnsembleClassifier(estimators=[logistic(), tree()], weights=[2.0, 0.0]).fit(X, y)
    assert len(ensemble.estimators_) == 1
    np.testing.assert_array_equal(ensemble.weights_, [1.0])
    np.testing.assert_array_equal(ensemble.predict_proba(X), logistic().fit(X, y).predict_proba(X))


def test_bag_fits_one_model_per_fold(iris):
    X, y = iris
    folds = three_folds(X, y)
    ensemble = WeightedEnsembleClassifier(
        estimators=[logistic(), tree()], weights=[1, 1], final_fit="bag", cv=folds
    ).fit(X, y)
    assert [len(models) for models in ensemble.estimators_] == [3, 3]
    coefs = [m[-1].coef_ for m in ensemble.estimators_[0]]
    assert not np.allclose(coefs[0], coefs[1])
    # Each fold model is fit on its fold's training rows only.
    for model, (train, _) in zip(ensemble.estimators_[0], folds):
        expected = logistic().fit(X[train], y[train])
        np.testing.assert_allclose(model[-1].coef_, expected[-1].coef_)
    per_member = [np.mean([m.predict_proba(X) for m in models], axis=0) for models in ensemble.estimators_]
    np.testing.assert_allclose(ensemble.predict_proba(X), 0.5 * per_member[0] + 0.5 * per_member[1])


def test_bag_aligns_classes_missing_from_a_fold(iris):
    X, y = iris
    rows = np.arange(len(y))
    # The first fold never sees class 0, so its model's columns are classes 1 and 2.
    folds = [(rows[y != 0], rows[y == 0]), (rows, rows)]
    ensemble = WeightedEnsembleClassifier(
        estimators=[tree()], weights=[1.0], final_fit="bag", cv=folds
    ).fit(X, y)
    first_fold_model, full_model = ensemble.estimators_[0]
    np.testing.assert_array_equal(first_fold_model.classes_, [1, 2])
    proba = ensemble.predict_proba(X)
    assert proba.shape == (150, 3)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    expected = 0.5 * full_model.predict_proba(X)
    expected[:, 1:] += 0.5 * first_fold_model.predict_proba(X)
    np.testing.assert_allclose(proba, expected)
    # Class 0 gets half the mass the full-data tree gives it: the first fold model gives it none.
    np.testing.assert_allclose(proba[:, 0], 0.5 * full_model.predict_proba(X)[:, 0])


def test_binary_dataframe_input_with_bagging():
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    y = y.to_numpy()
    ensemble = WeightedEnsembleClassifier(
        estimators=[logistic(), tree()], weights=[3, 1], final_fit="bag", cv=three_folds(X, y)
    ).fit(X, y)
    assert ensemble.n_features_in_ == 30
    assert list(ensemble.feature_names_in_) == list(X.columns)
    proba = ensemble.predict_proba(X)
    assert proba.shape == (len(y), 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.mean(ensemble.predict(X) == y) > 0.95


def test_predict_checks_feature_count(iris):
    X, y = iris
    ensemble = WeightedEnsembleClassifier(estimators=[tree()], weights=[1.0]).fit(X, y)
    with pytest.raises(ValueError, match="4 features"):
        ensemble.predict_proba(X[:, :3])


def test_clone_keeps_params_and_drops_fitted_state(iris):
    X, y = iris
    folds = three_folds(X, y)
    ensemble = WeightedEnsembleClassifier(
        estimators=[logistic(), tree()], weights=[0.4, 0.6], final_fit="bag", cv=folds
    )
    ensemble.fit(X, y)
    copy = clone(ensemble)
    assert not hasattr(copy, "estimators_")
    assert copy.weights == [0.4, 0.6]
    assert copy.final_fit == "bag"
    assert len(copy.cv) == 3
    assert copy.estimators[0] is not ensemble.estimators[0]
    np.testing.assert_allclose(copy.fit(X, y).predict_proba(X), ensemble.predict_proba(X))


@pytest.mark.parametrize(
    "params, message",
    [
        ({"weights": [0.0, 0.0]}, "'weights' parameter.*not all zero"),
        ({"weights": [1.0, -0.5]}, "'weights' parameter.*non-negative"),
        ({"weights": [1.0]}, r"'weights' parameter.*one weight per estimator \(2\)"),
        ({"weights": [1.0, 1.0], "final_fit": "stack"}, "'final_fit' parameter.*Got 'stack'"),
        ({"weights": [1.0, 1.0], "final_fit": "bag"}, "'cv' parameter.*Got None"),
    ],
)
def test_invalid_params_raise_in_fit_not_init(iris, params, message):
    X, y = iris
    ensemble = WeightedEnsembleClassifier(estimators=[logistic(), tree()], **params)
    with pytest.raises(ValueError, match=message):
        ensemble.fit(X, y)


def test_string_labels_are_rejected(iris):
    X, y = iris
    labels = np.array(["a", "b", "c"])[y]
    with pytest.raises(ValueError, match="encoded as integers"):
        WeightedEnsembleClassifier(estimators=[tree()], weights=[1.0]).fit(X, labels)


def test_docstring_examples_run():
    result = doctest.testmod(ensemble_module)
    assert result.attempted > 0
    assert result.failed == 0
