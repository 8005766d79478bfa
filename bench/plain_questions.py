"""Each page's question asked the plain way: the one SQL statement a person would write for it in
Datasette's query box (issue 33, item 4).

`make bench` times our page against this statement through Datasette (its HTML page, as a person
reads the answer) and replayed with Python's sqlite3 (the "raw" floor), beside the older
comparison that replays our own statements. These are not our pages' statements: they are what
someone without ledgerweb would ask, so they answer the question as a table, with nothing our
pages add (the head's question, costs, annotations, capped counts, odd values named).

The text is written out in docs/benchmarks.md with the figures; values are SQL literals
(Datasette's query page takes no positional parameters).
"""

from bench.page_sql import sql_literal

# The window of a chart: where a started_at counts.
WINDOW = "started_at >= {since} AND started_at < {until}"

SESSION_LIST = """\
SELECT s.id, s.label, s.persona, s.routing_key, s.status, s.updated_at,
       (SELECT count(*) FROM turns t WHERE t.session_id = s.id) AS turns
FROM sessions s
WHERE s.status NOT IN ('archived', 'deleted'){persona}
ORDER BY s.updated_at DESC
LIMIT 50"""

OVERVIEW = """\
SELECT (SELECT count(*) FROM sessions) AS sessions,
       (SELECT count(*) FROM turns) AS turns,
       (SELECT count(*) FROM nexus_requests) AS requests,
       (SELECT count(*) FROM nexus_requests WHERE started_at >= {day_ago}) AS requests_24h,
       (SELECT count(*) FROM nexus_requests
        WHERE started_at >= {day_ago} AND status = 'failed') AS failed_24h"""

SESSION_TURNS = """\
SELECT t.id, t.parent_turn_id, t.status, t.started_at, t.total_tokens, t.model,
       (SELECT substr(m.content, 1, 200) FROM messages m
        WHERE m.turn_id = t.id AND m.role = 'user' ORDER BY m.sequence LIMIT 1) AS prompt,
       (SELECT substr(m.content, 1, 200) FROM messages m
        WHERE m.turn_id = t.id AND m.role = 'assistant' ORDER BY m.sequence LIMIT 1) AS answer
FROM turns t
WHERE t.session_id = {session}
ORDER BY t.started_at"""

TURN = """\
SELECT 'message' AS kind, id, role AS name, content AS body, NULL AS result,
       created_at AS at, sequence
FROM messages WHERE turn_id = {turn}
UNION ALL
SELECT 'tool call', id, tool_name, parameters, result, started_at, sequence
FROM tool_calls WHERE turn_id = {turn}
ORDER BY at, sequence"""

THREAD = """\
WITH RECURSIVE thread(id, parent_turn_id, depth) AS (
  SELECT id, parent_turn_id, 0 FROM turns WHERE id = {turn}
  UNION ALL
  SELECT t.id, t.parent_turn_id, thread.depth + 1
  FROM turns t JOIN thread ON t.id = thread.parent_turn_id
)
SELECT t.id, t.started_at, t.total_tokens,
       (SELECT substr(m.content, 1, 200) FROM messages m
        WHERE m.turn_id = t.id AND m.role = 'user' ORDER BY m.sequence LIMIT 1) AS prompt,
       (SELECT substr(m.content, 1, 200) FROM messages m
        WHERE m.turn_id = t.id AND m.role = 'assistant' ORDER BY m.sequence LIMIT 1) AS answer
FROM thread JOIN turns t ON t.id = thread.id
ORDER BY thread.depth DESC"""

FAILED_REQUESTS = """\
SELECT id, started_at, event_source, session_persona, principal_id, stage, error_stage,
       error_message
FROM nexus_requests
WHERE status = 'failed'
ORDER BY started_at DESC
LIMIT 50"""

REQUEST = "SELECT * FROM nexus_requests WHERE id = {request}"

CHARTS = {
    "throughput": """\
SELECT started_at / {bucket} * {bucket} AS bucket, status, count(*) AS requests
FROM nexus_requests
WHERE {window}
GROUP BY bucket, status""",
    "failures": """\
SELECT error_stage, error_message, count(*) AS failures
FROM nexus_requests
WHERE status = 'failed' AND {window}
GROUP BY error_stage, error_message
ORDER BY failures DESC
LIMIT 20""",
    "stage-timings": """\
WITH timing AS (
  SELECT j.key AS stage, j.value AS ms
  FROM nexus_requests r, json_each(r.stage_timings) j
  WHERE {window} AND json_valid(r.stage_timings)
), ranked AS (
  SELECT stage, ms, row_number() OVER (PARTITION BY stage ORDER BY ms) AS n,
         count(*) OVER (PARTITION BY stage) AS total
  FROM timing
)
SELECT stage, total,
       max(CASE WHEN n <= (total * 50 + 99) / 100 THEN ms END) AS p50,
       max(CASE WHEN n <= (total * 95 + 99) / 100 THEN ms END) AS p95,
       max(CASE WHEN n <= (total * 99 + 99) / 100 THEN ms END) AS p99,
       max(ms) AS max
FROM ranked
GROUP BY stage""",
    "hooks": """\
SELECT h.value AS hook, count(*) AS matched,
       sum(EXISTS (SELECT 1 FROM json_each(r.hooks_fired) f WHERE f.value = h.value)) AS fired,
       sum(r.hooks_handled) AS handled
FROM nexus_requests r, json_each(r.hooks_matched) h
WHERE {window} AND json_valid(r.hooks_matched) AND json_valid(r.hooks_fired)
GROUP BY hook""",
    "sources": """\
SELECT event_source, status, count(*) AS requests
FROM nexus_requests
WHERE {window}
GROUP BY event_source, status""",
    "tokens": """\
SELECT started_at / {bucket} * {bucket} AS bucket, agent_model,
       sum(agent_tokens_total) AS tokens
FROM nexus_requests
WHERE {window} AND agent_model IS NOT NULL
GROUP BY bucket, agent_model""",
    "cost": """\
SELECT started_at / {bucket} * {bucket} AS bucket, agent_model,
       sum(agent_tokens_prompt) AS prompt, sum(agent_tokens_completion) AS completion
FROM nexus_requests
WHERE {window} AND agent_model IS NOT NULL
GROUP BY bucket, agent_model""",
    "delivery": """\
SELECT delivery_channel, delivery_success, count(*) AS responses
FROM nexus_requests
WHERE {window} AND stage IN ('deliverResponse', 'finalize')
GROUP BY delivery_channel, delivery_success""",
}

HEALTHZ = "SELECT 1"


def fill(template: str, **values) -> str:
    """The template with each value written in as an SQL literal (a window's bounds too)."""
    literal = {
        k: sql_literal(v) if not isinstance(v, SQLText) else str(v) for k, v in values.items()
    }
    return template.format(**literal)


class SQLText(str):
    """A piece of SQL put into a template as it is (not quoted as a literal)."""


def session_list(persona: str | None = None) -> str:
    where = SQLText(f"\n  AND s.persona = {sql_literal(persona)}" if persona else "")
    return fill(SESSION_LIST, persona=where)


def chart(slug: str, since: int, until: int) -> str:
    # Hourly buckets for a day, daily for longer windows: what a person would pick.
    bucket = 3_600_000 if until - since <= 86_400_000 else 86_400_000
    window = SQLText(fill(WINDOW, since=since, until=until))
    return fill(CHARTS[slug], window=window, bucket=bucket)
