"""Which x86 instruction sets the server is compiled for: named, never ``-march=native``.

These machines advertise AMX (``amx_tile``, ``amx_int8``) that the guest cannot use: a
``GGML_NATIVE`` build takes the AMX path and crashes in ``ggml_backend_amx_mul_mat`` on
the first decode. So the build is ``GGML_NATIVE=OFF`` with each set switched on only
when ``/proc/cpuinfo`` lists it, and AMX always off.
"""

from __future__ import annotations

from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")

FLAG_OPTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("GGML_SSE42", ("sse4_2",)),
    ("GGML_AVX", ("avx",)),
    ("GGML_AVX2", ("avx2",)),
    ("GGML_FMA", ("fma",)),
    ("GGML_F16C", ("f16c",)),
    ("GGML_BMI2", ("bmi2",)),
    # ggml's AVX512 switch compiles with -mavx512f, cd, vl, dq and bw together.
    ("GGML_AVX512", ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw")),
)
"""A cmake option, and the cpuinfo flags that must all be present to turn it on."""
ALWAYS_OFF = ("GGML_NATIVE", "GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16", "GGML_AVX_VNNI")


def cpu_flags(cpuinfo: str) -> frozenset[str]:
    """The flags of the first processor listed in a ``/proc/cpuinfo`` text."""
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def isa_options(flags: frozenset[str]) -> dict[str, bool]:
    """The ggml cmake options for a CPU with ``flags``: each set on only where present."""
    options = {option: all(flag in flags for flag in needed) for option, needed in FLAG_OPTIONS}
    options.update(dict.fromkeys(ALWAYS_OFF, False))
    return options


def host_isa_options(cpuinfo: Path = CPUINFO) -> dict[str, bool]:
    """``isa_options`` of this machine (all sets off where cpuinfo cannot be read)."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    return isa_options(cpu_flags(text))
