"""A search from a new process loads only what a search uses (no ingest module, no HTTP client, no torch), and the
models OpenVINO compiled are kept for the next process. How long it takes is measured, not tested:
``python -m bench.speed.cold --part search`` (docs/benchmarks.md, Latency)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SAMPLES = Path(__file__).resolve().parent.parent / "localreason" / "samples"

SEARCH_AND_LIST_MODULES = """
import json, sys
from localreason.cli import main
try:
    main(["search", "Where did the Black Death originate?", "--json"])  # with the check for a running server
except SystemExit as exc:
    assert exc.code in (0, None), exc.code
print(json.dumps(sorted(sys.modules)), file=sys.stderr)
"""


@pytest.mark.real_model
def test_a_search_loads_no_ingest_module_no_http_client_and_no_torch(tmp_path, isolated_home):
    from localreason.cli import main

    with pytest.raises(SystemExit) as done:
        main(["ingest", str(SAMPLES / "black_death.md"), "-q"])
    assert done.value.code == 0
    out = subprocess.run([sys.executable, "-c", SEARCH_AND_LIST_MODULES], capture_output=True, text=True,
                         timeout=600)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert "Black Death" in out.stdout
    loaded = set(json.loads(out.stderr.strip().splitlines()[-1]))
    assert "openvino" in loaded and "faiss" in loaded  # it did search with the real models
    unexpected = {m for m in loaded if m.startswith(("localreason.ingest", "localreason.reason", "localreason.tui",
                                                      "http.client", "torch", "transformers", "llama_cpp"))}
    assert unexpected == set()


@pytest.mark.real_model
def test_what_openvino_compiled_is_kept_for_the_next_process(tmp_path):
    from localreason.config import Settings
    from localreason.embed import make_embedder
    from localreason.models import resolve_embedding_model
    from localreason.openvino_runtime import compile_model

    settings = Settings(home=Path("/nonexistent"))
    first = make_embedder(resolve_embedding_model(settings), cache_root=settings.cache_path)
    vector = first.embed(["a question about the plague"])
    xml = next((settings.cache_path / "openvino").glob("*/model.xml"))
    cache = tmp_path / "cache"
    compile_model(xml, cache=cache)
    kept = [p for p in cache.glob("compiled-*/*") if p.is_file()]
    assert kept, "OpenVINO kept nothing to load next time"
    again = compile_model(xml, cache=cache)  # loaded from what was kept: the same model
    assert [i.get_any_name() for i in again.inputs] == [i.get_any_name() for i in compile_model(xml).inputs]
    assert vector.shape == (1, 384)


@pytest.mark.real_model
def test_a_cache_folder_that_cannot_be_made_is_not_used_and_nothing_fails(tmp_path):
    from localreason.config import Settings
    from localreason.openvino_runtime import compile_model

    settings = Settings(home=Path("/nonexistent"))
    xml = next((settings.cache_path / "openvino").glob("*/model.xml"), None)
    if xml is None:  # the export is made by the first real embedding of the run
        from localreason.embed import make_embedder
        from localreason.models import resolve_embedding_model

        make_embedder(resolve_embedding_model(settings), cache_root=settings.cache_path).embed(["x"])
        xml = next((settings.cache_path / "openvino").glob("*/model.xml"))
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    compiled = compile_model(xml, cache=blocked / "cache")  # a file where the folder would go
    assert compiled.inputs and not (blocked.parent / "cache").exists()
