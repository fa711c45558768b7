"""Tests of automl.space.pipeline: the define-by-run tree, replay with rebuild, native categoricals, portfolio."""

import numpy as np
import optuna
import pandas as pd
import pytest
from optuna.samplers import RandomSampler
from optuna.trial import FixedTrial
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline

from automl.data import check_training_data
from automl.space import MAX_NATIVE_CARDINALITY, SCALERS, portfolio, rebuild, resolve_components, suggest_pipeline
from automl.space.selection import MIN_KEPT, PORTFOLIO_KEPT, WIDE_MIN_COLUMNS, TopColumns

SPECS = resolve_components()
SCALED = {s.key for s in SPECS if s.needs_scaling}
HANDLES_MISSING = {s.key for s in SPECS if s.handles_missing}
HGB_KNOBS = {"model.hgb.learning_rate": 0.1, "model.hgb.max_leaf_nodes": 15, "model.hgb.min_samples_leaf": 20,
             "model.hgb.l2_regularization": 1e-3, "model.hgb.max_features": 1.0}


def profile_of(frame, target="class"):
    X, y, _, profile = check_training_data(frame.drop(columns=target), frame[target], n_folds=3)
    return X, y, profile


@pytest.fixture(scope="module")
def credit_frame(shared_data):
    return pd.read_csv(shared_data / "credit-approval.csv")


@pytest.fixture(scope="module")
def credit(credit_frame):
    return profile_of(credit_frame)


def random_trials(profile, specs, n, seed=0):
    """n (trial, pipeline) pairs from a RandomSampler study (no fitting)."""
    study = optuna.create_study(sampler=RandomSampler(seed=seed))
    pairs = []
    for _ in range(n):
        trial = study.ask()
        pairs.append((trial, suggest_pipeline(trial, profile, specs, random_state=0)))
        study.tell(trial, 0.5)
    return pairs


# ---- define-by-run: a knob exists only on its branch ------------------------------------------------
def test_knobs_follow_the_branch(credit):
    _, _, profile = credit
    families = set()
    for trial, pipeline in random_trials(profile, SPECS, 60):
        params, key = trial.params, trial.params["model"]
        families.add(key)
        assert ("scaler" in params) == (key in SCALED), params
        assert any(n.startswith("imputer.") for n in params) == (key not in HANDLES_MISSING), params
        # Every family knob belongs to the chosen family.
        assert all(n.split(".")[1] == key for n in params if n.startswith("model.")), params
        assert ("encoder.onehot.min_frequency" in params) == (params["encoder"] == "onehot")
        # LightGBM reads categories from a frame: an extra step turns the ordinal codes into one.
        native_frame = trial.params["model"] == "lgbm" and trial.params.get("encoder") == "ordinal"
        expected = ["preprocess", "categories", "model"] if native_frame else ["preprocess", "model"]
        assert isinstance(pipeline, Pipeline) and [n for n, _ in pipeline.steps] == expected
    assert families == {s.key for s in SPECS}


def test_logreg_trial_has_no_hgb_knob(credit):
    _, _, profile = credit
    study = optuna.create_study(sampler=RandomSampler(seed=3))
    study.enqueue_trial({"model": "logreg"})
    trial = study.ask()
    suggest_pipeline(trial, profile, resolve_components(include=["logreg", "hgb"]))
    assert trial.params["model"] == "logreg"
    assert "model.logreg.C" in trial.params
    assert not [n for n in trial.params if n.startswith("model.hgb.")]
    assert set(trial.distributions) == set(trial.params)


def test_no_imputer_knob_without_missing_values(credit_frame):
    _, _, profile = profile_of(credit_frame.dropna())
    assert not profile.has_missing
    for trial, _ in random_trials(profile, SPECS, 30, seed=1):
        assert not [n for n in trial.params if n.startswith("imputer")], trial.params


def test_imputer_knob_only_for_columns_with_missing_values(credit_frame):
    # Missing values in numeric columns only: no categorical imputer is asked for.
    frame = credit_frame.dropna(subset=["A1", "A4", "A5", "A6", "A7"])
    _, _, profile = profile_of(frame)
    study = optuna.create_study(sampler=RandomSampler(seed=0))
    study.enqueue_trial({"model": "logreg"})
    trial = study.ask()
    suggest_pipeline(trial, profile, SPECS)
    assert "imputer.numeric" in trial.params and "imputer.categorical" not in trial.params


def test_no_encoder_knob_without_categorical_columns(credit_frame):
    _, _, profile = profile_of(credit_frame[["A2", "A3", "A8", "A11", "A15", "class"]])
    assert profile.categorical_columns == ()
    for trial, pipeline in random_trials(profile, SPECS, 20, seed=2):
        assert not [n for n in trial.params if n.startswith("encoder")], trial.params
        assert [name for name, _, _ in pipeline.named_steps["preprocess"].transformers] == ["numeric"]


def test_scaler_choices_build_the_named_scaler(credit):
    _, _, profile = credit
    for scaler in SCALERS:
        params = {"model": "logreg", "model.logreg.C": 1.0, "encoder": "ordinal", "scaler": scaler,
                  "imputer.numeric": "mean", "imputer.numeric.add_indicator": False,
                  "imputer.categorical": "most_frequent"}
        preprocess = rebuild(params, profile, SPECS).named_steps["preprocess"]
        numeric = {name: t for name, t, _ in preprocess.transformers}["numeric"]
        step = numeric.named_steps["scaler"]
        assert step == "passthrough" if scaler == "none" else type(step).__name__.lower().startswith(scaler)


# ---- rebuild replays a trial ---------------------------------------------------------------------------
def test_rebuild_builds_the_sampled_pipeline(credit):
    _, _, profile = credit
    for trial, pipeline in random_trials(profile, SPECS, 25, seed=4):
        rebuilt = rebuild(trial.params, profile, SPECS, random_state=0)
        assert repr(rebuilt.get_params(deep=True)) == repr(pipeline.get_params(deep=True)), trial.params
        assert rebuilt is not pipeline


def test_rebuild_with_a_different_seed_differs(credit):
    _, _, profile = credit
    params = {"model": "rf", "encoder": "ordinal", "imputer.numeric": "median",
              "imputer.numeric.add_indicator": True, "imputer.categorical": "constant",
              "model.rf.n_estimators": 50, "model.rf.max_features": 0.5, "model.rf.min_samples_leaf": 2,
              "model.rf.criterion": "gini"}
    assert rebuild(params, profile, SPECS, 1).named_steps["model"].random_state == 1
    assert rebuild(params, profile, SPECS, 2).named_steps["model"].random_state == 2


def test_rebuild_missing_knob_is_named(credit):
    _, _, profile = credit
    with pytest.raises(ValueError, match="model.logreg.C"):
        rebuild({"model": "logreg", "encoder": "target", "imputer.numeric": "mean",
                 "imputer.numeric.add_indicator": False, "imputer.categorical": "constant",
                 "scaler": "none"}, profile, SPECS)


def test_every_randomized_step_gets_the_seed(credit):
    _, _, profile = credit
    for trial, pipeline in random_trials(profile, SPECS, 60, seed=5):
        for name, value in pipeline.get_params(deep=True).items():
            if name.endswith("random_state") and value != "deprecated":
                assert value == 0, (name, trial.params)
            cv = value if name.endswith("__cv") else None
            if cv is not None and getattr(cv, "shuffle", False):
                assert cv.random_state == 0, (name, trial.params)


def test_target_encoder_is_reproducible(credit):
    X, y, profile = credit
    params = {"model": "logreg", "model.logreg.C": 1.0, "encoder": "target", "scaler": "standard",
              "imputer.numeric": "median", "imputer.numeric.add_indicator": False,
              "imputer.categorical": "most_frequent"}
    first = rebuild(params, profile, SPECS, random_state=0).fit(X, y)
    second = rebuild(params, profile, SPECS, random_state=0).fit(X, y)
    # TargetEncoder cross-fits with shuffled folds: a seed makes two fits agree.
    np.testing.assert_array_equal(first.predict_proba(X), second.predict_proba(X))


# ---- native categorical columns for histogram gradient boosting ---------------------------------------
@pytest.fixture(scope="module")
def wide(credit_frame):
    """credit-approval plus one categorical column wider than HGB's native limit."""
    frame = credit_frame.copy()
    frame.insert(0, "wide", [f"w{i % (MAX_NATIVE_CARDINALITY + 50)}" for i in range(len(frame))])
    return profile_of(frame)


def test_hgb_ordinal_gets_native_categorical_indices(wide):
    X, y, profile = wide
    pipeline = rebuild({"model": "hgb", "encoder": "ordinal", **HGB_KNOBS}, profile, SPECS, random_state=0)
    native = [c for c in profile.categorical_columns if len(profile.categories[c]) <= MAX_NATIVE_CARDINALITY]
    assert len(native) == 9 and "wide" not in native
    model = pipeline.named_steps["model"]
    assert model.categorical_features == list(range(len(native)))
    transformers = {name: columns for name, _, columns in pipeline.named_steps["preprocess"].transformers}
    # Native columns first, so their output positions are 0..8; the wide column comes after them.
    assert transformers["categorical"] == [*native, "wide"]
    pipeline.fit(X, y)
    mask = model.is_categorical_
    assert mask.tolist() == [True] * len(native) + [False] * (len(mask) - len(native))
    codes = pipeline.named_steps["preprocess"].transform(X)[:, : len(native)]
    for i, column in enumerate(native):
        observed = codes[:, i][~np.isnan(codes[:, i])]
        assert set(observed) <= set(range(len(profile.categories[column])))
        assert np.isnan(codes[:, i]).sum() == X[column].isna().sum()
    np.testing.assert_allclose(pipeline.predict_proba(X).sum(axis=1), 1.0)


@pytest.mark.parametrize("encoder", ["onehot", "target"])
def test_hgb_other_encoders_have_no_native_columns(credit, encoder):
    _, _, profile = credit
    params = {"model": "hgb", "encoder": encoder, "encoder.onehot.min_frequency": 0.01, **HGB_KNOBS}
    assert rebuild(params, profile, SPECS).named_steps["model"].categorical_features == "from_dtype"


def test_ordinal_for_a_family_without_native_support(credit):
    _, _, profile = credit
    params = {"model": "xgb", "encoder": "ordinal", "model.xgb.n_estimators": 20,
              "model.xgb.learning_rate": 0.1, "model.xgb.subsample": 1.0, "model.xgb.colsample_bytree": 1.0,
              "model.xgb.reg_lambda": 1.0, "model.xgb.max_depth": 3, "model.xgb.min_child_weight": 1.0}
    pipeline = rebuild(params, profile, SPECS)
    encoder = {name: t for name, t, _ in pipeline.named_steps["preprocess"].transformers}["categorical"]
    # xgb reads NaN as missing, so unseen levels become NaN rather than a fake code.
    assert np.isnan(encoder.named_steps["encoder"].unknown_value)
    assert isinstance(pipeline.named_steps["preprocess"], ColumnTransformer)


def test_hgb_with_only_wide_categoricals_gets_no_native_columns(credit_frame):
    frame = credit_frame[["A2", "A3", "class"]].copy()
    frame["wide"] = [f"w{i % 300}" for i in range(len(frame))]
    _, _, profile = profile_of(frame)
    pipeline = rebuild({"model": "hgb", "encoder": "ordinal", **HGB_KNOBS}, profile, SPECS)
    assert pipeline.named_steps["model"].categorical_features == "from_dtype"


# ---- portfolio -------------------------------------------------------------------------------------------
def test_portfolio_is_round_robin_over_families():
    specs = resolve_components(include=["hgb", "rf", "logreg"])
    configs = portfolio(specs)
    assert [c["model"] for c in configs] == ["hgb", "rf", "logreg", "hgb"]
    assert [c["model.hgb.learning_rate"] for c in configs if c["model"] == "hgb"] == [0.1, 0.05]
    assert [c["encoder"] for c in configs] == ["ordinal", "onehot", "onehot", "ordinal"]
    assert portfolio([]) == []


def test_portfolio_of_the_whole_registry():
    configs = portfolio(SPECS)
    # Round 1: every family with a default, in registry order; round 2: hgb's second default.
    assert [c["model"] for c in configs] == [
        "hgb", "lgbm", "catboost", "rf", "et", "logreg", "xgb", "knn", "svc", "hgb"]
    assert all(c["scaler"] == "standard" and c["imputer.numeric"] == "median" for c in configs)


def test_regression_portfolio_follows_the_measured_ranks_and_the_model_choice_keeps_the_registry_order():
    rng = np.random.default_rng(0)
    X = pd.DataFrame(rng.normal(size=(300, 3)), columns=["a", "b", "c"])
    _, _, _, profile = check_training_data(X, X["a"] + rng.normal(size=300), n_folds=5, task="regression")
    specs = resolve_components(profile=profile)
    configs = portfolio(specs)
    assert [c["model"] for c in configs] == [
        "hgb", "xgb", "lgbm", "catboost", "svr", "rf", "et", "knn", "ridge", "hgb"]
    assert configs[0]["model.hgb.l2_regularization"] == configs[2]["model.lgbm.reg_lambda"] == 1.0
    # The searched "model" choice is the registry's order, which a continued study stored: only the
    # portfolio moved.
    study = optuna.create_study(sampler=RandomSampler(seed=0))
    trial = study.ask()
    suggest_pipeline(trial, profile, specs, random_state=0)
    assert trial.distributions["model"].choices == tuple(spec.key for spec in specs)
    assert trial.distributions["model"].choices[:3] == ("hgb", "lgbm", "catboost")


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_every_portfolio_config_rebuilds_and_fits(credit):
    X, y, profile = credit
    assert profile.has_missing and profile.categorical_columns
    for config in portfolio(SPECS):
        pipeline = suggest_pipeline(FixedTrial(config), profile, SPECS, random_state=0)
        model = pipeline.named_steps["model"]
        params = model.get_params()
        assert params.get("random_state", params.get("random_seed", 0)) == 0  # kNN alone has no randomness
        for name, value in config.items():
            if name == "model.svc.gamma_scale":  # relative to the width, as gamma="scale" is
                assert params["gamma"] == pytest.approx(value / profile.n_features)
            elif name == "model.catboost.learning_rate_auto":  # CatBoost sets the rate from the data
                assert value and params.get("learning_rate") is None
            elif name.startswith("model."):
                assert params[name.split(".")[2]] == value, name
        pipeline.fit(X.iloc[::2], y[::2])
        proba = pipeline.predict_proba(X.iloc[1::2])
        np.testing.assert_allclose(proba.sum(axis=1), 1.0)
        assert np.mean(proba.argmax(axis=1) == y[1::2]) > 0.7, config["model"]


def test_lightgbm_with_ordinal_encoder_splits_on_categories(credit):
    """LightGBM reads pandas categories: its trees then hold categorical ('==') splits."""
    X, y, profile = credit
    specs = resolve_components(include=["lgbm"])
    config = {**portfolio(specs)[0], "encoder": "ordinal"}
    pipeline = rebuild(config, profile, specs, random_state=0).fit(X, y)
    assert list(pipeline.named_steps) == ["preprocess", "categories", "model"]
    booster = pipeline.named_steps["model"].booster_
    n_categorical = len(profile.categorical_columns)
    assert len(booster.pandas_categorical) == n_categorical
    splits = [node.get("decision_type") for tree in booster.dump_model()["tree_info"]
              for node in [tree["tree_structure"]]]
    assert "==" in splits
    unseen = X.head(3).assign(**{profile.categorical_columns[0]: "never seen"})
    assert np.isfinite(pipeline.predict_proba(unseen)).all()


def test_catboost_reads_missing_values_and_writes_no_files(credit, tmp_path, monkeypatch):
    """CatBoost splits on NaN itself (no imputer on its branch) and leaves no catboost_info in the cwd."""
    monkeypatch.chdir(tmp_path)
    X, y, profile = credit
    assert profile.has_missing
    specs = resolve_components(include=["catboost"])
    pipeline = rebuild(portfolio(specs)[0], profile, specs, random_state=0)
    numeric = dict((name, steps) for name, steps, _ in pipeline.named_steps["preprocess"].transformers)["numeric"]
    assert numeric == "passthrough"
    proba = pipeline.fit(X.iloc[::2], y[::2]).predict_proba(X.iloc[1::2])
    assert np.mean(proba.argmax(axis=1) == y[1::2]) > 0.8
    assert list(tmp_path.iterdir()) == []
    # The searched rate's branch: the knob exists only when the automatic rate is not chosen.
    sampled = {"model.catboost.learning_rate_auto": False, "model.catboost.learning_rate": 0.2}
    fast = rebuild({**portfolio(specs)[0], **sampled}, profile, specs, random_state=0)
    assert fast.named_steps["model"].get_params()["learning_rate"] == 0.2


# ---- wide tables: the selection step --------------------------------------------------------------
@pytest.fixture(scope="module")
def wide_kc1(shared_data):
    """kc1's 21 code metrics and 200 columns of noise, 5% of the metrics' cells missing."""
    frame = pd.read_csv(shared_data / "kc1.csv")
    rng = np.random.default_rng(0)
    metrics = frame.drop(columns="Class").mask(rng.random((len(frame), 21)) < 0.05)
    noise = pd.DataFrame(rng.normal(size=(len(frame), 200)), columns=[f"noise{i}" for i in range(200)])
    return profile_of(pd.concat([metrics, noise, frame["Class"]], axis=1), target="Class")


def test_a_narrow_table_is_never_asked_to_select(credit):
    for trial, _ in random_trials(credit[2], SPECS, 20):
        assert "select" not in trial.params and "select.top.k" not in trial.params


def test_a_wide_table_searches_the_kept_columns(wide_kc1):
    _, _, profile = wide_kc1
    assert len(profile.numeric_columns) >= WIDE_MIN_COLUMNS
    params = [trial.params for trial, _ in random_trials(profile, SPECS, 30)]
    assert {p["select"] for p in params} == {"all", "top"}
    kept = [p["select.top.k"] for p in params if p["select"] == "top"]
    assert min(kept) >= MIN_KEPT and max(kept) <= len(profile.numeric_columns)


def test_the_wide_portfolio_keeps_the_top_columns_and_fits_with_missing_values(wide_kc1):
    X, y, profile = wide_kc1
    config = next(c for c in portfolio(SPECS) if c["model"] == "hgb")  # reads NaN: no imputer before
    pipeline = suggest_pipeline(FixedTrial(config), profile, SPECS, random_state=0).fit(X, y)
    numeric = pipeline.named_steps["preprocess"].named_transformers_["numeric"]
    select = numeric.named_steps["select"] if isinstance(numeric, Pipeline) else numeric
    assert isinstance(select, TopColumns) and select.k == PORTFOLIO_KEPT
    kept = set(np.asarray(profile.numeric_columns)[select.get_support()])
    # kc1's metrics are kept before the noise: 12 of the 21 would be, by chance alone.
    assert len(kept) == PORTFOLIO_KEPT and len(kept & set(X.columns[:21])) >= 18
    assert pipeline.named_steps["model"].n_features_in_ == PORTFOLIO_KEPT
    assert np.isnan(select.transform(X[list(profile.numeric_columns)].to_numpy())).any()  # NaN left to the model


def test_top_columns_ranks_by_f_statistic_and_keeps_all_when_k_is_large():
    rng = np.random.default_rng(0)
    y = np.repeat([0, 1, 2], 40)
    X = np.column_stack([rng.normal(size=120), y + rng.normal(0, 0.5, 120), np.ones(120), y + rng.normal(0, 2, 120)])
    X[::7, 1] = np.nan
    select = TopColumns(k=2).fit(X, y)
    assert select.get_support().tolist() == [False, True, False, True]
    assert select.scores_[2] == -np.inf  # a constant column has no F-statistic
    assert TopColumns(k=10).fit(X, y).get_support().all()
    reg = TopColumns(k=1, task="regression").fit(X[:, [0, 3]], y.astype(float))
    assert reg.get_support().tolist() == [False, True]
