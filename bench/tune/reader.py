#!/usr/bin/env python3
"""Where the reader (localreaders.py) decides, chosen on fit domains and reported on held-out ones.

For every question (bench/data/qa_sets.py) this runs reason's own stages up to the choice of quotations
(progressive search, the 1,000-token packet, the retrieval ranking of quotes.rank_quotes, its
READ_CANDIDATES best) and has the reader read those sentences. From these records it simulates what
reason answers under each setting (an obedient model: the lead quotations, in order, as statements) and
prints, per domain and per group, the figures of bench/quality/reason.py:

- ranking: features only (today's quotes.WEIGHTS), reader only, and combined (READER_WEIGHT x logit +
  FEATURE_WEIGHT x score);
- gate: today's (relevance + weight x best score) or the reader's (gate.judge_read);
- lead count: quotes.lead_count's ratio on each ranking's probabilities;
- the naming rule (pipeline.with_naming_sentence): how often a who / which / what-name question's lead
  quotation leans on a pronoun, before and after.

The questions are bench/data/qa_sets.py's, read from the shared SQuAD-format files (``--qa-data``,
bench/data/qa.py): answerable, near-miss, off-topic and unanswerable (SQuAD 2.0's, asked about a paragraph that
is in the library; squad-dev only: "stopped" is judged as for off-topic questions).

The constants are chosen on the fit half of the CALIBRATION domain, new_wiki (newer Wikipedia articles,
SQuAD-shifts). **With today's weights this calibration is in-sample**: the SHIPPED readers
(localreason/models/reader, models/passage; their README.md model cards) were trained on most of new_wiki and on
SQuAD dev paragraphs (every SQuAD dev article), so their figures on new_wiki and squad-dev flatter them. It
becomes clean once the readers are retrained without new_wiki (the next issue: SQuAD 1.1 train and SQuAD 2.0
dev's fit half). Reported in three groups: the calibration fit half, the fit domains' evaluation half (squad-dev,
new_wiki: other articles), and the held-out domains (reddit posts, Amazon reviews), which no reader was trained
on and no choice here used.

    python -m bench.tune.reader                        # records (cached), choice, tables
    python -m bench.tune.reader --answerable 4 --near-miss 2 --off-topic 2 --fit-eval 6 --held-out 5  # a smoke run
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import statistics
import time
from pathlib import Path

import numpy as np

from bench import ROOT
from bench.data import qa, qa_sets

CALIBRATION = ["new_wiki"]
"""The fit domain whose fit half the constants are chosen on (in-sample for today's readers: module docstring)."""
BLENDS = (0.0, 0.5, 1.0, 2.0)
"""Weights of the retrieval gate's score in the blended gate, tried in the choice (0: the reader alone)."""
BUDGET = 1000


def records(lib, reader, questions) -> list[dict]:
    """reason's stages up to the ranked sentences, for each question, with the reader's logits."""
    from localreason import search
    from localreason.reason import pipeline as P
    from localreason.reason.gate import field_off_question
    from localreason.reason.offer import asks_for_name, leans_on_reference, naming_sentence
    from localreason.reason.read import headings_of

    out = []
    for q in questions:
        req = P.check_request(lib, q.text, None, {"document_id": search.UNSET, "collection_id": search.UNSET},
                              search.DEFAULT_EVIDENCE_LIMIT, BUDGET, "extract", None, "off", reader)  # fmt: skip
        evidence = P.gather_evidence(req)
        rec = {"q": q.text, "kind": q.kind, "relevance": evidence.relevance, "cands": [], "version": RECORDS}
        try:
            packet = P.pack_evidence(evidence, BUDGET)
            ranked = P.rank_sentences(req, packet, evidence)
        except P.NoEvidence:
            out.append(rec)
            continue
        t = time.perf_counter()
        heads = headings_of(evidence)
        logits, phrases = reader.read(q.text, [(x.text, x.context, heads.get(x.chunk_id, "")) for x in ranked]) \
            if ranked else ([], [])  # fmt: skip
        rec["readMs"] = (time.perf_counter() - t) * 1000
        rec["golds"] = list(q.golds)
        texts = {c.chunk_id: c.content for c in packet.chunks}
        named = asks_for_name(q.text)
        for x, logit, phrase in zip(ranked, logits, phrases):
            naming = naming_sentence(q.text, x, texts[x.chunk_id]) if named and leans_on_reference(q.text, x.text) \
                else None  # fmt: skip
            rec["cands"].append({"text": x.text, "context": x.context, "heading": heads.get(x.chunk_id, ""),
                                 "score": x.score, "logit": float(logit),
                                 "held": q.held_by(x.text), "field_off": field_off_question(q.text, x), "leans": named and leans_on_reference(
                                     q.text, x.text), "naming": naming.text if naming else None,
                                 "naming_held": bool(naming and q.held_by(naming.text)), **phrase_fields(phrase),
                                 "context_held": bool(x.context and q.held_by(x.context))})  # fmt: skip
        out.append(rec)
    return out


def collect(data_dir: Path, qa_data, embedder, reader, plan: dict[str, tuple], refresh: bool,
            cached_only: bool = False) -> dict:  # fmt: skip
    """{(domain, half): records}, cached under data_dir/reader-records keyed by the code that ranks and the
    reader's weights (records of another ranking are not trusted; those of the same ranking read by other
    weights are read again by these)."""
    from localreason.reason.calibration import DEFAULT

    ranking = hashlib.sha256()
    for code in ("reason/candidates.py", "reason/ranking.py", "reason/gate.py", "text.py", "reason/pipeline.py",
                 "search/progressive.py", "search/packet.py"):  # what records run
        ranking.update((ROOT / "localreason" / code).read_bytes())
    ranking.update(offer_key().encode())
    # of the calibration, only what the recorded stages use (the rest is what this script chooses)
    ranking.update(repr((DEFAULT.ranking_weights, DEFAULT.read_candidates, DEFAULT.rerank_candidates,
                         DEFAULT.sentence_guard_weight, DEFAULT.answer_guard)).encode())
    ranking = ranking.hexdigest()[:12]
    weights = hashlib.sha256((reader.info.folder / "model.bin").read_bytes()).hexdigest()[:12]
    cache = data_dir / "reader-records"
    cache.mkdir(parents=True, exist_ok=True)
    out = {}
    for name, counts in plan.items():
        stem = f"{name}-{'-'.join(map(str, counts))}-{ranking}"
        half = counts[0]
        path = cache / f"{stem}-{weights}.json"
        if path.is_file() and not refresh:
            recs = json.loads(path.read_text())
            if any(r.get("version", 1) < RECORDS for r in recs):
                recs = upgraded(recs, reader, qa_data, name, counts)
                print(f"  {name} ({half} half): records brought to version {RECORDS} (read again)", flush=True)
                path.write_text(json.dumps(recs))
            out[(name, half)] = recs
            continue
        other = None if refresh else next(iter(sorted(cache.glob(f"{stem}-*.json"))), None)
        if other is not None:  # the same questions and ranking, read by other weights: only the reading is redone
            recs = upgraded(json.loads(other.read_text()), reader, qa_data, name, counts)
            print(f"  {name} ({half} half): records of {other.name} read again by these weights", flush=True)
            path.write_text(json.dumps(recs))
            out[(name, half)] = recs
            continue
        if cached_only:
            print(f"  {name} ({half} half): no records yet, left out", flush=True)
            continue
        out[(name, half)] = recorded((data_dir, qa_data), embedder, name, counts,
                                     lambda lib, qs: records(lib, reader, qs), path)  # fmt: skip
    return out


def asked(domain, plan: tuple) -> list:
    """The questions a plan (half, answerable, near-miss, off-topic, unanswerable) asks of ``domain``, in a fixed
    order (only squad-dev has unanswerable questions: elsewhere none are asked)."""
    half, a, nm, off, un = plan
    return (qa_sets.sample(domain, "answerable", a, half) + qa_sets.sample(domain, "near-miss", nm, half)
            + qa_sets.sample(domain, "off-topic", off, half) + qa_sets.sample(domain, "unanswerable", un, half))


def recorded(where: tuple[Path, Path | None], embedder, name: str, plan: tuple, make, path: Path) -> list[dict]:
    """``make(lib, questions)``'s records of the questions ``plan`` asks of domain ``name`` (its library built
    once), timed, written to ``path``. ``where``: (the cache folder, the QA data folder or None)."""
    data_dir, qa_data = where
    domain = qa_sets.load(name, qa_data)
    lib = qa_sets.build_library(domain, data_dir, embedder)
    t = time.perf_counter()
    recs = make(lib, asked(domain, plan))
    print(f"  {name} ({plan[0]} half): {len(recs)} questions in {time.perf_counter() - t:.0f} s", flush=True)
    path.write_text(json.dumps(recs))
    return recs


RECORDS = 3
"""The records' version: 2 adds the span head's phrase in the sentence before (``before``, ``beforeMargin``) and
whether that sentence holds the answer (``context_held``)."""


def offer_key() -> str:
    """What the records use of reason/offer.py: its constants and the naming functions records() calls (the rest
    of offer.py decides what is offered, which the simulation does, so a change there keeps the records)."""
    import inspect

    from localreason.reason import offer as O

    parts = [inspect.getsource(f) for f in (O.asks_for_name, O._names, O.is_reference, O.leans_on_reference,
                                            O.naming_sentence)]  # fmt: skip
    parts.append(repr((O.MAX_LEAD, O.EXTRA_CANDIDATES, O.NAMING_LOOKBACK, O._ASKS_NAME.pattern,
                       sorted(O._REFERRING), sorted(O._DETERMINERS), O._DESCRIPTION.pattern)))  # fmt: skip
    return "\n".join(parts)


def upgraded(recs: list[dict], reader, qa_data, name: str, plan: tuple) -> list[dict]:
    """Records of an earlier version brought to RECORDS: read again by ``reader`` (the same weights give the same
    logits and phrases, with the phrase before now), and ``context_held`` from the same questions."""
    questions = asked(qa_sets.load(name, qa_data), plan)
    if [q.text for q in questions] != [r["q"] for r in recs]:
        raise SystemExit(f"{name} ({plan[0]} half): the cached records are not of these questions; run with --refresh")
    recs = rescore(recs, reader)
    for q, rec in zip(questions, recs):
        for c in rec["cands"]:
            c["context_held"] = bool(c["context"] and q.held_by(c["context"]))
        rec["version"] = RECORDS
    return recs


def phrase_fields(phrase) -> dict:
    """A candidate's record of the span head's best phrase (reader.Phrase or None): offsets and margin, and the
    best phrase in the sentence before."""
    if phrase is None:
        return {"phrase": None, "margin": None, "before": None, "beforeMargin": None}
    before = phrase.before
    return {"phrase": [phrase.start, phrase.end], "margin": float(phrase.margin), "probability": float(phrase.mass),
            "before": [before.start, before.end] if before else None,
            "beforeMargin": float(before.margin) if before else None}  # fmt: skip


def rescore(recs: list[dict], reader) -> list[dict]:
    """``recs`` with every candidate's logit and phrase from ``reader`` (the ranking, the gate's relevance and
    the rest stay as recorded)."""
    for rec in recs:
        if rec["cands"]:
            t = time.perf_counter()
            logits, phrases = reader.read(rec["q"], [(c["text"], c["context"], c.get("heading", ""))
                                                     for c in rec["cands"]])  # fmt: skip
            rec["readMs"] = (time.perf_counter() - t) * 1000
            for c, logit, phrase in zip(rec["cands"], logits, phrases):
                c["logit"] = float(logit)
                c.update(phrase_fields(phrase))
    return recs


# ---------------------------------------------------------------- simulating reason


def softmax(x: np.ndarray) -> np.ndarray:
    p = np.exp(x - x.max())
    return p / p.sum()


def lead_count(probs, ratio: float, most: int = 3) -> int:
    k = 1
    while k < min(len(probs), most) and probs[k] >= ratio * probs[0]:
        k += 1
    return k


def simulate(rec: dict, cfg: dict) -> dict:
    """What reason answers for one record under ``cfg``: no evidence, unanswered (the closest sentence and a
    gap), and which statements hold the answer."""
    from localreason.reason.gate import blended_log_odds, judge

    cands = rec["cands"][:cfg.get("k", 20)]  # the reader reads the k best of the ranking's order
    none = {"kind": rec["kind"], "noEvidence": True, "unanswered": True, "held": [], "leans": None}
    if not cands:
        return none
    feat = np.array([c["score"] for c in cands])
    logit = np.array([c["logit"] for c in cands])
    if judge(rec["relevance"], feat[0]) == "weak":  # the retrieval gate refuses before the reader reads
        return none
    mode = cfg["rank"]
    combined = feat if mode == "features" else cfg["rw"] * logit + cfg["fw"] * feat
    order = np.argsort(-combined, kind="stable")
    probs = softmax(combined[order])
    best = cands[order[0]]
    if cfg["gate"] == "old":
        verdict = judge(rec["relevance"], best["score"])
    else:
        z = blended_log_odds(best["logit"], rec["relevance"], best["score"], cfg.get("gb", 0.0), best.get("margin"),
                             cfg.get("sb", 0.0))  # fmt: skip
        p = 1 / (1 + np.exp(-z))
        verdict = "weak" if p < cfg["weak"] else "unsure" if p < cfg["answers"] else "answers"
    if verdict == "answers" and best["field_off"]:
        verdict = "unsure"
    if verdict == "weak":
        return none
    if verdict == "unsure":
        return {"kind": rec["kind"], "noEvidence": False, "unanswered": True, "held": [best["held"]],
                "leans": best["leans"]}  # fmt: skip
    lead = lead_count(probs, cfg["ratio"])
    chosen = [cands[i] for i in order[:lead]]
    held = [c["held"] for c in chosen]
    before = bool(cfg.get("before") and cfg.get("naming") and points_to_before(rec["q"], best))
    named = bool(cfg.get("naming") and not before and best["leans"] and best["naming"])
    if before:  # the sentence before joins the best one in the first statement (offer.Offer.joined)
        held = [best["context_held"] or held[0]] + held[1:]
    elif named:  # so does the sentence that names
        held = [best["naming_held"] or held[0]] + held[1:]
    leans = best["leans"] and not named and not before
    return {"kind": rec["kind"], "noEvidence": False, "unanswered": False, "held": held, "leans": leans,
            "phrase": phrase_of(rec, best, named, before, cfg), "golds": rec.get("golds", []), "before": before}  # fmt: skip


def points_to_before(question: str, c: dict) -> bool:
    """offer.points_before on a recorded candidate (its context is the sentence before it)."""
    from localreason.reason.candidates import Quote
    from localreason.reason.offer import points_before

    if c.get("before") is None or c.get("phrase") is None:
        return False
    quote = Quote("", c["text"], 0, c["score"], context=c["context"], phrase=tuple(c["phrase"]),
                  phrase_margin=c["margin"], before=tuple(c["before"]), before_margin=c["beforeMargin"])  # fmt: skip
    return points_before(question, quote)


def phrase_of(rec: dict, best: dict, named: bool, before: bool, cfg: dict) -> str | None:
    """The answer phrase reason leads with for this record under ``cfg`` (phrase.with_phrase's rule), or None."""
    from localreason.reason.offer import is_reference, name_run, opens_with_reference
    from localreason.reason.phrase import sure_phrase

    if cfg.get("pm") is None:
        return None
    if before:
        return best["context"][best["before"][0]:best["before"][1]]
    span = sure_phrase(best["text"], best.get("phrase"), best.get("margin"), cfg["pm"])
    if span is None:
        return None
    text = best["text"][span[0]:span[1]]
    if not (is_reference(text) or opens_with_reference(text)):
        return text
    run = name_run(best["naming"], rec["q"]) if named else None
    return best["naming"][run[0]:run[1]] if run else None


def phrase_scores(o: dict) -> tuple[float, float] | None:
    """(token F1, exact match) of an outcome's phrase against its best gold short answer, or None without one."""
    if not o.get("phrase") or not o.get("golds"):
        return None
    f1 = max(qa_sets.token_f1(o["phrase"], g) for g in o["golds"])
    em = max(float(qa_sets.norm(o["phrase"]) == qa_sets.norm(g)) for g in o["golds"])
    return f1, em


def phrase_utility(outcomes: list[dict]) -> float:
    """What the phrase margin is chosen for, per answered answerable question: +1 for a phrase that matches the
    gold answer (token F1 >= 0.5) in a lead quotation that holds it, -1 for any other phrase shown (it leads
    the answer, so a wrong one misleads), 0 for none (whole sentences)."""
    a = [o for o in outcomes if o["kind"] == "answerable" and not o["noEvidence"] and not o["unanswered"]]
    total = 0.0
    for o in a:
        if not o.get("phrase"):
            continue
        sc = phrase_scores(o)
        total += 1.0 if o["held"] and o["held"][0] and sc is not None and sc[0] >= 0.5 else -1.0
    return total / len(a) if a else 0.0


def summary(outcomes: list[dict]) -> dict:
    a = [o for o in outcomes if o["kind"] == "answerable"]
    answered = [o for o in a if not o["noEvidence"]]
    near = [o for o in outcomes if o["kind"] == "near-miss"]
    off = [o for o in outcomes if o["kind"] == "off-topic"]
    unanswerable = [o for o in outcomes if o["kind"] == "unanswerable"]
    named = [o for o in a if o["leans"] is not None and not o["noEvidence"]]

    def share(xs, f):
        return sum(map(f, xs)) / len(xs) if xs else float("nan")

    held_lead = [o for o in a if not o["noEvidence"] and not o["unanswered"] and o["held"] and o["held"][0]
                 and o.get("golds")]  # fmt: skip
    scored = [sc for sc in (phrase_scores(o) for o in held_lead) if sc is not None]
    answered_a = [o for o in a if not o["noEvidence"] and not o["unanswered"]]
    return {"support": share(a, lambda o: any(o["held"])), "first": share(a, lambda o: bool(o["held"]) and o["held"][0]),
            "phrased": share(answered_a, lambda o: bool(o.get("phrase"))),
            "phrase F1": statistics.fmean([f for f, _ in scored]) if scored else float("nan"),
            "phrase EM": statistics.fmean([e for _, e in scored]) if scored else float("nan"),
            "utility": phrase_utility(outcomes),
            "precision": share(answered, lambda o: sum(o["held"]) / max(1, len(o["held"]))),
            "refused": share(a, lambda o: o["noEvidence"]),
            "marked": share(a, lambda o: o["unanswered"] and not o["noEvidence"]),
            "near-miss": share(near, lambda o: o["unanswered"]), "off-topic": share(off, lambda o: o["noEvidence"]),
            "off+marked": share(off, lambda o: o["unanswered"]),
            "unanswerable": share(unanswerable, lambda o: o["noEvidence"]),
            "unans+marked": share(unanswerable, lambda o: o["unanswered"]),
            "leans": share([o for o in named if o["leans"] is not None], lambda o: bool(o["leans"]))}  # fmt: skip


COLUMNS = ("support", "first", "precision", "refused", "marked", "near-miss", "off-topic", "off+marked", "unanswerable",
           "unans+marked")  # fmt: skip
"""off-topic / unanswerable: the share stopped (the no-evidence answer); off+marked / unans+marked: stopped or marked
"does not clearly answer"."""
PHRASE_COLUMNS = ("phrased", "phrase F1", "phrase EM")
SPAN_BLENDS = (0.0, 0.25, 0.5)
"""Weights of the span head's phrase margin in the reader's gate, tried in the choice (0: it does not count)."""
PHRASE_MARGINS = (-2.0, 0.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 10.0)
"""Phrase margins tried for phrase.with_phrase's threshold."""


def group(data: dict, names, half: str, cfg: dict) -> dict:
    rows = [summary([simulate(r, cfg) for r in data[(n, half)]]) for n in names if (n, half) in data]
    return {c: statistics.fmean([r[c] for r in rows if r[c] == r[c]] or [float("nan")])
            for c in COLUMNS + PHRASE_COLUMNS + ("leans", "utility")}  # fmt: skip


MAX_MARKED = 0.25
"""Answerable questions marked "does not clearly answer" beyond this share are penalised: a right answer under
that gap misleads too (today's gate marks about 0.18 on the calibration half, 0.30 held out)."""


def objective(s: dict) -> float:
    """What the choice maximises on the calibration half: the answer's quality (first statement, support,
    precision) and the gate's (off-topic stopped, near-miss handled), with refusing answerable questions
    over 0.04 heavily penalised and marking them over MAX_MARKED too."""
    return (s["first"] + s["support"] + s["precision"] + s["off-topic"] + s["near-miss"]
            - 10 * max(0.0, s["refused"] - 0.04) - 2 * max(0.0, s["marked"] - MAX_MARKED))  # fmt: skip


def choose(data: dict, ks=(8, 12, 16, 20), blends=(0.0,), span_blends=(0.0,)) -> dict:
    """The best setting on the calibration half. ``blends``: weights of the retrieval gate's score (relevance +
    best sentence, less ANSWER_GUARD) added to the reader's logit before the gate's thresholds (0: the reader
    alone decides); ``span_blends``: weights of the span head's phrase margin added there too. Then the phrase
    margin (``choose_phrase``) for that setting."""
    best, best_val = None, -1e9
    grid = itertools.product((0.0, 0.1, 0.25, 0.5, 1.0, 2.0), (0.1, 0.2, 0.35, 0.5), (0.02, 0.05, 0.1, 0.15, 0.2, 0.3),
                             (0.1, 0.2, 0.3, 0.4, 0.5, 0.6), ks, blends, span_blends)  # fmt: skip
    for fw, ratio, weak, answers, k, gb, sb in grid:
        if answers < weak:
            continue
        cfg = {"rank": "combined", "rw": 1.0, "fw": fw, "ratio": ratio, "gate": "reader", "weak": weak,
               "answers": answers, "naming": True, "k": k, "gb": gb, "sb": sb}  # fmt: skip
        val = objective(group(data, CALIBRATION, "fit", cfg))
        if val > best_val:
            best, best_val = cfg, val
    return choose_phrase(data, best)


def choose_phrase(data: dict, cfg: dict) -> dict:
    """``cfg`` with the phrase margin (PHRASE_MARGINS) that maximises phrase_utility on the calibration half."""
    scored = [(group(data, CALIBRATION, "fit", {**cfg, "pm": pm})["utility"], -pm, pm) for pm in PHRASE_MARGINS]
    return {**cfg, "pm": max(scored)[2]}


def phrase_margins(data: dict, cfg: dict) -> None:
    """The phrase margins tried, under ``cfg``: utility, share phrased and F1, on the calibration half and held out."""
    print("\nphrase margin: utility / phrased / phrase F1 / EM, calibration fit half | fit eval half | held out")
    for pm in PHRASE_MARGINS:
        row = []
        for names, half in ((CALIBRATION, "fit"), (list(qa_sets.FIT), "eval"), (qa_sets.HELD_OUT, "eval")):
            g = group(data, names, half, {**cfg, "pm": pm})
            row.append(f"{g['utility']:.3f} {g['phrased']:.3f} {g['phrase F1']:.3f} {g['phrase EM']:.3f}")
        print(f"  {pm:>5}:  " + "  |  ".join(row))


def phrase_before(data: dict) -> None:
    """How often the shipped answer leads with the span head's phrase in the sentence before the best one
    (offer.points_before), per group and half: among answered answerable questions, the share it does, how often
    that sentence holds the answer, and its phrase's token F1 against the gold; and among near-miss and off-topic
    questions answered, the share it does (a phrase there misleads)."""
    from localreason.reason.calibration import DEFAULT

    cfg = {"rank": "combined", "k": DEFAULT.read_candidates, "rw": DEFAULT.reader_weight,
           "fw": DEFAULT.feature_weight, "ratio": DEFAULT.read_lead_ratio, "gate": "reader",
           "weak": DEFAULT.read_weak, "answers": DEFAULT.read_answers, "naming": True,
           "gb": DEFAULT.read_gate_blend, "sb": DEFAULT.read_span_blend, "pm": DEFAULT.headline_margin,
           "before": True}  # fmt: skip
    print("\nthe phrase in the sentence before (shipped constants):")
    for label, names, half in (("calibration, fit half", CALIBRATION, "fit"), ("fit domains, eval half", qa_sets.FIT, "eval"),
                               ("held out", qa_sets.HELD_OUT, "eval")):  # fmt: skip
        outs = [simulate(r, cfg) for n in names if (n, half) in data for r in data[(n, half)]]
        answered = [o for o in outs if not o["noEvidence"] and not o["unanswered"]]
        a = [o for o in answered if o["kind"] == "answerable"]
        fired = [o for o in a if o.get("before")]
        f1 = [sc[0] for sc in (phrase_scores(o) for o in fired) if sc is not None]
        other = [o for o in answered if o["kind"] != "answerable"]
        print(f"  {label}: {len(fired)} of {len(a)} answered answerable questions"
              f" (held by that sentence {sum(o['held'][0] for o in fired)}, phrase F1 "
              f"{statistics.fmean(f1) if f1 else float('nan'):.3f} over {len(f1)});"
              f" near-miss/off-topic answered {sum(bool(o.get('before')) for o in other)} of {len(other)}")  # fmt: skip


def ceiling(data: dict, ks=(1, 3, 8, 20)) -> None:
    """How often an answering sentence is among the k best of the retrieval ranking, per domain: what no
    re-ordering of those k can exceed."""
    print("\nanswerable questions whose answer is among the k best-ranked sentences (the ceiling of re-ordering)")
    print(f"{'domain':<30}" + "".join(f"{'top ' + str(k):>9}" for k in ks))
    groups: dict[str, list[list[float]]] = {"[calibration, fit half]": [], "[fit, eval half]": [], "[held out]": []}
    for (name, half), recs in sorted(data.items()):
        answerable = [r for r in recs if r["kind"] == "answerable"]
        if not answerable:
            continue
        row = [sum(any(c["held"] for c in r["cands"][:k]) for r in answerable) / len(answerable) for k in ks]
        print(f"{name + ' (' + half + ')':<30}" + "".join(f"{v:>9.3f}" for v in row))
        if name in qa_sets.HELD_OUT and half == "eval":
            groups["[held out]"].append(row)
        if name in CALIBRATION and half == "fit":
            groups["[calibration, fit half]"].append(row)
        if name in qa_sets.FIT and half == "eval":
            groups["[fit, eval half]"].append(row)
    for label, rows in groups.items():
        if rows:
            print(f"{label:<30}" + "".join(f"{v:>9.3f}" for v in np.mean(rows, axis=0)))


def passage_holds(q, text: str) -> bool:
    """Does any sentence of ``text`` hold ``q``'s answer (qa_sets' own test)?"""
    from localreason.text import sentences

    return any(q.held_by(text[a:b]) for a, b in sentences(text))


def reach(where: tuple[Path, Path | None], embedder, names, n: int, half: str = "eval") -> None:
    """Where the answer is before the ranking of sentences: in the 1,000-token packet, in the passages
    progressive search gathered (the packet is cut from their front), in hybrid retrieval's best 100 passages.
    What re-ranking the gathered passages before the budget cut (issue item 4(c)) could reach at most."""
    from localreason import search
    from localreason.reason import pipeline as P
    from localreason.search.ranking import hybrid
    from localreason.search.scope import resolve_scope
    print(f"\nanswerable questions whose answer is in ... ({half} half, {n} per domain)")
    cols = ("packet", "gathered", "pool 100", "gathered n", "answer at")
    print(f"{'domain':<22}" + "".join(f"{c:>12}" for c in cols))
    rows = {}
    for name in names:
        domain = qa_sets.load(name, where[1])
        lib = qa_sets.build_library(domain, where[0], embedder)
        stats = []
        for q in qa_sets.sample(domain, "answerable", n, half):
            req = P.check_request(lib, q.text, None, {"document_id": search.UNSET, "collection_id": search.UNSET},
                                  search.DEFAULT_EVIDENCE_LIMIT, BUDGET, "extract", None, "off", None)  # fmt: skip
            evidence = P.gather_evidence(req)
            try:
                packet = P.pack_evidence(evidence, BUDGET)
                in_packet = any(passage_holds(q, c.content) for c in packet.chunks)
            except P.NoEvidence:
                in_packet = False
            at = next((i for i, h in enumerate(evidence.hits) if passage_holds(q, h.content)), None)
            pool = hybrid(lib.index, evidence.query, 100, resolve_scope(lib.index, search.UNSET, search.UNSET))
            in_pool = any(passage_holds(q, h.content) for h in lib.index.store.hits([r.rowid for r in pool]))
            stats.append((in_packet, at is not None, in_pool, len(evidence.hits), at))
        row = [float(np.mean([s[i] for s in stats])) for i in range(4)]
        ats = [s[4] for s in stats if s[4] is not None]
        row.append(float(np.median(ats)) if ats else float("nan"))
        rows[name] = row
        print(f"{name:<22}" + "".join(f"{v:>12.3f}" for v in row[:3]) + f"{row[3]:>12.1f}{row[4]:>12.1f}", flush=True)
    mean = np.nanmean(list(rows.values()), axis=0)
    print(f"{'[mean]':<22}" + "".join(f"{v:>12.3f}" for v in mean[:3]) + f"{mean[3]:>12.1f}{mean[4]:>12.1f}")


def widen(where: tuple[Path, Path | None], embedder, names, n: int, half: str = "eval", reader=None) -> None:
    """Experiment for item 4(c), re-ranking the gathered passages before the budget cut: the sentences of more
    passages than the packet holds are ranked (today's features; with ``reader``, then read by it), the
    passages re-ordered by their best sentence, the 1,000-token packet cut from that order, and the packet
    ranked as reason ranks it. Prints, per variant, top-1 / top-3 / top-8 of that final ranking holding the
    answer, the answer in the packet, and the milliseconds of ranking (and reading) per question."""
    from dataclasses import replace

    from localreason.reason import read
    from localreason.reason.calibration import DEFAULT
    from localreason.reason.ranking import rank_quotes
    from localreason.text import collapse

    def ranking(q, chunks, hits, with_reader: bool, k: int = DEFAULT.read_candidates):
        """``chunks`` ((id, text)) ranked as rank_sentences ranks a packet (headings: those of ``hits``)."""
        headings = frozenset(collapse(h) for hit in hits for h in (hit.document_title, *hit.section_path))
        ranked = rank_quotes(q.text, chunks, embedder.embed, max(20, k), headings)
        if with_reader and ranked:
            ranked = read.read(reader, q.text, ranked, calibration=replace(DEFAULT, read_candidates=k)).quotes
        return ranked

    variants = widen_variants(reader)
    print(f"\nitem 4(c) experiment ({half} half, {n} answerable per domain): top1 / top3 / top8 / in packet / ms")
    print(f"{'domain':<16}" + "".join(f"{v:>34}" for v in variants))
    total = {v: [] for v in variants}
    for name in names:
        domain = qa_sets.load(name, where[1])
        lib = qa_sets.build_library(domain, where[0], embedder)
        rows = widen_domain(lib, qa_sets.sample(domain, "answerable", n, half), variants, ranking)
        for v in variants:
            total[v].append(np.mean(rows[v], axis=0))
        print(widen_line(name, {v: total[v][-1] for v in variants}), flush=True)
    print(widen_line("[mean]", {v: np.mean(total[v], axis=0) for v in variants}))


def widen_domain(lib, questions, variants: dict, ranking) -> dict[str, list]:
    """widen's rows for one domain's ``questions``: per variant, one (top1, top3, top8, in packet, ms) per question."""
    from dataclasses import replace

    from localreason import search
    from localreason.reason import pipeline as P
    from localreason.search.ranking import hybrid
    from localreason.search.scope import resolve_scope

    rows = {v: [] for v in variants}
    for q in questions:
        req = P.check_request(lib, q.text, None, {"document_id": search.UNSET, "collection_id": search.UNSET},
                              search.DEFAULT_EVIDENCE_LIMIT, BUDGET, "extract", None, "off", None)  # fmt: skip
        evidence = P.gather_evidence(req)
        if not evidence.hits:
            for v in variants:
                rows[v].append((0, 0, 0, 0, 0.0))
            continue
        pool = [r.rowid for r in hybrid(lib.index, evidence.query, 20, resolve_scope(lib.index, search.UNSET,
                                                                                       search.UNSET))]  # fmt: skip
        pool_hits = tuple(lib.index.store.hits(pool))
        have = {h.chunk_id for h in evidence.hits}
        sets = {"gathered": evidence.hits, "pool20": pool_hits,
                "gathered+pool20": evidence.hits + tuple(h for h in pool_hits if h.chunk_id not in have)}
        for v, (wide, with_reader, k) in variants.items():
            t = time.perf_counter()
            ev = evidence
            if wide:
                hits = sets[wide]
                first = ranking(q, [(h.chunk_id, h.content) for h in hits], hits, with_reader, k)
                ev = replace(evidence, hits=reordered(hits, first))
            packet = P.pack_evidence(ev, BUDGET)
            ranked = ranking(q, [(c.chunk_id, c.content) for c in packet.chunks], ev.hits, with_reader)
            rows[v].append(widen_row(q, ranked, packet, (time.perf_counter() - t) * 1000))
    return rows


def widen_variants(reader) -> dict[str, tuple]:
    """name: (passages re-ordered before the cut, reader, sentences the reader reads when re-ordering)."""
    variants = {"packet": (None, False, 0), "gathered": ("gathered", False, 0),
                "gathered+pool20": ("gathered+pool20", False, 0), "pool20": ("pool20", False, 0)}
    if reader is not None:
        variants = {"packet": (None, False, 0), "packet+reader": (None, True, 0),
                    "gathered+reader 8": ("gathered", True, 8), "gathered+reader 16": ("gathered", True, 16)}
    return variants


def reordered(hits, ranked):
    """``hits`` in the order of their best sentence in ``ranked``; those with no ranked sentence after them."""
    first = list(dict.fromkeys(x.chunk_id for x in ranked))
    by_id = {h.chunk_id: h for h in hits}
    placed = set(first)
    return tuple(by_id[c] for c in first) + tuple(h for h in hits if h.chunk_id not in placed)


def widen_row(q, ranked, packet, ms: float) -> tuple:
    """(top-1, top-3, top-8 of ``ranked`` holds the answer, the packet holds it, milliseconds)."""
    hs = [q.held_by(x.text) for x in ranked]
    return (any(hs[:1]), any(hs[:3]), any(hs[:8]), any(passage_holds(q, c.content) for c in packet.chunks), ms)


def widen_line(label: str, means: dict) -> str:
    """One row of the widen table: top1 / top3 / top8 / in packet / ms of each variant."""
    line = f"{label:<16}"
    for m in means.values():
        line += f"{m[0]:>8.3f}{m[1]:>6.3f}{m[2]:>6.3f}{m[3]:>7.3f}{m[4]:>7.0f}"
    return line


def table(data: dict, configs: dict[str, dict]) -> None:
    fit = [n for n in qa_sets.FIT]
    for label, cfg in configs.items():
        print(f"\n{label}")
        print(f"{'domain':<24}" + " ".join(f"{c:>12}" for c in COLUMNS + PHRASE_COLUMNS + ("leans",)))
        rows = {}
        for n in fit:
            if (n, "eval") in data:
                rows[f"{n} (eval)"] = summary([simulate(r, cfg) for r in data[(n, "eval")]])
        for n in qa_sets.HELD_OUT:
            if (n, "eval") in data:
                rows[n] = summary([simulate(r, cfg) for r in data[(n, "eval")]])
        rows["[calibration, fit half]"] = group(data, CALIBRATION, "fit", cfg)
        rows["[fit, eval half]"] = group(data, fit, "eval", cfg)
        rows["[held out]"] = group(data, qa_sets.HELD_OUT, "eval", cfg)
        for name, s in rows.items():
            print(f"{name:<24}"[:24] + " ".join(f"{s[c]:>12.3f}" for c in COLUMNS + PHRASE_COLUMNS + ("leans",)))


def arguments() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", type=Path, default=ROOT / ".cache" / "qa",
                    help="cache folder: the records (reader-records/) and the libraries")  # fmt: skip
    qa.add_argument(ap)
    ap.add_argument("--reader", type=Path, default=ROOT / "localreason" / "models" / "reader")
    ap.add_argument("--answerable", type=int, default=100, help="answerable questions of the calibration fit half")
    ap.add_argument("--near-miss", type=int, default=40)
    ap.add_argument("--off-topic", type=int, default=40, help="off-topic questions of the calibration fit half (and "
                    "as many unanswerable ones where a domain has them)")  # fmt: skip
    ap.add_argument("--fit-eval", type=int, default=42, help="answerable questions per fit domain's evaluation half "
                    "(a third as many near-miss, off-topic and unanswerable)")  # fmt: skip
    ap.add_argument("--held-out", type=int, default=60, help="answerable questions per held-out domain (bench.quality.reason "
                    "asks 100)")
    ap.add_argument("--refresh", action="store_true")
    ap.add_argument("--cached-only", action="store_true", help="only the domains whose records are cached")
    ap.add_argument("--build-only", action="store_true", help="build the libraries and stop")
    ap.add_argument("--ceiling", action="store_true", help="only the ceiling of re-ordering, per domain")
    ap.add_argument("--widen", choices=("features", "reader"), help="item 4(c) experiment: passages re-ordered by "
                    "their best sentence before the budget cut, by today's features or with the reader")
    ap.add_argument("--reach", action="store_true", help="only where the answer is before the sentences are ranked: "
                    "packet, gathered passages, retrieval's best 100 (no reader needed)")
    return ap.parse_args()


def build_libraries(data_dir: Path, qa_data, embedder) -> None:
    for name in qa_sets.DOMAINS:
        t = time.perf_counter()
        qa_sets.build_library(qa_sets.load(name, qa_data), data_dir, embedder)
        print(f"  {name}: library ready ({time.perf_counter() - t:.0f} s)", flush=True)


def reading_counts(data: dict) -> None:
    """The best setting for each number of sentences the reader reads (its cost grows with them)."""
    for k in (4, 8, 12, 16, 20):  # how many sentences the reader reads: its cost grows with them
        best_k = choose(data, (k,))
        s = group(data, CALIBRATION, "fit", best_k)
        print(f"  reading {k:>2}: objective {objective(s):.3f}  " + " ".join(f"{c} {s[c]:.3f}" for c in COLUMNS))


def plans(args) -> tuple[dict, dict]:
    """(the calibration fit half's and the held-out domains' plans, the fit domains' evaluation halves' plans):
    domain -> (half, answerable, near-miss, off-topic, unanswerable)."""
    plan = {n: ("fit", args.answerable, args.near_miss, args.off_topic, args.off_topic) for n in CALIBRATION}
    held = args.held_out * 2 // 5
    plan.update({n: ("eval", args.held_out, held, held, held) for n in qa_sets.HELD_OUT})
    third = args.fit_eval // 3
    return plan, {n: ("eval", args.fit_eval, third, third, third) for n in qa_sets.FIT}


def main() -> None:
    args = arguments()

    from localreason.config import load_settings
    from localreason.embed import SentenceTransformerEmbedder, make_embedder
    from localreason.models import resolve_embedding_model
    from localreason.readers import Reader

    settings = load_settings(args.data_dir / "libs")
    info = resolve_embedding_model(settings)
    # The libraries are built with torch (as bench.quality.reason builds them); questions are embedded on OpenVINO, as
    # users' are (the vectors are interchangeable, README "embedding_backend").
    embedder = SentenceTransformerEmbedder(info) if args.build_only else make_embedder(info, cache_root=settings.cache_path)
    # (with --cached-only nothing is embedded)
    if args.cached_only:
        embedder = None
    where = (args.data_dir, args.qa_data)
    if args.build_only:
        build_libraries(args.data_dir, args.qa_data, embedder)
        return
    if args.widen or args.reach:
        reader = Reader(args.reader) if args.widen == "reader" else None
        for names, n, half in ((CALIBRATION, args.answerable, "fit"), (qa_sets.FIT, args.fit_eval, "eval"),
                               (qa_sets.HELD_OUT, args.held_out, "eval")):  # the three groups
            if args.widen:
                widen(where, embedder, names, n, half, reader=reader)
            else:
                reach(where, embedder, names, n, half)
        return
    reader = Reader(args.reader)
    plan, fit_plan = plans(args)
    data = collect(args.data_dir, args.qa_data, embedder, reader, plan, args.refresh, args.cached_only)
    data.update(collect(args.data_dir, args.qa_data, embedder, reader, fit_plan, args.refresh, args.cached_only))
    ceiling(data)
    if args.ceiling:
        return
    read_ms = [r["readMs"] for recs in data.values() for r in recs if "readMs" in r]
    print(f"\nreader time per question (this run's CPU): p50 {statistics.median(read_ms):.0f} ms, "
          f"p90 {np.percentile(read_ms, 90):.0f} ms over {len(read_ms)} questions")  # fmt: skip
    reading_counts(data)
    chosen = choose(data, (8,), BLENDS, SPAN_BLENDS)
    print(f"\nchosen on {', '.join(CALIBRATION)} (fit half): {json.dumps(chosen)}")
    phrase_margins(data, chosen)
    phrase_before(data)
    table(data, ablation(data, chosen))


def ablation(data: dict, chosen: dict) -> dict[str, dict]:
    """The configurations main's table compares: today's features, the reader alone and combined with them, each
    with the old gate and the reader's, the chosen constants and the shipped ones (Calibration's defaults)."""
    from localreason.reason.calibration import DEFAULT

    shipped = {"rank": "combined", "k": DEFAULT.read_candidates, "rw": DEFAULT.reader_weight,
               "fw": DEFAULT.feature_weight, "ratio": DEFAULT.read_lead_ratio, "gate": "reader",
               "weak": DEFAULT.read_weak, "answers": DEFAULT.read_answers, "naming": True,
               "gb": DEFAULT.read_gate_blend, "sb": DEFAULT.read_span_blend, "pm": DEFAULT.headline_margin,
               "before": True}  # fmt: skip
    lead_ratio = DEFAULT.lead_ratio
    sentence_gate = choose(data, (chosen["k"],), (chosen["gb"],), (0.0,))
    return {
        "features only, old gate (today)": {"rank": "features", "ratio": lead_ratio, "gate": "old"},
        "features only, old gate, naming rule": {"rank": "features", "ratio": lead_ratio, "gate": "old", "naming": True},
        "reader only, old gate": {**chosen, "fw": 0.0, "gate": "old"},
        "reader only, reader gate": {**chosen, "fw": 0.0},
        "combined, old gate": {**chosen, "gate": "old"},
        "combined, reader gate on the sentence score alone (no span margin)": sentence_gate,
        "combined, reader gate + span margin x 0.25": choose(data, (chosen["k"],), (chosen["gb"],), (0.25,)),
        "combined, reader gate + span margin x 0.5": choose(data, (chosen["k"],), (chosen["gb"],), (0.5,)),
        "combined, reader gate (chosen)": chosen,
        "shipped constants, without the phrase in the sentence before": {**shipped, "before": False},
        "shipped constants": shipped,
    }


if __name__ == "__main__":
    main()
