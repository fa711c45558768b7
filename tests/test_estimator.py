"""AutoClassifier: scikit-learn's common checks, then our own AutoML checks on real data."""

import time
import warnings
from datetime import timedelta
from types import SimpleNamespace

import joblib
import numpy as np
import optuna
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.metrics import log_loss, roc_auc_score
from sklearn.utils.estimator_checks import parametrize_with_checks

from automl import AutoClassifier
from automl.datasets import load_dataset
from automl.exceptions import DataRepairWarning, DataValidationError, LeakageWarning
from automl.search import open_storage
from automl.space import ComponentSpec

TINY = dict(time_budget=None, n_trials=3, include=["logreg"], cv=2, tracking=False, verbose=0,
            random_state=0)

# Every check passes. Their shared 20-row, 4-class data has a class with one member, which fit drops
# with a DataRepairWarning (until the rare-class repair, six checks failed on the refusal).
# A search is not invariant to repeating a row in place of weighting it: the repeated rows change the folds
# (and land on both sides of them), so the two fits search differently.
EXPECTED_FAILED_CHECKS = {
    "check_sample_weight_equivalence_on_dense_data": "repeated rows change the CV folds; weights do not",
}


def _expected_failures(estimator):
    return EXPECTED_FAILED_CHECKS


@parametrize_with_checks([AutoClassifier(**TINY)], expected_failed_checks=_expected_failures)
def test_sklearn_common_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


@pytest.fixture(scope="module")
def credit_g():
    X, y = load_dataset("credit-g")
    return X.iloc[:600], y.iloc[:600], X.iloc[600:], y.iloc[600:]


def test_same_seed_same_leaderboard(credit_g):
    X, y, _, _ = credit_g
    params = dict(TINY, include=["logreg", "hgb", "rf"], n_trials=6, cv=3)
    first = AutoClassifier(**params).fit(X, y).leaderboard_
    second = AutoClassifier(**params).fit(X, y).leaderboard_
    columns = ["trial", "family", "state", "mean", "std", "weight"]
    pd.testing.assert_frame_equal(first[columns], second[columns])
    assert first["params"].tolist() == second["params"].tolist()


def test_continued_study_keeps_trials_apart_by_search_key(credit_g, tmp_path):
    X, y, _, _ = credit_g
    params = dict(TINY, include=["logreg", "hgb"], n_trials=3, cv=3, storage=str(tmp_path / "study.journal"),
                  oof_dir=str(tmp_path / "oof"))
    first = AutoClassifier(**params).fit(X, y)
    # Same data, seed and metric: the second fit's trials are comparable, and the first fit's count.
    second = AutoClassifier(**params).fit(X, y)
    assert second.search_key_ == first.search_key_
    assert set(first.leaderboard_["trial"]) < set(second.leaderboard_["trial"])
    assert len(second.leaderboard_) == 6 and len(second.study_.trials) >= 6
    before = first.leaderboard_.set_index("trial")["mean"]
    pd.testing.assert_series_equal(second.leaderboard_.set_index("trial")["mean"].loc[before.index], before)
    assert (tmp_path / "oof" / "automl" / "trial_0.npy").exists()
    # Other rows: other key; the earlier trials stay in the study but not in the leaderboard.
    third = AutoClassifier(**params).fit(X.iloc[:500], y.iloc[:500])
    assert third.search_key_ != first.search_key_
    assert set(third.leaderboard_["trial"]).isdisjoint(second.leaderboard_["trial"])
    assert len(third.leaderboard_) == 3 and len(third.study_.trials) >= 9


def test_continuing_a_study_with_other_families_is_refused_before_any_trial(credit_g, tmp_path):
    X, y, _, _ = credit_g
    params = dict(TINY, n_trials=2, cv=3, storage=str(tmp_path / "study.journal"))
    AutoClassifier(**dict(params, include=["logreg", "hgb"])).fit(X, y)
    # Optuna cannot change the choices of "model" within a study: every trial would have failed.
    with pytest.raises(ValueError, match=r"chose their model among \[.*'hgb'.*\]; this fit offers \[.*'rf'.*\]"):
        AutoClassifier(**dict(params, include=["logreg", "rf"])).fit(X, y)
    study = optuna.load_study(study_name="automl", storage=open_storage(params["storage"], tmp_path))
    assert len(study.get_trials(states=(optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED,
                                        optuna.trial.TrialState.FAIL))) == 2


def test_string_labels_probabilities_and_holdout(credit_g):
    X, y, X_test, y_test = credit_g
    model = AutoClassifier(**dict(TINY, include=["logreg", "hgb"], n_trials=5, cv=3)).fit(X, y)
    assert list(model.classes_) == ["bad", "good"]
    proba = model.predict_proba(X_test)
    assert proba.shape == (len(X_test), 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert set(model.predict(X_test)) <= {"bad", "good"}
    # credit-g is learnable: a held-out AUC near 0.5 would mean labels or columns got mixed up.
    assert roc_auc_score(y_test == "good", proba[:, 1]) > 0.7
    reordered = X_test[X_test.columns[::-1]]
    np.testing.assert_allclose(model.predict_proba(reordered), proba)


def test_fitted_attributes_and_ensemble_not_worse(credit_g):
    X, y, _, _ = credit_g
    model = AutoClassifier(**dict(TINY, include=["logreg", "hgb", "rf"], n_trials=8, cv=3)).fit(X, y)
    board = model.leaderboard_
    assert list(board.columns) == ["trial", "family", "state", "mean", "std", "folds", "seconds",
                                   "weight", "params", "note"]
    assert len(board) == 8
    assert board["weight"].sum() == pytest.approx(1.0)
    complete = board[board["state"] == "COMPLETE"]
    assert model.best_score_ == pytest.approx(complete["mean"].max())
    assert model.best_params_["model"] == complete.iloc[0]["family"]
    # Ensemble selection keeps the best iteration, so on the hillclimb set it is never worse.
    assert model.ensemble_score_ >= model.best_single_oof_score_ - 1e-9
    # Pooled OOF scores: none of the complete trials' means (per-fold averages) is the same quantity.
    assert 0.5 < model.best_single_oof_score_ < 1.0
    assert model.n_features_in_ == 20 and list(model.feature_names_in_) == list(X.columns)
    assert len(model.study_.trials) == 8


def test_multiclass_default_metric_is_log_loss(load_shared):
    X, y = load_shared("glass.csv", "Type")
    model = AutoClassifier(**dict(TINY, include=["logreg", "rf"], n_trials=4, cv=3)).fit(X, y)
    assert model.metric_ == "log_loss"
    assert model.leaderboard_.iloc[0]["mean"] == pytest.approx(
        model.leaderboard_[model.leaderboard_["state"] == "COMPLETE"]["mean"].min()
    )
    assert model.predict_proba(X).shape == (len(X), len(np.unique(y)))


def test_an_identifier_column_feeds_no_model_and_may_be_left_out_at_predict(shared_data):
    # Titanic's Name is distinct on every row: one-hot or target encoding it fits noise.
    frame = pd.read_csv(shared_data / "titanic.csv")
    X, y = frame.drop(columns="Survived"), frame["Survived"]
    with pytest.warns(DataRepairWarning, match=r"'Name' \(891 values, 100% of rows\)"):
        model = AutoClassifier(**dict(TINY, include=["logreg"], n_trials=2, cv=3)).fit(X, y)
    assert model.profile_.identifier_columns == ("Name",)
    # The duplicate-row check still reads Name: passengers who agree on every other column are
    # different people, not copies (without Name it called 16 of them copies).
    assert not [f for f in model.leak_report_.findings if f.kind == "duplicates"]
    head = X.head(5)
    expected = model.predict_proba(head)
    np.testing.assert_allclose(model.predict_proba(head.drop(columns="Name")), expected)
    np.testing.assert_allclose(model.predict_proba(head.assign(Name="someone else")), expected)


def test_class_seen_once_is_predicted_at_its_base_rate(shared_data):
    # ecoli with one imS row left: the class is dropped from the search but stays in classes_, so a
    # test row of it costs log(n) instead of the clipping bound (the benchmark lost ecoli on one row).
    frame = pd.read_csv(shared_data / "ecoli.csv")
    frame = frame.drop(index=frame.index[frame["class"] == "imS"][:1])
    X, y = frame.drop(columns="class"), frame["class"]
    with pytest.warns(DataRepairWarning, match="single member"):
        model = AutoClassifier(**dict(TINY, include=["logreg"], n_trials=2, cv=3)).fit(X, y)
    assert list(model.classes_) == sorted(y.unique()) and len(model.classes_) == 8
    counts = dict(zip(model.classes_, model.class_counts_))
    assert counts["imS"] == 1 and counts["cp"] == (y == "cp").sum()
    proba = model.predict_proba(X)
    imS = list(model.classes_).index("imS")
    np.testing.assert_allclose(proba[:, imS], 1 / len(y))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert log_loss(y, proba, labels=model.classes_) < 1.0
    assert "imS" not in model.predict(X)


class _Broken(ClassifierMixin, BaseEstimator):
    def fit(self, X, y):
        raise RuntimeError("broken on purpose")


def test_every_trial_failing_falls_back_with_warning(credit_g):
    X, y, X_test, _ = credit_g
    broken = ComponentSpec("broken", "Broken", lambda trial, profile, prefix: {},
                           lambda params, random_state: _Broken())
    model = AutoClassifier(**dict(TINY, include=["broken"], components=[broken]))
    with pytest.warns(UserWarning, match="None of 3 started trials finished"):
        model.fit(X, y)
    assert set(model.leaderboard_["state"]) == {"FAIL"}
    assert model.leaderboard_["note"].str.contains("broken on purpose").all()
    assert model.predict_proba(X_test).shape == (len(X_test), 2)


@pytest.mark.parametrize("name, value, expected", [
    ("cv", 1, "The 'cv' parameter of AutoClassifier must be an int in [2, inf), one of ['time'] or a CV "
              "splitter. Got 1 instead."),
    ("sampler", "grid", "The 'sampler' parameter of AutoClassifier must be one of ['tpe', 'random']. "
                        "Got 'grid' instead."),
    # A str has a .split method, yet is no CV splitter; a str is a sequence, yet no list of keys.
    ("cv", "five", "The 'cv' parameter of AutoClassifier must be an int in [2, inf), one of ['time'] or a CV "
                   "splitter. Got 'five' instead."),
    ("include", "hgb", "The 'include' parameter of AutoClassifier must be a list of str or None. "
                       "Got 'hgb' instead."),
    ("n_jobs", 0, "The 'n_jobs' parameter of AutoClassifier must be an int in [1, inf) or an int in "
                  "(-inf, -1]. Got 0 instead."),
])
def test_invalid_parameter_message(credit_g, name, value, expected):
    X, y, _, _ = credit_g
    with pytest.raises(ValueError) as error:
        AutoClassifier(**dict(TINY, **{name: value})).fit(X, y)
    assert str(error.value) == expected


def test_unknown_family_lists_valid_keys(credit_g):
    X, y, _, _ = credit_g
    with pytest.raises(ValueError, match="Valid keys are"):
        AutoClassifier(**dict(TINY, include=["catboostish"])).fit(X, y)


def test_negative_n_jobs_counts_the_cores_as_joblib_does(credit_g, monkeypatch):
    X, y, _, _ = credit_g
    monkeypatch.setattr(joblib, "cpu_count", lambda *args, **kwargs: 3)
    # A time budget, so that the trials run in the resolved number of worker processes.
    params = dict(TINY, time_budget=600, n_trials=2)
    assert AutoClassifier(**dict(params, n_jobs=-1)).fit(X, y).n_jobs_ == 3
    model = AutoClassifier(**dict(params, n_jobs=-2)).fit(X, y)
    assert model.n_jobs_ == 2 and model.get_params()["n_jobs"] == -2
    assert len(model.leaderboard_) == 2 and "FAIL" not in set(model.leaderboard_["state"])


def test_a_refit_on_an_unnamed_array_forgets_the_column_names(credit_g):
    X, y, _, _ = credit_g
    numeric = X.select_dtypes("number")
    model = AutoClassifier(**TINY).fit(numeric, y)
    assert list(model.feature_names_in_) == list(numeric.columns)
    model.fit(numeric.to_numpy()[:, :5], y)  # as scikit-learn's estimators do: the old names would lie
    assert model.n_features_in_ == 5 and not hasattr(model, "feature_names_in_")
    assert model.predict_proba(numeric.to_numpy()[:3, :5]).shape == (3, 2)


def test_clone_keeps_params():
    model = AutoClassifier(**TINY)
    assert clone(model).get_params() == model.get_params()


def test_unseen_category_and_missing_column_at_predict(credit_g):
    X, y, X_test, _ = credit_g
    model = AutoClassifier(**dict(TINY, include=["logreg", "hgb"], n_trials=4, cv=3)).fit(X, y)
    unseen = X_test.head(5).assign(purpose="time machine", checking_status="never seen")
    unseen.loc[unseen.index[0], "purpose"] = "a boat"
    with pytest.warns(DataRepairWarning) as caught:
        proba = model.predict_proba(unseen)
    assert [str(w.message).split(". Families")[0] for w in caught] == [  # one warning per call, each column named
        "Categories unseen in training, in 2 column(s): 'checking_status' 5 value(s) ('never seen'), "
        "'purpose' 5 value(s) (2 distinct, e.g. 'a boat')"]
    assert proba.shape == (5, 2) and np.isfinite(proba).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataRepairWarning)  # levels seen in training: no warning
        model.predict_proba(X.head(5))
    with pytest.raises(ValueError, match="credit_amount"):
        model.predict(X_test.drop(columns=["credit_amount"]))


def test_an_unseen_category_is_read_as_missing_by_ordinal_families(credit_g):
    """What the warning says: HGB (ordinal codes) predicts an unseen level as a missing cell."""
    X, y, X_test, _ = credit_g
    model = AutoClassifier(**dict(TINY, include=["hgb"], n_trials=1)).fit(X, y)
    rows = X_test.head(20)
    with pytest.warns(DataRepairWarning, match="'purpose' 20 value"):
        unseen = model.predict_proba(rows.assign(purpose="time machine"))
    np.testing.assert_allclose(unseen, model.predict_proba(rows.assign(purpose=np.nan)))
    assert not np.allclose(unseen, model.predict_proba(rows))  # the column matters to this model


def test_value_missing_at_predict_in_a_column_complete_in_training(credit_g):
    """Scale-sensitive families get an imputer even when training had nothing to impute."""
    X, y, X_test, _ = credit_g
    assert X["credit_amount"].notna().all()
    model = AutoClassifier(**dict(TINY, include=["logreg", "knn"], n_trials=4, cv=3)).fit(X, y)
    holes = X_test.head(3).assign(credit_amount=np.nan, purpose=np.nan)
    proba = model.predict_proba(holes)
    assert proba.shape == (3, 2) and np.isfinite(proba).all()


def test_leak_check_warns_raises_or_stays_off():
    """A column filed after the outcome (Poisson counts by class) is found before any search."""
    X, y = load_dataset("kc1")
    rng = np.random.default_rng(0)
    defective = (y.astype(str).str.lower() == "true").to_numpy()
    X = X.assign(bugs_reported_after_release=rng.poisson(np.where(defective, 2.0, 0.3)))
    params = dict(TINY, n_trials=2, cv=3)
    with pytest.warns(LeakageWarning, match="bugs_reported_after_release"):
        model = AutoClassifier(**params).fit(X, y)
    frame = model.leak_report_.to_frame()
    kinds = set(frame.loc[frame["column"] == "bugs_reported_after_release", "kind"])
    assert "target_leakage" in kinds  # before the search; the model check may add dominant_feature
    # kc1 really holds duplicated rows (identical module metrics), a high-severity finding.
    with pytest.raises(DataValidationError, match="leak check found"):
        AutoClassifier(**dict(params, leak_check="raise")).fit(X, y)
    assert not AutoClassifier(**dict(params, leak_check="off")).fit(X, y).leak_report_


def test_the_final_model_is_checked_for_a_dominant_column(load_shared):
    """credit-approval with the label plus noise: the data check and the model check both see it."""
    X, y = load_shared("credit-approval.csv", "class")
    noise = np.random.default_rng(0).normal(0, 0.6, len(y))
    X = X.assign(approval_score=(y == "+").to_numpy() + noise)
    with pytest.warns(LeakageWarning, match="'approval_score' carries"):
        model = AutoClassifier(**dict(TINY, include=["hgb"], n_trials=2, cv=3)).fit(X, y)
    dominant = [f for f in model.leak_report_.findings if f.kind == "dominant_feature"]
    assert [f.column for f in dominant] == ["approval_score"]
    assert dominant[0].evidence["importance_share"] > 0.5 and dominant[0].evidence["n_folds"] == 3
    assert model.leak_report_.notes[-1].startswith("Model check: permutation importance on 3 held-out fold(s)")
    assert model.timings_["model_check"] > 0
    off = AutoClassifier(**dict(TINY, include=["hgb"], n_trials=2, cv=3, leak_check="off")).fit(X, y)
    assert off.leak_report_.notes == () and "model_check" not in off.timings_


@pytest.mark.slow
def test_the_final_stages_spare_time_goes_back_to_the_search(credit_g, monkeypatch):
    """Half of a 20 s budget kept for a final fit of logistic regressions (well under a second): a top-up.

    The share is raised from 15% so that the top-up surely clears its floor and margins at a test's budget.
    20 s, not 12: a trial still busy at the first deadline has its worker stopped, and the top-up then
    starts the pool again (2-3 s); CI once spent all of a 12 s budget's top-up on that and ran no trial.
    Random search shows the top-up draws from its own stream: replaying the first search's seed would
    propose its trials again.
    """
    from automl.estimators import base as estimator_module

    monkeypatch.setattr(estimator_module, "FINAL_STAGE_SHARE", 0.5)
    X, y, _, _ = credit_g
    model = AutoClassifier(time_budget=20, include=["logreg"], cv=3, sampler="random", tracking=False, verbose=0,
                           random_state=0).fit(X, y)
    launches = {}
    for trial in model.study_.trials:
        launches.setdefault(trial.user_attrs.get("launch"), []).append(trial)
    first, top_up = sorted(launches.values(), key=lambda trials: trials[0].number)
    # The first search ends about 10 s before the final deadline and the top-up runs in what is left. How
    # many trials it fits in depends on the machine's speed (a loaded CI machine ran one), so not asserted.
    assert model.timings_["top_up"] > 0 and top_up
    assert model.timings_["total"] <= 1.10 * 20  # the budget's promise, which a slow machine keeps too
    first_params = [t.params for t in first]
    assert not any(t.params in first_params for t in top_up)
    complete = {t.number for t in top_up if t.state.name == "COMPLETE"}
    assert complete <= set(model.ensemble_candidates_), "the top-up's complete trials are candidates"


def test_a_top_up_keeps_time_for_a_busy_trial_and_for_restarting_stopped_workers(monkeypatch):
    """The top-up ends early enough for a trial as long as the longest so far, and pays for a new pool."""
    from automl.estimators import base as estimator_module

    monkeypatch.setattr(estimator_module, "final_fit_seconds", lambda *args, **kwargs: 0.5)
    setup = SimpleNamespace(y=None, folds=None, metric=None, seed=0, sample_weight=None)
    model = AutoClassifier(time_budget=60, tracking=False)
    model.n_jobs_ = 1  # as the fit's _prepare sets it

    def top_up(longest=0.4, stopped=0, start_seconds=6.0):
        # Trial 1 ran 30 s but left no OOF predictions (pruned): it does not set the margin.
        trials = [SimpleNamespace(number=0, duration=timedelta(seconds=longest)),
                  SimpleNamespace(number=1, duration=timedelta(seconds=30))]
        result = SimpleNamespace(oof={0: None}, stopped=stopped, start_seconds=start_seconds,
                                 study=SimpleNamespace(get_trials=lambda deepcopy: trials))
        end = model._top_up_deadline(result, setup, time.time() + 10, 3.0, None, "study", None)
        return None if end is None else end - time.time()

    # 10 s to the final deadline, less twice the 0.5 s estimate and 1.5 times the 0.4 s trial: 8.4 s.
    assert 8.0 < top_up() < 8.41
    assert 5.6 < top_up(longest=10.0) < 6.01  # 15 s, capped at the 3 s grace
    # Stopped workers: 8.4 s less 6 s to start a new pool clears the floor (2% of 60 s), less 7.5 s does not.
    assert 8.0 < top_up(stopped=1) < 8.41
    assert top_up(stopped=1, start_seconds=7.5) is None
    assert top_up(stopped=0, start_seconds=7.5) is not None


@pytest.mark.parametrize("budget, pruning, prunes", [
    (60, "auto", False), (119, "auto", False), (120, "auto", True), (300, "auto", True), (None, "auto", True),
    (60, True, True), (300, False, False),
])
def test_auto_pruning_prunes_from_a_120_s_budget_or_without_one(budget, pruning, prunes):
    assert AutoClassifier(time_budget=budget, pruning=pruning)._pruning() is prunes


def test_pruning_takes_a_bool_or_auto():
    with pytest.raises(ValueError, match="pruning"):
        AutoClassifier(**dict(TINY, pruning="sometimes")).fit([[0.0], [1.0]] * 10, [0, 1] * 10)


def test_a_search_stopped_by_its_trial_count_is_not_topped_up(credit_g, monkeypatch):
    from automl.estimators import base as estimator_module

    monkeypatch.setattr(estimator_module, "FINAL_STAGE_SHARE", 0.5)
    X, y, _, _ = credit_g
    done = AutoClassifier(time_budget=12, n_trials=3, include=["logreg"], cv=3, tracking=False, verbose=0,
                          random_state=0).fit(X, y)
    assert len(done.study_.trials) == 3 and done.timings_["top_up"] == 0.0
