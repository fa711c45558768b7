"""Threads: how many each of several fits running at once may use, and a background thread that repeats an action."""

import os
import threading
from contextlib import contextmanager

import joblib


def resolve_n_jobs(n_jobs):
    """The number of fits ``n_jobs`` asks for, read as joblib reads it: -1 all cores, -2 all but one.

    Parameters
    ----------
    n_jobs : int
        At least 1, or negative: ``cpu_count + 1 + n_jobs`` (at least 1), joblib's rule
        (:func:`joblib.effective_n_jobs`), with :func:`joblib.cpu_count`, which honours a container's
        CPU quota.

    Returns
    -------
    n_jobs : int
        At least 1.

    Raises
    ------
    ValueError
        If ``n_jobs`` is 0 or not an int.
    """
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, int) or n_jobs == 0:
        raise ValueError(f"n_jobs must be an int other than 0 (-1: all cores); got {n_jobs!r}.")
    return n_jobs if n_jobs > 0 else max(joblib.cpu_count() + 1 + n_jobs, 1)


def threads_per_job(n_jobs):
    """Threads of each of ``n_jobs`` fits running at once: the cores shared out, or OMP_NUM_THREADS.

    Parameters
    ----------
    n_jobs : int
        Fits running at the same time (worker processes, or threads of one process), at least 1.

    Returns
    -------
    threads : int
        ``OMP_NUM_THREADS`` when the user set it to a positive integer (they know what else runs on the
        machine, e.g. ``automl worker`` processes of other fits); else ``os.cpu_count() // n_jobs``, at
        least 1.
    """
    told = os.environ.get("OMP_NUM_THREADS", "")
    if told.isdigit() and int(told) > 0:
        return int(told)
    return max(1, (os.cpu_count() or 1) // n_jobs)


@contextmanager
def repeating(action, seconds, name, first=False):
    """Call ``action()`` every ``seconds`` (and at once when ``first``) in a daemon thread while the block runs.

    The fit's sign of life in its study and its progress line use it; the thread is stopped and joined
    when the block ends, so no call outlives it.
    """
    stop = threading.Event()

    def run():
        if first:
            action()
        while not stop.wait(seconds):
            action()

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
