"""Fit many PyMC models across a Dask cluster, each on Ember with nutpie.

    import ember.dask
    traces = ember.dask.sample_many(build, [{"seed": s} for s in range(8)], draws=500, seed=1)

Each task runs on a worker: `build(**kwargs)` (or a pickled `pm.Model`),
`ember.nutpie.compile_pymc_model`, `nutpie.sample`. Scheduling, retries of
lost workers, progress and the dashboard are Dask's own; this module only
shapes the tasks and collects their results in input order.
Dask is an optional dependency (`pip install ember[dask]`); `import ember`
never imports it.
"""

import uuid

try:
    import distributed
except ImportError as e:  # pragma: no cover - exercised by the skip in tests
    raise ImportError("ember.dask needs Dask's distributed scheduler: pip install 'ember[dask]' "
                      "(or pip install 'dask[distributed]')") from e

__all__ = ["SampleManyError", "sample_many", "submit_many", "collect"]


class SampleManyError(RuntimeError):
    """Some fits failed. `errors` maps each failed input index to its exception
    (with the worker's traceback); `results` holds every fit in input order,
    None where it failed, so one bad task does not lose the batch."""

    def __init__(self, errors, results):
        self.errors = dict(sorted(errors.items()))
        self.results = results
        lines = [f"  [{i}] {type(e).__name__}: {e}" for i, e in self.errors.items()]
        super().__init__(f"{len(self.errors)} of {len(results)} fits failed:\n" + "\n".join(lines))


def _fit(build, kwargs, compile_kwargs, sample_kwargs):
    # Runs on the worker: the model is built (or unpickled) and compiled in the
    # worker's own process, where Ember's engine and its JIT live.
    import nutpie

    from . import nutpie as ember_nutpie

    model = build(**kwargs) if callable(build) else build
    compiled = ember_nutpie.compile_pymc_model(model, **compile_kwargs)
    return nutpie.sample(compiled, **sample_kwargs)


def _client(client):
    if client is not None:
        return client
    try:
        return distributed.get_client()
    except ValueError as e:
        raise ValueError("ember.dask needs a Dask client: create one first (distributed.Client(...) "
                         "or distributed.LocalCluster().get_client()) or pass client=") from e


def _tasks(build, kwargs_list):
    if isinstance(build, (list, tuple)):
        if kwargs_list is not None:
            raise TypeError("kwargs_list must be None when build is a list of models")
        return [(m, {}) for m in build]
    if not callable(build):
        raise TypeError(f"build must be a callable or a list of pm.Model, got {type(build).__name__}")
    if kwargs_list is None:
        raise TypeError("kwargs_list is required when build is a callable")
    return [(build, dict(kw)) for kw in kwargs_list]


def submit_many(build, kwargs_list=None, *, client=None, compile_kwargs=None, **sample_kwargs):
    """Submit one fit per entry; returns Dask futures in input order (for
    `distributed.as_completed`, `progress`, the dashboard). Same arguments as
    sample_many."""
    client = _client(client)
    # Dask counts a task as one thread of its worker: chains run one after
    # another unless cores= says otherwise, so workers are not oversubscribed.
    # nutpie's draws do not depend on cores.
    sample_kwargs.setdefault("cores", 1)
    # nutpie's bar would print in the workers' logs; Dask reports progress.
    sample_kwargs.setdefault("progress_bar", False)
    compile_kwargs = dict(compile_kwargs or {})
    batch = uuid.uuid4().hex
    # pure=False: two identical unseeded entries are two different fits.
    # The key's prefix ("ember-sample") groups the tasks on the dashboard.
    return [client.submit(_fit, b, kw, compile_kwargs, sample_kwargs, pure=False, key=f"ember-sample-{i}-{batch}")
            for i, (b, kw) in enumerate(_tasks(build, kwargs_list))]


def collect(futures, *, return_exceptions=False, client=None):
    """Wait for the futures and return their results in order; a failed fit
    raises SampleManyError at the end (or, with return_exceptions, its
    exception takes its place)."""
    if not futures:
        return []
    distributed.wait(futures)
    done = [i for i, f in enumerate(futures) if f.status == "finished"]
    client = client or futures[0].client
    values = client.gather([futures[i] for i in done]) if done else []
    results = [None] * len(futures)
    for i, v in zip(done, values):
        results[i] = v
    errors = {}
    for i, f in enumerate(futures):
        if f.status == "finished":
            continue
        try:
            f.result()  # raises the task's exception with the worker's traceback
        except Exception as e:  # a cancelled task raises CancelledError here
            exc = e
        errors[i] = exc
        if return_exceptions:
            results[i] = exc
    if errors and not return_exceptions:
        raise SampleManyError(errors, results) from errors[min(errors)]
    return results


def sample_many(build, kwargs_list=None, *, client=None, compile_kwargs=None, return_exceptions=False,
                progress=False, **sample_kwargs):
    """Fit every model on the cluster; returns what nutpie.sample returns
    (an arviz InferenceData), in input order.

    build: a callable, run as build(**kwargs) for each entry of kwargs_list on
        a worker (it must be importable there or picklable by cloudpickle); or
        a list of pm.Model objects (cloudpickled to the workers), kwargs_list None.
    client: a distributed.Client; default: the current one (distributed.get_client()).
    compile_kwargs: passed to ember.nutpie.compile_pymc_model (jit=, jit_memory=, ...).
    return_exceptions: put a failed fit's exception in its place instead of
        raising SampleManyError after all fits have finished.
    progress: show distributed.progress for the batch (a widget in Jupyter, a
        text bar in a terminal).
    sample_kwargs: passed to nutpie.sample (draws=, tune=, chains=, seed=, ...);
        cores defaults to 1 (one Dask thread per task), progress_bar to False.
    """
    client = _client(client)
    futures = submit_many(build, kwargs_list, client=client, compile_kwargs=compile_kwargs, **sample_kwargs)
    if progress and futures:
        distributed.progress(futures)
    return collect(futures, return_exceptions=return_exceptions, client=client)
