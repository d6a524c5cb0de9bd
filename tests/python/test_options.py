"""ember/options.py reads JIT modes and sizes with the engine's parsers
(ember._core.parse_jit_mode / parse_size); its fallback for when the native
module is not loaded must agree with them on every input: value or message."""

import pytest

from ember import options
from native_helpers import require_native

SIZES = ["0", "4096", "256M", "256m", "1.5G", "2T", "512K", "512KiB", "512kb", "512MB", "512B", " 64M ", "64 M",
         "\t8G", "1e3", "1E+2k", "2.5e-1K", "1.", ".5", "00012e-2G", "1e-400", "18446744073709551615",
         "17179869183G", "1e400", "", " ", "lots", "-5", "+5", "256X", "0x10", ".", "1e", "3 K B", "1,5G", "1_000",
         "inf", "nan", "M", "5MiBB", "5iB", "1.5.G"]
MODES = ["off", "auto", "eager", "OFF", "Auto", "EAGER", "0", "1", "", "on", "sometimes", " off", "off "]


@pytest.fixture(scope="module")
def core():
    return require_native()._core


def _outcome(f, text, what):
    try:
        return f(text, what)
    except ValueError as e:
        return ("error", str(e))


@pytest.mark.parametrize("text", SIZES)
def test_size_fallback_agrees_with_the_engine(core, text):
    assert _outcome(options._fallback_size, text, "EMBER_JIT_MEMORY") == _outcome(core.parse_size, text,
                                                                                 "EMBER_JIT_MEMORY")


@pytest.mark.parametrize("text", MODES)
def test_jit_mode_fallback_agrees_with_the_engine(core, text):
    assert _outcome(options._fallback_jit_mode, text, "EMBER_JIT") == _outcome(core.parse_jit_mode, text,
                                                                               "EMBER_JIT")


def test_sizes_and_modes_read_as_documented(core):
    assert core.parse_size("256M", "x") == 256 << 20 and core.parse_size("1.5G", "x") == 3 << 29
    assert core.parse_size("4096", "x") == 4096 and core.parse_size("2T", "x") == 2 << 40
    assert [core.parse_jit_mode(m, "x") for m in ("OFF", "0", "auto", "Eager")] == ["off", "off", "auto", "eager"]


def test_bad_values_name_where_they_came_from(core, monkeypatch):
    with pytest.raises(ValueError, match="^jit_memory: 'lots' is not a size"):
        options.resolve_options(jit_memory="lots")
    with pytest.raises(ValueError, match="^jit: 'sometimes' is not off, auto or eager"):
        options.resolve_options(jit="sometimes")
    monkeypatch.setenv("EMBER_JIT_MEMORY", "12Q")
    with pytest.raises(ValueError, match="^EMBER_JIT_MEMORY: '12Q' is not a size"):
        options.resolve_options()
    monkeypatch.delenv("EMBER_JIT_MEMORY")
    monkeypatch.setenv("EMBER_JIT", "fast")
    with pytest.raises(ValueError, match="^EMBER_JIT: 'fast' is not off, auto or eager"):
        options.resolve_options()
    with pytest.raises(ValueError, match="^jit: 'fast'"):
        core.Program.load("unused.embg", {"jit": "fast"})
