"""How the rows are split for the search: k folds or one holdout, shuffled, grouped or in time order.

Every trial of a search is scored on the same split (:func:`automl.search.prepare_search` makes it once).
Three kinds of row order meet here, each a scikit-learn splitter or a thin layer over one:

- **independent rows**: shuffled, seeded, stratified for classification (``StratifiedKFold``, ``KFold``,
  ``StratifiedShuffleSplit``, ``ShuffleSplit``);
- **grouped rows** (``groups``): each group on one side (``StratifiedGroupKFold``, ``GroupKFold``,
  ``GroupShuffleSplit``);
- **time order** (``cv="time"``, or a splitter such as ``TimeSeriesSplit``, with ``time_column`` or the
  row order): every validated row is later than every row trained on. The splitter sees the rows sorted
  by time; rows of one timestamp are never split between training and validation (those on the training
  side are left out of that fold's training part), since a model trained on them would know the moment
  it is scored on. The rows before the first validation fold are never validated: their OOF predictions
  do not exist, and ensemble selection runs on the rows that were
  (:func:`automl.search.scored_rows`).
"""

import numpy as np
from sklearn.model_selection import (
    GroupKFold, GroupShuffleSplit, KFold, ShuffleSplit, StratifiedGroupKFold, StratifiedKFold, StratifiedShuffleSplit,
    TimeSeriesSplit,
)

from ..exceptions import DataValidationError, plain_repr

# cv="time": the folds of scikit-learn's TimeSeriesSplit default (5), each validating the next sixth of the rows.
TIME_SPLITS = 5


def default_splitter(task, n_splits, seed, grouped=False):
    """The folds an int ``cv`` stands for: shuffled, seeded, stratified for classification, grouped with groups.

    ``StratifiedKFold`` or ``KFold``; with groups scikit-learn's ``StratifiedGroupKFold`` (each class's
    share kept as near as whole groups allow) or ``GroupKFold`` (groups spread so the folds' sizes
    match), both shuffled with the seed.
    """
    if grouped:
        kind = GroupKFold if task == "regression" else StratifiedGroupKFold
    else:
        kind = KFold if task == "regression" else StratifiedKFold
    return kind(n_splits=n_splits, shuffle=True, random_state=seed)


def n_splits_of(cv, groups=None):
    """Folds of ``cv``: an int, ``"time"`` (:data:`TIME_SPLITS`) or a splitter's ``get_n_splits`` (which needs
    the groups for ``LeaveOneGroupOut``).

    Raises
    ------
    ValueError
        If the splitter counts its folds by groups and none are given.
    """
    if isinstance(cv, int):
        return cv
    if cv == "time":
        return TIME_SPLITS
    try:
        return cv.get_n_splits(None, None, groups)
    except ValueError as exc:
        raise _needs_groups(cv, exc) if groups is None and "groups" in str(exc) else exc


def _needs_groups(splitter, exc):
    return ValueError(f"cv={splitter!r} splits by groups, and none were given: pass fit(X, y, groups=...), a group "
                      f"label per row ({exc}).")


def time_order(X, time_column, profile):
    """The validated rows sorted by ``time_column`` (stable: ties keep the row order), and their times.

    Parameters
    ----------
    X : DataFrame
        The validated frame (:func:`automl.data.check_training_data`): datetimes are float days there.
    time_column : str or None
        A numeric or datetime column of ``X``; None: the rows are in time order as given.
    profile : DatasetProfile

    Returns
    -------
    order : ndarray of int of shape (n_samples,)
    times : ndarray of float of shape (n_samples,), or None without ``time_column``

    Raises
    ------
    DataValidationError
        If ``time_column`` is not a column of ``X``, was dropped (constant or empty), holds text, or has
        missing values.
    """
    if time_column is None:
        return np.arange(len(X)), None
    if time_column in profile.dropped_columns:
        raise DataValidationError(f"time_column {time_column!r} was dropped ({profile.dropped_columns[time_column]}): "
                                  "it cannot order the rows.")
    if time_column not in X.columns:
        raise DataValidationError(f"time_column {time_column!r} is not a column of X; columns: {list(X.columns)}.")
    if profile.kinds.get(time_column) == "categorical":
        raise DataValidationError(f"time_column {time_column!r} holds text: convert it to datetimes "
                                  "(pandas.to_datetime) or numbers, so that its order is time's.")
    times = X[time_column].to_numpy(dtype=float)
    missing = np.flatnonzero(np.isnan(times))
    if missing.size:
        raise DataValidationError(f"time_column {time_column!r} has {missing.size} missing value(s), first at rows "
                                  f"{missing[:5].tolist()}: a row of no known time cannot be put before or after "
                                  "the others. Fill them in or drop those rows.")
    return np.argsort(times, kind="stable"), times


def make_folds(cv, X, y, seed, task, groups=None, order=None):
    """The search's folds: ``cv`` an int (:func:`default_splitter`), ``"time"``, or a splitter.

    ``order`` is ``(order, times)`` from :func:`time_order` for a time-ordered split (``cv="time"`` makes
    ``TimeSeriesSplit(TIME_SPLITS)``), else None.
    """
    if order is not None:
        splitter = TimeSeriesSplit(n_splits=TIME_SPLITS) if cv == "time" else cv
        return _time_folds(splitter, y, *order)
    # One splitter, made once: every trial is scored on the same rows, so OOF arrays are comparable.
    splitter = cv
    if isinstance(splitter, int):
        if groups is not None:
            check_group_counts(groups, y, cv, task)
        splitter = default_splitter(task, cv, seed, grouped=groups is not None)
    try:
        return list(splitter.split(X, y, groups))
    except ValueError as exc:
        if groups is None and "groups" in str(exc):
            raise _needs_groups(splitter, exc) from exc
        raise


def check_group_counts(groups, y, n_splits, task, name="cv", source="groups", classes=None):
    """Refuse grouped folds that cannot be made, or would leave a class of two out of a fold's validation rows.

    ``groups`` and ``y`` are arrays of shape (n_samples,), ``y`` encoded (0 and 1 for two classes);
    ``name`` is the setting that gave ``n_splits`` and ``source`` the groups' name, both for the message;
    ``classes`` names the codes of ``y`` (else "Class 0 (in encoded order)").

    Raises
    ------
    DataValidationError
        If there are fewer groups than ``n_splits``, or, for two classes, a class lies in fewer groups than
        ``n_splits`` (some folds would validate no row of it: ROC AUC is undefined there, and every trial
        would fail).
    """
    n_groups = len(np.unique(groups))
    if n_groups < n_splits:
        raise DataValidationError(f"{source} has {n_groups} group(s), fewer than the "
                                  f"{name}={n_splits} folds: {_fewer_folds(name, n_groups, 'more groups')}.")
    if task == "regression" or int(y.max()) != 1:
        return
    for code in (0, 1):
        held = len(np.unique(groups[y == code]))
        if held < n_splits:
            label = f"Class {code} (in encoded order)" if classes is None else f"Class {plain_repr(classes[code])}"
            fix = _fewer_folds(name, held, "data with that class in more groups")
            raise DataValidationError(
                f"{label} lies in {held} group(s) only ({source}): with {name}={n_splits} grouped folds some "
                f"would validate no row of it, and no score could be computed there. {fix[:1].upper()}{fix[1:]}.")


def _fewer_folds(name, most, otherwise):
    """What to do when only ``most`` folds can be made: grouped folds need 2 groups at least."""
    if most < 2:
        return f"grouped folds need at least 2; give {otherwise}"
    return f"give {name}={most} or fewer, or {otherwise}"


def _time_folds(splitter, y, order, times):
    """``splitter``'s folds of the rows in time order, as row indices, no timestamp on both sides.

    Raises
    ------
    ValueError
        If the splitter needs groups (time order and groups are not combined), or a fold has no row older
        than its validation rows to train on (a splitter that is not a time split, or too few timestamps).
    """
    try:
        pairs = list(splitter.split(np.empty((len(order), 0)), y[order]))
    except ValueError as exc:
        if "groups" in str(exc):
            raise ValueError(f"cv={splitter!r} splits by groups: time order and groups together are not "
                             "supported yet.") from exc
        raise
    folds = []
    for number, (train, test) in enumerate(pairs):
        train, test = order[train], order[test]
        if times is not None:
            train = train[times[train] < times[test].min()]
        if not len(train):
            raise ValueError(f"Fold {number} of cv={splitter!r} in time order has no row older than its validation "
                             "rows to train on: give a time split (cv='time', TimeSeriesSplit), and a time column "
                             "with more distinct times than folds.")
        folds.append((np.sort(train), np.sort(test)))
    return folds


def holdout_split(X, y, seed, task, share, groups=None, order=None):
    """One (train, test) pair holding out ``share`` of the rows, its rows sorted.

    Seeded and stratified for classification; a share of the groups with ``groups``; with ``order``
    (:func:`time_order`) the newest rows, every row of the first timestamp held out included. A class the
    holdout lacks is moved in (one row, or its whole group), except in time order.
    """
    if order is not None:
        return [_newest(y, task, share, *order)]
    if groups is not None:  # a share of the groups, not of the rows
        splitter = GroupShuffleSplit(n_splits=1, test_size=share, random_state=seed)
    else:
        kind = ShuffleSplit if task == "regression" else StratifiedShuffleSplit
        splitter = kind(n_splits=1, test_size=share, random_state=seed)
    train, test = next(splitter.split(X, y, groups))
    if task != "regression":
        train, test = _every_class_in(train, test, y, groups)
    return [(np.sort(train), np.sort(test))]


def _newest(y, task, share, order, times):
    """A time-ordered holdout: the newest ``share`` of the rows, every row of its first timestamp included.

    No row is moved in for a class it lacks (an older row would put the future in training); for two
    classes that lack is refused, since a ROC AUC of one class is undefined.
    """
    cut = len(order) - max(1, round(share * len(order)))
    newest = times[order] >= times[order[cut]] if times is not None else np.arange(len(order)) >= cut
    train, test = order[~newest], order[newest]
    if not len(train):
        raise ValueError(f"The newest {share:.0%} of the rows share their time with every other row: no older row "
                         "is left to train on. Give a time column with more distinct times.")
    if task != "regression" and int(y.max()) == 1 and len(np.unique(y[test])) < 2:
        raise DataValidationError(f"The newest {len(test):,} rows (the time-ordered holdout) hold one class only: "
                                  "no score can be computed on them. Use validation='cv' with cv='time'.")
    return np.sort(train), np.sort(test)


def _every_class_in(train, test, y, groups=None):
    """Move one training row of each class the holdout lacks into it (a stratified 10% of 2-5 rows is none),
    with its whole group when there are groups: a class absent from the holdout is never scored, and a
    binary ROC AUC on one class is undefined."""
    missing = np.setdiff1d(np.unique(y[train]), np.unique(y[test]))
    if not len(missing):
        return train, test
    moved = np.array([train[np.flatnonzero(y[train] == label)[0]] for label in missing])
    if groups is not None:
        moved = train[np.isin(groups[train], groups[moved])]
    return np.setdiff1d(train, moved), np.union1d(test, moved)
