"""Benchmark workloads: name -> (builder, default kwargs).

The seed grid reuses python/ember/testing/models.py (the seed report's model: a pool of
`shared` scalar parameters every group's mean depends on, plus a per-group cv).
The vector-heavy workload is the radon model scaled to 1e5 observations.
"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))


def build(workload, params):
    from ember.testing import models

    if workload in ("gamma", "lognormal"):
        return models._seed_model(workload, params["groups"], params["shared"], params.get("n_per_group", 20),
                                  params.get("seed", 0))
    if workload == "radon":
        return models.radon(counties=params.get("counties", 12), n=params.get("n", 120))
    if workload == "eight_schools":
        return models.eight_schools_noncentered()
    raise ValueError(f"unknown workload {workload!r}")


def label(workload, params):
    if workload in ("gamma", "lognormal"):
        return f"{workload} g={params['groups']} s={params['shared']}"
    if workload == "radon":
        return f"radon c={params.get('counties', 12)} n={params.get('n', 120)}"
    return workload
