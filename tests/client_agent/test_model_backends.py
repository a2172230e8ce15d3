"""What both model back-ends do alike, tested once over both: the SDK client's retries.

Each test is parametrised over ``api``, so the ``fake`` and ``backend`` fixtures of
``conftest.py`` give the OpenAI-compatible back-end on :class:`FakeOpenAI` and the Anthropic
back-end on :class:`FakeAnthropic`, each through its real SDK over HTTP on 127.0.0.1, set up as
:data:`tests.client_agent.scripted.MODEL_APIS` says (two retries).
"""

from __future__ import annotations

import pytest

from client_agent.backends.base import Backend
from tests.client_agent.fake_anthropic import OVERLOADED
from tests.client_agent.fake_http import ErrorReply, ScriptedServer
from tests.client_agent.scripted import MODEL_APIS, view

def rate_limited(api: str, retry_after_ms: int) -> ErrorReply:
    """The API's 429, saying when to try again."""
    limited = MODEL_APIS[api].rate_limited
    return ErrorReply(limited.status, limited.type, limited.message, {"retry-after-ms": str(retry_after_ms)})


@pytest.mark.anyio
@pytest.mark.parametrize(("api", "transient", "least_wait"), [
    pytest.param("openai", rate_limited("openai", 300), 0.3, id="openai-retry-after"),
    pytest.param("anthropic", OVERLOADED, 0.5 * 0.75, id="anthropic-overloaded"),  # 0.5 s less at most 25% jitter
])  # fmt: skip
async def test_a_transient_failure_is_retried_after_a_backoff(
    api: str, transient: ErrorReply, least_wait: float, fake: ScriptedServer, backend: Backend
) -> None:
    """The same request again, marked as the first retry, after the server's ``retry-after`` or the SDK's backoff."""
    fake.enqueue(transient, MODEL_APIS[api].reply("Fine now."))
    decision = await backend.decide(view())

    assert decision.answer == "Fine now."
    first, second = fake.requests
    assert first.body == second.body
    assert (first.headers["x-stainless-retry-count"], second.headers["x-stainless-retry-count"]) == ("0", "1")
    assert second.at - first.at >= least_wait


@pytest.mark.anyio
@pytest.mark.parametrize("api", list(MODEL_APIS))
async def test_rate_limits_are_retried_up_to_the_limit_then_reported(
    api: str, fake: ScriptedServer, backend: Backend
) -> None:
    limited = rate_limited(api, 20)
    fake.enqueue(limited, limited, limited, MODEL_APIS[api].reply("never reached"))
    with pytest.raises(MODEL_APIS[api].error, match=r"rate-limited: it answered 429 .* to every attempt"):
        await backend.decide(view())
    assert len(fake.requests) == 3  # the first try and max_retries=2 retries
