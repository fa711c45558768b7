"""The command line, called through main(argv) as a user would type it."""

import json

import pandas as pd
import pytest

from automl.cli import main
from automl.datasets import load_dataset


@pytest.fixture(scope="module")
def csv_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cli")
    X, y = load_dataset("credit-g")
    train = X.iloc[:500].assign(class_=y.iloc[:500].values).rename(columns={"class_": "class"})
    train.to_csv(folder / "train.csv", index=False)
    X.iloc[500:520].to_csv(folder / "new.csv", index=False)
    return folder


def test_fit_then_predict(csv_files, capsys):
    out = csv_files / "model"
    code = main(["fit", str(csv_files / "train.csv"), "--target", "class", "--n-trials", "3",
                 "--include", "logreg", "--cv", "3", "--no-tracking", "--random-state", "0",
                 "--out", str(out)])
    assert code == 0
    assert "best CV roc_auc" in capsys.readouterr().out
    predictions = csv_files / "predictions.csv"
    assert main(["predict", str(out), str(csv_files / "new.csv"), "--proba",
                 "--output", str(predictions)]) == 0
    table = pd.read_csv(predictions)
    assert len(table) == 20
    assert set(table["prediction"]) <= {"good", "bad"}
    assert (table["proba_bad"] + table["proba_good"]).round(9).eq(1).all()


def test_missing_target_column_fails_with_message(csv_files, caplog):
    code = main(["fit", str(csv_files / "train.csv"), "--target", "nope", "--n-trials", "2",
                 "--no-tracking", "--out", str(csv_files / "x")])
    assert code == 1
    assert "Target column 'nope'" in caplog.text


def test_bad_arguments_exit_2():
    with pytest.raises(SystemExit) as stop:
        main(["fit"])
    assert stop.value.code == 2


def test_evaluate_prints_and_writes_the_nested_cv_report(csv_files, capsys):
    out = csv_files / "nested.json"
    code = main(["evaluate", str(csv_files / "train.csv"), "--target", "class", "--n-trials", "2",
                 "--include", "logreg", "--cv", "2", "--outer-cv", "2", "--no-tracking",
                 "--random-state", "0", "--json", str(out)])
    assert code == 0
    printed = capsys.readouterr().out
    report = json.loads(out.read_text())
    assert len(report["folds"]) == 2 and report["metric"] == "roc_auc"
    ensemble = report["summary"]["ensemble"]
    assert f"nested CV roc_auc: {ensemble['mean']:.4f} +/- {ensemble['sem']:.4f}" in printed
    assert report["summary"]["dummy"]["mean"] == 0.5


def test_evaluate_refuses_one_outer_fold(csv_files, caplog):
    code = main(["evaluate", str(csv_files / "train.csv"), "--target", "class", "--outer-cv", "1",
                 "--no-tracking"])
    assert code == 1 and "'outer_cv' parameter of nested_cv" in caplog.text


@pytest.fixture(scope="module")
def regression_csv(tmp_path_factory, load_shared):
    folder = tmp_path_factory.mktemp("cli-regression")
    X, y = load_shared("wine-quality-red.csv", "quality")  # ratings: 5 distinct values in the first 400 rows
    X.iloc[:400].assign(quality=y.iloc[:400].values).to_csv(folder / "train.csv", index=False)
    X.iloc[:400].assign(alcohol_x10=(X["alcohol"] * 10).iloc[:400].values,
                        target=(X["alcohol"] * 3 + X["pH"]).iloc[:400].values).to_csv(folder / "many.csv", index=False)
    X.iloc[400:410].to_csv(folder / "new.csv", index=False)
    return folder


ARGS = ["--n-trials", "2", "--include", "ridge", "--cv", "3", "--no-tracking", "--random-state", "0"]


def test_task_is_inferred_from_the_target_and_said(regression_csv, caplog, capsys):
    with caplog.at_level("INFO", logger="automl"):
        code = main(["fit", str(regression_csv / "many.csv"), "--target", "target", *ARGS,
                     "--out", str(regression_csv / "inferred")])
    assert code == 0 and "best CV rmse" in capsys.readouterr().out
    assert any("is numeric with" in r.message and "task regression" in r.message for r in caplog.records)
    # Six ratings are class labels unless the user says otherwise; the message says how.
    with caplog.at_level("INFO", logger="automl"):
        code = main(["fit", str(regression_csv / "train.csv"), "--target", "quality", "--n-trials", "2",
                     "--include", "logreg", "--cv", "3", "--no-tracking", "--out", str(regression_csv / "classified")])
    assert code == 0 and "best CV log_loss" in capsys.readouterr().out
    assert any("5 distinct values: task classification (--task" in r.message for r in caplog.records)


def test_fit_task_regression_then_predict_values(regression_csv, capsys, caplog):
    out = regression_csv / "model"
    code = main(["fit", str(regression_csv / "train.csv"), "--target", "quality", "--task", "regression", *ARGS,
                 "--out", str(out)])
    assert code == 0 and "best CV rmse" in capsys.readouterr().out
    predictions = regression_csv / "predictions.csv"
    assert main(["predict", str(out), str(regression_csv / "new.csv"), "--output", str(predictions)]) == 0
    values = pd.read_csv(predictions)["prediction"]
    assert len(values) == 10 and values.between(3, 8).all() and values.nunique() > 1
    assert main(["predict", str(out), str(regression_csv / "new.csv"), "--proba"]) == 1
    assert "predicts values, not class probabilities" in caplog.text


def test_a_numeric_target_with_a_typo_is_refused_by_task_auto(regression_csv, caplog):
    frame = pd.read_csv(regression_csv / "many.csv")
    frame["target"] = frame["target"].astype(str)
    frame.loc[7, "target"] = "?"
    frame.to_csv(regression_csv / "typo.csv", index=False)
    code = main(["fit", str(regression_csv / "typo.csv"), "--target", "target", *ARGS,
                 "--out", str(regression_csv / "typo_model")])
    assert code == 1
    assert "Target 'target' is text, but 399 of its 400 values are numbers; the others: '?' (row 7)" in caplog.text


def test_fit_says_when_no_trial_finished(csv_files, capsys, monkeypatch):
    from automl.search import CVObjective

    def broken(self, trial):
        raise RuntimeError("broken on purpose")

    monkeypatch.setattr(CVObjective, "_score", broken)  # trials run in this process at --n-jobs 1
    with pytest.warns(UserWarning, match="None of 2 started trials finished"):
        code = main(["fit", str(csv_files / "train.csv"), "--target", "class", "--time-budget", "none",
                     "--n-trials", "2", "--no-tracking", "--out", str(csv_files / "fallback")])
    assert code == 0
    out = capsys.readouterr().out
    assert "no trial finished in the budget: saved the fallback model" in out and "nan" not in out
