"""The structs cffi lays out from the package's declarations are the C
compiler's: every field's offset and every struct's size, as printed by
a probe compiled against gemmd.h ($GEMMD_ABI_PROBE)."""

import json
import os
import subprocess

import pytest

import gemmd
from gemmd._ffi import ffi


def test_struct_layouts_match_the_header():
    probe = os.environ.get("GEMMD_ABI_PROBE")
    if not probe:
        pytest.skip("GEMMD_ABI_PROBE (the built probe) is not set")
    layouts = json.loads(subprocess.run([probe], check=True,
                                        capture_output=True).stdout)
    assert layouts
    for struct, want in layouts.items():
        assert ffi.sizeof(struct) == want["size"], struct
        for name, offset in want["fields"].items():
            assert ffi.offsetof(struct, name) == offset, f"{struct}.{name}"


def test_library_version():
    assert gemmd.library_version().split(".")[0] == "0"
