import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))


def pytest_configure(config):
    # Read by `python -m ember.coverage` (docs/coverage.md): the ops a test is written for.
    config.addinivalue_line("markers", "covers(*ops): PyTensor op classes this test checks")
