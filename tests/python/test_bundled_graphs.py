"""Every graph the project ships (tests/data, including the graphs embedded in
op fixtures and the exported model suite) validates against
python/ember/graph-format.schema.json and the structural rules."""
import json
import pathlib

import pytest

from ember.testing.validate import check_structure, load_schema, validate_schema

DATA = pathlib.Path(__file__).resolve().parents[1] / "data"
SCHEMA = load_schema()
MAGIC = b"EMBRGRPH"


def bundled_graphs():
    for path in sorted(DATA.rglob("*")):
        if path.suffix == ".embg":
            yield path
        elif path.suffix == ".json":
            doc = json.loads(path.read_text())
            if isinstance(doc, dict) and (doc.get("format") == "ember-graph"
                                          or isinstance(doc.get("graph"), dict)):
                yield path


def read_graph(path):
    raw = path.read_bytes()
    if raw.startswith(MAGIC):
        n = int.from_bytes(raw[8:16], "little")
        doc = json.loads(raw[16:16 + n])
        return doc, raw[(16 + n + 63) // 64 * 64:]
    doc = json.loads(raw)
    if doc.get("format") != "ember-graph":
        doc = doc["graph"]
    return doc, b""


def test_graphs_are_bundled():
    paths = list(bundled_graphs())
    assert len(paths) > 50
    assert any(p.suffix == ".embg" for p in paths)


def test_there_are_bundled_graphs():
    # The parametrized tests below would pass on an empty directory.
    assert len(list(bundled_graphs())) >= 70


@pytest.mark.parametrize("path", list(bundled_graphs()), ids=lambda p: str(p.relative_to(DATA)))
def test_bundled_graph_matches_schema(path):
    doc, payload = read_graph(path)
    validate_schema(doc, SCHEMA)
    check_structure(doc, payload)
