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
