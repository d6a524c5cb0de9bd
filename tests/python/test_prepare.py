"""ember.nutpie's preparation from PyMC's public API: layout and names as
nutpie's own path gives them, logp and gradient of the "stabilize" graphs
against the "fast_run" ones and against nutpie's numba backend, initial
points against PyMC's, expand, and a compile with no C compiler and no numba."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from native_helpers import ROOT, assert_close_rel, require_native

import pymc as pm
import nutpie
native = require_native()

import ember.nutpie as enutpie  # noqa: E402
from ember import nutpie_lib  # noqa: E402

from ember.testing import models

SMALL = ["seed_gamma", "seed_lognormal", "eight_schools_centered", "eight_schools_noncentered", "radon",
         "logistic_glm", "poisson_glm", "studentt_regression", "data_regression", "mvnormal_lkj"]
ALL = SMALL + ["seed_gamma_large", "seed_lognormal_large"]


def _compile(model, **kw):
    kw.setdefault("cache", False)
    return enutpie.compile_pymc_model(model, **kw)


def _nutpie_functions(model, mode):
    """nutpie's own graph preparation (its private _make_functions) and its dims/coords."""
    from nutpie import compile_pymc as cp
    from pymc.initial_point import make_initial_point_fn

    point_fn = make_initial_point_fn(model=model, default_strategy="support_point",
                                     jitter_rvs=set(model.free_RVs), return_transformed=True)
    out = cp._make_functions(model, mode=mode, compute_grad=True, join_expanded=True,
                             pymc_initial_point_fn=point_fn)
    n_dim, n_expanded, logp_fn, expand_fn, init_fn, shape_info = out[:6]
    if len(out) > 6:
        dims, coords = cp._prepare_dims_and_coords(model, shape_info, out[6])
    else:
        dims, coords = cp._prepare_dims_and_coords(model, shape_info)
    return dict(n_dim=n_dim, n_expanded=n_expanded, logp=logp_fn, expand=expand_fn, init=init_fn,
                shape_info=shape_info, dims=dims, coords=coords, reparameterized=out[6] if len(out) > 6 else None)


def _points(compiled, seed, tails=True):
    rng = np.random.default_rng(seed)
    x0 = compiled.initial_point_func(0)
    pts = [compiled.initial_point_func(k) + rng.normal(0.0, 0.5, compiled.n_dim) for k in range(8)]
    if tails:  # far into the tails, where the stabilizing rewrites matter
        for s in (5.0, 20.0):
            pts += [x0 * s, -x0 * s, x0 + s, x0 - s]
        pts += [rng.normal(0.0, 10.0, compiled.n_dim) for _ in range(4)]
    return pts


def _assert_same_nonfinite_or_close(got, want, rtol, what):
    glp, gg = got
    wlp, wg = want
    if np.isfinite(wlp):
        assert np.isfinite(glp), f"{what}: logp {glp}, reference {wlp}"
    if np.all(np.isfinite(wg)):
        assert np.all(np.isfinite(gg)), f"{what}: non-finite gradient where the reference is finite"
    # NaN where the reference has NaN (a point outside the support in both) counts as equal.
    assert np.array_equal(np.isnan(gg), np.isnan(wg)), f"{what}: NaN gradient entries differ"
    if not (np.isnan(glp) and np.isnan(wlp)):
        assert_close_rel(glp, wlp, rtol=rtol, what=f"{what} logp")
    assert_close_rel(np.nan_to_num(gg, nan=0.0), np.nan_to_num(wg, nan=0.0), rtol=rtol, what=f"{what} grad")


@pytest.mark.parametrize("name", SMALL)
def test_layout_names_dims_coords_equal_nutpies_own(name):
    model = models.MODELS[name](seed=0)
    compiled = _compile(model)
    ref = _nutpie_functions(model, "FAST_COMPILE")
    names, slices, shapes = ref["shape_info"]
    assert compiled.n_dim == ref["n_dim"] and compiled.n_expanded == ref["n_expanded"]
    assert compiled.shape_info[0] == list(names)
    assert compiled.shape_info[1] == list(slices)
    assert [tuple(s) for s in compiled.shape_info[2]] == [tuple(int(d) for d in s) for s in shapes]
    assert {k: tuple(v) for k, v in compiled.dims.items()} == {k: tuple(v) for k, v in ref["dims"].items()}
    assert list(compiled.coords) == list(ref["coords"])
    for k in ref["coords"]:
        assert list(compiled.coords[k]) == list(ref["coords"][k])
    if ref["reparameterized"] is not None:
        assert compiled.reparameterized_names == ref["reparameterized"]


def test_layout_with_coords_dims_and_var_names():
    coords = {"school": [f"s{k}" for k in range(8)], "obs": np.arange(8)}
    with pm.Model(coords=coords) as model:
        mu = pm.Normal("mu", 0, 5)
        tau = pm.HalfNormal("tau", 5)
        z = pm.Normal("z", 0, 1, dims="school")
        theta = pm.Deterministic("theta", mu + tau * z, dims="school")
        pm.Deterministic("spread", tau * 2.0)
        pm.Normal("y", theta, 10.0, observed=np.linspace(-5, 5, 8), dims="obs")
    ref = _nutpie_functions(model, "FAST_COMPILE")
    compiled = _compile(model)
    assert compiled.shape_info[0] == list(ref["shape_info"][0])
    assert {k: tuple(v) for k, v in compiled.dims.items()} == {k: tuple(v) for k, v in ref["dims"].items()}
    for k in ref["coords"]:
        assert list(compiled.coords[k]) == list(ref["coords"][k])
    x = compiled.initial_point_func(3)
    draw = compiled.expand(x)
    np.testing.assert_allclose(draw["theta"], draw["mu"] + np.exp(draw["tau_log__"]) * draw["z"], rtol=1e-14)
    only = _compile(model, var_names=["theta"])
    assert only.shape_info[0] == ["mu", "tau_log__", "z", "theta"]
    idata = nutpie.sample(compiled, draws=20, tune=20, chains=1, seed=1, progress_bar=False)
    assert idata.posterior["theta"].dims[-1] == "school"


@pytest.mark.parametrize("name", ALL)
def test_stabilize_graphs_equal_fast_run_graphs(name):
    """logp and gradient of the lightly rewritten graphs against the
    fast_run-prepared ones, 1e-12 relative, tails included (no non-finite
    value where fast_run is finite)."""
    model = models.MODELS[name](seed=0)
    stab = _compile(model, prepare="stabilize")
    fast = _compile(model, prepare="fast_run")
    assert stab.shape_info == fast.shape_info
    for k, x in enumerate(_points(fast, seed=5)):
        _assert_same_nonfinite_or_close(stab.logp(x), fast.logp(x), 1e-12, f"{name} point {k}")


@pytest.mark.parametrize("name", ["eight_schools_noncentered", "radon", "data_regression", "seed_lognormal"])
@pytest.mark.parametrize("prepare", ["stabilize", "fast_run"])
def test_logp_equals_nutpie_numba(name, prepare):
    model = models.MODELS[name](seed=1)
    compiled = _compile(model, prepare=prepare)
    ref = _nutpie_functions(model, "NUMBA")
    for k, x in enumerate(_points(compiled, seed=9, tails=False)):
        want_logp, want_grad = ref["logp"](x)
        _assert_same_nonfinite_or_close(compiled.logp(x), (float(want_logp), np.asarray(want_grad)), 1e-12,
                                        f"{name} point {k}")


@pytest.mark.parametrize("name", ["eight_schools_noncentered", "mvnormal_lkj", "data_regression"])
def test_expand_equals_nutpies_expand(name):
    model = models.MODELS[name](seed=0)
    compiled = _compile(model)
    ref = _nutpie_functions(model, "FAST_COMPILE")
    for x in _points(compiled, seed=3, tails=False):
        (want,) = ref["expand"](x)
        got = compiled.expand(x)
        flat = np.concatenate([np.asarray(got[n]).ravel() for n in compiled.shape_info[0]])
        np.testing.assert_allclose(flat, want, rtol=1e-12, atol=1e-300)


# Support points that depend on other variables' initial values are PyMC's
# bits too; mvnormal_lkj's LKJ draw is not (its generator chain is inlined).
@pytest.mark.parametrize("name", [n for n in SMALL if n != "mvnormal_lkj"])
def test_initial_points_equal_pymcs(name):
    from pymc.initial_point import make_initial_point_fn

    model = models.MODELS[name](seed=0)
    compiled = _compile(model)
    ref = make_initial_point_fn(model=model, jitter_rvs=set(model.free_RVs), return_transformed=True)
    names, _, shapes = compiled.shape_info
    k = len(model.free_RVs)
    for seed in (0, 7, 123):
        want = np.concatenate([np.asarray(ref(seed)[n], dtype="float64").ravel() for n in names[:k]])
        np.testing.assert_array_equal(compiled.initial_point_func(seed), want)


def test_initial_point_of_a_staged_draw_is_in_support():
    model = models.mvnormal_lkj(seed=0)
    compiled = _compile(model)
    for seed in range(5):
        x = compiled.initial_point_func(seed)
        assert np.all(np.isfinite(x))
        logp, grad = compiled.logp(x)
        assert np.isfinite(logp) and np.all(np.isfinite(grad))
    assert not np.array_equal(compiled.initial_point_func(0), compiled.initial_point_func(1))
    np.testing.assert_array_equal(compiled.initial_point_func(4), compiled.initial_point_func(4))


def test_prior_strategy_and_overrides():
    model = models.eight_schools_centered(seed=0)
    prior = _compile(model, default_initialization_strategy="prior")
    assert np.all(np.isfinite(prior.initial_point_func(0)))
    fixed = _compile(model, initial_points={"mu": 1.5}, jitter_rvs=set())
    x = fixed.initial_point_func(0)
    assert x[0] == 1.5
    np.testing.assert_array_equal(x, fixed.initial_point_func(1))


def test_check_parameter_becomes_minus_inf_not_an_error():
    with pm.Model() as model:
        s = pm.Normal("s", 0.0, 1.0)
        pm.Normal("y", 0.0, s, observed=[0.1, -0.2])  # sigma = s: negative s is out of support
    for prepare in ("stabilize", "fast_run"):
        compiled = _compile(model, prepare=prepare)
        logp, _ = compiled.logp(np.array([-1.0]))
        assert logp == -np.inf


def test_timings_name_every_stage():
    compiled = _compile(models.eight_schools_noncentered(seed=0))
    t = compiled.timings
    for stage in ("model_logp", "rewrites", "gradient", "export", "load", "first_call"):
        assert t[stage] >= 0.0, stage
    assert t["cache_hit"] is False


def test_nutpie_adapter_is_for_this_version():
    assert nutpie.__version__ in nutpie_lib.TESTED_NUTPIE
    assert nutpie_lib.has_reparameterized_names() == (nutpie.__version__ != "0.16.8")


# -- no compiler, no numba ------------------------------------------------------------

_POISON = """
import builtins, sys
def _poison(*a, **k):
    raise RuntimeError("numba compiled something")
import numba.core.compiler, numba.core.registry
numba.core.compiler.compile_extra = _poison
numba.core.compiler.compile_ir = _poison
numba.core.registry.CPUDispatcher._compile_for_args = _poison
numba.core.registry.CPUDispatcher.compile = _poison
import numba
numba.cfunc = _poison
import subprocess as _sp
_orig = _sp.Popen.__init__
def _no_compilers(self, args, *a, **k):
    prog = (args[0] if isinstance(args, (list, tuple)) else str(args).split()[0]).rsplit("/", 1)[-1]
    if any(c in prog for c in ("g++", "gcc", "clang", "c++", "cc")):
        raise RuntimeError(f"a compiler was started: {args}")
    return _orig(self, args, *a, **k)
_sp.Popen.__init__ = _no_compilers
"""


def test_compile_and_sample_without_compiler_or_numba(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    # A PATH holding only the tools the run needs, and no compiler.
    for tool in ("uname", "ldconfig", "sh", "ls"):
        p = shutil.which(tool)
        if p:
            os.symlink(p, bindir / tool)
    script = "import pymc, pytensor, nutpie, numpy as np\n" + _POISON + textwrap.dedent("""
        import ember.nutpie as en
        from ember.testing import models
        model = models.seed_lognormal(seed=0)
        compiled = en.compile_pymc_model(model, cache=False)
        trace = nutpie.sample(compiled, draws=20, tune=20, chains=2, cores=2, seed=3, progress_bar=False)
        print("DRAWS", int(trace.posterior.sizes["draw"]), float(trace.posterior["theta_0"].mean()))
    """)
    env = dict(os.environ, PATH=str(bindir), PYTENSOR_FLAGS="cxx=",
               PYTHONPATH=os.path.join(ROOT, "python"), EMBER_PROGRAM_CACHE="0")
    env.pop("CXX", None)
    env.pop("CC", None)
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, out.stderr[-4000:]
    assert "DRAWS 20" in out.stdout, out.stdout


def test_compile_starts_no_compiler_where_one_is_installed(tmp_path):
    """With g++ on PATH and PyTensor free to use it (an empty compile cache):
    no process is started while compiling. PyTensor's BLAS probe test-compiles
    C when a C-only rewrite asks for its flags; PyTensor 3 links the inner
    functions of an LKJ prior's initial-point draw, and of a Scan on the
    fallback, with C thunks."""
    script = textwrap.dedent("""
        import subprocess, pymc, pytensor, nutpie
        import ember.nutpie as en
        try:
            from ember.testing import models
        except ImportError:
            from ember import models
        started = []
        orig = subprocess.Popen.__init__
        def spy(self, args, *a, **k):
            started.append(str(args))
            return orig(self, args, *a, **k)
        subprocess.Popen.__init__ = spy
        model = models.seed_gamma(seed=0)
        for prepare in ("stabilize", "fast_run"):
            en.compile_pymc_model(model, prepare=prepare, cache=False)
        en.compile_pymc_model(models.mvnormal_lkj(seed=0), cache=False).initial_point_func(1)
        # A Scan on the fallback: PyTensor links its inner function when it first runs.
        import warnings, numpy as np, pytensor.tensor as pt, ember
        from pytensor.graph.basic import Apply
        from pytensor.graph.op import Op
        class Twice(Op):
            __props__ = ()
            def make_node(self, x):
                return Apply(self, [x], [x.type()])
            def perform(self, node, inputs, out):
                out[0][0] = inputs[0] * 2
        x = pt.dvector("x")
        acc, _ = pytensor.scan(lambda xt, a: a + Twice()(xt), sequences=[x], outputs_info=[pt.zeros(())])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ember.FallbackWarning)
            f = pytensor.function([x], acc[-1], mode=ember.Mode())
        assert f(np.arange(4.0)) == 12.0
        print("STARTED", started)
    """)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"),
               PYTENSOR_FLAGS=f"compiledir={tmp_path / 'pytensor'}")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=1200)
    assert out.returncode == 0, out.stderr[-4000:]
    assert "STARTED []" in out.stdout, out.stdout[-2000:]


# -- bit-reproducible sampling across JIT modes ----------------------------------------

_SAMPLE = """
import hashlib, json, numpy as np, nutpie
import ember.nutpie as en
from ember.testing import models
compiled = en.compile_pymc_model(models.seed_lognormal(seed=0))
trace = nutpie.sample(compiled, draws=60, tune=60, chains=2, cores=2, seed=11, progress_bar=False)
draws = np.concatenate([trace.posterior[v].values.ravel() for v in sorted(trace.posterior.data_vars)])
print("DIGEST", hashlib.sha256(draws.tobytes()).hexdigest(), json.dumps(compiled.logp_program.options))
"""


def test_sampling_is_bit_reproducible_across_jit_modes(tmp_path):
    digests = {}
    for mode in ("off", "auto", "eager"):
        env = dict(os.environ, EMBER_JIT=mode, EMBER_CACHE_DIR=str(tmp_path),
                   PYTHONPATH=os.path.join(ROOT, "python"))
        out = subprocess.run([sys.executable, "-c", _SAMPLE], env=env, capture_output=True, text=True,
                             timeout=1200)
        assert out.returncode == 0, out.stderr[-4000:]
        line = next(ln for ln in out.stdout.splitlines() if ln.startswith("DIGEST"))
        _, digest, opts = line.split(" ", 2)
        assert json.loads(opts)["jit"] == mode
        digests[mode] = digest
    assert len(set(digests.values())) == 1, digests
