#!/usr/bin/env python3
"""Groups the failures and errors of pytest JUnit XML files by cause.
Usage: classify-pytest-failures.py results/*.xml"""

import collections
import re
import sys
import xml.etree.ElementTree as ET


def cause(text):
    if "UnsupportedGraphError" in text:
        # "  - op Argmax: 1 place(s)" or "  - Elemwise: Elemwise scalar op Kve: ..."
        items = re.findall(r"\n\s*-\s+(.+?):\s+\d+ place", text.replace("\\n", "\n"))
        items = [re.sub(r"^(Elemwise|[A-Za-z]+): (?=Elemwise scalar op|dtype|CAReduce|Blockwise)", "", i)
                 for i in items]
        return "unsupported: " + (", ".join(sorted(set(items))) if items else "?")
    if "fixture 'benchmark' not found" in text:
        return "pytest-benchmark not installed"
    if "DID NOT RAISE" in text:
        return "expected an error, Ember did not raise"
    if re.search(r"ember\.(native\.|_core\.)?Call\w*Error", text):
        m = re.search(r"Call\w*Error: (.*)", text)
        return "ember CallError: " + re.sub(r"<memory>: node \d+ ", "", m.group(1))[:90] if m else "ember CallError"
    if "inplace" in text.lower() and ("destroy" in text.lower() or "inplace_check" in text):
        return "in-place semantics (Ember always writes fresh outputs)"
    first = next((l.strip() for l in text.splitlines() if l.strip().startswith("E ")), text.strip()[:120])
    return "other: " + first[:120]


def main(paths):
    for path in paths:
        root = ET.parse(path).getroot()
        counts = collections.Counter()
        examples = {}
        for case in root.iter("testcase"):
            for child in case:
                if child.tag in ("failure", "error"):
                    c = cause((child.get("message") or "") + "\n" + (child.text or ""))
                    counts[c] += 1
                    examples.setdefault(c, f"{case.get('classname')}::{case.get('name')}")
        print(f"## {path}")
        for c, n in counts.most_common():
            print(f"{n:5d}  {c}   (e.g. {examples[c]})")


if __name__ == "__main__":
    main(sys.argv[1:])
