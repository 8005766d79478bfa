// ledgerweb: mounts every Plotly chart on the page, on load and after each htmx swap or live
// update, and wires the copy buttons. A chart is a <div class="chart" data-figure="{JSON}"> whose figure was built
// on the server; plotly.js is loaded only by pages with charts.
(function () {
  "use strict";

  function themed(layout) {
    // Charts follow the page's colours (and so the system's light or dark scheme).
    var style = getComputedStyle(document.body);
    var text = style.color, grid = style.getPropertyValue("--line").trim() || "#ddd";
    layout.paper_bgcolor = "rgba(0,0,0,0)";
    layout.plot_bgcolor = "rgba(0,0,0,0)";
    layout.font = Object.assign({ color: text, family: style.fontFamily, size: 12 }, layout.font || {});
    ["xaxis", "yaxis", "yaxis2"].forEach(function (axis) {
      if (layout[axis] || axis !== "yaxis2") {
        layout[axis] = Object.assign({ gridcolor: grid, zerolinecolor: grid, linecolor: grid }, layout[axis] || {});
      }
    });
    return layout;
  }

  // A link to one chart ("#chart-cost" from the overview) lands on it: the cards above it fill
  // in after the page has loaded and push it down, so it is brought back into view after each
  // card is drawn, until the reader scrolls or clicks themselves.
  var anchor = null;
  function keepAnchor() {
    if (anchor) anchor.scrollIntoView({ block: "start" });
  }
  function dropAnchor() { anchor = null; }
  ["wheel", "touchstart", "keydown", "mousedown"].forEach(function (name) {
    window.addEventListener(name, dropAnchor, { passive: true });
  });

  function mountCharts(root) {
    if (!window.Plotly) return;
    root.querySelectorAll("[data-figure]").forEach(function (target) {
      var figure = JSON.parse(target.dataset.figure);
      // On a phone Plotly's toolbar (zoom, pan, download) covers the legend above the plot, and
      // a tap on the chart shows it: there, no toolbar.
      var narrow = window.matchMedia("(max-width: 700px)").matches;
      // On a phone, category names turned upright take most of a 300 px chart: give the plot
      // itself room (the principals' bars were 60 px tall).
      if (narrow && figure.layout) figure.layout.height = Math.max(figure.layout.height || 300, 420);
      var config = Object.assign(
        { responsive: true, displaylogo: false, displayModeBar: narrow ? false : "hover" },
        figure.config || {}
      );
      window.Plotly.react(target, figure.data || [], themed(figure.layout || {}), config).then(function () {
        // A bar that carries a request-list URL opens it: the chart is a way in.
        target.removeAllListeners && target.removeAllListeners("plotly_click");
        target.on("plotly_click", function (event) {
          var point = event.points && event.points[0];
          var url = point && (Array.isArray(point.customdata) ? point.customdata[0] : point.customdata);
          if (typeof url === "string" && url.charAt(0) === "/") window.location.href = url;
        });
        keepAnchor();
      });
    });
  }

  // htmx keeps a copy of the page for the back button, written out as HTML: styles set from
  // script (the session tree's fitted height) came back in it as style attributes, which the
  // CSP refuses (a console error, seen on the next page too, and the tree lost its height).
  // They are left out of the copy and put back at once (through the CSSOM, which the CSP
  // allows); a restored page sets its own again (htmx:historyRestore).
  document.addEventListener("htmx:beforeHistorySave", function (event) {
    var styled = Array.prototype.slice.call(event.detail.historyElt.querySelectorAll("[style]"));
    var kept = styled.map(function (element) { return element.getAttribute("style"); });
    styled.forEach(function (element) { element.removeAttribute("style"); });
    Promise.resolve().then(function () {
      styled.forEach(function (element, i) { element.style.cssText = kept[i]; });
    });
  });

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) return;
    var source = document.querySelector(button.dataset.copy);
    if (!source || !navigator.clipboard) return;
    navigator.clipboard.writeText(source.textContent).then(function () {
      button.textContent = "copied";
      setTimeout(function () { button.textContent = "copy"; }, 1500);
    });
  });

  document.addEventListener("DOMContentLoaded", function () {
    var id = decodeURIComponent(window.location.hash.slice(1));
    anchor = id ? document.getElementById(id) : null;
    mountCharts(document);
  });
  document.addEventListener("htmx:afterSettle", function (event) {
    mountCharts(event.target);
    keepAnchor();
  });
  // A live page redrew part of itself (static/js/live.js): its charts take their new figures.
  document.addEventListener("live:updated", function (event) { mountCharts(event.target); });
})();
