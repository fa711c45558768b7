"""Tests of automl.checks.leakage on kc1 and credit-approval with leaks, ids and copies planted in them."""

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.model_selection import StratifiedKFold

from automl.checks import LeakageReport, LeakFinding, check_data_leakage, leakage
from automl.data import check_training_data

FRAME_COLUMNS = ["column", "kind", "severity", "evidence", "message"]


def validated(X, y, n_folds=5):
    """check_training_data, then the shared stratified folds the search would use."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant-column repairs are not under test here
        X_clean, y_enc, _, profile = check_training_data(X, y, n_folds=n_folds)
    folds = list(StratifiedKFold(n_folds, shuffle=True, random_state=0).split(X_clean, y_enc))
    return X_clean, y_enc, profile, folds


def leak_check(X, y, **kwargs):
    X_clean, y_enc, profile, folds = validated(X, y)
    return check_data_leakage(X_clean, y_enc, profile, folds, random_state=0, **kwargs)


def of_kind(report, kind):
    return {f.column: f for f in report.findings if f.kind == kind}


@pytest.fixture(scope="module")
def kc1(shared_data):
    """kc1 as read from disk: 2109 modules, 21 code metrics, Class false/true (326 defective)."""
    frame = pd.read_csv(shared_data / "kc1.csv")
    return frame.drop(columns="Class"), frame["Class"]


def defective(y):
    return y.astype(str).str.lower().eq("true").to_numpy()


@pytest.fixture(scope="module")
def kc1_with_bug_count(kc1):
    """kc1 plus a count only known after release: Poisson(2.0) for defective modules, else Poisson(0.3)."""
    X, y = kc1
    rng = np.random.default_rng(0)
    bugs = np.where(defective(y), rng.poisson(2.0, len(y)), rng.poisson(0.3, len(y)))
    return X.assign(bugs_reported_after_release=bugs), y


@pytest.fixture(scope="module")
def bug_count_report(kc1_with_bug_count):
    return leak_check(*kc1_with_bug_count)


# ---- target leakage -------------------------------------------------------------------------------
def test_bug_count_known_after_release_is_target_leakage(kc1, bug_count_report):
    y = kc1[1]
    found = of_kind(bug_count_report, "target_leakage")
    assert list(found) == ["bugs_reported_after_release"]  # and none of kc1's own columns
    finding = found["bugs_reported_after_release"]
    figures = finding.evidence
    assert finding.severity == "medium"
    assert figures["single_column_auc"] >= leakage.SUSPICIOUS_AUC
    assert figures["single_column_auc"] >= figures["other_columns_auc"] + leakage.OTHERS_MARGIN
    assert figures["n_rows_scored"] == figures["n_rows"] == len(y)
    assert "'bugs_reported_after_release'" in finding.message
    assert f"{figures['single_column_auc']:.3f}" in finding.message
    assert f"{figures['other_columns_auc']:.3f}" in finding.message


def test_values_beyond_float32_are_checked_like_any_others(kc1_with_bug_count, bug_count_report):
    # scikit-learn's trees cast to float32: a column scaled past 3.4e38 used to raise before the search.
    X, y = kc1_with_bug_count
    huge = leak_check(X.assign(bugs_reported_after_release=X["bugs_reported_after_release"] * 1e300), y)
    found, before = of_kind(huge, "target_leakage"), of_kind(bug_count_report, "target_leakage")
    assert list(found) == ["bugs_reported_after_release"]
    assert found["bugs_reported_after_release"].evidence == before["bugs_reported_after_release"].evidence


def test_plain_kc1_has_no_target_leakage_or_identifier(kc1):
    report = leak_check(*kc1)
    assert [f.kind for f in report.findings] == ["duplicates"]


def test_near_perfect_column_is_high_in_multiclass(shared_data):
    frame = pd.read_csv(shared_data / "vehicle.csv")
    X, y = frame.drop(columns="Class"), frame["Class"]
    codes = y.astype("category").cat.codes.to_numpy()
    noisy = codes + np.random.default_rng(0).normal(0, 0.1, len(y))
    finding = of_kind(leak_check(X.assign(inspector_grade=noisy), y), "target_leakage")["inspector_grade"]
    assert finding.severity == "high"
    assert finding.evidence["single_column_auc"] >= leakage.NEAR_PERFECT_AUC
    assert finding.evidence["full_baseline_auc"] > 0.5


def test_categorical_levels_pure_in_one_class(credit):
    X, y, _, _ = credit
    rng = np.random.default_rng(0)
    status = np.where(y == 1, "closed", "open").astype(object) + "-" + rng.integers(0, 4, len(y)).astype(str)
    status[rng.random(len(y)) < 0.05] = "unknown"
    report = leak_check(X.assign(case_status=status), y)
    finding = of_kind(report, "target_leakage")["case_status"]
    pure_rows = (status != "unknown").sum() / len(y)
    assert finding.severity == "high"
    assert finding.evidence["pure_row_share"] == pytest.approx(pure_rows, abs=1e-4)
    assert finding.evidence["chance_pure_row_share"] < 0.01
    assert f"{pure_rows:.0%}" in finding.message


def test_large_data_is_scored_on_a_sample(kc1_with_bug_count, monkeypatch):
    monkeypatch.setattr(leakage, "MAX_ROWS", 1000)
    X, y = kc1_with_bug_count
    first, again = leak_check(X, y), leak_check(X, y)
    finding = of_kind(first, "target_leakage")["bugs_reported_after_release"]
    assert 990 <= finding.evidence["n_rows_scored"] <= 1010
    assert finding.evidence["n_rows"] == len(y)
    assert f"sample of {finding.evidence['n_rows_scored']:,} of 2,109 rows" in finding.message
    assert first == again  # the sample is seeded by random_state


# ---- identifiers ----------------------------------------------------------------------------------
def test_row_number_of_a_table_sorted_by_class_is_a_high_identifier(kc1):
    X, y = kc1
    assert defective(y)[:326].mean() > 0.9  # kc1.csv lists most defective modules first
    report = leak_check(X.assign(row_id=np.arange(len(y))), y)
    finding = of_kind(report, "identifier")["row_id"]
    assert finding.severity == "high"
    assert finding.evidence["distinct_ratio"] == 1.0
    assert finding.evidence["single_column_auc"] > leakage.ID_AUC
    assert "'row_id'" in finding.message
    assert "row_id" not in of_kind(report, "target_leakage")  # reported once, as what it is


def test_an_identifier_does_not_mask_a_leak(kc1_with_bug_count):
    X, y = kc1_with_bug_count
    report = leak_check(X.assign(row_id=np.arange(len(y))), y)
    assert of_kind(report, "identifier")["row_id"].severity == "high"
    leak = of_kind(report, "target_leakage")["bugs_reported_after_release"]
    assert leak.evidence["n_baseline_columns"] == X.shape[1]  # every column but the identifier
    assert leak.evidence["other_columns_auc"] < 0.9


def test_shuffled_string_ids_feed_no_model_and_alone_are_a_medium_identifier(credit):
    # Validation keeps a categorical identifier from every model (automl.data.validation), so fit's check
    # is quiet about it; offered to the models, it is a medium identifier: it does not follow the outcome.
    X, y, _, _ = credit
    ids = np.random.default_rng(0).permutation([f"C{i:05d}" for i in range(len(y))])
    X_clean, y_enc, profile, folds = validated(X.assign(customer=ids), y)
    assert profile.identifier_columns == ("customer",) and "customer" in X_clean.columns
    assert not of_kind(check_data_leakage(X_clean, y_enc, profile, folds, random_state=0), "identifier")
    offered = dataclasses.replace(profile, identifier_columns=())
    finding = of_kind(check_data_leakage(X_clean, y_enc, offered, folds, random_state=0), "identifier")["customer"]
    assert finding.severity == "medium"
    assert finding.evidence["single_column_auc"] <= leakage.ID_AUC


def test_distinct_measurements_are_not_identifiers(kc1):
    X, y = kc1
    rng = np.random.default_rng(0)
    real = rng.normal(size=len(y))  # continuous, all distinct
    counts = np.unique(np.round(rng.lognormal(10, 1, 3 * len(y))))[: len(y)]  # integers, skewed
    measured = X.assign(voltage=real, bytes_read=rng.permutation(counts))
    assert measured["bytes_read"].nunique() == len(y)
    report = leak_check(measured, y)
    assert not of_kind(report, "identifier")
    assert not {"voltage", "bytes_read"} & set(of_kind(report, "target_leakage"))


# ---- duplicates -----------------------------------------------------------------------------------
def test_duplicated_rows_are_counted(kc1):
    X, y = kc1
    copies = np.random.default_rng(0).choice(len(y), size=len(y) // 10, replace=False)
    X_dup = pd.concat([X, X.iloc[copies]], ignore_index=True)
    y_dup = pd.concat([y, y.iloc[copies]], ignore_index=True)
    X_clean, y_enc, profile, folds = validated(X_dup, y_dup)
    finding = of_kind(check_data_leakage(X_clean, y_enc, profile, folds), "duplicates")[None]
    figures = finding.evidence
    # kc1 already repeats 917 rows; every planted copy adds one.
    assert figures["n_duplicate_rows"] == X.duplicated().sum() + len(copies) == X_dup.duplicated().sum()
    assert figures["duplicate_share"] == pytest.approx(X_dup.duplicated().mean(), abs=1e-4)
    assert finding.severity == "high"
    rows = [tuple(r) for r in X_clean.to_numpy()]
    crossing = 0
    for train, test in folds:
        seen = {rows[j] for j in train}
        crossing += sum(rows[i] in seen for i in test)
    assert figures["n_test_rows_with_copy_in_train"] == crossing
    labels = pd.Series(y_enc).groupby([X_clean[c] for c in X_clean.columns]).nunique()
    assert figures["n_conflicting_groups"] == (labels > 1).sum()
    assert f"{figures['n_duplicate_rows']:,} rows" in finding.message


def test_no_duplicates_no_finding(credit):
    X, y, profile, folds = credit
    assert not X.duplicated().any()
    assert not of_kind(check_data_leakage(X, y, profile, folds), "duplicates")


# ---- the report -----------------------------------------------------------------------------------
def test_report_frame_has_one_row_per_finding(bug_count_report):
    report = bug_count_report
    frame = report.to_frame()
    assert list(frame.columns) == FRAME_COLUMNS
    assert len(frame) == len(report.findings) == 2 and report
    expected = [["duplicates", "high"], ["target_leakage", "medium"]]
    assert frame[["kind", "severity"]].values.tolist() == expected
    assert frame["evidence"].tolist() == [f.evidence for f in report.findings]
    for finding in report.findings:
        assert all(isinstance(v, (int, float, str)) for v in finding.evidence.values())
    empty = LeakageReport(())
    assert not empty and list(empty.to_frame().columns) == FRAME_COLUMNS and empty.to_frame().empty
    with pytest.raises(AttributeError):
        report.findings[0].severity = "medium"  # frozen
    assert isinstance(report.findings[0], LeakFinding)


# ---- wide tables: the screen ----------------------------------------------------------------------
def widened(X, n_copies, seed=0):
    """X and ``n_copies`` noisy copies of its numeric columns (each plus normal noise of its own spread)."""
    rng = np.random.default_rng(seed)
    numeric = X.select_dtypes("number")
    copies = {f"{c}_copy{i}": numeric[c] + rng.normal(0, numeric[c].std() + 1e-9, len(X))
              for i in range(n_copies) for c in numeric}
    return pd.concat([X, pd.DataFrame(copies, index=X.index)], axis=1)


def test_a_wide_table_is_screened_and_finds_the_narrow_tables_leak(kc1, kc1_with_bug_count, bug_count_report,
                                                                  monkeypatch):
    X, y = kc1
    bugs = kc1_with_bug_count[0]["bugs_reported_after_release"]
    wide = widened(X, 6).assign(bugs_reported_after_release=bugs)  # 21 + 126 + 1 columns
    assert wide.shape[1] >= leakage.SCREEN_MIN_COLUMNS
    calls, real = [], leakage._column_auc
    monkeypatch.setattr(leakage, "_column_auc", lambda *a, **k: calls.append(a[0].name) or real(*a, **k))
    finding = of_kind(leak_check(wide, y), "target_leakage")["bugs_reported_after_release"]
    narrow = of_kind(bug_count_report, "target_leakage")["bugs_reported_after_release"]
    # A count of few values is scored by its levels: the screen gives it the very score it has alone.
    assert finding.severity == narrow.severity == "medium"  # 0.867 alone, above the other columns
    assert finding.evidence["single_column_auc"] == narrow.evidence["single_column_auc"]
    assert "bugs_reported_after_release" not in calls  # settled by the screen
    # The tree rescored only columns the screen put at SCREEN_AUC or above: kc1's own metrics (0.75-0.80
    # alone) and a few of their 126 noisier copies: 20 trees here, not 148.
    assert len(set(calls) & set(X.columns)) >= 10 and len(calls) <= 30


def test_the_screen_scores_levels_exactly_and_bins_closely(kc1):
    X, y = kc1
    X_clean, y_enc, profile, folds = validated(widened(X, 5), y)
    folds = folds[:leakage.MAX_FOLDS]
    settled, screened = leakage._screen_aucs(X_clean, y_enc, folds, profile.n_classes)
    exact = leakage.screen_codes(X_clean, leakage.SCREEN_BINS)[0]
    assert (settled == (exact | (screened < leakage.SCREEN_AUC))).all()
    alone = np.array([leakage._column_auc(X_clean[c], y_enc, folds, 2, leakage._by_level(X_clean[c]))
                      for c in X_clean.columns])
    assert exact.any() and not exact.all()
    np.testing.assert_allclose(screened[exact], alone[exact], rtol=0, atol=1e-12)
    # 16 bins against a depth-4 tree: close (0.06 at most here), well inside the margin of SCREEN_AUC.
    assert np.abs(screened[~exact] - alone[~exact]).max() < 0.1
    assert (alone >= leakage.SUSPICIOUS_AUC).sum() == 0 and screened.max() < leakage.SCREEN_AUC + 0.1


def test_a_wide_multiclass_leak_of_many_values_goes_to_the_tree(shared_data):
    frame = pd.read_csv(shared_data / "vehicle.csv")
    X, y = frame.drop(columns="Class"), frame["Class"]
    noisy = y.astype("category").cat.codes.to_numpy() + np.random.default_rng(0).normal(0, 0.1, len(y))
    narrow = of_kind(leak_check(X.assign(inspector_grade=noisy), y), "target_leakage")["inspector_grade"]
    wide = of_kind(leak_check(widened(X, 6).assign(inspector_grade=noisy), y), "target_leakage")["inspector_grade"]
    assert wide.severity == narrow.severity == "high"
    assert wide.evidence["single_column_auc"] == narrow.evidence["single_column_auc"]  # scored by the tree
