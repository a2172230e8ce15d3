"""What crafted check_answer calls and quotes cost, and what they do to another team's hybrid search (issue 35, finding 4).

Runs against a checkout - this one, or the one given with ``--checkout`` (the code before, for the
comparison) - in two parts:

- **CPU per call**: in a child process of that checkout, the CPU time (``time.process_time``) of
  ``check_cited_answer`` (the ``check_answer`` tool without the transport) on an ordinary answer and
  on crafted ones (answer text alone: a run of dots, full stops after abbreviations, lines of
  citation brackets, combining marks; and chunks of many short sentences cited as often as
  allowed), and of ``locate_quote`` (``get_document`` with ``quote``) on an ordinary document and on
  crafted ones (one line of 1,000,000 CJK characters, the red team's case; runs of combining
  marks; ß; a quote of two letters). A case stops after ``--case-timeout`` seconds and is reported
  as at least that.
- **another team's latency**: ``ragmcp serve --transport http`` (one worker) over two small corpora,
  team A (default client limits) sending the crafted answers and quotes from four threads, team B
  calling ``hybrid_search``; quiet and loaded stretches of 0.3 s alternate (a quiet one starts when
  A's calls in flight have ended), and B's median latency in each is reported, with their ratio.

It writes ``results-check-cpu-<label>.json``.

    git worktree add /tmp/before <commit before the fix>
    python bench/security/check_cpu.py --checkout /tmp/before --label before
    python bench/security/check_cpu.py --label after
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
CJK_LINE = "".join(chr(0x4E00 + (i * 7919) % 20_000) for i in range(1_000_000))
TWO_LETTERS = "".join(random.Random(5).choices("ab", k=4_000))
CRAFTED_ANSWERS = {  # each at most 10,000 characters: the limit after the fix (it was 20,000)
    "a run of dots": "a" + "." * 9_900 + "b",
    "full stops after abbreviations": "e.g. " * 2_000,
    "lines of citation brackets": "x\n" + "[teama:badges#0]\n" * 580,
    "combining marks": "a" + "\u0301\u0316" * 4_990,
}

CPU_CHILD = r'''
import json, sys, time
from mcp_server.models import Citation
from mcp_server.stores.docstore import StoredChunk, StoredDocument
from mcp_server.surface.answer_check import check_cited_answer
from mcp_server.retrieval.quote_location import locate_quote

def citation(cid):
    return Citation(id=cid, corpus="t", doc_id="d", chunk=0, title="T", source="d.md", section="", char_start=0,
                    char_end=1, line_start=1)

def check(answer, chunks):
    try:
        check_cited_answer(answer, None, lambda cid: (citation(cid), chunks[cid]) if cid in chunks else None)
    except Exception as e:  # a refusal is an outcome too
        return type(e).__name__
    return "checked"

def document(text):
    doc = StoredDocument(corpus="t", doc_id="d", source="d.md", title="D", category=None, tags=(), date=None,
                         url=None, extra={}, fingerprint="f", text=text)
    return doc, [StoredChunk(chunk=n, char_start=s, char_end=min(s + 1000, len(text)), section="")
                 for n, s in enumerate(range(0, len(text), 1000))]

def locate(quote, text, prefer):
    doc, spans = document(text)
    try:
        locate_quote(quote, doc, spans, prefer)
    except Exception as e:
        return type(e).__name__
    return "found"

case, arguments = json.loads(sys.stdin.read())
leave = "New staff get 20 days of annual leave per year after the probation period [hb:leave#{}]."
chunk = ("New staff get 20 days of annual leave per year after the probation period. Leave must be requested "
         "two weeks ahead through the HR portal. ") * 8
if case == "answer":
    work = lambda: check(arguments["answer"], {})
elif case == "ordinary answer":
    answer = " ".join(leave.format(k % 5) for k in range(30))
    work = lambda: check(answer, {f"hb:leave#{k}": chunk for k in range(5)})
elif case == "chunks of many short sentences":
    ids = [f"t:d#{k}" for k in range(20)]
    chunks = {cid: "Alpha beta gamma delta. " * 70 for cid in ids}
    answer = " ".join("Alpha beta gamma delta [" + ", ".join(ids[(k * 3 + j) % 20] for j in range(5)) + "]."
                      for k in range(20))
    work = lambda: check(answer, chunks)
else:
    work = lambda: locate(arguments["quote"], arguments["text"], arguments.get("prefer"))
started = time.process_time()
outcome = work()
print(json.dumps({"cpu_s": time.process_time() - started, "outcome": outcome}))
'''


def cpu_cases() -> dict[str, tuple[str, dict[str, object]]]:
    english = ("The pump is grey and needs a new filter cartridge every four hundred operating hours. " * 600)[:50_000]
    return {
        "check_answer: ordinary answer (30 sentences, 5 chunks)": ("ordinary answer", {}),
        **{f"check_answer: {name}": ("answer", {"answer": answer}) for name, answer in CRAFTED_ANSWERS.items()},
        "check_answer: chunks of many short sentences (20 sentences x 5 ids)": ("chunks of many short sentences", {}),
        "quote: ordinary (50,000-character English document)": (
            "quote", {"quote": "needs a new filter cartridge every four hundred", "text": english}),
        "quote: one line of 1,000,000 CJK characters (quote at its end, chunk named)": (
            "quote", {"quote": CJK_LINE[-300:], "text": CJK_LINE, "prefer": 999}),
        "quote: 100,000 combining marks": ("quote", {"quote": "a\u0301\u0316\u0301", "text": "a" + "\u0301\u0316" * 50_000}),
        "quote: 100,000 x ß": ("quote", {"quote": "strasse", "text": "\u00df" * 100_000}),
        "quote: two letters (1,000 of them against 3,000)": (
            "quote", {"quote": TWO_LETTERS[:1_000], "text": TWO_LETTERS[1_000:]}),
    }  # fmt: skip


def measure_cpu(checkout: Path, timeout_s: float) -> dict[str, object]:
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    results: dict[str, object] = {}
    for name, (case, arguments) in cpu_cases().items():
        try:
            child = subprocess.run(
                [sys.executable, "-c", CPU_CHILD], input=json.dumps([case, arguments]), capture_output=True, text=True,
                env=env, cwd=checkout, timeout=timeout_s, check=True,
            )  # fmt: skip
            measured = json.loads(child.stdout)
            results[name] = {"cpu_ms": round(measured["cpu_s"] * 1000, 1), "outcome": measured["outcome"]}
        except subprocess.TimeoutExpired:
            results[name] = {"cpu_ms": f">{timeout_s * 1000:.0f}", "outcome": "stopped by the bench"}
        print(name, results[name], flush=True)
    return results


def start_server(checkout: Path, scratch: Path, port: int) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    """A team server over teama (a badge note and one line of 200,000 CJK characters) and teamb (launch notes)."""
    folders = {name: scratch / name for name in ("teama", "teamb")}
    for name, folder in folders.items():
        folder.mkdir()
        (folder / "corpus.toml").write_text(f'name = "{name}"\ndescription = "{name} notes."\n', encoding="utf-8")
    (folders["teama"] / "badges.md").write_text("# Badges\n\nThe wombat badge opens the north door.\n", encoding="utf-8")
    (folders["teama"] / "line.txt").write_text(CJK_LINE[:200_000] + "\n", encoding="utf-8")
    (folders["teamb"] / "launch.md").write_text(
        "# Launch\n\nProject quokka launches in March with a budget of 42 million.\n", encoding="utf-8"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGMCP_")}
    env.update(PYTHONPATH=str(checkout), RAGMCP_DATA_DIR=str(scratch / "data"), RAGMCP_TOKENS_FILE=str(scratch / "tokens"),
               RAGMCP_CORPORA=os.pathsep.join(map(str, folders.values())))  # fmt: skip
    subprocess.run([sys.executable, "-m", "mcp_server", "ingest"], env=env, check=True, capture_output=True, cwd=checkout)
    tokens = {}
    for name, corpus, limits in (("crafter", "teama", []), ("searcher", "teamb", ["--rate", "6000", "--burst", "500"])):
        add = [sys.executable, "-m", "mcp_server", "token", "add", name, "--corpora", corpus, *limits]
        tokens[name] = subprocess.run(add, env=env, check=True, capture_output=True, text=True, cwd=checkout).stdout.strip()
    command = [sys.executable, "-m", "mcp_server", "serve", "--transport", "http", "--port", str(port)]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=checkout)
    deadline = time.monotonic() + 120
    while not _healthy(port):
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("the server did not start")
        time.sleep(0.2)
    return process, tokens


def _healthy(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def call(client: httpx.Client, port: int, token: str, tool: str, arguments: dict[str, object]) -> httpx.Response:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
    return client.post(f"http://127.0.0.1:{port}/mcp", json=message, headers={**HEADERS, "Authorization": f"Bearer {token}"})


def measure_latency(checkout: Path, rounds: int) -> dict[str, object]:
    crafted = [("check_answer", {"answer": answer}) for answer in CRAFTED_ANSWERS.values()] + [
        ("get_document", {"doc_id": "teama:line", "quote": CJK_LINE[1_000:1_300]}),  # found
        ("get_document", {"doc_id": "teama:line", "quote": CJK_LINE[199_000:199_300]}),  # found before the fix only
    ]
    with tempfile.TemporaryDirectory() as scratch, socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        process, tokens = start_server(checkout, Path(scratch), port)
        attacking, stopped = threading.Event(), threading.Event()
        in_flight = threading.Semaphore(4)
        served: list[int] = []

        def craft(offset: int) -> None:
            with httpx.Client(timeout=300) as client:
                for n in range(offset, 10**6):
                    while not attacking.wait(0.01):
                        if stopped.is_set():
                            return
                    with in_flight:
                        answer = call(client, port, tokens["crafter"], *crafted[n % len(crafted)])
                    if answer.status_code == 429:
                        stopped.wait(float(answer.headers.get("retry-after", "1")))
                    else:
                        served.append(answer.status_code)

        def searches(seconds: float) -> list[float]:
            took = []
            with httpx.Client(timeout=300) as client:
                until = time.monotonic() + seconds
                while time.monotonic() < until:
                    started = time.monotonic()
                    call(client, port, tokens["searcher"], "hybrid_search", {"query": "when does project quokka launch"})
                    took.append(time.monotonic() - started)
            return took

        threads = [threading.Thread(target=craft, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        quiet: list[float] = []
        loaded: list[float] = []
        try:
            searches(1.0)
            idle = searches(2.0)
            for _ in range(rounds):
                quiet += searches(0.3)
                attacking.set()
                loaded += searches(0.3)
                attacking.clear()
                for _ in range(4):  # the calls in flight end before the next quiet stretch
                    in_flight.acquire()
                for _ in range(4):
                    in_flight.release()
        finally:
            stopped.set()
            for thread in threads:
                thread.join()
            process.terminate()
            process.wait(60)
    return {
        "rounds": rounds, "crafted calls served": len(served), "searches quiet": len(quiet), "searches loaded": len(loaded),
        "search p50 before any crafted call ms": round(statistics.median(idle) * 1000, 1),
        "search p50 quiet ms": round(statistics.median(quiet) * 1000, 1),
        "search p50 loaded ms": round(statistics.median(loaded) * 1000, 1),
        "ratio": round(statistics.median(loaded) / statistics.median(quiet), 2),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--checkout", type=Path, default=REPO)
    parser.add_argument("--label", default="after")
    parser.add_argument("--case-timeout", type=float, default=120)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    checkout = args.checkout.resolve()
    results: dict[str, object] = {"label": args.label, "load_average": os.getloadavg()}
    results["cpu per call"] = measure_cpu(checkout, args.case_timeout)
    results["hybrid_search of team B beside team A's crafted calls"] = measure_latency(checkout, args.rounds)
    print(json.dumps(results, indent=2, ensure_ascii=False))
    (Path(__file__).parent / f"results-check-cpu-{args.label}.json").write_text(
        json.dumps(results, indent=2, ensure_ascii=False) + "\n"
    )


if __name__ == "__main__":
    main()
