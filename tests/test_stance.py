"""The stance reader's runtime (localreason/stance.py; none ships yet, docs/history/53): its word embeddings read
from the pip package's own weights without torch, damaged weights files, the package's weights budget, and a
damaged reader that costs the answer nothing but the stance check."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest

from localreason.errors import ModelError
from localreason.reason.candidates import Quote
from localreason.stance import WORD_EMBEDDINGS, word_embeddings


def _safetensors(path: Path, table: np.ndarray, name: str = WORD_EMBEDDINGS, dtype: str = "F32") -> Path:
    data = table.astype(np.float32).tobytes()
    header = json.dumps({"other": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                         name: {"dtype": dtype, "shape": list(table.shape), "data_offsets": [8, 8 + len(data)]}})
    path.write_bytes(struct.pack("<Q", len(header)) + header.encode() + b"\0" * 8 + data)
    return path


def test_word_embeddings_are_read_from_the_weights_file_without_torch(tmp_path):
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    got = word_embeddings(_safetensors(tmp_path / "m.safetensors", table))
    assert got.shape == (4, 3) and np.array_equal(got, table)
    assert np.array_equal(got[np.array([[3, 0]])], table[[[3, 0]]]), "looked up by token ids as the runtime does"


@pytest.mark.parametrize("damage", ["truncated header", "no such tensor", "half precision", "missing file"])
def test_a_damaged_weights_file_is_a_model_error_that_says_what_to_do(tmp_path, damage):
    path = tmp_path / "m.safetensors"
    table = np.ones((4, 3), np.float32)
    if damage == "truncated header":
        path.write_bytes(struct.pack("<Q", 500) + b'{"embeddings')
    elif damage == "no such tensor":
        _safetensors(path, table, name="encoder.layer.0.weight")
    elif damage == "half precision":
        _safetensors(path, table, dtype="F16")
    with pytest.raises(ModelError) as err:
        word_embeddings(path)
    assert "stance reader" in str(err.value) and "reinstall" in err.value.hint.lower()


def test_the_readers_weights_stay_within_60_mb_together():
    models = Path(__file__).resolve().parents[1] / "localreason" / "models"
    sizes = {p.parent.name: p.stat().st_size for p in models.glob("*/model.bin")}
    assert {"reader", "passage"} <= set(sizes)
    assert sum(sizes.values()) < 60_000_000, sizes


def test_a_stance_reader_that_fails_leaves_the_near_twins_check_and_is_not_asked_again():
    from localreason.reason.calibration import DEFAULT
    from localreason.reason.pipeline import Request, disagreement

    class Broken:
        calls = 0

        def contradiction(self, pairs):
            Broken.calls += 1
            raise ModelError("The stance reader in /x cannot be read: damaged.", hint="Reinstall localreason.")

    reader = SimpleNamespace(stance=Broken())
    on = replace(DEFAULT, stance_contradiction=0.9, stance_shared=0)  # none ships: the shipped calibration asks none
    req = Request(None, "How long does the warranty last?", None, {}, 8, 1000, "extract", None, "off", reader, on)
    a = Quote("c1", "The warranty on the heat pump lasts five years from installation.", 0, 1.0)
    b = Quote("c2", "The warranty on the heat pump lasts three years from installation.", 0, 1.0)
    chunk = lambda cid, doc: SimpleNamespace(chunk_id=cid, document_id=doc, document_title=doc)  # noqa: E731
    packet = SimpleNamespace(chunks=[chunk("c1", "Manual"), chunk("c2", "Manual (revised)")])
    with pytest.warns(RuntimeWarning, match="Opposite stances are not looked for"):
        found = disagreement(req, [a, b], packet)
    assert found is not None and [s.says for s in found.sides] == ["five years", "three years"]
    assert reader.stance is None and Broken.calls == 1


def test_the_embeddings_a_stance_reader_reads_are_the_packaged_base_models():
    from localreason.stance import packaged_embeddings

    table = packaged_embeddings()
    assert table is not None and table.name == "model.safetensors"
    assert word_embeddings(table).shape == (30522, 384), "all-MiniLM-L6-v2's vocabulary, as the readers' tokenizer"
