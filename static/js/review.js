// A review queue's item, walked with the keyboard (review/, issue 31): the keys are written on
// the page beside each control, which carries its key in data-key. Keys act outside text
// fields; Escape leaves a field. Everything works without this file, by clicking.
(function () {
  "use strict";
  const item = document.querySelector("[data-review-item]");
  if (!item) return;
  const form = item.querySelector("[data-review-form]");
  if (!form) return;
  const typing = (el) => el && (el.tagName === "TEXTAREA" || el.tagName === "SELECT" ||
    (el.tagName === "INPUT" && !["radio", "checkbox", "submit", "button"].includes(el.type)));

  item.dataset.keys = "ready"; // for whoever waits for the keys to work (the browser tests)
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(document.activeElement)) {
      if (event.key === "Escape") document.activeElement.blur();
      return;
    }
    const key = event.key;
    const score = form.querySelector("[data-score]");
    if (item.dataset.kind === "turn" && score && /^[1-5]$/.test(key)) {
      score.value = key;
      event.preventDefault();
      return;
    }
    const control = form.querySelector(`[data-key="${CSS.escape(key)}"]`);
    if (!control || control.disabled) return;
    event.preventDefault();
    if (control.type === "radio") control.checked = true;
    else if (control.type === "submit") form.requestSubmit(control);
    else control.focus();
  });
})();
