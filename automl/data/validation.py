"""Check X and y before the search, infer column kinds, encode y, and describe the data in a DatasetProfile.

Column kinds and the repairs made to them (each later stage sees only the cleaned frame):

- numeric (float, int, or an object column holding Python numbers) -> float64, NaN for missing; a float32
  or float16 column -> float32 (exact, half the memory of float64: large tables often come as float32);
- boolean -> float64 0.0 / 1.0, missing stays NaN;
- datetime -> float64 days since 1970-01-01 (time-zone aware values are first converted to UTC);
- categorical (object, str, category) -> object dtype holding Python ``str`` values, ``np.nan`` for missing.
  Numbers stored as strings stay categorical: guessing would make training and prediction disagree.

pandas' Arrow-backed columns (pandas 3's default for text) are read as their plain counterparts, a
dictionary-encoded one (parquet's categoricals) as its values; a polars DataFrame or an Arrow table is
read by column name through its own ``to_pandas()`` (pyarrow), not as a bare array.

Columns whose values are all missing, or that hold one distinct non-missing value, are dropped with a
:class:`~automl.exceptions.DataRepairWarning` and recorded in ``DatasetProfile.dropped_columns``.

A categorical column that names the row rather than describes it (distinct on at least 95% of the rows
and on at least 50 values: a passenger's name) is given to no model, with a DataRepairWarning, and
recorded in ``DatasetProfile.identifier_columns``: nearly every level is seen once, so no encoder can
learn from it, and at predict time almost every value is new. It stays in the cleaned frame, because
the leak check needs it: two passengers with the same ticket and fare are different people when their
names differ. AutoGluon drops such columns too (``DropUniqueFeatureGenerator``, at 99% distinct). When
every kept column would be one, they are all kept as features.
"""

from __future__ import annotations

import dataclasses
import hashlib
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.stats
from scipy import sparse

from ..exceptions import DataRepairWarning, DataValidationError, plain_repr, warn_user
from ..exceptions import listing as _listing
from .groups import check_groups
from .weights import check_class_weights, check_sample_weight, kept_weights
from .identifiers import _find_identifiers
from .target import encode_target, regression_target

_EPOCH = pd.Timestamp("1970-01-01")
# Numeric dtypes (as pandas prints them) whose every value float32 holds exactly.
_SINGLE_PRECISION = {"float32", "float16", "Float32", "float[pyarrow]", "halffloat[pyarrow]"}
_ONE_DAY = pd.Timedelta(days=1)
# pandas.api.types.infer_dtype results for object columns that are not plain text.
_OBJECT_KINDS = {
    "integer": "numeric", "floating": "numeric", "mixed-integer-float": "numeric", "decimal": "numeric",
    "boolean": "boolean", "datetime": "datetime", "datetime64": "datetime", "date": "datetime",
}


@dataclass(frozen=True)
class DatasetProfile:
    """What the training data looked like: shape, column kinds, missing values and classes.

    Built by :func:`check_training_data`; later stages read it to shape the search space and
    :func:`check_prediction_data` reads it to prepare new data the same way.

    Attributes
    ----------
    n_samples : int
        Number of training rows.
    n_features : int
        Number of columns kept after dropping all-missing and constant columns.
    feature_names : tuple of str of length n_features
        The kept columns, in training order: the cleaned frame's columns. The models see all of them but
        ``identifier_columns``.
    input_columns : tuple of str
        Every column as given, before drops, converted to str.
    numeric_columns : tuple of str
        Kept numeric columns, including booleans and datetimes (converted to float64).
    categorical_columns : tuple of str
        Kept object / str / category columns that the models see (identifiers are not among them).
    dropped_columns : dict of str to str
        Dropped column -> reason (``"all values missing"`` or ``"constant"``).
    missing_rate : dict of str to float
        Kept column -> fraction of missing values in [0, 1].
    categories : dict of str to tuple of str
        Column of ``categorical_columns`` -> sorted levels seen in training.
    kinds : dict of str to str
        Every input column -> ``"numeric"``, ``"categorical"``, ``"boolean"`` or ``"datetime"``.
    task : {"binary", "multiclass", "regression"}
        Classification task inferred from the number of classes, or regression.
    n_classes : int
        Number of distinct labels in y; 0 for regression.
    class_counts : tuple of int of length n_classes
        Members per encoded class, in ``classes`` order; empty for regression.
    fingerprint : str
        First 16 hex characters of a sha256 over the content of X and y.
    dtypes : dict of str to str or None
        Every input column -> its pandas dtype as given (``"int64"``, ``"object"``, ...); None in
        profiles pickled before it existed.
    target_stats : dict of str to float or None
        Regression only: ``min, max, mean, std, skew`` of y (the search offers a log transform of a
        non-negative, right-skewed target). None for classification.
    identifier_columns : tuple of str
        Kept categorical columns distinct on at least 95% of the rows and on at least 50 values: in
        the cleaned frame (the leak check reads them), given to no model. Empty in profiles pickled
        before it existed.

    Examples
    --------
    >>> profile = check_training_data([[1.0, "a"], [2.0, "b"], [3.0, "a"], [4.0, "b"]], [0, 1, 0, 1], n_folds=1)[3]
    >>> profile.feature_names, profile.kinds["x1"], profile.categories, profile.task
    (('x0', 'x1'), 'categorical', {'x1': ('a', 'b')}, 'binary')
    """

    n_samples: int
    n_features: int
    feature_names: tuple[str, ...]
    input_columns: tuple[str, ...]
    numeric_columns: tuple[str, ...]
    categorical_columns: tuple[str, ...]
    dropped_columns: dict[str, str]
    missing_rate: dict[str, float]
    categories: dict[str, tuple[str, ...]]
    kinds: dict[str, str]
    task: str
    n_classes: int
    class_counts: tuple[int, ...]
    fingerprint: str
    dtypes: dict[str, str] | None = None
    target_stats: dict[str, float] | None = None
    identifier_columns: tuple[str, ...] = ()

    @property
    def has_missing(self) -> bool:
        """bool : Whether any kept column has a missing value."""
        return any(rate > 0 for rate in self.missing_rate.values())

    @property
    def max_cardinality(self) -> int:
        """int : Largest number of levels over the categorical columns, 0 if there are none."""
        return max((len(levels) for levels in self.categories.values()), default=0)

    @property
    def float_dtype(self) -> type:
        """type : ``np.float32`` when every kept numeric column is float32 in the validated frame (it came
        as float32 or float16), else ``np.float64``: the dtype the encoders give categories, so that a
        single-precision table stays one (half the memory of a trial's transformed rows)."""
        dtypes = self.dtypes or {}
        single = all(self.kinds[c] == "numeric" and dtypes.get(c) in _SINGLE_PRECISION for c in self.numeric_columns)
        return np.float32 if self.numeric_columns and single else np.float64


def _warn_if_unaligned(X, named):
    """Warn when a pandas y, groups or sample_weight carries another index than the DataFrame X.

    Rows are matched by position, as scikit-learn matches them; an index that says otherwise most often
    means one was filtered or shuffled and the other not, a silent mismatch. Warned rather than refused:
    an index reset on one side only (rows still in step) is common and harmless.
    """
    if not isinstance(X, pd.DataFrame):
        return
    for name, values in named.items():
        if not isinstance(values, pd.Series) or len(values) != len(X) or values.index.equals(X.index):
            continue
        differ = np.flatnonzero(pd.Series(values.index).ne(pd.Series(X.index)).to_numpy())
        if not differ.size:  # the same labels under another dtype: nothing to say
            continue
        where = int(differ[0])
        warn_user(f"The index of {name} differs from X's (at position {where}: X has {plain_repr(X.index[where])}, "
                  f"{name} has {plain_repr(values.index[where])}): rows are matched by position, as scikit-learn "
                  f"matches them. If they were meant to match by label, pass {name}.loc[X.index].", UserWarning)


def check_training_data(X, y, *, n_folds, task="classification", groups=None, sample_weight=None):
    """Validate X and y for training, convert X to model-ready columns and encode y.

    Parameters
    ----------
    X : {DataFrame, polars DataFrame, pyarrow Table, array-like} of shape (n_samples, n_input_columns)
        Training data. Arrays and lists get the column names ``"x0"``, ``"x1"``, ...
    y : array-like or Series of shape (n_samples,)
        Class labels of any type (str, int, bool, pandas category).
    n_folds : int
        Number of cross-validation folds; every class needs at least this many members.
    task : {"classification", "regression"}, default="classification"
        Regression: y must be numbers (:func:`automl.data.target.regression_target`), returned as float64
        with an empty ``classes``.
    groups : array-like of shape (n_samples,) or None, default=None
        A group label per row (:func:`automl.data.groups.check_groups`).
    sample_weight : array-like of shape (n_samples,) or None, default=None
        A weight per row (:func:`automl.data.weights.check_sample_weight`).

    Returns
    -------
    X_clean : DataFrame of shape (n_samples, n_features)
        Kept columns with a RangeIndex: float64 for numeric, boolean and datetime columns (float32 for
        float32 and float16 columns), object dtype holding str or ``np.nan`` for categorical columns.
    y_encoded : ndarray of shape (n_samples,)
        Labels encoded as 0 .. n_classes - 1 (regression: the float64 target).
    classes : ndarray of shape (n_classes,)
        The original labels, sorted; ``classes[y_encoded]`` gives back y. Empty for regression.
    profile : DatasetProfile
        Description of the data for the later stages.
    groups_kept : ndarray of int64 of shape (n_samples,) or None
        Only when ``groups`` or ``sample_weight`` is given (None for the one not given): the group code of
        each row kept, in the order of ``X_clean``.
    weights_kept : ndarray of float64 of shape (n_samples,) or None
        Only when ``groups`` or ``sample_weight`` is given: the weight of each row kept, rescaled to a
        mean of 1 (:func:`automl.data.weights.kept_weights`).

    Raises
    ------
    DataValidationError
        If ``groups`` or ``sample_weight`` is unusable (:func:`automl.data.groups.check_groups`,
        :func:`automl.data.weights.check_sample_weight`); if X is empty, sparse,
        not 2-D, has duplicate column names, infinite values or only dropped
        columns; if y is None, not 1-D, continuous, has missing labels, a length different from X, a
        single class, or a class with fewer than ``n_folds`` members.

    Warns
    -----
    DataRepairWarning
        When all-missing or constant columns are dropped.
    UserWarning
        When X is a DataFrame and a pandas y, ``groups`` or ``sample_weight`` of its length has another
        index: rows are still matched by position (scikit-learn's rule), the warning names the first
        position where the indexes differ.

    Examples
    --------
    >>> import pandas as pd
    >>> X = pd.DataFrame({"age": [22.0, 38.0, None, 35.0], "sex": ["m", "f", "f", "m"]})
    >>> X_clean, y_enc, classes, profile = check_training_data(X, ["no", "yes", "yes", "no"], n_folds=2)
    >>> y_enc.tolist(), classes.tolist()
    ([0, 1, 1, 0], ['no', 'yes'])
    >>> profile.kinds, profile.missing_rate["age"]
    ({'age': 'numeric', 'sex': 'categorical'}, 0.25)
    """
    _warn_if_unaligned(X, {"y": y, "groups": groups, "sample_weight": sample_weight})
    frame = _to_frame(X)
    group_codes = None if groups is None else check_groups(groups, len(frame))
    weights = None if sample_weight is None else check_sample_weight(sample_weight, len(frame))
    kinds = {column: _infer_kind(frame[column]) for column in frame.columns}
    if task == "regression":
        y_encoded, classes = regression_target(y, len(frame), n_folds), np.array([])
        keep = np.ones(len(frame), dtype=bool)
    else:
        y_encoded, classes, keep = encode_target(y, len(frame), n_folds)
    if not keep.all():
        frame = frame[keep].reset_index(drop=True)
        if group_codes is not None:  # numbered again: a group of dropped rows only is gone
            group_codes = np.unique(group_codes[keep], return_inverse=True)[1].astype(np.int64)
    weights = None if weights is None else kept_weights(weights, keep)
    if weights is not None and task != "regression":
        check_class_weights(y_encoded, weights, classes)
    dtypes = {str(c): str(t) for c, t in frame.dtypes.items()}
    converted = _convert_frame(frame, kinds, dtypes)
    _check_finite(converted)
    dropped = _find_uninformative(converted)
    if len(dropped) == converted.shape[1]:
        raise DataValidationError(
            f"Every column of X would be dropped ({_describe(dropped)}); "
            "X needs at least one column with two or more distinct values."
        )
    if dropped:
        message = f"Dropped {len(dropped)} column(s) that cannot help the model: {_describe(dropped)}."
        warn_user(message, DataRepairWarning)
    X_clean = converted.drop(columns=list(dropped))
    identifiers = _find_identifiers(X_clean, kinds)
    fingerprint = _fingerprint(converted, y_encoded, classes)
    counts = () if task == "regression" else np.bincount(y_encoded)
    profile = _build_profile(X_clean, kinds, dropped, counts, fingerprint, identifiers)
    profile = dataclasses.replace(profile, dtypes=dtypes)
    if task == "regression":
        profile = dataclasses.replace(profile, task="regression", target_stats=target_stats(y_encoded))
    if groups is not None or sample_weight is not None:
        return X_clean, y_encoded, classes, profile, group_codes, weights
    return X_clean, y_encoded, classes, profile


def check_prediction_data(X, profile):
    """Prepare X at predict time exactly as :func:`check_training_data` prepared the training data.

    DataFrame columns are matched by name (order does not matter); array columns are matched by
    position against ``profile.input_columns``. Columns dropped in training are ignored silently.
    Categories unseen in training are kept as str values for the pipeline's encoders to handle, with
    a warning: an ordinal encoder (the families that read missing values: HGB, LightGBM, XGBoost,
    CatBoost) gives them the code of a missing value, so they get the prediction of a missing cell; a
    one-hot encoder reads them as its infrequent level when it has one, else as no level (all zeros);
    a target encoder gives them the training target's mean.

    Parameters
    ----------
    X : {DataFrame, polars DataFrame, pyarrow Table, array-like} of shape (n_samples, n_input_columns)
        New data.
    profile : DatasetProfile
        The profile returned by :func:`check_training_data`.

    Returns
    -------
    X_clean : DataFrame of shape (n_samples, profile.n_features)
        Columns ``profile.feature_names`` in training order, with a RangeIndex, of their dtypes in
        training's ``X_clean``.

    Raises
    ------
    DataValidationError
        If X has no rows, a training column is missing (an identifier column may be: see
        ``profile.identifier_columns``), an array has the wrong number of columns, a
        column cannot be read as its training kind, or X holds infinite values.

    Warns
    -----
    DataRepairWarning
        When X has columns unknown at training time (they are ignored), and once per call when
        categorical columns hold values unseen in training, naming each column with its count.

    Examples
    --------
    >>> import pandas as pd
    >>> X = pd.DataFrame({"size": [1.0, 2.0, 3.0, 4.0], "color": ["red", "blue", "red", "blue"]})
    >>> profile = check_training_data(X, [0, 1, 0, 1], n_folds=2)[3]
    >>> new = pd.DataFrame({"color": ["green", None], "size": [5, 6]})
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     check_prediction_data(new, profile).to_dict("list")
    {'size': [5.0, 6.0], 'color': ['green', nan]}
    >>> print(caught[0].message)  # doctest: +ELLIPSIS
    Categories unseen in training, in 1 column(s): 'color' 1 value(s) ('green'). ...
    """
    frame = _to_frame(X, names=profile.input_columns)
    # No model reads an identifier column: one left out at predict time is filled with missing values.
    unused = [column for column in profile.identifier_columns if column not in frame.columns]
    frame = frame.assign(**{column: np.nan for column in unused})
    missing = [column for column in profile.feature_names if column not in frame.columns]
    if missing:
        raise DataValidationError(
            f"X is missing {len(missing)} column(s) used in training: {_listing(missing)}. "
            "Pass every training column; extra columns are ignored."
        )
    extra = [column for column in frame.columns if column not in profile.input_columns]
    if extra:
        message = f"Ignored {len(extra)} column(s) unknown at training time: {_listing(extra)}."
        warn_user(message, DataRepairWarning)
    kinds = {column: profile.kinds[column] for column in profile.feature_names}
    X_clean = _convert_frame(frame[list(profile.feature_names)], kinds, profile.dtypes or {})
    _check_finite(X_clean)
    _warn_unseen_categories(X_clean, profile)
    return X_clean


def _warn_unseen_categories(X_clean, profile):
    """One warning for the categorical values that training never saw: column, count, an example."""
    unseen = {}
    for name in profile.categorical_columns:
        values = X_clean[name]
        new = values[values.notna() & ~values.isin(profile.categories[name])]
        if len(new):
            levels = new.unique()
            example = f"{len(levels)} distinct, e.g. {levels[0]!r}" if len(levels) > 1 else repr(levels[0])
            unseen[name] = f"{len(new)} value(s) ({example})"
    if unseen:
        listing = ", ".join(f"{name!r} {text}" for name, text in unseen.items())
        warn_user(f"Categories unseen in training, in {len(unseen)} column(s): {listing}. Families on "
                      "ordinal codes (HGB, LightGBM, XGBoost, CatBoost) predict them as a missing value, one-hot "
                      "ones as the infrequent level or none, target encoding as the training mean.",
                      DataRepairWarning)


def _to_frame(X, names=None):
    """Turn X into a DataFrame with unique str column names and a RangeIndex; reject empty X."""
    if sparse.issparse(X):
        raise DataValidationError("Sparse X is not supported: pass X.toarray() or a DataFrame.")
    if not isinstance(X, pd.DataFrame) and hasattr(X, "to_pandas") and hasattr(X, "columns"):
        # A polars DataFrame or an Arrow table: read by name through its own conversion. As an array it
        # would lose its column names, and a reordered frame at predict time would be silently misread.
        X = X.to_pandas()
    if isinstance(X, pd.DataFrame):
        frame = _decoded(X.set_axis([str(column) for column in X.columns], axis=1).reset_index(drop=True))
    else:
        array = _as_2d_array(X)
        if names is not None and array.shape[1] != len(names):
            raise DataValidationError(
                f"X has {array.shape[1]} features, but AutoClassifier is expecting {len(names)} features "
                "as input (array columns are matched by position to the training columns)."
            )
        frame = pd.DataFrame(array, columns=list(names or (f"x{i}" for i in range(array.shape[1]))))
    duplicated = sorted(set(frame.columns[frame.columns.duplicated()]))
    if duplicated:
        raise DataValidationError(
            f"X has duplicate column names (after conversion to str): {_listing(duplicated)}. Rename them."
        )
    if frame.shape[1] == 0:
        # The wording of sklearn's check_array, which sklearn's estimator checks look for.
        raise DataValidationError(
            f"Found array with 0 feature(s) (shape={frame.shape}) while a minimum of 1 is required."
        )
    if frame.shape[0] == 0:
        raise DataValidationError(f"Found array with 0 sample(s) (shape={frame.shape}); X has no rows.")
    return frame


def _decoded(frame):
    """``frame`` with its Arrow dictionary-encoded columns (parquet's categoricals) as their plain value type."""
    arrow = [name for name, dtype in frame.dtypes.items() if isinstance(dtype, pd.ArrowDtype)]
    if not arrow:
        return frame
    import pyarrow.types  # pandas' Arrow dtypes need pyarrow: it is installed when they occur
    coded = {name: pd.ArrowDtype(frame[name].dtype.pyarrow_dtype.value_type) for name in arrow
             if pyarrow.types.is_dictionary(frame[name].dtype.pyarrow_dtype)}
    return frame.astype(coded) if coded else frame


def _as_2d_array(X):
    """Convert an array or nested list to a 2-D ndarray, keeping mixed-type lists as objects."""
    try:
        array = np.asarray(X)
        if array.dtype.kind == "U" and not isinstance(X, np.ndarray):
            # A list mixing numbers and text would otherwise turn every number into a string.
            array = np.asarray(X, dtype=object)
    except ValueError as exc:
        raise DataValidationError(f"X cannot be read as a 2-D table: {exc}") from exc
    if array.ndim != 2:
        raise DataValidationError(
            f"Expected 2D array, got an array of shape {array.shape} instead. Reshape your data either "
            "using array.reshape(-1, 1) if your data has a single feature or array.reshape(1, -1) if "
            "it contains a single sample."
        )
    return array


def _infer_kind(column):
    """Return the kind of one input column: numeric, categorical, boolean or datetime."""
    dtype = column.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        return "categorical"
    if pd.api.types.is_bool_dtype(dtype):
        return "boolean"
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "datetime"
    if pd.api.types.is_complex_dtype(dtype):
        raise DataValidationError(f"Complex data not supported (column {column.name!r}).")
    if pd.api.types.is_numeric_dtype(dtype):
        return "numeric"
    if pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype):
        return _OBJECT_KINDS.get(pd.api.types.infer_dtype(column, skipna=True), "categorical")
    raise DataValidationError(
        f"Column {column.name!r} has unsupported dtype {dtype}; convert it to numbers, text or datetimes."
    )


def _convert_frame(frame, kinds, dtypes):
    """Convert each column to its kind's model-ready values; a value that does not fit is an error.

    ``dtypes`` maps a column to its dtype in training (as text): a float32 column there is float32 here.
    """
    text = [name for name, kind in kinds.items() if kind == "categorical"]
    single = [name for name, kind in kinds.items() if kind == "numeric" and dtypes.get(name) in _SINGLE_PRECISION]
    double = [name for name, kind in kinds.items() if kind != "categorical" and name not in single]
    # One 2-D array per dtype, filled column by column: building the frame from one Series per column took
    # 0.8 s for 30 columns of 800,000 rows. Explicit object dtype: pandas 3 would infer its str dtype.
    parts = [pd.DataFrame(_converted(frame, names, kinds, dtype).T, columns=names, dtype=dtype, copy=False)
             for names, dtype in ((double, "float64"), (single, "float32"), (text, object)) if names]
    return pd.concat(parts, axis=1)[list(kinds)]


def _converted(frame, names, kinds, dtype):
    """The columns ``names`` converted to their kinds, as the rows of one array of ``dtype``."""
    values = np.empty((len(names), len(frame)), dtype=dtype)
    for row, name in enumerate(names):
        kind = kinds[name]
        try:
            values[row] = _CONVERTERS[kind](frame[name])  # into float32: exact for a float32 or float16 column
        except (ValueError, TypeError) as exc:
            raise DataValidationError(
                f"Column {name!r} ({kind} in training) holds values that cannot be read as {kind}: "
                f"{exc}. Pass values of the same kind as in training."
            ) from exc
    return values


def _to_float(column):
    """Numeric column -> float64 array with NaN for missing values."""
    if not pd.api.types.is_numeric_dtype(column.dtype):
        column = pd.to_numeric(column, errors="raise")
    return column.to_numpy(dtype="float64", na_value=np.nan)


def _boolean_to_float(column):
    """Boolean column -> float64 array of 0.0 / 1.0 with NaN for missing values."""
    return column.astype("boolean").to_numpy(dtype="float64", na_value=np.nan)


def _datetime_to_days(column):
    """Datetime column -> float64 days since 1970-01-01 (UTC) with NaN for missing values."""
    if pd.api.types.is_numeric_dtype(column.dtype) and not pd.api.types.is_bool_dtype(column.dtype):
        # pandas would read the numbers as nanoseconds since 1970, silently.
        raise TypeError("numbers are not dates")
    stamps = pd.to_datetime(column, utc=True).dt.tz_localize(None)
    return ((stamps - _EPOCH) / _ONE_DAY).to_numpy(dtype="float64", na_value=np.nan)


def _to_str(column):
    """Categorical column -> object array of Python str with np.nan for missing values.

    Each distinct value is converted once (str() of every row took 0.3 s a column at 800,000 rows).
    Values that are equal but print differently (1, 1.0 and True share a code) are converted row by row.
    """
    codes, uniques = pd.factorize(column)  # a missing value gets code -1
    levels = np.asarray(uniques, dtype=object)
    if pd.api.types.infer_dtype(levels, skipna=False) != "string":
        levels = column.astype(object).to_numpy()
        codes = np.where(pd.isna(levels), -1, np.arange(len(levels)))
    text = np.array([str(level) for level in levels] + [np.nan], dtype=object)
    return text[codes]  # -1 takes the trailing nan


_CONVERTERS = {
    "numeric": _to_float,
    "boolean": _boolean_to_float,
    "datetime": _datetime_to_days,
    "categorical": _to_str,
}


def _check_finite(frame):
    """Raise if a float column holds +inf or -inf, naming the columns and counts."""
    floats = frame.select_dtypes("floating")
    counts = np.isinf(floats.to_numpy()).sum(axis=0)
    bad = {name: f"{count} value(s)" for name, count in zip(floats.columns, counts) if count}
    if bad:
        raise DataValidationError(
            f"X contains infinite values in {len(bad)} column(s): {_describe(bad)}. "
            "Replace inf and -inf with NaN (treated as missing) or with finite values."
        )


def _find_uninformative(frame):
    """Return column -> reason for columns with no non-missing value or a single distinct one."""
    found = {}
    for name, column in frame.items():
        # Two distinct values among the first rows settle most columns without hashing every row
        # (DataFrame.nunique took 1.5 s on 30 columns of 800,000 rows).
        if column.iloc[:1000].nunique() < 2 and (n_distinct := column.nunique()) < 2:
            found[name] = "constant" if n_distinct else "all values missing"
    return found


def _fingerprint(converted, y_encoded, classes):
    """Hash the content of X (all input columns, converted) and y into 16 hex characters."""
    digest = hashlib.sha256()
    digest.update("\x1f".join(converted.columns).encode())
    digest.update(pd.util.hash_pandas_object(converted, index=False).to_numpy().tobytes())
    digest.update(pd.util.hash_pandas_object(pd.Series(y_encoded), index=False).to_numpy().tobytes())
    digest.update("\x1f".join(map(repr, classes.tolist())).encode())
    return digest.hexdigest()[:16]


def _build_profile(X_clean, kinds, dropped, class_counts, fingerprint, identifiers=()):
    """Assemble the DatasetProfile from the cleaned frame and what was learnt on the way."""
    kept = tuple(X_clean.columns)
    categorical = tuple(name for name in kept if kinds[name] == "categorical" and name not in identifiers)
    # A text column is hashed once for its levels and its missing values (code -1).
    factorized = {name: pd.factorize(X_clean[name]) for name in categorical}
    missing = {name: float((codes < 0).mean()) for name, (codes, _) in factorized.items()}
    return DatasetProfile(
        n_samples=len(X_clean),
        n_features=len(kept),
        feature_names=kept,
        input_columns=tuple(kinds),
        numeric_columns=tuple(name for name in kept if kinds[name] != "categorical"),
        categorical_columns=categorical,
        dropped_columns=dict(dropped),
        missing_rate={name: missing[name] if name in missing else float(X_clean[name].isna().mean()) for name in kept},
        categories={name: tuple(sorted(levels)) for name, (_, levels) in factorized.items()},
        kinds=dict(kinds),
        task="binary" if len(class_counts) == 2 else "multiclass",
        n_classes=len(class_counts),
        class_counts=tuple(int(count) for count in class_counts),
        fingerprint=fingerprint,
        identifier_columns=tuple(identifiers),
    )


def target_stats(y):
    """``min, max, mean, std, skew`` of a regression target ``y`` (array of shape (n_samples,)) as floats: the
    report shows them, the search space reads the sign and the skew, the retraining job compares them."""
    return {"min": float(y.min()), "max": float(y.max()), "mean": float(y.mean()), "std": float(y.std()),
            "skew": float(scipy.stats.skew(y))}


def _describe(details):
    """Render {name: detail} as "'a' (detail), 'b' (detail)", capped like _listing."""
    return _listing([f"{name!r} ({detail})" for name, detail in details.items()], render=str)
