"""Check the target y and encode it: class labels for a classifier, numbers for a regressor.

Classification:

- Labels must be finite, present and of one type; a column vector is flattened.
- A class with a single member is dropped with its row (a DataRepairWarning names it): it cannot
  be both learnt and scored by cross-validation, and XGBoost refuses folds that lack a class. When
  such classes hold more than 10% of the rows, y is refused instead (it is not a set of labels).
- A class with fewer members than the CV folds is kept, with a warning (some folds score none of it);
  only when every class is that rare is it an error.

Regression: the values must be numbers (bools, text and categories of text are refused; numbers
stored as text get their own error), with none missing or infinite; the errors count them.
"""

import logging

import numpy as np
import pandas as pd
from sklearn.exceptions import DataConversionWarning
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import column_or_1d

from ..exceptions import DataRepairWarning, DataValidationError, listing, warn_user

logger = logging.getLogger(__name__)

# Share of rows in single-member classes above which y is refused rather than repaired.
MAX_DROPPED_SHARE = 0.10


def _target_array(y):
    """Return y as a 1-D ndarray; a column vector is flattened with sklearn's DataConversionWarning."""
    if y is None:
        raise DataValidationError("check_training_data requires y to be passed, but the target y is None.")
    if isinstance(y, pd.DataFrame) and y.shape[1] == 1:
        # Same warning as sklearn's column_or_1d, while keeping the column's pandas dtype.
        message = "A column-vector y was passed when a 1d array was expected."
        warn_user(message, DataConversionWarning)
        y = y.iloc[:, 0]
    if isinstance(y, pd.Series):
        values = y.to_numpy()
    else:
        try:
            values = column_or_1d(y, warn=True)
        except ValueError as exc:
            raise DataValidationError(f"{exc} Multi-output targets are not supported.") from exc
    # Nullable and object columns of numbers or bools: give sklearn a typed array to inspect. Python str
    # alone is left as it is: pandas 3 would make it its str dtype and back, 0.2 s at 800,000 rows.
    if values.dtype == object and set(map(type, values)) != {str}:
        values = pd.Series(values, dtype=object).infer_objects().to_numpy()
    return values


def encode_target(y, n_samples, n_folds):
    """Check the labels and encode them.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
    n_samples : int
        Rows of X, which y must match.
    n_folds : int
        Folds of the search's CV: rarer classes are warned about.

    Returns
    -------
    y_encoded : ndarray of shape (n_kept,)
        Labels 0 .. n_classes - 1 of the rows kept.
    classes : ndarray of shape (n_classes,)
        Sorted original labels.
    keep : ndarray of bool of shape (n_samples,)
        False for the rows of classes seen once, which are dropped (with a DataRepairWarning).

    Raises
    ------
    DataValidationError
        On a length mismatch, missing or infinite labels, continuous or mixed-type values, a single
        class, or when every class has fewer members than ``n_folds``.
    """
    values = _target_array(y)
    if len(values) != n_samples:
        raise DataValidationError(
            f"X and y have different lengths: X has {n_samples} rows, y has {len(values)} labels."
        )
    missing = np.flatnonzero(pd.isna(values))
    if missing.size:
        raise DataValidationError(
            f"Input y contains NaN: {missing.size} missing label(s), first at positions "
            f"{missing[:5].tolist()}. Drop these rows from X and y, or fill in their labels."
        )
    if values.dtype.kind == "f" and np.isinf(values).any():
        count = int(np.isinf(values).sum())
        raise DataValidationError(f"Input y contains infinity: {count} label(s). y must hold class labels.")
    try:
        labels, codes = _sorted_codes(values)
    except (ValueError, TypeError) as exc:
        if "continuous" in str(exc):
            hint = "y looks like a regression target (continuous values); use AutoRegressor for it"
        else:
            hint = "y must hold finite class labels of one type (all str, all int or all bool)"
        raise DataValidationError(f"{exc} {hint}.") from exc
    counts = np.bincount(codes, minlength=len(labels))
    if len(labels) < 2:
        _check_class_counts(labels, [len(values)], n_folds)
    keep = _rows_of_classes_seen_twice(labels, counts, codes)
    kept = counts >= 2
    if kept.sum() < 2:
        raise DataValidationError(
            f"y has {len(labels)} classes but fewer than 2 of them have 2 or more members: a "
            "classifier needs at least 2 classes it can learn and score by cross-validation.")
    # The kept classes numbered 0 .. n_classes - 1 in sorted order, as LabelEncoder numbers them.
    y_encoded = (np.cumsum(kept) - 1)[codes[keep]]
    _check_class_counts(labels[kept], counts[kept], n_folds)
    return y_encoded, labels[kept], keep


def _sorted_codes(values):
    """y's sorted distinct labels and each row's position among them, as LabelEncoder gives them.

    sklearn's check_classification_targets and LabelEncoder sort all of y: 2 s for 800,000 strings.
    Here y is hashed once (pandas.factorize) and type_of_target runs on the distinct labels alone: it
    reads only y's dtype, first value and set of values, which the distinct labels, taken from y in
    order of first appearance, share. Where sklearn's check would raise or warn (an error, or as many
    classes as half the rows), the check, sorting and encoding run on all of y, as before; so they do
    for floats, cheap to sort, whose -0.0 and 0.0 are one label shown as the one np.unique's sort
    puts first.
    """
    try:
        codes, distinct = _distinct(values)
        kind = type_of_target(distinct, input_name="y")
    except (ValueError, TypeError):
        kind = None
    if kind not in ("binary", "multiclass") or 2 * len(distinct) > len(values) or values.dtype.kind == "f":
        check_classification_targets(values)
        encoder = LabelEncoder().fit(values)
        return encoder.classes_, encoder.transform(values)
    encoder = LabelEncoder().fit(distinct)
    return encoder.classes_, encoder.transform(distinct)[codes]


def _distinct(values):
    """Each row's code and y's distinct values (in y's dtype), both in order of first appearance."""
    codes, _ = pd.factorize(values)
    return codes, values[np.unique(codes, return_index=True)[1]]


def regression_target(y, n_samples, n_folds=2):
    """Check a regression target and return it as float64.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        Numbers (int, float, a nullable numeric pandas column, or a pandas category of numbers).
    n_samples : int
        Rows of X, which y must match.
    n_folds : int, default=2
        Folds of the search's CV: y needs at least this many rows.

    Returns
    -------
    y : ndarray of float64 of shape (n_samples,)

    Raises
    ------
    DataValidationError
        On a length mismatch, a non-numeric target (strings, bools, numbers stored as text: the message
        names the dtype or the first value that is not a number and its position), missing or infinite
        values (their count and first positions), fewer rows than folds, or a constant target.
    """
    values = _target_array(y)
    if len(values) != n_samples:
        raise DataValidationError(
            f"X and y have different lengths: X has {n_samples} rows, y has {len(values)} values.")
    if values.dtype.kind not in "iuf":
        numbers = pd.to_numeric(pd.Series(values, dtype=object), errors="coerce").to_numpy(dtype=float)
        bad = np.flatnonzero(np.isnan(numbers) & ~pd.isna(values))
        if values.dtype.kind in "OSU" and not bad.size:
            raise DataValidationError(
                f"y holds numbers stored as text (dtype {values.dtype}, first {str(values[0])!r}): convert it "
                "with pandas.to_numeric first.")
        if values.dtype.kind in "OSU":
            raise DataValidationError(
                f"A regression target must be numeric; y has {bad.size} value(s) that are not numbers (first "
                f"{str(values[bad[0]])!r} at position {int(bad[0])}). Fix or drop those rows; for class labels "
                "use AutoClassifier.")
        raise DataValidationError(
            f"A regression target must be numeric; y has dtype {values.dtype}. For class labels use AutoClassifier.")
    values = values.astype(np.float64)
    for problem, mask in (("missing (NaN)", np.isnan(values)), ("infinite", np.isinf(values))):
        if mask.any():
            raise DataValidationError(
                f"y has {int(mask.sum())} {problem} value(s), first at positions {np.flatnonzero(mask)[:5].tolist()}. "
                "Drop these rows from X and y, or fill in their values.")
    if len(values) < max(2, n_folds):
        raise DataValidationError(f"Found n_samples={len(values)}, but {max(2, n_folds)}-fold cross-validation "
                                  f"needs at least {max(2, n_folds)} rows.")
    if np.ptp(values) == 0:
        raise DataValidationError(f"y is constant ({float(values[0])!r} on every row): there is nothing to learn.")
    return values


def _rows_of_classes_seen_twice(labels, counts, codes):
    """Mask of the rows whose class has 2 or more members; warns about the rows it drops.

    ``labels`` are y's sorted classes, ``counts`` their members and ``codes`` each row's class.
    A class with one member cannot be in a fold's training part and its test part at once: every
    model would be scored on a class it never saw in one fold, and XGBoost refuses such folds.
    """
    single = labels[counts < 2]
    if not single.size:
        return np.ones(len(codes), dtype=bool)
    keep = counts[codes] >= 2
    if (~keep).mean() > MAX_DROPPED_SHARE and labels.size - single.size >= 2:
        # Dropping that much is no repair: such a y is an identifier or a measurement, not labels.
        raise DataValidationError(
            f"{single.size} of y's {labels.size} classes have a single member ({listing(single.tolist())}), "
            f"{(~keep).mean():.0%} of the rows: that is not a set of class labels. For a numeric target use "
            "AutoRegressor (automl fit --task regression); otherwise merge the rare labels.")
    warn_user(
        f"Dropped {int((~keep).sum())} row(s) of {single.size} class(es) with a single member "
        f"({listing(single.tolist())}): a class seen once cannot be learnt and scored by cross-validation, "
        "and the model will not predict it. Add examples of it, or merge it with a related class.",
        DataRepairWarning
    )
    return keep


def _check_class_counts(classes, counts, n_folds):
    """Raise if y has a single class or every class has fewer than n_folds members; warn for rare ones."""
    if len(classes) < 2:
        label = classes.tolist()[0]
        raise DataValidationError(f"y has 1 class ({label!r}); a classifier needs at least 2 classes.")
    rare = [f"class {label!r} has {n} member(s)" for label, n in zip(classes.tolist(), counts) if n < n_folds]
    if len(rare) == len(classes):
        raise DataValidationError(
            f"Every class has fewer members than n_folds={n_folds}: {listing(rare, render=str)}. "
            "Stratified folds need more rows than folds in some class: lower cv."
        )
    if rare:
        warn_user(
            f"{len(rare)} class(es) have fewer members than n_folds={n_folds}: {listing(rare, render=str)}. "
            "Some folds score no row of them, so their fold scores vary more.", DataRepairWarning)


def training_classes(y):
    """Every label of a validated y with its count, dropped classes included.

    Parameters
    ----------
    y : array-like of shape (n_samples,)
        A target that :func:`encode_target` accepted.

    Returns
    -------
    classes : ndarray of shape (n_classes,)
        Sorted labels, in the order :func:`encode_target` sorts them.
    counts : ndarray of int of shape (n_classes,)
        Rows of each label; 1 marks a class that was dropped from the search.
    """
    values = _target_array(y)
    if values.dtype.kind == "f":  # -0.0 or 0.0: see _sorted_codes
        return np.unique(values, return_counts=True)
    # np.unique(y, return_counts=True) on the distinct labels only: sorting all of y took 1 s on 800,000 strings.
    codes, distinct = _distinct(values)
    classes, order = np.unique(distinct, return_inverse=True)
    return classes, np.bincount(order[codes], minlength=len(classes))


def widen_proba(proba, class_counts):
    """Add a column for each class seen once, at its training base rate, to the kept classes' probabilities.

    A class dropped from the search still exists: giving it probability 0 costs a log loss of about
    34 on each of its rows (the clipping bound), so it gets its share of the training rows instead, and
    the kept classes' probabilities shrink by the same total.

    Parameters
    ----------
    proba : ndarray of shape (n_samples, n_kept)
        Probabilities over the classes with 2 or more training rows.
    class_counts : array-like of int of shape (n_classes,)
        Training rows of every class (:func:`training_classes`).

    Returns
    -------
    proba : ndarray of shape (n_samples, n_classes)
        Rows sum to 1.
    """
    counts = np.asarray(class_counts)
    kept = counts >= 2
    if kept.all():
        return proba
    prior = counts / counts.sum()
    widened = np.empty((proba.shape[0], len(counts)))
    widened[:, ~kept] = prior[~kept]
    widened[:, kept] = proba * (1.0 - prior[~kept].sum())
    return widened


def class_counts_of(model):
    """Training rows of each class in ``model.classes_`` (models saved before ``class_counts_`` have the profile's)."""
    counts = getattr(model, "class_counts_", None)
    return tuple(int(n) for n in (model.profile_.class_counts if counts is None else counts))


# A numeric target with more distinct values than this is taken for a regression target.
MAX_CLASSES = 20


def infer_task(y, name="target"):
    """``"regression"`` for a numeric (not boolean) target with more than MAX_CLASSES values, else classification.

    Logs which it chose and why, so that a user can choose otherwise (``--task``, ``[search] task``).

    Raises
    ------
    DataValidationError
        If ``y`` is text of which at least 90% are numbers: a numeric target with a few bad cells (named
        in the message), not many classes.
    """
    numeric = pd.api.types.is_numeric_dtype(y) and not pd.api.types.is_bool_dtype(y)
    n_distinct = int(pd.Series(y).nunique())
    if not numeric and n_distinct > MAX_CLASSES:
        _refuse_numbers_with_typos(pd.Series(y), name)
    task = "regression" if numeric and n_distinct > MAX_CLASSES else "classification"
    why = (f"numeric with {n_distinct} distinct values" if numeric else f"of dtype {pd.Series(y).dtype}")
    logger.info("Target %r is %s: task %s (--task, or [search] task of a retraining job, chooses).", name, why,
                task)
    return task


def _refuse_numbers_with_typos(y, name):
    """A text column that is mostly numbers is a numeric target with a few bad cells, not many classes."""
    present = y.dropna()
    bad = present[pd.to_numeric(present, errors="coerce").isna()]
    if len(bad) < 0.1 * len(present):
        examples = ", ".join(f"{v!r} (row {i})" for i, v in bad.head(5).items())
        raise DataValidationError(
            f"Target {name!r} is text, but {len(present) - len(bad)} of its {len(present)} values are numbers; "
            f"the others: {examples or 'none (numbers stored as text)'}. Fix or drop those rows, or choose the task "
            "(--task, [search] task).")
