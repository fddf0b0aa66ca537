"""The build names its instruction sets: AMX never, AVX-512 only where the CPU has it."""

from __future__ import annotations

from sandbox_agent.localmodel.build import build_key, build_options
from sandbox_agent.localmodel.cpu import cpu_flags, isa_options

# The flags line of this project's machines (they advertise AMX the guest cannot use).
AMX_HOST = (
    "processor\t: 0\nflags\t\t: fpu sse4_2 avx f16c fma bmi2 avx2 avx512f avx512cd avx512vl "
    "avx512dq avx512bw avx512_vnni amx_tile amx_int8 amx_bf16 avx_vnni\n"
)
OLDER_HOST = "flags\t\t: fpu sse4_2 avx f16c fma bmi2 avx2\n"


def test_amx_is_off_even_where_the_cpu_advertises_it() -> None:
    options = isa_options(cpu_flags(AMX_HOST))
    assert options["GGML_NATIVE"] is False
    assert not any(options[name] for name in ("GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16"))
    assert all(options[name] for name in ("GGML_AVX512", "GGML_AVX2", "GGML_FMA"))


def test_avx512_only_where_the_cpu_has_it() -> None:
    options = isa_options(cpu_flags(OLDER_HOST))
    assert options["GGML_AVX512"] is False
    assert all(options[name] for name in ("GGML_AVX2", "GGML_F16C", "GGML_BMI2"))


def test_the_cache_key_changes_with_the_flags() -> None:
    amx = build_options(isa_options(cpu_flags(AMX_HOST)))
    older = build_options(isa_options(cpu_flags(OLDER_HOST)))
    assert amx["BUILD_SHARED_LIBS"] == "OFF"
    assert amx["LLAMA_USE_PREBUILT_UI"] == "OFF"
    assert build_key("s" * 64, amx) != build_key("s" * 64, older)
    assert build_key("s" * 64, amx) != build_key("t" * 64, amx)
    assert build_key("s" * 64, amx) == build_key("s" * 64, dict(reversed(list(amx.items()))))
