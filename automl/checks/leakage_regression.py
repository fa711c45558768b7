"""Leak checks for a regression target: the classifier's checks, scored by R^2 instead of ROC AUC.

- **target_leakage**: a column that is the target, or a near-exact function of it. Scored alone by
  cross-validated R^2 (a depth-6 tree on numbers, the target mean of each level on categories; a
  number with few values both ways, the better counting) and by the absolute Spearman correlation,
  which catches any monotone function of y (a unit change, a log, a rank) whatever its shape. High
  when R^2 >= 0.98 or |rho| >= 0.995, or when R^2 >= 0.90 and within 0.01 of a small forest on all
  columns. A function of y that loses information (``|y - c|``) is found only as far as it predicts y.
  Below 30 rows no column is scored (a rank correlation of 1 is then often chance).
- **identifier**: as for classification (:func:`automl.checks.leakage._identifier_evidence`); high when its
  values predict y (R^2 above 0.1).
- **duplicates**: as for classification.

The thresholds were checked on the 7 regression datasets of ``../shared/data``, where no column
is flagged (``tests/test_leakage_regression.py``).
"""

from functools import partial

import numpy as np
import pandas as pd
from scipy.stats import spearmanr
from sklearn.ensemble import RandomForestRegressor
from sklearn.tree import DecisionTreeRegressor
from sklearn.utils import check_random_state

from .leakage import (
    BASELINE_TOLERANCE, MAX_FOLDS, MAX_ROWS, LeakageReport, LeakFinding, _by_level, _duplicate_findings, _round,
    _sample_note, _stratified, entity_scan, identifier_scan, in_chunks, restrict_folds, scores_alone, screen_codes,
)

NEAR_EXACT_R2 = 0.98
NEAR_EXACT_SPEARMAN = 0.995
STRONG_R2 = 0.90  # ... and within BASELINE_TOLERANCE of a forest on all columns: high
ID_R2 = 0.1
MIN_ROWS = 30  # fewer rows scored: no target-leak finding
# Wide tables (as leakage.SCREEN_MIN_COLUMNS): the numeric columns are first scored all at once by the
# shrunk target means of their levels or of SCREEN_BINS bins of equal frequency; only those reaching
# SCREEN_R2, far below STRONG_R2, are scored by the tree (6 ms per column: 20 s on 3,000 columns).
SCREEN_BINS = 32
SCREEN_R2 = 0.5


def check_regression_leakage(X, y, profile, folds, *, random_state=None, entities=True):
    """Look for target leakage, identifier columns and duplicated rows, for a regression target.

    Parameters
    ----------
    X : DataFrame of shape (n_samples, n_features)
        Validated data from :func:`automl.data.validation.check_training_data` with ``task="regression"``.
    y : ndarray of shape (n_samples,)
        The target values.
    profile : DatasetProfile
    folds : list of (ndarray, ndarray)
        The search's shared (train, test) index pairs; at most ``MAX_FOLDS`` are scored.
    random_state : int, RandomState instance or None, default=None
        Seed of the row sample (at most ``MAX_ROWS`` rows, drawn at random from the scored folds' test
        parts in proportion).
    entities : bool, default=True
        Look for entity columns (:mod:`automl.checks.entities`), scored by a forest's R^2 on shuffled
        against grouped folds; ``fit`` turns it off when it is given ``groups``.

    Returns
    -------
    report : LeakageReport

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from sklearn.model_selection import KFold
    >>> from automl.data.validation import check_training_data
    >>> rng = np.random.default_rng(0)
    >>> y = rng.gamma(2.0, 10.0, 300)
    >>> raw = pd.DataFrame({"noise": rng.normal(size=300), "y_in_cents": 100 * y})
    >>> X, y, _, profile = check_training_data(raw, y, n_folds=3, task="regression")
    >>> folds = list(KFold(3, shuffle=True, random_state=0).split(X))
    >>> [(f.column, f.kind, f.severity) for f in check_regression_leakage(X, y, profile, folds).findings]
    [('y_in_cents', 'target_leakage', 'high')]
    """
    y = np.asarray(y, dtype=float)
    findings = _duplicate_findings(X, y, folds)
    rows, sub_folds = _sample_rows(len(y), folds[:MAX_FOLDS], check_random_state(random_state))
    Xs, ys = X.iloc[rows].reset_index(drop=True), y[rows]
    scope = {"n_rows_scored": len(rows), "n_rows": len(y), "n_folds_scored": len(sub_folds)}
    identifiers, candidates = identifier_scan(X, profile, _identifier_finding, (Xs, ys, sub_folds, scope))
    findings += identifiers
    if entities:  # as in the classification check, scored by the forest's R^2
        baseline = partial(_baseline_r2, max_features="sqrt")
        findings += entity_scan(X[candidates], y, profile, baseline, "R^2")
    findings += _target_findings(Xs[candidates], ys, sub_folds, scope)
    findings.sort(key=lambda f: f.severity != "high")
    return LeakageReport(tuple(findings))


def _sample_rows(n_rows, folds, rng):
    """At most about MAX_ROWS rows, in proportion from each fold's test part, and the folds restricted to them.

    Drawn by fold, not as the first rows of a seeded permutation: KFold and ShuffleSplit seeded alike
    put the same first rows in the first test part, which then held the whole sample and left its
    training part empty (a ValueError on any regression fit from 50,000 rows).
    """
    part = np.full(n_rows, -1)
    for k, (_, test) in enumerate(folds):
        part[test] = k
    return restrict_folds(_stratified(part, MAX_ROWS, rng), folds, n_rows)


def _column_r2(values, y, folds, by_level):
    """Cross-validated R^2 of one column alone, pooled over the folds' test parts."""
    pred = np.zeros(len(y))
    if by_level:
        codes = pd.factorize(values, use_na_sentinel=False)[0]
        for train, test in folds:
            # Level means shrunk toward the training mean by one row, so a level seen once is not trusted.
            sums = np.bincount(codes[train], weights=y[train], minlength=codes.max() + 1)
            counts = np.bincount(codes[train], minlength=codes.max() + 1)
            mean = y[train].mean()
            pred[test] = (sums[codes[test]] + mean) / (counts[codes[test]] + 1.0)
    else:
        column = np.asarray(values, dtype=float).reshape(-1, 1)
        for train, test in folds:
            tree = DecisionTreeRegressor(max_depth=6, min_samples_leaf=max(5, len(train) // 500), random_state=0)
            pred[test] = tree.fit(column[train], y[train]).predict(column[test])
    return _r2(y, pred, folds)


def _single_r2(values, y, folds):
    """The better of the level means and the tree for a few-valued number (shrunk means understate rare levels)."""
    if values.dtype == object:
        return _column_r2(values, y, folds, by_level=True)
    tree = _column_r2(values, y, folds, by_level=False)
    return max(tree, _column_r2(values, y, folds, by_level=True)) if _by_level(values) else tree


def _screen_r2s(X, y, folds):
    """Each numeric column's R^2 from the shrunk target means of its levels or bins, and those under SCREEN_R2."""
    _, codes = screen_codes(X, SCREEN_BINS)
    scores = in_chunks(codes, 1, lambda part: _level_r2s(part, y, folds))
    return scores < SCREEN_R2, scores


def _level_r2s(codes, y, folds):
    """:func:`_column_r2` by levels for every column of ``codes`` at once."""
    n_columns, n_levels = codes.shape[1], int(codes.max()) + 1
    cell = np.arange(n_columns) * n_levels + codes
    pred = np.zeros(codes.shape)
    for train, test in folds:
        sums = np.bincount(cell[train].ravel(), weights=np.repeat(y[train], n_columns), minlength=n_columns * n_levels)
        counts = np.bincount(cell[train].ravel(), minlength=n_columns * n_levels)
        pred[test] = (sums[cell[test]] + y[train].mean()) / (counts[cell[test]] + 1.0)
    scored = np.concatenate([test for _, test in folds])
    truth = y[scored, None]
    return 1.0 - ((truth - pred[scored]) ** 2).sum(axis=0) / ((truth - truth.mean()) ** 2).sum()


def _r2(y, pred, folds):
    scored = np.concatenate([test for _, test in folds])
    residual = np.sum((y[scored] - pred[scored]) ** 2)
    return float(1.0 - residual / np.sum((y[scored] - y[scored].mean()) ** 2))


def _baseline_r2(X, y, folds, max_features=1.0):
    """CV R^2 of a small random forest on all columns of X (categorical levels as codes); ``max_features`` as
    scikit-learn's (the entity scan's "sqrt", as the classifier's forest has by default: 15 s to 3 s on 126
    columns)."""
    codes = {c: pd.factorize(X[c])[0] for c in X.columns if X[c].dtype == object}
    frame = X.assign(**{c: np.where(v < 0, np.nan, v) for c, v in codes.items()}).to_numpy(dtype=float)
    pred = np.zeros(len(y))
    for train, test in folds:
        model = RandomForestRegressor(n_estimators=40, min_samples_leaf=2, max_features=max_features,
                                      random_state=0, n_jobs=1)
        pred[test] = model.fit(frame[train], y[train]).predict(frame[test])
    return _r2(y, pred, folds)


def _spearman(values, y):
    if values.dtype == object or values.nunique() < 3:
        return 0.0
    rho = spearmanr(values.to_numpy(dtype=float), y, nan_policy="omit").statistic
    return 0.0 if np.isnan(rho) else abs(float(rho))


def _target_findings(X, y, folds, scope):
    if len(y) < MIN_ROWS:  # a rank correlation of 1 happens by chance on a handful of rows
        return []
    single = scores_alone(X, lambda values: _single_r2(values, y, folds), lambda numeric: _screen_r2s(numeric, y, folds))
    rank = {c: _spearman(X[c], y) for c in X.columns}
    strong = [c for c in X.columns if single[c] >= STRONG_R2]
    full = _baseline_r2(X, y, folds) if strong else float("nan")
    findings = []
    for column in sorted(X.columns, key=lambda c: -single[c]):
        score, rho = single[column], rank[column]
        if not (score >= NEAR_EXACT_R2 or rho >= NEAR_EXACT_SPEARMAN
                or (score >= STRONG_R2 and score >= full - BASELINE_TOLERANCE)):
            continue
        evidence = {"single_column_r2": _round(score), "spearman_abs": _round(rho),
                    "full_baseline_r2": _round(full), "n_baseline_columns": X.shape[1], **scope}
        if score >= NEAR_EXACT_R2 or rho >= NEAR_EXACT_SPEARMAN:
            how = (f"is a near-exact function of the target (cross-validated R^2 {score:.3f} alone, "
                   f"|Spearman| {rho:.3f})")
        else:
            how = (f"alone predicts the target with cross-validated R^2 {score:.3f}, as well as the {full:.3f} "
                   f"of a model on {X.shape[1]} columns")
        message = (f"Column {column!r} {how}{_sample_note(evidence)}: check that its value is known before "
                   "the outcome, or drop it.")
        findings.append(LeakFinding(column, "target_leakage", "high", evidence, message))
    return findings


def _identifier_finding(column, evidence, X, y, folds, scope):
    values = X[column]
    if values.dtype == object:
        values = pd.Series(pd.Categorical(values).codes, dtype=float).where(values.notna())
    score = _column_r2(values, y, folds, by_level=False)
    evidence = {**evidence, "single_column_r2": _round(score), **scope}
    unique = f"holds a distinct value on {evidence['distinct_ratio']:.0%} of rows, like a row identifier"
    if score > ID_R2:
        return LeakFinding(column, "identifier", "high", evidence, (
            f"Column {column!r} {unique}, and its values predict the target (cross-validated R^2 {score:.3f})"
            f"{_sample_note(evidence)}: the ids follow the outcome, so a model would learn the numbering; drop it."))
    return LeakFinding(column, "identifier", "medium", evidence, (
        f"Column {column!r} {unique}; its values do not predict the target (cross-validated R^2 {score:.3f}), "
        "so a model can only memorise them: drop it."))
