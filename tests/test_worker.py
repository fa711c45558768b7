"""Scale-out: `automl worker` processes join a fit's search through the PostgreSQL this machine starts.

The PostgreSQL on 127.0.0.1 (trust auth, database ``test``) is real; so are the worker processes (the CLI,
as users start it), the SIGKILL, and the MLflow server. Each test uses its own study names and removes them.
"""

import os
import signal
import socket
import subprocess
import sys
import time
import uuid

import mlflow
import numpy as np
import optuna
import pandas as pd
import pytest
from optuna.trial import TrialState

from automl import AutoClassifier
from automl.exceptions import DataValidationError
from automl.search import SEARCH_ATTR, SharedSearch, open_storage, run_worker, wait_for_running, worker_alive

POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"  # bare: open_storage picks psycopg 3
# A short heartbeat so that a killed worker's trial is failed within seconds, not the default 30.
HEARTBEAT = dict(heartbeat_interval=1, grace_period=4)
FIT = dict(time_budget=None, cv=3, random_state=0, verbose=0, leak_check="off", n_jobs=1)


@pytest.fixture
def postgres():
    """``new_study_name()`` -> a unique name; every study made through it is deleted afterwards."""
    names = []

    def new_study_name(prefix="t"):
        names.append(f"{prefix}-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        return names[-1]

    yield new_study_name
    storage = open_storage(POSTGRES_URL, None)
    for name in names:
        for attempt in range(3):  # a worker of a failed test may still be writing its last trial
            try:
                optuna.delete_study(study_name=name, storage=storage)
                break
            except KeyError:
                break
            except Exception:
                time.sleep(2.0)
    storage.remove_session()
    storage.engine.dispose()


@pytest.fixture(scope="module")
def credit_csv(shared_data):
    return shared_data / "credit-g.csv"


def _credit(path):
    frame = pd.read_csv(path)  # as `automl worker` reads it
    return frame.drop(columns=["class"]), frame["class"]


def start_worker(csv, study, log, *extra):
    command = [sys.executable, "-m", "automl.cli", "worker", "--storage", POSTGRES_URL, "--study", study,
               "--data", str(csv), "--wait", "120", *extra]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(command, stdout=open(log, "wb"), stderr=subprocess.STDOUT, env=env)


def finish(workers, timeout=120):
    outputs = []
    for process, log in workers:
        process.wait(timeout=timeout)
        outputs.append((process.returncode, open(log).read()))
    return outputs


def _rdb(**heartbeat):
    return open_storage(POSTGRES_URL, None, heartbeat=(heartbeat["heartbeat_interval"], heartbeat["grace_period"]))


def _trials(study_name, states=None):
    return optuna.load_study(study_name=study_name, storage=_rdb(**HEARTBEAT)).get_trials(states=states)


def _pid_of(trial):
    assert "worker" in trial.user_attrs, f"trial {trial.number} ({trial.state.name}) is not signed: {trial}"
    return int(trial.user_attrs["worker"].rpartition(":")[2])


def test_three_workers_share_one_search_and_the_ensemble_sees_all_their_trials(
        postgres, credit_csv, mlflow_server, tmp_path):
    study = postgres("three")
    workers = [(start_worker(credit_csv, study, tmp_path / f"w{i}.log"), tmp_path / f"w{i}.log") for i in range(3)]
    X, y = _credit(credit_csv)
    model = AutoClassifier(**FIT, n_trials=30, include=["logreg", "hgb", "rf"], storage=_rdb(**HEARTBEAT),
                           study_name=study, oof_dir=str(tmp_path / "oof"), tracking_uri=mlflow_server,
                           experiment_name=f"workers-{study}").fit(X, y)
    outputs = finish(workers)
    assert [code for code, _ in outputs] == [0, 0, 0], outputs

    trials = _trials(study)
    # The cap is checked by each process after its trial (Optuna's MaxTrialsCallback): up to one more per worker.
    assert 30 <= len(trials) <= 33 and all(t.state.is_finished() for t in trials)
    ran_by = {_pid_of(t) for t in trials}
    worker_pids = {process.pid for process, _ in workers}
    assert worker_pids <= ran_by, f"every worker ran trials: {ran_by} vs {worker_pids}"
    for (code, log), (process, _) in zip(outputs, workers):
        # The worker's own summary line counts what it ran.
        mine = [t for t in trials if _pid_of(t) == process.pid]
        assert f"worker {socket.gethostname()}:{process.pid} of study '{study}'" in log
        assert sum(int(n) for n in _counts(log).values()) == len(mine)

    complete = {t.number for t in trials if t.state == TrialState.COMPLETE}
    assert set(model.ensemble_candidates_) == complete  # the union of every worker's complete trials
    assert {_pid_of(t) for t in trials if t.number in complete} & worker_pids
    assert sorted(p.name for p in (tmp_path / "oof" / study).iterdir()) == sorted(
        f"trial_{n}.npy" for n in complete)
    assert set(model.leaderboard_["trial"]) == {t.number for t in trials}

    # MLflow: one parent run, a child run per finished trial from every process, tagged with its worker.
    client = mlflow.MlflowClient(mlflow_server)
    runs = client.search_runs([client.get_experiment_by_name(f"workers-{study}").experiment_id])
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == model.mlflow_run_id_]
    assert [r.info.run_id for r in parents] == [model.mlflow_run_id_]
    assert len(children) == len(trials)
    assert {int(r.data.tags["worker"].rpartition(":")[2]) for r in children} == ran_by


def _counts(log):
    line = [x for x in log.splitlines() if x.startswith("worker ")][-1]
    done = line.split(": ", 1)[1].rsplit(" in ", 1)[0]
    return {} if done == "no trials" else {part.split()[1]: part.split()[0] for part in done.split(", ")}


def test_a_worker_killed_mid_trial_leaves_it_failed_and_the_search_finishes(postgres, credit_csv, tmp_path,
                                                                            monkeypatch):
    study = postgres("kill")
    victim_log, other_log = tmp_path / "victim.log", tmp_path / "other.log"
    victim = start_worker(credit_csv, study, victim_log)
    other = start_worker(credit_csv, study, other_log)
    X, y = _credit(credit_csv)
    killed = {}

    class KillVictimMidTrial:
        """Runs in the fit after each of its own trials: SIGKILLs the victim once it is inside a trial."""

        def __call__(self, study_, trial):
            if killed:
                return
            for t in study_.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
                if t.user_attrs.get("worker", "").endswith(f":{victim.pid}"):
                    # Freeze it, then make sure the trial did not end in between: then it dies mid-trial.
                    os.kill(victim.pid, signal.SIGSTOP)
                    if {x.number for x in _trials(study, states=(TrialState.RUNNING,))} & {t.number}:
                        os.kill(victim.pid, signal.SIGKILL)
                        killed.update(number=t.number, at=time.time())
                    else:
                        os.kill(victim.pid, signal.SIGCONT)
                    return

    estimator = AutoClassifier(**FIT, n_trials=24, include=["rf"], storage=_rdb(**HEARTBEAT), study_name=study,
                               oof_dir=str(tmp_path / "oof"), tracking=False)
    # The fit runs its trials in this process (n_jobs=1, no clock): its trial-logger slot runs our callback.
    monkeypatch.setattr("automl.tracking.runs.NullTracker.trial_logger", lambda self: KillVictimMidTrial())
    model = estimator.set_params(verbose=1).fit(X, y)
    victim.wait(timeout=10)
    [(code, log)] = finish([(other, other_log)])

    assert killed, "the victim was never seen inside a trial"
    assert victim.returncode == -signal.SIGKILL and code == 0, log
    trials = {t.number: t for t in _trials(study)}
    dead = trials[killed["number"]]
    assert dead.state == TrialState.FAIL  # failed by its missing heartbeat, not left RUNNING
    assert "worker" in model.leaderboard_.set_index("trial").loc[killed["number"], "note"]
    assert 24 <= len(trials) <= 26 and not [t for t in trials.values() if t.state == TrialState.RUNNING]
    # The other worker kept going after the kill, and nothing finished was lost: every complete
    # trial, the victim's earlier ones included, is an ensemble candidate.
    assert [t for t in trials.values() if _pid_of(t) == other.pid and t.datetime_start.timestamp() > killed["at"]]
    complete = {n for n, t in trials.items() if t.state == TrialState.COMPLETE}
    assert set(model.ensemble_candidates_) == complete
    # The dead trial was failed by its stale heartbeat while the search went on, not waited for at its
    # end: a trial ended after it was failed (an order of events, which holds at any machine speed).
    assert [t for t in trials.values() if t.number != dead.number and t.datetime_complete > dead.datetime_complete]


def test_two_studies_side_by_side_do_not_mix(postgres, credit_csv, tmp_path, shared_data):
    first, second = postgres("a"), postgres("b")
    titanic = shared_data / "titanic.csv"
    workers = [(start_worker(credit_csv, first, tmp_path / "a.log"), tmp_path / "a.log"),
               (start_worker(titanic, second, tmp_path / "b.log"), tmp_path / "b.log")]
    other_fit = subprocess.Popen(
        [sys.executable, "-m", "automl.cli", "fit", str(titanic), "--target", "Survived", "--storage", POSTGRES_URL,
         "--study", second, "--time-budget", "none", "--n-trials", "12", "--cv", "3", "--include", "logreg,hgb",
         "--random-state", "1", "--no-tracking", "--oof-dir", str(tmp_path / "oof"), "--out", str(tmp_path / "m2")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ, "OMP_NUM_THREADS": "1"})
    X, y = _credit(credit_csv)
    model = AutoClassifier(**FIT, n_trials=12, include=["logreg", "hgb"], storage=POSTGRES_URL, study_name=first,
                           oof_dir=str(tmp_path / "oof"), tracking=False).fit(X, y)
    out, _ = other_fit.communicate(timeout=180)
    assert other_fit.returncode == 0, out.decode()
    assert [code for code, _ in finish(workers)] == [0, 0]

    a, b = _trials(first), _trials(second)
    assert 12 <= len(a) <= 13 and 12 <= len(b) <= 13
    key_a, key_b = ({t.user_attrs["search_key"] for t in trials} for trials in (a, b))
    assert len(key_a) == 1 and len(key_b) == 1 and key_a != key_b
    assert workers[0][0].pid not in {_pid_of(t) for t in b} and workers[1][0].pid not in {_pid_of(t) for t in a}
    # Each fit's ensemble drew on its own study's trials, from its own OOF folder.
    assert set(model.ensemble_candidates_) == {t.number for t in a if t.state == TrialState.COMPLETE}
    for name, trials in ((first, a), (second, b)):
        files = {p.name for p in (tmp_path / "oof" / name).iterdir()}
        assert files == {f"trial_{t.number}.npy" for t in trials if t.state == TrialState.COMPLETE}
    assert np.load(tmp_path / "oof" / second / next(iter(files))).shape[0] == 891


def test_a_worker_refuses_other_data_and_a_closed_search(postgres, credit_csv, tmp_path):
    study = postgres("refuse")
    X, y = _credit(credit_csv)
    storage = _rdb(**HEARTBEAT)
    AutoClassifier(**FIT, n_trials=2, include=["logreg"], storage=storage, study_name=study,
                   tracking=False).fit(X, y)
    published = SharedSearch.read(storage, study)
    assert published.state == "closed" and published.heartbeat == [1, 4] and published.target == "class"
    with pytest.raises(TimeoutError, match="is closed"):
        run_worker(X, y, storage=storage, study_name=study, wait=0)

    # Reopen it as if the fit were still running: the data must then be the fit's own.
    study_object = optuna.load_study(study_name=study, storage=storage)
    study_object.set_user_attr(SEARCH_ATTR, {**study_object.user_attrs[SEARCH_ATTR], "state": "running"})
    with pytest.raises(DataValidationError, match="999 rows with fingerprint .* against 1000 rows"):
        run_worker(X.iloc[1:], y.iloc[1:], storage=storage, study_name=study, wait=0)
    with pytest.raises(ValueError, match="OOF folder .* is not a writable folder on this machine"):
        run_worker(X, y, storage=storage, study_name=study, wait=0)  # the fit's temporary folder is gone
    with pytest.raises(TimeoutError, match="No search was published in study 'nothing-here'"):
        run_worker(X, y, storage=storage, study_name="nothing-here", wait=0)


def test_a_dead_local_worker_is_found_by_its_process_on_a_journal(tmp_path):
    # A journal file has no heartbeat: a trial of a dead process of this machine is failed by its pid.
    storage = open_storage(str(tmp_path / "study.journal"), tmp_path)
    study = optuna.create_study(storage=storage, study_name="s")
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    for pid in (dead.pid, os.getpid()):
        trial = study.ask()
        trial.set_user_attr("worker", f"{socket.gethostname()}:{pid}")
    assert not worker_alive(f"{socket.gethostname()}:{dead.pid}") and worker_alive("elsewhere:1")
    failed = wait_for_running(storage, "s", until=time.time() + 2)
    states = [t.state for t in study.get_trials()]
    assert failed == 2 and states == [TrialState.FAIL, TrialState.FAIL]  # the dead one, then the live one at `until`
    assert study.get_trials()[0].user_attrs["error"] == f"worker {socket.gethostname()}:{dead.pid} died"
    assert study.get_trials()[1].user_attrs["error"] == "stopped at the time budget"


def test_the_fits_oof_dir_means_the_same_to_a_worker_and_a_second_fit_is_refused(postgres, credit_csv, tmp_path):
    # Given the fit's own --oof-dir, a worker writes where the fit reads (the study's subfolder).
    study = postgres("oof")
    log = tmp_path / "w.log"
    worker = start_worker(credit_csv, study, log, "--oof-dir", str(tmp_path / "oof"))
    X, y = _credit(credit_csv)
    storage = _rdb(**HEARTBEAT)
    # No pruning: every trial the worker runs completes and writes its OOF file (with pruning, a CI
    # run once saw all 5 of the worker's trials pruned, and nothing to check).
    model = AutoClassifier(**FIT, n_trials=16, include=["logreg", "hgb"], storage=storage, study_name=study,
                           oof_dir=str(tmp_path / "oof"), tracking=False, pruning=False).fit(X, y)
    [(code, out)] = finish([(worker, log)])
    trials = _trials(study)
    theirs = {t.number for t in trials if t.state == TrialState.COMPLETE and _pid_of(t) == worker.pid}
    assert code == 0 and theirs, out
    assert theirs <= set(model.ensemble_candidates_)
    assert not [p for p in (tmp_path / "oof").iterdir() if p.is_file()]  # nothing beside the study's folder

    # A second fit while the first one's search is open and its fit alive is refused before any trial.
    shared = SharedSearch.read(storage, study)
    study_object = optuna.load_study(study_name=study, storage=storage)
    study_object.set_user_attr(SEARCH_ATTR, {**study_object.user_attrs[SEARCH_ATTR], "state": "running"})
    study_object.set_user_attr("automl_search_beat", time.time())
    with pytest.raises(RuntimeError, match=f"has a running search, by the fit {shared.fit}"):
        AutoClassifier(**FIT, n_trials=2, include=["logreg", "hgb"], storage=storage, study_name=study,
                       tracking=False).fit(X, y)
    before = len(_trials(study))
    assert 16 <= before <= 17
    # A search whose fit went silent (killed) is not joined, and does not block a new fit.
    study_object.set_user_attr("automl_search_beat", time.time() - 3600)
    with pytest.raises(TimeoutError, match="has not been seen since .*: it was killed"):
        run_worker(X, y, storage=storage, study_name=study, wait=0)
    AutoClassifier(**FIT, n_trials=2, include=["logreg", "hgb"], storage=storage, study_name=study,
                   tracking=False).fit(X, y)
    assert len(_trials(study)) == before + 2


def test_sigterm_stops_a_worker_and_its_processes_and_marks_its_trial(postgres, credit_csv, tmp_path):
    study = postgres("term")
    X, y = _credit(credit_csv)
    log = tmp_path / "w.log"
    # With --time-budget the worker runs its trials in a pool process: SIGTERM must reach that one too.
    worker = start_worker(credit_csv, study, log, "--time-budget", "120")
    fit = subprocess.Popen(
        [sys.executable, "-m", "automl.cli", "fit", str(credit_csv), "--target", "class", "--storage", POSTGRES_URL,
         "--study", study, "--time-budget", "none", "--n-trials", "400", "--cv", "3", "--include", "rf",
         "--random-state", "0", "--no-tracking", "--out", str(tmp_path / "m")],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        deadline = time.time() + 90
        running = []
        while not running and time.time() < deadline:
            time.sleep(0.2)
            trials = _trials(study, states=(TrialState.RUNNING,)) if SharedSearch.read(_rdb(**HEARTBEAT), study) else []
            # The worker's pool process (a trial just asked for is signed a moment later).
            running = [t for t in trials if "worker" in t.user_attrs and _pid_of(t) not in (fit.pid, worker.pid)]
        assert running, "the worker never ran a trial"
        pool_pid = _pid_of(running[0])
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
        assert worker.returncode == 130, open(log).read()
        assert "worker interrupted" in open(log).read()
        time.sleep(1.0)
        assert not worker_alive(f"{socket.gethostname()}:{pool_pid}")  # no process left behind
        mine = [t for t in _trials(study) if _pid_of(t) == pool_pid]
        assert mine and all(t.state != TrialState.RUNNING for t in mine)
        assert [t.user_attrs.get("error") for t in mine if t.state == TrialState.FAIL] == ["interrupted"]
    finally:
        for process in (fit, worker):  # also when the test failed before the SIGTERM
            process.kill()
            process.wait()


def test_storage_spellings_and_fast_cli_refusals(tmp_path, credit_csv, caplog, monkeypatch):
    from automl.cli import main

    with pytest.raises(ValueError, match="write it as the URL 'sqlite:///s.db'"):
        open_storage("s.db", tmp_path)
    postgres_style = open_storage("postgres://postgres@127.0.0.1:5432/test", tmp_path)
    assert postgres_style.url == "postgresql+psycopg://postgres@127.0.0.1:5432/test"
    waits = []  # refused before waiting for a search (up to 300 s), whatever the machine's speed
    monkeypatch.setattr(SharedSearch, "wait_for", classmethod(lambda cls, *args: waits.append(args)))
    assert main(["worker", "--storage", POSTGRES_URL, "--study", "s", "--data", str(tmp_path / "nope.csv")]) == 1
    assert main(["worker", "--storage", f"sqlite:///{tmp_path / 'typo.db'}", "--study", "s",
                 "--data", str(credit_csv)]) == 1
    assert waits == [] and not (tmp_path / "typo.db").exists()
    err = caplog.text
    assert "nope.csv: no such file" in err and "typo.db: no such file on this machine" in err


def test_a_worker_with_another_target_is_told_the_fits(postgres, credit_csv):
    study = postgres("target")
    X, y = _credit(credit_csv)
    storage = _rdb(**HEARTBEAT)
    AutoClassifier(**FIT, n_trials=1, include=["logreg"], storage=storage, study_name=study, tracking=False).fit(X, y)
    study_object = optuna.load_study(study_name=study, storage=storage)
    study_object.set_user_attr(SEARCH_ATTR, {**study_object.user_attrs[SEARCH_ATTR], "state": "running"})
    study_object.set_user_attr("automl_search_beat", time.time())
    frame = pd.read_csv(credit_csv)
    with pytest.raises(DataValidationError, match="target is 'age'; the fit of study .* searches on target 'class'"):
        run_worker(frame.drop(columns=["age"]), frame["age"], storage=storage, study_name=study, wait=0)


def test_a_journal_is_refused_to_workers_of_other_machines_and_bad_n_jobs(tmp_path, credit_csv):
    X, y = _credit(credit_csv)
    journal = str(tmp_path / "study.journal")
    AutoClassifier(**FIT, n_trials=1, include=["logreg"], storage=journal, study_name="j", tracking=False).fit(X, y)
    storage = open_storage(journal, tmp_path)
    study = optuna.load_study(study_name="j", storage=storage)
    # As if the fit ran, alive, on another machine: a journal has no heartbeat to find its dead workers.
    study.set_user_attr(SEARCH_ATTR, {**study.user_attrs[SEARCH_ATTR], "state": "running", "fit": "elsewhere:1"})
    study.set_user_attr("automl_search_beat", time.time())
    with pytest.raises(ValueError, match="runs on elsewhere and its storage has no heartbeat"):
        run_worker(X, y, storage=journal, study_name="j", wait=0)
    with pytest.raises(ValueError, match="n_jobs must be an int other than 0"):
        run_worker(X, y, storage=journal, study_name="j", wait=0, n_jobs=0)
    from automl.cli import main

    with pytest.raises(SystemExit) as exited:  # argparse: exit code 2
        main(["worker", "--storage", journal, "--study", "j", "--data", str(credit_csv), "--n-jobs", "0"])
    assert exited.value.code == 2


def test_continuing_a_study_without_random_state_warns_of_other_folds(tmp_path, credit_csv):
    X, y = _credit(credit_csv)
    params = dict(FIT, random_state=None, n_trials=2, include=["logreg"], storage=str(tmp_path / "s.journal"),
                  tracking=False)
    with pytest.warns(UserWarning, match="holds 2 trials scored on other folds") as caught:
        AutoClassifier(**params).fit(X, y)
        AutoClassifier(**params).fit(X, y)
    assert sum("scored on other folds" in str(w.message) for w in caught) == 1  # the first fit had none
    with pytest.raises(ValueError, match="looks like a SQLite file"):  # refused before anything is made
        AutoClassifier(**dict(params, storage=str(tmp_path / "x.db"))).fit(X, y)
    assert not (tmp_path / "x.db").exists()


def test_a_worker_given_the_fits_groups_joins_a_grouped_search(postgres, credit_csv, tmp_path):
    study = postgres("groups")
    frame = pd.read_csv(credit_csv).assign(household=lambda f: [f"h{i // 4}" for i in range(len(f))])
    csv = tmp_path / "credit-households.csv"
    frame.to_csv(csv, index=False)
    refused = start_worker(csv, study, tmp_path / "refused.log")  # no --groups: its folds would differ
    joined = start_worker(csv, study, tmp_path / "joined.log", "--groups", "household")
    X, y = frame.drop(columns=["class", "household"]), frame["class"]
    model = AutoClassifier(**FIT, n_trials=12, include=["logreg", "hgb"], storage=_rdb(**HEARTBEAT),
                           study_name=study, oof_dir=str(tmp_path / "oof"), tracking=False)
    model.fit(X, y, groups=frame["household"])
    (code_refused, log_refused), (code_joined, log_joined) = finish([(refused, tmp_path / "refused.log"),
                                                                     (joined, tmp_path / "joined.log")])
    assert code_refused == 1 and "give this worker the same groups (automl worker --groups COLUMN)" in log_refused
    assert code_joined == 0, log_joined
    trials = _trials(study, states=[TrialState.COMPLETE])
    by_worker = {t.number for t in trials if _pid_of(t) == joined.pid}
    assert by_worker and by_worker <= set(model.ensemble_candidates_)
    assert model.n_groups_ == 250  # (FIT turns the leak check, and so its group check, off)
