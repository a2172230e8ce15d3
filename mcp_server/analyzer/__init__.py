"""The one text analyzer: how the keyword index, the citation check and the agent read text.

What the agent calls "covered", what the check calls "supported" and what the index matches
are read by the same rules, from the modules here:

* :mod:`~mcp_server.analyzer.scripts` — which characters are Chinese, Japanese and Korean (one
  range definition), and CJK runs as character bigrams;
* :mod:`~mcp_server.analyzer.words` — the function words that say nothing about a topic;
* :mod:`~mcp_server.analyzer.stems` — the one English stemmer (Porter2);
* :mod:`~mcp_server.analyzer.tokens` — words, codes and CJK runs with their offsets;
* :mod:`~mcp_server.analyzer.sentences` — sentences with their offsets (one linear splitter);
* :mod:`~mcp_server.analyzer.numbers` — numbers with their scale and units;
* :mod:`~mcp_server.analyzer.dates` — month and weekday names (one month list).

It sits below everything that reads text (documents, stores, grounding, the agent) and imports
nothing else of the project.
"""
