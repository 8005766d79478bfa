-- The functions ledgerweb's ledger queries use that PostgreSQL lacks: SQLite's own, and those
-- ledgerweb registers in Python on SQLite connections (pipeline/apps.py). The same SQL runs on
-- both engines, and what differs stays in this one file (and ledgerweb/dialect.py).
-- Created with the tables (ledgerweb/pg_schema.py); CREATE OR REPLACE, so running it again on
-- an existing central ledger brings it up to date. Semantics are SQLite's for the cases used:
-- NULL and invalid JSON give NULL or false, never an error that would abort the whole query.

-- typeof(x): 'null', 'integer', 'real' or 'text' (a BOOLEAN reads as SQLite stores it: integer).
CREATE OR REPLACE FUNCTION typeof(value anyelement) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN value IS NULL THEN 'null'
        WHEN pg_typeof(value) IN ('bigint'::regtype, 'integer'::regtype, 'smallint'::regtype,
                                  'boolean'::regtype) THEN 'integer'
        WHEN pg_typeof(value) IN ('double precision'::regtype, 'real'::regtype,
                                  'numeric'::regtype) THEN 'real'
        ELSE 'text'
    END
$$;

-- The same for the ledger's column types, one function each: PostgreSQL inlines these into the
-- query as a plain CASE, where the generic one above (pg_typeof is STABLE) is a function call
-- per row and value: half the time of a chart hour's token facts (issue 33). A literal of
-- unknown type ('abc', NULL) goes to the text one, as it went to the generic one as text.
CREATE OR REPLACE FUNCTION typeof(value text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN value IS NULL THEN 'null' ELSE 'text' END
$$;
CREATE OR REPLACE FUNCTION typeof(value bigint) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN value IS NULL THEN 'null' ELSE 'integer' END
$$;
CREATE OR REPLACE FUNCTION typeof(value integer) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN value IS NULL THEN 'null' ELSE 'integer' END
$$;
CREATE OR REPLACE FUNCTION typeof(value boolean) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN value IS NULL THEN 'null' ELSE 'integer' END
$$;
CREATE OR REPLACE FUNCTION typeof(value double precision) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN value IS NULL THEN 'null' ELSE 'real' END
$$;
CREATE OR REPLACE FUNCTION typeof(value numeric) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN value IS NULL THEN 'null' ELSE 'real' END
$$;

-- The JSON document in a text, or NULL when it is not valid JSON (PostgreSQL 15 has no
-- non-raising test; 16's IS JSON would do). PARALLEL UNSAFE, and so every function calling it:
-- its EXCEPTION block starts a subtransaction, which a parallel plan (a big ledger's
-- aggregates) refuses with an error that fails the whole query.
CREATE OR REPLACE FUNCTION ledger_jsonb(value text) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE PARALLEL UNSAFE AS $$
BEGIN
    RETURN value::jsonb;
EXCEPTION WHEN others THEN
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION json_valid(value text) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL UNSAFE AS $$
    SELECT value IS NOT NULL AND ledger_jsonb(value) IS NOT NULL
$$;

-- SQLite's type names for a JSON value: null, true, false, integer, real, text, array, object.
CREATE OR REPLACE FUNCTION ledger_json_type(value jsonb) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE jsonb_typeof(value)
        WHEN 'string' THEN 'text'
        WHEN 'boolean' THEN value::text
        -- jsonb writes a number as its digits, with a point when it has a fraction (never an
        -- exponent): a search for the point, not a regular expression per value.
        WHEN 'number' THEN CASE WHEN strpos(value::text, '.') = 0 THEN 'integer' ELSE 'real' END
        ELSE jsonb_typeof(value)
    END
$$;

-- A '$.a.b' path as PostgreSQL's text[] path {a,b} (object keys only: the paths ledgerweb uses).
CREATE OR REPLACE FUNCTION ledger_json_path(path text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN path = '$' THEN ARRAY[]::text[]
                ELSE string_to_array(substr(path, 3), '.') END
$$;

CREATE OR REPLACE FUNCTION json_type(value text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL UNSAFE AS $$
    SELECT ledger_json_type(ledger_jsonb(value))
$$;

CREATE OR REPLACE FUNCTION json_type(value text, path text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL UNSAFE AS $$
    SELECT ledger_json_type(ledger_jsonb(value) #> ledger_json_path(path))
$$;

-- json_extract: a scalar as text (SQLite gives the number; ledgerweb reads text and casts),
-- an object or array as its JSON text.
CREATE OR REPLACE FUNCTION json_extract(value text, path text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL UNSAFE AS $$
    SELECT ledger_jsonb(value) #>> ledger_json_path(path)
$$;

-- json_each over an array or an object: key (NULL for an array's items), value (text, as
-- json_extract), type (SQLite's names). Empty for NULL, invalid JSON or a scalar. The text is
-- parsed once (ledger_jsonb's exception block is a subtransaction per call).
CREATE OR REPLACE FUNCTION json_each(value text)
RETURNS TABLE (key text, value text, type text)
LANGUAGE sql IMMUTABLE PARALLEL UNSAFE AS $$
    WITH parsed AS (SELECT ledger_jsonb(json_each.value) AS doc)
    SELECT NULL::text, item #>> '{}', ledger_json_type(item)
    FROM parsed, jsonb_array_elements(CASE WHEN jsonb_typeof(parsed.doc) = 'array'
                                           THEN parsed.doc ELSE '[]' END) AS item
    UNION ALL
    SELECT o.key, o.value #>> '{}', ledger_json_type(o.value)
    FROM parsed, jsonb_each(CASE WHEN jsonb_typeof(parsed.doc) = 'object'
                                 THEN parsed.doc ELSE '{}' END) AS o
$$;

-- instr(haystack, needle): 1-based position, 0 when absent.
CREATE OR REPLACE FUNCTION instr(haystack text, needle text) RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT strpos(haystack, needle)
$$;

-- max(a, b) and min(a, b): SQLite's two-argument scalar forms (PostgreSQL's GREATEST, LEAST).
CREATE OR REPLACE FUNCTION max(a bigint, b bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT GREATEST(a, b) $$;
CREATE OR REPLACE FUNCTION min(a bigint, b bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT LEAST(a, b) $$;
CREATE OR REPLACE FUNCTION max(a double precision, b double precision) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT GREATEST(a, b) $$;
CREATE OR REPLACE FUNCTION min(a double precision, b double precision) RETURNS double precision
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT LEAST(a, b) $$;

-- A BOOLEAN compared with a number, as SQLite compares its 0/1 (`hooks_handled != 0`).
CREATE OR REPLACE FUNCTION ledger_bool_ne_int(a boolean, b integer) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT a::integer <> b $$;
CREATE OR REPLACE FUNCTION ledger_bool_eq_int(a boolean, b integer) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT a::integer = b $$;
DO $$ BEGIN
    CREATE OPERATOR <> (LEFTARG = boolean, RIGHTARG = integer, FUNCTION = ledger_bool_ne_int);
    CREATE OPERATOR = (LEFTARG = boolean, RIGHTARG = integer, FUNCTION = ledger_bool_eq_int);
EXCEPTION WHEN duplicate_function THEN NULL;  -- already there: CREATE OR REPLACE has no OPERATOR
END $$;

-- pipeline/signatures.py's signature() (registered in Python on SQLite connections): an error
-- message's first line holding text, with its variable parts masked. The same masks in the same
-- order, in PostgreSQL's regular expressions (\y is \b); tests/test_postgres_ledger.py holds
-- them equal.
CREATE OR REPLACE FUNCTION ledger_error_signature(message text) RETURNS text
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    line text;
BEGIN
    IF message IS NULL OR message ~ '^\s*$' THEN
        RETURN '(no message)';
    END IF;
    line := split_part(regexp_replace(message, '^\s+', ''), E'\n', 1);
    line := left(btrim(regexp_replace(line, '\s+', ' ', 'g'), ' '), 300);
    line := regexp_replace(line, '"[^"]*"|''[^'']*''|`[^`]*`', '''…''', 'g');
    line := regexp_replace(line,
        '\y[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\y', '<id>', 'gi');
    line := regexp_replace(line, '\y[0-9A-HJKMNP-TV-Z]{26}\y', '<id>', 'g');
    line := regexp_replace(line, '\y(?=[0-9a-f]*[0-9])[0-9a-f]{12,}\y', '<id>', 'gi');
    line := regexp_replace(line, '(?<![A-Za-z_])[+-]?[0-9]+(?:[.,:][0-9]+)*', '<n>', 'g');
    RETURN line;
END
$$;
