"""Time chroma-mcp's query tool with the MCP client that matches it (mcp 1.x).

Run by bench/latency/mcp_latency.py with the chroma-mcp venv's Python: the mcp 2.x client
opens with a ``server/discover`` request that chroma-mcp's mcp 1.6 server cannot parse, so
each side is measured with its own SDK's client. Reads a JSON job on stdin, prints JSON.
"""

import json
import sys
import time

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main() -> None:
    job = json.load(sys.stdin)
    server = StdioServerParameters(command=job["command"], args=job["args"])
    cold, first = [], []
    first_query = {"collection_name": job["collection"], "query_texts": [job["warmup"][0]], "n_results": 5}
    for _ in range(job["cold_starts"]):
        started = time.perf_counter()
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.list_tools()
            cold.append(time.perf_counter() - started)
            await session.call_tool("chroma_query_documents", first_query)
            first.append(time.perf_counter() - started)
    samples = []
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        for i, query in enumerate(job["warmup"] + job["queries"]):
            args = {"collection_name": job["collection"], "query_texts": [query], "n_results": 5}
            started = time.perf_counter()
            result = await session.call_tool("chroma_query_documents", args)
            if result.isError:
                raise RuntimeError(f"chroma-mcp tool error: {result.content}")
            if i >= len(job["warmup"]):
                samples.append(time.perf_counter() - started)
    json.dump({"cold_start_s": cold, "first_answer_s": first, "query_s": samples}, sys.stdout)


anyio.run(main)
