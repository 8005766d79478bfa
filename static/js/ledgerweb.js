// ledgerweb: mounts every Plotly chart on the page, on load and after each htmx swap.
// A chart is a <script type="application/json" class="chart-data" data-target="ID"> written by
// Django's json_script next to <div id="ID">; plotly.js is loaded only by pages that draw charts.
(function () {
  "use strict";

  function mountCharts(root) {
    if (!window.Plotly) return;
    root.querySelectorAll("script.chart-data").forEach(function (node) {
      var target = document.getElementById(node.dataset.target);
      if (!target) return;
      var figure = JSON.parse(node.textContent);
      window.Plotly.react(target, figure.data || [], figure.layout || {}, figure.config || { responsive: true, displaylogo: false });
    });
  }

  document.addEventListener("DOMContentLoaded", function () { mountCharts(document); });
  document.addEventListener("htmx:afterSettle", function (event) { mountCharts(event.target); });
})();
