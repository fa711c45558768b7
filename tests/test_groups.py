"""Grouped rows (issue 27): ``fit(X, y, groups)``, the grouped folds and holdout (search/setup.py), the groups' check
(data/groups.py), the leak report's group check (checks/before_search.py), nested CV and the CLI with groups."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GroupKFold, KFold, StratifiedKFold

from automl import AutoClassifier, AutoRegressor, nested_cv
from automl.checks import check_data_leakage, check_regression_leakage
from automl.cli import main
from automl.data import check_groups, check_training_data, groups_across
from automl.exceptions import DataRepairWarning, DataValidationError, LeakageWarning
from automl.search import SharedSearch, prepare_search

FIT = dict(time_budget=None, n_jobs=1, random_state=0, tracking=False, verbose=0)


@pytest.fixture(scope="module")
def copied_diabetes(load_shared):
    """diabetes (768 patients) as 4 noisy copies of each row, a patient a group: shuffled folds put copies of
    one patient on both sides, so a model that finds a row's nearest copy scores as if it knew the answer."""
    X, y = load_shared("diabetes.csv", "class")
    rng = np.random.default_rng(0)
    noise = X.std().to_numpy()
    Xc = pd.concat([X + rng.normal(scale=0.05, size=X.shape) * noise for _ in range(4)], ignore_index=True)
    return Xc, pd.concat([y] * 4, ignore_index=True), np.tile(np.arange(len(y)), 4)


def test_groups_are_checked_and_numbered_and_bad_ones_are_named():
    assert check_groups(pd.Series(["b", "a", "b", "c"]), 4).tolist() == [0, 1, 0, 2]
    assert check_groups([3.5, 3.5, 1.0], 3).dtype == np.int64
    with pytest.raises(DataValidationError, match="groups has 3 labels but X has 4 rows"):
        check_groups(["a", "b", "a"], 4)
    with pytest.raises(DataValidationError, match="1 missing label.*rows \\[2\\]"):
        check_groups(["a", "b", None, "a"], 4)
    with pytest.raises(DataValidationError, match="one-dimensional.*\\(2, 2\\)"):
        check_groups([["a", "b"], ["a", "b"]], 2)
    with pytest.raises(DataValidationError, match="all 3 rows in one group \\('p1'\\)"):
        check_groups(["p1"] * 3, 3)
    folds = [(np.array([0, 1]), np.array([2, 3])), (np.array([2, 3]), np.array([0, 1]))]
    assert groups_across(folds, np.array([0, 0, 1, 1])).tolist() == []
    assert groups_across(folds, np.array([0, 1, 1, 2])).tolist() == [1]


def test_the_groups_follow_the_rows_a_rare_class_drops():
    X = pd.DataFrame({"a": np.arange(12.0)})
    y = ["x"] * 6 + ["y"] * 5 + ["z"]  # "z", seen once, is dropped with its row
    groups = [f"g{i // 2}" for i in range(12)]
    with pytest.warns(DataRepairWarning, match="seen once"):
        X_clean, y_enc, classes, _, kept, no_weights = check_training_data(X, y, n_folds=2, groups=groups)
    assert len(X_clean) == len(kept) == 11 and classes.tolist() == ["x", "y"]
    assert no_weights is None
    assert kept.tolist() == [i // 2 for i in range(11)]


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_the_default_folds_keep_every_group_whole_and_are_seeded(task):
    rng = np.random.default_rng(0)
    n = 400
    X = pd.DataFrame({"a": rng.normal(size=n), "b": rng.normal(size=n)})
    y = (X["a"] > 0).astype(int) if task == "classification" else X["a"] * 2.0
    groups = rng.integers(0, 37, size=n)
    setup = prepare_search(X, y, task=task, cv=5, random_state=3, groups=groups)
    assert len(setup.folds) == 5 and setup.validation == "cv"
    assert groups_across(setup.folds, setup.groups).size == 0
    assert np.array_equal(np.sort(np.concatenate([test for _, test in setup.folds])), np.arange(n))
    again = prepare_search(X, y, task=task, cv=5, random_state=3, groups=groups)
    other = prepare_search(X, y, task=task, cv=5, random_state=4, groups=groups)
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(setup.folds, again.folds))
    assert not all(np.array_equal(a[1], b[1]) for a, b in zip(setup.folds, other.folds))
    plain = prepare_search(X, y, task=task, cv=5, random_state=3)
    assert plain.groups is None and groups_across(plain.folds, setup.groups).size > 30  # shuffled rows mix them
    assert plain.search_key != setup.search_key


def test_a_grouped_holdout_keeps_groups_whole_holds_every_class_and_reorders_the_groups_with_the_rows():
    rng = np.random.default_rng(1)
    n = 3000
    X = pd.DataFrame({"row": np.arange(n, dtype=float), "a": rng.normal(size=n)})
    y = np.where(np.arange(n) < 6, 2, (X["a"] > 0).astype(int))  # class 2: six rows, all of group 0
    groups = np.arange(n) // 6
    setup = prepare_search(X, y, cv=5, random_state=0, groups=groups, validation="holdout")
    (train, test), = setup.folds
    assert setup.validation == "holdout" and groups_across(setup.folds, setup.groups).size == 0
    assert set(setup.y[test]) == {0, 1, 2}  # the rare class's whole group moved into the holdout
    # The rows are stored in rung order; each keeps its own group.
    assert np.array_equal(setup.groups, setup.X["row"].to_numpy().astype(int) // 6)
    assert len(test) == pytest.approx(300, abs=30)


def test_groups_and_splitters_that_disagree_are_refused_or_reported():
    X = pd.DataFrame({"a": np.arange(40.0)})
    y = np.arange(40) % 2
    with pytest.raises(DataValidationError, match="groups has 3 group\\(s\\), fewer than the cv=5 folds: give cv=3"):
        prepare_search(X, y, cv=5, random_state=0, groups=np.arange(40) % 3)
    with pytest.raises(ValueError, match="splits by groups, and none were given: pass fit\\(X, y, groups=...\\)"):
        prepare_search(X, y, cv=GroupKFold(4), random_state=0)
    user = prepare_search(X, y, cv=GroupKFold(4), random_state=0, groups=np.arange(40) // 4)
    assert groups_across(user.folds, user.groups).size == 0

    # A splitter that ignores groups: the search runs, and the leak report says how many groups cross.
    model = AutoClassifier(**FIT, n_trials=1, include=["logreg"], cv=KFold(4, shuffle=True, random_state=0))
    with pytest.warns(LeakageWarning, match="10 of 10 groups \\(40 rows\\) have rows on both sides of a fold"):
        model.fit(X, y, groups=np.arange(40) // 4)
    finding, = [f for f in model.leak_report_.findings if f.kind == "group_overlap"]
    assert finding.severity == "high" and finding.evidence == {"n_groups_across": 10, "n_groups": 10,
                                                                "n_rows_across": 40}


def test_shuffled_folds_are_optimistic_on_copied_rows_and_grouped_folds_tell_the_truth(copied_diabetes):
    X, y, groups = copied_diabetes
    test_groups = np.random.default_rng(0).permutation(768)[:192]
    held = np.isin(groups, test_groups)
    fit = dict(**FIT, n_trials=3, include=["knn"])
    shuffled = AutoClassifier(**fit, leak_check="off").fit(X[~held], y[~held])
    grouped = AutoClassifier(**fit).fit(X[~held], y[~held], groups=groups[~held])
    truth = roc_auc_score(y[held] == "tested_positive", grouped.predict_proba(X[held])[:, 1])
    truth_shuffled = roc_auc_score(y[held] == "tested_positive", shuffled.predict_proba(X[held])[:, 1])
    # Shuffled CV finds each row's copies: ~0.99 against ~0.80 on patients never seen.
    assert shuffled.best_score_ > 0.95 and truth_shuffled < 0.88
    assert abs(grouped.best_score_ - truth) < 0.05 and grouped.best_score_ < shuffled.best_score_ - 0.1
    assert grouped.n_groups_ == 576 and shuffled.n_groups_ is None
    assert grouped.leak_report_.notes[0] == "Groups: none of the 576 groups crosses a fold."


def test_nested_cv_with_groups_never_tests_on_a_group_it_trained_on(copied_diabetes):
    X, y, groups = copied_diabetes
    model = AutoRegressor(**FIT, n_trials=2, include=["knn"], leak_check="off", cv=3)
    target = (y == "tested_positive").astype(float) + X["plas"] / 200.0
    grouped = nested_cv(model, X, target, outer_cv=3, random_state=0, groups=groups)
    shuffled = nested_cv(model, X, target, outer_cv=3, random_state=0)
    # Outer scores (RMSE, lower is better): on unseen patients the ensemble errs more than on their copies.
    assert grouped.summary.loc["ensemble", "mean"] > 1.5 * shuffled.summary.loc["ensemble", "mean"]
    # The inner search, grouped too, is close to its outer truth; the shuffled one is optimistic.
    gap = grouped.folds["ensemble"] - grouped.folds["inner_best"]
    assert (gap.abs() < 0.05).all(), grouped.folds
    assert (shuffled.folds["inner_best"] < 0.8 * grouped.folds["inner_best"]).all()


def test_a_worker_without_the_fits_groups_is_refused():
    X = pd.DataFrame({"a": np.arange(60.0)})
    y = np.arange(60) % 2
    setup = prepare_search(X, y, cv=3, random_state=0, groups=np.arange(60) // 3)
    shared = SharedSearch.of(setup, task="classification", settings={"include": None, "sampler": "tpe",
                             "pruning": False}, n_startup_trials=2, storage=None, oof_dir=".", deadline=None,
                             max_trials=None)
    with pytest.raises(DataValidationError, match="automl worker --groups COLUMN"):
        shared.setup(X, y)
    assert shared.setup(X, y, np.arange(60) // 3).search_key == setup.search_key
    with pytest.raises(DataValidationError, match="other folds or metric"):
        shared.setup(X, y, np.arange(60) // 2)


def test_the_cli_takes_a_groups_column_that_is_no_feature(tmp_path, copied_diabetes, caplog):
    X, y, groups = copied_diabetes
    frame = X.iloc[:800].assign(patient=[f"p{g}" for g in groups[:800]], outcome=y.iloc[:800].to_numpy())
    csv = tmp_path / "patients.csv"
    frame.to_csv(csv, index=False)
    code = main(["fit", str(csv), "--target", "outcome", "--groups", "patient", "--time-budget", "none",
                 "--n-trials", "2", "--include", "logreg", "--no-tracking", "--random-state", "0",
                 "--out", str(tmp_path / "model")])
    assert code == 0
    from automl import load
    model = load(tmp_path / "model")
    assert model.n_groups_ == 768 and "patient" not in model.feature_names_in_
    assert main(["fit", str(csv), "--target", "outcome", "--groups", "nurse", "--n-trials", "1",
                 "--no-tracking", "--out", str(tmp_path / "m2")]) == 1
    assert "--groups 'nurse' must name a column" in caplog.text


def _checked(X, y, task="classification"):
    X_clean, y_enc, _, profile = check_training_data(X, y, n_folds=5, task=task)
    kind = KFold if task == "regression" else StratifiedKFold
    return X_clean, y_enc, profile, list(kind(5, shuffle=True, random_state=0).split(X_clean, y_enc))


def test_a_patient_column_without_groups_is_an_entity_with_the_inflation_it_causes(copied_diabetes, load_shared):
    X, y, groups = copied_diabetes
    for patient in (groups, [f"p{g}" for g in groups]):  # a number or a name
        report = check_data_leakage(*_checked(X.assign(patient=patient), y), random_state=0)
        finding, = [f for f in report.findings if f.kind == "entity"]
        e = finding.evidence
        assert finding.column == "patient" and finding.severity == "high"
        assert e["n_values"] == 768 and e["mean_rows_per_value"] == 4.0 and e["target_agreement"] == 1.0
        assert e["shuffled_folds_score"] > 0.95 and e["grouped_folds_score"] < 0.87 and e["inflation"] > 0.1
        assert "Pass groups=X['patient'] to fit" in finding.message
        # Its levels' purity is the same evidence: not reported again as target leakage.
        assert not any(f.kind == "target_leakage" and "levels holding a single class" in f.message
                       for f in report.findings)
    # Without the column there is nothing to name; with groups the fit does not look.
    assert not check_data_leakage(*_checked(X, y), random_state=0).findings
    model = AutoClassifier(**FIT, n_trials=1, include=["logreg"]).fit(X.assign(patient=groups), y, groups=groups)
    assert not [f for f in model.leak_report_.findings if f.kind == "entity"]

    # A regression target: the forest's R^2 instead of ROC AUC.
    target = (y == "tested_positive").astype(float) + X["plas"] / 200.0
    report = check_regression_leakage(*_checked(X.assign(patient=groups), target, "regression"), random_state=0)
    finding, = [f for f in report.findings if f.kind == "entity"]
    assert "a model scores R^2" in finding.message and finding.evidence["inflation"] > 0.1


@pytest.mark.parametrize("name, target", [("kc1.csv", "Class"), ("credit-g.csv", "class"), ("diabetes.csv", "class")])
def test_measurements_with_repeated_values_are_no_entities(load_shared, name, target):
    # kc1's line counts (and its 43% duplicated rows), credit-g's ages, diabetes's insulin: many repeated
    # whole numbers, but the rows of one value agree on the class no more than chance.
    report = check_data_leakage(*_checked(*load_shared(name, target)), random_state=0)
    assert not [f for f in report.findings if f.kind == "entity"]


def test_group_counts_that_would_fail_every_trial_are_refused_before_the_search(copied_diabetes):
    from sklearn.model_selection import LeaveOneGroupOut

    X, y, groups = copied_diabetes
    rare = np.where(np.isin(groups, [7, 8]), "pos", "neg")  # a class of 8 rows in 2 groups
    with pytest.raises(DataValidationError, match="Class 1 \\(in encoded order\\) lies in 2 group\\(s\\) only "
                                                  "\\(groups\\): with cv=5 .* Give cv=2 or fewer"):
        prepare_search(X, rare, cv=5, random_state=0, groups=groups)
    with pytest.raises(ValueError, match="cv=LeaveOneGroupOut\\(\\) splits by groups, and none were given"):
        prepare_search(X, y, cv=LeaveOneGroupOut(), random_state=0)
    model = AutoClassifier(**FIT, n_trials=1, include=["logreg"])
    with pytest.raises(DataValidationError,
                       match="groups has 2 group\\(s\\), fewer than the outer_cv=3 folds: give outer_cv=2 or"):
        nested_cv(model, X, y, outer_cv=3, random_state=0, groups=groups % 2)


def test_a_group_of_dropped_rows_only_is_not_counted(copied_diabetes):
    X, y, groups = copied_diabetes
    X1 = pd.concat([X.iloc[:1], X], ignore_index=True)
    y1 = pd.concat([pd.Series(["single"]), y], ignore_index=True)  # a class seen once: its row is dropped
    with pytest.warns(DataRepairWarning, match="seen once"):
        setup = prepare_search(X1, y1, cv=5, random_state=0, groups=np.concatenate([[-1], groups]))
    assert setup.groups.max() + 1 == 768 and len(setup.groups) == len(y)


def test_the_report_page_says_the_folds_were_grouped(tmp_path):
    X = pd.DataFrame({"a": np.arange(60.0), "b": np.arange(60.0) % 7})
    y = np.arange(60) % 2
    model = AutoClassifier(**FIT, n_trials=1, include=["logreg"], cv=3).fit(X, y, groups=np.arange(60) // 3)
    page = model.report(tmp_path / "r.html").read_text()
    assert "that keeps each of 20 groups whole" in page
