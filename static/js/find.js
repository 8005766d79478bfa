// Find in a session: the find box marks the turns whose messages, tool calls or requests match
// (from the search index, /search/in/<session>/) and walks them; failures are walked the same way.
//   n / N  next / previous match      f / F  next / previous failure
// A turn outside the rows on the page (a folded stretch) is opened as its own page, with
// ?find= so the walk goes on from there.
(function () {
  "use strict";
  var found = { match: [], failure: null, failureKinds: [] };
  var position = { match: -1, failure: -1 };

  function form() { return document.querySelector("form.find-in-session"); }
  function rowOf(turnId) { return document.getElementById("turn-" + turnId); }
  function say(text) { var out = form().querySelector(".find-status"); if (out) out.textContent = text; }

  function mark() {
    document.querySelectorAll(".tree-row.find-hit, .tree-row.find-failure").forEach(function (row) {
      row.classList.remove("find-hit", "find-failure");
    });
    found.match.forEach(function (id) { var row = rowOf(id); if (row) row.classList.add("find-hit"); });
    (found.failure || []).forEach(function (id) { var row = rowOf(id); if (row) row.classList.add("find-failure"); });
  }

  function ask(params) {
    var url = form().dataset.findUrl + "?" + new URLSearchParams(params).toString();
    return fetch(url, { headers: { Accept: "application/json" } }).then(function (r) { return r.json(); });
  }

  function find(q) {
    if (!q) { found.match = []; position.match = -1; mark(); say(""); return; }
    say("Finding…");
    ask({ q: q }).then(function (answer) {
      if (answer.error) { say(answer.error); return; }
      found.match = answer.turn_ids; position.match = -1; mark();
      if (!found.match.length) { say("No turn matches."); return; }
      walk("match", 1);
    });
  }

  function walk(kind, step) {
    var ids = found[kind];
    if (!ids || !ids.length) { say(kind === "failure" ? "No failures in this session." : "No matches."); return; }
    position[kind] = (position[kind] + step + ids.length) % ids.length;
    var id = ids[position[kind]], row = rowOf(id);
    say(kind === "failure"
      ? "failure " + (position[kind] + 1) + " of " + ids.length + " (" + failureCounts() + ") · f / F"
      : "match " + (position[kind] + 1) + " of " + ids.length + " · n / N");
    if (row) {
      row.click();  // opens the turn's panel, as a click would
      row.scrollIntoView({ block: "center" });
      return;
    }
    var url = form().dataset.turnUrl.replace("TURN-ID-PLACEHOLDER", encodeURIComponent(id));
    var q = form().querySelector("input[name=q]").value;
    window.location.href = url + (q ? "?find=" + encodeURIComponent(q) : "");
  }

  // What f walks, said beside the page's "N failed turns": failed turns, and turns that
  // completed with a failed tool call.
  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }
  function failureCounts() {
    var turns = found.failureKinds.filter(function (kind) { return kind === "turn"; }).length;
    var calls = found.failureKinds.length - turns;
    if (!calls) return plural(turns, "failed turn");
    var withCall = plural(calls, "turn") + " with a failed tool call";
    return turns ? plural(turns, "failed turn") + ", " + withCall : withCall;
  }

  function walkFailures(step) {
    if (found.failure) { walk("failure", step); return; }
    ask({ failures: "1" }).then(function (answer) {
      found.failure = answer.failures; found.failureKinds = answer.failure_kinds || [];
      mark(); walk("failure", step);
    });
  }

  document.addEventListener("submit", function (event) {
    if (!event.target.matches("form.find-in-session")) return;
    event.preventDefault();
    var input = event.target.querySelector("input[name=q]");
    find(input.value.trim());
    input.blur();  // so that n / N walk at once
  });

  document.addEventListener("keydown", function (event) {
    if (!form() || event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.target.closest("input, textarea, select, [contenteditable]")) {
      if (event.key === "Escape") event.target.blur();
      return;
    }
    switch (event.key) {
      case "n": walk("match", 1); break;
      case "N": walk("match", -1); break;
      case "f": walkFailures(1); break;
      case "F": walkFailures(-1); break;
      case "/": form().querySelector("input[name=q]").focus(); break;
      default: return;
    }
    event.preventDefault();
  });

  // The tree is redrawn when it is (un)folded, and rows come and go on a live page: mark its rows
  // again.
  document.addEventListener("htmx:afterSwap", function () { if (form()) mark(); });
  document.addEventListener("live:updated", function () { if (form()) mark(); });

  // A link to a tool call (#call-…, from search or an id jump) opens it where it lands, even in
  // a long list whose calls start closed.
  function openLinkedCall() {
    var id = decodeURIComponent(window.location.hash.slice(1));
    var target = id.indexOf("call-") === 0 && document.getElementById(id);
    if (!target) return;
    var details = target.querySelector("details");
    if (details && !details.open) details.open = true;
    target.scrollIntoView({ block: "start" });
  }

  document.addEventListener("DOMContentLoaded", function () {
    openLinkedCall();
    var f = form();
    if (!f) return;
    var q = new URLSearchParams(window.location.search).get("find");
    if (!q) return;
    f.querySelector("input[name=q]").value = q;
    ask({ q: q }).then(function (answer) {
      found.match = answer.turn_ids || []; mark();
      var here = document.querySelector(".tree-row.selected");
      position.match = here ? found.match.indexOf(here.dataset.turn) : -1;
      say(position.match >= 0
        ? "match " + (position.match + 1) + " of " + found.match.length + " · n / N"
        : found.match.length + " matching turn" + (found.match.length === 1 ? "" : "s") + " · n / N");
    });
  });
})();
