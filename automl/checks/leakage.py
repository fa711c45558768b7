"""Leak checks: columns and rows that let a model see the answer it is asked to predict.

A search optimizes a leak as eagerly as a signal, so leaks must be shown before the model ships.
:func:`check_data_leakage` looks at the validated data (target leakage, identifiers, duplicates);
:func:`automl.checks.dominance.check_model_dominance` at a model (one column carrying most of its
permutation importance). Both return a :class:`LeakageReport` whose findings carry their figures and
a message naming them.
Scores use at most :data:`MAX_FOLDS` of the search's folds and :data:`MAX_ROWS` rows: a few seconds
on 50,000 rows.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields
from functools import partial

import numpy as np
import pandas as pd
from scipy.stats import kstest, rankdata
from sklearn.ensemble import RandomForestClassifier
from sklearn.metrics import roc_auc_score
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils import check_random_state

from ..data import identifier_distinct_count
from .entities import entity_candidates, entity_evidence, entity_message
from ..search import aligned_proba

MAX_ROWS, MAX_FOLDS = 10_000, 3  # cost bounds of the cross-validated scores
# Target leakage. On the 22 shared classification datasets no column reaches 0.92 alone, and the honest
# ones above 0.83 (australian A8, credit-approval A9) stay below a model on the other columns.
NEAR_PERFECT_AUC = 0.98
STRONG_AUC = 0.90  # ... and within BASELINE_TOLERANCE of the model on all columns: high
SUSPICIOUS_AUC = 0.85  # ... and OTHERS_MARGIN above a model on all the other columns: medium
BASELINE_TOLERANCE = 0.01
OTHERS_MARGIN = 0.02
MAX_RESCORED = 2  # columns scored against the other columns (one baseline fit each)
# Categorical purity: share of rows whose level holds one class, among levels of >= 2 rows.
PURE_SHARE, PURE_SHARE_HIGH, PURE_ABOVE_CHANCE = 0.5, 0.9, 0.25
# Identifiers.
ID_AUC = 0.6
ID_MAX_STEP = 2.0  # mean gap between sorted distinct integers: 1 for consecutive ids
ID_MAX_KS = 0.05  # distance from the uniform spread of randomly drawn ids
_ID_NAME = re.compile(r"(^|[^a-z])(id|ids|uuid|guid|key|index|idx|serial|number|num|no|nr)$")
# Duplicates: share of repeated rows from which the finding is high.
DUPLICATE_SHARE_HIGH = 0.05
# Numbers with at most this many values are scored like categories, by their levels' class frequencies.
_LEVEL_MODEL_MAX_LEVELS = 64
# Wide tables: from SCREEN_MIN_COLUMNS columns on, the numeric columns are first scored all at once by the
# class frequencies of their levels, or of SCREEN_BINS bins of equal frequency when they have more values
# (one tree per column and fold took 13 ms: 40 s on 3,000 columns). A column scored by its levels gets the
# very score it would get alone; a binned one whose screen reaches SCREEN_AUC is scored again by the tree,
# a margin of 0.15 below SUSPICIOUS_AUC for the fixed bins' coarser cuts.
SCREEN_MIN_COLUMNS = 100
SCREEN_BINS = 16
SCREEN_AUC = 0.70
_SCREEN_CELLS = 4_000_000  # class probabilities held at once (rows x columns x classes) while screening


@dataclass(frozen=True)
class LeakFinding:
    """One suspected leak, with the figures behind it.

    Attributes
    ----------
    column : str or None
        The column concerned; None for findings about rows (duplicates).
    kind : {"target_leakage", "identifier", "duplicates", "entity", "dominant_feature", "group_overlap"}
        What was found.
    severity : {"high", "medium"}
        "high" when the figures alone make the leak near certain or its effect large.
    evidence : dict of str to float, int or str
        The figures, e.g. ``{"single_column_auc": 0.99, "full_baseline_auc": 0.81}``.
    message : str
        One sentence a user can act on, naming the column and the figures.

    Examples
    --------
    >>> LeakFinding("id", "identifier", "medium", {"distinct_ratio": 1.0}, "Column 'id' ...").kind
    'identifier'
    """

    column: str | None
    kind: str
    severity: str
    evidence: dict
    message: str


@dataclass(frozen=True)
class LeakageReport:
    """The findings of a leak check; true when there is at least one.

    Attributes
    ----------
    findings : tuple of LeakFinding
        High severity first, in the order the checks ran.
    notes : tuple of str, default=()
        Which checks ran, on what, or why one was skipped.

    Examples
    --------
    >>> report = LeakageReport((LeakFinding(None, "duplicates", "high", {"n_duplicate_rows": 3}, "..."),))
    >>> bool(report), bool(LeakageReport(()))
    (True, False)
    >>> report.to_frame()[["column", "kind", "severity"]].to_dict("records")
    [{'column': None, 'kind': 'duplicates', 'severity': 'high'}]
    """

    findings: tuple[LeakFinding, ...]
    notes: tuple[str, ...] = ()

    def __add__(self, other):
        findings = sorted(self.findings + other.findings, key=lambda f: f.severity != "high")
        return LeakageReport(tuple(findings), self.notes + other.notes)

    def to_frame(self) -> pd.DataFrame:
        """One row per finding.

        Returns
        -------
        frame : DataFrame of shape (n_findings, 5)
            Columns ``column, kind, severity, evidence, message``.
        """
        columns = [f.name for f in fields(LeakFinding)]
        return pd.DataFrame([asdict(f) for f in self.findings], columns=columns)

    def __bool__(self):
        return bool(self.findings)


def check_data_leakage(X, y, profile, folds, *, random_state=None, entities=True) -> LeakageReport:
    """Look for target leakage, identifier columns and duplicated rows in the training data.

    - **target_leakage**: a column whose cross-validated ROC AUC alone (a depth-4 tree, or the class
      frequencies of its levels for categories and numbers with few values; one-vs-rest macro for
      more than two classes) is >= 0.98, or >= 0.90 and within 0.01 of a small forest on all columns
      (high); or >= 0.85 and 0.02 above a forest on all the *other* columns (medium). Also a
      categorical column whose levels hold one class on most rows, far more than chance gives.
    - **identifier**: a string column, or an integer column with consecutive or evenly spread
      values (or an id-like name), distinct on >= 95% of rows; high when its values predict y.
    - **duplicates**: rows repeating another row's values, copies on both sides of a fold, copies
      with different labels; high from 5% of rows.
    - **entity**: a column repeating many values on a few rows each (:mod:`automl.checks.entities`) on
      whose values grouped folds score a forest 0.02 ROC AUC below the shuffled folds (high from 0.05):
      rows of one patient or customer, which ``fit(X, y, groups=...)`` keeps in one fold. Its levels'
      purity is then not also reported as target leakage.

    Parameters
    ----------
    X : DataFrame of shape (n_samples, n_features)
        Validated data from :func:`automl.data.validation.check_training_data`.
    y : ndarray of shape (n_samples,)
        Encoded labels 0 .. n_classes - 1.
    profile : DatasetProfile
        The profile returned with X.
    folds : list of (ndarray, ndarray)
        The search's shared (train, test) index pairs.
    random_state : int, RandomState instance or None, default=None
        Seed of the row sample, used only when X has more than ``MAX_ROWS`` rows.
    entities : bool, default=True
        Look for entity columns; ``fit`` turns it off when it is given ``groups``.

    Returns
    -------
    report : LeakageReport

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from sklearn.model_selection import StratifiedKFold
    >>> from automl.data.validation import check_training_data
    >>> rng = np.random.default_rng(0)
    >>> y = np.repeat([0, 1], 100)
    >>> raw = pd.DataFrame({"noise": rng.normal(size=200), "outcome_code": y + rng.normal(0, 0.1, 200)})
    >>> X, y, _, profile = check_training_data(raw, y, n_folds=3)
    >>> folds = list(StratifiedKFold(3, shuffle=True, random_state=0).split(X, y))
    >>> [(f.column, f.kind, f.severity) for f in check_data_leakage(X, y, profile, folds).findings]
    [('outcome_code', 'target_leakage', 'high')]
    """
    y = np.asarray(y, dtype=int)
    findings = _duplicate_findings(X, y, folds)
    rows, sub_folds = _sample_rows(y, folds[:MAX_FOLDS], check_random_state(random_state))
    Xs, ys = X.iloc[rows].reset_index(drop=True), y[rows]
    scope = {"n_rows_scored": len(rows), "n_rows": len(y), "n_folds_scored": len(sub_folds)}
    identifiers, candidates = identifier_scan(X, profile, _identifier_finding, (Xs, ys, sub_folds, scope))
    findings += identifiers
    if entities:
        baseline = partial(_baseline_auc, n_classes=profile.n_classes)
        findings += entity_scan(X[candidates], y, profile, baseline, "ROC AUC")
    named = {f.column for f in findings if f.kind == "entity"}
    prior = np.bincount(y, minlength=profile.n_classes) / len(y)
    purity = {c: p for c in profile.categorical_columns if c in candidates and c not in named
              if (p := _purity(X[c], y, prior)) is not None}
    findings += _target_findings(Xs[candidates], ys, sub_folds, profile, scope, purity)
    findings.sort(key=lambda f: f.severity != "high")
    return LeakageReport(tuple(findings))


def identifier_scan(X, profile, finding, scored):
    """Identifier findings, ``finding(column, evidence, *scored)`` each, and the columns left to score.

    Identifiers stay out of the target scores and their baselines: one that follows the outcome would
    mask every other leak. The categorical identifiers that validation keeps from every model
    (``profile.identifier_columns``) are neither scored nor reported: no model can learn from them.
    """
    unused = set(profile.identifier_columns)
    findings = [finding(c, evidence, *scored) for c in X.columns if c not in unused
                and (evidence := _identifier_evidence(X[c], profile.kinds.get(c))) is not None]
    return findings, [c for c in X.columns if c not in {f.column for f in findings} | unused]


# ---- duplicates -------------------------------------------------------------------------------------
def _duplicate_findings(X, y, folds):
    """The duplicates finding (a list of zero or one), counted on all rows."""
    group = _row_groups(X)
    sizes = np.bincount(group)
    n_repeated = int(len(group) - len(sizes))
    if n_repeated == 0:
        return []
    copied = sizes[group] > 1
    n_labels = pd.Series(y[copied]).groupby(group[copied]).nunique()
    conflicting = np.isin(group, n_labels.index[n_labels > 1])
    own = _groups_with_own_value(X, group, sizes, copied)
    crossing = sum(_copies_seen(group, train, test) for train, test in folds)
    share, n_groups = n_repeated / len(group), int((sizes > 1).sum())
    evidence = {"n_duplicate_rows": n_repeated, "duplicate_share": _round(share),
                "n_rows_with_copies": int(copied.sum()), "n_groups": n_groups,
                "n_groups_with_own_value": len(own), "n_test_rows_with_copy_in_train": crossing,
                "n_folds": len(folds), "n_conflicting_groups": int((n_labels > 1).sum()),
                "n_conflicting_rows": int(conflicting.sum())}
    origin = (f"{len(own)} of them certain copies, holding a value found nowhere else in X" if len(own) else
              "none holds a value of its own, so they may be distinct records that coincide")
    verb = "repeats" if n_repeated == 1 else "repeat"
    percent = f"{share:.1%}" if share >= 0.01 else f"{share:.2%}"  # 12 of 41,188 rows: 0.03%, not 0.0%
    message = (f"{_rows(n_repeated)} ({percent}) {verb} another row's values exactly "
               f"({n_groups} group(s); {origin}); {_rows(crossing)} scored in CV "
               f"{'has' if crossing == 1 else 'have'} a copy in the training part")
    if evidence["n_conflicting_groups"]:
        message += (f", and {evidence['n_conflicting_groups']} group(s) ({_rows(int(conflicting.sum()))}) "
                    "carry different labels")
    message += (": drop repeated records, or pass the entity they belong to as fit(X, y, groups=...) to keep it "
                "in one fold.")
    severity = "high" if share >= DUPLICATE_SHARE_HIGH else "medium"
    return [LeakFinding(None, "duplicates", severity, evidence, message)]


def _row_groups(X):
    """Each row's group of equal rows, numbered in order of first appearance (``groupby(...).ngroup()``).

    A row whose value in one column no other row has is a group of its own; that column is the one with
    the most distinct values in the first 1,000 rows. The other rows are grouped by a 64-bit hash of their
    values: grouping by every column took 4 s on 800,000 rows.
    """
    key = X.columns[np.argmax(X.iloc[:1000].nunique(dropna=False).to_numpy())]
    codes = pd.factorize(X[key], use_na_sentinel=False)[0]
    shared = np.flatnonzero(np.bincount(codes)[codes] > 1)
    first_row = np.arange(len(X))  # the first row of each row's group
    hashes = pd.factorize(_row_hashes(X.iloc[shared]))[0]
    first_row[shared] = shared[np.unique(hashes, return_index=True)[1]][hashes]
    return (np.cumsum(first_row == np.arange(len(X))) - 1)[first_row]  # groups counted at their first rows


def _row_hashes(X):
    """A 64-bit hash of each row's values (pandas' hash_pandas_object), equal for equal rows.

    Two different rows share a hash with a chance of 2^-64, n^2 / 2^65 over n rows (2e-8 at 800,000):
    negligible. Floats are made canonical first, as groupby compares them (-0.0 as 0.0, every NaN as
    one): pandas' hash does so itself only in recent releases (3.1 does), and pandas 2.1 is supported.
    """
    floats = {c: X[c].to_numpy(dtype=float, na_value=np.nan) for c in X.columns if X[c].dtype.kind == "f"}
    canonical = X.assign(**{c: np.where(np.isnan(v), np.nan, v + 0.0) for c, v in floats.items()})
    return pd.util.hash_pandas_object(canonical, index=False).to_numpy()


def _groups_with_own_value(X, group, sizes, copied):
    """Groups of copies holding, in some column, a value no other row has: no coincidence of common values."""
    size = sizes[group[copied]]
    own = np.zeros(len(size), dtype=bool)
    for column in X.columns:
        codes = pd.factorize(X[column], use_na_sentinel=False)[0]
        own |= np.bincount(codes)[codes[copied]] == size  # the value's rows are the group's rows
    return np.unique(group[copied][own])


def _copies_seen(group, train, test):
    """Rows of ``test`` whose group has a row in ``train``."""
    in_train = np.zeros(len(group), dtype=bool)
    in_train[group[train]] = True
    return int(in_train[group[test]].sum())


# ---- single-column scores ---------------------------------------------------------------------------
def _stratified(y, size, rng):
    """Sorted positions of about ``size`` rows of y, every class in proportion and kept to >= 6 rows."""
    if len(y) <= size:
        return np.arange(len(y))
    rows = []
    for label in np.unique(y):
        members = np.flatnonzero(y == label)
        take = max(round(len(members) * size / len(y)), min(len(members), 2 * MAX_FOLDS))
        rows.append(rng.choice(members, size=take, replace=False))
    return np.sort(np.concatenate(rows))


def _sample_rows(y, folds, rng):
    """At most about MAX_ROWS rows, stratified, and the folds restricted and renumbered to them."""
    return restrict_folds(_stratified(y, MAX_ROWS, rng), folds, len(y))


def restrict_folds(rows, folds, n_rows):
    """``rows`` and the folds restricted to them, renumbered as positions in ``rows``."""
    if len(rows) == n_rows:
        return rows, list(folds)
    position = np.full(n_rows, -1)
    position[rows] = np.arange(len(rows))
    renumbered = [(position[tr][position[tr] >= 0], position[te][position[te] >= 0]) for tr, te in folds]
    return rows, renumbered


def _column_auc(values, y, folds, n_classes, by_level):
    """Cross-validated ROC AUC of one column alone, on the rows of the folds' test parts."""
    proba = np.zeros((len(y), n_classes))
    if by_level:
        codes = pd.factorize(values, use_na_sentinel=False)[0]
        for train, test in folds:
            proba[test] = _level_proba(codes, y, train, test, n_classes)
    else:
        column = _order_only(np.asarray(values, dtype=float))
        for train, test in folds:
            tree = DecisionTreeClassifier(max_depth=4, min_samples_leaf=max(5, len(train) // 200),
                                          random_state=0).fit(column[train], y[train])
            proba[test] = aligned_proba(tree, column[test], n_classes)
    scored = np.concatenate([test for _, test in folds])
    return _auc(y[scored], proba[scored])


def scores_alone(X, alone, screen):
    """``alone(X[c])`` for every column ``c``, by name; on a wide table the screen settles most numeric columns.

    From :data:`SCREEN_MIN_COLUMNS` columns on, ``screen(X[numeric])`` scores the numeric columns at
    once and returns ``(settled, scores)``, arrays of shape (n_numeric,): a settled column keeps the
    screen's score, the others are scored alone.
    """
    numeric = [c for c in X.columns if pd.api.types.is_numeric_dtype(X[c])] if X.shape[1] >= SCREEN_MIN_COLUMNS else []
    settled = {}
    if numeric:
        done, scores = screen(X[numeric])
        settled = {c: score for c, is_done, score in zip(numeric, done, scores) if is_done}
    return {c: settled[c] if c in settled else alone(X[c]) for c in X.columns}


def in_chunks(codes, n_values, score):
    """``score(codes[:, part])`` over parts of columns holding about _SCREEN_CELLS values each, joined."""
    width = max(1, _SCREEN_CELLS // (len(codes) * n_values))
    return np.concatenate([score(codes[:, start:start + width]) for start in range(0, codes.shape[1], width)])


def _screen_aucs(X, y, folds, n_classes):
    """Each numeric column's cross-validated ROC AUC from the class frequencies of its levels or bins.

    Returns ``settled`` and the scores, both of shape (n_columns,): settled are the columns of at most
    ``_LEVEL_MODEL_MAX_LEVELS`` values (scored by their levels, as :func:`_column_auc` scores them) and
    the binned ones under :data:`SCREEN_AUC`.
    """
    exact, codes = screen_codes(X, SCREEN_BINS)
    scored = np.concatenate([test for _, test in folds])
    scores = in_chunks(codes, n_classes, lambda part: _level_aucs(part, y, folds, n_classes, scored))
    return exact | (scores < SCREEN_AUC), scores


def screen_codes(X, n_bins):
    """Integer codes of each numeric column of ``X``, for the screens of wide tables.

    A column of at most ``_LEVEL_MODEL_MAX_LEVELS`` values is coded by its levels, as
    :func:`_column_auc` codes it (``exact``, shape (n_columns,)); any other by ``n_bins`` bins of equal
    frequency, its missing values a bin of their own. ``codes`` has the shape of ``X``.
    """
    exact = (X.nunique() <= _LEVEL_MODEL_MAX_LEVELS).to_numpy()
    share = X.rank(method="average", pct=True).to_numpy()
    codes = np.where(np.isnan(share), n_bins, np.minimum(share * n_bins, n_bins - 1)).astype(np.int64)
    for j in np.flatnonzero(exact):
        codes[:, j] = pd.factorize(X.iloc[:, j], use_na_sentinel=False)[0]
    return exact, codes


def _level_aucs(codes, y, folds, n_classes, scored):
    """:func:`_level_proba` for every column of ``codes`` at once, and the ROC AUC of each column."""
    n_columns, n_levels = codes.shape[1], int(codes.max()) + 1
    cell = (np.arange(n_columns) * n_levels + codes) * n_classes  # the (column, level) of every value
    proba = np.zeros(codes.shape + (n_classes,))
    for train, test in folds:
        counts = np.bincount((cell[train] + y[train, None]).ravel(), minlength=n_columns * n_levels * n_classes)
        seen = counts.reshape(-1, n_classes)[cell[test] // n_classes]
        prior = np.bincount(y[train], minlength=n_classes) / len(train)
        proba[test] = (seen + prior) / (seen.sum(axis=2, keepdims=True) + 1.0)
    y, proba = y[scored], proba[scored]
    if n_classes == 2:
        return _rank_aucs(y == 1, proba[:, :, 1])
    present = [k for k in range(n_classes) if 0 < np.sum(y == k) < len(y)]
    return np.mean([_rank_aucs(y == k, proba[:, :, k]) for k in present], axis=0)


def _rank_aucs(positive, scores):
    """ROC AUC of each column of ``scores`` (Mann-Whitney U from average ranks, as roc_auc_score counts ties)."""
    ranks = rankdata(scores, axis=0)
    n_pos = positive.sum()
    return (ranks[positive].sum(axis=0) - n_pos * (n_pos + 1) / 2) / (n_pos * (len(positive) - n_pos))


def _order_only(values):
    """Dense ranks of each column, NaN kept: 2-D floats a scikit-learn tree splits exactly as on the values.

    A tree's splits depend on the order alone, and ranks stay within float32, which scikit-learn's trees
    cast to: a column with values above 3.4e38 raised ValueError before the search.
    """
    return pd.DataFrame(values).rank(method="dense").to_numpy(dtype=float)


def _level_proba(codes, y, train, test, n_classes):
    """Class frequencies of each level on the training rows, shrunk toward the prior by one row."""
    counts = np.zeros((codes.max() + 1, n_classes))
    np.add.at(counts, (codes[train], y[train]), 1.0)
    prior = np.bincount(y[train], minlength=n_classes) / len(train)
    seen = counts[codes[test]]
    return (seen + prior) / (seen.sum(axis=1, keepdims=True) + 1.0)


def _auc(y, proba):
    """ROC AUC; one-vs-rest macro average over the classes present when there are more than two."""
    if proba.shape[1] == 2:
        return float(roc_auc_score(y, proba[:, 1]))
    present = [k for k in range(proba.shape[1]) if 0 < np.sum(y == k) < len(y)]
    return float(np.mean([roc_auc_score(y == k, proba[:, k]) for k in present]))


def _by_level(values):
    return values.dtype == object or values.nunique() <= _LEVEL_MODEL_MAX_LEVELS


def _baseline_auc(X, y, folds, n_classes):
    """CV ROC AUC of a small random forest on all columns of X (categorical levels as codes).

    A forest rather than boosting: one tree serves every class, so seven classes cost no more than two.
    """
    codes = {c: pd.factorize(X[c])[0] for c in X.columns if X[c].dtype == object}
    frame = _order_only(X.assign(**{c: np.where(v < 0, np.nan, v) for c, v in codes.items()}))
    proba = np.zeros((len(y), n_classes))
    for train, test in folds:
        model = RandomForestClassifier(n_estimators=40, min_samples_leaf=2, random_state=0, n_jobs=1)
        proba[test] = aligned_proba(model.fit(frame[train], y[train]), frame[test], n_classes)
    scored = np.concatenate([test for _, test in folds])
    return _auc(y[scored], proba[scored])


def entity_scan(X, y, profile, baseline, score_name):
    """Entity findings (:mod:`automl.checks.entities`), scored by ``baseline(X, y, folds)`` (its score named
    ``score_name`` in the message)."""
    found = entity_evidence(X, y, entity_candidates(X, y, profile), baseline)
    return [LeakFinding(column, "entity", severity, evidence, entity_message(column, evidence, score_name))
            for column, evidence, severity in found]


# ---- target leakage ---------------------------------------------------------------------------------
def _target_findings(X, y, folds, profile, scope, purity):
    """Columns scored alone; the strong ones compared with models on all and on the other columns."""
    n_classes, candidates = profile.n_classes, list(X.columns)
    single = scores_alone(X, lambda values: _column_auc(values, y, folds, n_classes, _by_level(values)),
                          lambda numeric: _screen_aucs(numeric, y, folds, n_classes))
    strong = sorted((c for c in candidates if single[c] >= SUSPICIOUS_AUC), key=lambda c: -single[c])
    full = _baseline_auc(X, y, folds, n_classes) if strong or purity else float("nan")
    findings = []
    for column in sorted(candidates, key=lambda c: -single[c]):
        score, rivals = single[column], [c for c in candidates if c != column] or [column]
        evidence = {"single_column_auc": _round(score), "full_baseline_auc": _round(full),
                    "n_baseline_columns": len(candidates), **scope}
        severity = None
        if score >= NEAR_PERFECT_AUC or (score >= STRONG_AUC and score >= full - BASELINE_TOLERANCE):
            severity = "high"
        elif column in strong[:MAX_RESCORED] and score >= max(single[c] for c in rivals) + OTHERS_MARGIN:
            # The other columns together rarely score below their best one alone: only a column that
            # leads every other one by the margin can beat them all, so only it costs a forest fit.
            others = _baseline_auc(X.drop(columns=column), y, folds, n_classes)
            evidence["other_columns_auc"] = _round(others)
            severity = "medium" if score >= others + OTHERS_MARGIN else None
        reasons = [_auc_reason(evidence)] if severity else []
        if column in purity:
            evidence.update(purity[column])
            reasons.append(_purity_reason(purity[column]))
            high = purity[column]["pure_row_share"] >= PURE_SHARE_HIGH
            severity = "high" if high or severity == "high" else "medium"
        if severity:
            message = (f"Column {column!r} {' and '.join(reasons)}{_sample_note(evidence)}: check that "
                       "its value is known before the outcome, or drop it.")
            findings.append(LeakFinding(column, "target_leakage", severity, evidence, message))
    return findings


def _auc_reason(evidence):
    score, full = evidence["single_column_auc"], evidence["full_baseline_auc"]
    n = evidence["n_baseline_columns"]
    if "other_columns_auc" in evidence:
        comparison = f"above the {evidence['other_columns_auc']:.3f} of a model on the {n - 1} other columns"
    elif score >= NEAR_PERFECT_AUC:
        comparison = f"near perfect (a model on {n} columns: {full:.3f})"
    else:
        comparison = f"as high as the {full:.3f} of a model on {n} columns"
    return f"alone predicts the target with cross-validated ROC AUC {score:.3f}, {comparison}"


def _purity_reason(evidence):
    return (f"has levels holding a single class on {evidence['pure_row_share']:.0%} of the rows in levels "
            f"of two or more rows ({evidence['chance_pure_row_share']:.0%} expected by chance)")


def _purity(values, y, prior):
    """Pure-level share among levels of >= 2 rows and its chance value; None when unremarkable."""
    codes = pd.factorize(values, sort=True)[0]  # levels in sorted order, as groupby sorts them; missing: -1
    codes, labels = codes[codes >= 0], y[codes >= 0]
    sizes = np.bincount(codes)
    # Classes per level: the distinct (level, class) pairs of each level.
    n_labels = np.bincount(pd.unique(codes * len(prior) + labels) // len(prior), minlength=len(sizes))
    sizes, n_labels = sizes[sizes >= 2], n_labels[sizes >= 2]
    counted = int(sizes.sum())
    if counted < max(2, len(y) / 2):
        return None
    pure = sizes[n_labels == 1].sum() / counted
    chance = float(np.sum(sizes * (prior[None, :] ** sizes[:, None]).sum(axis=1)) / counted)
    if pure < PURE_SHARE or pure < chance + PURE_ABOVE_CHANCE:
        return None
    return {"pure_row_share": _round(pure), "chance_pure_row_share": _round(chance),
            "n_levels_counted": len(sizes), "n_rows_counted": counted}


# ---- identifiers ------------------------------------------------------------------------------------
def _identifier_evidence(values, kind):
    """Figures of a column that looks like a row identifier, or None; kinds are told apart before counting."""
    if kind not in ("categorical", "numeric"):
        return None
    if kind == "numeric" and not _whole_numbers(values.to_numpy(dtype=float, na_value=np.nan)):
        return None
    n_distinct = identifier_distinct_count(values)
    if n_distinct is None:
        return None
    evidence = {"distinct_ratio": _round(n_distinct / len(values)), "n_distinct": n_distinct}
    if kind == "categorical":
        return evidence
    numbers = np.unique(values.dropna().to_numpy(dtype=float))
    step = float((numbers[-1] - numbers[0]) / (len(numbers) - 1))
    spread = float(kstest((numbers - numbers[0]) / (numbers[-1] - numbers[0]), "uniform").statistic)
    named = bool(_ID_NAME.search(str(values.name).lower()) or re.search(r"[a-z]I[dD]$", str(values.name)))
    if step > ID_MAX_STEP and spread > ID_MAX_KS and not named:
        return None
    return {**evidence, "mean_step": _round(step), "uniform_ks": _round(spread)}


def _whole_numbers(numbers):
    """Whether every value but NaN is a whole number; the first rows settle most measured columns."""
    return all(np.all(np.isnan(part) | (part == np.round(part))) for part in (numbers[:1000], numbers))


def _identifier_finding(column, evidence, X, y, folds, scope):
    """An identifier, high when its values (their order, for strings) predict y."""
    values = X[column]
    if values.dtype == object:
        values = pd.Series(pd.Categorical(values).codes, dtype=float).where(values.notna())
    n_classes = int(y.max()) + 1
    score = _column_auc(values, y, folds, n_classes, by_level=False)
    row_order = _column_auc(pd.Series(np.arange(len(y)), dtype=float), y, folds, n_classes, by_level=False)
    evidence = {**evidence, "single_column_auc": _round(score), "row_order_auc": _round(row_order), **scope}
    unique = f"holds a distinct value on {evidence['distinct_ratio']:.0%} of rows, like a row identifier"
    if score > ID_AUC:
        return LeakFinding(column, "identifier", "high", evidence, (
            f"Column {column!r} {unique}, and its values predict the target (cross-validated ROC AUC "
            f"{score:.3f}; the row order alone {row_order:.3f}){_sample_note(evidence)}: the ids follow "
            "the outcome, so a model would learn the numbering; drop it."
        ))
    order = ""
    if row_order > ID_AUC:
        order = f" (the row order does predict the target, ROC AUC {row_order:.3f}: keep folds shuffled)"
    return LeakFinding(column, "identifier", "medium", evidence, (
        f"Column {column!r} {unique}; its values do not predict the target (cross-validated ROC AUC "
        f"{score:.3f}), so a model can only memorise them: drop it{order}."
    ))


def _rows(n):
    return f"{n:,} row{'' if n == 1 else 's'}"


def _sample_note(evidence):
    if evidence["n_rows_scored"] == evidence["n_rows"]:
        return ""
    return f" (on a sample of {evidence['n_rows_scored']:,} of {evidence['n_rows']:,} rows)"


def _round(value):
    return round(float(value), 4)
