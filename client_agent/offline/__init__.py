"""The offline back-end: an agent with no language model, as its own package.

The loop (:mod:`client_agent.loop`) drives it like any back-end, through the contract of
:mod:`client_agent.backends.base`; nothing outside this package imports more of it than
:class:`client_agent.offline.backend.OfflineBackend`. Inside:

- :mod:`~client_agent.offline.backend` — decide, reflect, answer (the back-end itself);
- :mod:`~client_agent.offline.planning` — reading the question: relevance, parts, routing;
- :mod:`~client_agent.offline.calculation` — arithmetic written in symbols or words;
- :mod:`~client_agent.offline.extractive` — coverage, and the sentences to quote;
- :mod:`~client_agent.offline.relevance` — whether a sentence answers, by a shipped cross-encoder;
- :mod:`~client_agent.offline.tiers`, :mod:`~client_agent.offline.shapes` — tiered facts,
  numbered steps and extreme table rows;
- :mod:`~client_agent.offline.multihop` — comparisons and bridge entities;
- :mod:`~client_agent.offline.aliases` — the documents' own names for what a question describes;
- :mod:`~client_agent.offline.meaning` — closeness in meaning by the bundled embedding model.

It uses what the loop hands every back-end (the catalog, the evidence ledger, the text
helpers, the conflict finder and the query log's near-duplicate rule) and the shared
citation check (:mod:`mcp_server.grounding`), never the loop itself or a model back-end.
"""
