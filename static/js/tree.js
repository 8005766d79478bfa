// Keyboard walk of the turn tree. Rows carry their neighbours (computed on the server):
// data-parent, data-child (first child), data-sibling (next sibling branch).
//   j / ↓  next row        k / ↑  previous row
//   h / ←  parent          l / →  first child
//   ]      next branch      Enter  open the turn      t  thread & fork point
(function () {
  "use strict";

  function rows(tree) { return Array.from(tree.querySelectorAll(".tree-row")); }
  function current(tree) {
    return tree.querySelector(".tree-row.cursor") || tree.querySelector(".tree-row.selected") || rows(tree)[0];
  }
  function rowOf(tree, turnId) {
    if (!turnId) return null;
    return rows(tree).find(function (row) { return row.dataset.turn === turnId; }) || null;
  }
  function moveTo(tree, row) {
    if (!row) return;
    tree.querySelectorAll(".tree-row.cursor").forEach(function (r) { r.classList.remove("cursor"); });
    row.classList.add("cursor");
    row.focus({ preventScroll: true });
    row.scrollIntoView({ block: "nearest" });
  }
  function goToTurn(tree, turnId) {
    var row = rowOf(tree, turnId);
    if (row) { moveTo(tree, row); return; }
    // The turn is inside a folded stretch: unfold and come back to it.
    if (turnId) window.location.href = tree.dataset.unfoldUrl + "#turn-" + encodeURIComponent(turnId);
  }

  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    if (target.closest("input, textarea, select, [contenteditable]")) return;
    var tree = document.querySelector(".tree");
    if (!tree) return;
    var row = current(tree);
    if (!row) return;
    var all = rows(tree), index = all.indexOf(row);
    switch (event.key) {
      case "j": case "ArrowDown": moveTo(tree, all[Math.min(index + 1, all.length - 1)]); break;
      case "k": case "ArrowUp": moveTo(tree, all[Math.max(index - 1, 0)]); break;
      case "h": case "ArrowLeft": goToTurn(tree, row.dataset.parent); break;
      case "l": case "ArrowRight": goToTurn(tree, row.dataset.child); break;
      case "]": goToTurn(tree, row.dataset.sibling); break;
      case "Enter": row.click(); break;
      case "t":
        if (row.dataset.turn) window.location.href = row.getAttribute("href") + "thread/";
        break;
      default: return;
    }
    event.preventDefault();
  });

  // The row that opened the panel becomes the selected one.
  document.addEventListener("htmx:beforeRequest", function (event) {
    var row = event.target.closest && event.target.closest(".tree-row[data-turn]");
    if (!row) return;
    document.querySelectorAll(".tree-row.selected").forEach(function (r) {
      r.classList.remove("selected"); r.removeAttribute("aria-current");
    });
    row.classList.add("selected", "cursor");
    row.setAttribute("aria-current", "true");
  });

  // Bring the selected turn into view on load.
  document.addEventListener("DOMContentLoaded", function () {
    var selected = document.querySelector(".tree-row.selected");
    if (selected && !window.location.hash) selected.scrollIntoView({ block: "center" });
  });
})();
