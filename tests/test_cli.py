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
