"""Tests of automl.space.components: a conformance suite run on every spec of the registry, and the registry rules.

The conformance test samples each family's knobs with a real Optuna trial on credit-approval (690 rows,
missing values in numeric and categorical columns, nine categorical columns), builds the pipeline with
``search_space.suggest_pipeline``, fits it and checks the probabilities.
"""

import dataclasses
import re

import numpy as np
import optuna
import pandas as pd
import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.samplers import RandomSampler
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.naive_bayes import GaussianNB

from automl.data import check_training_data
from automl.search import CVObjective, get_metric
from automl.space import DEFAULT_COMPONENTS, ComponentSpec, resolve_components, suggest_pipeline

REGISTRY = resolve_components()
# Knobs that may be sampled on a linear scale: bounded fractions and small counts.
LINEAR_KNOBS = {"max_features", "subsample", "colsample_bytree", "max_depth", "depth", "n_layers"}
# Multiplicative knobs: a log scale is required wherever they appear.
LOG_KNOBS = {
    "learning_rate", "learning_rate_init", "C", "gamma_scale", "alpha", "n_neighbors", "min_samples_leaf",
    "n_estimators", "l2_regularization", "reg_lambda", "max_leaf_nodes", "num_leaves",
    "min_child_samples", "min_child_weight", "width", "min_frequency", "iterations", "l2_leaf_reg",
}
ROOT_KNOBS = {"model", "encoder", "scaler", "imputer.numeric", "imputer.numeric.add_indicator",
              "imputer.categorical"}


@pytest.fixture(scope="module")
def credit(shared_data):
    frame = pd.read_csv(shared_data / "credit-approval.csv")
    X, y, _, profile = check_training_data(frame.drop(columns="class"), frame["class"], n_folds=3)
    return X, y, profile


def sample(spec_list, profile, seed, fixed=None):
    """Ask a RandomSampler study for one pipeline; return (trial, pipeline)."""
    study = optuna.create_study(sampler=RandomSampler(seed=seed))
    if fixed:
        study.enqueue_trial(fixed)
    trial = study.ask()
    return trial, suggest_pipeline(trial, profile, spec_list, random_state=0)


def spec_named(key, *, suggest=None, build=None, name=None, **kwargs):
    return ComponentSpec(
        key, name or key, suggest or (lambda trial, profile, prefix: {}),
        build or (lambda params, random_state: GaussianNB()), **kwargs,
    )


# ---- conformance, over every spec of the registry ------------------------------------------------
# A sampled configuration may stop before converging; that is the search's business.
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("encoder", ["onehot", "ordinal", "target"])
@pytest.mark.parametrize("spec", REGISTRY, ids=[s.key for s in REGISTRY])
def test_conformance_fit_predict_proba(spec, encoder, credit):
    X, y, profile = credit
    # Small sizes and a standard scaler keep the suite fast; every other knob is sampled at random.
    sizes = {"n_estimators": 50, "max_leaf_nodes": 8, "num_leaves": 8, "width": 32, "iterations": 50}
    fixed = {"encoder": encoder, "scaler": "standard",
             **{f"model.{spec.key}.{name}": value for name, value in sizes.items()}}
    trial, pipeline = sample([spec], profile, seed=len(spec.key) + len(encoder), fixed=fixed)
    train, test = np.arange(0, len(y), 2), np.arange(1, len(y), 2)
    pipeline.fit(X.iloc[train], y[train])
    proba = pipeline.predict_proba(X.iloc[test])
    assert proba.shape == (len(test), 2)
    assert np.isfinite(proba).all()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-6)
    assert (proba >= 0).all()
    np.testing.assert_array_equal(pipeline.classes_, [0, 1])
    # The probabilities depend on the row (a random configuration may learn little, but not nothing).
    assert proba[:, 1].std() > 0
    assert trial.params["model"] == spec.key
    assert trial.params["encoder"] == encoder


@pytest.mark.parametrize("spec", REGISTRY, ids=[s.key for s in REGISTRY])
def test_conformance_parameter_names(spec, credit):
    _, _, profile = credit
    for seed in range(3):
        trial, _ = sample([spec], profile, seed)
        model_knobs = [n for n in trial.params if n.startswith("model.")]
        assert model_knobs, f"{spec.key} suggests no hyperparameter"
        for name in trial.params:
            assert name in ROOT_KNOBS or re.fullmatch(rf"model\.{spec.key}\.\w+", name) or (
                name == "encoder.onehot.min_frequency"
            ), name


@pytest.mark.parametrize("spec", REGISTRY, ids=[s.key for s in REGISTRY])
def test_conformance_log_scale_for_multiplicative_knobs(spec, credit):
    _, _, profile = credit
    trial, _ = sample([spec], profile, seed=0, fixed={"encoder": "onehot"})
    numeric = {n: d for n, d in trial.distributions.items()
               if isinstance(d, (IntDistribution, FloatDistribution))}
    assert numeric
    for name, distribution in numeric.items():
        knob = name.rsplit(".", 1)[-1]
        if knob in LOG_KNOBS:
            assert distribution.log, f"{name} must be sampled on a log scale"
        else:
            assert knob in LINEAR_KNOBS, f"{name} is neither a known log nor linear knob"
        assert distribution.low < distribution.high, name
    for name, distribution in trial.distributions.items():
        if isinstance(distribution, CategoricalDistribution):
            # Typed values, never the strings "None", "True" or "False".
            strings = {c for c in distribution.choices if isinstance(c, str)}
            assert not {"None", "True", "False"} & strings, name


def test_log_knobs_cover_known_multiplicative_parameters(credit):
    _, _, profile = credit
    seen = {}
    for spec in REGISTRY:
        trial, _ = sample([spec], profile, seed=1, fixed={"encoder": "onehot"})
        seen.update(trial.distributions)
    expected_log = ["model.hgb.learning_rate", "model.logreg.C", "model.svc.C", "model.mlp.alpha",
                    "model.knn.n_neighbors", "model.rf.min_samples_leaf", "model.hgb.min_samples_leaf",
                    "model.rf.n_estimators", "model.svc.gamma_scale", "encoder.onehot.min_frequency"]
    for name in expected_log:
        assert seen[name].log, name


@pytest.mark.parametrize("spec", REGISTRY, ids=[s.key for s in REGISTRY])
def test_conformance_spec_fields(spec):
    assert re.fullmatch(r"[a-z][a-z0-9_]*", spec.key)
    assert spec.name
    assert spec.is_available()
    for config in spec.default_params:
        assert config["model"] == spec.key
        assert all(k == "model" or k.startswith(f"model.{spec.key}.") for k in config)


def test_registry_order_and_keys():
    assert [s.key for s in REGISTRY] == ["hgb", "lgbm", "catboost", "rf", "et", "logreg", "xgb", "knn", "mlp", "svc"]
    assert len({s.key for s in DEFAULT_COMPONENTS}) == len(DEFAULT_COMPONENTS)


# ---- the registry's rules --------------------------------------------------------------------------
def test_duplicate_key_raises_naming_both():
    mine = spec_named("rf", name="MyForest")
    with pytest.raises(ValueError, match="Duplicate component key 'rf'") as info:
        resolve_components(extra=[mine])
    assert "'RandomForest'" in str(info.value) and "'MyForest'" in str(info.value)


def test_duplicate_key_among_extras_raises():
    with pytest.raises(ValueError, match="'First' and 'Second'"):
        resolve_components(extra=[spec_named("nb", name="First"), spec_named("nb", name="Second")])


def test_unknown_include_key_lists_valid_keys():
    with pytest.raises(ValueError, match=r"Unknown component key\(s\) \['forest'\]") as info:
        resolve_components(include=["rf", "forest"])
    for spec in REGISTRY:
        assert repr(spec.key) in str(info.value)


def test_include_keeps_registry_order():
    assert [s.key for s in resolve_components(include=["svc", "logreg", "hgb"])] == ["hgb", "logreg", "svc"]


def test_missing_package_is_named():
    ghost = spec_named("ghost", requires="a_package_that_is_not_installed")
    assert [s.key for s in resolve_components(extra=[ghost])][-1] != "ghost"
    with pytest.raises(ValueError, match="a_package_that_is_not_installed"):
        resolve_components(include=["ghost"], extra=[ghost])


@pytest.mark.parametrize("n_samples, svc_offered", [(4_999, True), (5_000, True), (5_001, False)])
def test_max_rows_filters_svc(credit, n_samples, svc_offered):
    profile = dataclasses.replace(credit[2], n_samples=n_samples)
    keys = [s.key for s in resolve_components(profile=profile)]
    assert ("svc" in keys) == svc_offered
    assert "knn" in keys and "mlp" in keys


def test_max_rows_filters_knn_and_mlp(credit):
    keys = [s.key for s in resolve_components(profile=dataclasses.replace(credit[2], n_samples=60_000))]
    assert "knn" not in keys and "svc" not in keys and "mlp" in keys
    keys = [s.key for s in resolve_components(profile=dataclasses.replace(credit[2], n_samples=200_000))]
    assert keys == ["hgb", "lgbm", "catboost", "rf", "et", "logreg", "xgb"]


def test_nothing_left_raises(credit):
    profile = dataclasses.replace(credit[2], n_samples=10_000)
    with pytest.raises(ValueError, match="No model family is left"):
        resolve_components(include=["svc"], profile=profile)


def test_knn_neighbourhood_bound_follows_the_data(credit):
    profile = dataclasses.replace(credit[2], n_samples=150)
    trial, _ = sample(resolve_components(include=["knn"]), profile, seed=0)
    assert trial.distributions["model.knn.n_neighbors"].high == 15


# ---- a user family is searchable ---------------------------------------------------------------
def _suggest_nb(trial, profile, prefix):
    return {"var_smoothing": trial.suggest_float(f"{prefix}.var_smoothing", 1e-12, 1e-3, log=True)}


def _build_nb(params, random_state):
    return GaussianNB(**params)


GAUSSIAN_NB = ComponentSpec("gnb", "GaussianNB", _suggest_nb, _build_nb)


def test_user_spec_is_searchable(credit, tmp_path):
    X, y, profile = credit
    specs = resolve_components(include=["gnb", "knn"], extra=[GAUSSIAN_NB], profile=profile)
    assert [s.key for s in specs] == ["knn", "gnb"]
    folds = [(np.arange(len(y))[np.arange(len(y)) % 3 != k], np.arange(len(y))[np.arange(len(y)) % 3 == k])
             for k in range(3)]
    objective = CVObjective(X, y, folds, profile, specs, get_metric("roc_auc", 2), tmp_path, random_state=0)
    study = optuna.create_study(direction="maximize", sampler=RandomSampler(seed=0))
    study.enqueue_trial({"model": "gnb", "encoder": "onehot"})
    study.optimize(objective, n_trials=4)
    nb_trials = [t for t in study.trials if t.params["model"] == "gnb"]
    assert nb_trials
    for trial in nb_trials:
        assert trial.state == optuna.trial.TrialState.COMPLETE
        assert 1e-12 <= trial.params["model.gnb.var_smoothing"] <= 1e-3
        assert trial.distributions["model.gnb.var_smoothing"].log
        assert "scaler" not in trial.params  # needs_scaling defaults to False
        assert "imputer.numeric" in trial.params  # handles_missing defaults to False
        assert 0.6 < trial.value <= 1.0
        assert (tmp_path / f"trial_{trial.number}.npy").exists()


class _Doubler(ClassifierMixin, BaseEstimator):
    """A spec's build may return any classifier; this one is GaussianNB under another name."""

    def fit(self, X, y):
        self.model_ = GaussianNB().fit(X, y)
        self.classes_ = self.model_.classes_
        return self

    def predict_proba(self, X):
        return self.model_.predict_proba(X)


def test_user_spec_flags_shape_the_pipeline(credit):
    _, _, profile = credit
    spec = ComponentSpec("dbl", "Doubler", lambda t, p, prefix: {}, lambda params, rs: _Doubler(),
                         needs_scaling=True, handles_missing=True)
    trial, pipeline = sample([spec], profile, seed=0, fixed={"encoder": "target"})
    assert "scaler" in trial.params
    assert not any(name.startswith("imputer") for name in trial.params)
    assert isinstance(pipeline.named_steps["model"], _Doubler)


def test_coupled_svc_beats_one_vs_rest_calibration_on_multiclass(shared_data):
    # Why CoupledSVC exists: on vehicle (4 classes) libsvm's pairwise coupling gives far better
    # probabilities than the one-vs-rest sigmoids scikit-learn 1.9 offers as its replacement.
    import warnings

    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.model_selection import StratifiedKFold, cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    from automl.space.components import CoupledSVC

    frame = pd.read_csv(shared_data / "vehicle.csv")
    X, y = frame.drop(columns="Class"), frame["Class"]
    folds = StratifiedKFold(5, shuffle=True, random_state=0)

    def log_loss(model):
        return -cross_val_score(make_pipeline(StandardScaler(), model), X, y, cv=folds,
                                scoring="neg_log_loss").mean()

    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # the deprecation stays silenced
        coupled = log_loss(CoupledSVC(C=10.0, random_state=0))
    one_vs_rest = log_loss(CalibratedClassifierCV(SVC(C=10.0), ensemble=False))
    assert coupled < one_vs_rest - 0.05, (coupled, one_vs_rest)
    assert clone(CoupledSVC(C=3.0)).get_params() == {"C": 3.0, "gamma": "scale", "random_state": None}


def test_portfolio_boosting_stays_finite_on_rare_classes(shared_data):
    # 6,000 rows of kddcup99: 16 classes, 9 of them with 1 to 23 rows. Without an L2 penalty a rare
    # class's near-zero hessians blow up HGB's leaf values (a held-out log loss of 1.50 at 1e-8).
    from sklearn.metrics import log_loss

    from automl.data import check_prediction_data
    from automl.exceptions import DataRepairWarning
    from automl.space import portfolio, rebuild

    frame = pd.read_csv(shared_data / "large" / "kddcup99.csv.gz").sample(6000, random_state=0)
    train, test = frame.iloc[:4500], frame.iloc[4500:]
    X, y, classes, profile = check_training_data(train.drop(columns="label"), train["label"], n_folds=5)
    test = test[test["label"].isin(classes)]
    with pytest.warns(DataRepairWarning, match="unseen in training"):  # services of no training row
        X_test = check_prediction_data(test.drop(columns="label"), profile)
    y_test = np.searchsorted(classes, test["label"])
    specs = resolve_components(include=["hgb", "lgbm"], profile=profile)

    def held_out_log_loss(params):
        proba = rebuild(params, profile, specs, random_state=0).fit(X, y).predict_proba(X_test)
        return log_loss(y_test, proba, labels=range(len(classes)))

    prior = np.bincount(y, minlength=len(classes)) / len(y)
    constant = log_loss(y_test, np.tile(prior, (len(y_test), 1)), labels=range(len(classes)))
    configs = portfolio(specs)
    assert [c["model"] for c in configs] == ["hgb", "lgbm", "hgb"]
    losses = [held_out_log_loss(c) for c in configs]
    assert max(losses) < 0.03 < constant / 10, (losses, constant)
    unpenalized = {**configs[0], "model.hgb.l2_regularization": 1e-8}
    assert held_out_log_loss(unpenalized) > 10 * max(losses)  # what the penalty is for


# ---- LightGBM stops early on large data (automl.space.boosting) ---------------------------------------
@pytest.fixture(scope="module")
def bank_sample(load_shared):
    """12,000 rows of bank-marketing-additional: above BOOSTING_EARLY_STOPPING_MIN_ROWS."""
    X, y = load_shared("bank-marketing-additional.csv.gz", "y")
    rows = np.random.default_rng(0).choice(len(y), 12_000, replace=False)
    X, y, _, profile = check_training_data(X.iloc[rows], y.iloc[rows], n_folds=5)
    return X, y, profile


def test_lightgbm_stops_early_from_ten_thousand_rows(bank_sample, credit):
    from automl.space.boosting import STOPPING_ROUNDS, EarlyStoppingLGBMClassifier
    from automl.space.components import BOOSTING_EARLY_STOPPING_MIN_ROWS, MAX_BOOSTING_ROUNDS

    specs = resolve_components(include=["lgbm"])
    X, y, profile = bank_sample
    assert profile.n_samples >= BOOSTING_EARLY_STOPPING_MIN_ROWS > credit[2].n_samples
    trial = optuna.create_study(sampler=RandomSampler(seed=0)).ask()
    pipeline = suggest_pipeline(trial, profile, specs, random_state=0)
    model = pipeline.named_steps["model"]
    assert type(model) is EarlyStoppingLGBMClassifier and model.n_estimators == MAX_BOOSTING_ROUNDS
    assert "model.lgbm.n_estimators" not in trial.params  # a bound, not a knob
    # On 690 rows the count of trees is still searched.
    small = optuna.create_study(sampler=RandomSampler(seed=0)).ask()
    plain = suggest_pipeline(small, credit[2], specs, random_state=0).named_steps["model"]
    assert type(plain).__name__ == "LGBMClassifier" and plain.n_estimators == small.params["model.lgbm.n_estimators"]

    fitted = clone(pipeline.set_params(model__learning_rate=0.3)).fit(X, y)
    booster = fitted.named_steps["model"]
    # It stopped: the best round is well inside the bound, and the model keeps the trees up to it only.
    assert 1 <= booster.best_iteration_ < MAX_BOOSTING_ROUNDS - STOPPING_ROUNDS
    assert booster.n_estimators_ == booster.booster_.num_trees() == booster.best_iteration_
    proba = fitted.predict_proba(X.head(50))
    assert proba.shape == (50, 2) and np.allclose(proba.sum(axis=1), 1.0)


def test_inner_split_keeps_a_single_row_class_in_training():
    from automl.space.boosting import VALIDATION_FRACTION, inner_split

    y = np.array([0] * 900 + [1] * 99 + [2])
    train, validation = inner_split(y, seed=0, classification=True)
    assert sorted(np.concatenate([train, validation])) == list(range(len(y)))  # every row, once
    assert 999 in train and 999 not in validation
    assert len(validation) == round(VALIDATION_FRACTION * 999)
    assert np.bincount(y[validation]).tolist() == [90, 10]  # stratified
    again, _ = inner_split(y, seed=0, classification=True)
    assert np.array_equal(train, again)


def test_early_stopped_lightgbm_regressor(load_shared):
    from automl.space.boosting import EarlyStoppingLGBMRegressor

    X, y = load_shared("cpu_act.csv", "usr")
    model = EarlyStoppingLGBMRegressor(n_estimators=2000, learning_rate=0.3, random_state=0, n_jobs=1,
                                       verbose=-1).fit(X, y)
    assert 1 <= model.best_iteration_ < 2000
    assert np.sqrt(np.mean((model.predict(X) - y) ** 2)) < y.std() / 3  # it learnt: RMSE a third of the spread
