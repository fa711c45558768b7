"""Time-ordered searches (issue 27): ``cv="time"`` and ``time_column`` (search/splits.py, search/setup.py), the OOF
predictions of the rows ever validated, nested CV in time order and the CLI's ``--time-column``."""

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import mean_squared_error
from sklearn.model_selection import TimeSeriesSplit

from automl import AutoRegressor, nested_cv
from automl.cli import main
from automl.exceptions import DataValidationError
from automl.search import prepare_search, scored_rows

FIT = dict(time_budget=None, n_jobs=1, random_state=0, tracking=False, verbose=0)


@pytest.fixture(scope="module")
def beijing_station(shared_data):
    """One station of beijing-air (hourly PM2.5 of 2013-03 to 2014-02), rows shuffled out of time order, with a
    datetime column: the order must come from the column, not from the rows."""
    frame = pd.read_csv(shared_data / "large" / "beijing-air.csv.gz", nrows=8760)  # Aotizhongxin's first year
    frame = frame.dropna(subset=["PM2.5"]).sample(frac=1.0, random_state=0).reset_index(drop=True)
    frame["time"] = pd.to_datetime(frame[["year", "month", "day", "hour"]])
    X = frame.drop(columns=["PM2.5", "No", "station", "year", "month", "day", "hour", "PM10"])
    return X, frame["PM2.5"]


def test_time_folds_train_on_the_past_and_never_split_a_timestamp():
    rng = np.random.default_rng(0)
    n = 600
    times = rng.integers(0, 150, size=n).astype(float)  # 150 timestamps, four rows each on average
    X = pd.DataFrame({"t": times, "a": rng.normal(size=n)})
    y = X["a"] + times / 50.0
    setup = prepare_search(X, y, task="regression", cv="time", time_column="t", random_state=0)
    assert setup.time_ordered and setup.time_column == "t" and len(setup.folds) == 5
    for train, test in setup.folds:
        assert times[train].max() < times[test].min()  # the past only; no timestamp on both sides
    tested = scored_rows(setup.folds)
    assert times[np.setdiff1d(np.arange(n), tested)].max() <= times[tested].min()  # the oldest, never tested
    assert len(tested) == pytest.approx(n * 5 / 6, abs=10)
    # The row order stands for time without a column, with any splitter, as TimeSeriesSplit on the rows.
    plain = prepare_search(X, y, task="regression", cv="time", random_state=0)
    expected = list(TimeSeriesSplit(5).split(X))
    assert all(np.array_equal(a[1], b[1]) and np.array_equal(a[0], b[0]) for a, b in zip(plain.folds, expected))
    gapped = prepare_search(X, y, task="regression", cv=TimeSeriesSplit(3, gap=60), time_column="t", random_state=0)
    assert len(gapped.folds) == 3 and all(times[tr].max() < times[te].min() for tr, te in gapped.folds)


def test_a_time_holdout_holds_the_newest_rows():
    rng = np.random.default_rng(1)
    n = 3000
    X = pd.DataFrame({"t": rng.permutation(n) // 3, "a": rng.normal(size=n)})  # 1,000 timestamps, shuffled
    y = (X["a"] > 0).astype(int)
    setup = prepare_search(X, y, cv="time", time_column="t", validation="holdout", random_state=0)
    (train, test), = setup.folds
    t = setup.X["t"].to_numpy()
    assert setup.validation == "holdout" and t[train].max() < t[test].min() and len(test) == 300


def test_orders_that_cannot_be_kept_are_refused():
    X = pd.DataFrame({"t": np.arange(40.0), "a": np.arange(40) % 7, "name": ["x"] * 20 + ["y"] * 20})
    y = np.arange(40) % 2
    with pytest.raises(ValueError, match="time_column='t' orders the rows for cv='time'.*cv=5 makes shuffled folds"):
        prepare_search(X, y, cv=5, time_column="t", random_state=0)
    with pytest.raises(ValueError, match="Time order and groups together are not supported yet"):
        prepare_search(X, y, cv="time", groups=np.arange(40) // 4, random_state=0)
    with pytest.raises(DataValidationError, match="time_column 'name' holds text"):
        prepare_search(X, y, cv="time", time_column="name", random_state=0)
    with pytest.raises(DataValidationError, match="time_column 'when' is not a column of X"):
        prepare_search(X, y, cv="time", time_column="when", random_state=0)
    with pytest.raises(DataValidationError, match="time_column 't' has 2 missing value.*rows \\[3, 9\\]"):
        prepare_search(X.assign(t=X["t"].where(~X.index.isin([3, 9]))), y, cv="time", time_column="t",
                       random_state=0)
    with pytest.warns(UserWarning), pytest.raises(DataValidationError, match="time_column 'c' was dropped \\(constant"):
        prepare_search(X.assign(c=1.0), y, cv="time", time_column="c", random_state=0)


def test_shuffled_folds_see_the_future_and_time_folds_do_not(beijing_station):
    X, y = beijing_station
    X, y = X[X["time"] < "2013-10-01"], y[X["time"] < "2013-10-01"]  # seven months
    future = (X["time"] >= "2013-09-01").to_numpy()  # the last one held out
    fit = dict(**FIT, n_trials=2, include=["lgbm"])
    shuffled = AutoRegressor(**fit).fit(X[~future], y[~future])
    timed = AutoRegressor(**fit, cv="time", time_column="time").fit(X[~future], y[~future])
    rmse = {name: float(np.sqrt(mean_squared_error(y[future], model.predict(X[future]))))
            for name, model in (("shuffled", shuffled), ("time", timed))}
    # An hour's neighbours in training make shuffled CV far more hopeful than the future bears out.
    assert shuffled.best_score_ < 0.8 * rmse["shuffled"]
    assert timed.best_score_ > 1.2 * shuffled.best_score_ and timed.time_ordered_ and not shuffled.time_ordered_
    # OOF predictions exist only for the rows some fold validated: the oldest sixth has none.
    assert timed.ensemble_score_ == pytest.approx(timed.ensemble_score_)  # a number, not NaN
    assert len(timed.leaderboard_) == 2 and timed.leaderboard_["folds"].max() == 5  # five time folds


def test_nested_cv_in_time_order_scores_each_outer_fit_on_its_future(beijing_station):
    X, y = beijing_station
    X, y = X.iloc[:3000], y.iloc[:3000]
    model = AutoRegressor(**FIT, n_trials=2, include=["ridge"], cv="time", time_column="time")
    report = nested_cv(model, X, y, outer_cv=3, random_state=0)
    assert report.folds["n_train"].tolist() == [750, 1500, 2250] and (report.folds["n_test"] == 750).all()


def test_the_cli_time_column_makes_a_time_ordered_search(tmp_path, beijing_station):
    X, y = beijing_station
    csv = tmp_path / "air.csv"
    X.iloc[:2000].assign(pm25=y.iloc[:2000].to_numpy()).to_csv(csv, index=False)
    out = tmp_path / "model"
    code = main(["fit", str(csv), "--target", "pm25", "--task", "regression", "--time-column", "time",
                 "--time-budget", "none", "--n-trials", "2", "--include", "ridge", "--no-tracking",
                 "--random-state", "0", "--out", str(out)])
    from automl import load
    model = load(out)
    assert code == 0 and model.time_ordered_ and model.cv == "time" and model.time_column == "time"


def test_splits_that_cannot_be_in_time_order_are_refused_with_the_reason():
    from sklearn.model_selection import GroupKFold, KFold

    rng = np.random.default_rng(2)
    X = pd.DataFrame({"t": rng.permutation(300).astype(float), "a": rng.normal(size=300)})
    y = (X["a"] > 0).astype(int)
    with pytest.raises(ValueError, match="Fold [0-9] of cv=KFold.* has no row older than its validation rows"):
        prepare_search(X, y, cv=KFold(3, shuffle=True, random_state=0), time_column="t", random_state=0)
    with pytest.raises(ValueError, match="has no row older than its validation rows.*more distinct times"):
        prepare_search(X.assign(b=X["t"] > 200), y, cv="time", time_column="b", random_state=0)
    with pytest.raises(ValueError, match="splits by groups: time order and groups together are not supported"):
        prepare_search(X, y, cv=GroupKFold(3), time_column="t", random_state=0)


def test_a_time_holdout_moves_no_old_row_in_for_a_rare_class():
    rng = np.random.default_rng(3)
    n = 3000
    X = pd.DataFrame({"t": rng.permutation(n).astype(float), "a": rng.normal(size=n)})
    y = np.where(X["a"] > 0, "up", "down")
    y[X["t"].to_numpy() < 3] = "rare"  # the three oldest rows: a class the newest rows lack
    setup = prepare_search(X, y, cv="time", time_column="t", validation="holdout", random_state=0)
    (train, test), = setup.folds
    t = setup.X["t"].to_numpy()
    assert t[train].max() < t[test].min() and setup.profile.n_classes == 3
    binary = np.where(X["t"].to_numpy() >= 2700, "late", np.where(X["a"] > 0, "up", "late"))
    with pytest.raises(DataValidationError, match="The newest 300 rows \\(the time-ordered holdout\\) hold one class"):
        prepare_search(X, binary, cv="time", time_column="t", validation="holdout", random_state=0)


def test_the_time_column_is_no_row_identifier_in_a_time_ordered_fit(beijing_station):
    X, y = beijing_station
    X = X.iloc[:3000].assign(epoch=lambda f: f["time"].astype("int64") // 10**9).drop(columns="time")
    timed = AutoRegressor(**FIT, n_trials=1, include=["ridge"], cv="time", time_column="epoch").fit(X, y.iloc[:3000])
    assert not [f for f in timed.leak_report_.findings if f.column == "epoch"]
    report = AutoRegressor(**FIT, n_trials=1, include=["ridge"]).fit(X, y.iloc[:3000]).leak_report_
    assert [f.kind for f in report.findings if f.column == "epoch"] == ["identifier"]  # shuffled: it still is one
