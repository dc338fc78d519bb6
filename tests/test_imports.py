"""The package's import graph, read from the source with `ast` (nothing is imported):
no cycles among prima_memory's modules, and an import inside a function says why it is there
and is of a heavy module, of one a fast path would load for nothing (OFF_THE_HOOK_PATH), or in a
thin entry."""
from __future__ import annotations

import ast
import re
from pathlib import Path


PACKAGE = Path(__file__).resolve().parent.parent / "prima_memory"

def modules(root: Path = PACKAGE) -> dict[str, Path]:
    """Every module of the package by dotted name ("prima_memory.sources.codex")."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports(tree: ast.Module):
    """(import node, inside a function?) for every import that runs: `if TYPE_CHECKING:` blocks
    never do, so they are skipped."""
    def walk(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child):
                for other in child.orelse:
                    yield from walk(ast.Module(body=[other], type_ignores=[]), in_function)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, in_function
            yield from walk(child, in_function or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))
    yield from walk(tree, False)


def targets(name: str, path: Path, node: ast.Import | ast.ImportFrom, known) -> set[str]:
    """The package modules one import statement loads."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in known}
    if node.level:  # relative: resolve against this module's package
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        package = package[:len(package) - (node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    else:
        base = node.module or ""
    out = set()
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        if sub in known:  # `from . import store` loads the module store
            out.add(sub)
        elif base in known:
            out.add(base)
    return out - {name}


def graph() -> dict[str, set[str]]:
    known = modules()
    edges = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        edges[name] = set()
        for node, _ in imports(tree):
            edges[name] |= targets(name, path, node, known)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_cycles(tmp_path):
    # the finder itself must be able to fail: a made-up package with a cycle hidden in a function
    pkg = tmp_path / "prima_memory"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from .sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from .. import a\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n")
    known = modules(pkg)
    edges = {}
    for name, path in known.items():
        edges[name] = set().union(*[targets(name, path, node, known)
                                    for node, _ in imports(ast.parse(path.read_text()))] or [set()])
    assert edges["prima_memory.c"] == set()  # only for the type checker: never runs
    assert cycles(edges) == [["prima_memory.a", "prima_memory.sub.b"]]


FRONT_ENDS = ("cli", "commands", "hooks", "mcp_server")
BEHIND_THE_API = ("storage", "indexer", "semantic", "search", "memory")


def _top(module: str) -> str:
    """The package's module or subpackage a module is in ("prima_memory.storage.sqlite.core":
    "storage")."""
    return module.split(".")[1] if module.count(".") else module


def test_front_ends_go_through_the_data_api():
    # the CLI, the hooks and the MCP server ask api.py; what lies behind it can change alone
    edges = graph()
    reach = {f: sorted(_top(t) for t in edges[f"prima_memory.{f}"]
                       if _top(t) in BEHIND_THE_API) for f in FRONT_ENDS}
    assert reach == {f: [] for f in FRONT_ENDS}
    assert all("prima_memory.api" in edges[f"prima_memory.{f}"] for f in FRONT_ENDS
               if f != "cli")  # (cli parses, then hands over to commands)


# Each front end and its modules; main.py, which hands a run to one of them, names them all.
SIDES = {"command line": ("cli", "commands"), "hooks": ("hooks",),
         "mcp": ("mcp_server", "mcp_protocol")}


def test_the_front_ends_do_not_import_each_other():
    """(issue #39: the hooks imported `commands` for /recall's text, and the CLI the hooks and
    the MCP server, stacking one front end on another) The command line, the hooks and the MCP
    server share only what lies under them (recall_text, api, ...)."""
    edges = graph()
    crossing = sorted((a, b) for side, mine in SIDES.items() for a in mine
                      for other, theirs in SIDES.items() if other != side for b in theirs
                      if f"prima_memory.{b}" in edges[f"prima_memory.{a}"])
    assert crossing == []
    assert {t.rsplit(".", 1)[-1] for t in edges["prima_memory.main"]} == {
        "cli", "hooks", "mcp_server", "workspace"}


def test_the_front_end_rule_can_fail(tmp_path):
    # the check itself: a made-up package whose CLI reaches into the hooks, late
    pkg = tmp_path / "prima_memory"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "hooks.py").write_text("")
    (pkg / "cli.py").write_text("def main():\n    from . import hooks  # late\n")
    known = modules(pkg)
    edges = {name: set().union(*[targets(name, path, node, known)
                                 for node, _ in imports(ast.parse(path.read_text()))] or [set()])
             for name, path in known.items()}
    assert "prima_memory.hooks" in edges["prima_memory.cli"]


def test_every_command_the_cli_parses_has_one_handler():
    from prima_memory import cli, commands
    assert set(commands.HANDLERS) == set(cli.COMMANDS) - {"hook", "mcp"}
    assert not [n for n in vars(commands) if n.startswith("cmd_")
                and getattr(commands, n) not in commands.HANDLERS.values()], "a handler unnamed"


def test_no_import_cycles():
    assert cycles(graph()) == []


def unexplained_function_imports(root: Path = PACKAGE) -> list[str]:
    """Imports inside functions without a comment on their line or the line above (above a run
    of imports, one comment speaks for the run)."""
    bad = []
    for path in modules(root).values():
        lines = path.read_text(encoding="utf-8").splitlines()
        for node, in_function in imports(ast.parse("\n".join(lines), str(path))):
            if not in_function:
                continue
            first = node.lineno - 1
            while first > 0 and lines[first - 1].lstrip().startswith(("import ", "from ")):
                first -= 1
            near = lines[max(first - 1, 0):node.end_lineno]
            if not any("#" in line for line in near):
                where = path.relative_to(root.parent)
                bad.append(f"{where}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    return bad


def test_the_import_check_finds_unexplained_imports(tmp_path):
    pkg = tmp_path / "prima_memory"
    pkg.mkdir()
    (pkg / "m.py").write_text(
        "import os\n"
        "def bare():\n    import json\n"
        "def said():\n    import numpy  # heavy\n"
        "def above():\n    # optional, heavy\n    import torch\n    import onnx\n")
    assert unexplained_function_imports(pkg) == ["prima_memory/m.py:3: import json"]


def test_imports_inside_functions_say_why():
    # an import belongs at the top of its module unless it is heavy, optional or deliberately late
    # (the hooks' start-up time); then a comment says which
    assert unexplained_function_imports() == []



# -- where an import may sit inside a function (issue #39) ----------------------------------------
# Everywhere else it belongs at the top of its module. Deferring one buys time only where the
# module is heavy, or where a fast path (a hook, the MCP handshake, a keyword search) would load
# it for nothing; so an import inside a function is of one of these, or sits in a thin entry.

HEAVY = {  # the model's boundary: numpy, the runtimes, and our modules that load them
    "numpy", "onnxruntime", "onnx", "sentence_transformers", "torch", "transformers",
    "tokenizers", "huggingface_hub",
    "prima_memory.embed",  # where numpy and the runtimes load, and the model
    "prima_memory.semantic", "prima_memory.vectorfile",  # numpy at their top (embed.numpy)
    "prima_memory.embed_build",  # torch, transformers, onnx: building the ONNX model
    "prima_memory.storage.postgres",  # psycopg (30 ms), the team extra: a team's commands only
}

# Measured with `python -X importtime` (and perf_counter, best of 15, bytecode cached) on top of
# what the path already holds: "hooks" = `import prima_memory.hooks, prima_memory.api` (every
# hook that does more than its prefilter), "search" = `import prima_memory.commands` (a keyword
# search, which loads neither re nor json: tests/test_cli_fast.py).
OFF_THE_HOOK_PATH = {
    "prima_memory.redact": "its rule table compiles: 4.2 ms of every hook that never redacts "
                           "(6.7 ms of a keyword search)",
    "prima_memory.search": "0.9 ms of every hook but /recall; the MCP handshake has no api",
    "prima_memory.ranking": "0.3 ms, loaded with search (which imports it) and only there",
    "prima_memory.session_view": "1.6 ms of the hooks (4.0 of a search): a session's page",
    "prima_memory.briefing": "1.7 ms: SessionStart's and /recall's text alone",
    "prima_memory.checkpoints": "2.0 ms: PreCompact, and SessionStart after a compaction",
    "prima_memory.extract_writer": "1.8 ms: Stop's extract alone",
    "prima_memory.sources.outputs": "2.4 ms (difflib's neighbours): a tool's output, on request",
    "prima_memory.projects": "4.5 ms (7.7 of a search): every project at once, one command's",
    "prima_memory.reasons": "0.2 ms and re (2.9 ms of a search): only files reads reasons",
    "prima_memory.titles": "0.5 ms and re (3.4 ms of a search): only where a transcript is read",
    "prima_memory.tagging": "0.5 ms and re (3.4 ms of a search): only where a session is tagged",
    "prima_memory.sources.jsonl": "orjson: 0.3 ms of the hooks, 4.0 of a search that reads none",
    "prima_memory.sources.text": "1.4 ms (5.1 of a search): json, datetime: a transcript's text",
    "prima_memory.sources.tool_calls": "1.5 ms (5.0 of a search): a transcript's tool calls",
    "prima_memory.reader_process": "2.7 ms (pickle, a child process): a cold index only",
    "prima_memory.sources.codex": "2.8 ms: another agent's reader, where its files exist",
    "prima_memory.sources.copilot": "4.1 ms: another agent's reader, where its files exist",
    "prima_memory.sources.shared_log": "2.4 ms: another agent's reader, where its files exist",
    "prima_memory.sources.extract_reader": "1.8 ms: another agent's reader, where it exists",
    "prima_memory.sources.history": "1.7 ms: the fallback when the conversations found nothing",
    "prima_memory.export": "1.4 ms of every CLI command (markdown_it later): export's alone",
    "prima_memory.demo": "17 ms of every CLI command (zipfile, tempfile, ...): demo's alone",
    "prima_memory.team": "0.3 ms, and its git and server work: a team's commands and forgets",
}

# The thin fast entries: each defers what only one event, tool or command needs (main.py hands a
# run to one front end; cli.py's parser helpers defer only what one command needs).
ENTRIES = {"prima_memory.main", "prima_memory.hooks", "prima_memory.mcp_server",
           "prima_memory.cli"}


def misplaced_function_imports(root: Path = PACKAGE) -> list[str]:
    """In-function imports of package modules neither heavy nor off a fast path, outside the
    entries: each belongs at its module's top."""
    known = modules(root)
    allowed = HEAVY | set(OFF_THE_HOOK_PATH)
    bad = []
    for name, path in known.items():
        if name in ENTRIES:
            continue
        for node, in_function in imports(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if in_function:
                for target in sorted(targets(name, path, node, known) - allowed):
                    bad.append(f"{path.relative_to(root.parent)}:{node.lineno}: {target}")
    return bad


def test_the_placement_check_finds_misplaced_imports(tmp_path):
    pkg = tmp_path / "prima_memory"
    pkg.mkdir()
    for m in ("__init__", "owner", "redact", "embed"):
        (pkg / f"{m}.py").write_text("")
    (pkg / "memory.py").write_text(
        "def key():\n    from . import owner  # (late)\n"
        "def scrub():\n    from .redact import scrub  # (compiles)\n"
        "def model():\n    from . import embed  # heavy\n    import json  # (stdlib: not ours)\n")
    (pkg / "hooks.py").write_text("def stop():\n    from . import owner  # (one event's)\n")
    assert misplaced_function_imports(pkg) == ["prima_memory/memory.py:2: prima_memory.owner"]


def test_imports_inside_functions_are_heavy_off_the_hook_path_or_in_an_entry():
    """(issue #39) Imports inside functions only at the heavy boundaries and in the thin fast
    entries; what a fast path would pay for nothing is named once above, with its cost."""
    assert misplaced_function_imports() == []
    known = modules()
    assert set(OFF_THE_HOOK_PATH) <= set(known) and ENTRIES <= set(known)
    assert {m for m in HEAVY if m.startswith("prima_memory.")} <= set(known)


NEUTRAL = ("workspace", "wording", "paths", "host")


def test_neutral_helpers_import_no_source():
    """(issue #39) The helpers every layer uses do not build on a source: a path's spellings
    are paths.py's, the host's folders host.py's. sources.names, the sources' names as data
    (no code), is the one module of sources/ they may read."""
    edges = graph()
    reach = {m: sorted(t for t in edges[f"prima_memory.{m}"]
                       if t.startswith("prima_memory.sources")
                       and t not in ("prima_memory.sources", "prima_memory.sources.names"))
             for m in NEUTRAL}
    assert reach == {m: [] for m in NEUTRAL}


def test_what_the_code_cites_is_in_the_repository():
    """A comment points at docs/design.md, never at a design a reader of the repository does
    not have (DESIGN §n, ../shared/spec); a module that speaks of "the seed" (the first design
    documents' rules) points at docs/design.md, which says what they are."""
    design = (PACKAGE.parent / "docs" / "design.md").read_text(encoding="utf-8")
    sections = {line.lstrip("#").strip() for line in design.splitlines() if line.startswith("#")}
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(PACKAGE.parent)
        for n, line in enumerate(text.splitlines(), 1):
            if "DESIGN §" in line or "shared/spec" in line or "../shared" in line:
                bad.append(f"{where}:{n}: {line.strip()}")
        lowered = text.lower()
        if ("the seed" in lowered or "seed's" in lowered) and "docs/design.md" not in text:
            bad.append(f"{where}: speaks of the seed, and points nowhere")
        for cited in text.replace("\n", " ").split("docs/design.md § ")[1:]:
            if not any(cited.replace("# ", "").startswith(s) for s in sections):
                bad.append(f"{where}: docs/design.md § {cited[:30]}...: no such section")
    assert bad == []


# -- the storage seam (issue #39) ---------------------------------------------------------------

STORAGE = "prima_memory/storage/"
ENGINE = "prima_memory/storage/sqlite/"
# SQL statements and FTS5 query syntax, as they appear in a string of Python source
SQL = re.compile(r"\b(SELECT\b.+\bFROM|INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE\s+\w+\s+SET|"
                 r"DELETE\s+FROM|CREATE\s+(TABLE|INDEX|VIRTUAL|TRIGGER|UNIQUE)|"
                 r"DROP\s+(TABLE|INDEX|TRIGGER)|ALTER\s+TABLE|PRAGMA\s+\w+|SAVEPOINT|"
                 r"BEGIN\s+IMMEDIATE|json_each|sqlite_master)\b")
FTS5 = re.compile(r"\bMATCH\b|^\s*(OR|AND|NOT|NEAR)\s*$|\bNEAR\(")
# Strings that are text, not statements: embed_build's benchmark snippets (code to embed, one of
# them a query)
TEXT_NOT_SQL = {("prima_memory/embed_build.py", "_CODE")}
# Sources that read another program's SQLite database, read-only, in that program's schema: their
# SQL is no question to our store.
FOREIGN_DATABASES = {"prima_memory/sources/opencode.py", "prima_memory/sources/cursor.py"}


def storage_leaks(root: Path = PACKAGE) -> list[str]:
    """What of the storage engine shows outside its package: the driver (apsw) imported or
    named, SQL or FTS5 syntax in a string, the message-id packing (SHIFT, or a shift by 24)."""
    bad = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root.parent).as_posix()
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text, str(path))
        skip: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and any(
                    isinstance(t, ast.Name) and (rel, t.id) in TEXT_NOT_SQL for t in node.targets):
                skip.update(range(node.lineno, node.end_lineno + 1))
        for node in ast.walk(tree):
            where = f"{rel}:{getattr(node, 'lineno', 0)}"
            if not rel.startswith(ENGINE):
                if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "apsw"
                                                        for a in node.names):
                    bad.append(f"{where}: imports apsw")
                if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "apsw":
                    bad.append(f"{where}: imports apsw")
                if isinstance(node, ast.Name) and node.id == "apsw":
                    bad.append(f"{where}: names apsw")
            if rel.startswith(STORAGE) or rel in FOREIGN_DATABASES:
                continue
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and node.lineno not in skip:
                for line in node.value.splitlines() or [node.value]:
                    if SQL.search(line) or FTS5.search(line):
                        bad.append(f"{where}: {line.strip()[:60]!r}")
                        break
            if isinstance(node, (ast.Name, ast.Attribute)) and \
                    getattr(node, "id", getattr(node, "attr", None)) == "SHIFT":
                bad.append(f"{where}: SHIFT")
            if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.RShift, ast.LShift)) \
                    and isinstance(node.right, ast.Constant) and node.right.value == 24:
                bad.append(f"{where}: a shift by 24 (a message id's session)")
    return bad


def test_no_sql_fts5_driver_or_id_packing_outside_storage():
    """(issue #39) Search asks the storage questions (storage.Words, session_of), not strings in
    SQLite's dialect; only storage/sqlite/ knows the driver."""
    assert storage_leaks() == []


def test_the_storage_check_finds_leaks(tmp_path):
    # the check must be able to fail: what the code before the storage package did
    pkg = tmp_path / "prima_memory"
    (pkg / "storage" / "sqlite").mkdir(parents=True)
    (pkg / "storage" / "sqlite" / "core.py").write_text(
        "import apsw\nQ = 'SELECT id FROM sessions'\n")
    (pkg / "search.py").write_text(
        "from .store import SHIFT\n"
        "def word_match(terms):\n    return ' OR '.join(f'\"{t}\"' for t in terms)\n"
        "def per_session(mid):\n    return mid >> SHIFT\n")
    (pkg / "api.py").write_text("import apsw\n"
                                "def f(db, m):\n    return db.execute('SELECT 1 FROM messages_fts "
                                "WHERE messages_fts MATCH ?', (m,)), m >> 24\n")
    (pkg / "embed_build.py").write_text("_CODE = ['SELECT s.id FROM sessions s']\n")
    got = storage_leaks(pkg)
    assert sorted(g.split(":")[0] for g in got) == ["prima_memory/api.py"] * 3 + \
        ["prima_memory/search.py"] * 2, got
    assert {g.split(": ", 1)[1][:12] for g in got} == {
        "imports apsw", "a shift by 2", "'SELECT 1 FR", "SHIFT", "'OR'"}, got
