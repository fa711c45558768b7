"""The rows' groups (``fit(X, y, groups=...)``): checked and numbered once, for the splitters and the leak check.

Rows of one group (a patient, a customer, a machine) are not independent: a model that sees some of
them in training scores too well on the others. scikit-learn's group splitters (``GroupKFold``,
``StratifiedGroupKFold``) keep each group on one side of every split; they take any hashable labels,
which are numbered here so that a fold's groups are cheap to compare and the labels are never copied
into the search's shared file.
"""

import numpy as np
import pandas as pd

from ..exceptions import DataValidationError


def check_groups(groups, n_samples):
    """Check ``groups`` against the rows of ``X`` and number them 0 .. n_groups - 1.

    Parameters
    ----------
    groups : array-like of shape (n_samples,)
        A group label per row (str, int, or any hashable value), as scikit-learn's group splitters take.
    n_samples : int
        Rows of ``X``.

    Returns
    -------
    codes : ndarray of int64 of shape (n_samples,)
        The group of each row, numbered in order of first appearance (``pandas.factorize``).

    Raises
    ------
    DataValidationError
        If ``groups`` is not one-dimensional, its length is not ``n_samples``, a label is missing,
        or all rows are in one group.
    """
    values = groups.to_numpy() if isinstance(groups, (pd.Series, pd.Index)) else np.asarray(groups, dtype=object)
    if values.ndim != 1:
        raise DataValidationError(f"groups must be one-dimensional, a label per row; got shape {values.shape}.")
    if len(values) != n_samples:
        raise DataValidationError(f"groups has {len(values)} labels but X has {n_samples} rows: give one per row.")
    missing = np.flatnonzero(pd.isna(values))
    if missing.size:
        raise DataValidationError(
            f"groups has {missing.size} missing label(s), first at rows {missing[:5].tolist()}: a row of no known "
            "group may share its entity with any fold. Give each row its group, or drop those rows.")
    codes, labels = pd.factorize(values)
    if len(labels) < 2:
        raise DataValidationError(f"groups puts all {n_samples} rows in one group ({labels[0]!r}): grouped folds "
                                  "need at least two groups.")
    return codes.astype(np.int64)


def groups_across(folds, groups):
    """The groups that have rows on both sides of some fold.

    Parameters
    ----------
    folds : list of (train_index, test_index) pairs
    groups : ndarray of int of shape (n_samples,)
        From :func:`check_groups`.

    Returns
    -------
    crossing : ndarray of int
        Sorted codes of the groups found in a fold's training and test rows; empty when the folds keep
        every group whole.
    """
    crossing = [np.intersect1d(groups[train], groups[test]) for train, test in folds]
    return np.unique(np.concatenate(crossing)) if crossing else np.array([], dtype=np.int64)
