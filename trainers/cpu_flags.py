"""The CPU's feature flags, read from ``/proc/cpuinfo`` without torch (the exported tiers ask them too)."""

from __future__ import annotations

from pathlib import Path

CPUINFO_PATH = Path("/proc/cpuinfo")
#: the flags of CPUs that compute bf16 natively (AMX tiles, AVX512-BF16 dot products, ARM BF16)
NATIVE_BF16_FLAGS = frozenset({"amx_bf16", "avx512_bf16", "bf16"})


def parse_cpuinfo_flags(text: str) -> frozenset[str]:
    """CPU feature flags from ``/proc/cpuinfo`` text (x86 ``flags`` lines, ARM ``Features`` lines).

    Args:
        text: The text of ``/proc/cpuinfo``.

    Returns:
        The flags of every ``flags`` / ``Features`` line.
    """
    flags: set[str] = set()
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() in ("flags", "features"):
            flags.update(value.split())
    return frozenset(flags)


def read_cpu_flags(cpuinfo: str | None = None) -> frozenset[str] | None:
    """The flags of this CPU (or of ``cpuinfo`` text); None where ``/proc/cpuinfo`` cannot be read.

    Args:
        cpuinfo: Text to parse instead of ``/proc/cpuinfo`` (tests).

    Returns:
        The flags, or None when unknown.
    """
    if cpuinfo is None:
        try:
            cpuinfo = CPUINFO_PATH.read_text(errors="replace")
        except OSError:
            return None
    return parse_cpuinfo_flags(cpuinfo)
