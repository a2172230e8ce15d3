"""The offline back-end: an honest, deterministic agent with no language model.

It is the default when no API key is set, and a real baseline rather than a fake of Claude:

- **Decide.** Arithmetic, in symbols or words, is computed
  (:func:`~client_agent.offline.calculation.arithmetic`); a question that shares neither vocabulary
  nor meaning with the corpus descriptions or the database is declined as general knowledge
  without a search — unless some corpus has no description to rule it out (a folder indexed
  without ``corpus.toml``): then those corpora are searched, and the results decide (nothing
  there covers the question: declined as general knowledge, saying what was searched).
  Anything else is split into sub-questions, each routed to the corpus whose description
  matches it clearly (or to all corpora) and searched with ``hybrid_search``.
  A one-part question that compares two names also searches each name, and one whose first
  results are about something it names but leave words uncovered follows the names those
  results mention (:mod:`client_agent.offline.multihop`).
- **Reflect.** Each sub-question is covered when one evidence item holds most of its content
  terms and every code or model name it mentions (:func:`~client_agent.offline.extractive.coverage`),
  or when the relevance model finds a sentence that answers it
  (:func:`~client_agent.offline.extractive.answering_quote`).
  For what is not covered it first restates the sub-question in the documents' own name for
  what it describes, when a definition in the evidence allows ("help-desk software" →
  "Service Cloud", :mod:`client_agent.offline.aliases`), then proposes broader searches (all
  corpora, then semantic search, then the codes alone); for "why" questions it also follows ticket and change codes the
  evidence mentions, since causes tend to span documents.
- **Answer.** For each covered sub-question, the best one or two sentences of the evidence,
  verbatim, each with its citation — or, when the question gives its own amount and the
  evidence states tiers ("after 1 year … after 5 years …"), the tier that amount falls in,
  saying so (:mod:`client_agent.offline.tiers`), or for a "how do I" question the numbered steps that
  answer it (:mod:`client_agent.offline.shapes`); for each uncovered one, what could not be found
  (and, when the question is about records, the database tables that may hold it, since this
  mode does not write SQL). Conflicting sources
  are quoted side by side with the newer one named. A multi-hop question is answered by the
  best sentence of each document of its chain (:func:`~client_agent.offline.multihop.best_chain`).
"""

from __future__ import annotations

import json
import re
from typing import Any

from client_agent.offline import aliases, shapes, tiers
from client_agent.backends.base import AnswerState, Decision, Observation, Reply, RunView, ToolRequest
from client_agent.offline.calculation import arithmetic, format_number
from mcp_server.grounding.verdict import check_answer, enforce
from client_agent.conflicts import find_conflicts
from client_agent.connection import Catalog
from client_agent.evidence import Ledger
from client_agent.offline.extractive import (
    Coverage, Quote, answered_together, answering_quote, best_quotes, chain_quotes, clean, coverage, leads,
    named_symptoms, plain_words, with_base,
)
from client_agent.offline.multihop import Document, HopPlan
from client_agent.offline.planning import (
    SubQuestion, about_records, about_the_knowledge, database_tables, is_causal, resolve_follow_up, route,
    split_question, undescribed,
)
from client_agent.text import content_terms, identifiers, original_words, sentences

TOP_K = 5
MAX_LEADS = 2
READ_FULLY = 2


class OfflineBackend:
    """See the module docstring. One instance answers one question."""

    name = "offline"
    model: str | None = None

    def __init__(self, top_k: int = TOP_K) -> None:
        self.top_k = top_k
        self._question = ""
        self._plan: list[SubQuestion] | None = None
        self._next: list[ToolRequest] = []
        self._issued: set[tuple[str, str, str | None]] = set()
        self._followed: set[str] = set()
        self._read: set[str] = set()
        self._expanded = False
        self._symptoms: list[str] = []
        self._hops: HopPlan | None = None
        self._renamed: set[str] = set()
        """Sub-questions already restated in the documents' names (:mod:`client_agent.offline.aliases`)."""
        self._probing: list[str] = []
        """Undescribed corpora searched to decide whether the question is about them at all."""
        self._ids = 0

    async def decide(self, view: RunView) -> Decision:
        if self._plan is None:
            return self._start(view)
        if view.must_answer or not self._next:
            return self._compose(view)
        requests, self._next = self._next, []
        return Decision(tool_calls=requests, note=f"following up on {len(requests)} gap(s)")

    def observe(self, observations: list[Observation]) -> None:
        """Nothing to keep: the evidence is in the run's ledger."""

    def note(self, text: str) -> None:
        """Loop notes are written for models; this back-end acts on the ledger and its own verdicts."""

    async def reflect(self, view: RunView, retry_feedback: str | None = None) -> Reply:
        assert self._plan is not None, "reflect() before decide()"
        gaps = [(sub, c) for sub in self._plan if not (c := coverage(sub.text, view.ledger)).covered
                and answering_quote(sub.text, view.ledger) is None]
        if self._probing and len(gaps) == len(self._plan):
            self._next = []  # nothing in the undescribed corpora is about it: general knowledge, searched once
            return Reply(json.dumps({"sufficient": False, "next_queries": [],
                                     "missing": [f"{c.question}: nothing in {', '.join(self._probing)} is about it"
                                                 for _, c in gaps]}))
        self._probing = []
        requests = [r for sub, c in gaps if (r := self._renamed_search(sub, c, view) or self._broader_search(sub, c))]
        if self._hops is not None:
            bridges = self._hops.next_queries(view.ledger)
            if self._hops.active:  # the hops are this question's wider search
                requests = [self._request("hybrid_search", query, self._plan[0].corpus) for query in bridges]
                if not requests and answered_together(self._question, self._chain_quotes(view)[0]):
                    gaps = []
        if is_causal(self._question) and not requests:
            requests = self._trace_the_cause(view)
        if not requests and not gaps and len(self._plan) == 1:
            requests = self._read_the_table(self._plan[0], view)
        self._next = requests
        verdict = {
            "sufficient": not gaps and not requests,
            "missing": [f"{c.question}: no source mentions {', '.join(c.uncovered)}" for _, c in gaps],
            "next_queries": [str(r.arguments.get("query") or f"read {r.arguments['doc_id']}") for r in requests],
        }
        return Reply(json.dumps(verdict, ensure_ascii=False))

    def _trace_the_cause(self, view: RunView) -> list[ToolRequest]:
        """For "why" questions, one move at a time: read the top two documents in full, follow the
        ticket and change codes they mention, then search for the alert or error they are named
        after, in words — the documents that explain a behaviour use its words, not its code."""
        top = list(dict.fromkeys(item.doc_key for item in sorted(view.ledger, key=lambda e: (e.step, e.rank))
                                 if item.kind == "chunk"))[:READ_FULLY]
        unread = [doc for doc in top if doc not in self._read]
        if unread:
            self._read.update(unread)
            return [self._document_request(doc) for doc in unread]
        read = [item for item in view.ledger if item.kind == "document" and item.doc_key in self._read]
        codes = leads(read, self._question, self._followed)[:MAX_LEADS]
        if codes:
            self._followed.update(code.lower() for code in codes)
            return [self._request("keyword_search", code, None) for code in codes]
        if not self._expanded:
            self._expanded = True
            titles = [item.title for item in view.ledger if item.doc_key in self._read]
            self._symptoms = named_symptoms(titles)[:MAX_LEADS]
            return [self._request("hybrid_search", f"{plain_words(self._question)} {name}", None)
                    for name in self._symptoms]
        return []

    def _read_the_table(self, sub: SubQuestion, view: RunView) -> list[ToolRequest]:
        """For "the most expensive …" questions whose table no hit holds: read the best-covering document
        whole, once (a table often sits in a chunk of its own that the question's words do not find)."""
        best = coverage(sub.text, view.ledger).best
        if not shapes.asks_extreme(sub.text) or best is None or best.doc_key in self._read or best_quotes(
                sub.text, _of_document(best.doc_key, view.ledger), extreme_only=True):
            return []
        self._read.add(best.doc_key)
        return [self._document_request(best.doc_key)]

    def _document_request(self, doc_key: str) -> ToolRequest:
        self._ids += 1
        return ToolRequest(f"offline-{self._ids}", "get_document", {"doc_id": doc_key})

    async def revise(self, view: RunView, answer: str, feedback: str) -> Decision:
        """Extractive sentences should pass; any that do not are dropped rather than rewritten."""
        return Decision(answer=enforce(answer, check_answer(answer, view.ledger.texts()), "remove").answer)

    async def aclose(self) -> None:
        """Nothing to release."""

    # --- deciding ---------------------------------------------------------------------------------

    def _start(self, view: RunView) -> Decision:
        question = resolve_follow_up(view.question, [turn.question for turn in view.history])
        self._question = question
        calculation = arithmetic(question)
        if calculation is not None:
            expression, value = calculation
            self._plan = []
            return Decision(answer=f"{expression} = {format_number(value)}.",
                            note="arithmetic: computed directly, no retrieval needed")
        if not about_the_knowledge(question, view.catalog):
            self._probing = undescribed(view.catalog)
            if not self._probing:
                self._plan = []
                return Decision(answer=_decline(view.catalog), state="insufficient",
                                note="general-knowledge question: not in the knowledge base, not retrieving")
        tables = database_tables(question, view.catalog)
        if tables:
            self._plan = []
            return Decision(answer=_needs_sql(tables), state="insufficient",
                            note=f"a question for the database ({', '.join(tables)}), which this mode cannot query")
        probed = self._probing[0] if len(self._probing) == 1 else None
        self._plan = [SubQuestion(part, probed if self._probing else route(part, view.catalog.corpora))
                      for part in split_question(question)]
        requests = [self._request("hybrid_search", sub.text, sub.corpus) for sub in self._plan]
        if self._probing:
            return Decision(tool_calls=requests, note=f"no description rules it out: searching {', '.join(self._probing)}")
        if len(self._plan) == 1 and not is_causal(question):
            self._hops = HopPlan.for_question(question)
            corpus = self._plan[0].corpus
            requests += [self._request("hybrid_search", query, corpus) for query in self._hops.first_queries()]
        return Decision(tool_calls=requests, note=f"offline mode: {len(self._plan)} part(s) to look up")

    def _renamed_search(self, sub: SubQuestion, gap: Coverage, view: RunView) -> ToolRequest | None:
        """A search for ``sub`` in the documents' own name for what it describes (once per sub-question;
        the renamed sub-question replaces it in the plan), or first a search for the words that name it."""
        if sub.text in self._renamed:
            return None
        renamed = aliases.resolve(sub.text, gap.uncovered, view.ledger)
        if renamed is None:
            words = " ".join(aliases.uncovered_runs(sub.text, gap.uncovered))
            unsearched = words and ("hybrid_search", words, sub.corpus) not in self._issued
            return self._request("hybrid_search", words, sub.corpus) if unsearched else None
        assert self._plan is not None
        self._renamed.add(renamed)
        self._plan[self._plan.index(sub)] = SubQuestion(renamed, None)
        return self._request("hybrid_search", renamed, None)

    def _broader_search(self, sub: SubQuestion, gap: Coverage) -> ToolRequest | None:
        """The next untried, wider search for an uncovered sub-question, or None when all were tried."""
        codes = [c for c in identifiers(sub.text) if c.lower() in gap.uncovered]
        attempts = [("hybrid_search", sub.text, None), ("vector_search", sub.text, None)]
        if codes:
            attempts.insert(0, ("keyword_search", " ".join(codes), None))
        for tool, query, corpus in attempts:
            if (tool, query, corpus) not in self._issued:
                return self._request(tool, query, corpus)
        return None

    def _request(self, tool: str, query: str, corpus: str | None) -> ToolRequest:
        self._issued.add((tool, query, corpus))
        self._ids += 1
        arguments: dict[str, Any] = {"query": query, "top_k": self.top_k}
        if corpus:
            arguments["corpus"] = corpus
        return ToolRequest(f"offline-{self._ids}", tool, arguments)

    # --- answering --------------------------------------------------------------------------------

    def _compose(self, view: RunView) -> Decision:
        assert self._plan is not None
        lines: list[str] = []
        used: set[str] = set()
        for conflict in find_conflicts(view.ledger, self._question):
            newer = conflict.newer
            lines.append("The sources disagree on this.")
            for statement in (conflict.first, conflict.second):
                lines.append(f"{statement.evidence.title} says: {statement.sentence} [{statement.evidence.citation_id}]")
                used.add(statement.sentence)
            if newer is not None:
                lines.append(f"The newer source is {newer.evidence.title}, dated {newer.evidence.updated} "
                             f"[{newer.evidence.citation_id}].")
        if self._probing:
            missing = [w for sub in self._plan for w in _missing_words(coverage(sub.text, view.ledger), view.ledger)]
            return Decision(answer=_not_in_undescribed(self._probing, missing), state="insufficient")
        shaped = self._shaped(self._question, view.ledger) if len(self._plan) == 1 else []
        if shaped:
            return Decision(answer="\n".join([*lines, *shaped]), state="answered")
        if self._hops is not None and self._hops.active:
            return self._chain_answer(view, lines)
        unanswered = 0
        for sub in self._plan:
            gap = coverage(sub.text, view.ledger)
            answer = answering_quote(sub.text, view.ledger, exclude=used)
            if not gap.covered and answer is None:
                unanswered += 1
                lines.append(_not_found(gap, view.catalog, view.ledger))
                continue
            shaped = self._shaped(sub.text, view.ledger) if gap.covered else []
            if shaped and shaped[-1] not in lines:
                lines.extend(shaped)
                continue
            if gap.covered and is_causal(sub.text):
                quotes = chain_quotes(f"{sub.text} {' '.join(self._symptoms)}", view.ledger)
            elif answer is not None:
                quotes = with_base(sub.text, answer, view.ledger)
            elif answering_quote(sub.text, view.ledger) is not None:
                continue  # a sentence already quoted for an earlier part answers this one too
            else:
                unanswered += 1
                quotes = best_quotes(sub.text, view.ledger, exclude=used)
                lines.append(_not_said(quotes))
            used.update(q.sentence for q in quotes)
            lines.extend(q.cited() for q in quotes)
        state: AnswerState = "insufficient" if unanswered else "answered"
        return Decision(answer="\n".join(lines), state=state)

    @staticmethod
    def _shaped(question: str, ledger: Ledger) -> list[str]:
        """The answer lines of a tiered fact or a procedure's steps for ``question``, or [] when neither fits."""
        tier = tiers.resolve(question, ledger)
        if tier is not None:
            return tier.lines()
        steps = shapes.procedure(question, ledger)
        return steps.cited() if steps is not None else []

    def _chain_quotes(self, view: RunView) -> tuple[list[Quote], list[str]]:
        """The best sentence of each document of the chain, in chain order, and the answer lines quoting them
        (a document with no sentence is quoted by its opening sentence)."""
        assert self._hops is not None
        used: set[str] = set()
        chosen: list[Quote] = []
        quoted: list[str] = []
        for document in self._hops.chain(view.ledger):
            quotes = best_quotes(self._question, _only(document, view.ledger), exclude=used, limit=1)
            chosen.extend(quotes)
            used.update(q.sentence for q in quotes)
            opening = _opening(document, view.ledger) if not quotes else ""
            quoted.extend([q.cited() for q in quotes] or ([opening] if opening else []))
        return chosen, quoted

    def _chain_answer(self, view: RunView, lines: list[str]) -> Decision:
        """The best sentences of each document of the chain (:meth:`_chain_quotes`). Answered when the relevance
        model finds the chosen sentences, read together, answer the question (:func:`~client_agent.offline.extractive.answered_together`),
        or else one sentence of the evidence does (:func:`~client_agent.offline.extractive.answering_quote`);
        otherwise insufficient, with what was not found first."""
        chosen, quoted = self._chain_quotes(view)
        if answered_together(self._question, chosen):
            return Decision(answer="\n".join([*lines, *quoted]), state="answered")
        if (answer := answering_quote(self._question, view.ledger)) is not None:
            return Decision(answer="\n".join([*lines, answer.cited()]), state="answered")
        return Decision(answer="\n".join([*lines, _not_said(chosen), *quoted]), state="insufficient")


def _only(document: Document, ledger: Ledger) -> Ledger:
    """A ledger of ``document``'s evidence alone."""
    return _of_document(document.key, ledger)


def _of_document(doc_key: str, ledger: Ledger) -> Ledger:
    """A ledger of the evidence of the document ``doc_key`` alone."""
    alone = Ledger(ledger.token_budget)
    alone.add(item for item in ledger if item.doc_key == doc_key)
    return alone


def _opening(document: Document, ledger: Ledger) -> str:
    """The first sentence of ``document``'s first evidence item, cited: what the document is about."""
    item = next((item for item in ledger if item.doc_key == document.key), None)
    first = next(iter(sentences(item.text, headings=False)), "") if item is not None else ""
    return f"{clean(first)} [{item.citation_id}]" if item is not None and first else ""


def _not_said(closest: list[Quote]) -> str:
    """What could not be found when the sentences nearest to the question do not answer it (a statement about
    the evidence, which needs no citation), and that they follow."""
    if not closest:
        return "I could not find this in the sources."
    return "I could not find this in the sources: the closest passages do not answer it. They say:"


def _not_found(gap: Coverage, catalog: Catalog, ledger: Ledger) -> str:
    missing = _missing_words(gap, ledger)
    message = ("I could not find this in the knowledge base: " + (f"no source mentions {' or '.join(missing)}."
               if missing else "no source says all of it."))
    tables = _tables_for(gap.question, catalog) if about_records(gap.question) else []
    return f"{message} {_needs_sql(tables)}" if tables else message


def _needs_sql(tables: list[str]) -> str:
    return (f"I did not query the database, whose table(s) {', '.join(tables)} may hold the answer: the offline "
            "mode does not write SQL, so ask again with Claude (set ANTHROPIC_API_KEY) or use `ragmcp sql`.")


def _tables_for(question: str, catalog: Catalog) -> list[str]:
    """Database tables whose name or description shares terms with ``question``."""
    try:
        tables = json.loads(catalog.sql_schema) if catalog.sql_schema else []
    except json.JSONDecodeError:
        return []
    terms = set(content_terms(question))
    return [t["name"] for t in tables if terms & set(content_terms(f"{t['name']} {t.get('description', '')}"))]


def _not_in_undescribed(searched: list[str], missing: list[str]) -> str:
    """The answer when a search of corpora without a description found nothing about the question. It may well
    be a question about the user's own documents that they do not answer, so it is not called general knowledge;
    worded as statements about the evidence (the citation check exempts those)."""
    mentions = f": none of its passages mentions {' or '.join(dict.fromkeys(missing))}" if missing else ""
    return (f"I found no source about this in {', '.join(searched)}{mentions} (it has no description of what it "
            "holds, so I searched it). I could not answer it otherwise, should it be a general-knowledge question: "
            "the offline mode has no language model and only answers from the knowledge base; set "
            "ANTHROPIC_API_KEY to ask Claude.")


def _missing_words(gap: Coverage, ledger: Ledger) -> list[str]:
    """The question's words for the terms no evidence item holds, as the question writes them (not the word its
    "how" asks with: "how long", "how far")."""
    said = {term for item in ledger for term in content_terms(f"{item.header}\n{item.text}")}
    said.update(t for word in re.findall(r"\bhow\s+(\w+)", gap.question, re.I) for t in content_terms(word))
    return original_words(gap.question, [t for t in gap.uncovered if t not in said])


def _decline(catalog: Catalog) -> str:
    """The answer to a general-knowledge question that the corpus descriptions rule out, without a search."""
    topics = ", ".join(c.name for c in catalog.corpora) or "no corpora"
    return ("This looks like a general-knowledge question rather than one about the knowledge base "
            f"(corpora: {topics}), so I did not search it. The offline mode has no language model and only "
            "answers from the knowledge base; set ANTHROPIC_API_KEY to ask Claude.")
