// Keyboard walk of the turn tree. Rows carry their neighbours (computed on the server):
// data-parent, data-child (first child), data-sibling (next sibling branch).
//   j / ↓  next row        k / ↑  previous row
//   h / ←  parent          l / →  first child
//   ]      next branch      Enter  open the turn      t  thread & fork point
//   g      the map         z / Z  hoist here / up a level     x  collapse or expand
//   b      bookmark         m / M  next / previous bookmark    p  hide the panel   < >  the split
// The tree scrolls inside its card, so the page keeps its title in view.
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
  // Scroll the tree itself (not the page) so the row shows: "nearest" moves it just enough,
  // "center" puts it in the middle.
  function showInTree(tree, row, block) {
    var box = tree.getBoundingClientRect(), at = row.getBoundingClientRect();
    if (block === "center") {
      tree.scrollTop += at.top - box.top - (tree.clientHeight - at.height) / 2;
    } else if (at.top < box.top) {
      tree.scrollTop -= box.top - at.top;
    } else if (at.bottom > box.top + tree.clientHeight) {
      tree.scrollTop += at.bottom - box.top - tree.clientHeight;
    }
  }
  function moveTo(tree, row) {
    if (!row) return;
    tree.querySelectorAll(".tree-row.cursor").forEach(function (r) { r.classList.remove("cursor"); });
    row.classList.add("cursor");
    row.focus({ preventScroll: true });
    showInTree(tree, row, "nearest");
    peek(row);
  }
  // The peek below the tree: the whole prompt and answer of the row the keyboard is on (a row
  // shows what fits its width; its hover, the preview's title, holds the same).
  function peek(row) {
    var box = document.querySelector("[data-peek]");
    var preview = row && row.querySelector(".preview");
    if (!box || !preview || !row.dataset.turn) return;
    var parts = (preview.getAttribute("title") || preview.textContent).split("\n↳ ");
    var prompt = box.querySelector(".peek-prompt"), answer = box.querySelector(".peek-answer");
    if (prompt) prompt.textContent = parts[0];
    if (answer) answer.textContent = parts.length > 1 ? "↳ " + parts.slice(1).join("\n↳ ") : "";
    box.hidden = false;
    aimActions(box, row);
  }

  // -- Focus and bookmarks (issue 28) --------------------------------------------------------
  // The actions below the tree (hoist, collapse, bookmark) are written by the server for the
  // selected turn; they follow the keyboard's row. Their addresses keep the view's parameters
  // (unfold, hoist, collapse) as the page's own address has them.
  function viewUrl(changes) {
    var tree = document.querySelector(".tree");
    var url = new URL(window.location.href);
    url.pathname = tree.dataset.turnsUrl.replace(/turns\/$/, "");
    ["from", "at", "turn", "format"].forEach(function (name) { url.searchParams.delete(name); });
    Object.keys(changes).forEach(function (name) {
      var value = changes[name];
      url.searchParams.delete(name);
      (Array.isArray(value) ? value : value === null ? [] : [value]).forEach(function (v) {
        url.searchParams.append(name, v);
      });
    });
    return url.pathname + url.search;
  }
  function collapsedNow() { return new URL(window.location.href).searchParams.getAll("collapse"); }
  function hoistUrl(turnId) { return viewUrl({ hoist: turnId, collapse: null }); }
  function collapseUrl(turnId) {
    var now = collapsedNow(), at = now.indexOf(turnId);
    if (at >= 0) now.splice(at, 1); else now.push(turnId);
    return viewUrl({ collapse: now, at: turnId });
  }
  function aimActions(box, row) {
    var tree = document.querySelector(".tree"), turnId = row.dataset.turn;
    var hoist = box.querySelector('[data-action="hoist"]');
    if (!hoist) return;
    hoist.setAttribute("href", hoistUrl(turnId));
    var collapse = box.querySelector('[data-action="collapse"]');
    collapse.hidden = !row.dataset.child;
    collapse.setAttribute("href", collapseUrl(turnId));
    collapse.textContent = row.dataset.collapsed ? "▾ Expand its branches" : "▸ Collapse its branches";
    var answers = box.querySelector("[data-answers]"), branch = row.querySelector(".mark-branch");
    if (answers) {
      answers.hidden = !branch;
      if (branch) answers.setAttribute("href", turnUrl(tree, turnId) + "branches/");
      else answers.removeAttribute("href");
      if (branch) answers.textContent = branch.textContent + " side by side";
    }
    var form = box.querySelector(".bookmark-form");
    var marked = row.dataset.bookmark !== undefined;
    // A note being typed for this turn stays (its panel may arrive meanwhile and aim again).
    if (form.dataset.forTurn !== turnId) {
      form.querySelector("[name=note]").value = marked ? row.dataset.bookmark : "";
    }
    form.dataset.forTurn = turnId;
    form.setAttribute("action", turnUrl(tree, turnId) + "bookmark/");
    form.querySelector("[data-bookmark-save]").textContent = marked ? "★ Save the note" : "☆ Bookmark";
    form.querySelector("[data-bookmark-remove]").hidden = !marked;
  }
  // Another view of the tree (hoisted, collapsed): swapped in by htmx, the address pushed.
  function openView(url) {
    window.htmx.ajax("GET", url, { target: "#tree", swap: "innerHTML" }).then(function () {
      window.history.pushState({}, "", url);
    });
  }
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("[data-peek] a[data-action]");
    if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
    event.preventDefault();
    openView(link.getAttribute("href"));
  });
  // The bookmark form posts with htmx and gets the tree back (the star, the map, the list).
  document.addEventListener("submit", function (event) {
    var form = event.target.closest && event.target.closest(".bookmark-form");
    if (!form || !window.htmx) return;
    event.preventDefault();
    var values = {
      note: form.querySelector("[name=note]").value,
      next: window.location.pathname + window.location.search,
      csrfmiddlewaretoken: form.querySelector("[name=csrfmiddlewaretoken]").value,
    };
    if (event.submitter && event.submitter.name === "remove") values.remove = "1";
    window.htmx.ajax("POST", form.getAttribute("action"), { source: form, target: "#tree", swap: "innerHTML", values: values });
  });
  function bookmarkRows(tree) { return rows(tree).filter(function (r) { return r.dataset.bookmark !== undefined; }); }
  function nextBookmark(tree, row, by) {
    var marked = bookmarkRows(tree);
    if (!marked.length) return;
    var line = Number(row.dataset.line), pick = null;
    marked.forEach(function (r) {
      var at = Number(r.dataset.line);
      if (by > 0 ? at > line && (!pick || at < Number(pick.dataset.line)) : at < line && (!pick || at > Number(pick.dataset.line))) pick = r;
    });
    moveTo(tree, pick || marked[by > 0 ? 0 : marked.length - 1]);
  }
  // A turn's URL, as the server writes it: ids are encoded twice (the path's encoding of the
  // converter's), and "." or ".." must not read as a dot segment.
  function turnUrl(tree, turnId) {
    var segment = (turnId === "." || turnId === "..")
      ? turnId.replace(/\./g, "%252E")
      : encodeURIComponent(encodeURIComponent(turnId));
    return tree.dataset.turnsUrl + segment + "/";
  }
  function goToTurn(tree, turnId) {
    var row = rowOf(tree, turnId);
    if (row) { moveTo(tree, row); return; }
    // The turn is inside a folded stretch or outside this window of the tree: open its URL,
    // which shows the window around it, unfolded and selected, so a reload keeps the place too.
    if (turnId) window.location.href = turnUrl(tree, turnId);
  }
  function select(row) {
    document.querySelectorAll(".tree-row.selected, .tree-row.cursor").forEach(function (r) {
      r.classList.remove("selected", "cursor"); r.removeAttribute("aria-current");
    });
    row.classList.add("selected", "cursor");
    row.setAttribute("aria-current", "true");
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
        if (row.dataset.turn) window.location.href = row.getAttribute("href").split("?")[0] + "thread/";
        break;
      case "g": { var map = treeMap(); if (map) map.focus(); break; }
      case "z": if (row.dataset.turn) openView(hoistUrl(row.dataset.turn)); break;
      case "Z": {
        var up = document.querySelector(".hoist-up") || document.querySelector(".hoist-whole");
        if (up) openView(up.getAttribute("href"));
        break;
      }
      case "x": if (row.dataset.child || row.dataset.collapsed) openView(collapseUrl(row.dataset.turn)); break;
      case "b": {
        peek(row);
        var note = document.querySelector(".bookmark-form [name=note]");
        if (note) { note.focus(); note.select(); }
        break;
      }
      case "a": {
        // A branch point's answers; on a row with siblings, its parent's (where it is one).
        var at = row.querySelector(".mark-branch") ? row.dataset.turn : row.dataset.sibling && row.dataset.parent;
        if (at) window.location.href = turnUrl(tree, at) + "branches/";
        break;
      }
      case "m": nextBookmark(tree, row, 1); break;
      case "M": nextBookmark(tree, row, -1); break;
      case "p": { var box = layoutBox(); if (box) showPanel(box, box.classList.contains("panel-closed")); break; }
      case "<": nudgePanel(80); break;
      case ">": nudgePanel(-80); break;
      default: return;
    }
    event.preventDefault();
  });

  // The row that opened the panel becomes the selected one.
  document.addEventListener("htmx:beforeRequest", function (event) {
    var row = event.target.closest && event.target.closest(".tree-row[data-turn]");
    if (row) select(row);
  });

  // A panel opened from inside the panel (parent, child, next failed turn) selects its row too;
  // where the panel sits below the tree (a narrow window), bring it into view.
  document.addEventListener("htmx:afterSwap", function (event) {
    var panel = event.detail.target;
    if (!panel || panel.id !== "panel") return;
    var head = panel.querySelector("[data-panel-turn]");
    var tree = document.querySelector(".tree");
    var row = head && tree && rowOf(tree, head.dataset.panelTurn);
    if (row) { select(row); showInTree(tree, row, "nearest"); row.classList.add("visited"); peek(row); }
    var top = panel.getBoundingClientRect().top;
    if (top < 0 || top > window.innerHeight / 2) panel.scrollIntoView({ block: "start" });
  });

  function hashedTurn() {
    if (window.location.hash.indexOf("#turn-") !== 0) return null;
    try { return decodeURIComponent(window.location.hash.slice(6)); } catch (e) { return null; }
  }

  // The tree fills the window below the session's header (at least half the window), so the
  // title and the selected turn show together. CSSOM styles are allowed by the CSP.
  function fitTree(tree) {
    var room = window.innerHeight - tree.getBoundingClientRect().top - window.scrollY - 48;
    tree.style.maxHeight = Math.max(room, window.innerHeight / 2) + "px";
  }

  // On load, show the turn the address names (#turn-…, else the selected one) in the middle of
  // the tree, scrolling the page only if the tree alone cannot, and start the keyboard there.
  function showStart(tree) {
    fitTree(tree);
    window.requestAnimationFrame(function () { showView(tree); });
    var row = rowOf(tree, hashedTurn()) || tree.querySelector(".tree-row.selected");
    if (!row) return;
    row.classList.add("cursor");
    peek(row);
    showInTree(tree, row, "center");
    var at = row.getBoundingClientRect();
    if (at.top < 0 || at.bottom > window.innerHeight) row.scrollIntoView({ block: "nearest" });
  }
  // "3 answers" on a row opens that branch point's answers side by side.
  document.addEventListener("click", function (event) {
    var badge = event.target.closest && event.target.closest(".tree-row .mark-branch");
    var row = badge && badge.closest(".tree-row[data-turn]");
    if (!row || event.shiftKey) return;
    event.preventDefault();
    event.stopPropagation();
    window.location.href = turnUrl(row.closest(".tree"), row.dataset.turn) + "branches/";
  }, true);
  // Shift-click a second row: compare that turn with the selected one (the compare page).
  // Capturing, so the row's own htmx click (open its panel) never runs.
  document.addEventListener("click", function (event) {
    if (!event.shiftKey || !event.target.closest) return;
    var row = event.target.closest(".tree-row[data-turn]");
    var tree = row && row.closest(".tree");
    var chosen = tree && tree.querySelector(".tree-row.selected");
    if (!chosen || chosen === row || !tree.dataset.compareUrl) return;
    event.preventDefault();
    event.stopPropagation();
    window.location.href = tree.dataset.compareUrl + "?a=" + encodeURIComponent(chosen.dataset.turn) +
      "&b=" + encodeURIComponent(row.dataset.turn);
  }, true);

  // A row reached with Tab shows its whole prompt and answer too.
  document.addEventListener("focusin", function (event) {
    var row = event.target.closest && event.target.closest(".tree-row[data-turn]");
    if (row) peek(row);
  });

  // -- The split between the tree and the panel (issue 28) ----------------------------------
  // Drag the splitter, or press ←/→ on it (or < and > anywhere): the panel narrows or widens;
  // p hides the panel and gives the tree the whole width. Kept per browser, for every session.
  var PANEL_WIDTH = "ledgerweb.panelWidth", PANEL_CLOSED = "ledgerweb.panelClosed";
  var MIN_PANEL = 280, MIN_TREE = 420;
  function remember(key, value) {
    try { if (value === null) localStorage.removeItem(key); else localStorage.setItem(key, value); } catch (e) { /* private mode */ }
  }
  function recall(key) { try { return localStorage.getItem(key); } catch (e) { return null; } }
  function layoutBox() { return document.querySelector("[data-session-layout]"); }
  function panelWidth(box) {
    var panel = box.querySelector(".panel");
    return panel ? panel.getBoundingClientRect().width : 0;
  }
  function setPanelWidth(box, px, keep) {
    var most = Math.max(MIN_PANEL, box.getBoundingClientRect().width - MIN_TREE);
    px = Math.round(Math.min(Math.max(px, MIN_PANEL), most));
    box.style.setProperty("--panel-width", px + "px");
    var splitter = box.querySelector("[data-splitter]");
    if (splitter) splitter.setAttribute("aria-valuenow", String(px));
    if (keep) remember(PANEL_WIDTH, String(px));
  }
  function showPanel(box, open) {
    box.classList.toggle("panel-closed", !open);
    remember(PANEL_CLOSED, open ? null : "1");
    var toggle = document.querySelector("[data-panel-toggle]");
    if (toggle) toggle.textContent = open ? "hide the panel" : "show the panel";
  }
  function nudgePanel(by) {
    var box = layoutBox();
    if (!box) return;
    if (box.classList.contains("panel-closed")) showPanel(box, true);
    setPanelWidth(box, panelWidth(box) + by, true);
  }
  function startLayout() {
    var box = layoutBox();
    if (!box) return;
    var kept = Number(recall(PANEL_WIDTH));
    if (kept) setPanelWidth(box, kept, false);
    if (recall(PANEL_CLOSED)) showPanel(box, false);
    var toggle = document.querySelector("[data-panel-toggle]");
    if (toggle) toggle.hidden = false;
    var splitter = box.querySelector("[data-splitter]");
    if (!splitter) return;
    splitter.addEventListener("pointerdown", function (event) {
      event.preventDefault();
      splitter.setPointerCapture(event.pointerId);
      splitter.classList.add("dragging");
      var right = box.getBoundingClientRect().right;
      function follow(move) { setPanelWidth(box, right - move.clientX, false); }
      function stop() {
        splitter.classList.remove("dragging");
        splitter.removeEventListener("pointermove", follow);
        remember(PANEL_WIDTH, String(Math.round(panelWidth(box))));
      }
      splitter.addEventListener("pointermove", follow);
      splitter.addEventListener("pointerup", stop, { once: true });
      splitter.addEventListener("pointercancel", stop, { once: true });
    });
    splitter.addEventListener("dblclick", function () {
      box.style.removeProperty("--panel-width");
      remember(PANEL_WIDTH, null);
    });
    splitter.addEventListener("keydown", function (event) {
      if (event.key !== "ArrowLeft" && event.key !== "ArrowRight") return;
      event.preventDefault();
      event.stopPropagation();  // not the tree's h/l
      nudgePanel(event.key === "ArrowLeft" ? 40 : -40);
    });
  }
  document.addEventListener("click", function (event) {
    var toggle = event.target.closest && event.target.closest("[data-panel-toggle]");
    var box = layoutBox();
    if (toggle && box) showPanel(box, box.classList.contains("panel-closed"));
  });

  // -- The map of the whole tree (issue 28) ---------------------------------------------------
  // A click or tap on the map opens that line: scrolled to when it is on this page, else the
  // window around it is fetched (its link's href without JavaScript). The map shows which part
  // of the rows is on screen. Focused (g, or Tab), ↑/↓ move along it, PageUp/PageDown by a
  // tenth, Home/End to the ends, Enter opens, Escape goes back to the rows.
  function treeMap() { return document.querySelector(".tree-map"); }
  function mapLines(map) { return Number(map.dataset.lines) || 1; }
  // On a phone the map lies above the rows, its first line on the left.
  function across(map) { var box = map.getBoundingClientRect(); return box.width > box.height; }
  function lineAt(map, clientX, clientY) {
    var box = map.getBoundingClientRect();
    var along = across(map) ? (clientX - box.left) / box.width : (clientY - box.top) / box.height;
    var fraction = Math.min(Math.max(along, 0), 0.999999);
    return Math.floor(fraction * mapLines(map)) + 1;
  }
  // Place a band of the map over lines first..last (fractions of its length).
  function place(map, element, from, size) {
    var box = map.getBoundingClientRect();
    if (across(map)) {
      element.style.left = (from * box.width) + "px";
      element.style.width = Math.max(3, size * box.width) + "px";
      element.style.top = ""; element.style.height = "";
    } else {
      element.style.top = (from * box.height) + "px";
      element.style.height = Math.max(3, size * box.height) + "px";
      element.style.left = ""; element.style.width = "";
    }
  }
  function rowAtLine(tree, line) {
    var best = null;
    rows(tree).forEach(function (row) { if (Number(row.dataset.line) <= line) best = row; });
    return best;
  }
  function openLine(line) {
    var tree = document.querySelector(".tree"), map = treeMap();
    if (!tree || !map) return;
    if (line >= Number(map.dataset.first) && line <= Number(map.dataset.last)) {
      var row = rowAtLine(tree, line) || rows(tree)[0];
      moveTo(tree, row);
      showInTree(tree, row, "center");
      return;
    }
    // Another window, the line a little below its top: what leads to it shows too.
    var start = Math.max(1, line - Math.floor(Number(map.dataset.perPage || 1000) / 4));
    var url = new URL(window.location.href);
    ["at", "turn"].forEach(function (name) { url.searchParams.delete(name); });
    url.searchParams.set("from", String(start));
    lineAfterPaging = line;
    window.htmx.ajax("GET", url.pathname + url.search, { target: "#tree", swap: "innerHTML" }).then(function () {
      window.history.pushState({}, "", url.pathname + url.search);
    });
  }
  function showView(tree) {
    var map = treeMap(), view = map && map.querySelector(".map-view");
    if (!view) return;
    var all = rows(tree);
    if (!all.length) return;
    var box = tree.getBoundingClientRect(), first = null, last = null;
    all.forEach(function (row) {
      var at = row.getBoundingClientRect();
      if (at.bottom > box.top && at.top < box.bottom) {
        if (first === null) first = Number(row.dataset.line);
        last = Number(row.dataset.line);
      }
    });
    if (first === null) { view.hidden = true; return; }
    var lines = mapLines(map);
    place(map, view, (first - 1) / lines, (last - first + 1) / lines);
    view.hidden = false;
  }
  var mapCursorLine = null;
  function showMapCursor(map, line) {
    var cursor = map.querySelector(".map-cursor");
    mapCursorLine = Math.min(Math.max(line, 1), mapLines(map));
    place(map, cursor, (mapCursorLine - 0.5) / mapLines(map), 0);
    cursor.hidden = false;
    map.setAttribute("aria-valuetext", "line " + mapCursorLine + " of " + mapLines(map));
  }
  document.addEventListener("click", function (event) {
    var map = event.target.closest && event.target.closest(".tree-map");
    if (!map || event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey) return;
    event.preventDefault();
    openLine(lineAt(map, event.clientX, event.clientY));
  });
  document.addEventListener("keydown", function (event) {
    var map = event.target.closest && event.target.closest(".tree-map");
    if (!map) return;
    var lines = mapLines(map), line = mapCursorLine || Number(map.dataset.first) || 1;
    var tenth = Math.max(1, Math.round(lines / 10)), step = Math.max(1, Math.round(lines / Number(map.dataset.buckets || lines)));
    switch (event.key) {
      case "ArrowDown": case "j": showMapCursor(map, line + step); break;
      case "ArrowUp": case "k": showMapCursor(map, line - step); break;
      case "PageDown": showMapCursor(map, line + tenth); break;
      case "PageUp": showMapCursor(map, line - tenth); break;
      case "Home": showMapCursor(map, 1); break;
      case "End": showMapCursor(map, lines); break;
      case "Enter": openLine(line); document.querySelector(".tree").focus(); break;
      case "Escape": document.querySelector(".tree").focus(); break;
      default: return;
    }
    event.preventDefault();
    event.stopPropagation();
  }, true);
  document.addEventListener("focusin", function (event) {
    var map = event.target.classList && event.target.classList.contains("tree-map") && event.target;
    if (map) showMapCursor(map, mapCursorLine || Number(map.dataset.first) || 1);
  });
  document.addEventListener("focusout", function (event) {
    var map = event.target.classList && event.target.classList.contains("tree-map") && event.target;
    if (map) { map.querySelector(".map-cursor").hidden = true; mapCursorLine = null; }
  });
  document.addEventListener("scroll", function (event) {
    if (event.target.classList && event.target.classList.contains("tree")) showView(event.target);
  }, true);
  window.addEventListener("resize", function () {
    var tree = document.querySelector(".tree");
    if (tree) showView(tree);
  });

  document.addEventListener("DOMContentLoaded", function () {
    startLayout();
    var tree = document.querySelector(".tree");
    if (tree) showStart(tree);
  });
  // Back or forward to a turn htmx kept a copy of: the copy holds no styles (ledgerweb.js), and
  // was taken as the next row was clicked, so its selected row is the one the panel shows.
  document.addEventListener("htmx:historyRestore", function () {
    var tree = document.querySelector(".tree");
    if (!tree) return;
    var head = document.querySelector("#panel [data-panel-turn]");
    var row = head && rowOf(tree, head.dataset.panelTurn);
    if (row) select(row);
    showStart(tree);
  });
  // (Un)folding swaps the whole tree in; so do the earlier/later links, after which the cursor
  // goes to the line next to where it was (see step).
  document.addEventListener("htmx:afterSettle", function (event) {
    var tree = event.detail.target && event.detail.target.id === "tree" && document.querySelector(".tree");
    if (!tree) return;
    if (lineAfterPaging === null) { showStart(tree); return; }
    fitTree(tree);
    var target = rowAtLine(tree, lineAfterPaging) || rows(tree)[0];
    moveTo(tree, target);
    if (target) showInTree(tree, target, "center");
    lineAfterPaging = null;
    showView(tree);
  });
})();
