"""Support for ember's tests, benchmarks and demo; running ember does not need it.

models         small PyMC models (tests/data/models, the benchmarks, `python -m ember demo`)
nutpie_graph   nutpie's own logp+grad function for a model (the reference graph)
pytensor_eval  evaluate a FunctionGraph with PyTensor's Python implementations
validate       check a graph document against the schema and the format's rules
"""
