"""The data leak check as ``fit`` runs it before the search, for either task."""

import numpy as np

from ..data import groups_across
from ..exceptions import DataValidationError, LeakageWarning, warn_user
from ..search import default_splitter, is_holdout
from .leakage import LeakageReport, LeakFinding, check_data_leakage
from .leakage_regression import check_regression_leakage


# Folds of the check when the search validates on one holdout.
CHECK_FOLDS = 5


def check_before_search(X, y, profile, folds, random_state, mode, groups=None, time_column=None):
    """The data-level check as ``fit`` runs it: skipped, warned about, or raised on when high.

    Parameters
    ----------
    X, y, profile, folds, random_state
        As for :func:`check_data_leakage` (:func:`automl.checks.check_regression_leakage` for
        a regression profile). A single fold (a holdout search) is replaced by
        :data:`CHECK_FOLDS` seeded folds: a column's score needs every row scored.
    mode : {"warn", "raise", "off"}
        ``AutoClassifier(leak_check=...)``.
    groups : ndarray of int of shape (n_samples,) or None, default=None
        The rows' group codes (:func:`automl.data.check_groups`): the seeded folds of a holdout search
        are grouped too, and :func:`check_group_folds` reports whether any group crosses a fold.
    time_column : str or None, default=None
        The column that orders a time-ordered search: distinct on every row as times are, it is not
        reported as a row identifier (the advice to drop it would drop the order asked for).

    Returns
    -------
    report : LeakageReport
        Empty when ``mode="off"``.

    Raises
    ------
    DataValidationError
        With ``mode="raise"``, when a finding is of high severity (every such finding is quoted).

    Warns
    -----
    LeakageWarning
        One per finding, with ``mode="warn"``.
    """
    if mode == "off":
        return LeakageReport(())
    check = check_regression_leakage if profile.task == "regression" else check_data_leakage
    report = LeakageReport(()) if groups is None else check_group_folds(folds, groups)
    if is_holdout(folds):
        splitter = default_splitter(profile.task, CHECK_FOLDS, random_state, grouped=groups is not None)
        folds = list(splitter.split(X, y, groups))
    report += check(X, y, profile, folds, random_state=random_state, entities=groups is None)
    if time_column is not None:
        report = LeakageReport(tuple(f for f in report.findings if not (f.kind == "identifier"
                                                                        and f.column == time_column)), report.notes)
    high = [f.message for f in report.findings if f.severity == "high"]
    if mode == "raise" and high:
        raise DataValidationError(f"The leak check found {len(high)} high-severity problem(s): "
                                  f"{' '.join(high)} Fix the data, or pass leak_check='warn'.")
    for finding in report.findings:
        warn_user(finding.message, LeakageWarning)
    return report


def check_group_folds(folds, groups):
    """Whether the search's folds keep each group whole: a group on both sides of a fold inflates its score.

    Parameters
    ----------
    folds : list of (train_index, test_index) pairs
        The search's folds, or its holdout.
    groups : ndarray of int of shape (n_samples,)
        The rows' group codes (:func:`automl.data.check_groups`).

    Returns
    -------
    report : LeakageReport
        A high-severity ``"group_overlap"`` finding naming how many groups and rows cross a fold (a
        user's ``cv`` that ignores groups, such as ``KFold``), or a note that none does.
    """
    crossing = groups_across(folds, groups)
    n_groups = int(groups.max()) + 1
    if not len(crossing):
        return LeakageReport((), (f"Groups: none of the {n_groups:,} groups crosses a fold.",))
    rows = int(np.isin(groups, crossing).sum())
    message = (f"{len(crossing):,} of {n_groups:,} groups ({rows:,} rows) have rows on both sides of a fold: their "
               "scores are inflated as if the groups were not given. Use a splitter that takes groups (GroupKFold, "
               "StratifiedGroupKFold) as cv, or leave cv an int.")
    evidence = {"n_groups_across": len(crossing), "n_groups": n_groups, "n_rows_across": rows}
    return LeakageReport((LeakFinding(None, "group_overlap", "high", evidence, message),))
