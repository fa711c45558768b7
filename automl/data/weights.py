"""The rows' weights (``fit(X, y, sample_weight=...)``): checked once, rescaled to a mean of 1.

A weight says how much a row counts (a survey weight, an exposure, a cost), in the fit of every model
and in every score, as scikit-learn's ``sample_weight`` does. Weights are rescaled to a mean of 1 over
the rows kept: every weighted metric is the same for any positive multiple of the weights, but a
model's regularisation is not (logistic regression's ``C``, LightGBM's ``min_child_weight`` compare a
penalty with a sum of weighted losses), so the scale of a survey's weights (thousands per row) would
otherwise move each family's best knobs.
"""

import numpy as np
import pandas as pd

from ..exceptions import DataValidationError, plain_repr


def check_sample_weight(sample_weight, n_samples):
    """Check ``sample_weight`` against the rows of ``X``.

    Parameters
    ----------
    sample_weight : array-like of shape (n_samples,)
        A non-negative, finite number per row.
    n_samples : int
        Rows of ``X``.

    Returns
    -------
    weights : ndarray of float64 of shape (n_samples,)
        As given (not yet rescaled: see :func:`kept_weights`).

    Raises
    ------
    DataValidationError
        If ``sample_weight`` is not one-dimensional, its length is not ``n_samples``, it holds a value
        that is not a number, a missing, infinite or negative value (the first rows are named), or
        every weight is zero.
    """
    values = sample_weight.to_numpy() if isinstance(sample_weight, (pd.Series, pd.Index)) else np.asarray(
        sample_weight, dtype=object)
    if values.ndim != 1:
        raise DataValidationError(f"sample_weight must be one-dimensional, a number per row; got shape "
                                  f"{values.shape}.")
    if len(values) != n_samples:
        raise DataValidationError(f"sample_weight has {len(values)} values but X has {n_samples} rows: give one "
                                  "per row.")
    if values.dtype.kind in "mMc":  # datetimes and timedeltas would become nanosecond counts, complex numbers lose a part
        raise DataValidationError(f"sample_weight must hold real numbers; got dtype {values.dtype}.")
    numbers = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    bad = np.flatnonzero(np.isnan(numbers) & ~pd.isna(values))
    _refuse(bad, "value(s) that are not numbers", values)
    _refuse(np.flatnonzero(pd.isna(values)), "missing value(s)", values,
            "a row of unknown weight cannot be scored: give each row its weight, or drop those rows")
    _refuse(np.flatnonzero(np.isinf(numbers)), "infinite value(s)", values)
    _refuse(np.flatnonzero(numbers < 0), "negative value(s)", values, "a weight says how much a row counts")
    if not numbers.any():
        raise DataValidationError("Every sample_weight is zero: no row would count.")
    return numbers


def kept_weights(weights, keep):
    """The weights of the rows kept by the data check, rescaled to a mean of 1 (see the module docstring).

    Parameters
    ----------
    weights : ndarray of float64 of shape (n_samples,)
        From :func:`check_sample_weight`.
    keep : ndarray of bool of shape (n_samples,)
        The rows the data check kept.

    Returns
    -------
    weights : ndarray of float64 of shape (n_kept,)

    Raises
    ------
    DataValidationError
        If every kept row weighs 0.
    """
    kept = weights[keep]
    kept = kept / kept.max() if kept.max() > 0 else kept  # first to at most 1: a sum of 1e308s overflows
    total = kept.sum()
    if total <= 0:
        raise DataValidationError("Every sample_weight of the rows kept is zero (rows of a class too rare to "
                                  "learn are dropped): no row would count.")
    return kept * (len(kept) / total)


def check_class_weights(y, weights, classes):
    """Refuse a class whose rows all weigh 0: a model would learn to never predict it, and score perfectly.

    Raises
    ------
    DataValidationError
        Naming the first such classes.
    """
    totals = np.bincount(y, weights=weights, minlength=len(classes))
    empty = [repr(classes[i]) for i in np.flatnonzero(totals <= 0)]
    if empty:
        raise DataValidationError(f"sample_weight is zero on every row of class(es) {', '.join(empty[:5])}: a model "
                                  "would never predict them, and every score would ignore them. Give their rows "
                                  "weight, or drop those rows.")


def _refuse(rows, what, values, why=None):
    if rows.size:
        shown = ", ".join(f"row {i}: {plain_repr(values[i])}" for i in rows[:5])
        raise DataValidationError(f"sample_weight has {rows.size} {what} ({shown})" + (f": {why}." if why else "."))
