// The review and adjudication pages: keyboard shortcuts, events loaded in pages as the reader scrolls, links to
// events not loaded yet, search within the whole run, and renewing the lease while the page is open.
// Paging and search fetch server-rendered fragments with htmx (vendored); this file adds what htmx does not.
(function () {
  "use strict";
  const form = document.getElementById("label-form") || document.getElementById("checklist-form") ||
    document.getElementById("adjudicate-form");
  const list = document.getElementById("events");
  const found = document.getElementById("found");
  const find = document.getElementById("find");

  document.addEventListener("keydown", function (event) {
    const el = document.activeElement;
    const typing = /^(TEXTAREA|SELECT)$/.test(el.tagName) || (el.tagName === "INPUT" && !/^(radio|checkbox)$/.test(el.type));
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && form) {
      event.preventDefault(); form.requestSubmit(); return;
    }
    if (typing) return;
    if (event.key === "/" && find) { event.preventDefault(); find.focus(); return; }
    if (event.key === "e" && document.getElementById("evidence")) {
      event.preventDefault(); document.getElementById("evidence").focus(); return;
    }
    if (form && /^[1-9]$/.test(event.key)) {
      const radio = form.querySelector('input[name="label"][data-key="' + event.key + '"]');
      if (radio) { radio.checked = true; radio.focus(); }
    }
  });

  // --- paging is htmx's (hx-trigger="revealed" on the "more" line); a link to an event that is not loaded
  // yet loads everything up to it
  function reach() {
    const m = /^#e(\d+)$/.exec(location.hash);
    if (!m || document.getElementById("e" + m[1]) || !list || !window.htmx) return;
    const sentinel = list.querySelector("li.more");
    if (!sentinel) return;
    const url = list.dataset.base + "/events?after=" + sentinel.dataset.after + "&until=" + m[1];
    window.htmx.ajax("GET", url, { target: sentinel, swap: "outerHTML" }).then(function () {
      const target = document.getElementById("e" + m[1]);
      if (target) target.scrollIntoView();
    });
  }
  window.addEventListener("hashchange", reach);
  window.addEventListener("load", reach);

  // --- search: the server's matches in the whole run replace the list while there is text to find
  if (find) find.addEventListener("input", function () {
    const searching = find.value.trim() !== "";
    list.hidden = searching;
    found.hidden = !searching;
    if (!searching) found.innerHTML = "";
  });

  const renew = document.getElementById("renew-form");
  const lease = document.getElementById("lease");
  if (renew && lease) setInterval(function () {
    fetch(renew.action, { method: "POST", body: new FormData(renew), credentials: "same-origin" })
      .then(function (r) { return r.json().then(function (body) { return [r.ok, body]; }); })
      .then(function (pair) {
        if (pair[0]) { lease.textContent = "lease until " + pair[1].lease_expires_at.slice(11, 16) + " UTC"; }
        else { lease.textContent = pair[1].detail; lease.className = "error"; }
      });
  }, 60000);
})();
