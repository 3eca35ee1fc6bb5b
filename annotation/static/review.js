// Keyboard shortcuts for the review page, search within the run, and renewing the lease while the page is open.
// Written here (no library): about forty lines that htmx or Alpine would not shorten.
(function () {
  "use strict";
  const form = document.getElementById("label-form") || document.getElementById("checklist-form") ||
    document.getElementById("adjudicate-form");
  document.addEventListener("keydown", function (event) {
    const el = document.activeElement;
    const typing = /^(TEXTAREA|SELECT)$/.test(el.tagName) || (el.tagName === "INPUT" && !/^(radio|checkbox)$/.test(el.type));
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey) && form) {
      event.preventDefault(); form.requestSubmit(); return;
    }
    if (typing) return;
    if (event.key === "/") { event.preventDefault(); document.getElementById("find").focus(); return; }
    if (event.key === "e" && document.getElementById("evidence")) {
      event.preventDefault(); document.getElementById("evidence").focus(); return;
    }
    if (form && /^[1-9]$/.test(event.key)) {
      const radio = form.querySelector('input[name="label"][data-key="' + event.key + '"]');
      if (radio) { radio.checked = true; radio.focus(); }
    }
  });
  const find = document.getElementById("find");
  if (find) find.addEventListener("input", function () {
    const needle = find.value.trim().toLowerCase();
    document.querySelectorAll("#events > li").forEach(function (li) {
      li.classList.toggle("hidden", needle !== "" && !li.dataset.text.includes(needle));
    });
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
