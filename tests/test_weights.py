"""Row weights (issue 27): ``fit(X, y, sample_weight=...)``, their check (data/weights.py), the model step's weights
(space/pipeline.py ``weight_params``), weighted trials, ensemble selection and final fit, nested CV, workers, CLI."""

import numpy as np
import optuna
import pandas as pd
import pytest
from sklearn.compose import TransformedTargetRegressor
from sklearn.dummy import DummyClassifier
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.metrics import balanced_accuracy_score, log_loss, roc_auc_score
from sklearn.model_selection import StratifiedKFold, train_test_split
from sklearn.neighbors import KNeighborsClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.class_weight import compute_sample_weight

from automl import AutoClassifier, AutoRegressor, nested_cv
from automl.cli import main
from automl.data import check_sample_weight, check_training_data
from automl.ensemble import WeightedEnsembleClassifier
from automl.exceptions import DataRepairWarning, DataValidationError
from automl.search import SharedSearch, get_metric, prepare_search
from automl.search.objective import CVObjective
from automl.space import portfolio, rebuild, resolve_components, weight_params

FIT = dict(time_budget=None, n_jobs=1, random_state=0, tracking=False, verbose=0)
# UCI's cost matrix of German credit (Statlog): calling a bad customer good costs 5, the converse 1.
BAD_COST = 5.0


@pytest.fixture(scope="module")
def credit_costs(load_shared):
    """credit-g with its documented costs as row weights (bad 5, good 1), split 75/25 with a seed."""
    X, y = load_shared("credit-g.csv", "class")
    w = np.where(y == "bad", BAD_COST, 1.0)
    return train_test_split(X, y, w, test_size=0.25, random_state=0, stratify=y)


@pytest.mark.parametrize("weights, problem", [
    (np.ones((4, 2)), "one-dimensional"),
    (np.ones(3), "has 3 values but X has 4 rows"),
    ([1.0, np.nan, 2.0, 1.0], r"1 missing value\(s\) \(row 1: nan\)"),
    ([1.0, -2.0, 2.0, -1.0], r"2 negative value\(s\) \(row 1: -2.0, row 3: -1.0\)"),
    ([1.0, np.inf, 2.0, 1.0], r"1 infinite value\(s\) \(row 1: inf\)"),
    (["1", "heavy", 2, 1], r"1 value\(s\) that are not numbers \(row 1: 'heavy'\)"),
    (np.zeros(4), "Every sample_weight is zero"),
])
def test_bad_weights_are_refused_with_the_rows_named(weights, problem):
    with pytest.raises(DataValidationError, match=problem):
        check_sample_weight(weights, 4)


def test_weights_are_rescaled_to_mean_one_and_follow_the_rows_a_rare_class_drops():
    X = pd.DataFrame({"a": np.arange(12.0)})
    y = ["x"] * 6 + ["y"] * 5 + ["z"]  # "z", seen once, is dropped with its row
    weights = pd.Series(np.arange(1.0, 13.0), index=np.arange(100, 112))  # the index is not the rows' order
    with pytest.warns(DataRepairWarning, match="seen once"), pytest.warns(UserWarning, match="index of sample_weight"):
        X_clean, _, _, _, groups, kept = check_training_data(X, y, n_folds=2, sample_weight=weights)
    assert groups is None and len(kept) == len(X_clean) == 11
    np.testing.assert_allclose(kept, np.arange(1.0, 12.0) / 6.0)  # 1..11, mean 6
    with pytest.raises(DataValidationError, match="of the rows kept is zero"), pytest.warns(DataRepairWarning):
        check_training_data(X, y, n_folds=2, sample_weight=[0.0] * 11 + [5.0])


def test_weights_reach_the_model_step_and_a_model_without_them_is_refused():
    w = np.arange(3.0)
    pipeline = Pipeline([("scale", StandardScaler()), ("model", LogisticRegression())])
    assert weight_params(pipeline, w) == {"model__sample_weight": w}
    wrapped = TransformedTargetRegressor(regressor=Pipeline([("scale", StandardScaler()), ("model", Ridge())]))
    assert weight_params(wrapped, w) == {"model__sample_weight": w}
    assert weight_params(DummyClassifier(), w) == {"sample_weight": w}
    assert weight_params(FrozenEstimator(LogisticRegression()), w) == {} and weight_params(pipeline, None) == {}
    with pytest.raises(TypeError, match="KNeighborsClassifier.fit takes no sample_weight"):
        weight_params(Pipeline([("model", KNeighborsClassifier())]), w)


def test_a_weighted_search_leaves_out_the_families_that_take_no_weights():
    keys = [spec.key for spec in resolve_components(weighted=True)]
    assert "knn" not in keys and "hgb" in keys and "logreg" in keys
    assert "knn" not in [spec.key for spec in resolve_components(task="regression", weighted=True)]
    assert "knn" in [spec.key for spec in resolve_components()]
    with pytest.raises(ValueError, match=r"\['knn'\] take no sample_weight"):
        resolve_components(include=["knn", "logreg"], weighted=True)


def test_a_weighted_trial_scores_each_fold_as_scikit_learn_does_by_hand(credit_costs, tmp_path):
    X, _, y, _, w, _ = credit_costs
    setup = prepare_search(X, y, cv=3, random_state=0, include=["logreg"], sample_weight=w)
    objective = CVObjective(setup.X, setup.y, setup.folds, setup.profile, setup.specs, setup.metric, tmp_path,
                            random_state=0, sample_weight=setup.sample_weight)
    study = optuna.create_study(direction="maximize")
    study.enqueue_trial(portfolio(setup.specs)[0])
    study.optimize(objective, n_trials=1)
    trial = study.trials[0]
    by_hand = []
    for train, test in setup.folds:
        model = rebuild(trial.params, setup.profile, setup.specs, 0)
        model.fit(setup.X.iloc[train], setup.y[train], model__sample_weight=setup.sample_weight[train])
        by_hand.append(roc_auc_score(setup.y[test], model.predict_proba(setup.X.iloc[test])[:, 1],
                                     sample_weight=setup.sample_weight[test]))
    np.testing.assert_allclose(trial.user_attrs["fold_scores"], by_hand, rtol=1e-12)
    unweighted = [roc_auc_score(setup.y[test], rebuild(trial.params, setup.profile, setup.specs, 0).fit(
        setup.X.iloc[train], setup.y[train]).predict_proba(setup.X.iloc[test])[:, 1]) for train, test in setup.folds]
    assert not np.allclose(by_hand, unweighted)  # the weights did change the scores


def test_a_weighted_fit_beats_an_unweighted_one_on_the_weighted_loss_of_held_out_rows(credit_costs):
    X_train, X_test, y_train, y_test, w_train, w_test = credit_costs
    fit = dict(**FIT, n_trials=3, include=["logreg", "hgb"], metric="log_loss", cv=3, leak_check="off")
    weighted = AutoClassifier(**fit).fit(X_train, y_train, sample_weight=w_train)
    plain = AutoClassifier(**fit).fit(X_train, y_train)
    loss = {name: log_loss(y_test, m.predict_proba(X_test), labels=m.classes_, sample_weight=w_test)
            for name, m in (("weighted", weighted), ("plain", plain))}
    # The costs move the weighted prior of "bad" from 0.30 to 0.68: the plain fit's probabilities miss it.
    assert loss["weighted"] < loss["plain"] - 0.05, loss
    bad = list(weighted.classes_).index("bad")
    assert weighted.predict_proba(X_test)[:, bad].mean() > plain.predict_proba(X_test)[:, bad].mean() + 0.2
    assert weighted.weighted_ and not plain.weighted_


def test_class_weights_through_scikit_learns_compute_sample_weight_lift_the_rare_class(load_shared):
    # The README's route to class weights: "balanced" gives each class the same total weight.
    X, y = load_shared("kc1.csv", "Class")  # 15% defective modules
    X_train, X_test, y_train, y_test = train_test_split(X, y, test_size=0.25, random_state=0, stratify=y)
    fit = dict(**FIT, n_trials=2, include=["logreg"], metric="accuracy", cv=3, leak_check="off")
    balanced = AutoClassifier(**fit).fit(X_train, y_train, sample_weight=compute_sample_weight("balanced", y_train))
    plain = AutoClassifier(**fit).fit(X_train, y_train)
    scores = {name: balanced_accuracy_score(y_test, m.predict(X_test)) for name, m in (("balanced", balanced),
                                                                                       ("plain", plain))}
    # Plain accuracy is won by calling nearly every module sound; the balanced fit finds the defects.
    assert scores["balanced"] > scores["plain"] + 0.1, scores
    assert (balanced.predict(X_test) == balanced.classes_[1]).mean() > 2 * (plain.predict(X_test) ==
                                                                            plain.classes_[1]).mean()


def test_the_final_fit_and_bagging_give_each_member_its_rows_weights():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=200)})
    y = (X["a"] + rng.normal(size=200) > 0).astype(int).to_numpy()
    w = rng.uniform(0.1, 3.0, 200)
    folds = list(StratifiedKFold(2, shuffle=True, random_state=0).split(X, y))
    member = Pipeline([("model", LogisticRegression())])
    bagged = WeightedEnsembleClassifier(estimators=[member], weights=[1.0], final_fit="bag", cv=folds)
    bagged.fit(X, y, sample_weight=w)
    for (train, _), fitted in zip(folds, bagged.estimators_[0]):
        by_hand = LogisticRegression().fit(X.iloc[train], y[train], sample_weight=w[train])
        np.testing.assert_allclose(fitted[-1].coef_, by_hand.coef_)
    refit = WeightedEnsembleClassifier(estimators=[member], weights=[1.0]).fit(X, y, sample_weight=w)
    np.testing.assert_allclose(refit.estimators_[0][-1].coef_, LogisticRegression().fit(X, y, sample_weight=w).coef_)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        refit.fit(X, y, sample_weight=w[:10])


def test_the_holdout_keeps_each_rows_weight_and_the_key_tells_weighted_searches_apart():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.normal(size=3000), "b": rng.normal(size=3000)})
    y = (X["a"] > 0).astype(int).to_numpy()
    w = rng.uniform(0.5, 2.0, 3000)
    X["w"] = w  # the weight as a column too, to follow the rows
    with pytest.warns(UserWarning, match="held-out rows only"):
        setup = prepare_search(X, y, validation="holdout", random_state=0, sample_weight=w)
    np.testing.assert_allclose(setup.sample_weight, setup.X["w"].to_numpy() / w.mean())
    plain = prepare_search(X, y, cv=3, random_state=0)
    weighted = prepare_search(X, y, cv=3, random_state=0, sample_weight=w)
    double = prepare_search(X, y, cv=3, random_state=0, sample_weight=2 * w)  # the same weights, rescaled
    assert weighted.search_key != plain.search_key and double.search_key == weighted.search_key
    with pytest.raises(DataValidationError, match="validation row of fold"):
        prepare_search(X, y, cv=3, random_state=0, sample_weight=np.where(np.isin(
            np.arange(3000), plain.folds[1][1]), 0.0, 1.0))


def test_a_worker_must_bring_the_fits_weights():
    X = pd.DataFrame({"a": np.arange(60.0)})
    y = np.arange(60) % 2
    w = 1.0 + np.arange(60) % 3
    setup = prepare_search(X, y, cv=3, random_state=0, sample_weight=w)
    shared = SharedSearch.of(setup, task="classification", settings={"include": None, "sampler": "tpe",
                             "pruning": False}, n_startup_trials=2, storage=None, oof_dir=".", deadline=None,
                             max_trials=None)
    with pytest.raises(DataValidationError, match="automl worker --weight COLUMN"):
        shared.setup(X, y)
    assert shared.setup(X, y, sample_weight=w).search_key == setup.search_key
    with pytest.raises(DataValidationError, match="other folds or metric"):
        shared.setup(X, y, sample_weight=w[::-1])


def test_nested_cv_weighs_the_outer_scores_and_the_baselines(credit_costs):
    X, _, y, _, w, _ = credit_costs
    model = AutoClassifier(**FIT, n_trials=1, include=["logreg"], metric="log_loss", cv=2, leak_check="off")
    report = nested_cv(model, X, y, outer_cv=2, random_state=0, sample_weight=w)
    # The prior baseline, fitted weighted, scored weighted, by hand on the same outer folds.
    X_all, y_all, _, _ = check_training_data(X, y, n_folds=2)
    for row, (train, test) in zip(report.folds.itertuples(), StratifiedKFold(2, shuffle=True, random_state=0)
                                  .split(X_all, y_all)):
        prior = np.bincount(y_all[train], weights=w[train]) / w[train].sum()
        expected = log_loss(y_all[test], np.tile(prior, (len(test), 1)), sample_weight=w[test])
        assert row.dummy == pytest.approx(expected, rel=1e-9)
    assert (report.folds["ensemble"] < report.folds["dummy"]).all()


def test_the_cli_takes_a_weight_column_that_is_no_feature(tmp_path, credit_costs, caplog):
    X, _, y, _, w, _ = credit_costs
    csv = tmp_path / "credit.csv"
    X.assign(cost=w, outcome=y.to_numpy()).to_csv(csv, index=False)
    code = main(["fit", str(csv), "--target", "outcome", "--weight", "cost", "--time-budget", "none",
                 "--n-trials", "1", "--include", "logreg", "--no-tracking", "--random-state", "0",
                 "--out", str(tmp_path / "model"), "--report", str(tmp_path / "report.html")])
    assert code == 0
    from automl import load
    model = load(tmp_path / "model")
    assert model.weighted_ and "cost" not in model.feature_names_in_
    page = (tmp_path / "report.html").read_text()
    assert "AutoClassifier, roc_auc weighted by sample_weight" in page and "best trial CV roc_auc weighted" in page
    assert main(["fit", str(csv), "--target", "outcome", "--weight", "outcome", "--n-trials", "1",
                 "--no-tracking", "--out", str(tmp_path / "m2")]) == 1
    assert "--weight 'outcome' must name a column" in caplog.text


def test_a_regressor_fits_weighted_with_its_target_transform(load_shared):
    X, y = load_shared("wine-quality-red.csv", "quality")
    w = np.where(y >= 7, 10.0, 1.0)  # the rare good wines count ten times
    fit = dict(**FIT, n_trials=2, include=["ridge"], cv=3, leak_check="off")
    weighted = AutoRegressor(**fit).fit(X, y, sample_weight=w)
    plain = AutoRegressor(**fit).fit(X, y)
    good = y.to_numpy() >= 7
    # Weighted toward the good wines, its predictions for them are nearer their grades.
    error = {name: np.abs(m.predict(X)[good] - y[good]).mean() for name, m in (("w", weighted), ("p", plain))}
    assert error["w"] < error["p"] - 0.2, error
    assert get_metric(weighted.metric_, 0).name == "rmse"


def test_mlflow_says_the_fit_was_weighted(tmp_path, credit_costs):
    from mlflow import MlflowClient

    X, _, y, _, w, _ = credit_costs
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    model = AutoClassifier(**{**FIT, "tracking": True}, n_trials=1, include=["logreg"], cv=2, tracking_uri=uri,
                           leak_check="off").fit(X, y, sample_weight=w)
    run = MlflowClient(uri).get_run(model.mlflow_run_id_)
    assert run.data.params["weighted"] == "True"
    assert "roc_auc weighted by sample_weight" in run.data.tags["mlflow.note.content"]


def test_weights_that_would_mislead_are_refused_or_rescaled_safely():
    X = pd.DataFrame({"a": np.arange(40.0)})
    y = np.arange(40) % 2
    with pytest.raises(DataValidationError, match="zero on every row of class"):
        check_training_data(X, y, n_folds=2, sample_weight=np.where(y == 1, 0.0, 1.0))
    with pytest.raises(DataValidationError, match="real numbers; got dtype datetime64"):
        check_sample_weight(pd.Series(pd.date_range("2020", periods=40)), 40)
    for scale in (1e308, 1e-320):  # a sum that overflows, a rescaling factor that would
        kept = check_training_data(X, y, n_folds=2, sample_weight=np.full(40, scale))[5]
        np.testing.assert_allclose(kept, 1.0)
