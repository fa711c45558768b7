"""Tests for automl.data.validation: kinds, conversions, target encoding, errors, repairs, predict-time checks."""

import dataclasses
import os
import pickle
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import sparse
from sklearn.exceptions import DataConversionWarning
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

from automl.data import DatasetProfile, check_prediction_data, check_training_data
from automl.exceptions import DataRepairWarning, DataValidationError

DATA = Path(os.environ["AUTOML_SHARED_DATA"])  # set by conftest.py


@pytest.fixture(scope="module")
def credit():
    frame = pd.read_csv(DATA / "credit-approval.csv")
    return frame.drop(columns="class"), frame["class"]


@pytest.fixture
def mixed():
    """Small frame with one column of each kind, a few missing values, and binary str labels."""
    X = pd.DataFrame(
        {
            "num": [1.0, np.nan, 3.0, 4.0, 5.0, 6.0],
            "cat": ["a", "b", None, "a", "c", "b"],
            "flag": [True, False, True, True, False, False],
            "when": pd.to_datetime(
                ["1970-01-02", "1970-01-01", None, "2000-01-01", "1969-12-31", "1970-01-03"]
            ),
        }
    )
    y = pd.Series(["no", "yes", "no", "yes", "no", "yes"])
    return X, y


def fit_quietly(X, y, n_folds=2):
    """Run check_training_data and fail on any warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return check_training_data(X, y, n_folds=n_folds)


def test_credit_approval_profile(credit):
    X, y = credit
    X_clean, y_encoded, classes, profile = fit_quietly(X, y, n_folds=5)
    categorical = ("A1", "A4", "A5", "A6", "A7", "A9", "A10", "A12", "A13")
    assert X_clean.shape == (690, 15)
    assert isinstance(X_clean.index, pd.RangeIndex)
    assert profile.categorical_columns == categorical
    assert profile.numeric_columns == ("A2", "A3", "A8", "A11", "A14", "A15")
    assert profile.feature_names == tuple(X.columns) == profile.input_columns
    assert all(X_clean[c].dtype == object for c in categorical)
    assert all(X_clean[c].dtype == np.float64 for c in profile.numeric_columns)
    assert profile.missing_rate["A1"] == pytest.approx(12 / 690)
    assert profile.missing_rate == pytest.approx(X.isna().mean().to_dict())
    assert profile.has_missing
    assert profile.categories["A4"] == ("l", "u", "y")
    assert profile.max_cardinality == 14
    assert profile.task == "binary" and profile.n_classes == 2
    assert classes.tolist() == ["+", "-"]
    assert profile.class_counts == (307, 383) == tuple(np.bincount(y_encoded))
    assert (classes[y_encoded] == y.to_numpy()).all()
    assert len(profile.fingerprint) == 16
    assert int(profile.fingerprint, 16) >= 0


def test_categorical_values_are_python_str_or_nan(credit):
    X_clean = fit_quietly(*credit)[0]
    values = X_clean["A1"].to_numpy()
    assert {type(v) for v in values[~pd.isna(values)]} == {str}
    assert all(isinstance(v, float) and np.isnan(v) for v in values[pd.isna(values)])


def test_sklearn_encoders_accept_cleaned_categoricals(credit):
    X_clean, _, _, profile = fit_quietly(*credit)
    columns = list(profile.categorical_columns)
    onehot = OneHotEncoder(handle_unknown="ignore").fit(X_clean[columns])
    assert onehot.transform(X_clean[columns]).shape[0] == 690
    ordinal = make_pipeline(SimpleImputer(strategy="most_frequent"), OrdinalEncoder())
    assert not np.isnan(ordinal.fit_transform(X_clean[columns])).any()


def test_titanic_int_labels_and_multiclass_task():
    frame = pd.read_csv(DATA / "titanic.csv")
    X, y = frame.drop(columns=["Survived", "Name"]), frame["Survived"]  # Name: see the next test
    X_clean, y_encoded, classes, profile = fit_quietly(X, y)
    assert classes.tolist() == [0, 1]
    assert profile.kinds["Ticket"] == "categorical" and profile.kinds["Fare"] == "numeric"
    assert profile.missing_rate["Cabin"] == pytest.approx(687 / 891)
    _, _, classes3, profile3 = fit_quietly(X, X["Pclass"])
    assert classes3.tolist() == [1, 2, 3]
    assert profile3.task == "multiclass" and profile3.n_classes == 3


def test_a_categorical_identifier_is_given_to_no_model_but_kept_for_the_leak_check():
    # Titanic's Name is distinct on every row; Ticket (681 values on 891 rows) and Cabin describe rows.
    frame = pd.read_csv(DATA / "titanic.csv")
    X, y = frame.drop(columns="Survived"), frame["Survived"]
    with pytest.warns(DataRepairWarning, match=r"'Name' \(891 values, 100% of rows\)"):
        X_clean, _, _, profile = check_training_data(X, y, n_folds=2)
    assert profile.identifier_columns == ("Name",) and not profile.dropped_columns
    assert "Name" in X_clean.columns and "Name" in profile.feature_names
    assert "Name" not in profile.categorical_columns and "Name" not in profile.categories
    assert "Ticket" in profile.categorical_columns
    # Not needed at predict time: no model reads it.
    new = predict_quietly(X.drop(columns="Name").head(3), profile)
    assert list(new.columns) == list(profile.feature_names) and new["Name"].isna().all()


@pytest.mark.parametrize("n_rows, repeats, identifier", [
    (60, 0, True),  # 60 values on 60 rows
    (60, 3, True),  # 57 values on 60 rows: 95%
    (60, 4, False),  # 56 values on 60 rows: 93%
    (40, 0, False),  # distinct, but only 40 values: too few to call it an identifier
])
def test_identifier_thresholds(n_rows, repeats, identifier):
    codes = [f"c{i}" for i in range(n_rows - repeats)] + ["c0"] * repeats
    X = pd.DataFrame({"code": codes, "x": np.arange(n_rows, dtype=float) % 7})
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        profile = check_training_data(X, [0, 1] * (n_rows // 2), n_folds=2)[3]
    assert (profile.identifier_columns == ("code",)) is identifier
    assert ("code" in profile.categorical_columns) is not identifier
    assert any("name the row" in str(w.message) for w in seen) is identifier


def test_numeric_identifiers_and_a_lone_identifier_are_features():
    # Numbers that count rows are the leak check's to judge; a lone identifier is all there is to fit.
    rows = np.arange(60)
    numeric = pd.DataFrame({"row": rows.astype(float), "x": rows % 7.0})
    assert fit_quietly(numeric, [0, 1] * 30)[3].identifier_columns == ()
    lone = pd.DataFrame({"name": [f"n{i}" for i in rows], "same": 1.0})
    with pytest.warns(DataRepairWarning, match="'same' \\(constant\\)") as seen:
        profile = check_training_data(lone, [0, 1] * 30, n_folds=2)[3]
    assert profile.categorical_columns == ("name",) and profile.identifier_columns == ()
    assert not any("name the row" in str(w.message) for w in seen)


def test_fingerprint_is_stable_and_content_sensitive(mixed):
    X, y = mixed
    first = fit_quietly(X, y)[3].fingerprint
    assert fit_quietly(X.copy(), y.copy())[3].fingerprint == first
    assert fit_quietly(X, y[::-1].reset_index(drop=True))[3].fingerprint != first
    changed = X.assign(num=X["num"] + 1)
    assert fit_quietly(changed, y)[3].fingerprint != first


@pytest.mark.parametrize(
    "labels",
    [
        pd.Series(["cat", "dog", "cat", "dog", "bird", "bird"]),
        np.array([3, 7, 3, 7, 9, 9]),
        [True, False, True, False, True, False],
        pd.Series(["lo", "hi", "lo", "hi", "mid", "mid"], dtype="category"),
        pd.Series([10, 20, 10, 20, 30, 30], dtype="category"),
        pd.array([1, 2, 1, 2, 1, 2], dtype="Int64"),
        np.array([1, 2, 1, 2, 1, 2], dtype=object),
    ],
    ids=["str", "int", "bool", "str-category", "int-category", "nullable-int", "object-int"],
)
def test_classes_keep_original_labels(mixed, labels):
    X, _ = mixed
    _, y_encoded, classes, profile = fit_quietly(X, labels)
    original = np.asarray(labels, dtype=object)
    assert sorted(set(original.tolist())) == classes.tolist()
    assert classes[y_encoded].tolist() == original.tolist()
    assert y_encoded.min() == 0 and y_encoded.max() == len(classes) - 1
    assert profile.class_counts == tuple(np.bincount(y_encoded))


def test_bool_labels_stay_bool(mixed):
    classes = fit_quietly(mixed[0], [True, False] * 3)[2]
    assert classes.dtype == bool and classes.tolist() == [False, True]


def test_kinds_and_conversions(mixed):
    X, y = mixed
    X_clean, _, _, profile = fit_quietly(X, y)
    assert profile.kinds == {"num": "numeric", "cat": "categorical", "flag": "boolean", "when": "datetime"}
    assert profile.numeric_columns == ("num", "flag", "when")
    assert X_clean["flag"].tolist() == [1.0, 0.0, 1.0, 1.0, 0.0, 0.0]
    days = X_clean["when"].to_numpy()
    assert days[[0, 1, 3, 4, 5]].tolist() == [1.0, 0.0, 10957.0, -1.0, 2.0]
    assert np.isnan(days[2])
    assert X_clean.dtypes.astype(str).tolist() == ["float64", "object", "float64", "float64"]


def test_single_precision_columns_stay_float32_in_training_and_at_predict_time(credit):
    X, y = credit
    X = X.astype({"A2": "float32", "A3": "float16"})
    X_clean, _, _, profile = fit_quietly(X, y, n_folds=5)
    assert X_clean["A2"].dtype == np.float32 and X_clean["A3"].dtype == np.float32
    assert X_clean["A8"].dtype == np.float64  # float64 in, float64 out
    np.testing.assert_array_equal(X_clean["A2"].to_numpy(), X["A2"].to_numpy())  # exact, NaN where missing
    assert profile.float_dtype is np.float64  # A8, A11, A14, A15 are not single precision
    # New rows held to the training dtypes, whatever they come as: the model sees float32 again.
    new = check_prediction_data(X.head(5).astype({"A2": "float64"}), profile)
    assert new["A2"].dtype == np.float32 and new["A8"].dtype == np.float64
    numeric = list(profile.numeric_columns)
    single = fit_quietly(X.astype({c: "float32" for c in numeric}), y, n_folds=5)[3]
    assert single.float_dtype is np.float32


def test_arrow_backed_columns_read_as_their_plain_counterparts(credit):
    import pyarrow as pa

    X, y = credit
    arrow = X.convert_dtypes(dtype_backend="pyarrow")  # pandas 3's default for text
    text = X["A4"].astype(str).where(X["A4"].notna(), None)
    arrow["A4"] = pd.array(pa.array(text).dictionary_encode(), dtype=pd.ArrowDtype(pa.dictionary(pa.int32(), pa.string())))
    arrow["A2"] = pd.array(X["A2"].astype("float32"), dtype="float[pyarrow]")
    X_arrow, _, _, profile = fit_quietly(arrow, y, n_folds=5)
    X_plain = fit_quietly(X.astype({"A2": "float32"}), y, n_folds=5)[0]
    pd.testing.assert_frame_equal(X_arrow, X_plain)  # the dictionary column too: the same str values, NaN
    assert profile.kinds["A4"] == "categorical" and X_arrow["A2"].dtype == np.float32
    pd.testing.assert_frame_equal(predict_quietly(arrow.head(20), profile), X_plain.head(20))


def test_an_arrow_table_is_read_by_column_name(credit):
    import pyarrow as pa

    X, y = credit
    table = pa.Table.from_pandas(X, preserve_index=False)
    X_clean, _, _, profile = fit_quietly(table, y, n_folds=5)
    assert profile.input_columns == tuple(X.columns)
    pd.testing.assert_frame_equal(X_clean, fit_quietly(X, y, n_folds=5)[0])
    # Reordered at predict time, it is matched by name, as a DataFrame is: not misread by position.
    reordered = table.select(list(reversed(table.column_names)))
    pd.testing.assert_frame_equal(predict_quietly(reordered, profile), predict_quietly(X, profile))


def test_missing_booleans_timezones_and_object_columns():
    X = pd.DataFrame(
        {
            "nullable": pd.array([True, None, False, True], dtype="boolean"),
            "object_bool": np.array([True, None, False, False], dtype=object),
            "aware": pd.to_datetime(
                ["1970-01-02T02:00+02:00", None, "1970-01-01T00:00Z", "1970-01-01T12:00Z"], utc=True
            ).tz_convert("Europe/Paris"),
            "object_numbers": np.array([1, 2.5, None, 4], dtype=object),
            "numeric_strings": ["1", "2", "3", None],
            "int_category": pd.Categorical([1, 2, None, 1]),
            "nullable_int": pd.array([1, None, 3, 4], dtype="Int64"),
        }
    )
    X_clean, _, _, profile = fit_quietly(X, [0, 1, 0, 1])
    assert np.array_equal(X_clean["nullable"], [1.0, np.nan, 0.0, 1.0], equal_nan=True)
    assert np.array_equal(X_clean["object_bool"], [1.0, np.nan, 0.0, 0.0], equal_nan=True)
    assert np.array_equal(X_clean["aware"], [1.0, np.nan, 0.0, 0.5], equal_nan=True)
    assert profile.kinds["object_numbers"] == "numeric"
    assert np.array_equal(X_clean["nullable_int"], [1.0, np.nan, 3.0, 4.0], equal_nan=True)
    # Numbers written as text are not guessed into numbers.
    assert profile.kinds["numeric_strings"] == "categorical"
    assert profile.categories["numeric_strings"] == ("1", "2", "3")
    assert profile.categories["int_category"] == ("1", "2")


def test_array_and_list_input():
    array = np.array([[1.0, 5.0], [2.0, 6.0], [3.0, 5.0], [4.0, 7.0]])
    X_clean, _, _, profile = fit_quietly(array, [0, 1, 0, 1])
    assert profile.input_columns == ("x0", "x1") == tuple(X_clean.columns)
    assert np.array_equal(X_clean.to_numpy(), array)
    rows = [[1, "a"], [2, "b"], [3, "a"], [4, "b"]]
    for X in (rows, np.array(rows, dtype=object)):
        profile = fit_quietly(X, ["u", "v", "u", "v"])[3]
        assert profile.kinds == {"x0": "numeric", "x1": "categorical"}


def test_column_names_become_str_and_index_is_reset():
    X = pd.DataFrame({0: [1.0, 2.0, 3.0, 4.0], "b": list("abab")}, index=[10, 3, 7, 1])
    X_clean, _, _, profile = fit_quietly(X, pd.Series([0, 1, 0, 1], index=[10, 3, 7, 1]))
    assert profile.input_columns == ("0", "b")
    assert list(X_clean.index) == [0, 1, 2, 3]
    assert X_clean["0"].tolist() == [1.0, 2.0, 3.0, 4.0]


def test_column_vector_y_is_flattened_with_sklearn_warning(mixed):
    X, _ = mixed
    with pytest.warns(DataConversionWarning):
        y_encoded = check_training_data(X, np.array([[0], [1], [0], [1], [0], [1]]), n_folds=2)[1]
    assert y_encoded.tolist() == [0, 1, 0, 1, 0, 1]


def test_drops_all_missing_and_constant_columns_with_warning(mixed):
    X, y = mixed
    X = X.assign(empty=np.nan, empty_text=pd.Series([None] * 6, dtype=object), same="k")
    X.loc[2, "same"] = None  # one distinct value plus missing still counts as constant
    with pytest.warns(DataRepairWarning, match="empty.*all values missing.*same.*constant"):
        X_clean, _, _, profile = check_training_data(X, y, n_folds=2)
    assert profile.dropped_columns == {
        "empty": "all values missing",
        "empty_text": "all values missing",
        "same": "constant",
    }
    assert profile.feature_names == ("num", "cat", "flag", "when") == tuple(X_clean.columns)
    assert profile.n_features == 4
    assert len(profile.input_columns) == 7 and set(profile.kinds) == set(profile.input_columns)
    assert "same" not in profile.missing_rate and "same" not in profile.categories


def test_every_column_dropped_is_an_error():
    X = pd.DataFrame({"a": [1.0, 1.0, 1.0, 1.0], "b": [np.nan] * 4})
    with pytest.raises(DataValidationError, match=r"'a' \(constant\), 'b' \(all values missing\)"):
        check_training_data(X, [0, 1, 0, 1], n_folds=2)


@pytest.mark.parametrize(
    "y, n_folds, pattern",
    [
        ([0, 1, 0], 2, r"X has 6 rows, y has 3 labels"),
        ([0, np.nan, 1, 0, np.nan, 1], 2, r"2 missing label\(s\), first at positions \[1, 4\]"),
        (pd.Series(["a", None, "b", "a", "b", "a"]), 2, r"1 missing label\(s\), first at positions \[1\]"),
        (["a"] * 6, 2, r"y has 1 class \('a'\)"),
        (list("aaaaab"), 2, r"y has 2 classes but fewer than 2 of them have 2 or more members"),
        ([0, 0, 0, 1, 1, 1], 4, r"Every class has fewer members than n_folds=4: class 0 has 3 member\(s\), class 1"),
        (np.linspace(0.1, 0.9, 6), 2, r"continuous.*regression"),
        (np.zeros((6, 2)), 2, r"1d array.*Multi-output"),
        (pd.DataFrame({"a": [0, 1] * 3, "b": [1, 0] * 3}), 2, r"1d array.*shape \(6, 2\)"),
        (None, 2, r"requires y to be passed"),
        ([0, 1, np.inf, 1, 0, -np.inf], 2, r"infinity: 2 label\(s\)"),
        (pd.Series(["a", 1] * 3, dtype=object), 2, r"class labels of one type"),
    ],
    ids=[
        "length", "nan", "none-in-str", "one-class", "rare-class", "all-rare", "continuous",
        "2d-array", "2d-frame", "y-none", "inf", "mixed-types",
    ],
)
def test_target_errors(mixed, y, n_folds, pattern):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataRepairWarning)
        with pytest.raises(DataValidationError, match=pattern):
            check_training_data(mixed[0], y, n_folds=n_folds)


def test_class_seen_once_is_dropped_and_rare_classes_warned(shared_data):
    # ecoli: 336 rows, 8 classes; imL and imS have 2 members each (the benchmark's 75% split left
    # imS a single member, and the fit used to refuse the data).
    frame = pd.read_csv(shared_data / "ecoli.csv")
    frame = frame.drop(index=frame.index[frame["class"] == "imS"][:1])
    with pytest.warns(DataRepairWarning) as caught:
        X_clean, y_encoded, classes, profile = check_training_data(frame.drop(columns="class"), frame["class"],
                                                                   n_folds=5)
    messages = [str(w.message) for w in caught]
    assert any("Dropped 1 row(s) of 1 class(es) with a single member ('imS')" in m for m in messages)
    assert "1 class(es) have fewer members than n_folds=5: class 'imL' has 2 member(s)." in " ".join(messages)
    assert "imS" not in classes and len(classes) == 7
    assert len(X_clean) == len(y_encoded) == profile.n_samples == len(frame) - 1
    assert sum(profile.class_counts) == len(frame) - 1


@pytest.mark.parametrize(
    "X, pattern",
    [
        (pd.DataFrame({"a": [], "b": []}), r"0 sample\(s\)"),
        (np.empty((6, 0)), r"0 feature\(s\) \(shape=\(6, 0\)\) while a minimum of 1 is required"),
        (pd.DataFrame([[1, 2, 3]] * 6, columns=["a", "b", "a"]), r"duplicate column names.*'a'"),
        (pd.DataFrame([[1, 2]] * 6, columns=[1, "1"]), r"duplicate column names.*'1'"),
        (np.arange(6.0), r"Reshape your data"),
        (sparse.csr_matrix(np.eye(6)), r"Sparse X is not supported"),
        (np.ones((6, 1)) * 1j, r"Complex data not supported \(column 'x0'\)"),
        (pd.DataFrame({"t": pd.to_timedelta(range(6), unit="D")}), r"'t' has unsupported dtype"),
    ],
    ids=["no-rows", "no-columns", "duplicates", "duplicates-str", "1d", "sparse", "complex", "timedelta"],
)
def test_feature_errors(X, pattern):
    y = [0, 1] * 3 if X.shape[0] else []
    with pytest.raises(DataValidationError, match=pattern):
        check_training_data(X, y, n_folds=2)


def test_infinite_values_name_columns_and_counts(mixed):
    X, y = mixed
    X = X.assign(big=[np.inf, 1.0, -np.inf, 2.0, np.inf, 3.0], small=[1.0, 2, 3, 4, 5, -np.inf])
    pattern = r"2 column\(s\): 'big' \(3 value\(s\)\), 'small' \(1 value"
    with pytest.raises(DataValidationError, match=pattern):
        check_training_data(X, y, n_folds=2)


def test_errors_are_value_errors(mixed):
    with pytest.raises(ValueError):
        check_training_data(mixed[0], [0, 1], n_folds=2)


def test_profile_is_frozen_and_picklable(mixed):
    profile = fit_quietly(*mixed)[3]
    with pytest.raises(dataclasses.FrozenInstanceError):
        profile.n_samples = 1
    assert pickle.loads(pickle.dumps(profile)) == profile
    assert isinstance(profile, DatasetProfile)


def test_profile_properties_without_categoricals_or_missing():
    profile = fit_quietly(np.array([[1.0], [2.0], [3.0], [4.0]]), [0, 1, 0, 1])[3]
    assert not profile.has_missing
    assert profile.max_cardinality == 0


# --- prediction time -----------------------------------------------------------------------------------


def predict_quietly(X, profile):
    """Run check_prediction_data and fail on any warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return check_prediction_data(X, profile)


def test_prediction_reproduces_training_conversion(credit):
    X, y = credit
    X_clean, _, _, profile = fit_quietly(X, y)
    pd.testing.assert_frame_equal(predict_quietly(X, profile), X_clean)


def test_prediction_matches_reordered_columns_by_name(mixed):
    X, y = mixed
    X_clean, _, _, profile = fit_quietly(X, y)
    shuffled = X[["when", "cat", "num", "flag"]].set_axis([5, 4, 3, 2, 1, 0])
    result = predict_quietly(shuffled, profile)
    assert tuple(result.columns) == profile.feature_names
    assert isinstance(result.index, pd.RangeIndex)
    pd.testing.assert_frame_equal(result, X_clean)


def test_prediction_missing_columns_are_named(mixed):
    X, y = mixed
    profile = fit_quietly(X, y)[3]
    with pytest.raises(DataValidationError, match=r"missing 2 column\(s\).*'cat', 'flag'"):
        check_prediction_data(X.drop(columns=["flag", "cat"]), profile)


def test_prediction_extra_columns_warn_and_are_ignored(mixed):
    X, y = mixed
    X_clean, _, _, profile = fit_quietly(X, y)
    with pytest.warns(DataRepairWarning, match=r"2 column\(s\).*'extra', 'other'"):
        result = check_prediction_data(X.assign(extra=1, other="z"), profile)
    pd.testing.assert_frame_equal(result, X_clean)


def test_prediction_ignores_dropped_columns_silently(mixed):
    X, y = mixed
    with pytest.warns(DataRepairWarning):
        X_clean, _, _, profile = check_training_data(X.assign(same=0.5), y, n_folds=2)
    pd.testing.assert_frame_equal(predict_quietly(X, profile), X_clean)
    pd.testing.assert_frame_equal(predict_quietly(X.assign(same=[1, 2, 3, 4, 5, 6]), profile), X_clean)


def test_prediction_keeps_unseen_categories_as_str(mixed):
    X, y = mixed
    profile = fit_quietly(X, y)[3]
    new = X.head(2).assign(cat=pd.Series(["zebra", None], dtype="category"))
    with pytest.warns(DataRepairWarning, match=r"in 1 column\(s\): 'cat' 1 value\(s\) \('zebra'\)\. Families"):
        result = check_prediction_data(new, profile)
    assert result["cat"].dtype == object
    assert result["cat"].iloc[0] == "zebra" and np.isnan(result["cat"].iloc[1])


def test_prediction_rejects_text_in_numeric_column(mixed):
    X, y = mixed
    profile = fit_quietly(X, y)[3]
    with pytest.raises(DataValidationError, match=r"Column 'num' \(numeric in training\).*abc"):
        check_prediction_data(X.assign(num=["1.5", "abc", "2", "3", "4", "5"]), profile)
    # Numbers arriving as text are still numbers.
    result = predict_quietly(X.assign(num=["1.5", None, "2", "3", "4", "5"]), profile)
    assert result["num"].iloc[0] == 1.5 and np.isnan(result["num"].iloc[1])


def test_prediction_rejects_numbers_in_datetime_column(mixed):
    X, y = mixed
    profile = fit_quietly(X, y)[3]
    with pytest.raises(DataValidationError, match=r"Column 'when' \(datetime in training\)"):
        check_prediction_data(X.assign(when=range(6)), profile)


def test_prediction_rejects_infinite_values(mixed):
    X, y = mixed
    profile = fit_quietly(X, y)[3]
    with pytest.raises(DataValidationError, match=r"infinite values in 1 column\(s\): 'num' \(1 value"):
        check_prediction_data(X.assign(num=[np.inf, 1, 2, 3, 4, 5]), profile)


def test_prediction_rejects_empty_rows(mixed):
    profile = fit_quietly(*mixed)[3]
    with pytest.raises(DataValidationError, match=r"0 sample\(s\)"):
        check_prediction_data(mixed[0].iloc[:0], profile)


def test_prediction_with_arrays_matches_by_position():
    train = np.array([[1.0, 7.0, 5.0], [2.0, 7.0, 6.0], [3.0, 7.0, 5.0], [4.0, 7.0, 7.0]])
    with pytest.warns(DataRepairWarning):
        X_clean, _, _, profile = check_training_data(train, [0, 1, 0, 1], n_folds=2)
    assert profile.feature_names == ("x0", "x2")
    result = predict_quietly(train[:2].tolist(), profile)
    assert result.to_numpy().tolist() == [[1.0, 5.0], [2.0, 6.0]]
    with pytest.raises(DataValidationError, match="X has 2 features, but AutoClassifier is expecting 3"):
        check_prediction_data(train[:, :2], profile)


def test_prediction_array_for_frame_trained_profile(mixed):
    X, y = mixed
    X_clean, _, _, profile = fit_quietly(X, y)
    result = predict_quietly(X.to_numpy(dtype=object), profile)
    pd.testing.assert_frame_equal(result, X_clean)


def test_a_pandas_y_groups_or_weights_with_another_index_than_x_is_warned(load_shared):
    X, y = load_shared("credit-g.csv", "class")
    X = X.iloc[:200]
    shuffled = y.iloc[:200].sample(frac=1.0, random_state=0)  # shuffled apart from X: a silent mismatch
    with pytest.warns(UserWarning, match=rf"The index of y differs from X's \(at position 0: X has 0, y has "
                                         rf"{shuffled.index[0]}\): rows are matched by position"):
        check_training_data(X, shuffled, n_folds=3)
    weights = pd.Series(1.0, index=X.index[::-1])
    with pytest.warns(UserWarning, match=r"The index of sample_weight differs .*sample_weight.loc\[X.index\]"):
        check_training_data(X, y.iloc[:200], n_folds=3, sample_weight=weights)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # same index, or arrays: nothing to say
        check_training_data(X, y.iloc[:200], n_folds=3, groups=np.arange(200) // 4,
                            sample_weight=pd.Series(1.0, index=X.index))
