"""The data leak check as ``fit`` runs it before the search, for either task."""


from sklearn.model_selection import KFold, StratifiedKFold

from ..exceptions import DataValidationError, LeakageWarning, warn_user
from ..search import is_holdout
from .leakage import LeakageReport, check_data_leakage
from .leakage_regression import check_regression_leakage


# Folds of the check when the search validates on one holdout.
CHECK_FOLDS = 5


def check_before_search(X, y, profile, folds, random_state, mode):
    """The data-level check as ``fit`` runs it: skipped, warned about, or raised on when high.

    Parameters
    ----------
    X, y, profile, folds, random_state
        As for :func:`check_data_leakage` (:func:`automl.checks.check_regression_leakage` for
        a regression profile). A single fold (a holdout search) is replaced by
        :data:`CHECK_FOLDS` seeded folds: a column's score needs every row scored.
    mode : {"warn", "raise", "off"}
        ``AutoClassifier(leak_check=...)``.

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
    if is_holdout(folds):
        kind = KFold if profile.task == "regression" else StratifiedKFold
        folds = list(kind(CHECK_FOLDS, shuffle=True, random_state=random_state).split(X, y))
    report = check(X, y, profile, folds, random_state=random_state)
    high = [f.message for f in report.findings if f.severity == "high"]
    if mode == "raise" and high:
        raise DataValidationError(f"The leak check found {len(high)} high-severity problem(s): "
                                  f"{' '.join(high)} Fix the data, or pass leak_check='warn'.")
    for finding in report.findings:
        warn_user(finding.message, LeakageWarning)
    return report
