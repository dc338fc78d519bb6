"""Deterministic generator of a realistic Claude Code history.

Used by the benchmarks (S = 100 sessions, M = 1,000 sessions / ~300 MB) and the tests, and made
once the demo's packaged sample history (bench/demo_sample.py); it is not part of the installed
package. It lives in bench/ because the benchmarks import it as ``bench.synthetic`` with the
checkout on sys.path, as they already import ``bench.run``, and tests/conftest.py puts the
checkout on sys.path for the tests. The line shapes follow real transcripts: one API content
block per assistant line (lines of one reply share ``message.id`` and ``requestId``), tool results on
user lines with a ``toolUseResult`` twin, ``file-history-snapshot``/``summary``/``ai-title``/
``custom-title``/``attachment``/``system``/``queue-operation`` records, subagent files in
``<session>/subagents/`` and, for a few old sessions, the flat ``agent-<8hex>.jsonl`` layout.

Everything comes from ``random.Random(seed)``: the same arguments (including ``now``) give
byte-identical files. Files are written line by line; the bulky text (file contents, command output)
is sliced out of pools built once per call, so memory stays small whatever the size.

Every session carries exactly one rare word, ``zqmarker<N>`` (N = 0-based session index), in one of
its typed prompts. A few tool results carry fake secrets (Anthropic/AWS/GitHub keys, URLs with a
password) so redaction is exercised.

The other sources have their own generators, from the same vocabulary and text pools and their own
random streams (so the Claude Code history stays byte-identical): ``generate_codex`` (Codex CLI
rollouts, wrapped JSONL) and ``generate_copilot`` (VS Code Copilot Chat sessions, v3 JSON), with
rare words ``zqcodex<N>`` and ``zqcopilot<N>``.
"""
from __future__ import annotations

import base64
import bisect
import hashlib
import math
import os
import random
import re
import string
import time
import urllib.parse
import uuid
from array import array
from pathlib import Path

import orjson

__all__ = ["generate_history", "generate_codex", "generate_copilot"]

_DAY_MS = 86_400_000
_B62 = string.ascii_letters + string.digits
_B64 = _B62 + "+/"
_ARROW = "\u2192"

# --------------------------------------------------------------------------------------------
# Vocabulary
# --------------------------------------------------------------------------------------------

_MODULES = [
    "auth", "billing", "search", "ingest", "scheduler", "api", "storage", "cache", "notifications",
    "payments", "analytics", "export", "sync", "gateway", "metrics", "users", "orders", "inventory",
    "reports", "webhooks", "queue", "config", "cli", "parser", "indexer", "router", "sessions",
    "uploads", "mailer", "audit", "pricing", "geo", "ledger", "feeds", "media",
]
_NOUNS = (
    "user session token invoice order payment cache queue worker job config schema migration index "
    "query request response handler client server router middleware event message record batch chunk "
    "buffer stream snapshot report metric counter account tenant profile permission role webhook "
    "upload file path node graph tree entry item product cart checkout customer address email "
    "notification template layout component hook store state reducer action selector model view "
    "controller service repository adapter provider registry plugin extension channel subscription "
    "lease lock retry backoff timeout deadline limit quota budget span trace log audit policy rule "
    "filter paginator cursor offset page result error warning flag feature experiment variant tag "
    "label category bucket blob object key secret credential certificate connection pool transaction "
    "cluster shard replica partition topic consumer producer scheduler cron task pipeline stage "
    "artifact build release deploy rollout manifest container image volume pod namespace ingress "
    "gateway proxy endpoint route resolver mutation loader parser lexer encoder decoder serializer "
    "validator sanitizer formatter renderer compiler bundle asset theme modal dialog form field input "
    "button table row column cell chart dashboard widget sidebar navbar toast spinner header footer "
    "tooltip locale timezone currency discount coupon refund shipment warehouse supplier"
).split()
_VERBS = (
    "get load parse build validate compute resolve fetch update sync render flush retry encode decode "
    "normalize create delete list find merge apply handle process register emit dispatch schedule "
    "refresh migrate export import transform serialize hydrate prefetch invalidate reconcile compact "
    "rotate sign verify authorize throttle split collect index search rank score upload stream "
    "enqueue drain prune backfill dedupe"
).split()
_ADJS = (
    "stale duplicate missing empty invalid expired slow flaky concurrent nested partial orphaned "
    "corrupted unicode large legacy async cached pending failed optional default global unused "
    "deprecated null negative truncated malformed"
).split()
_TECH = [
    "postgres", "sqlite", "redis", "kafka", "rabbitmq", "elasticsearch", "docker", "kubernetes",
    "terraform", "nginx", "graphql", "grpc", "protobuf", "websockets", "oauth", "JWT", "react",
    "nextjs", "vite", "webpack", "tailwind", "fastapi", "django", "flask", "sqlalchemy", "alembic",
    "pydantic", "celery", "pytest", "jest", "vitest", "playwright", "cypress", "tokio", "serde",
    "axum", "gin", "cobra", "prometheus", "grafana", "opentelemetry", "sentry", "S3", "lambda",
    "cloudflare", "GitHub Actions", "eslint", "prettier", "mypy", "ruff", "poetry", "pnpm", "cargo",
    "helm", "argocd", "clickhouse", "duckdb", "mongodb", "dynamodb", "memcached", "zod", "trpc",
]
_ENVS = ["staging", "production", "dev", "preview", "canary", "qa", "sandbox"]
_ERRORS = [
    "KeyError: 'user_id'", "TypeError: Cannot read properties of undefined (reading 'map')",
    "panic: runtime error: index out of range [3] with length 3",
    "error[E0502]: cannot borrow `self.buf` as mutable because it is also borrowed as immutable",
    "sqlite3.OperationalError: database is locked", "connect ECONNREFUSED 127.0.0.1:5432",
    "ERROR: deadlock detected", "TimeoutError: timed out after 30000ms",
    "AssertionError: expected 200, got 500", "ModuleNotFoundError: No module named 'pydantic_settings'",
    "401 Unauthorized", "OOMKilled (exit code 137)", "Segmentation fault (core dumped)",
    "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0",
    "RecursionError: maximum recursion depth exceeded", "TS2322: Type 'string' is not assignable to type 'number'",
    "fatal error: all goroutines are asleep - deadlock!", "IntegrityError: duplicate key value violates unique constraint",
    "Error: Hydration failed because the initial UI does not match what was rendered on the server",
    "thread 'main' panicked at 'called `Option::unwrap()` on a `None` value'",
    "CORS policy: No 'Access-Control-Allow-Origin' header is present", "ssl.SSLCertVerificationError",
    "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)",
    "context deadline exceeded", "Too many open files", "ReferenceError: process is not defined",
]
_BUGS = [
    "race condition", "memory leak", "off-by-one error", "N+1 query", "timezone bug", "encoding bug",
    "null pointer", "infinite retry loop", "stale cache", "flaky test", "slow query", "deadlock",
    "regression", "broken pagination", "double charge", "silent failure", "crash on startup",
    "wrong rounding", "missing index", "connection leak",
]
_FEATURES = [
    "rate limiting", "pagination", "CSV export", "dark mode", "SSO login", "audit logging",
    "bulk import", "webhook retries", "full-text search", "soft delete", "feature flags",
    "a health check endpoint", "request tracing", "multi-tenant isolation", "incremental sync",
    "a retry queue", "i18n support", "optimistic locking", "a CLI subcommand", "metrics export",
    "background jobs", "file uploads", "email digests", "an admin dashboard", "API versioning",
]
_SYLL = ["ka", "lo", "mi", "zen", "tor", "vex", "qua", "bri", "dax", "fen", "gul", "hap", "jor",
         "kel", "lum", "nor", "pix", "ros", "sul", "tav", "vin", "wex", "yor", "zul", "ard", "bel",
         "cor", "dri", "esk", "fio", "gan", "hul", "ist", "jun", "kro", "mab", "nix", "oph", "pra"]
_MODELS = {
    "1.0": ["claude-opus-4-1-20250805", "claude-sonnet-4-20250514"],
    "2.0": ["claude-sonnet-4-5-20250929", "claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001"],
    "2.1": ["claude-opus-4-5-20251101", "claude-sonnet-4-5-20250929", "claude-opus-4-6"],
}
_VERSIONS = {
    "1.0": ["1.0.51", "1.0.88", "1.0.119", "1.0.128"],
    "2.0": ["2.0.5", "2.0.9", "2.0.14", "2.0.27", "2.0.42", "2.0.55"],
    "2.1": ["2.1.12", "2.1.45", "2.1.98", "2.1.140", "2.1.203", "2.1.239"],
}

_PROMPTS = [
    "fix the {bug} in {path}, it shows up as `{err}` under load",
    "can you add {feature} to the {module} module? keep the public API the same",
    "refactor {fn} in {path} so it uses {tech} instead of the hand-rolled {noun} code",
    "why is {test} failing? I get {err}",
    "write tests for {path}, especially the {adj} {noun} case",
    "deploy the {module} service to {env} and check the {noun} dashboard afterwards",
    "the {tech} migration for {noun}s fails with `{err}` on {env}, can you look",
    "explain how {fn} works and where the {noun} gets {adj}",
    "rename {fn} to {fn2} everywhere and update the docs",
    "profile {path} - the {noun} endpoint got 4x slower after yesterday's merge",
    "we keep seeing {err} in the {module} logs on {env}. find the root cause",
    "add a {tech} integration for the {noun} {noun2} flow",
    "review the diff on this branch and tell me what could break in {module}",
    "the {word} flag is ignored by {fn}, please wire it through",
    "clean up the {adj} {noun} handling in {path} and remove dead code",
    "port {path} from {lang} to {lang2} and keep the tests green",
    "bump {tech} to the latest version and fix whatever breaks",
    "make {fn} idempotent - a {adj} {noun} can be delivered twice",
    "add type hints to {path} and make mypy pass",
    "set up {tech} in CI and fail the build on warnings",
    "there's a {bug} when two workers process the same {noun}, fix it",
    "split {path} into smaller modules, it's over 900 lines now",
    "implement {feature} behind the `{word}` feature flag",
    "why does the {module} build take 6 minutes? speed it up",
    "add an index for the {noun} lookups, the query plan shows a seq scan",
    "document the {noun} {noun2} lifecycle in docs/{module}.md",
    "the {noun} page in the dashboard renders blank in safari, check {path}",
    "cache the {noun} responses in {tech} with a 5 minute TTL",
    "handle the {adj} {noun} case in {fn}, right now it throws {err}",
    "ok, now run the whole test suite",
    "looks good. commit this with a sensible message",
    "hmm, that didn't work. the {test} still fails",
    "revert the last change to {path}, it broke {module}",
    "what's left on the todo list?",
    "can you double check the {noun} validation in {path}?",
    "continue",
    "yes, go ahead",
    "also update the changelog",
    "try again with {tech}",
    "no, keep {fn} synchronous, the callers in {module} can't await",
    "write a short design note for {feature} in the {module} service",
    "the customer reported {bug} in {module} on {env}: '{err}'. reproduce and fix",
]
_INTROS = [
    "I'll start by reading `{rel}` to see how `{fn}` handles the {noun}.",
    "Let me look at the {module} module first.",
    "Let me check how `{fn}` is used across the codebase.",
    "I'll run the failing test to reproduce the problem.",
    "Let me search for where the {noun} {noun2} is created.",
    "First I'll look at the current {tech} setup.",
    "Let me inspect the recent changes in `{rel}`.",
    "I'll gather some context on the {noun} flow before changing anything.",
    "Good idea. Let me find every call site first.",
]
_TRANSITIONS = [
    "Found it. `{fn}` never checks for a {adj} {noun}, so the {noun2} ends up in an inconsistent state.",
    "The test output shows the {noun} is {adj} after the retry. Let me look at the retry logic.",
    "Now I'll update `{rel}`.",
    "That confirms it. Let me fix the {noun} handling.",
    "Let me run the tests again.",
    "The {tech} config looks fine; the problem is in `{fn}`.",
    "Now let me check the tests for this module.",
    "I need to see how `{fn2}` builds the {noun} first.",
]
_FINALS = [
    "Done. Summary of the changes:\n\n- `{rel}`: `{fn}` now handles the {adj} {noun} case instead of raising\n- `{rel2}`: added a regression test\n- All {num} tests pass.",
    "Fixed. The root cause was a {bug} in `{fn}`: the {noun} was read before the {noun2} lock was taken. I moved the read inside the transaction and added a test that runs two workers concurrently.",
    "The {module} service builds and the {tech} checks pass. One thing to watch: `{fn2}` still assumes the {noun} is never {adj}; I left a TODO there.",
    "Here's how it works:\n\n1. `{fn}` loads the {noun} from {tech}\n2. it validates the {noun2} and normalizes the fields\n3. `{fn2}` writes the result back and emits an event\n\nThe {adj} case is handled in step 2.",
    "I've implemented it behind the flag. Remaining work:\n- wire the setting into the {module} config\n- add docs\n- load test on {env}",
    "All green now ({num} passed). I didn't touch the public API of `{rel}`.",
    "Committed as `{sha}`: \"{verb} {noun} handling in {module}\".",
    "DECIDED: keep `{fn}` synchronous and move the {noun} fan-out into a {tech} background job.",
]
_THINKING = [
    "The user wants {feature} in {module}. The simplest approach is to extend `{fn}` rather than add a new {noun} layer. I should check whether `{fn2}` is called from the {tech} worker too, because then the change affects both paths.",
    "The error `{err}` suggests the {noun} is {adj} by the time `{fn}` runs. It could be the cache or the retry. Let me look at the retry path first since it was changed recently.",
    "I need to be careful here: `{rel}` is imported by the {module} service and by the CLI. Changing the signature would break the CLI. Better to add an optional parameter.",
    "Tests failed on the {adj} {noun} case only. The fixture probably builds the {noun2} without a tenant. Let me read the fixture before changing production code.",
]
_PROSE = [
    "The {noun} {noun2} is owned by the {module} service and cached in {tech}.",
    "`{fn}()` is called from `{rel}` whenever a {noun} becomes {adj}.",
    "When the {noun} is {adj}, the request falls back to the {noun2} defaults.",
    "{Tech} keeps one connection per worker, so the {noun} pool must be sized accordingly.",
    "Retries use exponential backoff with jitter, capped at {num} seconds.",
    "The {module} API returns 409 if the {noun} was modified concurrently.",
    "See also the {word} RFC for the reasoning behind the {noun} format.",
    "Each {noun} carries a version number; writers compare-and-swap on it.",
    "The migration adds a nullable `{noun}_id` column first and backfills it in batches of {num}.",
    "Metrics are exported under the `{module}_{noun}_total` counter.",
    "In {env} the {noun} limit is {num} per minute per tenant.",
    "The {noun2} worker drains the queue every {num} ms and acknowledges in batches.",
]
_TITLES = [
    "Fix {bug} in {module} {noun} handling", "Add {feature} to {module}", "Refactor {module} {noun} {noun2}",
    "Debug {noun} failures on {env}", "{Tech} migration for {module}", "Investigate {adj} {noun}s in {module}",
    "Speed up {module} build", "Write tests for {module} {noun}", "Deploy {module} to {env}",
]
_SUMMARIES = [
    "{Module} {Noun} Bug: Tracing {Adj} {Noun2} Through the Retry Path",
    "Implementing {Feature} in the {Module} Service",
    "Refactoring {Module} {Noun} Handling With {Tech}",
    "Debugging {Tech} Failures in {Module} on {Env}",
]

# Code line templates, per language. Fields are filled by _Vocab.fill.
_CODE = {
    "py": [
        "import {pymod}", "from {module}.{noun} import {Cls}", "", "", "", "class {Cls}({Base}):",
        '    """{Prose}"""', "    def {fn}(self, {arg}: {pytyp}) -> {pytyp2}:", "        {var} = self._{noun}.get({arg})",
        "        if {var} is None:", '            raise {Exc}(f"{msg}: {{{arg}!r}}")', "        return {var}",
        "def {fn}({arg}, {arg2}={default}):", "    for {var} in {arg}:", "        {var2}.append({fn2}({var}))",
        '    logger.{lvl}("{msg} %s", {var})', "    # {comment}", "    {var} = await {fn2}({arg}, timeout={num})",
        "@{decor}", "    with {ctx}({arg}) as {var}:", "    try:", "    except {Exc} as exc:",
        '        logger.exception("{msg}")', "{CONST} = {num}", '    assert {var} == {num}, "{msg}"',
        "    yield {var}", '    return {{"{noun}": {var}, "{noun2}": {var2}}}', "        {var}.{noun}_id = {arg}.id",
        '    {var} = session.execute(select({Cls}).where({Cls}.{noun}_id == {arg})).scalar_one_or_none()',
        "    @property", "    def {noun}(self) -> {pytyp}:", "        return self._{noun}",
    ],
    "ts": [
        "import {{ {Cls}, {fnc} }} from '../{module}/{noun}';", "import {{ useState, useEffect }} from 'react';", "", "",
        "export interface {Cls} {{", "  {noun}Id: string;", "  {noun2}: {tstyp};", "}}",
        "export async function {fnc}({arg}: {tstyp}): Promise<{Cls}> {{", "  const {var} = await fetch(`/api/{module}/${{{arg}}}`);",
        "  if (!{var}.ok) throw new Error('{msg}');", "  return {var}.json();", "}}", "  // {comment}",
        "  const [{var}, set{Cls}] = useState<{tstyp} | null>(null);", "  useEffect(() => {{", "    {fnc}({arg}).then(set{Cls});",
        "  }}, [{arg}]);", "  return <div className=\"{noun}-{noun2}\">{{{var}?.{noun}}}</div>;", "export const {CONST} = {num};",
        "    .filter(({var}) => {var}.{noun} !== undefined)", "    .map(({var}) => ({{ ...{var}, {noun2}: {fnc}({var}) }}))",
        "  console.{lvl}('{msg}', {var});", "  const {var}: Record<string, {tstyp}> = {{}};",
        "describe('{fnc}', () => {{", "  it('{msg}', async () => {{", "    expect({var}).toEqual({num});", "  }});",
    ],
    "go": [
        "package {module}", "", "", "import (", '\t"context"', '\t"fmt"', ")", "type {Cls} struct {{",
        "\t{Noun}ID string `json:\"{noun}_id\"`", "\t{Noun2} {gotyp}", "}}",
        "func (s *{Cls}) {Fn}(ctx context.Context, {arg} {gotyp}) ({gotyp2}, error) {{",
        "\t{var}, err := s.{noun}.{Fn2}(ctx, {arg})", "\tif err != nil {{", '\t\treturn nil, fmt.Errorf("{msg}: %w", err)',
        "\t}}", "\treturn {var}, nil", "}}", "\t// {comment}", "\tfor _, {var} := range {arg} {{",
        '\t\tlog.Printf("{msg} %v", {var})', "\tdefer {var}.Close()", "const {CONST} = {num}",
        "func Test{Fn}(t *testing.T) {{", '\tif got := {Fn}({num}); got != {num} {{', '\t\tt.Fatalf("{msg}: %v", got)',
    ],
    "rs": [
        "use crate::{module}::{Cls};", "use std::collections::HashMap;", "", "", "#[derive(Debug, Clone, Serialize, Deserialize)]",
        "pub struct {Cls} {{", "    pub {noun}_id: u64,", "    pub {noun2}: {rstyp},", "}}",
        "impl {Cls} {{", "    pub fn {fn}(&self, {arg}: &{rstyp}) -> Result<{rstyp2}, {Cls}Error> {{",
        "        let {var} = self.{noun}.get({arg}).ok_or({Cls}Error::Missing)?;", "        Ok({var}.clone())", "    }}", "}}",
        "    // {comment}", "        for {var} in {arg}.iter() {{", '            tracing::{lvl}!("{msg} {{:?}}", {var});', "        }}",
        "pub const {CONST}: usize = {num};", "    #[test]", "    fn {fn}_{adj}() {{", "        assert_eq!({fn}({num}), {num});",
        "        let mut {var}: HashMap<String, {rstyp}> = HashMap::new();", "    .map(|{var}| {var}.{noun}.len())",
    ],
    "sql": [
        "CREATE TABLE {noun}s (", "    id BIGSERIAL PRIMARY KEY,", "    {noun2}_id BIGINT NOT NULL REFERENCES {noun2}s(id),",
        "    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),", "    {noun} TEXT,", ");", "",
        "CREATE INDEX idx_{noun}s_{noun2}_id ON {noun}s ({noun2}_id);", "ALTER TABLE {noun}s ADD COLUMN {noun2}_state TEXT;",
        "-- {comment}", "SELECT {noun}_id, count(*) FROM {noun}s WHERE {noun2}_id = $1 GROUP BY 1;",
        "UPDATE {noun}s SET {noun2} = NULL WHERE created_at < now() - interval '{num} days';",
        "INSERT INTO {noun}s ({noun2}_id, {noun}) VALUES ({num}, '{word}');",
    ],
    "md": [
        "# {Title}", "", "", "## {Title}", "{Prose}", "{Prose}", "- `{fn}()` - {msg}", "- {Prose}", "```bash",
        "make {noun}", "```", "> **Note:** {Prose}", "| {noun} | {noun2} | {num} |", "### {Noun} {Noun2}",
    ],
    "yaml": [
        "apiVersion: apps/v1", "kind: Deployment", "metadata:", "  name: {module}-{noun}", "spec:", "  replicas: {num}",
        "    - name: {noun}", "      image: registry.example.com/{module}:{num}", "      env:", "        - name: {CONST}",
        "          value: \"{word}\"", "  {noun}: {num}", "  {noun2}_{noun}: {word}", "# {comment}", "",
        "    steps:", "      - run: make {noun}", "      - uses: actions/checkout@v4",
    ],
}
_EXT_LANG = {"py": "py", "ts": "ts", "tsx": "ts", "go": "go", "rs": "rs", "sql": "sql", "md": "md",
             "yaml": "yaml", "yml": "yaml", "ipynb": "py"}
_FILE_NAMES = {
    "py": ["__init__", "models", "service", "api", "utils", "repository", "schemas", "tasks", "client", "errors", "handlers", "settings"],
    "ts": ["index", "client", "types", "hooks", "store", "utils", "api", "View", "List", "Form"],
    "go": ["server", "handler", "store", "client", "main", "worker", "config"],
    "rs": ["lib", "parser", "engine", "error", "codec", "store"],
}
_LOG_TEMPLATES = {
    "pytest": [
        "tests/{module}/test_{noun}.py::test_{verb}_{noun2}_{adj} PASSED{pad}[{pct:>3}%]",
        "tests/{module}/test_{noun}.py::test_{verb}_{noun2} PASSED{pad}[{pct:>3}%]",
        "tests/{module}/test_{noun}.py::Test{Cls}::test_{verb}_{adj} PASSED{pad}[{pct:>3}%]",
        "tests/{module}/test_{noun}.py::test_{verb}_{noun2} FAILED{pad}[{pct:>3}%]",
        "tests/{module}/test_{noun}.py::test_{verb}_{noun2}[{word}] SKIPPED (requires {tech}){pad}[{pct:>3}%]",
        "E       {err}", "E       assert {num} == {num2}", "    def test_{verb}_{noun}({arg}):",
        ">       {var} = {fn}({arg})", "{path}:{num}: {Exc}", "_" * 30 + " test_{verb}_{noun} " + "_" * 30,
        "WARNING  {module}.{noun}:{noun2}.py:{num} {msg}",
    ],
    "jest": [
        " PASS  web/src/{module}/{Cls}.test.tsx ({num}.{num2} s)", " FAIL  web/src/{module}/{fnc}.test.ts",
        "    \u2713 {msg} ({num} ms)", "    \u2715 {msg} ({num} ms)", "  \u25cf {Cls} \u203a {msg}",
        "    expect(received).toEqual(expected) // deep equality", "    - Expected  - {num}", "    + Received  + {num2}",
        "      at Object.<anonymous> (web/src/{module}/{fnc}.test.ts:{num}:{num2})", "  console.{lvl}", "    {msg}",
    ],
    "gotest": [
        "=== RUN   Test{Fn}", "--- PASS: Test{Fn} (0.{num}s)", "=== RUN   Test{Fn}/{adj}_{noun}",
        "    --- PASS: Test{Fn}/{adj}_{noun} (0.00s)", "--- FAIL: Test{Fn} (0.{num}s)",
        "    {noun}_test.go:{num}: {msg}: got {num}, want {num2}", "ok  \tgithub.com/example/app/services/{module}\t{num}.{num2}s",
        "FAIL\tgithub.com/example/app/services/{module}\t0.{num}s",
    ],
    "cargo": [
        "   Compiling {module}-core v0.{num}.{num2} (/crates/{module})", "    Finished `test` profile [unoptimized + debuginfo] target(s) in {num}.{num2}s",
        "     Running unittests src/lib.rs (target/debug/deps/{module}_core-{hex})", "test {noun}::tests::{fn}_{adj} ... ok",
        "test {noun}::tests::{fn} ... ok", "test {noun}::tests::{fn}_{noun2} ... FAILED", "warning: unused variable: `{var}`",
        "  --> crates/{module}/src/{noun}.rs:{num}:{num2}", "error[E0308]: mismatched types",
    ],
    "build": [
        "#{num} [{noun} {num2}/12] RUN pip install --no-cache-dir -r requirements.txt", "#{num} DONE {num2}.{num}s",
        "vite v5.{num}.{num2} building for production...", "\u2713 {num} modules transformed.",
        "dist/assets/{noun}-{hex}.js   {num}.{num2} kB \u2502 gzip: {num2}.{num} kB", "src/{module}/{noun}.ts({num},{num2}): error TS2345: {msg}",
        "npm WARN deprecated {noun}@{num}.{num2}.0: {msg}", "added {num} packages, and audited {num2} packages in {num}s",
        "Step {num}/{num2} : COPY . .", " ---> Using cache", " ---> {hex}",
    ],
    "server": [
        '{{"ts":"2025-{mm}-{dd}T{hh}:{mi}:{ss}.{ms}Z","level":"{lvl}","service":"{module}","msg":"{msg}","{noun}_id":"{hex}","latency_ms":{num}}}',
        "{hh}:{mi}:{ss}.{ms} {LVL} [{module}.{noun}] {msg} {noun2}={hex} elapsed={num}ms",
        "{hh}:{mi}:{ss}.{ms} ERROR [{module}.{noun}] {err}",
        '10.{num}.{num2}.{pct} - - [{dd}/Oct/2025:{hh}:{mi}:{ss} +0000] "GET /api/{module}/{noun}s?page={num} HTTP/1.1" 200 {num2}',
        "Traceback (most recent call last):", '  File "/app/src/{module}/{noun}.py", line {num}, in {fn}', "    {var} = {fn2}({arg})",
    ],
    "git": [
        "commit {hex}{hex}{hex}{hex}{hex}", "Author: {Name} <{name}@example.com>", "Date:   Mon Oct {dd} {hh}:{mi}:{ss} 2025 +0200",
        "", "    {verb}: {msg} in {module}", "    {Prose}", " src/{module}/{noun}.py | {num} ++++---",
        " {num} files changed, {num2} insertions(+), {pct} deletions(-)",
        "{hex} {verb}({module}): {msg}", "On branch {branch}", "\tmodified:   src/{module}/{noun}.py",
    ],
    "ls": [
        "-rw-r--r--  1 dev  staff  {num}{num2} Oct {dd} {hh}:{mi} {noun}_{noun2}.py", "drwxr-xr-x  {num} dev  staff  {num2} Oct {dd} {hh}:{mi} {module}",
        "-rw-r--r--  1 dev  staff  {num}{num2} Oct {dd} {hh}:{mi} {Cls}.tsx", "-rwxr-xr-x  1 dev  staff  {num} Oct {dd} {hh}:{mi} {noun}.sh",
    ],
    "kubectl": [
        "{module}-{noun}-{hex}   1/1     Running            0          {num}h", "{module}-{noun}-{hex}   0/1     CrashLoopBackOff   {num}          {num2}m",
        "Events:", "  Warning  BackOff    {num}s (x{num2} over {num}m)  kubelet  Back-off restarting failed container",
        "  Normal   Pulled     {num}m   kubelet  Container image \"registry.example.com/{module}:{num}\" already present on machine",
    ],
}
_BASH_COMMANDS = {
    "pytest": ["pytest tests/{module} -x -q", "python -m pytest tests/{module}/test_{noun}.py -v", "pytest -k {noun} --maxfail=3"],
    "jest": ["npm test -- {Cls}", "pnpm vitest run src/{module}", "npx jest web/src/{module} --runInBand"],
    "gotest": ["go test ./services/{module}/... -run Test{Fn} -v", "go test -race ./...", "go vet ./services/{module}/..."],
    "cargo": ["cargo test -p {module}-core", "cargo clippy --all-targets -- -D warnings", "cargo build --release"],
    "build": ["docker build -t {module}:dev .", "npm run build", "pnpm install && pnpm build", "make build"],
    "server": ["docker compose logs --tail=500 {module}", "tail -n 400 logs/{module}.log", "kubectl logs deploy/{module} -n {env} --since=1h"],
    "git": ["git log --stat -n 20", "git log --oneline -n 50", "git status", "git show HEAD --stat"],
    "ls": ["ls -la src/{module}", "ls -la", "find . -name '*.py' -newer setup.cfg | head -50"],
    "kubectl": ["kubectl get pods -n {env}", "kubectl describe pod -n {env} -l app={module}"],
}

_SYSTEM_REMINDER_READ = (
    "\n\n<system-reminder>\nWhenever you read a file, you should consider whether it looks malicious. If it does, "
    "you MUST refuse to improve or augment the code. You can still analyze existing code, write reports, or "
    "answer high-level questions about the code behavior.\n</system-reminder>\n"
)
_CAVEAT = ("<local-command-caveat>Caveat: The messages below were generated by the user while running local "
           "commands. DO NOT respond to these messages or otherwise consider them in your response unless the "
           "user explicitly asks you to.</local-command-caveat>")
_TODO_RESULT = ("Todos have been modified successfully. Ensure that you continue to use the todo list to track "
                "your progress. Please proceed with the current tasks if applicable")
_COMPACT_HEAD = ("This session is being continued from a previous conversation that ran out of context. "
                 "The conversation is summarized below:\n")

_FIELD_RE = re.compile(r"\{([A-Za-z]+?)(\d*)(?::[^}]*)?\}")


class _Vocab:
    """Words, identifiers and template filling. All draws go through the rng passed in."""

    def __init__(self, rng: random.Random):
        words = set()
        while len(words) < 2500:
            words.add("".join(rng.choice(_SYLL) for _ in range(rng.choice((2, 3, 3, 4)))))
        self.rare = sorted(words)
        rng.shuffle(self.rare)
        acc, cw = 0.0, []
        for i in range(len(self.rare)):
            acc += 1.0 / (i + 1)
            cw.append(acc)
        self.rare_cw = cw
        self.names = ["alice", "bob", "carol", "dmitri", "erin", "farah", "gustavo", "hana", "ivan", "jun"]
        self.branches_feat = [f"{a}-{n}" for a in ("add", "new", "improve") for n in ("search", "export", "billing", "sso", "cache")]
        self._cache: dict[str, list] = {}
        self.ws = ""
        self.files: list = []
        self._build_gens()

    # -- atoms --
    def word(self, rng):
        return rng.choices(self.rare, cum_weights=self.rare_cw)[0]

    def noun(self, rng):
        return self.word(rng) if rng.random() < 0.08 else rng.choice(_NOUNS)

    def fn(self, rng):
        return f"{rng.choice(_VERBS)}_{self.noun(rng)}"

    def fnc(self, rng):
        return rng.choice(_VERBS) + self.noun(rng).capitalize()

    def cls(self, rng):
        return self.noun(rng).capitalize() + rng.choice(("", "Manager", "Service", "Repository", "Client", "Config", "State", "Handler", "Store", "Event"))

    def rel(self, rng):
        return rng.choice(self.files).rel if self.files else "src/app.py"

    def _build_gens(self):
        ch = random.Random.choice
        msgs = ("failed to load config", "retrying request", "invalid token", "cache miss for key",
                "connection reset by peer", "skipping empty batch", "unexpected state", "flushing buffer",
                "lock acquired", "rate limit exceeded", "schema mismatch", "retry budget exhausted",
                "handles the empty case", "returns the cached value", "rejects expired tokens",
                "keeps insertion order", "closes the connection on error")
        comments = ("TODO: handle the {} edge case", "NOTE: {} must stay sorted", "FIXME: {} leaks on retry",
                    "keep in sync with the {} schema", "see issue #{}", "HACK: {} workaround")
        short = ("data", "item", "row", "ctx", "cfg", "req", "res", "batch", "entry", "payload", "record",
                 "value", "node", "conn", "job")
        typs = {"pytyp": ("str", "int", "dict[str, Any]", "list[str]", "bytes", "bool", "Optional[str]"),
                "tstyp": ("string", "number", "boolean", "string[]", "Record<string, unknown>", "Date"),
                "gotyp": ("string", "int64", "[]byte", "map[string]any", "*Config", "time.Duration"),
                "rstyp": ("String", "u64", "Vec<u8>", "Option<String>", "&str", "bool")}
        pymods = ("os", "json", "logging", "asyncio", "re", "time", "typing", "dataclasses", "pathlib",
                  "sqlite3", "hashlib", "itertools", "functools", "collections", "httpx", "pydantic",
                  "sqlalchemy", "fastapi", "redis", "boto3", "click", "yaml", "pytest")
        lvls = ("info", "info", "debug", "warning", "error")
        g = {
            "noun": self.noun, "var": lambda r: ch(r, short), "arg": lambda r: ch(r, short),
            "Noun": lambda r: self.noun(r).capitalize(), "word": self.word, "verb": lambda r: ch(r, _VERBS),
            "adj": lambda r: ch(r, _ADJS), "Adj": lambda r: ch(r, _ADJS).capitalize(), "fn": self.fn,
            "Fn": lambda r: ch(r, _VERBS).capitalize() + self.noun(r).capitalize(), "fnc": self.fnc,
            "Cls": self.cls, "Base": lambda r: ch(r, ("BaseModel", "Protocol", "Exception", "object", "Generic[T]", "ABC")),
            "module": lambda r: ch(r, _MODULES), "Module": lambda r: ch(r, _MODULES).capitalize(),
            "tech": lambda r: ch(r, _TECH), "Tech": lambda r: ch(r, _TECH).capitalize(),
            "env": lambda r: ch(r, _ENVS), "Env": lambda r: ch(r, _ENVS).capitalize(),
            "err": lambda r: ch(r, _ERRORS), "bug": lambda r: ch(r, _BUGS),
            "feature": lambda r: ch(r, _FEATURES), "Feature": lambda r: ch(r, _FEATURES).title(),
            "num": lambda r: str(r.randint(1, 9) if r.random() < 0.3 else r.randint(10, 99) if r.random() < 0.5 else r.randint(100, 4096)),
            "pct": lambda r: str(r.randint(0, 100)), "hex": lambda r: "%08x" % r.getrandbits(32),
            "sha": lambda r: "%07x" % r.getrandbits(28), "path": lambda r: self.ws + "/" + self.rel(r),
            "rel": self.rel, "test": lambda r: f"test_{ch(r, _VERBS)}_{self.noun(r)}_{ch(r, _ADJS)}",
            "lang": lambda r: ch(r, ("Python", "TypeScript", "Go", "Rust")),
            "msg": lambda r: ch(r, msgs) + (" " + self.noun(r) if r.random() < 0.3 else ""),
            "comment": lambda r: ch(r, comments).format(self.noun(r) if r.random() < 0.8 else r.randint(10, 999)),
            "pymod": lambda r: ch(r, pymods),
            "Exc": lambda r: ch(r, ("ValueError", "KeyError", "RuntimeError", "TimeoutError", "PermissionError")) if r.random() < 0.8 else self.cls(r) + "Error",
            "default": lambda r: ch(r, ("None", "0", "True", "False", '""', "()", "100")),
            "lvl": lambda r: ch(r, lvls), "LVL": lambda r: ch(r, lvls).upper(),
            "decor": lambda r: ch(r, ("dataclass", "staticmethod", "classmethod", "pytest.fixture", 'router.get("/health")', "lru_cache(maxsize=128)", "retry(times=3)")),
            "ctx": lambda r: ch(r, ("session_scope", "open", "lock", "tracer.start_as_current_span", "timeout", "transaction")),
            "CONST": lambda r: f"{self.noun(r).upper()}_{ch(r, ('TIMEOUT', 'LIMIT', 'TTL', 'MAX_RETRIES', 'BATCH_SIZE', 'PORT'))}",
            "Prose": lambda r: self.fill(ch(r, _PROSE), r), "Title": lambda r: self.fill(ch(r, _TITLES), r),
            "Name": lambda r: ch(r, self.names).capitalize(), "name": lambda r: ch(r, self.names),
            "branch": lambda r: ch(r, ("main", "feature/" + ch(r, self.branches_feat), "fix/" + ch(r, _NOUNS))),
            "mm": lambda r: "%02d" % r.randint(1, 12), "dd": lambda r: "%02d" % r.randint(1, 28),
            "hh": lambda r: "%02d" % r.randint(0, 23), "mi": lambda r: "%02d" % r.randint(0, 59),
            "ss": lambda r: "%02d" % r.randint(0, 59), "ms": lambda r: "%03d" % r.randint(0, 999),
            "pad": lambda r: " " * r.randint(1, 30),
        }
        for k in typs:
            g[k] = (lambda opts: lambda r: ch(r, opts))(typs[k])
        self._gens = g

    def fill(self, template: str, rng: random.Random, over: dict | None = None) -> str:
        """Fill `template`; fields named in `over` (a session's topic) win three times out of four."""
        fields = self._cache.get(template)
        if fields is None:
            fields = [(m.group(1) + m.group(2), self._gens.get(m.group(1), None), m.group(1))
                      for m in _FIELD_RE.finditer(template)]
            fields = list({f[0]: f for f in fields}.values())
            self._cache[template] = fields
        if not fields:
            return template.replace("{{", "{").replace("}}", "}")
        if over:
            vals = {}
            for k, g, name in fields:
                o = over.get(name)
                vals[k] = o(rng) if o is not None and rng.random() < 0.75 else (g(rng) if g else name)
            return template.format(**vals)
        return template.format(**{k: (g(rng) if g else name) for k, g, name in fields})


# --------------------------------------------------------------------------------------------
# Text pools: the bulk of the bytes is sliced out of these
# --------------------------------------------------------------------------------------------

class _File:
    __slots__ = ("rel", "lang", "raw", "num", "raw_off", "num_off", "nlines")

    def __init__(self, rel, lang, lines):
        self.rel, self.lang = rel, lang
        self.nlines = len(lines)
        raw_parts, num_parts = [], []
        raw_off, num_off = array("l", [0]), array("l", [0])
        r = n = 0
        for i, line in enumerate(lines, 1):
            a = line + "\n"
            b = "%6d%s%s\n" % (i, _ARROW, line)
            raw_parts.append(a)
            num_parts.append(b)
            r += len(a)
            n += len(b)
            raw_off.append(r)
            num_off.append(n)
        self.raw = "".join(raw_parts)
        self.num = "".join(num_parts)
        self.raw_off, self.num_off = raw_off, num_off


class _Pool:
    """A long text with line offsets; slices of N chars start at a line boundary."""

    def __init__(self, lines):
        self.text = "\n".join(lines) + "\n"
        off = array("l", [0])
        n = 0
        for line in lines:
            n += len(line) + 1
            off.append(n)
        self.off = off
        self.n = len(lines)

    def slice(self, rng, size):
        out, need = [], size
        while need > 0:
            a = rng.randrange(self.n)
            start = self.off[a]
            b = bisect.bisect_left(self.off, start + need)
            if b > self.n:
                b = self.n
            piece = self.text[start:self.off[b]]
            out.append(piece)
            need -= len(piece)
        return "".join(out).rstrip("\n")


class _Content:
    def __init__(self, seed: int, workspace: str):
        rng = random.Random(seed)
        self.v = _Vocab(rng)
        self.ws = workspace
        self.v.ws = workspace
        self._build_tree(rng)
        self.pools = {k: _Pool([self.v.fill(rng.choice(t), rng) for _ in range(2000 if k not in ("pytest", "server", "git") else 3000)])
                      for k, t in _LOG_TEMPLATES.items()}
        self.prose = _Pool([self.v.fill(rng.choice(_PROSE), rng) for _ in range(3000)])
        self.blob64 = base64.b64encode(rng.randbytes(96_000)).decode()

    def _build_tree(self, rng):
        v = self.v
        rels = []
        for m in _MODULES:
            lang = rng.choices(("py", "ts", "go", "rs"), (45, 25, 15, 15))[0]
            names = rng.sample(_FILE_NAMES[lang], rng.randint(3, min(6, len(_FILE_NAMES[lang]))))
            for nm in names:
                if lang == "py":
                    rels.append((f"src/{m}/{nm}.py", "py"))
                elif lang == "ts":
                    ext = "tsx" if nm[0].isupper() else "ts"
                    rels.append((f"web/src/{m}/{nm}.{ext}", "ts"))
                elif lang == "go":
                    rels.append((f"services/{m}/{nm}.go", "go"))
                else:
                    rels.append((f"crates/{m}/src/{nm}.rs", "rs"))
            for _ in range(rng.randint(1, 2)):
                n = v.noun(rng)
                rels.append({"py": (f"tests/{m}/test_{n}.py", "py"), "ts": (f"web/src/{m}/{n}.test.ts", "ts"),
                             "go": (f"services/{m}/{n}_test.go", "go"), "rs": (f"crates/{m}/tests/{n}.rs", "rs")}[lang])
        for i in range(1, 15):
            rels.append((f"migrations/{i:04d}_{rng.choice(_VERBS)}_{v.noun(rng)}s.sql", "sql"))
        for m in rng.sample(_MODULES, 8):
            rels.append((f"docs/{m}.md", "md"))
        for m in rng.sample(_MODULES, 6):
            rels.append((f"deploy/k8s/{m}.yaml", "yaml"))
        rels += [("README.md", "md"), ("CHANGELOG.md", "md"), (".github/workflows/ci.yml", "yaml"),
                 ("docker-compose.yml", "yaml")]
        huge = {("web/src/generated/graphql.ts", "ts"), ("migrations/0000_initial_schema.sql", "sql"),
                ("docs/api-reference.md", "md"), ("src/api/fixtures_data.py", "py"), ("crates/parser/src/tables.rs", "rs")}
        rels += sorted(huge)
        line_pools = {lang: [v.fill(rng.choice(tpl), rng) for _ in range(8000 if lang == "py" else 4000 if lang in ("ts", "go", "rs") else 1500)]
                      for lang, tpl in _CODE.items()}
        seen, files = set(), []
        for rel, lang in rels:
            if rel in seen:
                continue
            seen.add(rel)
            if (rel, lang) in huge:
                size = rng.randint(110_000, 260_000)
            else:
                size = int(min(100_000, max(300, rng.lognormvariate(math.log(3500), 1.0))))
            pool = line_pools[lang]
            lines, n = [], 0
            while n < size:
                a = rng.randrange(len(pool))
                run = pool[a:a + rng.randint(4, 40)]
                if rng.random() < 0.3:  # a few fresh lines so every file has its own identifiers
                    run.append(v.fill(rng.choice(_CODE[lang]), rng))
                lines.extend(run)
                n += sum(map(len, run)) + 8 * len(run)
            files.append(_File(rel, lang, lines))
        self.files = files
        v.files = files
        self.by_num = sorted(files, key=lambda f: len(f.num))
        self.num_sizes = [len(f.num) for f in self.by_num]
        self.by_raw = sorted(files, key=lambda f: len(f.raw))
        self.raw_sizes = [len(f.raw) for f in self.by_raw]
        self.by_lang, self.by_module = {}, {}
        for f in files:
            self.by_lang.setdefault(f.lang, []).append(f)
            parts = f.rel.split("/")
            mod = None
            if parts[0] in ("src", "tests", "services", "crates") and len(parts) > 2:
                mod = parts[1]
            elif parts[0] == "web" and len(parts) > 3:
                mod = parts[2]
            if mod in _MODULES:
                self.by_module.setdefault(mod, []).append(f)

    def file_near(self, rng, size, numbered=True):
        seq, sizes = (self.by_num, self.num_sizes) if numbered else (self.by_raw, self.raw_sizes)
        i = bisect.bisect_left(sizes, size)
        lo = max(0, min(i, len(seq) - 3))
        return seq[rng.randrange(lo, min(len(seq), lo + 6))]

    def code_text(self, rng, lang, size):
        """Raw code of about `size` chars in language `lang` (concatenating files if needed)."""
        fs = self.by_lang.get(lang) or self.files
        out, need = [], size
        while need > 0:
            f = rng.choice(fs)
            a = 0 if rng.random() < 0.5 else rng.randrange(f.nlines)
            b = bisect.bisect_left(f.raw_off, f.raw_off[a] + need)
            b = min(b, f.nlines)
            if b <= a:
                b = min(f.nlines, a + 1)
            piece = f.raw[f.raw_off[a]:f.raw_off[b]]
            out.append(piece)
            need -= max(1, len(piece))
        return "".join(out)

    def signature(self, rng):
        n = rng.randint(200, 1200)
        a = rng.randrange(len(self.blob64) - n)
        return self.blob64[a:a + n]


# --------------------------------------------------------------------------------------------
# Planning
# --------------------------------------------------------------------------------------------

_TOOL_KINDS = ["Read", "Bash", "Grep", "Glob", "Edit", "Write", "MultiEdit", "NotebookEdit", "TodoWrite",
               "WebFetch", "WebSearch", "mcp"]
_TOOL_WEIGHTS = [28, 24, 9, 5, 13, 6, 3, 1, 4, 2, 2, 1]
# median nominal content size (chars at scale 1), clamp lo, hi
_TOOL_SIZES = {
    "Read": (2600, 200, 100_000), "Bash": (1600, 60, 100_000), "Grep": (1000, 60, 60_000), "Glob": (500, 60, 8_000),
    "Edit": (2600, 200, 100_000), "Write": (1800, 100, 60_000), "MultiEdit": (2600, 200, 100_000),
    "NotebookEdit": (900, 80, 20_000), "TodoWrite": (0, 0, 0), "WebFetch": (1300, 100, 30_000),
    "WebSearch": (900, 100, 10_000), "mcp": (1100, 100, 30_000), "Agent": (1400, 200, 20_000),
}
_SUB_KINDS = ["Read", "Grep", "Glob", "Bash"]
_SUB_WEIGHTS = [45, 25, 12, 18]


def _nominal(rng, kind):
    med, lo, hi = _TOOL_SIZES[kind]
    if not med:
        return 0
    return int(min(hi, max(lo, rng.lognormvariate(math.log(med), 1.0))))


def _plan_rounds(rng, n_tools, kinds, weights):
    rounds, left = [], n_tools
    while left > 0:
        k = min(left, rng.choices((1, 1, 1, 2, 2, 3))[0])
        rounds.append([(kind, _nominal(rng, kind), None) for kind in rng.choices(kinds, weights, k=k)])
        left -= k
    return rounds


class _Plan:
    __slots__ = ("idx", "sid", "rng", "start", "dur", "era", "version", "model", "branch", "layout", "prompts",
                 "V", "U", "images", "flags", "marker")


def _era_of(frac):
    return "1.0" if frac < 0.2 else ("2.0" if frac < 0.55 else "2.1")


def _pick_version(era, frac):
    lo, hi = {"1.0": (0.0, 0.2), "2.0": (0.2, 0.55), "2.1": (0.55, 1.0)}[era]
    vs = _VERSIONS[era]
    i = int((min(max(frac, lo), hi) - lo) / (hi - lo) * len(vs))
    return vs[min(i, len(vs) - 1)]


def _make_plans(rng, n, now_ms, images):
    # start times: a handful in the last 7 days, the rest over the year before; index 0 is the oldest
    n_recent = n if n <= 3 else min(n, max(3, n // 50))
    starts, raw = [], []
    for i in range(n):
        if i < n_recent:
            raw.append(("r", rng.random()))
        else:
            raw.append(("o", now_ms - 365 * _DAY_MS + int(rng.random() * 357 * _DAY_MS)))
    seeds = [rng.getrandbits(64) for _ in range(n)]
    plans = []
    for i in range(n):
        p = _Plan()
        p.idx = i
        p.rng = random.Random(seeds[i])
        plans.append(p)
    # session shapes
    for p in plans:
        r = p.rng
        p.sid = str(uuid.UUID(int=r.getrandbits(128), version=4))
        n_prompts = int(4 + 57 * r.random() ** 3.2)  # 4..60, median ~10
        p.dur = int(min(120, max(2, n_prompts * r.uniform(0.6, 3.5))) * 60_000)
        p.prompts = []
        for _ in range(n_prompts):
            nt = r.choices((0, 1, 2, 3, 4, 6, 9), (30, 28, 18, 10, 7, 5, 2))[0]
            p.prompts.append(_plan_rounds(r, nt, _TOOL_KINDS, _TOOL_WEIGHTS))
        p.images = []
        p.flags = {}
        p.layout = None
    for i, (kind, x) in enumerate(raw):
        p = plans[i]
        if kind == "r":
            latest = now_ms - 4 * 3_600_000  # twice the longest session, whichever plan gets this start
            starts.append(latest - int(x * (6 * _DAY_MS)))
        else:
            starts.append(x)
    order = sorted(starts)
    for p, s in zip(plans, order):
        p.start = s
        frac = (s - (now_ms - 365 * _DAY_MS)) / (365 * _DAY_MS)
        p.era = _era_of(frac)
        p.version = _pick_version(p.era, frac)
    # feature assignment (counts are proportions with a floor so small histories show everything)
    def pick(count, pred=None, exclude=()):
        cand = [p for p in plans if p.idx not in exclude and (pred is None or pred(p))]
        if len(cand) < count:
            cand = [p for p in plans if p.idx not in exclude]
        return rng.sample(cand, min(count, len(cand)))

    def cnt(frac, floor_n, floor):
        c = int(round(frac * n))
        return max(c, floor) if n >= floor_n else c

    flat = pick(cnt(0.02, 50, 1), lambda p: p.era != "2.1")
    flat_ids = {p.idx for p in flat}
    nested = pick(cnt(0.15, 4, 1), lambda p: p.era != "1.0", exclude=flat_ids)
    for p in flat:
        p.layout = "flat"
        if p.era == "2.1":
            p.era, p.version = "2.0", "2.0.55"
    for p in nested:
        p.layout = "nested"
    for p in flat + nested:
        r = p.rng
        for _ in range(r.choice((1, 1, 1, 2, 3))):
            sub = _plan_rounds(r, r.randint(2, 10), _SUB_KINDS, _SUB_WEIGHTS)
            pi = r.randrange(len(p.prompts))
            p.prompts[pi].insert(r.randrange(len(p.prompts[pi]) + 1), [("Agent", _nominal(r, "Agent"), sub)])
    for name, frac, floor_n, floor, pred in (
        ("summary", 0.5, 8, 1, lambda p: p.era != "2.1"),
        ("ai_title", 0.8, 8, 1, lambda p: p.era == "2.1"),
        ("custom_title", 0.08, 8, 1, None),
        ("hook", 0.35, 8, 1, None),
        ("clear", 0.10, 8, 1, None),
        ("compact", 0.05, 8, 1, lambda p: len(p.prompts) >= 12),
        ("local_cmd", 0.08, 8, 1, None),
        ("secrets", 0.10, 5, 1, None),
        ("cwd_switch", 0.10, 8, 1, lambda p: len(p.prompts) >= 6),
        ("queue", 0.05, 8, 1, lambda p: len(p.prompts) >= 6),
        ("api_error", 0.03, 30, 1, lambda p: p.era != "2.1"),
        ("reminder", 0.3, 8, 1, None),
    ):
        elig = [p for p in plans if pred is None or pred(p)]
        share = frac if name not in ("summary", "ai_title") else frac * len(elig) / max(1, n)
        for p in pick(cnt(share, floor_n, floor), pred):
            p.flags[name] = True
    for _ in range(images):
        p = plans[rng.randrange(n)]
        p.images.append(rng.randint(2_000_000, 5_000_000) // 4 * 4)
    for p in plans:
        r = p.rng
        p.model = r.choice(_MODELS[p.era])
        p.branch = r.choices(("main", "", "feature", "fix", "develop", "release/1.4"), (45, 8, 25, 15, 5, 2))[0]
        if p.branch in ("feature", "fix"):
            p.branch = p.branch + "/" + r.choice(_NOUNS) + "-" + r.choice(_NOUNS)
        np_ = len(p.prompts)
        p.marker = r.randrange(max(1, np_ - 1))
        p.V = 0
        T = 0
        for rounds in p.prompts:
            for rd in rounds:
                for _kind, nom, sub in rd:
                    p.V += nom
                    T += 1
                    if sub:
                        for srd in sub:
                            for _k, snom, _s in srd:
                                p.V += snom
                                T += 1
        p.U = 3 * np_ + 2 * T
    return plans


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------

def _iso(ms: int) -> str:
    s, r = divmod(ms, 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(s)) + ".%03dZ" % r


def _project_dir_name(workspace: str) -> str:
    enc = re.sub(r"[^A-Za-z0-9]", "-", workspace)
    if len(enc) > 200:
        enc = enc[:200] + "-" + hashlib.sha1(workspace.encode("utf-8")).hexdigest()[:8]
    return enc


class _Out:
    """One JSONL file being written."""

    __slots__ = ("fh", "path", "bytes", "last_ms")

    def __init__(self, path: Path):
        self.path = path
        self.fh = open(path, "wb", buffering=1 << 20)
        self.bytes = 0
        self.last_ms = 0

    def emit(self, d, ms=None):
        b = orjson.dumps(d)
        self.fh.write(b)
        self.fh.write(b"\n")
        self.bytes += len(b) + 1
        if ms is not None and ms > self.last_ms:
            self.last_ms = ms

    def close(self):
        self.fh.close()
        t = self.last_ms / 1000.0
        os.utime(self.path, (t, t))
        return self.bytes


def _topic(r, content, ws):
    """A session's topic: one module, its files, one feature/bug/tech; returns (module, files,
    the template fields it fills three times out of four)."""
    by_mod = content.by_module
    module = r.choice(sorted(by_mod))
    ff = by_mod[module]
    feature, bug, tech = r.choice(_FEATURES), r.choice(_BUGS), r.choice(_TECH)
    over = {"module": lambda _r: module, "Module": lambda _r: module.capitalize(),
            "feature": lambda _r: feature, "Feature": lambda _r: feature.title(), "bug": lambda _r: bug,
            "tech": lambda _r: tech, "Tech": lambda _r: tech.capitalize(),
            "rel": lambda _r: _r.choice(ff).rel, "path": lambda _r: ws + "/" + _r.choice(ff).rel}
    return module, ff, over


class _Session:
    """Writes one session (and its subagent files)."""

    def __init__(self, gen, plan: _Plan, scale: float, prev_leaf: str | None):
        self.g = gen
        self.c = gen.content
        self.v = gen.content.v
        self.p = plan
        self.r = plan.rng
        self.s = scale
        self.prev_leaf = prev_leaf
        self.var = 0  # bytes of scaled content written (JSON-encoded)
        self.img = 0
        self.files = 0
        self.bytes = 0
        self.cwd = gen.ws
        self.t = plan.start
        self.edited: dict[str, list] = {}
        self.todos: list = []
        self.cache_read = self.r.randint(12_000, 30_000)
        # time scale: expected base time of the whole session -> planned duration
        n_rounds = sum(len(rs) + 1 for rs in plan.prompts)
        base = len(plan.prompts) * 40_000 + n_rounds * 5_000 + plan.U * 900
        self.tf = plan.dur / max(1, base)
        self.hard_end = plan.start + 119 * 60_000
        self.newer = plan.era == "2.1"
        self.secret_done = False
        self.module, self.focus_files, self.over = _topic(self.r, gen.content, gen.ws)

    # -- ids & time --
    def uid(self):
        return str(uuid.UUID(int=self.r.getrandbits(128), version=4))

    def b62(self, k):
        return "".join(self.r.choices(_B62, k=k))

    def tick(self, base_ms):
        gap = max(1, int(base_ms * self.tf * self.r.uniform(0.3, 1.7)))
        if self.t + gap > self.hard_end:  # keep every session under two hours
            gap = self.r.randint(1, 150)
        self.t += gap
        return self.t

    def size(self, nom):
        return max(24, int(nom * self.s))

    def vlen(self, s, times=1):
        """Count `s` as scaled content written `times` times (for the size controller)."""
        self.var += len(orjson.dumps(s)) * times
        return s

    def fill(self, t):
        return self.v.fill(t, self.r, self.over)

    def pick_file(self, n, numbered=True):
        """A file of about n chars, from the session's module most of the time."""
        r = self.r
        if self.focus_files and r.random() < 0.6:
            fits = [f for f in self.focus_files if len(f.num if numbered else f.raw) >= 0.7 * n]
            if fits:
                return r.choice(fits)
        return self.c.file_near(r, n, numbered)

    def ctx(self):
        """Fields for templates tied to this session's files."""
        return self.r.choice(self.c.files).rel

    # -- line builders --
    def _common(self, st, parent, typ):
        d = {"parentUuid": parent, "isSidechain": st["side"], "userType": "external", "cwd": self.cwd,
             "sessionId": self.p.sid, "version": self.p.version, "gitBranch": self.p.branch}
        if st["agent"]:
            d["agentId"] = st["agent"]
        d["type"] = typ
        return d

    def user(self, st, content, *, meta=False, extra=None, tur=None, tick=800, uid=None):
        u = uid or self.uid()
        d = self._common(st, st["parent"], "user")
        d["message"] = {"role": "user", "content": content}
        if meta:
            d["isMeta"] = True
        if extra:
            d.update(extra)
        d["uuid"] = u
        ms = self.tick(tick) if tick else self.t
        d["timestamp"] = _iso(ms)
        if tur is not None:
            d["toolUseResult"] = tur
        elif st["think_meta"] and not meta and isinstance(content, str) and not content.startswith("<"):
            d["thinkingMetadata"] = {"level": "none", "disabled": self.r.random() < 0.6, "triggers": []}
        st["out"].emit(d, ms)
        st["parent"] = u
        return u

    def assistant_msg(self, st, blocks, *, has_tools):
        """One API reply, one line per content block, shared message.id/requestId."""
        mid = "msg_01" + self.b62(22)
        rid = "req_011C" + self.b62(20)
        out_tokens = self.r.randint(20, 900)
        inp = self.r.randint(1, 60)
        cc = self.r.randint(100, 4000)
        self.cache_read += cc
        model = st.get("model") or self.p.model
        for i, blk in enumerate(blocks):
            last = i == len(blocks) - 1
            if self.newer:
                stop = "tool_use" if has_tools else "end_turn"
                ot = out_tokens
            else:
                stop = None
                ot = out_tokens if last else self.r.choice((1, 2, 2, 5, 8))
            d = self._common(st, st["parent"], "assistant")
            d["message"] = {
                "model": model, "id": mid, "type": "message", "role": "assistant", "content": [blk],
                "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": inp, "cache_creation_input_tokens": cc, "cache_read_input_tokens": self.cache_read,
                          "cache_creation": {"ephemeral_5m_input_tokens": cc, "ephemeral_1h_input_tokens": 0},
                          "output_tokens": ot, "service_tier": "standard"},
            }
            d["requestId"] = rid
            d["type"] = "assistant"
            u = self.uid()
            d["uuid"] = u
            ms = self.tick(4000 if i == 0 else 1200)
            d["timestamp"] = _iso(ms)
            st["out"].emit(d, ms)
            st["parent"] = u

    def text_block(self, t):
        return {"type": "text", "text": t}

    def thinking_block(self):
        t = " ".join(self.fill(self.r.choice(_THINKING)) for _ in range(self.r.randint(1, 3)))
        return {"type": "thinking", "thinking": t, "signature": self.c.signature(self.r)}

    def tmpl(self, templates):
        return self.fill(self.r.choice(templates))

    # -- tools: each returns (input, result_content, is_error, toolUseResult) --
    def abs(self, rel):
        return f"{self.g.ws}/{rel}"

    def tool(self, kind, nom):
        """Input, result content, is_error and toolUseResult of one tool call of about `nom` (scaled) chars."""
        n = self.size(nom) if nom else 0
        if kind == "TodoWrite":
            return self.t_todo()
        return getattr(self, "t_" + kind.lower())(n)

    def t_read(self, n):
        r = self.r
        if self.secret_due():
            rel = r.choice((".env", ".env.local", "config/settings.yaml", "deploy/secrets.env"))
            text = self.secret_text()
            num = "".join("%6d%s%s\n" % (i, _ARROW, ln) for i, ln in enumerate(text.split("\n"), 1))
            tur = {"type": "text", "file": {"filePath": self.abs(rel), "content": text, "numLines": text.count("\n") + 1,
                                            "startLine": 1, "totalLines": text.count("\n") + 1}}
            return {"file_path": self.abs(rel)}, num, False, tur
        if r.random() < 0.03:
            rel = f"src/{r.choice(_MODULES)}/{self.v.noun(r)}.py"
            return {"file_path": self.abs(rel)}, "File does not exist.", True, "Error: File does not exist."
        f = self.pick_file(n)
        inp = {"file_path": self.abs(f.rel)}
        a, b = 0, f.nlines
        if len(f.num) > n * 1.3:
            a = 0 if r.random() < 0.5 else r.randrange(f.nlines)
            b = bisect.bisect_left(f.num_off, f.num_off[a] + n)
            if b > f.nlines:
                b = f.nlines
                a = max(0, bisect.bisect_left(f.num_off, f.num_off[b] - n) - 1)
            b = max(b, a + 1)
            inp["offset"] = a + 1
            inp["limit"] = b - a
        num = self.vlen(f.num[f.num_off[a]:f.num_off[b]])
        raw = self.vlen(f.raw[f.raw_off[a]:f.raw_off[b]])
        if not self.newer:
            num = num + _SYSTEM_REMINDER_READ
        tur = {"type": "text", "file": {"filePath": self.abs(f.rel), "content": raw, "numLines": b - a,
                                        "startLine": a + 1, "totalLines": f.nlines}}
        return inp, num, False, tur

    def bash_cmd(self, kind):
        cmd = self.fill(self.r.choice(_BASH_COMMANDS[kind]))
        if self.cwd != self.g.ws and self.r.random() < 0.5:
            cmd = f"cd {self.cwd} && {cmd}"
        return cmd

    def t_bash(self, n):
        r = self.r
        if self.secret_due():
            cmd = r.choice(("cat .env", "env | sort", "git remote -v && cat .env.production", "printenv | grep -i -E 'key|token|secret|url'"))
            out = self.secret_text()
            return ({"command": cmd, "description": "Inspect environment configuration"}, out, False,
                    {"stdout": out, "stderr": "", "interrupted": False, "isImage": False})
        kind = r.choices(list(_BASH_COMMANDS), (22, 10, 6, 6, 12, 12, 14, 10, 8))[0]
        cmd = self.bash_cmd(kind)
        desc = self.fill(r.choice(("Run the {module} tests", "Show recent commits", "Check the {noun} logs",
                                   "Build the project", "List files in {module}", "Check pod status on {env}")))
        out = self.c.pools[kind].slice(r, n)
        if kind == "pytest":
            out += "\n" + "=" * 20 + f" {r.randint(5, 400)} passed, {r.randint(0, 4)} failed, {r.randint(0, 3)} warnings in {r.uniform(0.5, 90):.2f}s " + "=" * 20
        out = self.vlen(out, 2)
        inp = {"command": cmd, "description": desc}
        if r.random() < 0.05:
            inp["timeout"] = r.choice((120000, 300000, 600000))
        if r.random() < 0.08:
            return inp, "Exit code 1\n" + out, True, "Error: Exit code 1\n" + out
        stderr = ""
        if r.random() < 0.1:
            stderr = self.fill("warning: {msg} ({noun})")
        return inp, out, False, {"stdout": out, "stderr": stderr, "interrupted": False, "isImage": False}

    def t_grep(self, n):
        r = self.r
        pattern = r.choice((self.v.fn(r), self.v.noun(r), self.v.cls(r), r"def \w+_" + self.v.noun(r), "TODO|FIXME"))
        inp = {"pattern": pattern}
        if r.random() < 0.5:
            inp["path"] = self.abs(r.choice(("src", "web/src", "services", "crates", "tests")))
        if n < 600 or r.random() < 0.3:
            paths, size = [], 0
            while size < n:
                p = self.abs(r.choice(self.c.files).rel)
                paths.append(p)
                size += len(p) + 1
            inp["output_mode"] = "files_with_matches"
            content = self.vlen(f"Found {len(paths)} files\n" + "\n".join(paths), 2)
            return inp, content, False, {"mode": "files_with_matches", "filenames": paths, "numFiles": len(paths)}
        inp["output_mode"] = "content"
        inp["-n"] = True
        parts, size, nfiles = [], 0, 0
        while size < n:
            f = r.choice(self.c.files)
            nfiles += 1
            a = r.randrange(f.nlines)
            b = min(f.nlines, a + r.randint(1, 12))
            lines = f.raw[f.raw_off[a]:f.raw_off[b]].split("\n")
            p = self.abs(f.rel)
            for j, ln in enumerate(lines[:-1] if lines and lines[-1] == "" else lines):
                s = f"{p}:{a + j + 1}:{ln}"
                parts.append(s)
                size += len(s) + 1
        content = self.vlen("\n".join(parts), 2)
        return inp, content, False, {"mode": "content", "numFiles": nfiles, "filenames": [], "content": content,
                                     "numLines": len(parts)}

    def t_glob(self, n):
        r = self.r
        ext = r.choice(("py", "ts", "tsx", "go", "rs", "md", "sql", "yaml"))
        inp = {"pattern": r.choice((f"**/*.{ext}", f"src/**/*.{ext}", f"**/{self.v.noun(r)}*"))}
        paths, size = [], 0
        while size < n:
            if r.random() < 0.7:
                p = self.abs(r.choice(self.c.files).rel)
            else:
                p = self.abs(f"web/node_modules/{r.choice(_TECH).lower().replace(' ', '-')}/dist/{self.v.noun(r)}.{ext}")
            paths.append(p)
            size += len(p) + 1
        content = self.vlen("\n".join(paths))
        self.var += len(content) + 4 * len(paths)
        return inp, content, False, {"filenames": paths, "durationMs": r.randint(3, 400), "numFiles": len(paths),
                                     "truncated": len(paths) >= 100}

    def _snippet(self, f, a, b):
        return "".join("%6d%s%s\n" % (i + 1, _ARROW, ln) for i, ln in enumerate(f.raw[f.raw_off[a]:f.raw_off[b]].split("\n")[:-1], a))

    def _edit_pair(self, f):
        r = self.r
        a = r.randrange(f.nlines)
        b = min(f.nlines, a + r.randint(1, 6))
        old = f.raw[f.raw_off[a]:f.raw_off[b]].rstrip("\n") or "pass"
        new_line = self.v.fill(r.choice(_CODE[f.lang]), r)
        new = r.choice((old + "\n" + new_line, new_line + "\n" + old, old.replace(old.split("\n")[0], new_line, 1)))
        return a, b, old, new

    def _track_edit(self, rel):
        v = self.edited.get(rel)
        if v is None:
            self.edited[rel] = [1, self.t]
        else:
            v[0] += 1
            v[1] = self.t

    def t_edit(self, n):
        r = self.r
        f = self.pick_file(n, numbered=False)
        a, b, old, new = self._edit_pair(f)
        path = self.abs(f.rel)
        inp = {"file_path": path, "old_string": old, "new_string": new}
        if r.random() < 0.05:
            inp["replace_all"] = True
        if r.random() < 0.04:
            msg = "<tool_use_error>String to replace not found in file.\nString: " + old[:200] + "</tool_use_error>"
            return inp, msg, True, "Error: String to replace not found in file.\nString: " + old[:200]
        self._track_edit(f.rel)
        lo, hi = max(0, a - 4), min(f.nlines, b + 4)
        if self.newer and r.random() < 0.5:
            content = f"The file {path} has been updated successfully."
        else:
            content = (f"The file {path} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n"
                       + self._snippet(f, lo, hi))
        patch = [{"oldStart": a + 1, "oldLines": b - a, "newStart": a + 1, "newLines": new.count("\n") + 1,
                  "lines": ["-" + x for x in old.split("\n")] + ["+" + x for x in new.split("\n")]}]
        tur = {"filePath": path, "oldString": old, "newString": new, "originalFile": self.vlen(f.raw),
               "structuredPatch": patch, "userModified": False, "replaceAll": bool(inp.get("replace_all"))}
        return inp, content, False, tur

    def t_multiedit(self, n):
        r = self.r
        f = self.pick_file(n, numbered=False)
        path = self.abs(f.rel)
        edits = []
        for _ in range(r.randint(2, 4)):
            _a, _b, old, new = self._edit_pair(f)
            edits.append({"old_string": old, "new_string": new})
        self._track_edit(f.rel)
        lines = [f"Applied {len(edits)} edits to {path}:"]
        for i, e in enumerate(edits, 1):
            lines.append(f'{i}. Replaced "{e["old_string"][:60]}..." with "{e["new_string"][:60]}..."')
        tur = {"filePath": path, "edits": [dict(e, replace_all=False) for e in edits],
               "originalFileContents": self.vlen(f.raw), "structuredPatch": [], "userModified": False}
        return {"file_path": path, "edits": edits}, "\n".join(lines), False, tur

    def t_write(self, n):
        r = self.r
        m = self.module if r.random() < 0.6 else r.choice(_MODULES)
        noun = self.v.noun(r)
        lang, rel = r.choice((("py", f"tests/{m}/test_{noun}.py"), ("py", f"src/{m}/{noun}.py"),
                              ("ts", f"web/src/{m}/{noun}.ts"), ("go", f"services/{m}/{noun}.go"),
                              ("rs", f"crates/{m}/src/{noun}.rs"), ("md", f"docs/{m}-{noun}.md"),
                              ("sql", f"migrations/{r.randint(15, 99):04d}_{noun}.sql")))
        text = self.c.code_text(r, lang, n)
        self.vlen(text, 2)
        path = self.abs(rel)
        self._track_edit(rel)
        return ({"file_path": path, "content": text}, f"File created successfully at: {path}", False,
                {"type": "create", "filePath": path, "content": text, "structuredPatch": []})

    def t_notebookedit(self, n):
        r = self.r
        path = self.abs(f"notebooks/{self.v.noun(r)}_analysis.ipynb")
        src = self.c.code_text(r, "py", n)
        self.vlen(src, 2)
        cell = f"cell-{r.randint(0, 40)}"
        mode = r.choice(("replace", "replace", "insert"))
        first = src.split("\n", 1)[0]
        self._track_edit(path[len(self.g.ws) + 1:])
        return ({"notebook_path": path, "cell_id": cell, "new_source": src, "cell_type": "code", "edit_mode": mode},
                f"Updated cell {cell} with {first}", False,
                {"new_source": src, "cell_id": cell, "cell_type": "code", "language": "python", "edit_mode": mode, "error": ""})

    def t_todo(self):
        r = self.r
        old = self.todos
        new = [dict(t) for t in old if t["status"] != "completed"][:5]
        for t in new:
            t["status"] = r.choice(("completed", "in_progress", "pending"))
        while len(new) < r.randint(2, 6):
            c = self.fill(r.choice(("Fix {noun} handling in {module}", "Add tests for {fn}", "Update docs for {feature}",
                                    "Run the {module} test suite", "Refactor {fn}", "Deploy to {env}")))
            new.append({"content": c, "status": "pending", "activeForm": c.replace("Fix", "Fixing").replace("Add", "Adding")})
        self.todos = new
        return {"todos": new}, _TODO_RESULT, False, {"oldTodos": old, "newTodos": new}

    def t_webfetch(self, n):
        r = self.r
        url = self.fill(r.choice(("https://docs.example.dev/{tech}/{noun}", "https://github.com/example/{module}/issues/{num}",
                                  "https://blog.example.com/posts/{noun}-{noun2}-in-{tech}")))
        inp = {"url": url, "prompt": self.fill("What does this page say about {noun} {noun2} handling?")}
        if r.random() < 0.08:
            return inp, "Request failed with status code 403", True, "Error: Request failed with status code 403"
        text = self.vlen(self.c.prose.slice(r, n), 2)
        return inp, text, False, {"bytes": len(text) * r.randint(3, 40), "code": 200, "codeText": "OK", "result": text,
                                  "durationMs": r.randint(300, 25000), "url": url}

    def t_websearch(self, n):
        r = self.r
        q = self.fill("{tech} {noun} {adj} {noun2} best practice")
        links = [{"title": self.fill("{Title} - {Tech} docs"), "url": self.fill("https://example.org/{module}/{noun}-{num}")}
                 for _ in range(r.randint(3, 8))]
        text = self.vlen(self.c.prose.slice(r, n), 2)
        content = f'Web search results for query: "{q}"\n\nLinks: {orjson.dumps(links).decode()}\n\n{text}'
        return {"query": q}, content, False, {"query": q, "results": [{"tool_use_id": "srvtoolu_01" + self.b62(22), "content": links}, text],
                                              "durationSeconds": round(r.uniform(1, 12), 3)}

    def t_mcp(self, n):
        r = self.r
        body = self.c.prose.slice(r, n)
        issue = {"number": r.randint(10, 4000), "title": self.fill("{bug} in {module}"), "state": r.choice(("open", "closed")),
                 "body": body, "labels": [r.choice(("bug", "enhancement", "p1", "needs-triage"))]}
        text = self.vlen(orjson.dumps(issue, option=orjson.OPT_INDENT_2).decode(), 2)
        blocks = [{"type": "text", "text": text}]
        return ({"owner": "example", "repo": r.choice(_MODULES), "issue_number": issue["number"]}, blocks, False, blocks)

    # secrets ------------------------------------------------------------------------------
    def secret_due(self):
        if self.p.flags.get("secrets") and not self.secret_done and self.r.random() < 0.25:
            self.secret_done = True
            return True
        return False

    def secret_text(self):
        r = self.r
        up = string.ascii_uppercase + string.digits
        ant = "sk-ant-api03-" + "".join(r.choices(_B62 + "-_", k=93)) + "AA"
        akia = "AKIA" + "".join(r.choices(up, k=16))
        aws_secret = "".join(r.choices(_B62 + "/+", k=40))
        ghp = "ghp_" + "".join(r.choices(_B62, k=36))
        pw = "".join(r.choices(_B62, k=14))
        lines = [
            "# local development settings - do not commit",
            f"ANTHROPIC_API_KEY={ant}",
            f"AWS_ACCESS_KEY_ID={akia}",
            f"AWS_SECRET_ACCESS_KEY={aws_secret}",
            f"DATABASE_URL=postgres://app_user:{pw}@db.internal.example.com:5432/{r.choice(_MODULES)}",
            f"GITHUB_TOKEN={ghp}",
            f"REDIS_URL=redis://:{pw[::-1]}@cache.internal.example.com:6379/0",
            "LOG_LEVEL=debug",
            f"DEPLOY_REMOTE=https://deploy:{pw[:9]}@git.example.com/platform/{r.choice(_MODULES)}.git",
        ]
        r.shuffle(lines)
        return "\n".join(lines[: r.randint(5, len(lines))])

    # -- subagent ------------------------------------------------------------------------------
    def t_agent(self, nom, sub_rounds):
        r = self.r
        flat = self.p.layout == "flat"
        agent_id = ("%08x" % r.getrandbits(32)) if flat else ("a" + "%016x" % r.getrandbits(64))
        subtype = r.choice(("general-purpose", "general-purpose", "Explore", "code-reviewer", "test-runner"))
        desc = self.fill(r.choice(("Survey the {module} module", "Find all {noun} call sites", "Review {module} changes",
                                   "Investigate {noun} failures")))
        prompt = self.fill("Investigate how {fn} handles the {adj} {noun} in the {module} module. Report the relevant "
                           "file paths with line numbers, and anything that looks like a {bug}.")
        tool_id = "toolu_01" + self.b62(22)
        name = "Agent" if self.newer else "Task"
        inp = {"description": desc, "prompt": prompt, "subagent_type": subtype}
        if flat:
            path = self.g.project_dir / f"agent-{agent_id}.jsonl"
        else:
            d = self.g.project_dir / self.p.sid / "subagents"
            d.mkdir(parents=True, exist_ok=True)
            path = d / f"agent-{agent_id}.jsonl"
        return tool_id, name, inp, (agent_id, path, prompt, subtype, desc, sub_rounds, nom)

    def run_agent(self, spec, tool_id):
        agent_id, path, prompt, subtype, desc, sub_rounds, nom = spec
        out = _Out(path)
        st = {"out": out, "parent": None, "side": True, "agent": agent_id, "think_meta": False,
              "model": self.r.choice(_MODELS[self.p.era])}
        self.user(st, prompt, tick=300)
        ntools = 0
        for rd in sub_rounds:
            self.round(st, rd, intro=self.r.random() < 0.5)
            ntools += len(rd)
        report = self.tmpl(_FINALS) + "\n\n" + self.vlen(self.c.prose.slice(self.r, self.size(nom)))
        self.assistant_msg(st, [self.text_block(report)], has_tools=False)
        self.bytes += out.close()
        self.files += 1
        if not self.p.layout == "flat":
            meta = path.with_name(path.stem + ".meta.json")
            data = orjson.dumps({"agentType": subtype, "description": desc, "toolUseId": tool_id}) + b"\n"
            meta.write_bytes(data)
            t = out.last_ms / 1000.0
            os.utime(meta, (t, t))
            self.bytes += len(data)
            self.files += 1
        return report, ntools

    # -- one API round: optional thinking/text, then tool_use lines, then their results --
    def round(self, st, tools, intro=False):
        r = self.r
        blocks, calls = [], []
        if self.p.era != "1.0" and r.random() < 0.3:
            blocks.append(self.thinking_block())
        if intro or r.random() < 0.4:
            blocks.append(self.text_block(self.tmpl(_INTROS if intro else _TRANSITIONS)))
        agent_specs = {}
        for kind, nom, sub in tools:
            if kind == "Agent":
                tid, name, inp, spec = self.t_agent(nom, sub)
                agent_specs[tid] = spec
                calls.append((tid, name, inp, None))
                blocks.append({"type": "tool_use", "id": tid, "name": name, "input": inp})
                continue
            inp, content, is_err, tur = self.tool(kind, nom)
            name = {"mcp": "mcp__github__get_issue"}.get(kind, kind)
            tid = "toolu_01" + self.b62(22)
            calls.append((tid, name, inp, (content, is_err, tur)))
            blocks.append({"type": "tool_use", "id": tid, "name": name, "input": inp})
        self.assistant_msg(st, blocks, has_tools=bool(calls))
        order = list(calls)
        if len(order) > 1 and r.random() < 0.15:
            r.shuffle(order)
        for tid, name, inp, res in order:
            if res is None:
                report, ntools = self.run_agent(agent_specs[tid], tid)
                agent_id = agent_specs[tid][0]
                blocks_ = [{"type": "text", "text": report}]
                tur = {"content": blocks_, "totalDurationMs": r.randint(8_000, 300_000), "totalTokens": r.randint(5_000, 90_000),
                       "totalToolUseCount": ntools,
                       "usage": {"input_tokens": r.randint(5, 200), "output_tokens": r.randint(200, 3000)}}
                if self.newer:
                    blocks_ = blocks_ + [{"type": "text", "text": f"agentId: {agent_id} (use SendMessage with to: '{agent_id}' to continue this agent)\n<usage>subagent_tokens: {tur['totalTokens']}\ntool_uses: {ntools}\nduration_ms: {tur['totalDurationMs']}</usage>"}]
                    tur = {"status": "completed", "prompt": inp["prompt"], "agentId": agent_id, **tur}
                self.vlen(report, 2)
                block = {"tool_use_id": tid, "type": "tool_result", "content": blocks_}
                self.user(st, [block], tur=tur, tick=2000)
                continue
            content, is_err, tur = res
            block = {"tool_use_id": tid, "type": "tool_result", "content": content}
            if is_err:
                block["is_error"] = True
            self.user(st, [block], tur=tur, tick=900 if name != "Bash" else 3000)

    # -- main flow ---------------------------------------------------------------------------
    def local_command(self, st, cmd, args, stdout):
        self.user(st, _CAVEAT, meta=True, tick=2000)
        self.user(st, f"<command-name>/{cmd}</command-name>\n            <command-message>{cmd}</command-message>\n            <command-args>{args}</command-args>", tick=10)
        self.user(st, f"<local-command-stdout>{stdout}</local-command-stdout>", tick=50)

    def prompt_text(self, i):
        r = self.r
        t = self.fill(r.choice(_PROMPTS))
        if i == self.p.marker:
            t = t + r.choice((" (this is for zqmarker{n})", " - ticket zqmarker{n}", ". ref: zqmarker{n}", " [zqmarker{n}]")).format(n=self.p.idx)
        return t

    def compact(self, st):
        r = self.r
        manual = r.random() < 0.5
        if manual:
            self.user(st, "<command-name>/compact</command-name>\n            <command-message>compact</command-message>\n            <command-args></command-args>", tick=5000)
        b = self.uid()
        ms = self.tick(20_000)
        d = self._common(st, None, "system")
        d["logicalParentUuid"] = st["parent"]
        d.update({"subtype": "compact_boundary", "content": "Conversation compacted", "isMeta": False, "timestamp": _iso(ms),
                  "uuid": b, "level": "info",
                  "compactMetadata": {"trigger": "manual" if manual else "auto", "preTokens": r.randint(90_000, 170_000)}})
        st["out"].emit(d, ms)
        st["parent"] = b
        parts = [_COMPACT_HEAD, "Analysis:\n", self.fill("The user has been working on {feature} in the {module} module. ")]
        parts.append("\nSummary:\n1. Primary Request and Intent:\n   " + self.fill(r.choice(_PROMPTS)) + "\n")
        parts.append("2. Key Technical Concepts:\n" + "".join(self.fill("   - {tech}: {Prose}\n") for _ in range(r.randint(3, 7))))
        parts.append("3. Files and Code Sections:\n" + "".join(f"   - {self.abs(rel)}\n      - {self.fill('{Prose}')}\n"
                                                               for rel in list(self.edited)[:6] or [self.ctx()]))
        parts.append("4. Errors and fixes:\n   - " + self.fill("{err}: fixed by updating {fn}") + "\n")
        parts.append("5. Pending Tasks:\n   - " + self.fill("Run the {module} tests on {env}") + "\n")
        parts.append("6. Current Work:\n   " + self.fill("{Prose} {Prose}") + "\n")
        text = "".join(parts)
        self.user(st, text, extra={"isVisibleInTranscriptOnly": True, "isCompactSummary": True}, tick=100)
        if manual:
            self.user(st, "<local-command-stdout>\x1b[2mCompacted (ctrl+o to see full summary)\x1b[22m</local-command-stdout>", tick=10)

    def snapshot(self, st, mid):
        tracked = {}
        for rel, (ver, t) in list(self.edited.items())[-6:]:
            tracked[rel] = {"backupFileName": ("%016x@v%d" % (self.r.getrandbits(64), ver)) if ver > 1 else None,
                            "version": ver, "backupTime": _iso(t)}
        st["out"].emit({"type": "file-history-snapshot", "messageId": mid,
                        "snapshot": {"messageId": mid, "trackedFileBackups": tracked, "timestamp": _iso(self.t)},
                        "isSnapshotUpdate": False})

    def run(self, out: _Out):
        p, r = self.p, self.r
        st = {"out": out, "parent": None, "side": False, "agent": None, "think_meta": p.era != "2.1"}
        sid = p.sid
        flags = p.flags
        if flags.get("summary"):
            for _ in range(r.randint(1, 3)):
                out.emit({"type": "summary", "summary": self.fill(r.choice(_SUMMARIES)), "leafUuid": self.prev_leaf or self.uid()})
        if flags.get("clear"):
            self.local_command(st, "clear", "", "")
        if flags.get("hook"):
            ctx = ["<prima-memory-context>\nRecent work in this project:\n" + "".join(
                self.fill("- {Title} ({num} messages)\n") for _ in range(r.randint(2, 6))) + "</prima-memory-context>"]
            u = self.uid()
            ms = self.tick(500)
            d = self._common(st, st["parent"], "attachment")
            d["attachment"] = {"type": "hook_additional_context", "content": ctx, "hookName": "SessionStart", "hookEvent": "SessionStart"}
            d["uuid"] = u
            d["timestamp"] = _iso(ms)
            out.emit(d, ms)
            st["parent"] = u
        n = len(p.prompts)
        compact_at = r.randrange(n // 2, n) if flags.get("compact") else -1
        local_at = r.randrange(1, n) if flags.get("local_cmd") else -1
        cwd_at = r.randrange(1, n) if flags.get("cwd_switch") else -1
        queue_at = -1
        if flags.get("queue"):
            cands = [i for i in range(1, n) if i != p.marker]
            queue_at = r.choice(cands) if cands else -1
        custom_at = r.randrange(n) if flags.get("custom_title") else -1
        err_at = r.randrange(n) if flags.get("api_error") else -1
        images = {}
        for size in p.images:
            cands = [i for i in range(n) if i != p.marker and i not in images]
            if cands:
                images[r.choice(cands)] = size
        texts = [self.prompt_text(i) for i in range(n)]
        for i, rounds in enumerate(p.prompts):
            if i == cwd_at:
                self.cwd = self.g.ws + "/" + r.choice(("web", "services/api", "src", "crates/parser", "docs", "deploy"))
            if i == compact_at:
                self.compact(st)
            if i == local_at:
                m = r.choice(("opus", "sonnet", "haiku"))
                self.local_command(st, "model", m, f"Set model to \x1b[1m{m}\x1b[22m")
            if i == queue_at:
                out.emit({"type": "queue-operation", "operation": "enqueue", "timestamp": _iso(self.tick(2000)), "sessionId": sid, "content": texts[i]}, self.t)
                out.emit({"type": "queue-operation", "operation": "dequeue", "timestamp": _iso(self.tick(3000)), "sessionId": sid}, self.t)
            if i == err_at:
                for k in range(r.randint(1, 3)):
                    u = self.uid()
                    ms = self.tick(1500)
                    d = self._common(st, st["parent"], "system")
                    d.update({"subtype": "api_error", "level": "error", "error": {}, "retryInMs": 500.0 * 2 ** k + r.random() * 100,
                              "retryAttempt": k + 1, "maxRetries": 10, "timestamp": _iso(ms), "uuid": u})
                    out.emit(d, ms)
                    st["parent"] = u
            pu = self.uid()
            self.tick(40_000 if i else 2_000)
            if i == n - 1:  # and over two minutes
                self.t = max(self.t, p.start + 125_000)
            self.snapshot(st, pu)
            text = texts[i]
            if i in images:
                size = images[i]
                raw = b"\x89PNG\r\n\x1a\n" + r.randbytes(size * 3 // 4 - 8)
                data = base64.b64encode(raw).decode()
                content = [{"type": "text", "text": self.fill(r.choice(("here's a screenshot of the {noun} page, what's wrong with the layout?",
                                                                        "[Image #1] the {module} dashboard looks broken like this",
                                                                        "see the attached error screenshot")))},
                           {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}]
                self.img += len(data)
            elif flags.get("reminder") and r.random() < 0.25:
                rem = self.fill(r.choice((
                    "<system-reminder>\nThe user opened the file {path} in the IDE. This may or may not be related to the current task.\n</system-reminder>",
                    "<system-reminder>\nNote: {path} was modified, either by the user or by a linter. Don't tell the user this, since they are already aware.\n</system-reminder>",
                    "<system-reminder>\nThis is a reminder that your todo list is currently empty. DO NOT mention this to the user explicitly.\n</system-reminder>")))
                content = [{"type": "text", "text": text}, {"type": "text", "text": rem}] if r.random() < 0.7 else text + "\n\n" + rem
            elif r.random() < 0.2:
                content = [{"type": "text", "text": text}]
            else:
                content = text
            self.user(st, content, uid=pu, tick=0)
            if i == 0 and flags.get("ai_title"):
                out.emit({"type": "ai-title", "aiTitle": self.fill(r.choice(_TITLES)), "sessionId": sid})
            for j, rd in enumerate(rounds):
                self.round(st, rd, intro=j == 0)
            if rounds and r.random() < 0.02:
                self.user(st, [{"type": "text", "text": "[Request interrupted by user]"}], tick=3000)
                continue
            blocks = []
            if p.era != "1.0" and not rounds and r.random() < 0.4:
                blocks.append(self.thinking_block())
            final = self.tmpl(_FINALS if rounds else _FINALS + _INTROS)
            if r.random() < 0.25:
                f = r.choice(self.c.files)
                a = r.randrange(f.nlines)
                final += f"\n\n```{f.lang}\n" + f.raw[f.raw_off[a]:f.raw_off[min(f.nlines, a + r.randint(3, 15))]] + "```"
            blocks.append(self.text_block(final))
            self.assistant_msg(st, blocks, has_tools=False)
            if i == custom_at:
                out.emit({"type": "custom-title", "customTitle": self.fill(r.choice(("{module}-{noun}-fix", "{Feature}", "{module} {adj} {noun}s"))), "sessionId": sid})
        if self.newer and r.random() < 0.5:
            out.emit({"type": "last-prompt", "lastPrompt": texts[-1], "sessionId": sid})
        return st["parent"]


_CONTENT_CACHE: dict = {}


def _content_for(seed: int, ws: str) -> _Content:
    """The pools depend only on (seed, workspace) and are read-only: keep the last one."""
    key = (seed, ws)
    c = _CONTENT_CACHE.get(key)
    if c is None:
        _CONTENT_CACHE.clear()
        c = _CONTENT_CACHE[key] = _Content(seed, ws)
    return c


class _Generator:
    def __init__(self, project_dir: Path, ws: str, content: _Content):
        self.project_dir = project_dir
        self.ws = ws
        self.content = content


def generate_history(config_dir: str | os.PathLike, workspace: str, sessions: int, *, seed: int = 7,
                     target_bytes: int | None = None, now: float | None = None, images: int | None = None) -> dict:
    """Write `sessions` synthetic Claude Code sessions for `workspace` under `<config_dir>/projects/`.

    Returns {"project_dir", "files", "bytes", "sessions"}; the session ids are in index order
    (index N carries the rare word ``zqmarker<N>`` and index 0 is the oldest session).
    """
    ws = os.fspath(workspace)
    n = int(sessions)
    now_ms = int(round((time.time() if now is None else float(now)) * 1000))
    if images is None:
        images = 3 if n >= 500 else (1 if n >= 50 else 0)
    project_dir = Path(os.fspath(config_dir)) / "projects" / _project_dir_name(ws)
    project_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    content = _content_for(rng.getrandbits(64), ws)
    plans = _make_plans(rng, n, now_ms, images if n else 0)
    gen = _Generator(project_dir, ws, content)

    img_total = sum(sum(p.images) for p in plans)
    U_rem = sum(p.U for p in plans)
    V_rem = sum(p.V for p in plans)
    cum_fixed = cum_U = cum_var = cum_sV = 0.0
    written_nonimg = 0
    a0, k0, U0, C0 = 1000.0, 2.4, 300.0, 20_000.0  # priors: fixed bytes per unit, var bytes per scaled nominal char
    files = 0
    total = 0
    prev_leaf = None
    ids = []
    for p in plans:
        if target_bytes is None:
            s = 1.0
        else:
            a = (cum_fixed + a0 * U0) / (cum_U + U0)
            k = (cum_var + k0 * C0) / (cum_sV + C0)
            rem = (target_bytes - img_total) - written_nonimg - a * U_rem
            s = rem / (k * V_rem) if V_rem > 0 else 1.0
            s = min(200.0, max(0.01, s))
        sess = _Session(gen, p, s, prev_leaf)
        out = _Out(project_dir / f"{p.sid}.jsonl")
        prev_leaf = sess.run(out)
        sess.bytes += out.close()
        sess.files += 1
        files += sess.files
        total += sess.bytes
        ids.append(p.sid)
        nonimg = sess.bytes - sess.img
        written_nonimg += nonimg
        cum_fixed += max(0, nonimg - sess.var)
        cum_var += sess.var
        cum_U += p.U
        cum_sV += s * p.V
        U_rem -= p.U
        V_rem -= p.V
    return {"project_dir": str(project_dir), "files": files, "bytes": total, "sessions": ids}


# --------------------------------------------------------------------------------------------
# Other sources: Codex CLI rollouts, VS Code Copilot Chat sessions
# --------------------------------------------------------------------------------------------

_ELSEWHERE = ["/home/dev/src/mobile-app", "/home/dev/src/infra-scripts", "/home/dev/src/dotfiles", "/tmp/scratch"]
_CODEX_MODELS = ["gpt-5-codex", "gpt-5", "gpt-5.1-codex", "gpt-5.1-codex-max", "gpt-5.2-codex"]
_CODEX_VERSIONS = ["0.42.0", "0.46.0", "0.53.0", "0.58.0", "0.63.0", "0.77.0", "0.89.0", "0.98.0"]
_CODEX_COMMANDS = ["sed -n '1,220p' {rel}", "cat {rel}", "rg -n \"{fn}\" {dir}", "nl -ba {rel} | sed -n '40,160p'"]
_OPENERS = _PROMPTS[:_PROMPTS.index("ok, now run the whole test suite")]  # a session's first prompt asks for something
_COPILOT_MODELS = ["copilot/gpt-4.1", "copilot/gpt-5-mini", "copilot/claude-sonnet-4.5", "copilot/gpt-5"]
_COPILOT_PROMPTS = [
    "@workspace where is {fn} called from?", "/explain what {fn} does in {rel}",
    "#file:{rel} why does this throw {err}?", "write a unit test for {fn} covering the {adj} {noun} case",
    "/fix {err}", "how do I configure {tech} for the {module} service on {env}?",
    "convert this {noun} loop to use {tech}", "suggest a better name for {fn}",
]
_LANG_FENCE = {"py": "python", "ts": "typescript", "go": "go", "rs": "rust", "sql": "sql", "md": "markdown", "yaml": "yaml"}


def _starts(rng, n, now_ms):
    """Session start times, oldest first: a few in the last week, the rest over the year before
    (as the Claude Code history's, so the sources interleave with it)."""
    recent = min(n, max(1, n // 50))
    out = [now_ms - 4 * 3_600_000 - int(rng.random() * 6 * _DAY_MS) for _ in range(recent)]
    out += [now_ms - 365 * _DAY_MS + int(rng.random() * 357 * _DAY_MS) for _ in range(n - recent)]
    return sorted(out)


def _uuid7(ms, r):
    """Codex names sessions with time-ordered UUIDs (version 7)."""
    return str(uuid.UUID(int=(ms << 80) | (0x7 << 76) | (r.getrandbits(12) << 64) | (0b10 << 62) | r.getrandbits(62)))


def _assign(rng, n, shares, rest):
    """n labels in random order: each label of `shares` on its share of n (at least once, so
    small sizes have every kind), the others `rest`."""
    kinds = [k for k, share in shares.items() for _ in range(max(1, int(n * share)))]
    kinds = (kinds + [rest] * n)[:n]
    rng.shuffle(kinds)
    return kinds


def _size(r, median, hi):
    """A text size in chars: lognormal around `median`, as tool outputs are."""
    return int(min(hi, max(60, r.lognormvariate(math.log(median), 1.0))))


class _Rollout:
    """One Codex rollout: every line `{timestamp, type, payload}` (CLI 0.4x and later), user and
    assistant text recorded twice (a response item and an event) as Codex does."""

    def __init__(self, content, r, idx, start, ws, where):
        self.c, self.v, self.r, self.idx, self.ms = content, content.v, r, idx, start
        _module, ff, self.over = _topic(r, content, ws)
        if where == "sub":  # a folder inside the workspace, its paths relative to it
            d = os.path.dirname(r.choice(ff).rel)
            self.cwd = f"{ws}/{d}"
            self.files = [(f.rel[len(d) + 1:], f) for f in ff if f.rel.startswith(d + "/")]
        else:
            self.cwd = {"ws": ws, "elsewhere": r.choice(_ELSEWHERE), "none": None}[where]
            self.files = [(f.rel, f) for f in ff] + [(f.rel, f) for f in r.sample(content.files, 4)]
        self.model = r.choice(_CODEX_MODELS)
        self.sid = _uuid7(start, r)
        self.tokens = 0

    def fill(self, t):
        return self.v.fill(t, self.r, self.over)

    def emit(self, kind, payload, gap=1500):
        self.ms += max(1, int(gap * self.r.uniform(0.2, 1.8)))
        self.out.emit({"timestamp": _iso(self.ms), "type": kind, "payload": payload}, self.ms)

    def say(self, role, text, gap=2500):
        part = "output_text" if role == "assistant" else "input_text"
        self.emit("response_item", {"type": "message", "role": role, "content": [{"type": part, "text": text}]}, gap)
        if role != "developer" and not text.startswith(("<", "# AGENTS.md")):
            self.emit("event_msg", {"type": "agent_message" if role == "assistant" else "user_message", "message": text,
                                    **({} if role == "assistant" else {"images": [], "local_images": [], "text_elements": []})}, 5)

    def tokens_used(self):
        r = self.r
        last = {"input_tokens": r.randint(8_000, 90_000), "cached_input_tokens": r.randint(0, 80_000),
                "output_tokens": r.randint(30, 3000), "reasoning_output_tokens": r.randint(0, 2000)}
        last["total_tokens"] = last["input_tokens"] + last["output_tokens"]
        self.tokens += last["total_tokens"]
        total = {k: v * r.randint(2, 9) for k, v in last.items()} | {"total_tokens": self.tokens}
        self.emit("event_msg", {"type": "token_count", "info": {"total_token_usage": total, "last_token_usage": last,
                                                               "model_context_window": 272_000},
                                "rate_limits": {"primary": {"used_percent": round(r.uniform(0, 90), 1), "window_minutes": 300,
                                                            "resets_in_seconds": r.randint(60, 18_000)},
                                                "secondary": {"used_percent": round(r.uniform(0, 60), 1), "window_minutes": 10_080,
                                                              "resets_in_seconds": r.randint(600, 600_000)}}}, 20)

    def reasoning(self):
        text = "**" + self.fill(self.r.choice(_TITLES)) + "**\n\n" + self.fill(self.r.choice(_THINKING))
        blob = "gAAAAA" + "".join(self.c.signature(self.r) for _ in range(self.r.randint(1, 4)))
        self.emit("response_item", {"type": "reasoning", "summary": [{"type": "summary_text", "text": text}],
                                    "content": None, "encrypted_content": blob}, 4000)
        self.emit("event_msg", {"type": "agent_reasoning", "text": text}, 5)

    def shell(self):
        r = self.r
        call = "call_" + "".join(r.choices(_B62, k=24))
        if r.random() < 0.4:  # reading a file, as Codex does with sed/cat
            rel, f = r.choice(self.files)
            cmd = r.choice(_CODEX_COMMANDS).format(rel=rel, dir=os.path.dirname(rel) or ".", fn=self.v.fn(r))
            a = r.randrange(f.nlines)
            b = bisect.bisect_left(f.raw_off, f.raw_off[a] + _size(r, 2500, 40_000))
            output = f.raw[f.raw_off[a]:f.raw_off[min(b, f.nlines)]]
        else:
            kind = r.choices(list(_BASH_COMMANDS), (22, 10, 6, 6, 12, 12, 14, 10, 8))[0]
            cmd = self.fill(r.choice(_BASH_COMMANDS[kind]))
            output = self.c.pools[kind].slice(r, _size(r, 1500, 60_000))
        args = {"command": ["bash", "-lc", cmd], "timeout_ms": 120_000}
        if self.cwd:
            args["workdir"] = self.cwd
        self.emit("response_item", {"type": "function_call", "name": "shell", "arguments": orjson.dumps(args).decode(),
                                    "call_id": call}, 3000)
        result = {"output": output, "metadata": {"exit_code": 0 if r.random() < 0.85 else 1,
                                                 "duration_seconds": round(r.uniform(0.01, 40), 1)}}
        self.emit("response_item", {"type": "function_call_output", "call_id": call,
                                    "output": orjson.dumps(result).decode()}, 6000)

    def patch(self, turn_id):
        r = self.r
        call = "call_" + "".join(r.choices(_B62, k=24))
        rel, f = r.choice(self.files)
        if r.random() < 0.2:  # a new file next to it
            rel = os.path.join(os.path.dirname(rel), f"{self.v.noun(r)}_{r.choice(_VERBS)}" + os.path.splitext(rel)[1])
            text = self.c.code_text(r, f.lang, _size(r, 1200, 20_000))
            body, change = "".join("+" + x + "\n" for x in text.splitlines()), {"type": "add", "content": text}
            head = "Add"
        else:
            a = r.randrange(f.nlines)
            b = min(f.nlines, a + r.randint(1, 6))
            old = f.raw[f.raw_off[a]:f.raw_off[b]].rstrip("\n").split("\n")
            new = [self.v.fill(r.choice(_CODE[f.lang]), r) for _ in range(r.randint(1, len(old) + 2))]
            body = "@@\n" + "".join("-" + x + "\n" for x in old) + "".join("+" + x + "\n" for x in new)
            change = {"type": "update", "unified_diff": f"@@ -{a + 1},{len(old)} +{a + 1},{len(new)} @@\n" + body[3:],
                      "move_path": None}
            head = "Update"
        self.emit("response_item", {"type": "custom_tool_call", "status": "completed", "call_id": call,
                                    "name": "apply_patch", "input": f"*** Begin Patch\n*** {head} File: {rel}\n{body}*** End Patch"}, 5000)
        done = f"Success. Updated the following files:\n{head[0]} {rel}\n"
        if self.cwd:  # Codex resolves the paths against its folder
            self.emit("event_msg", {"type": "patch_apply_end", "call_id": call, "turn_id": turn_id, "stdout": done,
                                    "stderr": "", "success": True, "changes": {os.path.join(self.cwd, rel): change}}, 300)
        self.emit("response_item", {"type": "custom_tool_call_output", "call_id": call, "output": orjson.dumps(
            {"output": done, "metadata": {"exit_code": 0, "duration_seconds": 0.0}}).decode()}, 10)

    def write(self, out, instructions, agents_md):
        r, v = self.r, self.v
        self.out = out
        meta = {"id": self.sid, "timestamp": _iso(self.ms), "cwd": self.cwd, "originator": r.choice(("codex_cli_rs", "codex_vscode")),
                "cli_version": r.choice(_CODEX_VERSIONS), "instructions": None, "source": r.choice(("cli", "vscode")),
                "model_provider": "openai", "base_instructions": {"text": instructions},
                "git": {"commit_hash": "%040x" % r.getrandbits(160), "branch": r.choice(("main", "main", f"fix/{v.noun(r)}")),
                        "repository_url": "git@github.com:example/app.git"}}
        if not self.cwd:  # an early rollout that says nowhere where it ran
            del meta["cwd"]
        self.emit("session_meta", meta, 5)
        self.say("developer", "<permissions instructions>\nFilesystem sandboxing prevents you from editing files outside "
                              "the workspace. Approval policy is on-request.\n</permissions instructions>", 5)
        if self.cwd:
            self.say("user", f"# AGENTS.md instructions for {self.cwd}\n\n<INSTRUCTIONS>\n{agents_md}\n</INSTRUCTIONS>", 5)
            self.say("user", f"<environment_context>\n  <cwd>{self.cwd}</cwd>\n  <approval_policy>on-request</approval_policy>\n"
                             "  <sandbox_mode>workspace-write</sandbox_mode>\n  <network_access>restricted</network_access>\n"
                             "  <shell>bash</shell>\n</environment_context>", 5)
        turns = int(2 + 18 * r.random() ** 2.2)
        marker = r.randrange(turns)
        for k in range(turns):
            turn_id = _uuid7(self.ms, r)
            ctx = {"turn_id": turn_id, "cwd": self.cwd, "approval_policy": "on-request",
                   "sandbox_policy": {"type": "workspace-write", "network_access": False}, "model": self.model,
                   "effort": r.choice(("medium", "high")), "summary": "auto"}
            if not self.cwd:
                del ctx["cwd"]
            self.emit("turn_context", ctx, 40_000 if k else 2000)
            prompt = self.fill(r.choice(_PROMPTS if k else _OPENERS))
            if k == marker:
                prompt += f" (ticket zqcodex{self.idx})"
            self.say("user", prompt, 5)
            self.emit("event_msg", {"type": "task_started", "turn_id": turn_id, "model_context_window": 272_000}, 5)
            for _ in range(r.choices((0, 1, 2, 3, 5, 8, 12), (15, 20, 20, 15, 15, 10, 5))[0]):
                if r.random() < 0.5:
                    self.reasoning()
                if r.random() < 0.3:
                    self.say("assistant", self.fill(r.choice(_INTROS + _TRANSITIONS)))
                if r.random() < 0.25:
                    self.patch(turn_id)
                else:
                    self.shell()
                self.tokens_used()
            self.reasoning()
            final = self.fill(r.choice(_FINALS))
            self.say("assistant", final)
            self.tokens_used()
            self.emit("event_msg", {"type": "task_complete", "turn_id": turn_id, "last_agent_message": final}, 5)


def generate_codex(codex_home: str | os.PathLike, workspace: str, rollouts: int, *, seed: int = 7,
                   now: float | None = None) -> dict:
    """Write `rollouts` synthetic Codex CLI rollouts under `<codex_home>/sessions/YYYY/MM/DD/`.

    Most ran in `workspace`, a tenth in a folder inside it, a twentieth elsewhere (outside its
    scope) and a twentieth record no folder at all. Returns {"files", "bytes", "sessions", "cwd"}
    (session ids oldest first, and where each ran: "ws", "sub", "elsewhere" or "none"); rollout N
    carries the rare word ``zqcodex<N>``.
    """
    ws = os.fspath(workspace)
    now_ms = int(round((time.time() if now is None else float(now)) * 1000))
    content = _content_for(random.Random(seed).getrandbits(64), ws)  # the Claude history's pools
    rng = random.Random(f"codex-{seed}")
    instructions = "You are Codex, based on GPT-5. You are running as a coding agent in the Codex CLI on a user's computer.\n\n" \
        + content.prose.slice(rng, 9000)
    agents_md = "## Repository guidelines\n\n" + content.prose.slice(rng, 1500)
    where = _assign(rng, rollouts, {"sub": 0.1, "elsewhere": 0.05, "none": 0.05}, "ws")
    total, ids = 0, []
    for i, start in enumerate(_starts(rng, rollouts, now_ms)):
        roll = _Rollout(content, random.Random(rng.getrandbits(64)), i, start, ws, where[i])
        folder = Path(os.fspath(codex_home)) / "sessions" / time.strftime("%Y/%m/%d", time.gmtime(start / 1000))
        folder.mkdir(parents=True, exist_ok=True)
        out = _Out(folder / f"rollout-{time.strftime('%Y-%m-%dT%H-%M-%S', time.gmtime(start / 1000))}-{roll.sid}.jsonl")
        roll.write(out, instructions, agents_md)
        total += out.close()
        ids.append(roll.sid)
    return {"files": rollouts, "bytes": total, "sessions": ids, "cwd": where}


def _vscode_uri(path):
    return {"$mid": 1, "fsPath": path, "external": "file://" + urllib.parse.quote(path), "path": path, "scheme": "file"}


def _chat(content, r, idx, start, ws, root):
    """One Copilot Chat session as VS Code saves it (v3): requests with the prompt in
    message.text and the reply as response parts: bare markdown, inline references, and for an
    edit a codeblockUri and a textEditGroup with the new text."""
    v = content.v
    _module, ff, over = _topic(r, content, ws)

    def fill(t):
        return v.fill(t, r, over)

    agent = {"extensionId": {"value": "GitHub.copilot-chat", "_lower": "github.copilot-chat"},
             "extensionDisplayName": "GitHub Copilot Chat", "id": "github.copilot.default", "name": "GitHubCopilot",
             "fullName": "GitHub Copilot", "isDefault": True, "locations": ["panel"], "modes": ["ask", "agent"]}
    ms, requests = start, []
    n = int(1 + 14 * r.random() ** 2)
    marker = r.randrange(n)
    for k in range(n):
        ms += int(r.uniform(20_000, 600_000)) if k else 0
        f = r.choice(ff)
        path = f"{root}/{f.rel[4:] if root.endswith('/web') and f.rel.startswith('web/') else f.rel}"
        text = fill(r.choice(_COPILOT_PROMPTS + (_PROMPTS if k else _OPENERS)))
        if k == marker:
            text += f" (zqcopilot{idx})"
        code = content.code_text(r, f.lang, _size(r, 700, 12_000))
        parts = [{"value": fill(r.choice(_INTROS + _PROSE)) + " ", "supportThemeIcons": False, "supportHtml": False}]
        if r.random() < 0.5:
            parts.append({"kind": "inlineReference", "inlineReference": _vscode_uri(path)})
        edit = r.random() < 0.3
        if edit:
            parts += [{"value": "\n```" + _LANG_FENCE.get(f.lang, "") + "\n", "supportThemeIcons": False, "supportHtml": False},
                      {"kind": "codeblockUri", "uri": _vscode_uri(path), "isEdit": True},
                      {"value": code + "```\n", "supportThemeIcons": False, "supportHtml": False},
                      {"kind": "textEditGroup", "uri": _vscode_uri(path), "done": True, "edits": [[{"text": code, "range": {
                          "startLineNumber": 1, "startColumn": 1, "endLineNumber": f.nlines, "endColumn": 1}}], []]}]
        else:
            parts.append({"value": "\n\n```" + _LANG_FENCE.get(f.lang, "") + "\n" + code + "```\n", "supportThemeIcons": False, "supportHtml": False})
        parts.append({"value": "\n" + fill(r.choice(_FINALS)), "supportThemeIcons": False, "supportHtml": False})
        took = r.randint(2_000, 60_000)
        req = {"requestId": f"request_{uuid.UUID(int=r.getrandbits(128), version=4)}",
               "message": {"parts": [{"range": {"start": 0, "endExclusive": len(text)}, "text": text, "kind": "text"}], "text": text},
               "variableData": {"variables": [{"id": "vscode.implicit.viewport", "name": "file:" + os.path.basename(path),
                                               "value": {"uri": _vscode_uri(path)}, "isFile": True}]},
               "response": parts, "responseId": f"response_{uuid.UUID(int=r.getrandbits(128), version=4)}",
               "result": {"timings": {"firstProgress": r.randint(400, 4000), "totalElapsed": took},
                          "metadata": {"modelMessageId": str(uuid.UUID(int=r.getrandbits(128), version=4))}},
               "followups": [], "isCanceled": False, "agent": agent, "contentReferences": [], "codeCitations": [],
               "timestamp": ms, "modelId": r.choice(_COPILOT_MODELS)}
        if edit:
            req["editedFileEvents"] = [{"eventKind": 1, "uri": _vscode_uri(path)}]
        requests.append(req)
        ms += took
    sid = str(uuid.UUID(int=r.getrandbits(128), version=4))
    doc = {"version": 3, "requesterUsername": "dev", "responderUsername": "GitHub Copilot",
           "responderAvatarIconUri": {"id": "copilot"}, "initialLocation": "panel", "requests": requests,
           "sessionId": sid, "creationDate": start, "isImported": False, "lastMessageDate": ms, "hasPendingEdits": False}
    if r.random() < 0.4:
        doc["customTitle"] = fill(r.choice(_TITLES))
    return doc


def generate_copilot(user_dir: str | os.PathLike, workspace: str, sessions: int, *, seed: int = 7,
                     now: float | None = None) -> dict:
    """Write `sessions` synthetic VS Code Copilot Chat sessions (v3 JSON, one file each) under
    `<user_dir>/workspaceStorage/<id>/chatSessions/`, over five workspace folders, each with its
    workspace.json: `workspace` itself (most), a folder inside it, a multi-root workspace, two
    other projects (one remote). Returns {"files", "bytes", "sessions"} (ids oldest first);
    session N carries the rare word ``zqcopilot<N>``.
    """
    ws = os.fspath(workspace)
    now_ms = int(round((time.time() if now is None else float(now)) * 1000))
    content = _content_for(random.Random(seed).getrandbits(64), ws)
    rng = random.Random(f"copilot-{seed}")
    q = urllib.parse.quote
    spaces = [  # (workspace.json, the folder its edits are in, weight)
        ({"folder": f"file://{q(ws)}"}, ws, 55), ({"folder": f"file://{q(ws)}/web"}, f"{ws}/web", 15),
        ({"workspace": "file:///home/dev/work/platform.code-workspace"}, ws, 8),
        ({"folder": "file:///home/dev/src/mobile-app"}, "/home/dev/src/mobile-app", 12),
        ({"folder": "vscode-remote://ssh-remote%2Bbuildbox/home/dev/src/infra-scripts"}, "/home/dev/src/infra-scripts", 10)]
    storage = Path(os.fspath(user_dir)) / "workspaceStorage"
    folders = []
    for wsjson, _root, _w in spaces:
        d = storage / hashlib.md5(orjson.dumps(wsjson)).hexdigest()  # VS Code's ids are hashes too
        (d / "chatSessions").mkdir(parents=True, exist_ok=True)
        (d / "workspace.json").write_bytes(orjson.dumps(wsjson))
        folders.append(d)
    total, ids = 0, []
    for i, start in enumerate(_starts(rng, sessions, now_ms)):
        k = rng.choices(range(len(spaces)), [w for _j, _r, w in spaces])[0]
        doc = _chat(content, random.Random(rng.getrandbits(64)), i, start, ws, spaces[k][1])
        p = folders[k] / "chatSessions" / f"{doc['sessionId']}.json"
        data = orjson.dumps(doc)
        p.write_bytes(data)
        os.utime(p, (doc["lastMessageDate"] / 1000, doc["lastMessageDate"] / 1000))
        total += len(data)
        ids.append(doc["sessionId"])
    return {"files": sessions, "bytes": total, "sessions": ids}
