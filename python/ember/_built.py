"""Imports the files the build makes: the native module ember._core and the
generated tables ember._tables (python/CMakeLists.txt puts both in
<build>/python/ember, `pip install .` in the installed package)."""

import glob
import importlib
import os
import sys


def import_built(name, missing):
    """ember.<name>, from the package, from EMBER_NATIVE_DIR, or from an installed
    copy that the source tree shadows (tests put python/ first on sys.path);
    ImportError(missing) if none has it."""
    pkg = sys.modules[__package__]
    extra = os.environ.get("EMBER_NATIVE_DIR")
    if extra and extra not in pkg.__path__:
        pkg.__path__.append(extra)
    try:
        return importlib.import_module(f"{__package__}.{name}")
    except ImportError:
        pass
    for entry in sys.path:
        d = os.path.join(entry or ".", __package__)
        if d not in pkg.__path__ and os.path.isdir(d) and glob.glob(os.path.join(d, name + "*")):
            pkg.__path__.append(d)
    try:
        return importlib.import_module(f"{__package__}.{name}")
    except ImportError as e:
        raise ImportError(missing) from e
