"""OpenVINO, imported with its usage telemetry off (a leaf: the embedding model and the reader both run on it)."""

from __future__ import annotations

import sys


def load_openvino():
    """``import openvino``, with its usage telemetry switched off for this process.

    Importing openvino imports its model converter, which counts each import in ~/intel and sends an
    analytics event unless the user opted out: nothing may leave the machine. With ``openvino_telemetry``
    unimportable, openvino falls back to its own no-op stub (nothing counted, nothing sent).
    """
    if "openvino" not in sys.modules:
        sys.modules.setdefault("openvino_telemetry", None)  # type: ignore[assignment]
    import openvino

    return openvino


def compile_model(xml, threads: int = 0, cache=None):
    """The OpenVINO model at ``xml`` compiled for the CPU (``threads`` > 0: that many inference threads).

    With ``cache`` (a folder), OpenVINO keeps what it compiled there, keyed by the model's bytes and these options,
    and a later process loads that instead of compiling again: about 0.1 s of a cold search's 0.3 s (measured by
    ``python -m bench.speed.cold --part search``). Only a small description is kept (``CACHE_MODE`` OPTIMIZE_SIZE:
    the weights are read from the model's own file), one folder per CPU model so that a cache folder shared
    between machines never hands one CPU's code to another. A folder that cannot be written is not used; a kept
    entry that cannot be read is compiled again by OpenVINO itself.
    """
    ov = load_openvino()
    config: dict = {"INFERENCE_NUM_THREADS": threads} if threads > 0 else {}
    where = _cache_folder(cache) if cache is not None else None
    if where is not None:
        config.update({"CACHE_DIR": str(where), "CACHE_MODE": "OPTIMIZE_SIZE"})
    return ov.Core().compile_model(str(xml), "CPU", config)


def _cache_folder(cache):
    """``cache``/compiled-<this CPU and OpenVINO version>, made if needed; None when it cannot be written."""
    import hashlib
    import os
    import platform
    from pathlib import Path

    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            lines = [ln for ln in f if ln.startswith(("model name", "flags"))]
        cpu = "".join(dict.fromkeys(lines))  # the first CPU's name and instruction sets
    except OSError:
        cpu = ""
    version = getattr(sys.modules.get("openvino"), "__version__", "")
    key = hashlib.sha256(f"{platform.machine()}\0{platform.processor()}\0{cpu}\0{version}".encode()).hexdigest()[:12]
    folder = Path(cache) / f"compiled-{key}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return folder if os.access(folder, os.W_OK) else None
