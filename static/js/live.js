// Live mode for the request list: every few seconds, while the tab is visible, ask for requests
// newer than the newest row shown and put them on top. Filters stay as they are (they are in
// the address), and so does the reader's scroll position (the browser anchors it).
(function () {
  "use strict";
  var PERIOD_MS = 5000;
  var timer = null;

  // The newest start time that is a number: a row whose time is text (odd data) sorts first
  // but says nothing about what is newer.
  var NUMBER = /^-?[0-9]+(\.[0-9]+)?$/;
  function newest(rows) {
    var timed = rows.querySelectorAll("tr[data-started]");
    for (var i = 0; i < timed.length; i++) {
      if (NUMBER.test(timed[i].dataset.started)) return timed[i].dataset.started;
    }
    return NUMBER.test(rows.dataset.newest || "") ? rows.dataset.newest : "0";
  }

  function poll() {
    var rows = document.getElementById("rows");
    if (!rows || document.hidden || !window.htmx) return;
    var url = new URL(window.location.href);
    url.searchParams.delete("after");
    url.searchParams.set("newer", newest(rows));
    window.htmx.ajax("GET", url.pathname + url.search, { target: "#rows", swap: "afterbegin" });
  }

  function setLive(on) {
    if (timer) { clearInterval(timer); timer = null; }
    if (on) timer = setInterval(poll, PERIOD_MS);
    var url = new URL(window.location.href);
    if (on) url.searchParams.set("live", "1"); else url.searchParams.delete("live");
    window.history.replaceState(window.history.state, "", url);
  }

  document.addEventListener("change", function (event) {
    if (event.target.id === "live-toggle") { event.stopPropagation(); setLive(event.target.checked); }
  }, true);
  document.addEventListener("DOMContentLoaded", function () {
    var toggle = document.getElementById("live-toggle");
    if (toggle && toggle.checked) setLive(true);
  });
})();
