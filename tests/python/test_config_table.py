"""Every environment variable the sources read is a row of interp/config.def,
and the libraries read the environment only through ember::Config
(interp/config.cpp). The scan covers C and C++ getenv calls, Python reads of
os.environ and os.getenv, and $EMBER_* in shell scripts."""

import ast
import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CPP_DIRS = ("engine", "interp", "jit", "tools", "include", "python/src", "tests", "bench")
LIBRARY_DIRS = ("engine", "interp", "jit", "tools", "include", "python/src")
PY_DIRS = ("python", "tests", "bench", "scripts")
SH_DIRS = ("scripts", "bench", "tests")
GETENV = re.compile(r"\bgetenv\s*\(\s*([^)]*)\)")


def config_rows():
    with open(os.path.join(ROOT, "interp", "config.def")) as f:
        return re.findall(r'^X\(\s*\w+\s*,\s*"(\w+)"', f.read(), re.M)


def _files(dirs, exts):
    for d in dirs:
        for path in glob.glob(os.path.join(ROOT, d, "**", "*"), recursive=True):
            if path.endswith(exts) and os.path.isfile(path):
                yield os.path.relpath(path, ROOT)


def cpp_reads(text, where):
    """(names, problems): getenv's literal arguments; a non-literal one is a problem."""
    names, problems = set(), []
    for m in GETENV.finditer(text):
        arg = m[1].strip()
        lit = re.fullmatch(r'"(\w+)"', arg)
        if lit:
            names.add(lit[1])
        else:
            problems.append(f"{where}: getenv({arg}) does not name its variable")
    return names, problems


def _is_os_environ(node):
    return isinstance(node, ast.Attribute) and node.attr == "environ" and \
        isinstance(node.value, ast.Name) and node.value.id == "os"


def python_reads(text, where):
    """(names, problems): os.environ[K], os.environ.get(K), os.getenv(K) and
    `K in os.environ` with K a string or a module-level string constant;
    reads in a loop over literal names count each name."""
    tree = ast.parse(text, where)
    consts = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign)
              and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
              for t in n.targets if isinstance(t, ast.Name)}
    names, problems = set(), []

    def key(k, line, loops):
        if isinstance(k, ast.Constant) and isinstance(k.value, str):
            names.add(k.value)
        elif isinstance(k, ast.Name) and k.id in loops:
            names.update(loops[k.id])
        elif isinstance(k, ast.Name) and k.id in consts:
            names.add(consts[k.id])
        else:
            problems.append(f"{where}:{line}: an environment read whose variable is not a literal name")

    def literal_loop(target, it):
        if isinstance(target, ast.Name) and isinstance(it, (ast.Tuple, ast.List)) and \
                all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in it.elts):
            return {target.id: [e.value for e in it.elts]}
        return {}

    def visit(n, loops):
        if isinstance(n, ast.For):
            loops = {**loops, **literal_loop(n.target, n.iter)}
        elif isinstance(n, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            for g in n.generators:
                loops = {**loops, **literal_loop(g.target, g.iter)}
        if isinstance(n, ast.Subscript) and _is_os_environ(n.value) and isinstance(n.ctx, ast.Load):
            key(n.slice, n.lineno, loops)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.args:
            f = n.func
            if (f.attr in ("get", "pop", "setdefault") and _is_os_environ(f.value)) or \
                    (f.attr == "getenv" and isinstance(f.value, ast.Name) and f.value.id == "os"):
                key(n.args[0], n.lineno, loops)
        elif isinstance(n, ast.Compare) and len(n.ops) == 1 and isinstance(n.ops[0], (ast.In, ast.NotIn)) and \
                _is_os_environ(n.comparators[0]):
            key(n.left, n.lineno, loops)
        for c in ast.iter_child_nodes(n):
            visit(c, loops)

    visit(tree, {})
    return names, problems


def shell_reads(text):
    return set(re.findall(r"\$\{?(EMBER_[A-Z0-9_]+)", text))


def scan():
    """{variable: [files reading it]} over the repository, and the problems found."""
    reads, problems = {}, []

    def note(names, where):
        for n in names:
            reads.setdefault(n, []).append(where)

    for rel in _files(CPP_DIRS, (".cpp", ".hpp", ".h", ".c", ".cc")):
        text = open(os.path.join(ROOT, rel), errors="replace").read()
        names, probs = cpp_reads(text, rel)
        if rel == os.path.join("interp", "config.cpp"):
            continue  # the one reader: getenv(v.name) over the table's rows
        note(names, rel)
        problems += probs
        if names and rel.startswith(LIBRARY_DIRS):
            problems.append(f"{rel}: reads {sorted(names)} with getenv; libraries read ember::config()")
    for rel in _files(PY_DIRS, (".py",)):
        names, probs = python_reads(open(os.path.join(ROOT, rel)).read(), rel)
        note(names, rel)
        problems += probs
    for rel in _files(SH_DIRS, (".sh",)):
        note(shell_reads(open(os.path.join(ROOT, rel)).read()), rel)
    return reads, problems


def test_every_variable_read_is_a_row_of_config_def():
    rows = set(config_rows())
    reads, problems = scan()
    assert not problems, problems
    # Tests and tools may pass other variables through (PYTHONPATH); Ember's
    # own code lists every variable it reads (HOME included).
    own = LIBRARY_DIRS + (os.path.join("python", "ember"),)
    missing = {n: sorted(w) for n, w in reads.items()
               if n not in rows and (n.startswith("EMBER_") or any(x.startswith(own) for x in w))}
    assert not missing, f"read but not in interp/config.def: {missing}"
    # The scan sees the reads it is meant to see.
    for name, where in [("EMBER_JIT", "options.py"), ("EMBER_PROGRAM_CACHE_MAX", "program_cache.py"),
                        ("EMBER_MATH_REPORT", "test_math_special.cpp"), ("EMBER_PT_WORK", "run-pytensor-tests.sh")]:
        assert any(w.endswith(where) for w in reads.get(name, [])), (name, reads.get(name))


def test_every_row_of_config_def_is_read_somewhere():
    reads, _ = scan()
    unread = [n for n in config_rows() if n not in reads and not _read_by_the_library(n)]
    assert not unread, f"rows of interp/config.def that no code reads: {unread}"


def _read_by_the_library(name):
    # The libraries read a row through its Config field: config().field, or
    # config_now(&Config::field).
    with open(os.path.join(ROOT, "interp", "config.def")) as f:
        field = re.search(r'^X\(\s*(\w+)\s*,\s*"' + name + '"', f.read(), re.M)[1]
    pattern = re.compile(r"(?:\b(?:config\(\)|env|c|cfg)\s*\.\s*|&Config::)" + field + r"\b")
    for rel in _files(LIBRARY_DIRS + ("tests", "bench"), (".cpp", ".hpp")):
        if pattern.search(open(os.path.join(ROOT, rel), errors="replace").read()):
            return True
    return False


def test_the_scan_finds_unlisted_and_unnamed_reads():
    names, probs = cpp_reads('int f() { return std::getenv("EMBER_NEW") != nullptr; }', "x.cpp")
    assert names == {"EMBER_NEW"} and not probs
    assert cpp_reads("getenv(name)", "x.cpp")[1]
    py = 'import os\nENV = "EMBER_C"\na = os.environ.get("EMBER_A")\nb = os.environ["EMBER_B"]\n' \
         'c = os.getenv(ENV)\nd = "EMBER_D" in os.environ\ne = [os.environ[k] for k in ("EMBER_E",)]\n' \
         'os.environ["EMBER_SET"] = "1"\n'
    names, probs = python_reads(py, "x.py")
    assert names == {"EMBER_A", "EMBER_B", "EMBER_C", "EMBER_D", "EMBER_E"} and not probs
    assert python_reads("import os\ndef f(k):\n    return os.environ.get(k)\n", "x.py")[1]
    assert shell_reads('x="${EMBER_NEW:-1}"; y=$EMBER_OTHER') == {"EMBER_NEW", "EMBER_OTHER"}
    assert python_reads('import os\nx = os.path.expanduser(os.environ["HOME"])\n', "x.py")[0] == {"HOME"}
    assert "EMBER_NEW" not in config_rows()
