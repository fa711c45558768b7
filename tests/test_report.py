"""Tests of the fit report (automl.report): its data, the self-contained page, MLflow and the CLI."""

import base64
import html
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

from automl import AutoClassifier
from automl.cli import main
from automl.estimators import QUANTITIES, NestedCVReport
from automl.estimators import base as estimator_base
from automl.report import TOP_N, render_html, report_data, run_description, write_report
from automl.space import ComponentSpec
from automl.tracking import read_run_json


@pytest.fixture(scope="module")
def tracked(load_shared, tmp_path_factory):
    """A small tracked search on credit-g (1,000 rows), logged to a SQLite MLflow store."""
    X, y = load_shared("credit-g.csv", "class")
    uri = "sqlite:///" + str(tmp_path_factory.mktemp("mlflow") / "mlflow.db")
    model = AutoClassifier(time_budget=None, n_trials=25, include=["logreg", "hgb", "knn"], cv=3,
                           tracking_uri=uri, verbose=0, random_state=0)
    model.fit(X, y)
    return model, uri


@pytest.fixture(scope="module")
def data(tracked):
    return report_data(tracked[0])


def fake_nested(n_complete=(3, 3)):
    folds = pd.DataFrame({q: [0.7, 0.8] for q in QUANTITIES}).assign(
        fold=[0, 1], n_train=[500, 500], n_test=[500, 500], best_family=["hgb", "logreg"], mlflow_run_id=None,
        n_complete=list(n_complete))
    summary = pd.DataFrame({"mean": 0.75, "std": 0.0707, "sem": 0.05}, index=list(QUANTITIES))
    return NestedCVReport(folds=folds, summary=summary, metric="roc_auc", greater_is_better=True)


def test_data_is_strict_json_with_every_section(data):
    json.dumps(data, allow_nan=False)  # NaN became None: any JSON reader takes it
    assert set(data) == {"format", "version", "created", "estimator", "data", "search", "trials", "leaderboard",
                         "pruning", "ensemble", "leakage", "nested_cv", "reproducibility"}
    assert data["nested_cv"] is None and data["estimator"] == "AutoClassifier"


def test_data_summarizes_the_fit_it_came_from(tracked, data):
    model = tracked[0]
    board = model.leaderboard_
    assert data["data"]["n_samples"] == 1000 and data["data"]["classes"] == ["bad", "good"]
    assert data["data"]["class_counts"] == [300, 700]
    assert len(data["trials"]) == len(board) == 25 and len(data["leaderboard"]) == min(TOP_N, 25)
    assert data["leaderboard"][0]["mean"] == pytest.approx(model.best_score_)
    assert data["search"]["best_score"] == pytest.approx(model.best_score_)
    assert data["search"]["states"] == board["state"].value_counts().to_dict()
    assert [t["trial"] for t in data["trials"]] == sorted(board["trial"])


def test_pruning_figures_count_the_folds_not_run(tracked, data):
    board = tracked[0].leaderboard_
    pruning = data["pruning"]
    assert pruning["n_folds"] == 3 and pruning["folds_run"] == board["folds"].sum()
    assert pruning["folds_full_cv"] == 3 * len(board)
    pruned = board[board["state"] == "PRUNED"]
    assert pruning["n_pruned"] == len(pruned) > 0
    assert pruning["folds_saved"] == (3 - pruned["folds"]).sum() > 0
    assert sum(row["n_trials"] for row in pruning["trials_by_folds"]) == len(board)


def test_ensemble_members_carry_the_weights_of_the_leaderboard(tracked, data):
    model = tracked[0]
    members = data["ensemble"]["members"]
    weights = model.leaderboard_.set_index("trial")["weight"]
    assert members and sum(m["weight"] for m in members) == pytest.approx(1.0)
    assert all(weights[m["trial"]] == pytest.approx(m["weight"]) for m in members)
    assert data["ensemble"]["hillclimb_score"] == pytest.approx(model.ensemble_score_)
    # Both pooled over all OOF predictions, so they compare: selection never ends below its first pick.
    assert data["ensemble"]["best_single_oof_score"] == pytest.approx(model.best_single_oof_score_)
    assert model.ensemble_score_ >= model.best_single_oof_score_ - 1e-12


def test_reproducibility_names_seed_params_families_and_versions(tracked, data):
    repro = data["reproducibility"]
    assert repro["random_state"] == 0 and repro["params"]["n_trials"] == 25
    assert set(repro["components"]) == {"hgb", "logreg", "knn"}
    assert {"automl", "scikit-learn", "optuna"} <= set(repro["versions"])
    assert repro["mlflow_run_id"] == tracked[0].mlflow_run_id_


def test_page_is_self_contained_with_real_plots(tmp_path, data):
    html_path, json_path = write_report(data, tmp_path / "sub" / "fit")
    assert html_path.name == "fit.html" and json_path.name == "fit.json"
    page = html_path.read_text()
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == 4  # progress, families, folds, ensemble weights
    assert all(base64.b64decode(image)[:8] == b"\x89PNG\r\n\x1a\n" for image in images)
    assert not re.search(r'(src|href)="(https?:)?//', page)  # nothing to fetch
    for heading in ("Data", "Search", "Pruning", "Ensemble", "Leak check", "Nested CV", "Reproducibility"):
        assert f"<h2>{heading}</h2>" in page
    # Drawn from the JSON alone: the page from the file equals the page from the data.
    assert render_html(json.loads(json_path.read_text())) == page


@pytest.mark.parametrize("given, written", [
    ("plain", "plain.html"), ("r.htm", "r.htm"), ("r.json", "r.html"), ("r.v2", "r.v2.html"),
    ("folder/", "folder/report.html"), (".", "report.html"),
])
def test_report_paths(tmp_path, monkeypatch, data, given, written):
    monkeypatch.chdir(tmp_path)
    html_path, json_path = write_report(data, given)
    assert html_path == Path(written) and html_path.is_file() and json_path == html_path.with_suffix(".json")
    assert json.loads(json_path.read_text())["format"] == "automl-report"


def test_an_existing_folder_gets_report_html_inside(tmp_path, data):
    (tmp_path / "out").mkdir()
    assert write_report(data, tmp_path / "out")[0] == tmp_path / "out" / "report.html"


def test_reproducibility_call_repeats_the_fit(tracked, data):
    """The printed call evaluates to an estimator with the fit's parameters (time_budget=None included)."""
    page = render_html(data)
    call = html.unescape(re.search(r"<pre>(AutoClassifier\(.*?\))</pre>", page, re.S).group(1))
    rebuilt = eval(call, {"AutoClassifier": AutoClassifier})
    assert rebuilt.get_params() == tracked[0].get_params()


def test_a_fit_where_no_trial_finished_says_so(load_shared, tmp_path):
    X, y = load_shared("credit-g.csv", "class")
    failing = ComponentSpec("boom", "Boom", lambda trial, profile, prefix: {}, lambda params, seed: _Boom())
    with pytest.warns(UserWarning, match="the fallback, a LogisticRegression"):
        model = AutoClassifier(time_budget=None, n_trials=2, components=[failing], include=["boom"], cv=2,
                               tracking=False, verbose=0, random_state=0).fit(X, y)
    page = render_html(report_data(model))
    assert "No trial finished: nothing to plot." in page
    assert "the fallback (the portfolio's logistic or ridge regression)" in page
    assert "Model check not run: no trial finished." in page
    assert page.count("data:image/png") == 1  # only the folds plot: every trial failed at fold 0
    description = run_description(report_data(model))  # the MLflow run's, from the same data
    assert "Trials: 2 (2 failed)." in description
    assert "No trial beat the fallback: the model is a logistic or ridge regression." in description
    assert "Best trial" not in description


def test_the_fallback_on_a_sample_keeps_every_class(load_shared, monkeypatch):
    X, y = load_shared("credit-g.csv", "class")
    y = y.copy()
    y.iloc[[3, 700]] = "zz"  # a class of 2 rows, last in code order, as kddcup99's rarest
    monkeypatch.setattr(estimator_base, "FALLBACK_ROWS", 100)
    failing = ComponentSpec("boom", "Boom", lambda trial, profile, prefix: {}, lambda params, seed: _Boom())
    with pytest.warns(UserWarning, match="the fallback"):
        model = AutoClassifier(time_budget=None, n_trials=1, components=[failing], include=["boom"], cv=2,
                               tracking=False, verbose=0, random_state=0).fit(X, y)
    proba = model.predict_proba(X.iloc[:5])
    assert list(model.classes_) == ["bad", "good", "zz"] and proba.shape == (5, 3)
    assert np.allclose(proba.sum(axis=1), 1.0)


def test_page_escapes_text_from_the_data(data):
    hostile = json.loads(json.dumps(data))
    hostile["data"]["columns"][0]["column"] = "<script>alert(1)</script>"
    page = render_html(hostile)
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_nested_cv_table_is_shown_when_given(tracked, tmp_path):
    model = tracked[0]
    data = report_data(model, nested_cv=fake_nested())
    assert data["nested_cv"]["summary"]["ensemble"]["mean"] == 0.75
    page = render_html(data)
    assert "nested CV (honest)" in page and "0.7500 +/- 0.0500" in page and "(std 0.0707)" in page
    assert len(re.findall(r"data:image/png", page)) == 5
    assert "no trial finished" not in page
    warned = render_html(report_data(model, nested_cv=fake_nested(n_complete=(0, 2))))
    assert "In outer fold(s) 0 no trial finished" in warned


def test_not_a_report_is_refused():
    with pytest.raises(ValueError, match="Not an automl report"):
        render_html({"format": "something else"})


class _Boom:
    def fit(self, X, y):
        raise RuntimeError("boom")


def test_report_before_fit_raises(tmp_path):
    with pytest.raises(NotFittedError):
        AutoClassifier().report(tmp_path / "r.html")


def test_a_tracked_fit_logs_its_report_and_report_replaces_it(tracked, tmp_path):
    model, uri = tracked
    logged = read_run_json(uri, model.mlflow_run_id_, "report/report.json")
    assert logged["search"]["best_score"] == pytest.approx(model.best_score_) and logged["nested_cv"] is None
    assert logged["reproducibility"]["mlflow_run_id"] == model.mlflow_run_id_
    path = model.report(tmp_path / "again.html", nested_cv=fake_nested())
    assert path.exists() and path.with_suffix(".json").exists()
    again = read_run_json(uri, model.mlflow_run_id_, "report/report.json")
    assert again["nested_cv"]["metric"] == "roc_auc"


def test_cli_report_redraws_a_run(tracked, tmp_path, capsys):
    model, uri = tracked
    out = tmp_path / "from_run.html"
    assert main(["report", model.mlflow_run_id_, "--tracking-uri", uri, "--out", str(out)]) == 0
    assert str(out) in capsys.readouterr().out
    assert json.loads(out.with_suffix(".json").read_text())["reproducibility"]["random_state"] == 0
    assert out.read_text().count("data:image/png") >= 4


def test_cli_report_of_an_unknown_run_fails_with_a_message(tracked, caplog):
    assert main(["report", "0" * 32, "--tracking-uri", tracked[1]]) == 1
    assert f"No MLflow run '{'0' * 32}'" in caplog.text


def test_cli_report_creates_no_store_where_there_is_none(tmp_path, caplog, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["report", "0" * 32, "--tracking-uri", f"sqlite:///{tmp_path}/none/x.db"]) == 1
    assert main(["report", "0" * 32]) == 1  # the default ./mlflow.db, absent here
    assert "the file does not exist" in caplog.text and list(tmp_path.iterdir()) == []


def test_model_check_note_is_reported(data):
    assert any(note.startswith("Model check") for note in data["leakage"]["notes"])
    assert np.isfinite(data["search"]["timings_seconds"]["model_check"])
