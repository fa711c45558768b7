"""Columns that name the row rather than describe it: a passenger's name, a customer number.

:func:`automl.data.validation.check_training_data` gives no model a categorical one (see its module
notes), and the leak check (:mod:`automl.checks.leakage`) reports one of any kind; both use the
thresholds and the count of :func:`identifier_distinct_count`.
"""


import numpy as np

from ..exceptions import DataRepairWarning, warn_user

# A column distinct on this share of its rows, and on at least this many values, identifies rows.
IDENTIFIER_DISTINCT_RATIO, IDENTIFIER_MIN_DISTINCT = 0.95, 50
# Rows of the sample on which most columns are ruled out as identifiers (identifier_distinct_count).
IDENTIFIER_SAMPLE = 10_000


def _find_identifiers(frame, kinds):
    """Categorical columns distinct on nearly every row (see validation's module notes), warned about; () if all are."""
    found = {}
    for name in frame.columns:
        if kinds[name] == "categorical" and (n_distinct := identifier_distinct_count(frame[name])) is not None:
            found[name] = n_distinct
    if not found or len(found) == frame.shape[1]:
        return ()
    # Rounded down, so that a column with one repeat never reads as distinct on 100%.
    described = "; ".join(f"{name!r} ({n} values, {int(100 * n / len(frame))}% of rows)" for name, n in found.items())
    warn_user(
        f"{len(found)} categorical column(s) name the row rather than describe it, and are given to no model "
        f"(they stay in the data for the leak check): {described}. To use one, pass a coarser version of it "
        "(a title, a prefix).", DataRepairWarning)
    return tuple(found)


def identifier_distinct_count(values):
    """Distinct values of a column that identifies rows, or None for any other column.

    A column identifies rows when its distinct non-missing values number at least
    ``IDENTIFIER_DISTINCT_RATIO`` of its rows (missing ones included) and at least
    ``IDENTIFIER_MIN_DISTINCT``. Above :data:`IDENTIFIER_SAMPLE` rows a column is first ruled out on a
    seeded sample of that many rows, without replacement, when fewer than 90% of the sample's rows hold
    distinct values (counting them on every row costs a hash table: 0.1 s a column at 800,000 rows).
    The first rows of its values are 95% or more of an identifier's rows, so they are on average 95% or
    more of the sample, and a share below 90% has a probability below exp(-50) (Hoeffding's bound):
    an identifier is never missed, in practice, and the count returned is exact.

    Parameters
    ----------
    values : Series of shape (n_samples,)

    Returns
    -------
    n_distinct : int or None
        The exact number of distinct non-missing values, for an identifier.

    Examples
    --------
    >>> import pandas as pd
    >>> names, sexes = pd.Series([f"n{i}" for i in range(60)]), pd.Series(["f", "m"] * 30)
    >>> identifier_distinct_count(names), identifier_distinct_count(sexes)
    (60, None)
    """
    if len(values) > IDENTIFIER_SAMPLE:
        rows = np.random.default_rng(0).choice(len(values), IDENTIFIER_SAMPLE, replace=False)
        if values.iloc[rows].nunique() < 0.9 * IDENTIFIER_SAMPLE:
            return None
    n_distinct = values.nunique()
    if n_distinct / len(values) < IDENTIFIER_DISTINCT_RATIO or n_distinct < IDENTIFIER_MIN_DISTINCT:
        return None
    return int(n_distinct)
