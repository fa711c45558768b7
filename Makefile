# The two commands of the README: `make demo` and `make test`. Both build the venv from nothing.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo test install clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $@

install: $(VENV)/.installed

demo: $(VENV)/.installed
	$(PY) examples/demo.py

# Two pytest workers, one test file each at a time (a file's module fixtures, such as its MLflow
# server, start once): about 10 minutes here against 18 for one process.
test: $(VENV)/.installed
	$(PY) -m pytest -q -n 2 --dist loadfile

clean:
	rm -rf $(VENV) mlflow.db mlruns mlartifacts
