# ledgerweb — every target sets up what it needs first.
.DEFAULT_GOAL := help
SHELL := /bin/bash

VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
MANAGE := $(PY) manage.py
DEMO_LEDGER := var/demo-ledger.sqlite3
HOST ?= 127.0.0.1
PORT ?= 8000

# A Python >= 3.12: $(PYTHON) if given, else python3.13/python3.12 on PATH, else the newest
# pyenv version (on these machines python3 is 3.11).
PYTHON ?= $(shell for p in python3.14 python3.13 python3.12 python3 \
	$$(ls -d $$(pyenv root 2>/dev/null)/versions/3.1[2-9]*/bin/python 2>/dev/null | sort -rV); do \
	command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null \
	&& { command -v $$p; break; }; done)

export LEDGER_DB ?= $(CURDIR)/$(DEMO_LEDGER)
export DJANGO_DB ?= $(CURDIR)/var/django.sqlite3

.PHONY: help setup demo serve test lint browser postgres receiver migrate soak bench

help:
	@echo "make demo   set up, build the demo ledger, serve it on http://$(HOST):$(PORT)"
	@echo "make serve  set up and serve LEDGER_DB (default: the demo ledger)"
	@echo "make test   set up and run every test (the Django-state ones again on PostgreSQL)"
	@echo "make lint   ruff"
	@echo "make soak   a live writer and browsing clients through gunicorn (a few minutes)"
	@echo "make bench  every page on a 1M-row ledger against the raw SQL and Datasette (< 30 min)"

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	@test -n "$(PYTHON)" || { echo "No Python >= 3.12 found: install one or pass PYTHON=/path/to/python3.12"; exit 1; }
	@echo "Using $(PYTHON) ($$($(PYTHON) --version))"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

# Debian's Chromium for the browser tests (Playwright drives it; no browser download).
browser:
	@test -x /usr/bin/chromium || { \
	  echo "Installing Debian's chromium for the browser tests"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } \
	  || { echo "Could not install chromium: run 'apt-get install chromium' as root"; exit 1; }; }

# PostgreSQL's own binaries (initdb, pg_ctl) for the tests' throwaway server
# (tests/postgres_server.py); Debian's postgresql package when they are missing.
postgres:
	@ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || command -v pg_ctl >/dev/null || { \
	  echo "Installing Debian's postgresql for the tests"; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; } \
	  || { echo "Could not install postgresql: run 'apt-get install postgresql' as root"; exit 1; }; }

# Arize Phoenix, the real OTLP receiver tests/test_otel_receiver.py exports the ledger to (issue
# 32), from PyPI, in a virtualenv of its own: its hundred-odd dependencies (pandas, grpcio, …)
# never meet the project's. About 45 s and 800 MB the first time; pinned, so it is not redone.
PHOENIX_VENV := .venv-phoenix
PHOENIX_VERSION := 20.26.1
receiver: $(PHOENIX_VENV)/.installed-$(PHOENIX_VERSION)

$(PHOENIX_VENV)/.installed-$(PHOENIX_VERSION):
	@test -n "$(PYTHON)" || { echo "No Python >= 3.12 found: install one or pass PYTHON=/path/to/python3.12"; exit 1; }
	test -x $(PHOENIX_VENV)/bin/python || $(PYTHON) -m venv $(PHOENIX_VENV)
	$(PHOENIX_VENV)/bin/python -m pip install --quiet arize-phoenix==$(PHOENIX_VERSION)
	touch $@

# With the venv's Python (found by setup), written whole or not at all: an empty key file (a
# Python that did not run) would stop every later start with "SECRET_KEY is not set".
var/secret-key: | setup
	@mkdir -p var
	@$(PY) -c 'import secrets; print(secrets.token_urlsafe(50))' > $@.tmp
	@chmod 600 $@.tmp && mv $@.tmp $@

migrate: setup var/secret-key
	@mkdir -p var
	SECRET_KEY=$$(cat var/secret-key) $(MANAGE) migrate --noinput
	SECRET_KEY=$$(cat var/secret-key) $(MANAGE) collectstatic --noinput -v0

$(DEMO_LEDGER): | setup
	@mkdir -p var
	SECRET_KEY=x DEBUG=1 $(MANAGE) ledger_demo $@ --live

# The demo admin's password is printed last, framed, with the address: once the server answers,
# after its start-up lines (demo_admin --wait).
demo: setup $(DEMO_LEDGER) migrate
	$(MAKE) --no-print-directory serve ANNOUNCE_DEMO_ADMIN=1

# The background process (ledger_background: the charts' hourly summaries, the health checks and
# the other registered jobs) runs beside gunicorn and ends with it, so that no page view pays for
# that work (background/__init__.py, docs/decisions.md).
serve: migrate
	@echo "Serving $(LEDGER_DB) on http://$(HOST):$(PORT)/"
	SECRET_KEY=$$(cat var/secret-key) $(MANAGE) ledger_background & background=$$!; \
	HTTPS=0 SECRET_KEY=$$(cat var/secret-key) $(BIN)/gunicorn ledgerweb.wsgi \
	  --bind $(HOST):$(PORT) --workers 2 --access-logfile - --timeout 30 & server=$$!; \
	trap 'kill $$background $$server 2>/dev/null' EXIT INT TERM; \
	$(if $(ANNOUNCE_DEMO_ADMIN),SECRET_KEY=$$(cat var/secret-key) $(MANAGE) demo_admin \
	  --url http://$(HOST):$(PORT)/ --wait --server-pid $$server;) \
	wait $$server; status=$$?; kill $$background 2>/dev/null; exit $$status

# The tests of what ledgerweb keeps in its own database (rollups, charts, search, admin, sign-in
# and lockouts, health, overview) run a second time with that database on a throwaway
# PostgreSQL (issue 19); the ledger stays SQLite for this pass.
DJANGO_STATE_TESTS := tests/test_state_db.py tests/test_rollups.py tests/test_summariser.py \
	tests/test_pipeline_charts.py tests/test_overview.py tests/test_search.py \
	tests/test_search_index.py tests/test_search_truth.py tests/test_admin.py \
	tests/test_login_required.py tests/test_annotating.py tests/test_annotation_filters.py \
	tests/test_annotation_search.py tests/test_datasets.py tests/test_preferences.py \
	tests/test_review_queues.py tests/test_roles.py \
	tests/test_security.py tests/test_health.py tests/test_long_value_links.py \
	tests/test_issues_inbox.py tests/test_issue_lifecycle.py tests/test_alerts.py \
	tests/test_two_hosts.py::test_two_hosts_meeting_a_new_ledger_at_once_name_it_once \
	tests/test_two_hosts.py::test_two_hosts_charting_the_same_hours_at_once_build_each_hour_once

# The page, chart, admin and health tests a second time with each test's ledger in PostgreSQL
# (tests/pg_ledger.py: a throwaway server; the ledger holds what ledger_ship would store, tests
# about values only SQLite holds are not run and known failures marked, each saying why). Not
# yet: the live-writer soak.
POSTGRES_LEDGER_TESTS = $(patsubst %,tests/test_%.py,session_list session_page tree_pages \
	tree_map tree_focus branch_point \
	turn_and_thread turn_urls compare alternatives fork_markers failed_turns markdown_views tree \
	request_page pipeline_pages pipeline_charts pipeline_stages cost_chart rollups costs \
	turn_usage windows hostile_ledger admin health overview databases postgres_ledger \
	import_command retention search search_index search_codex_ids otel_export otel_receiver long_value_links \
	stage_durations annotating annotation_filters annotation_search datasets issues_inbox \
	issue_lifecycle alerts live turn_timeline transcripts_read_well preferences review_queues \
	roles tree_updates)
# And in the browser: the walker over the demo ledger shipped into PostgreSQL by ledger_ship
# (every page and control), and the journeys: session tree and fork, request page and live
# pages, charts and their click-through, archiving, signing in, search (about 6 min).
POSTGRES_BROWSER_TESTS = $(patsubst %,tests/e2e/test_%.py,walker sessions map_clicks branch_point_browser pipeline charts \
	cost_bars archive_journey sign_in search_journeys live_session live_requests)

test: setup browser postgres receiver
	$(BIN)/pytest
	$(BIN)/pytest -p no:cacheprovider --django-db=postgres $(DJANGO_STATE_TESTS)
	$(BIN)/pytest -p no:cacheprovider --ledger-backend=postgres $(POSTGRES_LEDGER_TESTS) \
	  $(POSTGRES_BROWSER_TESTS)

# A live writer and browsing clients through gunicorn, in WAL then rollback-journal mode (each
# phase SOAK_SECONDS long); SOAK_ARGS=--write-doc records the figures in docs/benchmarks.md.
SOAK_SECONDS ?= 60
SOAK_CLIENTS ?= 4
soak: setup
	$(PY) -m tools.soak --seconds $(SOAK_SECONDS) --clients $(SOAK_CLIENTS) $(SOAK_ARGS)

# Issue 7's benchmark: builds var/bench/scale.sqlite3 once (~5 GB, about 10 minutes; reused
# while its row counts suffice), times every page through gunicorn, the background process
# beside it, against each page's question asked plainly (one SQL statement, in sqlite3 and
# through Datasette: issue 33) and against its own SQL replayed, and writes its section of
# docs/benchmarks.md; then the same on the scale-50 ledger issue 33 was measured on
# (var/bench/scale50.sqlite3, ~1.5 minutes to build). BENCH_ARGS passes options (e.g. --runs
# 30). Then the cost
# of checking the charts' stored hours (bench/rollup_checks.py, on the pipeline bench's ledger),
# and the first look at that ledger on a fresh install, the summariser running (bench/first_look.py).
# Then that ledger shipped into a throwaway PostgreSQL and the same pages timed on both
# (bench/postgres_ledger_bench.py, ~16-20 minutes on 2 cores). Then the OpenTelemetry export
# of the scale ledger to a loopback receiver, rows per second and memory (~3 minutes). Then the
# session pages with 10,000 annotations and a 100,000-record dataset export (~12 minutes). And the
# failure inbox and the alert rules' CPU on the scale ledger (bench/issues_bench.py; its hourly
# summaries built once into a database of its own, ~15 minutes the first time). Last, 50 live
# pages beside 8 browsing clients on a copy of the scale ledger written every 50 ms, the session
# it writes first grown to 3,000 turns (bench/live_bench.py, ~8 minutes with the copy).
bench: $(VENV)/.installed-bench postgres
	$(PY) -m bench.scale_bench --write-doc $(BENCH_ARGS)
	$(PY) -m bench.scale_bench --write-doc --scale-50 $(BENCH_ARGS)
	$(PY) -m bench.tree_pages --write-doc
	$(PY) -m bench.rollup_checks --write-doc
	$(PY) -m bench.first_look --write-doc
	$(PY) -m bench.search_bench --write-doc
	$(PY) -m bench.search_huge_value --write-doc
	$(PY) -m bench.issues_bench --write-doc
	$(PY) -m bench.postgres_ledger_bench --write-doc
	$(PY) -m bench.otel_export_bench --write-doc
	$(PY) -m bench.live_bench --write-doc
	$(PY) -m bench.annotations_bench --write-doc

$(VENV)/.installed-bench: $(VENV)/.installed
	$(PY) -m pip install --quiet -e '.[dev,bench]'
	touch $@

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
