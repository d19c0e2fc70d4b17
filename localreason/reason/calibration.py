"""Every fitted number that decides what an answer says, in one value.

``reason(..., calibration=...)`` passes it to every stage (the ranking, the reader's decision, the model's
re-ordering, the gate, the lead count); nothing reads these numbers from module globals, so a script or a
test that tries other values builds one (``dataclasses.replace(DEFAULT, answer_guard=2.5)``) and passes it.
``DEFAULT`` is what ships.

Each field says what it does and where it was chosen: the script that chose it and the section of
docs/benchmarks.md that reports the choice. Numbers that are limits rather than fits (the most lead
quotations a request may fix, the longest question the model scores, how far back the naming rule looks,
how many sentences are offered beyond the lead ones, how far below the rest an echoing field is put)
stay constants beside the code they bound (offer.py, likelihood.py, ranking.py).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Calibration:
    """The fitted numbers of ``reason``; ``DEFAULT`` is the shipped set."""

    # ------------------------------------------------------------ the retrieval ranking (ranking.py)
    ranking_weights: tuple[float, ...] = (8.46, 1.41, 4.48, 2.40, 1.53, 3.13, 1.71, 4.17, 4.5)
    """One weight per ranking feature (ranking.FEATURES, in that order): a sentence's score is the weighted
    sum of its features, and a softmax over one question's sentences estimates the chance that each holds
    the answer. Fitted by bench/tune/reason.py (part 1: softmax over each question's sentences, maximising
    the chance given to the answering ones) on the fit half of six kinds of text (Wikipedia from SQuAD and
    CoQA, school exams, science, children's stories, literature); news, reddit and product reviews were kept
    out of the fit. docs/benchmarks.md, "reason beyond Wikipedia" > "The calibration". The last, "default"'s, was
    chosen alone, the others held, on the fit halves of the three fit manuals (Apache's kept out): 4.5, where
    bench/tune/defaults.py's likelihood grid first put it and where the whole answers bench's first statements on
    those fit halves put it after its patterns were narrowed (docs/history/51-answers-from-manuals.md, "Defaults,
    commands announced in words, and the reason before a conclusion")."""

    # ------------------------------------------------------------ how many quotations lead (offer.py)
    lead_ratio: float = 0.2
    """offer.lead_count without the reader: after the best-ranked quotation, the next ones lead too while
    the ranking gives each at least this share of the best one's estimated chance (a near tie, or sources
    that disagree). Chosen for statement precision with support in bench/tune/reason.py (part 2, "p_k >=
    0.2 p_1, at most 3"). docs/benchmarks.md, "reason beyond Wikipedia" > "The calibration"."""
    most_lead: int = 3
    """offer.lead_count: at most this many quotations lead when the ranking decides (with or without the
    reader). Chosen with lead_ratio in bench/tune/reason.py (part 2: at most 2 or 3 were tried).
    docs/benchmarks.md, "reason beyond Wikipedia" > "The calibration"."""

    # ------------------------------------------------------------ the relevance gate (gate.py)
    sentence_guard_weight: float = 0.3
    """gate.gate_score: progressive search's relevance (best cosine + coverage of the question's terms) plus
    this times the best quotable sentence's ranking score (on ranking_weights' scale). Passage relevance
    alone cannot tell a passage on the topic from one that answers; the best sentence can. Chosen in
    bench/tune/reason.py (part 3). docs/benchmarks.md, "reason beyond Wikipedia" > "The calibration"."""
    answer_guard: float = 2.0
    """gate.judge: a gate score below this is weak evidence (the no-evidence answer, unless the question is
    scoped). Chosen in bench/tune/reason.py (part 3, the guard table: 0.038 of fit answerable questions
    refused). docs/benchmarks.md, "reason beyond Wikipedia" > "The calibration"."""
    answered_guard: float = 2.9
    """gate.judge: a gate score from answer_guard up to this is on the topic without clearly answering (the
    closest sentence alone, and gate.NOT_ANSWERED_GAP). Chosen with answer_guard on near-miss questions (the
    library keeps the article but not the passage that answers) in bench/tune/reason.py (part 3).
    docs/benchmarks.md, "reason beyond Wikipedia" > "The calibration"."""

    # ------------------------------------------------------------ the reader (read.py, gate.judge_read)
    read_candidates: int = 8
    """read.read: how many of the best-ranked sentences the reader reads and re-orders (12, 16 or 20 scored
    no better and cost more). Chosen in bench/tune/reader.py, like the other read_* fields and
    reader_weight / feature_weight, on the fit halves of two fit domains the reader was not trained on
    (school exams, science texts); chosen again for the shipped weights (the same 8). docs/benchmarks.md, "The
    reader ships"."""
    reader_weight: float = 1.0
    """read.read: the combined score of a sentence the reader read is this times the reader's logit plus
    feature_weight times the ranking's score (the reference weight: bench/tune/reader.py fixes it at 1
    and chooses feature_weight). docs/benchmarks.md, "A reader trained for the job" > "Second run";
    kept for the shipped weights ("The reader ships")."""
    feature_weight: float = 0.5
    """read.read: the ranking score's weight in the combined score (see reader_weight). Chosen in
    bench/tune/reader.py. docs/benchmarks.md, "A reader trained for the job" > "Second run";
    kept for the shipped weights ("The reader ships")."""
    read_lead_ratio: float = 0.1
    """offer.lead_count's ratio (see lead_ratio) when the reader read the sentences, on the combined
    score's probabilities. Chosen in bench/tune/reader.py for the shipped weights (0.2 for the earlier,
    unshipped ones). docs/benchmarks.md, "The reader ships"."""
    read_weak: float = 0.02
    """gate.judge_read: evidence whose best sentence the reader gives less than this chance of holding the
    answer is weak (the no-evidence answer, unless scoped). Chosen in bench/tune/reader.py.
    docs/benchmarks.md, "A reader trained for the job" > "Second run";
    kept for the shipped weights ("The reader ships")."""
    read_answers: float = 0.5
    """gate.judge_read: from read_weak up to this chance, the evidence is on the topic without clearly
    answering (the closest sentence and gate.NOT_ANSWERED_GAP). Chosen in bench/tune/reader.py.
    docs/benchmarks.md, "A reader trained for the job" > "Second run";
    kept for the shipped weights ("The reader ships")."""
    read_gate_blend: float = 0.0
    """gate.read_estimate: how much the retrieval gate's margin (gate_score less answer_guard) adds to the
    reader's log-odds before read_weak and read_answers apply (0: the reader's estimate alone decides).
    Chosen from 0, 0.5, 1 and 2 in bench/tune/reader.py (its BLENDS). docs/benchmarks.md, "A reader trained
    for the job" > "Second run"; kept for the shipped weights ("The reader ships")."""

    read_span_blend: float = 0.0
    """gate.read_estimate: how much the span head's phrase margin for the best sentence (its best phrase's score
    less its no-phrase score) adds to the reader's log-odds before read_weak and read_answers apply (0: it does
    not). Chosen from SPAN_BLENDS in bench/tune/reader.py on the fit domains. docs/benchmarks.md, "The reader
    ships"."""
    phrase_margin: float = 4.0
    """disagree's reading of an answer phrase (and, until 2026-12-07, phrase.with_phrase's, now headline_margin):
    the span head is sure of a phrase when its score (start + end logit) exceeds its no-phrase score ([CLS]'s) by
    at least this. Chosen in bench/tune/reader.py (its
    PHRASE_MARGINS, for phrase_utility: +1 for a right phrase, -1 for a wrong one, 0 for none) on the
    calibration domains' fit halves. docs/benchmarks.md, "The reader ships"."""

    headline_margin: float = 6.0
    """phrase.with_phrase: the span head's margin a phrase needs to lead the answer (phrase_margin, which the
    disagreement rules read, stays 4). 6, with phrase_agreement 0.4, chosen on reason's own answers by
    ``python -m bench.tune.headline`` (2026-12-07): the gate that shows the most right phrases while those shown
    are right for at least 0.90 on each fit kind of text (SQuAD dev's and new_wiki's fit halves, the fit manuals'
    fit halves). Margin 4 had been chosen in a simulation. In-sample (fit kinds) precision 0.945-1.000; held out
    (reddit + Amazon, 500 answerable, with the code rule) 0.905, wrong 0.008 of the answerable (0.889 / 0.012 at
    margin 4). docs/history/51-answers-from-manuals.md, "The headline chosen on what reason shows"."""
    phrase_probability: float = 0.5
    """phrase.with_phrase, with a passage reader (format 3, whose quotes carry ``phrase_probability``): the answer
    leads with the span head's phrase when the head gives it at least this probability among every phrase of the
    window and none (phrase_margin is then not used). Not used by what ships (the packaged reader is the sentence
    reader, format 2): for the passage reader trained so far, bench/tune/passage.py found no threshold whose shown
    phrases are right for 0.90 of the calibration questions they are shown for (0.80 at best, on 5), so this
    value is not a fit. docs/benchmarks.md, "The passage reader and the headline"."""
    phrase_agreement: float = 0.4
    """phrase.with_phrase, with the packaged passage reader beside the sentence reader (read.second_reading): a
    phrase is shown only when the passage reader, reading the window around the best sentence, puts a phrase in
    that sentence or one before it with at least this mass (passage.Span.mass) and most of the same words (0: no
    second reading). 0.2 was chosen for the archive-era passage reader; for the one trained here (2026-12-07) it
    was chosen again on the fit parts of two kinds of text (new_wiki's fit half and the fit manuals' fit halves,
    `python -m bench.tune.passage --manuals`), phrase_margin kept at 4 (the disagreement rules read it too): the
    mass that shows the most right phrases while at least 0.95 of those shown are right, in-sample (0.90
    in-sample had fallen to 0.73 held out). docs/history/51-answers-from-manuals.md, "The passage reader
    retrained, shipped"."""
    type_veto: bool = True
    """phrase.with_phrase: a phrase that does not agree with the question (answer_type.agrees: a "who" question
    answered by "singer", a phrase made of the question's own words) is not shown. A rule, not a fit; off only to
    measure what it changes (bench/tune/passage.py)."""

    # ------------------------------------------------------------ the model's re-ordering (likelihood.py)
    rerank_candidates: int = 4
    """likelihood.rerank: how many of the best-ranked sentences the model reads with the question (the K of
    bench/tune/likelihood.py, which compares K = 2, 3, 4). docs/benchmarks.md, "reason beyond Wikipedia" >
    "Second pass: question likelihood, ..."."""
    likelihood_weight: float = 2.0
    """likelihood.rerank: the re-read sentences are ordered by ranking score + this times the question's
    log-likelihood per token. Fitted in bench/tune/likelihood.py on the fit domains. docs/benchmarks.md,
    "reason beyond Wikipedia" > "Second pass: question likelihood, ..."."""

    # ------------------------------------------------------------ sources that disagree (disagree.py)
    disagree_candidates: int = 6
    """disagree.find: how many of the best-ranked sentences (after the reader) are compared for a disagreement.
    A rule, not a fit: the evaluation sets could not be fetched when it was set (docs/benchmarks.md, "Sources
    that disagree")."""
    disagree_similarity: float = 0.6
    """disagree.differs / read_apart: two sentences agree but for their answers when at least this share of their
    other words match (2 x matched / all, the differing stretch or the phrases left out). A rule, as above."""
    disagree_words: int = 10
    """disagree.differs: the most words of each near-twin's one differing stretch (an answer, not a rewrite). 10,
    chosen on fit records by ``python -m bench.tune.stance --records ...`` (without a stance reader): the smallest
    of 8, 10, 12, 16 that names the most fit near-twins (8 missed answers that are lists: "Des Moines College,
    Kalamazoo College, Butler University, and Stetson University"); no false alarm on any ordinary record, fit or
    held out, at any of them."""
    stance_contradiction: float = 2.0
    """disagree.opposite: two sentences of different documents among the compared ones take opposite sides when
    the stance reader (localreason/stance.py) gives them at least this chance of contradicting each other (read
    both ways round). Above 1: never, as now: no stance reader trained here has reached the bar to ship (none is
    packaged; docs/history/53-disagreement-beyond-near-copies.md), and bench/tune/stance.py chooses this with
    the others below when one does."""
    stance_shared: int = 2
    """disagree.opposite: two sentences are asked about only when they share at least this many of the question's
    content words (both speak of what is asked)."""
    stance_rule: bool = False
    """disagree.opposite when no stance reader is packaged: for a yes/no question, two sentences of different
    documents that both speak to it and take opposite sides by their negations ("does not flow into the North
    Sea") are two sides (reason/polarity.py). **Off**: chosen on the fit records (``python -m bench.tune.stance
    --rule``) it named 0.188 / 0.095 of the opposing pairs (fit / held out), and a probe's agreeing sources were
    called disagreeing for 4 of 29 yes/no questions ("Compression is not enabled by default." against "by default
    tunnels send plain frames"): a sentence without a negation is not a "yes".
    docs/history/53-disagreement-beyond-near-copies.md, "A stance read from negations"."""
    twins_when_closest: bool = False
    """Whether near-twins are also looked for when the relevance gate answers from the closest passage only."""
    stance_when_closest: bool = False
    """Whether opposite stances are also looked for then (yes/no questions often get that answer)."""


DEFAULT = Calibration()
"""The shipped calibration: what ``reason`` uses unless it is given another."""
