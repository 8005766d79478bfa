// Live pages (issue 29): a page with a live bar ([data-live], drawn by {% live_bar %}) asks the
// server every second or so whether its part of the ledger changed since the cursor it was drawn
// from (one short request: no worker waits for us), and when it did:
//   - session, request and overview pages fetch themselves again (their own URL) and merge the
//     new <main> into the one on screen, node by node, so the reader keeps the selected turn, the
//     open panel and its open calls, the scroll positions, the find marks and the keyboard's row;
//     new turns the reader cannot see (in a folded stretch, outside the window of rows, below
//     the visible rows) are counted in the bar ("3 new turns ↓"), not inserted under their eyes;
//   - the request list counts the requests that arrived ("12 new requests", inserted on click)
//     and redraws the rows it shows still processing when they move on;
//   - the dashboard redraws its charts.
// The cursor only moves with what the page shows, so a dropped connection, a paused page or a
// closed laptop catches up on the next answer: nothing missed, nothing twice. Pause keeps live=0
// in the address.
(function () {
  "use strict";

  var HIDDEN_EVERY_MS = 30000;   // a tab out of sight asks this rarely, and at once when seen
  var MAX_RETRY_MS = 30000;      // after failures, waits double up to this
  var TICK_MS = 15000;           // "pending 3 min" and "stalled" are redrawn this often
  // The back-offs below are measured in the server's own time (its Server-Timing header: how
  // long a worker was held), not in the time the page waited for the answer, which also counts
  // the queue in front of the workers and the machine's other load. And none of them makes a
  // page wait longer than the answer's at_most_ms, the gap that keeps the page's promise (a
  // change on screen within 2 s, the dashboard within 10 s): docs/decisions.md.
  // A redraw that held the server for t is not followed by another before REDRAW_GAP × t: an
  // expensive page (a huge tree, the overview of a big ledger) costs a worker at most a quarter
  // of its time per open tab, until the promise's gap caps it.
  var REDRAW_GAP = 4;
  // A page told "nothing changed" this many times in a row asks half as often again (a page
  // nobody writes costs the server less); the first change brings it back to its pace.
  var QUIET_ANSWERS = 20, QUIET_SLOWER = 1.5;
  // A poll that held the server for t is not followed by another before POLL_GAP × t.
  var POLL_GAP = 8;
  // Classes other scripts put on server-drawn elements, kept when the element is redrawn.
  var CLIENT_CLASSES = ["cursor", "find-hit", "find-failure", "visited"];

  var state = { bar: null, timer: null, failures: 0, busy: false, pending: 0, more: false,
                newTurns: [], moreTurns: false, waiting: false, quiet: 0, served: 0 };

  function bar() { return document.querySelector("[data-live]"); }
  function say(text) {
    var out = state.bar && state.bar.querySelector("[data-live-status]");
    if (out && out.textContent !== text) out.textContent = text;
  }
  function paused() { return state.bar && state.bar.hasAttribute("data-live-paused"); }

  // -- Merging a new version of the page into the one on screen ------------------------------

  function keyOf(node) {
    if (node.nodeType !== 1) return null;
    if (node.id) return "#" + node.id;
    if (node.dataset.turn) return "turn:" + node.dataset.turn;
    if (node.dataset.request) return "request:" + node.dataset.request;
    if (node.dataset.liveKey) return "key:" + node.dataset.liveKey;
    return null;
  }
  function sameKind(a, b) {
    return a.nodeType === b.nodeType && a.nodeName === b.nodeName;
  }
  function ownedAttributes(node) {
    var owned = (node.getAttribute("data-live-own") || "").split(/\s+/);
    owned.push("style");  // set by scripts only (the CSP allows no inline style from the server)
    if (node.nodeName === "DETAILS") owned.push("open");  // the reader opened or closed it
    return owned;
  }
  function syncAttributes(old, fresh) {
    var owned = ownedAttributes(old);
    Array.from(old.attributes).forEach(function (attr) {
      if (!fresh.hasAttribute(attr.name) && owned.indexOf(attr.name) < 0) old.removeAttribute(attr.name);
    });
    Array.from(fresh.attributes).forEach(function (attr) {
      if (owned.indexOf(attr.name) >= 0) return;
      var value = attr.value;
      if (attr.name === "class") {
        var kept = CLIENT_CLASSES.filter(function (c) { return old.classList.contains(c); });
        value = kept.reduce(function (v, c) { return (" " + v + " ").indexOf(" " + c + " ") >= 0 ? v : v + " " + c; }, value);
      }
      if (old.getAttribute(attr.name) !== value) old.setAttribute(attr.name, value);
    });
  }
  function morph(old, fresh) {
    if (old.nodeType !== 1) {
      if (old.nodeValue !== fresh.nodeValue) old.nodeValue = fresh.nodeValue;
      return;
    }
    if (old.hasAttribute("data-live-keep")) return;
    if (/^(INPUT|TEXTAREA|SELECT)$/.test(old.nodeName)) return;  // what the reader typed stays
    if (old.isEqualNode(fresh)) return;
    syncAttributes(old, fresh);
    if (old.hasAttribute("data-figure")) return;  // a chart: its drawing is the chart script's
    morphChildren(old, fresh);
  }
  // Each child's place for matching: its key, or for a child without one (the whitespace
  // between two rows, say) the key of the keyed child before it and how far after it. Matched
  // by order alone, the whitespace after each row of a window that slid by one row would pair
  // with the whitespace before it, and every row would be moved.
  function places(parent) {
    var last = "^", n = 0;
    return Array.from(parent.childNodes).map(function (child) {
      var key = keyOf(child);
      if (key) { last = key; n = 0; return key; }
      return last + "/" + (n++);
    });
  }
  function morphChildren(old, fresh) {
    var keyed = new Map(), byPlace = new Map(), unkeyed = [], used = new Set();
    var oldPlaces = places(old), freshPlaces = places(fresh), oldIndex = new Map();
    Array.from(old.childNodes).forEach(function (child, i) {
      oldIndex.set(child, i);
      var key = keyOf(child);
      if (key && !keyed.has(key)) { keyed.set(key, child); return; }
      unkeyed.push(child);
      if (!byPlace.has(oldPlaces[i])) byPlace.set(oldPlaces[i], child);
    });
    // Otherwise a child without a key takes the next one of its kind, in order: after the last
    // old child matched (an old child left at the front, taken by a child at the end, would
    // have every child between moved).
    var next = 0, last = -1, placed = [];
    Array.from(fresh.childNodes).forEach(function (child, i) {
      var key = keyOf(child), match = null;
      if (key) {
        match = keyed.get(key) || null;
        if (match && sameKind(match, child)) keyed.delete(key); else match = null;
      } else {
        match = byPlace.get(freshPlaces[i]) || null;
        if (match && (used.has(match) || !sameKind(match, child))) match = null;
        while (!match && next < unkeyed.length) {
          var candidate = unkeyed[next++];
          if (oldIndex.get(candidate) > last && !used.has(candidate) && sameKind(candidate, child)) {
            match = candidate;
          }
        }
        if (match) used.add(match);
      }
      if (match) {
        last = Math.max(last, oldIndex.get(match));
        morph(match, child);
        placed.push(match);
      } else placed.push(document.adoptNode(child));
    });
    // The old children that stay are removed first: a window of rows that slid by one (its
    // first row gone) would otherwise have every row after it moved, one DOM move each.
    var kept = new Set(placed);
    Array.from(old.childNodes).forEach(function (child) {
      if (!kept.has(child)) old.removeChild(child);
    });
    var at = old.firstChild;
    placed.forEach(function (node) {
      if (node === at) at = at.nextSibling;
      else old.insertBefore(node, at);
    });
  }

  // The tree scrolls in its own box: the row at its top stays where it is, or, when the reader
  // was at the end, the end stays in view (new turns then come into sight as in a chat).
  function treePlace() {
    var tree = document.querySelector(".tree");
    if (!tree) return null;
    var box = tree.getBoundingClientRect();
    var atEnd = tree.scrollTop + tree.clientHeight >= tree.scrollHeight - 4;
    var rows = tree.querySelectorAll(".tree-row");
    for (var i = 0; i < rows.length; i++) {
      var at = rows[i].getBoundingClientRect();
      if (at.bottom > box.top) return { tree: tree, row: rows[i], offset: at.top - box.top, atEnd: atEnd };
    }
    return { tree: tree, row: null, offset: 0, atEnd: atEnd };
  }
  function keepTreePlace(place) {
    if (!place) return;
    var tree = document.querySelector(".tree");
    if (!tree || tree !== place.tree) return;
    if (place.atEnd && place.tree.scrollTop > 0) { tree.scrollTop = tree.scrollHeight; return; }
    if (!place.row || !place.row.isConnected) return;
    var now = place.row.getBoundingClientRect().top - tree.getBoundingClientRect().top;
    tree.scrollTop += now - place.offset;
  }
  // The page's own scroll: the element at the top of the window stays put.
  function pagePlace() {
    var main = document.getElementById("main");
    var probe = document.elementFromPoint(Math.min(40, window.innerWidth - 1), 8);
    if (!probe || !main || !main.contains(probe)) return null;
    return { node: probe, top: probe.getBoundingClientRect().top };
  }
  function keepPagePlace(place) {
    if (!place || !place.node.isConnected) return;
    var moved = place.node.getBoundingClientRect().top - place.top;
    if (Math.abs(moved) >= 1) window.scrollBy(0, moved);
  }

  function mergePage(html) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    var fresh = doc.getElementById("main"), main = document.getElementById("main");
    if (!fresh || !main) return null;
    var tree = treePlace(), page = pagePlace();
    morph(main, fresh);
    keepTreePlace(tree);
    keepPagePlace(page);
    // The tree's own scripts follow its scroll (the map's band of rows in view), and the peek
    // below it shows the keyboard's row as it is now (its answer may just have been written).
    var rowsBox = document.querySelector(".tree");
    if (rowsBox) rowsBox.dispatchEvent(new Event("scroll"));
    var keyRow = document.querySelector(".tree-row.cursor");
    if (keyRow) keyRow.dispatchEvent(new FocusEvent("focusin", { bubbles: true }));
    if (window.htmx) window.htmx.process(main);
    main.dispatchEvent(new CustomEvent("live:updated", { bubbles: true }));
    var drawn = doc.querySelector("[data-live]");
    return drawn ? drawn.getAttribute("data-live-cursor") : null;
  }

  function fetchPage(url) {
    return fetch(url, { credentials: "same-origin" })
      .then(function (response) {
        if (!response.ok || response.redirected) throw new Error("page " + response.status);
        state.served += serverMs(response, 0);
        return response.text();
      });
  }

  // How long the server's worker spent on a response (its Server-Timing "app" entry), or
  // `otherwise` (the time the page waited) when no such header came through.
  function serverMs(response, otherwise) {
    var found = /(?:^|,)\s*app;dur=([0-9.]+)/.exec(response.headers.get("Server-Timing") || "");
    return found ? Number(found[1]) : otherwise;
  }
  // The wait before the next poll, `elapsed` ms after this one was sent: its pace counts from
  // the sending (`pace`: a poll every second, not a second after a redraw that took one), a
  // costly poll or redraw rests the server `rest` ms from now, and neither takes the next poll
  // more than `atMost` ms after this one (the promise's gap; then it goes at once).
  function nextWait(pace, rest, atMost, elapsed) {
    var wait = Math.max(pace - elapsed, rest);
    if (atMost) wait = Math.min(wait, atMost - elapsed);
    return Math.max(0, wait);
  }

  // -- A session page: what arrived where the reader cannot see it -------------------------------

  function turnUrl(turnId) {
    var tree = document.querySelector(".tree");
    if (!tree || !tree.dataset.turnsUrl) return "";
    var segment = (turnId === "." || turnId === "..") ? turnId.replace(/\./g, "%252E")
      : encodeURIComponent(encodeURIComponent(turnId));
    return tree.dataset.turnsUrl + segment + "/";
  }
  function rowInSight(row) {
    var tree = row.closest(".tree");
    if (!tree) return false;
    var box = tree.getBoundingClientRect(), at = row.getBoundingClientRect();
    return at.bottom > box.top && at.top < box.bottom;
  }
  function countNewTurns(ids, more) {
    ids.forEach(function (id) { if (state.newTurns.indexOf(id) < 0) state.newTurns.push(id); });
    state.moreTurns = state.moreTurns || more;
    showNewTurns();
  }
  function showNewTurns() {
    var link = state.bar && state.bar.querySelector("[data-live-news]");
    if (!link) return;
    state.newTurns = state.newTurns.filter(function (id) {
      var row = document.getElementById("turn-" + id);
      return !(row && rowInSight(row));
    });
    if (!state.newTurns.length) { link.hidden = true; state.moreTurns = false; return; }
    var n = state.newTurns.length;
    link.textContent = (state.moreTurns ? n + "+" : n) + " new turn" + (n === 1 ? "" : "s") + " ↓";
    link.title = "Turns written since you looked, outside the rows in view: go to the newest";
    link.setAttribute("href", turnUrl(state.newTurns[n - 1]));
    link.hidden = false;
  }
  function goToNewTurn(event) {
    var id = state.newTurns[state.newTurns.length - 1];
    var row = id && document.getElementById("turn-" + id);
    if (!row) return;  // folded or outside the window: the link opens the window around it
    event.preventDefault();
    var tree = row.closest(".tree");
    tree.scrollTop += row.getBoundingClientRect().top - tree.getBoundingClientRect().top - tree.clientHeight / 2;
    state.newTurns = [];
    showNewTurns();
  }

  // A turn still running says since when, and that it stalled once it has written nothing for
  // a while (the server draws both; time moves on without any write, so they are redrawn here).
  function tick() {
    var live = bar(), now = Date.now();
    var limit = live ? Number(live.dataset.liveStalledAfter) : 0;
    document.querySelectorAll("[data-running-since]").forEach(function (mark) {
      var since = Number(mark.dataset.runningSince), last = Number(mark.dataset.lastWrite || since);
      if (!since) return;
      var text = mark.querySelector("[data-running-for]");
      if (text) text.textContent = ago(now - since);
      var stalled = limit && now - last > limit;
      mark.classList.toggle("stalled", !!stalled);
      var label = mark.querySelector("[data-stalled]");
      if (label) label.hidden = !stalled;
    });
  }
  function ago(ms) {
    var s = Math.max(0, Math.round(ms / 1000));
    if (s < 60) return s + " s";
    if (s < 3600) return Math.floor(s / 60) + " min";
    if (s < 86400) return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " min";
    return Math.floor(s / 86400) + " d";
  }

  // -- The request list: new requests and processing rows ------------------------------------------

  function rows() { return document.getElementById("rows"); }
  function openIds() {
    var table = rows();
    if (!table) return [];
    return Array.from(table.querySelectorAll("tr[data-open][data-request]"))
      .map(function (row) { return row.dataset.request; });
  }
  function showNewRequests() {
    var link = state.bar.querySelector("[data-live-news]");
    if (!link) return;
    if (!state.pending) { link.hidden = true; return; }
    link.textContent = (state.more ? "1,000+" : state.pending.toLocaleString("en")) + " new request" +
      (state.pending === 1 ? "" : "s") + " — show";
    link.title = "Requests that arrived since this list was drawn, with its filters";
    link.setAttribute("href", window.location.href);
    link.hidden = false;
  }
  function insertNewRequests(event) {
    var table = rows(), live = state.bar;
    if (!table || state.more) return;  // the link reloads the list
    event.preventDefault();
    var upto = live.dataset.liveCursor, after = live.dataset.liveShown || upto;
    var url = live.dataset.liveRowsUrl + "&after=" + encodeURIComponent(after) + "&upto=" + encodeURIComponent(upto);
    fetchPage(url).then(function (html) {
      var holder = document.createElement("tbody");
      holder.innerHTML = html;
      var first = table.firstElementChild;
      Array.from(holder.querySelectorAll("tr[data-started]")).forEach(function (row) {
        var id = row.dataset.request;
        if (id && table.querySelector('tr[data-request="' + CSS.escape(id) + '"]')) return;
        row.classList.add("arrived");
        table.insertBefore(row, first);
      });
      if (window.htmx) window.htmx.process(table);
      live.dataset.liveShown = upto;
      state.pending = 0; state.more = false;
      showNewRequests();
    }).catch(function () { window.location.reload(); });
  }
  function redrawMovedRows(states) {
    var table = rows(), live = state.bar;
    if (!table || !states) return Promise.resolve();
    var moved = Object.keys(states).filter(function (id) {
      var row = table.querySelector('tr[data-request="' + CSS.escape(id) + '"]');
      return row && row.dataset.state !== states[id];
    });
    if (!moved.length) return Promise.resolve();
    var url = live.dataset.liveRowsUrl + moved.map(function (id) { return "&id=" + encodeURIComponent(id); }).join("");
    return fetchPage(url).then(function (html) {
      var holder = document.createElement("tbody");
      holder.innerHTML = html;
      Array.from(holder.querySelectorAll("tr[data-request]")).forEach(function (row) {
        var old = table.querySelector('tr[data-request="' + CSS.escape(row.dataset.request) + '"]');
        if (old) morph(old, row);
      });
      if (window.htmx) window.htmx.process(table);
    });
  }

  // -- The dashboard: its charts -----------------------------------------------------------------

  function redrawCharts() {
    // Every chart (a page that says "Following live" shows none of them stale), in one request:
    // one snapshot of the ledger, one plan for all of them (pipeline/views.charts_at_once).
    var grid = document.querySelector("[data-charts-url]");
    var cards = Array.from(document.querySelectorAll(".chart-card[data-chart]"));
    if (!grid || !cards.length) return Promise.resolve();
    var url = new URL(grid.dataset.chartsUrl, window.location.href);
    cards.forEach(function (card) { url.searchParams.append("chart", card.dataset.chart); });
    return fetch(url.pathname + url.search, { credentials: "same-origin", headers: { "HX-Request": "true" } })
      .then(function (response) {
        state.served += serverMs(response, 0);
        return response.ok ? response.text() : null;
      })
      .then(function (html) {
        if (html === null) return;
        var holder = document.createElement("div");
        holder.innerHTML = html;
        Array.from(holder.children).forEach(function (part) {
          var card = cards.find(function (c) { return c.dataset.chart === part.dataset.liveChart; });
          if (!card) return;
          morph(card, cloneShell(card, part));
          card.dispatchEvent(new CustomEvent("live:updated", { bubbles: true }));
        });
      });
  }
  // The card as the server would draw it with this content (its own attributes kept).
  function cloneShell(card, holder) {
    var shell = card.cloneNode(false);
    while (holder.firstChild) shell.appendChild(holder.firstChild);
    return shell;
  }

  // -- Asking ---------------------------------------------------------------------------------------

  function pollUrl(live) {
    var url = new URL(live.dataset.liveUrl, window.location.href);
    url.searchParams.set("cursor", live.dataset.liveCursor);
    if (live.dataset.liveKind === "session") {
      var head = document.querySelector("#panel [data-panel-turn]");
      if (head && head.dataset.liveTurnState) {
        url.searchParams.set("turn", head.dataset.panelTurn);
        url.searchParams.set("turn_state", head.dataset.liveTurnState);
      }
    }
    if (live.dataset.liveKind === "requests") {
      var used = 0;
      openIds().forEach(function (id) {
        used += id.length;
        if (used < 1500) url.searchParams.append("open", id);
      });
    }
    return url.pathname + url.search;
  }

  // Redraws the page, and says how long the server should rest before the next poll.
  function apply(live, answer) {
    var started = Date.now();
    state.served = 0;
    return redraw(live, answer).then(function () {
      var took = Date.now() - started;
      var atMostEvery = Number(live.dataset.liveRedrawEvery) || 0;
      return Math.max(REDRAW_GAP * state.served, atMostEvery - took);
    });
  }

  function redraw(live, answer) {
    var kind = live.dataset.liveKind;
    if (kind === "requests") {
      state.pending += answer.new_requests || 0;
      state.more = state.more || !!answer.more_new_requests;
      live.dataset.liveCursor = answer.cursor;
      showNewRequests();
      return redrawMovedRows(answer.states);
    }
    if (kind === "pipeline") {
      live.dataset.liveCursor = answer.cursor;
      return redrawCharts();
    }
    return fetchPage(window.location.href).then(function (html) {
      var drawn = mergePage(html);
      live.dataset.liveCursor = drawn || answer.cursor;
      if (kind === "session") countNewTurns(answer.new_turns || [], !!answer.more_new_turns);
      tick();
    });
  }

  function schedule(wait) {
    clearTimeout(state.timer);
    state.timer = setTimeout(poll, document.hidden ? Math.max(wait, HIDDEN_EVERY_MS) : wait);
  }

  function poll() {
    var live = bar();
    if (!live) return;
    if (live !== state.bar) start(live);  // a new list after a filter change: start afresh
    var every = Number(live.dataset.liveEvery) || 1000;
    if (state.busy) { schedule(every); return; }
    state.busy = true;
    var asked = Date.now(), wait = every;
    fetch(pollUrl(live), { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) {
        if (response.redirected) { stop("Signed out: reload the page to sign in again."); return null; }
        var held = serverMs(response, Date.now() - asked);
        return response.json().then(function (answer) {
          return { status: response.status, answer: answer, held: held };
        });
      })
      .then(function (got) {
        if (!got) return;
        var answer = got.answer;
        if (got.status === 400 || answer.stop) { stop(answer.error || "Live updates stopped."); return; }
        if (got.status >= 500) throw new Error(answer.error || String(got.status));
        if (answer.reload) { window.location.reload(); return; }
        every = answer.every_ms || every;
        live.dataset.liveEvery = String(every);
        var recovered = state.failures > 0;
        state.failures = 0;
        state.quiet = answer.changed ? 0 : state.quiet + 1;
        var pace = state.quiet >= QUIET_ANSWERS ? Math.round(every * QUIET_SLOWER) : every;
        var settle = function (rest) {
          wait = nextWait(pace, Math.max(rest, POLL_GAP * got.held), answer.at_most_ms,
                          Date.now() - asked);
        };
        if (!answer.changed) {
          live.dataset.liveCursor = answer.cursor;
          say(paused() ? "Paused" : recovered ? "Back live" : "Following live");
          return settle(0);
        }
        if (paused()) { state.waiting = true; say("Paused · new activity"); return settle(0); }
        return apply(live, answer).then(function (rest) {
          say("Following live · updated " + clock());
          settle(rest);
        });
      })
      .catch(function () {
        state.failures += 1;
        wait = Math.min(MAX_RETRY_MS, every * Math.pow(2, state.failures));
        say("Connection lost · trying again in " + Math.round(wait / 1000) + " s");
      })
      .then(function () {
        state.busy = false;
        if (state.timer !== "stopped") schedule(wait);
      });
  }

  function stop(why) {
    clearTimeout(state.timer);
    state.timer = "stopped";
    say(why);
  }

  function clock() {
    var d = new Date();
    return [d.getHours(), d.getMinutes(), d.getSeconds()].map(function (n) { return (n < 10 ? "0" : "") + n; }).join(":");
  }

  function setPaused(live, on) {
    if (on) live.setAttribute("data-live-paused", ""); else live.removeAttribute("data-live-paused");
    var button = live.querySelector("[data-live-toggle]");
    if (button) { button.textContent = on ? "resume" : "pause"; button.setAttribute("aria-pressed", on ? "true" : "false"); }
    var url = new URL(window.location.href);
    if (on) url.searchParams.set("live", "0"); else url.searchParams.delete("live");
    window.history.replaceState(window.history.state, "", url);
    say(on ? "Paused" : "Following live");
    if (!on) { state.waiting = false; schedule(0); }
  }

  function start(live) {
    state.bar = live;
    state.pending = 0; state.more = false; state.newTurns = []; state.moreTurns = false;
    if (!live.dataset.liveShown) live.dataset.liveShown = live.dataset.liveCursor;
    live.hidden = false;
  }

  document.addEventListener("click", function (event) {
    var live = bar();
    if (!live || !event.target.closest) return;
    if (event.target.closest("[data-live-toggle]")) { setPaused(live, !paused()); return; }
    if (event.target.closest("[data-live-news]")) {
      if (live.dataset.liveKind === "requests") insertNewRequests(event); else goToNewTurn(event);
    }
  });
  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && state.bar && state.timer !== "stopped") schedule(0);
  });
  document.addEventListener("scroll", function () { if (state.newTurns.length) showNewTurns(); }, true);

  // Shown at once (before the page's other scripts measure their layout on DOMContentLoaded):
  // without this script the bar stays hidden, and the page is as it was drawn.
  var shown = bar();
  if (shown) shown.hidden = false;

  document.addEventListener("DOMContentLoaded", function () {
    var live = bar();
    if (!live) return;
    start(live);
    tick();
    setInterval(tick, TICK_MS);
    schedule(Number(live.dataset.liveEvery) || 1000);
  });
})();
