// Every answer at a branch point (issue 28): the cards are the branches, side by side.
//   j / → next card     k / ← previous card     a / b  choose it as A / B
//   c  compare A and B  t  its thread           Enter  open it in the tree     Esc  back
(function () {
  "use strict";
  function cards() { return Array.from(document.querySelectorAll(".branch-card")); }
  function current() { return document.activeElement && document.activeElement.closest && document.activeElement.closest(".branch-card"); }
  function focus(card) { if (card) { card.focus(); card.scrollIntoView({ block: "nearest", inline: "nearest" }); } }
  document.addEventListener("keydown", function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.target.closest("input[type=text], input[type=search], textarea, select")) return;
    var all = cards();
    if (!all.length) return;
    var card = current() || all[0], index = all.indexOf(card);
    switch (event.key) {
      case "j": case "ArrowRight": focus(all[Math.min(index + 1, all.length - 1)]); break;
      case "k": case "ArrowLeft": focus(all[Math.max(index - 1, 0)]); break;
      case "a": case "b": card.querySelector("input[name=" + event.key + "]").checked = true; focus(card); break;
      case "c": document.querySelector(".branch-compare").requestSubmit(); break;
      case "t": window.location.href = card.dataset.threadUrl; break;
      case "Enter": if (event.target === card) window.location.href = card.dataset.treeUrl; else return; break;
      case "Escape": {
        var crumbs = document.querySelectorAll(".crumbs a");
        if (crumbs.length) window.location.href = crumbs[crumbs.length - 1].href;
        break;
      }
      default: return;
    }
    event.preventDefault();
  });
  document.addEventListener("DOMContentLoaded", function () { focus(cards()[0]); });
})();
