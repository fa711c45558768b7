"""Side-by-side benchmark of automl against peers: see benchmarks/compare.py and benchmarks/README.md.

The modules here are imported both by the harness (the library's venv) and by the worker processes
(peer venvs, where automl is NOT installed): keep them free of top-level imports of automl or of any
system under test.
"""
