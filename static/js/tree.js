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
    // The turn is on another page of the tree, or inside a folded stretch: the session page
    // sends ?turn= to the turn's own address, which shows its page with it selected.
    if (turnId) window.location.href = tree.dataset.jumpUrl + "?turn=" + encodeURIComponent(turnId);
  }
  // Past the first or last row of a page: load the neighbouring lines (the link's hx-get) and
  // put the cursor on the line next to where it was (htmx:afterSettle below). Rows carry their
  // line number in the whole tree (data-line).
  var lineAfterPaging = null;
  function turnPage(link, line) {
    if (!link) return;
    lineAfterPaging = line;
    link.click();
  }
  function step(tree, all, index, by) {
    var next = index + by;
    var line = Number(all[index].dataset.line) + by;
    if (next < 0) turnPage(document.querySelector("a.tree-earlier"), line);
    else if (next >= all.length) turnPage(document.querySelector("a.tree-later"), line);
    else moveTo(tree, all[next]);
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
      case "j": case "ArrowDown": step(tree, all, index, 1); break;
      case "k": case "ArrowUp": step(tree, all, index, -1); break;
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

  document.addEventListener("htmx:afterSettle", function (event) {
    var tree = document.querySelector(".tree");
    if (lineAfterPaging === null || !tree || !event.detail.target.contains(tree)) return;
    moveTo(tree, tree.querySelector('.tree-row[data-line="' + lineAfterPaging + '"]') || rows(tree)[0]);
    lineAfterPaging = null;
  });

  // Bring the selected turn into view on load.
  document.addEventListener("DOMContentLoaded", function () {
    var selected = document.querySelector(".tree-row.selected");
    if (selected && !window.location.hash) selected.scrollIntoView({ block: "center" });
  });
})();
