"""What a person can read of each tree row: the characters of its prompt or answer left after
clipping (the row's width, the ellipsis, the tree's own scroll box), not the text in the DOM.

`VISIBLE_ROWS` runs in the page and returns, for every row on screen, its turn id, the text it
shows as far as it can be seen, and how many of those characters are words of the prompt or
answer (the "↳ " before an answer and the "…" before a sibling's differing part do not count).
"""

VISIBLE_ROWS = """() => {
  function clipRight(el) {
    let right = el.getBoundingClientRect().right;
    for (let a = el.parentElement; a; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== "visible") {
        right = Math.min(right, a.getBoundingClientRect().left + a.clientLeft + a.clientWidth);
      }
    }
    return right;
  }
  function visible(el) {
    const node = el.firstChild;
    if (!node || node.nodeType !== Node.TEXT_NODE) return "";
    const text = node.textContent;
    let right = clipRight(el);
    if (el.scrollWidth > el.clientWidth + 1) {  // cut: the ellipsis takes the end of the box
      const probe = document.createElement("span");
      probe.textContent = "…";
      el.appendChild(probe);
      right -= probe.getBoundingClientRect().width;
      probe.remove();
    }
    const range = document.createRange();
    let low = 0, high = text.length;
    while (low < high) {  // the longest start of the text that ends inside the box
      const mid = Math.ceil((low + high) / 2);
      range.setStart(node, 0);
      range.setEnd(node, mid);
      if (range.getBoundingClientRect().right <= right + 0.5) low = mid; else high = mid - 1;
    }
    return text.slice(0, low);
  }
  return Array.from(document.querySelectorAll(".tree-row[data-turn]")).map((row) => {
    const preview = row.querySelector(".preview");
    const seen = preview ? visible(preview) : "";
    const words = seen.replace(/^↳ /, "").replace(/^…/, "");
    return {turn: row.dataset.turn, seen: seen, chars: words.length,
            whole: preview ? preview.textContent : ""};
  });
}"""
