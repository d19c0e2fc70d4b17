#!/usr/bin/env python3
"""Compress a reader folder's weights to 8 bits (NNCF's weight compression: INT8, asymmetric, per output channel)
so that the sentence reader and the passage reader fit in the package together (60 MB at most), and check the
compressed model against the original on the same inputs before writing it.

The runtime needs nothing more than OpenVINO: the IR holds the 8-bit weights and their scales. The check reads
PROBE questions with sentences (a sentence reader, format 2) or windows (a passage reader, format 3) through
readers.py with both folders and prints the largest logit difference and how often the phrase is the same;
it refuses to write when they disagree (logits by more than 0.25, phrases for more than 1 in 10).

    python -m bench.train.compress .cache/qa/reader/passage localreason/models/passage
    python -m bench.train.compress .cache/qa/reader/sentence localreason/models/reader
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import numpy as np

PROBE = [
    ("When did the Apollo program run?", ["The Apollo program was the third United States human spaceflight program.",
     "Apollo ran from 1961 to 1972, and was supported by the two-man Gemini program which ran from 1962 to 1966."]),
    ("Who performed the first landing on the Moon?", ["The crew flew the lunar module down to the surface.",
     "Armstrong and Aldrin performed the first landing at the Sea of Tranquility in July 1969."]),
    ("How large is the area covered by the rainforest?", ["This basin encompasses 7,000,000 square kilometres, of which "
     "5,500,000 square kilometres are covered by the rainforest.", "The forest is mostly in Brazil."]),
    ("Where did the Black Death originate?", ["The Black Death is thought to have originated in the arid plains of "
     "Central Asia.", "It then travelled along the Silk Road, reaching Crimea by 1343."]),
    ("What colour is the reset button?", ["The router has four network ports.", "The reset button on the back is red."]),
    ("Who wrote the novel Middlemarch?", ["Middlemarch is set in a provincial town.",
     "Middlemarch was written by George Eliot in 1871."]),
    ("How many ports does the router have?", ["The router has four network ports on its back.", "It is white."]),
    ("What error code should make me call the service line?", ["If the outdoor unit shows error code E7 again, "
     "switch it off and call our service line at 22 41 90 00.", "The unit restarts by itself after a power cut."]),
]  # fmt: skip


def readings(folder: Path) -> tuple[np.ndarray, list]:
    """Every logit and phrase (start, end) the reader in ``folder`` gives on PROBE."""
    from localreason.readers import Reader

    reader = Reader(folder)
    logits, phrases = [], []
    for question, sentences in PROBE:
        if reader.format == 3:
            r = reader.read_windows(question, [sentences])[0]
            logits += list(r.sentences) + [r.logit]
            phrases += [(s.sentence, s.start, s.end) if s else None for s in r.spans]
        else:
            x, found = reader.read(question, [(s, "") for s in sentences])
            logits += list(x)
            phrases += [(p.start, p.end) if p else None for p in found]
    return np.array(logits), phrases


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("source", type=Path, help="a reader folder with fp16 weights (bench.train.* writes one)")
    ap.add_argument("out", type=Path)
    args = ap.parse_args()

    import nncf
    import openvino as ov

    tmp = args.out.with_name(args.out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(args.source, tmp)
    model = ov.Core().read_model(str(args.source / "model.xml"))
    ov.save_model(nncf.compress_weights(model), str(tmp / "model.xml"), compress_to_fp16=True)
    before, p_before = readings(args.source)
    after, p_after = readings(tmp)
    gap = float(np.max(np.abs(before - after)))
    same = float(np.mean([a == b for a, b in zip(p_before, p_after)]))
    print(f"8-bit weights against {args.source}: largest logit difference {gap:.3f}, the same phrase for {same:.3f} "
          f"({len(p_before)} phrases)")  # fmt: skip
    if gap > 0.25 or same < 0.9:
        shutil.rmtree(tmp)
        raise SystemExit("The compressed reader disagrees with the original; not written.")
    meta = json.loads((tmp / "reader.json").read_text())
    meta["weights"] = f"INT8 (nncf {nncf.__version__} compress_weights, asymmetric, per channel)"
    meta["int8_max_logit_difference"], meta["int8_same_phrase"] = round(gap, 4), round(same, 4)
    (tmp / "reader.json").write_text(json.dumps(meta, indent=2) + "\n")
    shutil.rmtree(args.out, ignore_errors=True)
    tmp.rename(args.out)
    print(f"Wrote {args.out} ({sum(p.stat().st_size for p in args.out.iterdir()) / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
