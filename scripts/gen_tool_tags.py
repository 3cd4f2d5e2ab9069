#!/usr/bin/env python3
"""Generate the shipped tool-tag files tool-tags/*.toml.

Name, description and inputSchema of every MCP tool are copied verbatim from the captured
catalogs in shared/data/mcp-catalogs/<server>.json; everything else (domains, stages, trigger
keywords, priority, complexity, call-gate fields, argument roles) is hand-written below.

Usage: python3 scripts/gen_tool_tags.py [--catalogs DIR] [--out DIR] [--check]
  --check  regenerate in memory and fail if the files on disk differ (for CI).

Scoring reminder (seed 000): score = 0.30*domain + 0.25*jaccard(keywords) + 0.20*stage
+ 0.15*usage + 0.10*base_priority - 0.05*(complexity-1)/4 + recency.  Keywords are Jaccard-
matched, so every extra keyword dilutes the score of a hit: keep 4-10 precise words per tool.
"""
from __future__ import annotations

import argparse
import json
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CATALOGS = Path("/work/shared/data/mcp-catalogs")

DOMAINS = {"file_operation", "code_generation", "database", "network",
           "shell_execution", "data_analysis", "documentation"}
STAGES = {"exploration", "implementation", "debugging", "documentation"}
RISKS = {"safe", "dangerous", "destructive"}
ROLES = {"shell", "shell_argv", "sql", "path"}

EXPL, IMPL, DEBUG, DOCS = "exploration", "implementation", "debugging", "documentation"
FILE, CODE, DB, NET, SHELL, DATA, DOC = ("file_operation", "code_generation", "database",
                                         "network", "shell_execution", "data_analysis",
                                         "documentation")


def t(domains, stages, keywords, priority, complexity, *, risk="safe", confirm=False,
      timeout=30.0, retries=1, category, read_only, args=None):
    return dict(domains=domains, preferred_stages=stages, trigger_keywords=keywords,
                base_priority=priority, parameter_complexity=complexity, risk_level=risk,
                requires_confirmation=confirm, timeout_seconds=float(timeout),
                max_retries=retries, category=category, read_only=read_only,
                arguments=args or {})


# --------------------------------------------------------------------------------------------
# Hand-written semantic tags, per server (catalog "server" field) and bare MCP tool name.
# --------------------------------------------------------------------------------------------
GIT_ARGS = {"repo_path": "path"}
VC = "version_control"
GIT_DOM = [FILE, SHELL]

TAGS: dict[str, dict[str, dict]] = {
    "git": {
        "git_status": t(GIT_DOM, [EXPL, DEBUG],
                        ["git", "status", "changes", "modified", "staged", "untracked"],
                        0.6, 1, category=VC, read_only=True, args=GIT_ARGS),
        "git_diff_unstaged": t(GIT_DOM, [IMPL, DEBUG],
                               ["git", "diff", "unstaged", "changes", "modified", "working"],
                               0.5, 2, category=VC, read_only=True, args=GIT_ARGS),
        "git_diff_staged": t(GIT_DOM, [IMPL],
                             ["git", "diff", "staged", "cached", "changes", "review"],
                             0.5, 2, category=VC, read_only=True, args=GIT_ARGS),
        "git_diff": t(GIT_DOM, [EXPL, DEBUG],
                      ["git", "diff", "compare", "branch", "branches", "commits", "differences"],
                      0.5, 3, category=VC, read_only=True, args=GIT_ARGS),
        # Writes history; reversible, but a retry could create a second commit.
        "git_commit": t(GIT_DOM, [IMPL],
                        ["git", "commit", "changes", "message", "record", "提交"],
                        0.5, 2, risk="dangerous", retries=0, category=VC, read_only=False,
                        args=GIT_ARGS),
        "git_add": t(GIT_DOM, [IMPL],
                     ["git", "add", "stage", "staging", "track", "files"],
                     0.5, 2, category=VC, read_only=False,
                     args={"repo_path": "path", "files": "path"}),
        # Only unstages (index reset, working tree untouched): dangerous, not destructive.
        "git_reset": t(GIT_DOM, [IMPL],
                       ["git", "reset", "unstage", "staged", "undo"],
                       0.3, 1, risk="dangerous", category=VC, read_only=False, args=GIT_ARGS),
        "git_log": t(GIT_DOM, [EXPL, DEBUG, DOCS],
                     ["git", "log", "history", "commits", "recent", "author"],
                     0.5, 4, category=VC, read_only=True, args=GIT_ARGS),
        "git_create_branch": t(GIT_DOM, [IMPL],
                               ["git", "create", "branch", "feature", "base"],
                               0.4, 3, category=VC, read_only=False, args=GIT_ARGS),
        # Rewrites the working tree to another branch.
        "git_checkout": t(GIT_DOM, [IMPL, DEBUG],
                          ["git", "checkout", "switch", "branch"],
                          0.4, 2, risk="dangerous", category=VC, read_only=False,
                          args=GIT_ARGS),
        "git_show": t(GIT_DOM, [EXPL, DEBUG],
                      ["git", "show", "commit", "revision", "sha", "hash"],
                      0.4, 2, category=VC, read_only=True, args=GIT_ARGS),
        "git_branch": t(GIT_DOM, [EXPL],
                        ["git", "branches", "branch", "list", "remote", "local"],
                        0.4, 4, category=VC, read_only=True, args=GIT_ARGS),
    },
    "time": {
        # No domain fits clock/timezone utilities: domains = [] (domain_match 0), they
        # activate through keywords and base_priority.
        "get_current_time": t([], [EXPL, DOCS],
                              ["time", "current", "now", "clock", "date", "today", "timezone",
                               "时间", "现在"],
                              0.5, 1, timeout=10, category="time", read_only=True),
        "convert_time": t([], [EXPL],
                          ["convert", "time", "timezone", "timezones", "zone", "utc",
                           "时间", "时区"],
                          0.3, 3, timeout=10, category="time", read_only=True),
    },
    "fetch": {
        # url is a network address, not a path: no argument role.
        "fetch": t([NET], [EXPL, DEBUG, DOCS],
                   ["fetch", "url", "http", "https", "webpage", "website", "download",
                    "internet", "网页"],
                   0.6, 4, timeout=60, retries=2, category="web", read_only=True),
    },
    "sqlite": {
        "read_query": t([DB, DATA], [EXPL, DEBUG],
                        ["sql", "query", "select", "database", "sqlite", "rows", "数据库", "查询"],
                        0.6, 1, category="database", read_only=True, args={"query": "sql"}),
        "write_query": t([DB], [IMPL],
                         ["sql", "insert", "update", "delete", "database", "sqlite", "rows",
                          "数据库"],
                         0.4, 1, risk="dangerous", retries=0, category="database",
                         read_only=False, args={"query": "sql"}),
        "create_table": t([DB], [IMPL],
                          ["sql", "create", "table", "schema", "database", "sqlite", "数据库"],
                          0.3, 1, risk="dangerous", retries=0, category="database",
                          read_only=False, args={"query": "sql"}),
        "list_tables": t([DB], [EXPL],
                         ["tables", "table", "database", "sqlite", "schema", "数据库"],
                         0.5, 1, category="database", read_only=True),
        "describe_table": t([DB], [EXPL, IMPL],
                            ["table", "schema", "columns", "describe", "database", "sqlite",
                             "structure"],
                            0.5, 1, category="database", read_only=True),
        "append_insight": t([DATA, DOC], [DOCS],
                            ["insight", "insights", "memo", "business", "analysis", "finding"],
                            0.2, 1, retries=0, category="database", read_only=False),
    },
    "shell": {
        # Allowlist includes rm and psql; the argv analysis escalates per call.
        "shell_execute": t([SHELL], [IMPL, DEBUG],
                           ["run", "execute", "command", "shell", "terminal", "bash", "script",
                            "命令"],
                           0.5, 4, risk="dangerous", timeout=60, retries=0, category="shell",
                           read_only=False,
                           args={"command": "shell_argv", "directory": "path"}),
    },
    "filesystem": {
        # Deprecated duplicate of read_text_file: same schema, low priority, few keywords.
        "read_file": t([FILE], [EXPL],
                       ["read", "file", "contents", "text"],
                       0.1, 3, category="file", read_only=True, args={"path": "path"}),
        "read_text_file": t([FILE], [EXPL, IMPL, DEBUG],
                            ["read", "file", "open", "contents", "view", "text", "lines",
                             "文件", "读取"],
                            0.7, 3, category="file", read_only=True, args={"path": "path"}),
        "read_media_file": t([FILE], [EXPL],
                             ["image", "picture", "photo", "audio", "media", "binary", "png"],
                             0.3, 1, category="file", read_only=True, args={"path": "path"}),
        "read_multiple_files": t([FILE], [EXPL, DEBUG],
                                 ["read", "files", "multiple", "compare", "contents", "several"],
                                 0.5, 1, category="file", read_only=True,
                                 args={"paths": "path"}),
        # Overwrites without warning: dangerous (not destructive: it does not delete).
        "write_file": t([FILE, CODE], [IMPL, DOCS],
                        ["write", "file", "create", "save", "overwrite", "content", "文件",
                         "写入"],
                        0.6, 2, risk="dangerous", category="file", read_only=False,
                        args={"path": "path"}),
        "edit_file": t([FILE, CODE], [IMPL, DEBUG, DOCS],
                       ["edit", "modify", "change", "replace", "update", "patch", "fix", "file",
                        "修改"],
                       0.6, 5, risk="dangerous", category="file", read_only=False,
                       args={"path": "path"}),
        "create_directory": t([FILE], [IMPL],
                              ["create", "directory", "folder", "mkdir", "nested", "目录"],
                              0.4, 1, category="file", read_only=False, args={"path": "path"}),
        "list_directory": t([FILE], [EXPL],
                            ["list", "directory", "folder", "files", "contents", "目录"],
                            0.6, 1, category="file", read_only=True, args={"path": "path"}),
        "list_directory_with_sizes": t([FILE], [EXPL],
                                       ["list", "directory", "sizes", "size", "largest",
                                        "disk", "folder"],
                                       0.3, 2, category="file", read_only=True,
                                       args={"path": "path"}),
        "directory_tree": t([FILE], [EXPL, DOCS],
                            ["tree", "directory", "structure", "project", "recursive", "layout",
                             "folders"],
                            0.4, 2, category="file", read_only=True, args={"path": "path"}),
        "move_file": t([FILE], [IMPL],
                       ["move", "rename", "file", "relocate", "destination", "directory"],
                       0.4, 2, risk="dangerous", retries=0, category="file", read_only=False,
                       args={"source": "path", "destination": "path"}),
        "search_files": t([FILE], [EXPL, DEBUG],
                          ["search", "find", "files", "glob", "pattern", "locate", "filename",
                           "查找"],
                          0.5, 3, category="file", read_only=True, args={"path": "path"}),
        "get_file_info": t([FILE], [EXPL, DEBUG],
                           ["metadata", "info", "size", "permissions", "modified", "created",
                            "stat"],
                           0.3, 1, category="file", read_only=True, args={"path": "path"}),
        "list_allowed_directories": t([FILE], [EXPL],
                                      ["allowed", "directories", "access", "permissions",
                                       "sandbox", "roots"],
                                      0.3, 1, category="file", read_only=True),
    },
    "memory": {
        # Knowledge-graph memory: documentation + data_analysis (not "database", so that SQL
        # sessions do not pull these in).
        "create_entities": t([DOC, DATA], [DOCS, EXPL],
                             ["remember", "entity", "entities", "knowledge", "graph", "memory",
                              "store"],
                             0.4, 4, retries=0, category="memory", read_only=False),
        "create_relations": t([DOC, DATA], [DOCS, EXPL],
                              ["relation", "relations", "relationship", "link", "connect",
                               "knowledge", "graph"],
                              0.3, 3, retries=0, category="memory", read_only=False),
        "add_observations": t([DOC, DATA], [DOCS, EXPL],
                              ["observation", "observations", "fact", "facts", "remember",
                               "note", "memory"],
                              0.3, 3, retries=0, category="memory", read_only=False),
        "delete_entities": t([DOC, DATA], [DOCS],
                             ["forget", "delete", "remove", "entity", "entities", "memory"],
                             0.2, 1, risk="destructive", confirm=True, category="memory",
                             read_only=False),
        "delete_observations": t([DOC, DATA], [DOCS],
                                 ["forget", "delete", "remove", "observation", "fact",
                                  "memory"],
                                 0.2, 3, risk="destructive", confirm=True, category="memory",
                                 read_only=False),
        "delete_relations": t([DOC, DATA], [DOCS],
                              ["forget", "delete", "remove", "relation", "relationship",
                               "unlink"],
                              0.2, 3, risk="destructive", confirm=True, category="memory",
                              read_only=False),
        "read_graph": t([DOC, DATA], [EXPL, DOCS],
                        ["memory", "knowledge", "graph", "recall", "entire", "dump"],
                        0.4, 1, category="memory", read_only=True),
        "search_nodes": t([DOC, DATA], [EXPL, DOCS],
                          ["search", "recall", "memory", "knowledge", "remember", "node"],
                          0.4, 1, category="memory", read_only=True),
        "open_nodes": t([DOC, DATA], [EXPL, DOCS],
                        ["open", "node", "nodes", "entity", "details", "recall", "memory"],
                        0.3, 1, category="memory", read_only=True),
    },
    # Reference/test server: every tool gets a low base_priority (0.1-0.2).
    "everything": {
        "echo": t([], [DEBUG], ["echo", "repeat", "test", "ping"],
                  0.2, 1, timeout=10, category="mcp_test", read_only=True),
        "get-annotated-message": t([], [DEBUG],
                                   ["annotation", "annotations", "annotated", "metadata",
                                    "message", "mcp"],
                                   0.1, 2, timeout=10, category="mcp_test", read_only=True),
        # Dumps every environment variable of the server: secrets exposure.
        "get-env": t([SHELL], [DEBUG],
                     ["env", "environment", "variables", "config", "configuration", "debug"],
                     0.1, 1, risk="dangerous", timeout=10, category="mcp_test",
                     read_only=True),
        "get-resource-links": t([], [DEBUG], ["resource", "resources", "links", "mcp", "test"],
                                0.1, 1, timeout=10, category="mcp_test", read_only=True),
        "get-resource-reference": t([], [DEBUG],
                                    ["resource", "reference", "mcp", "blob", "test"],
                                    0.1, 2, timeout=10, category="mcp_test", read_only=True),
        "get-structured-content": t([], [DEBUG],
                                    ["structured", "content", "weather", "output", "schema",
                                     "validation"],
                                    0.1, 1, timeout=10, category="mcp_test", read_only=True),
        "get-sum": t([DATA], [EXPL], ["sum", "add", "addition", "numbers", "plus", "total"],
                     0.2, 2, timeout=10, category="mcp_test", read_only=True),
        "get-tiny-image": t([], [DEBUG], ["image", "logo", "tiny", "mcp", "test", "sample"],
                            0.1, 1, timeout=10, category="mcp_test", read_only=True),
        # data is a URL or data URI (downloaded by the server); name is a resource name.
        "gzip-file-as-resource": t([FILE, NET], [DEBUG],
                                   ["gzip", "compress", "compression", "archive", "zip",
                                    "resource"],
                                   0.1, 3, timeout=60, category="mcp_test", read_only=False),
        "toggle-simulated-logging": t([], [DEBUG],
                                      ["logging", "logs", "toggle", "simulated", "test",
                                       "debug"],
                                      0.1, 1, timeout=10, retries=0, category="mcp_test",
                                      read_only=False),
        "toggle-subscriber-updates": t([], [DEBUG],
                                       ["subscription", "subscribe", "updates", "toggle",
                                        "simulated", "notifications"],
                                       0.1, 1, timeout=10, retries=0, category="mcp_test",
                                       read_only=False),
        "trigger-long-running-operation": t([], [DEBUG],
                                            ["long", "running", "progress", "operation",
                                             "test", "simulate"],
                                            0.1, 2, timeout=120, retries=0,
                                            category="mcp_test", read_only=True),
        "simulate-research-query": t([DATA], [EXPL],
                                     ["research", "investigate", "topic", "synthesize",
                                      "analyze", "task"],
                                     0.2, 2, timeout=300, retries=0, category="mcp_test",
                                     read_only=False),
        # Capability-conditional tools (only in everything-fullcaps.json).
        "get-roots-list": t([FILE], [DEBUG], ["roots", "root", "mcp", "client", "workspace"],
                            0.1, 1, timeout=10, category="mcp_test", read_only=True),
        "trigger-elicitation-request": t([], [DEBUG],
                                         ["elicitation", "elicit", "form", "ask", "input",
                                          "clarify"],
                                         0.1, 1, timeout=300, retries=0, category="mcp_test",
                                         read_only=False),
        "trigger-url-elicitation": t([NET], [DEBUG],
                                     ["elicitation", "url", "browser", "link", "login",
                                      "oauth"],
                                     0.1, 4, timeout=300, retries=0, category="mcp_test",
                                     read_only=False),
        "trigger-sampling-request": t([], [DEBUG],
                                      ["sampling", "llm", "completion", "prompt", "generate",
                                       "model"],
                                      0.1, 2, timeout=120, retries=0, category="mcp_test",
                                      read_only=False),
        "trigger-sampling-request-async": t([], [DEBUG],
                                            ["sampling", "async", "background", "task", "llm",
                                             "poll"],
                                            0.1, 2, timeout=300, retries=0,
                                            category="mcp_test", read_only=False),
        "trigger-elicitation-request-async": t([], [DEBUG],
                                               ["elicitation", "async", "background", "task",
                                                "input", "poll"],
                                               0.1, 1, timeout=300, retries=0,
                                               category="mcp_test", read_only=False),
    },
}

# Catalog files per output file (server name -> catalog files, union in order).
SERVERS = {
    "git": ["git.json"],
    "time": ["time.json"],
    "fetch": ["fetch.json"],
    "sqlite": ["sqlite.json"],
    "shell": ["shell.json"],
    "filesystem": ["filesystem.json"],
    "memory": ["memory.json"],
    "everything": ["everything.json", "everything-fullcaps.json"],
}

HEADERS = {
    "git": "PyPI mcp-server-git",
    "time": "PyPI mcp-server-time",
    "fetch": "PyPI mcp-server-fetch",
    "sqlite": "PyPI mcp-server-sqlite",
    "shell": "PyPI mcp-shell-server",
    "filesystem": "npm @modelcontextprotocol/server-filesystem",
    "memory": "npm @modelcontextprotocol/server-memory",
    "everything": "npm @modelcontextprotocol/server-everything",
}


def schema(props: dict, required: list[str] | None = None) -> dict:
    s = {"type": "object", "properties": props}
    if required:
        s["required"] = required
    return s


# Seed demo tools (seeds 002/003), bare names, no namespace, no aliases.
DEMO = [
    dict(name="web_search",
         description="Search the web for current information: recent news, facts, people. "
                     "Do not use it for math, code review or file operations.",
         input_schema=schema({
             "query": {"type": "string",
                       "description": "Search terms; include the core keywords"},
             "max_results": {"type": "integer", "default": 5, "minimum": 1, "maximum": 10,
                             "description": "Number of results to return (default 5, max 10)"},
         }, ["query"]),
         **t([NET], [EXPL, DOCS],
             ["search", "web", "google", "news", "internet", "lookup", "latest", "搜索"],
             0.6, 2, timeout=5, category="search", read_only=True)),
    dict(name="calculator",
         description="Evaluate a math expression exactly: + - * / parentheses, powers, sqrt. "
                     "Use it whenever an exact calculation is needed.",
         input_schema=schema({
             "expression": {"type": "string",
                            "description": "Math expression, e.g. '(2+3)*4' or 'sqrt(16)'"},
         }, ["expression"]),
         **t([DATA], [EXPL, IMPL],
             ["calculate", "math", "compute", "sum", "multiply", "divide", "arithmetic",
              "计算"],
             0.5, 1, timeout=5, category="utility", read_only=True)),
    # Seed 002 marks read_file "dangerous" (arbitrary path reads), without confirmation.
    dict(name="read_file",
         description="Read the contents of a text file (code, config, logs). Do not use it for "
                     "binary files such as images, videos or executables.",
         input_schema=schema({
             "path": {"type": "string",
                      "description": "File path, relative to the project root"},
         }, ["path"]),
         **t([FILE], [EXPL, IMPL, DEBUG],
             ["read", "file", "open", "view", "contents", "config", "log", "文件", "读取"],
             0.6, 1, risk="dangerous", category="file", read_only=True,
             args={"path": "path"})),
    dict(name="delete_file",
         description="Delete a file. This cannot be undone: check the file's contents before "
                     "deleting it.",
         input_schema=schema({
             "path": {"type": "string", "description": "Path of the file to delete"},
         }, ["path"]),
         **t([FILE], [IMPL],
             ["delete", "remove", "file", "erase", "cleanup", "删除"],
             0.2, 1, risk="destructive", confirm=True, retries=0, category="file",
             read_only=False, args={"path": "path"})),
    dict(name="get_current_time",
         description="Get the current date and time. Use it when the user asks about today, "
                     "now or the current time.",
         input_schema=schema({
             "timezone": {"type": "string",
                          "description": "IANA timezone name, e.g. 'Asia/Shanghai'; "
                                         "defaults to the local timezone"},
         }),
         **t([], [EXPL],
             ["time", "date", "now", "today", "current", "clock", "时间", "现在", "今天"],
             0.4, 1, timeout=5, category="utility", read_only=True)),
    dict(name="send_email",
         description="Send an email. to is the recipient address, subject the subject line, "
                     "body the message text (Markdown allowed).",
         input_schema=schema({
             "to": {"type": "string", "description": "Recipient email address"},
             "subject": {"type": "string", "description": "Email subject"},
             "body": {"type": "string", "description": "Email body (Markdown allowed)"},
         }, ["to", "subject", "body"]),
         **t([NET], [DOCS],
             ["email", "mail", "send", "message", "recipient", "notify", "邮件"],
             0.3, 3, risk="dangerous", confirm=True, timeout=10, retries=0,
             category="communication", read_only=False)),
]

CUSTOM = [
    dict(name="shell.run_command", aliases=["run_command"],
         description="Run one shell command line and return its output",
         input_schema={"type": "object",
                       "properties": {
                           "command": {"type": "string",
                                       "description": "The shell command line to run"},
                           "cwd": {"type": "string", "description": "Working directory"}},
                       "required": ["command"]},
         **t([SHELL], [IMPL, DEBUG],
             ["run", "execute", "command", "shell", "terminal", "bash", "script", "pipe",
              "命令"],
             0.5, 2, risk="dangerous", timeout=60, retries=0, category="shell",
             read_only=False, args={"command": "shell", "cwd": "path"})),
]


# --------------------------------------------------------------------------------------------
# TOML emission
# --------------------------------------------------------------------------------------------
def toml_str(s: str) -> str:
    """TOML basic string. json.dumps escapes are a subset of TOML's (no \\/ is produced)."""
    out = json.dumps(s, ensure_ascii=False)
    assert tomllib.loads(f"x = {out}")["x"] == s, s
    return out


def toml_str_list(xs: list[str]) -> str:
    return "[" + ", ".join(toml_str(x) for x in xs) + "]"


def toml_float(x: float) -> str:
    return repr(float(x))


def schema_text(s: dict) -> str:
    text = json.dumps(s, separators=(",", ":"), ensure_ascii=False)
    if "'''" in text or "\n" in text or text.endswith("'"):
        raise ValueError(f"schema cannot be a TOML literal string: {text}")
    return f"'''{text}'''"


def emit_tool(tool: dict) -> str:
    lines = ["[[tool]]", f"name = {toml_str(tool['name'])}"]
    if tool.get("aliases"):
        lines.append(f"aliases = {toml_str_list(tool['aliases'])}")
    lines.append(f"description = {toml_str(tool['description'])}")
    lines.append(f"input_schema = {schema_text(tool['input_schema'])}")
    lines.append(f"domains = {toml_str_list(tool['domains'])}")
    lines.append(f"preferred_stages = {toml_str_list(tool['preferred_stages'])}")
    lines.append(f"trigger_keywords = {toml_str_list(tool['trigger_keywords'])}")
    lines.append(f"base_priority = {toml_float(tool['base_priority'])}")
    lines.append(f"parameter_complexity = {int(tool['parameter_complexity'])}")
    lines.append(f"risk_level = {toml_str(tool['risk_level'])}")
    lines.append(f"requires_confirmation = {'true' if tool['requires_confirmation'] else 'false'}")
    lines.append(f"timeout_seconds = {toml_float(tool['timeout_seconds'])}")
    lines.append(f"max_retries = {int(tool['max_retries'])}")
    lines.append(f"category = {toml_str(tool['category'])}")
    lines.append(f"read_only = {'true' if tool['read_only'] else 'false'}")
    if tool["arguments"]:
        inner = ", ".join(f"{k} = {toml_str(v)}" if k.isidentifier() and k.isascii()
                          else f"{toml_str(k)} = {toml_str(v)}"
                          for k, v in tool["arguments"].items())
        lines.append(f"arguments = {{ {inner} }}")
    return "\n".join(lines) + "\n"


def load_catalog_tools(catalogs: Path, server: str) -> tuple[list[dict], set[str]]:
    """Union of the catalogs' tools (first occurrence wins; duplicates must be identical).
    Returns the tools and the names present only in later catalogs."""
    seen: dict[str, dict] = {}
    first_names: set[str] | None = None
    for fname in SERVERS[server]:
        cat = json.loads((catalogs / fname).read_text(encoding="utf-8"))
        srv = cat["server"]
        if fname == SERVERS[server][0] and srv != server:
            raise ValueError(f"{fname}: server {srv!r} != {server!r}")
        for tool in cat["tools"]:
            if tool["name"] in seen:
                if seen[tool["name"]] != tool:
                    raise ValueError(f"{server}.{tool['name']} differs between catalogs")
                continue
            seen[tool["name"]] = tool
        if first_names is None:
            first_names = set(seen)
    return list(seen.values()), set(seen) - (first_names or set())


def build(catalogs: Path) -> dict[str, str]:
    demo_names = {d["name"] for d in DEMO}
    custom_names = {n for c in CUSTOM for n in [c["name"], *c.get("aliases", [])]}
    # bare MCP names per server, to decide which aliases are globally unique
    catalog: dict[str, tuple[list[dict], set[str]]] = {
        s: load_catalog_tools(catalogs, s) for s in SERVERS}
    bare_count: dict[str, int] = {}
    for tools, _ in catalog.values():
        for tool in tools:
            bare_count[tool["name"]] = bare_count.get(tool["name"], 0) + 1
    taken = demo_names | custom_names

    files: dict[str, str] = {}
    for server, (tools, extra) in catalog.items():
        tags = TAGS[server]
        names = {tool["name"] for tool in tools}
        if names != set(tags):
            raise ValueError(f"{server}: catalog/tag mismatch: missing tags "
                             f"{sorted(names - set(tags))}, stale tags {sorted(set(tags) - names)}")
        cat_files = ", ".join(f"shared/data/mcp-catalogs/{f}" for f in SERVERS[server])
        out = [f"# tool-tags/{server}.toml: semantic tags for the tools of {HEADERS[server]} "
               f"(catalog: {cat_files})",
               "# Generated by scripts/gen_tool_tags.py: edit the generator, not this file.",
               "# name/description/input_schema are verbatim from the catalog; bare aliases are "
               "given only where globally unique."]
        if server == "everything":
            out.append("# Reference/test server: all tools have a low base_priority. Tools "
                       "marked below appear only when the client advertises roots/sampling/"
                       "elicitation/tasks capabilities (everything-fullcaps.json).")
        for tool in tools:
            bare = tool["name"]
            entry = dict(name=f"{server}.{bare}", description=tool.get("description", ""),
                         input_schema=tool["inputSchema"], **tags[bare])
            if bare_count[bare] == 1 and bare not in taken:
                entry["aliases"] = [bare]
            out.append("")
            if bare in extra:
                out.append("# capability-conditional (everything-fullcaps.json only)")
            out.append(emit_tool(entry).rstrip("\n"))
        files[f"{server}.toml"] = "\n".join(out) + "\n"

    out = ["# tool-tags/demo.toml: the demo tools of seeds 002/003 (web_search, calculator, "
           "read_file, delete_file, get_current_time, send_email), bare names, no namespace.",
           "# Generated by scripts/gen_tool_tags.py: edit the generator, not this file."]
    for d in DEMO:
        out += ["", emit_tool(d).rstrip("\n")]
    files["demo.toml"] = "\n".join(out) + "\n"

    out = ["# tool-tags/custom.toml: tools of our own, not captured from a published server.",
           "# Generated by scripts/gen_tool_tags.py: edit the generator, not this file."]
    for c in CUSTOM:
        out += ["", emit_tool(c).rstrip("\n")]
    files["custom.toml"] = "\n".join(out) + "\n"
    return files


# --------------------------------------------------------------------------------------------
# Validation of the emitted files
# --------------------------------------------------------------------------------------------
ALLOWED_KEYS = {"name", "aliases", "description", "input_schema", "domains", "preferred_stages",
                "trigger_keywords", "base_priority", "parameter_complexity", "risk_level",
                "requires_confirmation", "timeout_seconds", "max_retries", "category",
                "read_only", "arguments"}


def is_cjk(s: str) -> bool:
    return all("\u3040" <= ch <= "\u30ff" or "\u4e00" <= ch <= "\u9fff" for ch in s)


def validate(files: dict[str, str], catalogs: Path) -> list[str]:
    errors: list[str] = []
    names: dict[str, str] = {}
    for fname, text in files.items():
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            errors.append(f"{fname}: {e}")
            continue
        if set(doc) != {"tool"}:
            errors.append(f"{fname}: top-level keys {sorted(doc)}")
        for tool in doc.get("tool", []):
            where = f"{fname}:{tool.get('name')}"
            if set(tool) - ALLOWED_KEYS:
                errors.append(f"{where}: unknown keys {sorted(set(tool) - ALLOWED_KEYS)}")
            for n in [tool["name"], *tool.get("aliases", [])]:
                if n in names:
                    errors.append(f"{where}: name/alias {n!r} also used by {names[n]}")
                names[n] = where
            if not set(tool["domains"]) <= DOMAINS:
                errors.append(f"{where}: bad domains {tool['domains']}")
            if not set(tool["preferred_stages"]) <= STAGES:
                errors.append(f"{where}: bad stages {tool['preferred_stages']}")
            if len(set(tool["domains"])) != len(tool["domains"]) or \
                    len(set(tool["preferred_stages"])) != len(tool["preferred_stages"]):
                errors.append(f"{where}: duplicate domain/stage")
            kws = tool["trigger_keywords"]
            if not 4 <= len(kws) <= 10 or len(set(kws)) != len(kws):
                errors.append(f"{where}: {len(kws)} keywords (or duplicates)")
            for k in kws:
                ok_ascii = k.isascii() and k.isalpha() and k.islower() and len(k) >= 3
                if not (ok_ascii or (is_cjk(k) and len(k) >= 2)):
                    errors.append(f"{where}: bad keyword {k!r}")
            if not 0.0 <= tool["base_priority"] <= 1.0:
                errors.append(f"{where}: base_priority out of range")
            if not (isinstance(tool["parameter_complexity"], int)
                    and 1 <= tool["parameter_complexity"] <= 5):
                errors.append(f"{where}: parameter_complexity out of range")
            if tool["risk_level"] not in RISKS:
                errors.append(f"{where}: risk {tool['risk_level']}")
            if tool["risk_level"] == "destructive" and not tool["requires_confirmation"]:
                errors.append(f"{where}: destructive without confirmation")
            if tool["read_only"] and tool["risk_level"] == "destructive":
                errors.append(f"{where}: read-only but destructive")
            if not isinstance(tool["timeout_seconds"], float) or tool["timeout_seconds"] <= 0:
                errors.append(f"{where}: timeout")
            if not isinstance(tool["max_retries"], int) or tool["max_retries"] < 0:
                errors.append(f"{where}: max_retries")
            sch = json.loads(tool["input_schema"])
            props = sch.get("properties", {})
            for arg, role in tool.get("arguments", {}).items():
                if role not in ROLES:
                    errors.append(f"{where}: bad role {role}")
                if arg not in props:
                    errors.append(f"{where}: role for unknown argument {arg}")
    # every catalog tool covered, verbatim
    for server, cats in SERVERS.items():
        doc = tomllib.loads(files[f"{server}.toml"])
        by_name = {tool["name"]: tool for tool in doc["tool"]}
        for cf in cats:
            for ct in json.loads((catalogs / cf).read_text(encoding="utf-8"))["tools"]:
                tool = by_name.get(f"{server}.{ct['name']}")
                if tool is None:
                    errors.append(f"{cf}: {ct['name']} not covered")
                    continue
                if tool["description"] != ct.get("description", "") or \
                        json.loads(tool["input_schema"]) != ct["inputSchema"] or \
                        tool["input_schema"] != json.dumps(ct["inputSchema"], separators=(",", ":"),
                                                           ensure_ascii=False):
                    errors.append(f"{server}.{ct['name']}: not verbatim")
    return errors


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--catalogs", type=Path, default=DEFAULT_CATALOGS)
    ap.add_argument("--out", type=Path, default=REPO / "tool-tags")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    files = build(a.catalogs)
    errors = validate(files, a.catalogs)
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 1
    if a.check:
        stale = [f for f, text in files.items()
                 if not (a.out / f).exists() or (a.out / f).read_text(encoding="utf-8") != text]
        if stale:
            print(f"stale tool-tag files: {stale}", file=sys.stderr)
            return 1
        return 0
    a.out.mkdir(parents=True, exist_ok=True)
    for f, text in files.items():
        (a.out / f).write_text(text, encoding="utf-8")
        n = text.count("[[tool]]")
        print(f"{a.out / f}: {n} tools")
    return 0


if __name__ == "__main__":
    sys.exit(main())
