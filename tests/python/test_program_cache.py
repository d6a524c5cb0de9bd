"""The program cache: its key (stable across processes, sensitive to what
changes a program), hits that skip PyMC's logp derivation, PyTensor's
rewrites, the gradient and the export; corrupt, truncated and stale entries;
concurrent writers; the size cap."""

import os
import subprocess
import sys

import numpy as np
import pytest

from native_helpers import ROOT, require_native

import pymc as pm
import nutpie  # noqa: F401
native = require_native()

import ember.nutpie as enutpie  # noqa: E402
from ember import program_cache  # noqa: E402

from ember.testing import models


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("EMBER_PROGRAM_CACHE", raising=False)
    monkeypatch.delenv("EMBER_PROGRAM_CACHE_MAX", raising=False)
    return tmp_path / "programs"


def _entries(d):
    return sorted(p for p in os.listdir(d) if p.endswith(".embp")) if os.path.isdir(d) else []


def _key(model, **opts):
    return program_cache.model_key(model, {"prepare": "stabilize", **opts})


def _regression(sigma=1.0, data=None, transform=True, coords=None, mean=lambda a, x: a * x):
    data = np.linspace(-1.0, 1.0, 10) if data is None else data
    with pm.Model(coords=coords) as model:
        a = pm.Normal("a", 0.0, 2.0)
        s = pm.HalfNormal("s", sigma, **({} if transform else {"default_transform": None}))
        x = pm.Data("x", data)
        pm.Normal("y", mean(a, x), s, observed=np.cos(data))
    return model


def test_key_is_stable_and_sensitive():
    base = _key(_regression())
    assert base == _key(_regression())  # a new, equal model
    assert base != _key(_regression(sigma=2.0))  # a prior's parameter
    assert base != _key(_regression(data=np.linspace(-1.0, 2.0, 10)))  # data
    assert base != _key(_regression(transform=False))  # a transform
    assert base != _key(_regression(coords={"c": [1, 2]}))  # coords
    assert base != _key(_regression(), prepare="fast_run")  # options
    # One node's op (ops are hashed once per walk and reused)
    assert base != _key(_regression(mean=lambda a, x: a + x))
    assert base != _key(_regression(mean=lambda a, x: a * x * x))


def test_key_is_the_same_in_another_process():
    code = ("import numpy as np, pymc as pm\nfrom ember import program_cache\n"
            "with pm.Model() as m:\n    a = pm.Normal('a', 0.0, 2.0)\n    s = pm.HalfNormal('s', 1.0)\n"
            "    x = pm.Data('x', np.linspace(-1.0, 1.0, 10))\n"
            "    pm.Normal('y', a * x, s, observed=np.cos(np.linspace(-1.0, 1.0, 10)))\n"
            "print('KEY', program_cache.model_key(m, {'prepare': 'stabilize'}))\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"KEY {_key(_regression())}" in out.stdout


def test_hit_runs_no_logp_derivation_rewrite_gradient_or_export(cache, monkeypatch):
    model = models.eight_schools_noncentered(seed=0)
    first = enutpie.compile_pymc_model(model)
    assert first.timings["cache_hit"] is False and len(_entries(cache)) == 1

    def forbidden(*a, **k):
        raise AssertionError("ran on a cache hit")

    import importlib

    import pytensor.gradient
    import pytensor.graph.rewriting.utils

    from ember import initial_point, prepare

    export = importlib.import_module("ember.export")  # the module, not ember.export()

    monkeypatch.setattr(pm.Model, "logp", forbidden)
    monkeypatch.setattr(pytensor.graph.rewriting.utils, "rewrite_graph", forbidden)
    monkeypatch.setattr(pytensor.gradient, "grad", forbidden)
    monkeypatch.setattr(export, "export_graph", forbidden)
    monkeypatch.setattr(prepare, "logp_graph", forbidden)
    monkeypatch.setattr(initial_point.InitialPointPlan, "from_model", forbidden)
    again = enutpie.compile_pymc_model(models.eight_schools_noncentered(seed=0))
    assert again.timings["cache_hit"] is True
    assert again.shape_info == first.shape_info and again.dims == first.dims
    for seed in (0, 5):
        x = first.initial_point_func(seed)
        np.testing.assert_array_equal(again.initial_point_func(seed), x)
        assert again.logp(x)[0] == first.logp(x)[0]
        np.testing.assert_array_equal(again.logp(x)[1], first.logp(x)[1])
        np.testing.assert_array_equal(again.expand(x)["theta"], first.expand(x)["theta"])


def test_hit_keeps_shared_data_and_with_data(cache):
    first = enutpie.compile_pymc_model(models.data_regression(seed=0))
    hit = enutpie.compile_pymc_model(models.data_regression(seed=0))
    assert hit.timings["cache_hit"] and set(hit.shared_data) == {"x_data", "y_data"}
    x = first.initial_point_func(0)
    new = hit.with_data(x_data=np.linspace(0, 1, 50), y_data=np.linspace(1, 2, 50))
    assert new.logp(x)[0] != hit.logp(x)[0] == first.logp(x)[0]


def test_a_model_indexed_by_dates_is_cached_with_its_coordinates(cache):
    import pandas as pd

    def build():
        days = pd.date_range("2024-01-01", periods=6, freq="D")
        with pm.Model(coords={"time": days, "group": ["a", "b"]}) as model:
            level = pm.Normal("level", 0.0, 1.0, dims="time")
            pm.Normal("y", level, 1.0, observed=np.arange(6.0), dims="time")
            pm.Normal("g", 0.0, 1.0, dims="group")
        return model

    first = enutpie.compile_pymc_model(build())
    hit = enutpie.compile_pymc_model(build())
    assert not first.timings["cache_hit"] and hit.timings["cache_hit"]
    for name in ("time", "group"):
        assert hit.coords[name].equals(first.coords[name]), name
    assert isinstance(hit.coords["time"], pd.DatetimeIndex)


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "stale"])
def test_damaged_entries_are_ignored_and_rebuilt(cache, damage, monkeypatch):
    model = models.eight_schools_noncentered(seed=0)
    first = enutpie.compile_pymc_model(model)
    (name,) = _entries(cache)
    path = cache / name
    raw = path.read_bytes()
    if damage == "flip":
        b = bytearray(raw)
        b[len(b) // 2] ^= 0xFF
        path.write_bytes(bytes(b))
    elif damage == "truncate":
        path.write_bytes(raw[: len(raw) * 2 // 3])
    elif damage == "empty":
        path.write_bytes(b"")
    else:  # an entry another version wrote under this name
        key = name[:-5]
        entry = program_cache.load(key)
        real = program_cache._versions
        monkeypatch.setattr(program_cache, "_versions", lambda: dict(real(), pytensor="0.0.0"))
        manifest = {k: v for k, v in entry.manifest.items() if k not in ("key", "versions", "blobs")}
        assert program_cache.store(key, manifest, entry.blobs)
        monkeypatch.setattr(program_cache, "_versions", real)
        assert program_cache.load(key) is None and not path.exists()
    rebuilt = enutpie.compile_pymc_model(model)
    assert rebuilt.timings["cache_hit"] is False
    x = first.initial_point_func(1)
    assert rebuilt.logp(x)[0] == first.logp(x)[0]
    hit = enutpie.compile_pymc_model(model)
    assert hit.timings["cache_hit"] is True


def test_concurrent_processes_share_one_entry(cache):
    code = ("import ember.nutpie as en\n"
            "from ember.testing import models\n"
            "c = en.compile_pymc_model(models.radon(seed=0))\n"
            "print('LOGP', repr(c.logp(c.initial_point_func(2))[0]), c.timings['cache_hit'])\n")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"), EMBER_JIT="off")
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=1200) for p in procs]
    for p, (o, e) in zip(procs, outs, strict=True):
        assert p.returncode == 0, e[-3000:]
    logps = {next(ln for ln in o.splitlines() if ln.startswith("LOGP")).split()[1] for o, _ in outs}
    assert len(logps) == 1
    assert len(_entries(cache)) == 1
    assert not [p for p in os.listdir(cache) if p.endswith(".tmp")]
    hit = enutpie.compile_pymc_model(models.radon(seed=0))
    assert hit.timings["cache_hit"] is True


def test_size_cap_trims_least_recently_used(cache, monkeypatch):
    for sigma in (1.0, 2.0, 3.0):
        enutpie.compile_pymc_model(_regression(sigma=sigma))
    sizes = [os.path.getsize(cache / n) for n in _entries(cache)]
    assert len(sizes) == 3
    monkeypatch.setenv("EMBER_PROGRAM_CACHE_MAX", str(int(max(sizes) * 1.5)))
    enutpie.compile_pymc_model(_regression(sigma=4.0))
    assert len(_entries(cache)) == 1
    assert enutpie.compile_pymc_model(_regression(sigma=4.0)).timings["cache_hit"] is True


def test_cache_off(cache, monkeypatch):
    monkeypatch.setenv("EMBER_PROGRAM_CACHE", "0")
    enutpie.compile_pymc_model(_regression())
    assert _entries(cache) == []
    monkeypatch.delenv("EMBER_PROGRAM_CACHE")
    enutpie.compile_pymc_model(_regression(), cache=False)
    assert _entries(cache) == []
