"""Tests for automl.data.identifiers: the distinct count of a column that names the row, sampled first on large ones."""

import numpy as np
import pandas as pd
import pytest

from automl.data import IDENTIFIER_DISTINCT_RATIO, identifier_distinct_count
from automl.data.identifiers import IDENTIFIER_SAMPLE

N_ROWS = 2 * IDENTIFIER_SAMPLE  # above the sample: a column is first ruled out on a sample of its rows


def _column(n_distinct, n_missing=0, order="shuffled"):
    """N_ROWS text values: n_distinct distinct ones, n_missing missing, the rest repeats of the first values."""
    values = [f"id{i}" for i in range(n_distinct)]
    values += values[: N_ROWS - n_distinct - n_missing] + [None] * n_missing
    if order == "shuffled":
        values = list(np.random.default_rng(0).permutation(np.array(values, dtype=object)))
    return pd.Series(values, dtype=object)


@pytest.mark.parametrize("order", ["shuffled", "repeats last"])
def test_the_count_is_exact_at_the_threshold_on_large_columns(order):
    at = round(IDENTIFIER_DISTINCT_RATIO * N_ROWS)
    assert identifier_distinct_count(_column(at, order=order)) == at
    assert identifier_distinct_count(_column(at - 1, order=order)) is None
    assert identifier_distinct_count(_column(N_ROWS, order=order)) == N_ROWS


def test_missing_values_count_as_rows():
    n_distinct = round(IDENTIFIER_DISTINCT_RATIO * N_ROWS)
    assert identifier_distinct_count(_column(n_distinct, n_missing=N_ROWS - n_distinct)) == n_distinct
    assert identifier_distinct_count(_column(n_distinct - 1, n_missing=N_ROWS - n_distinct + 1)) is None


@pytest.mark.parametrize("share", [0.5, 0.9, 0.93, 0.97])
def test_the_sample_agrees_with_counting_every_row(share):
    column = _column(round(share * N_ROWS))
    exact = column.nunique() if column.nunique() / len(column) >= IDENTIFIER_DISTINCT_RATIO else None
    assert identifier_distinct_count(column) == exact
    numbers = pd.Series(np.random.default_rng(1).permutation(N_ROWS) % round(share * N_ROWS), dtype=float)
    assert identifier_distinct_count(numbers) == (round(share * N_ROWS) if share >= IDENTIFIER_DISTINCT_RATIO else None)
