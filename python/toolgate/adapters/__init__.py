"""Thin adapters of the engine for agent frameworks.

- :mod:`toolgate.adapters.openai_agents`: a ``tool_filter`` for the OpenAI
  Agents SDK's MCP servers and a tool input guardrail that runs
  :meth:`toolgate.Engine.check`;
- :mod:`toolgate.adapters.langchain`: the tools to bind for the latest
  messages, and a wrapper that gates a tool's invocation (LangChain and
  LangGraph's ``ToolNode``).

Each imports its framework only when imported itself.
"""
