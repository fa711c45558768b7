"""What a fit prints: the progress line, the warnings that concern the user, the result; no dependency's noise.

Each fit runs in a child process, as a user's script would, so that what is printed at interpreter exit
(joblib's resource tracker on leaked memmaps or semaphores) is on the captured stderr too.
"""

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

# Two worker processes, an MLflow store, a family that always fails, a saved model: every source of
# noise a default fit has met (Optuna's failed-trial tracebacks, MLflow's pickle advice and store notes,
# joblib's leaked-object notes, convergence warnings of the refit members).
SCRIPT = textwrap.dedent("""
    import sys
    from sklearn.base import BaseEstimator, ClassifierMixin
    from automl import AutoClassifier
    from automl.datasets import load_dataset
    from automl.space import ComponentSpec

    class Broken(ClassifierMixin, BaseEstimator):
        def fit(self, X, y):
            raise RuntimeError("broken on purpose")

    folder, verbose = sys.argv[1], int(sys.argv[2])
    # Its default is enqueued with the others': at least one trial of it whatever the sampler does.
    broken = ComponentSpec("broken", "Broken", lambda trial, profile, prefix: {},
                           lambda params, random_state: Broken(), default_params=[{}])
    X, y = load_dataset("credit-g")
    model = AutoClassifier(time_budget=None, n_trials=12, n_jobs=2, random_state=0, verbose=verbose,
                           include=["logreg", "hgb", "broken"], components=[broken],
                           tracking_uri=f"sqlite:///{folder}/mlflow.db")
    model.fit(X, y)
    model.save(f"{folder}/model")
    states = model.leaderboard_["state"]
    print((states == "FAIL").sum(), (states == "COMPLETE").sum())
""")

NOISE = re.compile(
    r"Traceback|leaked|resource_tracker|skops|pickle|\[W \d|\bINFO\b|Warning: (?!\d+ of 12 trials failed)", re.IGNORECASE)


def _fit(tmp_path, verbose):
    script = tmp_path / "fit.py"  # a file, as a user's: a warning then shows its line of the script
    script.write_text(SCRIPT)
    child = subprocess.run([sys.executable, str(script), str(tmp_path), str(verbose)], capture_output=True,
                           text=True, timeout=600, cwd=tmp_path)
    assert child.returncode == 0, child.stderr[-3000:]
    failed, complete = map(int, child.stdout.split())
    return failed, complete, child.stderr.splitlines()


@pytest.fixture(scope="module")
def printed(tmp_path_factory):
    return {verbose: _fit(tmp_path_factory.mktemp(f"verbose{verbose}"), verbose) for verbose in (0, 1)}


def _warning_lines(lines, failed):
    """The failed-trials warning (and the line of the script it points at), with its count."""
    at = [i for i, line in enumerate(lines) if f"UserWarning: {failed} of 12 trials failed (broken x{failed}: " in line]
    assert len(at) == 1 and lines[at[0] + 1] == "  model.fit(X, y)", lines
    return lines[at[0]:at[0] + 2]


def test_a_quiet_fit_prints_only_the_failed_trials_warning(printed):
    failed, complete, lines = printed[0]
    assert failed >= 1 and complete >= 1
    assert lines == _warning_lines(lines, failed), lines


def test_a_default_fit_prints_progress_the_warning_and_the_result_without_noise(printed):
    failed, _, lines = printed[1]
    warning = _warning_lines(lines, failed)
    ours = [line for line in lines if line not in warning]
    assert [line for line in ours if not line.startswith("[automl] ")] == [], lines
    assert [line for line in lines if NOISE.search(line) and line not in warning] == []
    assert len(set(ours)) == len(ours), "a line printed twice"
    assert ours[0].startswith("[automl] trials 0 done")
    assert any(line.startswith("[automl] Trials: 12 (") and f"{failed} failed" in line for line in ours)
    assert ours[-1].startswith("[automl] Leak check: ")
