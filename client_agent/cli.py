"""``rag-agent``: ask the knowledge base questions and get answers whose citations check out.

``ask`` answers one question; ``chat`` answers a conversation, resolving follow-ups against
earlier turns; ``eval`` runs a question set and reports quality and cost. All connect to the
retrieval server — by default they spawn ``ragmcp serve`` over stdio (building the bundled
demo index on first use), or use ``--server-url`` for a shared HTTP server. The answer goes to stdout followed by its sources; progress, the
back-end in use and errors go to stderr. ``--json`` prints one machine-readable object.

Back-ends (``--backend``): ``anthropic`` (Claude, or an Anthropic-compatible server at
``--base-url``), ``openai`` (OpenAI's API or any OpenAI-compatible server at ``--base-url``),
``offline`` (no model). ``auto``, the default, picks ``anthropic`` when ANTHROPIC_API_KEY is
set, else ``openai`` when OPENAI_API_KEY or OPENAI_BASE_URL is set or ``--base-url`` is given
(every local model server speaks chat completions), else ``offline``. Each model back-end's
SDK is imported only when it is chosen.

Answers, sources and progress hold text from the documents (quotes, titles), so they are printed
through :mod:`mcp_server.display_text`: a control, escape or text-direction character in them is
shown as its escape, never acted on by the terminal.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

import anyio
import click

from client_agent.backends.base import Backend, Exchange
from client_agent.backends.conversation import CitationMode
from client_agent.offline.backend import OfflineBackend
from client_agent.connection import ToolServer, connect
from client_agent.errors import AgentError, QuestionSetError
from client_agent.evaluation import (
    EvalQuestion, Prices, evaluate, load_questions, render_markdown, write_report,
)
from client_agent.loop import Agent, Budgets, RunResult
from client_agent.trace import default_trace_path
from mcp_server.display_text import for_display, json_for_display
from mcp_server.models import LOCATION_FIELDS, describe_location

BACKENDS = ("auto", "anthropic", "openai", "offline")
CITATIONS = ("auto", "native", "text")


def _say(message: str) -> None:
    click.echo(message, err=True)


class Options:
    """The options ``ask`` and ``chat`` share."""

    def __init__(self, **values: Any) -> None:
        self.backend: str = values["backend"]
        self.model: str | None = values["model"]
        self.base_url: str | None = values["base_url"]
        self.api_key: str | None = values["api_key"]
        self.citations: CitationMode = values["citations"]
        self.max_output_tokens: int | None = values["max_output_tokens"]
        self.max_retries: int = values["max_retries"]
        self.server_url: str | None = values["server_url"]
        self.token: str | None = values["token"]
        self.corpora: tuple[Path, ...] = values["corpora"]
        if self.corpora and self.server_url:
            raise click.UsageError("--corpus sets what a spawned server serves; a --server-url server serves its own "
                                   "corpora (its RAGMCP_CORPORA).")
        self.trace: Path | None = values["trace"]
        self.as_json: bool = values["as_json"]
        self.quiet: bool = values["quiet"]
        self.budgets = Budgets(max_steps=values["max_steps"], max_tool_calls=values["max_tool_calls"],
                               max_tokens=values["token_budget"])
        self._announced = False

    def server_env(self) -> dict[str, str] | None:
        """The spawned server's environment: this one, with RAGMCP_CORPORA set to the --corpus folders."""
        if not self.corpora:
            return None
        return {**os.environ, "RAGMCP_CORPORA": os.pathsep.join(str(folder) for folder in self.corpora)}

    def progress(self, message: str) -> None:
        if not self.quiet:
            _say(f"  {for_display(message)}")

    def notice(self, message: str) -> None:
        """A back-end's word on how it talks to the model server (the model it chose...), unless --quiet."""
        if not self.quiet:
            _say(message)

    def make_backend(self) -> Backend:
        """The chosen back-end (``auto`` resolved as the module docstring says, and announced once)."""
        choice, reason = self._resolved()
        if reason and not self.quiet and not self._announced:
            _say(reason)
            self._announced = True
        if choice == "offline":
            return OfflineBackend()
        if choice == "openai":
            from client_agent.backends import openai_backend

            return openai_backend.from_environment(
                model=self.model, base_url=self.base_url, api_key=self.api_key, max_tokens=self.max_output_tokens,
                max_retries=self.max_retries, notice=self.notice)
        from client_agent.backends import anthropic_backend

        return anthropic_backend.from_environment(
            model=self.model, base_url=self.base_url, api_key=self.api_key, max_tokens=self.max_output_tokens,
            max_retries=self.max_retries, citations=self.citations, notice=self.notice)

    def remember(self, backend: Backend) -> None:
        """Carry what a run learned about the model server into the next run of this command: the model
        it serves (when it was asked) and whether it takes native citations."""
        if backend.model:
            self.model = backend.model
        self.citations = getattr(backend, "citations", self.citations)

    def _resolved(self) -> tuple[str, str]:
        if self.backend != "auto":
            return self.backend, ""
        if os.environ.get("ANTHROPIC_API_KEY"):
            return "anthropic", "back-end: anthropic (ANTHROPIC_API_KEY is set)"
        for variable in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
            if os.environ.get(variable):
                return "openai", f"back-end: openai ({variable} is set)"
        if self.base_url:
            return "openai", f"back-end: openai, the OpenAI-compatible server at {self.base_url}"
        return "offline", ("offline mode (no ANTHROPIC_API_KEY or OPENAI_* set): answers are cited quotes from the "
                           "sources, no model.")


def shared_options(command: Callable[..., Any]) -> Callable[..., Any]:
    options = [
        click.option("--backend", type=click.Choice(BACKENDS), default="auto", show_default=True,
                     help="Who decides: Claude or an Anthropic-compatible server (anthropic), OpenAI or any "
                          "OpenAI-compatible server such as Ollama, llama.cpp, vLLM, LM Studio (openai), or no model "
                          "(offline). auto: anthropic if ANTHROPIC_API_KEY is set, else openai if OPENAI_API_KEY or "
                          "OPENAI_BASE_URL is set or --base-url is given, else offline."),
        click.option("--model", envvar="RAG_AGENT_MODEL",
                     help="Model id (default: Claude's default; for openai with --base-url, the server's first model)."),
        click.option("--base-url", help="The model server: Messages API base (anthropic; default ANTHROPIC_BASE_URL) "
                                        "or chat-completions base ending in /v1 (openai; default OPENAI_BASE_URL)."),
        click.option("--api-key", help="API key (default ANTHROPIC_API_KEY or OPENAI_API_KEY; local servers need none)."),
        click.option("--citations", type=click.Choice(CITATIONS), default="auto", show_default=True,
                     help="anthropic back-end: search hits as search_result blocks for Claude's native citations, "
                          "or as cited text (for Anthropic-compatible servers); auto falls back to text when the "
                          "server rejects search_result blocks."),
        click.option("--max-output-tokens", type=click.IntRange(64, 64_000),
                     help="Most tokens one model reply may have (model back-ends)."),
        click.option("--max-retries", type=click.IntRange(0, 20), default=4, show_default=True,
                     help="Retries with backoff when the model API is overloaded or rate-limited."),
        click.option("--server-url", envvar="RAG_AGENT_SERVER_URL",
                     help="A shared ragmcp HTTP server, e.g. http://host:8765/mcp (default: spawn one over stdio)."),
        click.option("--token", envvar="RAG_AGENT_TOKEN", help="Bearer token for --server-url."),
        click.option("--corpus", "corpora", multiple=True,
                     type=click.Path(exists=True, file_okay=False, resolve_path=True, path_type=Path),
                     help="A folder of your documents for the spawned server to index and serve (repeatable; "
                          "default: RAGMCP_CORPORA, else the bundled demo corpora). Not with --server-url."),
        click.option("--max-steps", type=click.IntRange(1, 50), default=8, show_default=True),
        click.option("--max-tool-calls", type=click.IntRange(1, 200), default=12, show_default=True),
        click.option("--token-budget", type=click.IntRange(1_000, 10_000_000), default=100_000, show_default=True,
                     help="Model input+output tokens for one question."),
        click.option("--trace", type=click.Path(dir_okay=False, path_type=Path),
                     help="Write the run's JSONL trace here (default: a new file in the user log directory)."),
        click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text."),
        click.option("--quiet", "-q", is_flag=True,
                     help="Nothing on stderr but errors: no progress, and none of the spawned server's lines unless "
                          "it fails."),
    ]
    for option in reversed(options):
        command = option(command)
    return command


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="agentic-rag-mcp")
@click.option("--debug", is_flag=True, help="Show the traceback of an unexpected error (a bug) instead of one line.")
@click.pass_context
def main(context: click.Context, debug: bool) -> None:
    """Answer questions over an agentic-rag-mcp server, with checked citations."""
    context.obj = debug


@main.command()
@click.argument("question")
@shared_options
def ask(question: str, **values: Any) -> None:
    """Answer QUESTION from the knowledge base, citing every fact."""
    if not question.strip():
        raise click.UsageError("The question is empty; ask something, e.g. rag-agent ask \"how do I reset my password\".")
    options = Options(**values)

    async def session(server: ToolServer) -> None:
        result = await _answer(server, options, question, [], options.trace)
        _print(result, options)

    _run_with_server(options, session)


@main.command()
@shared_options
def chat(**values: Any) -> None:
    """A conversation: type questions, follow-ups may refer to earlier answers; an empty line or Ctrl-D ends it."""
    options = Options(**values)

    async def session(server: ToolServer) -> None:
        history: list[Exchange] = []
        while True:
            question = await anyio.to_thread.run_sync(_read_question)
            if not question:
                return
            result = await _answer(server, options, question, history, None)
            _print(result, options)
            history.append(Exchange(question, result.answer))

    _run_with_server(options, session)


@main.command(name="eval")
@click.argument("question_set", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), default=Path("eval-report.json"),
              show_default=True, help="Where to write the full JSON report (summary plus every run).")
@click.option("--input-price", type=click.FloatRange(0), help="US dollars per million input tokens, for the cost.")
@click.option("--output-price", type=click.FloatRange(0), help="US dollars per million output tokens, for the cost.")
@shared_options
def evaluate_command(question_set: Path, output: Path, input_price: float | None, output_price: float | None,
                     **values: Any) -> None:
    """Run every question of QUESTION_SET (JSONL) and report process health, quality and cost.

    Each line: {"question": ..., "kind": ..., "expected_answer": ..., "expected_state": ...,
    "expected_sources": [...]} (all but "question" optional). Prints the report as Markdown.
    Run it once per --backend/--model to compare models; with the prices, the cost is in dollars.
    """
    try:
        questions = load_questions(question_set)
    except QuestionSetError as exc:
        raise click.UsageError(str(exc)) from exc
    options = Options(**values)
    traces = output.with_suffix("").with_name(output.stem + "-traces")

    async def session(server: ToolServer) -> None:
        async def ask(question: EvalQuestion) -> RunResult:
            name = question.id or f"q{questions.index(question) + 1:03d}"
            return await _answer(server, options, question.question, [], traces / f"{name}.jsonl")

        outcomes = await evaluate(questions, ask, options.progress)
        priced = input_price is not None or output_price is not None
        report = write_report(outcomes, output, Prices(input_price or 0.0, output_price or 0.0) if priced else None)
        if options.as_json:
            click.echo(json_for_display(json.dumps(report, ensure_ascii=False, indent=2)))
        else:
            click.echo(for_display(render_markdown(report), lines=True))
        _say(f"report: {output}; traces: {traces}/")

    _run_with_server(options, session)


def _read_question() -> str:
    if sys.stdin.isatty():
        _say("")
    try:
        return input("? " if sys.stdin.isatty() else "").strip()
    except EOFError:
        return ""


async def _answer(server: ToolServer, options: Options, question: str, history: list[Exchange],
                  trace: Path | None) -> RunResult:
    backend = options.make_backend()
    try:
        return await Agent(server, backend, options.budgets, options.progress).run(
            question, trace or default_trace_path(), history)
    finally:
        options.remember(backend)
        await backend.aclose()


def _run_with_server(options: Options, session: Callable[[ToolServer], Awaitable[None]]) -> None:
    with _server_log(options.quiet) as log:

        async def main_task() -> None:
            async with connect(options.server_url, options.token, options.server_env(), log) as server:
                await session(server)

        try:
            anyio.run(main_task)
        except click.ClickException:
            raise
        except Exception as exc:  # noqa: BLE001 - one clear line instead of a traceback
            if log is not None:  # what the quiet server said explains its failure
                log.seek(0)
                sys.stderr.write(log.read())
            if not _expected(exc) and click.get_current_context().find_root().obj:
                raise  # --debug: the traceback of a bug
            raise click.ClickException(_explain(exc)) from exc


@contextmanager
def _server_log(quiet: bool) -> Iterator[TextIO | None]:
    """Where a spawned server's lines go: with --quiet a temporary file, shown only if the run fails;
    else None (this process's stderr)."""
    if not quiet:
        yield None
        return
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as log:
        yield log


def _first(exc: BaseException) -> BaseException:
    """``exc``, or the first error an exception group (of groups) holds."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _expected(exc: BaseException) -> bool:
    """Whether ``exc`` is an error a user can act on (its message says what to do), not a bug."""
    return isinstance(_first(exc), AgentError | click.ClickException)


def _explain(exc: BaseException) -> str:
    """One line for the user: an expected error's message, or a bug named as one, with how to see more."""
    exc = _first(exc)
    if isinstance(exc, click.ClickException):
        return exc.format_message()
    if isinstance(exc, AgentError):
        return str(exc)
    said = f"{type(exc).__name__}: {exc}" if not str(exc).startswith(type(exc).__name__) else str(exc)
    return f"{said} (an unexpected error, probably a bug: run rag-agent --debug with the same arguments to see where)"


def _print(result: RunResult, options: Options) -> None:
    if options.as_json:
        click.echo(json_for_display(json.dumps(result.to_json(), ensure_ascii=False, indent=2)))
        return
    click.echo(for_display(result.answer, lines=True))
    if result.citations:
        click.echo("\nSources:")
        for citation in result.citations:
            where = citation.get("source") or citation.get("sql", "")
            place = describe_location(*(citation.get(key) for key in LOCATION_FIELDS))
            where = f"{where}, {place}" if place else where
            title = citation.get("title") or "SQL query"
            click.echo(for_display(f"  [{citation['id']}] {title} — {where}"))
    if not options.quiet:
        t = result.totals
        _say(f"({result.state}; {t.steps} steps, {t.tool_calls} tool calls, {t.seconds:.1f}s; trace: {result.trace})")
